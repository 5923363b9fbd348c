//! The launcher's own wire-up: the PMI-1 wire protocol (MPICH's "simple
//! PMI") spoken over the socket a launcher hands its processes in
//! `PMI_FD`. MPICH's Hydra (`mpiexec`) and Slurm's `srun --mpi=pmi2` both
//! serve it, with a key-value space and a fence; ranks started by them meet
//! through it instead of through files on the shared file system.
//!
//! One request per line, each written whole and answered before the next:
//! Slurm reads a request with one `read` of at most 1,024 bytes, so no line
//! may be longer.

use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The longest request line a PMI server reads whole (Slurm's limit).
const MAX_LINE: usize = 1024;

/// A PMI-1 session with the launcher, finalized when dropped (Hydra calls
/// a process that exits without finalizing a bad termination).
pub(crate) struct Pmi {
    sock: UnixStream,
    kvs: String,
    max_value: usize,
    /// Bytes read past the last answer's newline.
    pending: Vec<u8>,
    /// Whether the session can still be finalized: not after `finalize`,
    /// nor after a request that failed (a finalize could wait as long).
    open: bool,
}

fn protocol(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("PMI: {msg}"))
}

impl Pmi {
    /// Opens the session the launcher offers in `PMI_FD`, if it offers one.
    /// Each answer is waited for at most `timeout` (a fence lasts until
    /// every rank reached it).
    pub(crate) fn from_env(timeout: Duration) -> io::Result<Option<Pmi>> {
        let Ok(fd) = std::env::var("PMI_FD") else {
            return Ok(None);
        };
        let fd: i32 = fd
            .trim()
            .parse()
            .map_err(|_| protocol(format!("PMI_FD={fd} is not a descriptor")))?;
        // SAFETY: F_GETFD only asks whether `fd` is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(protocol(format!("PMI_FD={fd} is not open in this process")));
        }
        // SAFETY: the launcher gave this process `fd` for PMI alone; it is
        // owned from here on and kept from the apps this rank starts.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        Pmi::over(UnixStream::from(owned), timeout).map(Some)
    }

    /// Starts a session on `sock`: `init`, the limits, the key space's name.
    pub(crate) fn over(sock: UnixStream, timeout: Duration) -> io::Result<Pmi> {
        sock.set_read_timeout(Some(timeout))?;
        let mut pmi = Pmi {
            sock,
            kvs: String::new(),
            max_value: 0,
            pending: Vec::new(),
            open: true,
        };
        pmi.request(
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
        )?;
        let maxes = pmi.request("cmd=get_maxes", "maxes")?;
        pmi.max_value = field(&maxes, "vallen_max")?
            .parse()
            .map_err(|_| protocol("vallen_max is not a number".into()))?;
        pmi.kvs = field(&pmi.request("cmd=get_my_kvsname", "my_kvsname")?, "kvsname")?.into();
        Ok(pmi)
    }

    /// The longest value `put` may send under `key`.
    pub(crate) fn max_value(&self, key: &str) -> usize {
        let line = format!("cmd=put kvsname={} key={key} value=\n", self.kvs).len();
        self.max_value.min(MAX_LINE.saturating_sub(line))
    }

    /// Publishes `value` under `key`, seen by all after the next `fence`.
    /// Values are words: no spaces, no `=`.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        if value.len() > self.max_value(key) {
            return Err(protocol(format!(
                "a value of {} bytes for {key} is longer than {}",
                value.len(),
                self.max_value(key)
            )));
        }
        let line = format!("cmd=put kvsname={} key={key} value={value}", self.kvs);
        self.request(&line, "put_result").map(|_| ())
    }

    /// Waits until every process of the job reached its fence.
    pub(crate) fn fence(&mut self) -> io::Result<()> {
        self.request("cmd=barrier_in", "barrier_out").map(|_| ())
    }

    /// The value some process put under `key` before the last fence.
    pub(crate) fn get(&mut self, key: &str) -> io::Result<String> {
        let line = format!("cmd=get kvsname={} key={key}", self.kvs);
        let answer = self.request(&line, "get_result")?;
        Ok(field(&answer, "value")?.to_string())
    }

    /// Sends one request line and reads its answer: `cmd=<expect>` and, if
    /// the server says one, `rc=0`.
    fn request(&mut self, line: &str, expect: &str) -> io::Result<Vec<(String, String)>> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if bytes.len() > MAX_LINE {
            return Err(protocol(format!("request longer than {MAX_LINE} bytes")));
        }
        self.open = false;
        self.sock.write_all(&bytes)?;
        let answer = self.read_line().map_err(|e| {
            let what = line.split_whitespace().next().unwrap_or(line);
            match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("PMI: no answer to {what} from the launcher"),
                ),
                _ => io::Error::new(e.kind(), format!("PMI: {what}: {e}")),
            }
        })?;
        let words: Vec<(String, String)> = answer
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.open = true;
        if field(&words, "cmd")? != expect {
            return Err(protocol(format!("expected {expect}, got '{answer}'")));
        }
        match field(&words, "rc") {
            Ok("0") | Err(_) => Ok(words),
            Ok(rc) => {
                let why = field(&words, "msg").unwrap_or("");
                Err(protocol(format!("'{line}' failed (rc={rc}) {why}")))
            }
        }
    }

    fn read_line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            let mut buf = [0u8; 4096];
            match self.sock.read(&mut buf) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                // A caught signal (a launcher's notice, a child's end)
                // ends a read with a timeout whatever SA_RESTART says
                // (signal(7)): no answer yet, read on.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Pmi {
    fn drop(&mut self) {
        if self.open {
            let _ = self.request("cmd=finalize", "finalize_ack");
        }
    }
}

