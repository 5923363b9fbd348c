//! One app process: started as `posix_spawn` would (`spawn`; the
//! environment built once per worker, `/dev/null` opened once) and reaped
//! by this module, not tokio (`wait4` gives its CPU time and peak memory),
//! its stdout and stderr kept in bounded files of the run directory, its
//! run bounded by the task timeout.

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, Interest};
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;

use crate::exec::spawn::{self, Spawner};

/// Bytes of one stream kept per task; the rest is counted, not kept.
pub(crate) const KEPT_BYTES: u64 = 1 << 20;

/// How long a finished app's streams may stay open (a background child
/// holding them): after that the task ends without waiting for them.
const STREAM_GRACE: Duration = Duration::from_millis(200);

/// How long an app runs before its captured streams are read as it writes
/// them. Most apps end sooner: their streams are then read once, after the
/// exit, which spares the worker a wake-up for each stream's end (and an
/// app filling a pipe's 64 KiB waits at most this long).
const STREAM_PATIENCE: Duration = Duration::from_millis(5);

/// Where a stream the script did not redirect goes: `path`, made at its
/// first byte, holding at most `KEPT_BYTES`; and this process's own stream
/// too when `echo`.
pub(crate) struct Capture {
    pub path: PathBuf,
    pub echo: bool,
}

/// A process's standard stream.
pub(crate) enum Stream {
    /// `/dev/null`.
    Null,
    /// A file opened for it.
    File(File),
    /// An output kept as `Capture` says.
    Capture(Capture),
}

/// What every process a worker starts has in common, made once: its
/// environment and `/dev/null`.
pub(crate) struct Launcher {
    env: Vec<CString>,
    null: OwnedFd,
    spawner: Spawner,
}

impl Launcher {
    /// This process's environment with `set` set and `unset` removed.
    pub(crate) fn new(set: &[(&str, String)], unset: &[&str]) -> io::Result<Launcher> {
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !unset.iter().any(|u| k == u) && !set.iter().any(|(s, _)| k == s))
            .collect();
        vars.extend(set.iter().map(|(k, v)| (k.into(), v.into())));
        let env = vars
            .iter()
            .map(|(k, v)| c_string([k.as_bytes(), b"=", v.as_bytes()].concat()))
            .collect::<io::Result<_>>()?;
        let null = File::open("/dev/null")?.into();
        Ok(Launcher {
            env,
            null,
            spawner: Spawner::new(),
        })
    }

    /// Starts `argv` (its program looked up in `PATH` unless it names a
    /// path) with `fds` as its stdin, stdout and stderr, signals as a new
    /// process has them (none blocked, `SIGPIPE` not ignored).
    fn spawn(&self, argv: &[String], fds: [RawFd; 3]) -> io::Result<spawn::Child> {
        let args = argv
            .iter()
            .map(|a| c_string(a.as_bytes().to_vec()))
            .collect::<io::Result<Vec<_>>>()?;
        let Some(name) = argv.first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no program"));
        };
        let program = if name.contains('/') {
            args[0].clone()
        } else {
            search_path(name)?
        };
        let pointers = |v: &[CString]| -> Vec<*mut libc::c_char> {
            v.iter()
                .map(|c| c.as_ptr().cast_mut())
                .chain(std::iter::once(std::ptr::null_mut()))
                .collect()
        };
        self.spawner
            .spawn(&program, &pointers(&args), &pointers(&self.env), fds)
    }
}

/// The first executable file named `name` in a directory of this
/// process's `PATH` (as `posix_spawnp` looks, in the parent's `PATH`).
fn search_path(name: &str) -> io::Result<CString> {
    match find_in_path(name) {
        Some(path) => c_string(path.into_os_string().into_vec()),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{name}: not found in PATH"),
        )),
    }
}

/// The program `name` (no `/` in it) a process started here runs.
pub(crate) fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path).find_map(|dir| {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let path = dir.join(name);
        let candidate = c_string(path.clone().into_os_string().into_vec()).ok()?;
        // SAFETY: access(2) on a NUL-terminated path.
        let runnable = unsafe { libc::access(candidate.as_ptr(), libc::X_OK) } == 0;
        // (For root, a directory passes `access`.)
        (runnable && path.is_file()).then_some(path)
    })
}

fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|e| {
        let text = String::from_utf8_lossy(&e.into_vec()).into_owned();
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{text:?} contains a NUL byte"),
        )
    })
}