fn field<'a>(words: &'a [(String, String)], key: &str) -> io::Result<&'a str> {
    words
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| protocol(format!("answer without {key}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Barrier, Mutex};

    /// A PMI-1 server for `size` processes as Hydra answers (no `rc` on a
    /// fence, `rc=-1` for a missing key): what tests of the wire-up run
    /// against in-process. Returns each process's end of its socket.
    pub(crate) fn serve(size: usize, vallen_max: usize) -> Vec<UnixStream> {
        let kvs: Arc<Mutex<HashMap<String, String>>> = Default::default();
        let fence = Arc::new(Barrier::new(size));
        (0..size)
            .map(|_| {
                let (ours, theirs) = UnixStream::pair().unwrap();
                let (kvs, fence) = (kvs.clone(), fence.clone());
                std::thread::spawn(move || answer(theirs, &kvs, &fence, vallen_max));
                ours
            })
            .collect()
    }

    fn answer(
        sock: UnixStream,
        kvs: &Mutex<HashMap<String, String>>,
        fence: &Barrier,
        vallen_max: usize,
    ) {
        let mut out = sock.try_clone().unwrap();
        let mut reader = io::BufReader::new(sock);
        let mut line = String::new();
        while io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) > 0 {
            assert!(line.len() <= MAX_LINE, "a request of {} bytes", line.len());
            let w: HashMap<&str, &str> = line
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            let reply = match w["cmd"] {
                "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into(),
                "get_maxes" => {
                    format!("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max={vallen_max}")
                }
                "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_1_0".into(),
                "put" => {
                    assert!(w["value"].len() <= vallen_max);
                    kvs.lock()
                        .unwrap()
                        .insert(w["key"].into(), w["value"].into());
                    "cmd=put_result rc=0 msg=success".into()
                }
                "barrier_in" => {
                    fence.wait();
                    "cmd=barrier_out".into()
                }
                "get" => match kvs.lock().unwrap().get(w["key"]) {
                    Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                    None => "cmd=get_result rc=-1 msg=key_not_found value=unknown".into(),
                },
                "finalize" => "cmd=finalize_ack".into(),
                other => panic!("unexpected PMI command {other}"),
            };
            out.write_all(format!("{reply}\n").as_bytes()).unwrap();
            line.clear();
        }
    }

    #[test]
    fn processes_exchange_values_across_a_fence() {
        let socks = serve(2, 1024);
        let ends: Vec<_> = socks
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                std::thread::spawn(move || {
                    let mut pmi = Pmi::over(s, Duration::from_secs(10)).unwrap();
                    pmi.put(&format!("k{i}"), &format!("v{i}")).unwrap();
                    pmi.fence().unwrap();
                    let other = pmi.get(&format!("k{}", 1 - i)).unwrap();
                    let missing = pmi.get("nope").unwrap_err();
                    (other, missing.to_string())
                })
            })
            .collect();
        let got: Vec<_> = ends.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got[0].0, "v1");
        assert_eq!(got[1].0, "v0");
        assert!(got[0].1.contains("rc=-1"), "{}", got[0].1);
    }

    #[test]
    fn values_longer_than_a_line_are_refused_before_sending() {
        let s = serve(1, 4096).pop().unwrap();
        let mut pmi = Pmi::over(s, Duration::from_secs(10)).unwrap();
        let max = pmi.max_value("k");
        assert!(max < 1024 && max > 900, "{max}");
        assert!(pmi.put("k", &"x".repeat(max)).is_ok());
        let e = pmi.put("k", &"x".repeat(max + 1)).unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
    }

    #[test]
    fn a_signal_while_waiting_for_the_launcher_is_no_error() {
        extern "C" fn nothing(_: libc::c_int) {}
        // SAFETY: a handler that does nothing. A read with a timeout that a
        // handler interrupts fails with EINTR even with SA_RESTART
        // (signal(7)), as under Hydra, whose SIGUSR1 notices ranks catch.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
            assert_eq!(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()), 0);
        }
        let (ours, theirs) = UnixStream::pair().unwrap();
        // SAFETY: no preconditions.
        let reader = unsafe { libc::pthread_self() };
        std::thread::spawn(move || {
            // The first request's read is interrupted, then answered.
            std::thread::sleep(Duration::from_millis(100));
            // SAFETY: a signal with a no-op handler to this test's thread,
            // which waits for the answer sent below.
            unsafe { libc::pthread_kill(reader, libc::SIGUSR2) };
            std::thread::sleep(Duration::from_millis(50));
            answer(theirs, &Mutex::default(), &Barrier::new(1), 1024);
        });
        let pmi = Pmi::over(ours, Duration::from_secs(10));
        assert!(pmi.is_ok(), "{:?}", pmi.err());
    }

    #[test]
    fn a_silent_launcher_is_an_error_not_a_hang() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let e = Pmi::over(ours, Duration::from_millis(50))
            .err()
            .expect("no answer");
        assert!(e.to_string().contains("no answer to cmd=init"), "{e}");
    }
}