/// A pipe: its read end stays here, its write end goes to the process.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) fills both descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors this function owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// What the process used, as `wait4` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Usage {
    /// User plus system CPU time, in microseconds.
    pub cpu_us: u64,
    /// Peak resident memory, in KiB.
    pub max_rss_kib: u64,
}

pub(crate) struct Ended {
    /// The exit code (128 + signal for a killed process); `None` when it
    /// ran past the timeout and was killed.
    pub code: Option<i32>,
    pub usage: Usage,
    /// The files its stdout and stderr were kept in, if it wrote any.
    pub kept: [Option<PathBuf>; 2],
}

/// Runs `argv` with `streams` as its stdin, stdout and stderr, for at
/// most `timeout`. Waiting and reading are readiness events on this task's
/// runtime (a pidfd and the pipes), not threads: a thread hand-off per app
/// costs more than spawning `/bin/true`. When nothing else waits on this
/// thread (`alone`), the exit of an app that ends within `STREAM_PATIENCE`
/// (most do) is waited for here, blocking: registering the pidfd with the
/// runtime and being woken through it cost a fifth of what runs beside a
/// `/bin/true`.
pub(crate) async fn run(
    launcher: &Launcher,
    argv: &[String],
    streams: [Stream; 3],
    timeout: Option<Duration>,
    alone: bool,
) -> io::Result<Ended> {
    // The descriptors the process gets are closed here once it started;
    // the read ends of captured streams are kept.
    let mut given: Vec<OwnedFd> = Vec::new();
    let mut fds = [launcher.null.as_raw_fd(); 3];
    let mut captured: Captured = [None, None];
    for (i, stream) in streams.into_iter().enumerate() {
        let fd = match stream {
            Stream::Null => continue,
            Stream::File(f) => OwnedFd::from(f),
            Stream::Capture(c) if i > 0 => {
                let (read, write) = pipe()?;
                let echo = [Echo::Stdout, Echo::Stderr][i - 1];
                captured[i - 1] = Some((Keeper::new(c, echo), read));
                write
            }
            Stream::Capture(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "stdin is not captured",
                ))
            }
        };
        fds[i] = fd.as_raw_fd();
        given.push(fd);
    }
    let child = launcher.spawn(argv, fds)?;
    let pid = child.pid;
    drop(given);
    let started = Instant::now();
    let patience = STREAM_PATIENCE.min(timeout.unwrap_or(Duration::MAX));
    // `pid` stays unreaped, so ours, until `reap` below.
    let mut streams = Some(captured);
    let mut readers: [Option<Reader>; 2] = [None, None];
    let waited = if alone && exits_within(&child.pidfd, patience) {
        Ok(false)
    } else {
        let watched = (&mut streams, &mut readers);
        until_exit((child.pidfd, pid), timeout, started, watched).await
    };
    let timed_out = match waited {
        Ok(t) => t,
        Err(e) => {
            abandon(pid);
            return Err(e);
        }
    };
    let (status, usage) = reap(pid)?;
    let mut kept = [None, None];
    // It ended before its streams were watched: what it wrote is in the
    // pipes, read now, unless something it started holds them.
    let unwatched = streams.take().into_iter().flatten().enumerate();
    for (i, (mut k, end)) in unwatched.filter_map(|(i, c)| Some((i, c?))) {
        if drain(&end, &mut k)? {
            kept[i] = k.finish()?;
        } else {
            readers[i] = Some(watch(k, end)?);
        }
    }
    for (slot, reader) in kept.iter_mut().zip(readers) {
        if let Some(mut r) = reader {
            match tokio::time::timeout(STREAM_GRACE, &mut r).await {
                Ok(Ok(Ok(path))) => *slot = path,
                // A background child still holds the stream.
                Err(_) => r.abort(),
                Ok(_) => {}
            }
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Ok(Ended {
        code: (!timed_out).then_some(code),
        usage,
        kept,
    })
}

/// Waits on the runtime for process `pid` (`pidfd`) to exit, killing it
/// past `timeout` and reading its captured `streams` into `readers` once
/// it has run `STREAM_PATIENCE` (both counted from `started`); whether it
/// was killed.
async fn until_exit(
    (pidfd, pid): (OwnedFd, libc::pid_t),
    timeout: Option<Duration>,
    started: Instant,
    (streams, readers): (&mut Option<Captured>, &mut [Option<Reader>; 2]),
) -> io::Result<bool> {
    // SAFETY: an `OwnedFd` keeps its one descriptor open until dropped.
    let exit = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) }?;
    let left = |d: Duration| d.saturating_sub(started.elapsed());
    let patience = tokio::time::sleep(left(STREAM_PATIENCE));
    let limit = tokio::time::sleep(left(timeout.unwrap_or(Duration::MAX)));
    tokio::pin!(patience, limit);
    let mut timed_out = false;
    loop {
        tokio::select! {
            r = exit.readable() => return r.map(|_| timed_out),
            () = &mut patience, if streams.is_some() => {
                let all = streams.take().into_iter().flatten();
                for (slot, c) in readers.iter_mut().zip(all) {
                    *slot = c.map(|(k, end)| watch(k, end)).transpose()?;
                }
            }
            () = &mut limit, if timeout.is_some() && !timed_out => {
                timed_out = true;
                kill_tree(pid);
            }
        }
    }
}

/// Whether the process of `pidfd` exits within `limit` (waited for here,
/// blocking the thread).
fn exits_within(pidfd: &OwnedFd, limit: Duration) -> bool {
    let mut look = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = limit.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one initialised entry, its descriptor ours and open.
    unsafe { libc::poll(&mut look, 1, ms) == 1 }
}

/// SIGKILLs unreaped child `pid` and what it started: its descendants
/// first, while the tree is whole (an orphan would outlive a retry that
/// succeeds).
fn kill_tree(pid: libc::pid_t) {
    kill_descendants(pid);
    // SAFETY: kill(2) on our own unreaped child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Kills and reaps child `pid` that can no longer be watched.
fn abandon(pid: libc::pid_t) {
    kill_tree(pid);
    let _ = reap(pid);
}

/// Captured stdout and stderr: each stream's keeper and its pipe's read end.
type Captured = [Option<(Keeper, OwnedFd)>; 2];

/// The task keeping a stream, ending with its file if one was made.
type Reader = JoinHandle<io::Result<Option<PathBuf>>>;

/// Starts keeping a stream as it is written to the read end `end`.
fn watch(k: Keeper, end: OwnedFd) -> io::Result<Reader> {
    let pipe = pipe::Receiver::from_owned_fd(end)?;
    Ok(tokio::spawn(keep(pipe, k)))
}

/// Reads, without waiting, what an ended app left in its pipe `fd`: `true`
/// at the stream's end, `false` if something still holds it open (a child
/// the app left running).
fn drain(fd: &OwnedFd, k: &mut Keeper) -> io::Result<bool> {
    let raw = fd.as_raw_fd();
    // Most apps write nothing: one look says so (no writer left, nothing
    // to read) without making the pipe non-blocking to read it.
    let mut look = libc::pollfd {
        fd: raw,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one initialised entry, its descriptor ours and open.
    if unsafe { libc::poll(&mut look, 1, 0) } == 1 && look.revents == libc::POLLHUP {
        return Ok(true);
    }
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(raw, libc::F_GETFL);
        if flags < 0 || libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let mut buf = [0u8; 4 << 10];
    loop {
        // SAFETY: reads into a buffer of the length given.
        let n = unsafe { libc::read(raw, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => return Ok(true),
            n if n > 0 => k.take(&buf[..n as usize])?,
            _ => {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => {}
                    io::ErrorKind::WouldBlock => return Ok(false),
                    _ => return Err(e),
                }
            }
        }
    }
}

/// Parent of each process, from `/proc`.
fn parents() -> Vec<(libc::pid_t, libc::pid_t)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: libc::pid_t = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command name in parentheses: state, then the parent.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// SIGKILLs every descendant of `root`, again until none is left (one may
/// fork while the tree is read).
fn kill_descendants(root: libc::pid_t) {
    for _ in 0..5 {
        let links = parents();
        let mut tree = vec![root];
        let mut i = 0;
        while i < tree.len() {
            let p = tree[i];
            tree.extend(links.iter().filter(|l| l.1 == p).map(|l| l.0));
            i += 1;
        }
        if tree.len() == 1 {
            return;
        }
        for &pid in &tree[1..] {
            // SAFETY: a signal to a process our app started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Reaps exited child `pid` with its usage.
fn reap(pid: libc::pid_t) -> io::Result<(i32, Usage)> {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: reaps our own child.
        if unsafe { libc::wait4(pid, &mut status, 0, &mut ru) } >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok((
        status,
        Usage {
            cpu_us: us(ru.ru_utime) + us(ru.ru_stime),
            max_rss_kib: ru.ru_maxrss as u64,
        },
    ))
}

#[derive(Clone, Copy)]
enum Echo {
    Stdout,
    Stderr,
}

/// Where a captured stream goes: its capture file (made at the first
/// byte, at most `KEPT_BYTES`, then a line saying how much more there was)
/// and, when asked, this process's own stream.
struct Keeper {
    c: Capture,
    echo: Echo,
    file: Option<File>,
    kept: u64,
    more: u64,
}

impl Keeper {
    fn new(c: Capture, echo: Echo) -> Keeper {
        Keeper {
            c,
            echo,
            file: None,
            kept: 0,
            more: 0,
        }
    }

    fn take(&mut self, chunk: &[u8]) -> io::Result<()> {
        if self.c.echo {
            // The terminal going away must not fail the task.
            let _ = match self.echo {
                Echo::Stdout => io::stdout().lock().write_all(chunk),
                Echo::Stderr => io::stderr().lock().write_all(chunk),
            };
        }
        let take = (KEPT_BYTES - self.kept).min(chunk.len() as u64) as usize;
        if take > 0 {
            let f = match &mut self.file {
                Some(f) => f,
                None => {
                    if let Some(dir) = self.c.path.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    self.file.insert(File::create(&self.c.path)?)
                }
            };
            f.write_all(&chunk[..take])?;
            self.kept += take as u64;
        }
        self.more += (chunk.len() - take) as u64;
        Ok(())
    }

    /// The file, if one was made.
    fn finish(mut self) -> io::Result<Option<PathBuf>> {
        if let Some(f) = &mut self.file {
            if self.more > 0 {
                writeln!(f, "\n[locus: {} more bytes were not kept]", self.more)?;
            }
        }
        Ok(self.file.map(|_| self.c.path))
    }
}

/// Keeps a stream as it is written, to its end.
async fn keep(mut from: pipe::Receiver, mut k: Keeper) -> io::Result<Option<PathBuf>> {
    // Most apps write little or nothing: the buffer grows when filled.
    let mut buf = vec![0u8; 4 << 10];
    loop {
        let n = match from.read(&mut buf).await? {
            0 => break,
            n => n,
        };
        k.take(&buf[..n])?;
        if n == buf.len() && n < 64 << 10 {
            buf.resize(64 << 10, 0);
        }
    }
    k.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` as a worker with nothing else to do does (its exit
    /// first waited for on this thread).
    async fn sh(script: &str, out: Stream, err: Stream, timeout: Option<Duration>) -> Ended {
        sh_with(script, [out, err], timeout, true).await
    }

    async fn sh_with(
        script: &str,
        [out, err]: [Stream; 2],
        timeout: Option<Duration>,
        alone: bool,
    ) -> Ended {
        let launcher = Launcher::new(&[("LOCUS_TEST", "set".into())], &["HOME"]).unwrap();
        let argv = ["sh", "-c", script].map(String::from);
        run(&launcher, &argv, [Stream::Null, out, err], timeout, alone)
            .await
            .unwrap()
    }

    fn capture(dir: &std::path::Path, name: &str) -> Stream {
        Stream::Capture(Capture {
            path: dir.join(name),
            echo: false,
        })
    }

    #[tokio::test]
    async fn streams_are_kept_bounded_and_usage_is_read() {
        let dir = tempfile::tempdir().unwrap();
        // 3 MiB to stdout, a line to stderr, some CPU, exit 3.
        let script = "head -c 3145728 /dev/zero; echo oops >&2; \
             i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3";
        let (out, err) = (capture(dir.path(), "t.out"), capture(dir.path(), "t.err"));
        let e = sh(script, out, err, None).await;
        assert_eq!(e.code, Some(3));
        assert!(
            e.usage.cpu_us > 0 && e.usage.max_rss_kib > 0,
            "{:?}",
            e.usage
        );
        let out = std::fs::read(dir.path().join("t.out")).unwrap();
        assert_eq!(
            &out[..KEPT_BYTES as usize],
            &vec![0u8; KEPT_BYTES as usize][..]
        );
        let tail = String::from_utf8_lossy(&out[KEPT_BYTES as usize..]).to_string();
        assert_eq!(
            tail,
            format!("\n[locus: {} more bytes were not kept]\n", 2 << 20)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t.err")).unwrap(),
            "oops\n"
        );
        assert_eq!(
            e.kept[1].as_deref(),
            Some(dir.path().join("t.err").as_path())
        );
    }

    #[tokio::test]
    async fn the_environment_signals_and_files_are_a_new_processs() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("f.out")).unwrap();
        // The variable set and the one removed; no signal blocked, and
        // `SIGPIPE` (ignored by Rust programs) not ignored.
        let script = "echo \"$LOCUS_TEST ${HOME-unset}\"; \
             grep -E '^Sig(Blk|Ign)' /proc/self/status; read x || echo eof";
        let e = sh(script, Stream::File(file), Stream::Null, None).await;
        assert_eq!(e.code, Some(0));
        let out = std::fs::read_to_string(dir.path().join("f.out")).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            (lines[0], lines[1], lines[3]),
            ("set unset", "SigBlk:\t0000000000000000", "eof"),
            "{out}"
        );
        let ignored = u64::from_str_radix(lines[2].trim_start_matches("SigIgn:\t"), 16).unwrap();
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
        let launcher = Launcher::new(&[], &[]).unwrap();
        let missing = ["no-such-program-here".to_string()];
        let e = run(
            &launcher,
            &missing,
            [Stream::Null, Stream::Null, Stream::Null],
            None,
            true,
        )
        .await;
        assert_eq!(e.err().map(|e| e.kind()), Some(io::ErrorKind::NotFound));
        // A program the child cannot `execve` is the spawn's error.
        let plain = dir.path().join("f.out").display().to_string();
        let nulls = [Stream::Null, Stream::Null, Stream::Null];
        let e = run(&launcher, &[plain], nulls, None, true).await;
        assert_eq!(
            e.err().map(|e| e.kind()),
            Some(io::ErrorKind::PermissionDenied)
        );
    }

    #[tokio::test]
    async fn an_app_ends_the_same_waited_for_here_or_through_the_runtime() {
        let dir = tempfile::tempdir().unwrap();
        let scripts = [
            "true",
            "echo out; echo err >&2; exit 4",
            "head -c 200000 /dev/zero",
            "sleep 0.05; echo late",
        ];
        for (n, script) in scripts.iter().enumerate() {
            let mut seen = Vec::new();
            for alone in [true, false] {
                let name = |s: &str| capture(dir.path(), &format!("{n}-{alone}.{s}"));
                let e = sh_with(script, [name("out"), name("err")], None, alone).await;
                let read = |k: &Option<PathBuf>| k.as_ref().map(|p| std::fs::read(p).unwrap());
                seen.push((e.code, e.kept.each_ref().map(read)));
            }
            assert!(seen[0] == seen[1], "{script}: {:?}", seen[0].0);
        }
    }

    #[tokio::test]
    async fn silent_streams_make_no_file_and_a_hung_app_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (capture(dir.path(), "a.out"), capture(dir.path(), "a.err"));
        let e = sh("true", out, err, None).await;
        assert_eq!((e.code, &e.kept), (Some(0), &[None, None]));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // An app that ends at once is read after its exit; one that runs
        // on is read as it writes: both keep all.
        for (script, name) in [("echo quick", "q"), ("sleep 0.1; echo slow", "s")] {
            let e = sh(script, capture(dir.path(), name), Stream::Null, None).await;
            let kept = std::fs::read_to_string(e.kept[0].as_ref().unwrap()).unwrap();
            assert_eq!(kept.trim(), script.rsplit(' ').next().unwrap());
        }
        // A background child holding the stream open does not hold the
        // task; the one past the timeout is killed.
        let started = std::time::Instant::now();
        let script = "sleep 2 & echo started; exec sleep 30";
        let limit = Some(Duration::from_millis(300));
        let e = sh(script, capture(dir.path(), "b.out"), Stream::Null, limit).await;
        assert_eq!(e.code, None);
        assert!(started.elapsed() < Duration::from_secs(10));
        let kept = std::fs::read_to_string(dir.path().join("b.out")).unwrap();
        assert_eq!(kept, "started\n");
        // What a timed-out app started is killed with it.
        let marker = dir.path().join("grandchild");
        let script = format!("(sleep 1; touch {}) & exec sleep 30", marker.display());
        let e = sh(&script, Stream::Null, Stream::Null, limit).await;
        assert_eq!(e.code, None);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "the app's child outlived it");
        let code = sh("kill -9 $$", Stream::Null, Stream::Null, None)
            .await
            .code;
        assert_eq!(code, Some(128 + 9));
    }
}
