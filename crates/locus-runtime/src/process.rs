//! One app process: started with std's `Command` so that this module, not
//! tokio, reaps it (`wait4` gives its CPU time and peak memory), its stdout
//! and stderr kept in bounded files of the run directory, its run bounded
//! by the task timeout.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncReadExt, Interest};
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;

/// Bytes of one stream kept per task; the rest is counted, not kept.
pub const KEPT_BYTES: u64 = 1 << 20;

/// How long a finished app's streams may stay open (a background child
/// holding them): after that the task ends without waiting for them.
const STREAM_GRACE: Duration = Duration::from_millis(200);

/// Where a stream the script did not redirect goes: `path`, made at its
/// first byte, holding at most `KEPT_BYTES`; and this process's own stream
/// too when `echo`.
pub struct Capture {
    pub path: PathBuf,
    pub echo: bool,
}

/// What the process used, as `wait4` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// User plus system CPU time, in microseconds.
    pub cpu_us: u64,
    /// Peak resident memory, in KiB.
    pub max_rss_kib: u64,
}

pub struct Ended {
    /// The exit code (128 + signal for a killed process); `None` when it
    /// ran past the timeout and was killed.
    pub code: Option<i32>,
    pub usage: Usage,
    /// The files its stdout and stderr were kept in, if it wrote any.
    pub kept: [Option<PathBuf>; 2],
}

/// Runs `cmd` (stdin already set) with its stdout and stderr captured as
/// `captures` say (`None`: as `cmd` has them), for at most `timeout`.
/// Waiting and reading are readiness events on this task's runtime (a
/// pidfd and the pipes), not threads: a thread hand-off per app costs more
/// than spawning `/bin/true`.
pub async fn run(
    mut cmd: Command,
    captures: [Option<Capture>; 2],
    timeout: Option<Duration>,
) -> io::Result<Ended> {
    if captures[0].is_some() {
        cmd.stdout(Stdio::piped());
    }
    if captures[1].is_some() {
        cmd.stderr(Stdio::piped());
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    // Dropping a std `Child` neither waits for nor kills the process: it
    // stays unreaped, so `pid` is ours, until `reap` below.
    let [out, err] = captures;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    drop(child);
    let watched = pidfd(pid).and_then(|exit| {
        let readers = [
            reader(out, stdout.map(OwnedFd::from), Echo::Stdout)?,
            reader(err, stderr.map(OwnedFd::from), Echo::Stderr)?,
        ];
        Ok((exit, readers))
    });
    let (exit, readers) = match watched {
        Ok(w) => w,
        Err(e) => {
            abandon(pid);
            return Err(e);
        }
    };
    let mut timed_out = false;
    let exited = match timeout {
        None => exit.readable().await.map(drop),
        Some(limit) => match tokio::time::timeout(limit, exit.readable()).await {
            Ok(r) => r.map(drop),
            Err(_) => {
                timed_out = true;
                kill_tree(pid);
                exit.readable().await.map(drop)
            }
        },
    };
    if let Err(e) = exited {
        abandon(pid);
        return Err(e);
    }
    let (status, usage) = reap(pid)?;
    let mut kept = [None, None];
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

/// A pidfd of `pid`, readable once the process has exited.
fn pidfd(pid: libc::pid_t) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: pidfd_open(2) with no flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor this function owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    // SAFETY: an `OwnedFd` keeps its one descriptor open until dropped.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(io::Error::from)
}

/// Starts keeping one captured stream, when there is one.
fn reader(
    capture: Option<Capture>,
    pipe: Option<OwnedFd>,
    echo: Echo,
) -> io::Result<Option<JoinHandle<io::Result<Option<PathBuf>>>>> {
    let (Some(c), Some(fd)) = (capture, pipe) else {
        return Ok(None);
    };
    let pipe = pipe::Receiver::from_owned_fd(fd)?;
    Ok(Some(tokio::spawn(keep(pipe, c, echo))))
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

/// Copies a stream to its capture file (made at the first byte, at most
/// `KEPT_BYTES`, then a line saying how much more there was) and, when
/// asked, to this process's own stream. Returns the file, if made.
async fn keep(mut from: pipe::Receiver, c: Capture, echo: Echo) -> io::Result<Option<PathBuf>> {
    let mut buf = vec![0u8; 64 << 10];
    let mut file: Option<File> = None;
    let (mut kept, mut more) = (0u64, 0u64);
    loop {
        let n = match from.read(&mut buf).await? {
            0 => break,
            n => n,
        };
        let chunk = &buf[..n];
        if c.echo {
            // The terminal going away must not fail the task.
            let _ = match echo {
                Echo::Stdout => io::stdout().lock().write_all(chunk),
                Echo::Stderr => io::stderr().lock().write_all(chunk),
            };
        }
        let take = (KEPT_BYTES - kept).min(n as u64) as usize;
        if take > 0 {
            let f = match &mut file {
                Some(f) => f,
                None => {
                    if let Some(dir) = c.path.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    file.insert(File::create(&c.path)?)
                }
            };
            f.write_all(&chunk[..take])?;
            kept += take as u64;
        }
        more += (n - take) as u64;
    }
    if let Some(f) = &mut file {
        if more > 0 {
            writeln!(f, "\n[locus: {more} more bytes were not kept]")?;
        }
    }
    Ok(file.map(|_| c.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script).stdin(Stdio::null());
        c
    }

    fn capture(dir: &std::path::Path, name: &str) -> Option<Capture> {
        Some(Capture {
            path: dir.join(name),
            echo: false,
        })
    }

    #[tokio::test]
    async fn streams_are_kept_bounded_and_usage_is_read() {
        let dir = tempfile::tempdir().unwrap();
        // 3 MiB to stdout, a line to stderr, some CPU, exit 3.
        let cmd = sh("head -c 3145728 /dev/zero; echo oops >&2; \
             i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3");
        let caps = [capture(dir.path(), "t.out"), capture(dir.path(), "t.err")];
        let e = run(cmd, caps, None).await.unwrap();
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
    async fn silent_streams_make_no_file_and_a_hung_app_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let caps = [capture(dir.path(), "a.out"), capture(dir.path(), "a.err")];
        let e = run(sh("true"), caps, None).await.unwrap();
        assert_eq!((e.code, &e.kept), (Some(0), &[None, None]));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A background child holding the stream open does not hold the
        // task; the one past the timeout is killed.
        let started = std::time::Instant::now();
        let caps = [capture(dir.path(), "b.out"), None];
        let e = run(
            sh("sleep 2 & echo started; exec sleep 30"),
            caps,
            Some(Duration::from_millis(300)),
        )
        .await
        .unwrap();
        assert_eq!(e.code, None);
        assert!(started.elapsed() < Duration::from_secs(10));
        // What a timed-out app started is killed with it.
        let marker = dir.path().join("grandchild");
        let e = run(
            sh(&format!(
                "(sleep 1; touch {}) & exec sleep 30",
                marker.display()
            )),
            [None, None],
            Some(Duration::from_millis(300)),
        )
        .await
        .unwrap();
        assert_eq!(e.code, None);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "the app's child outlived it");
        let code = run(sh("kill -9 $$"), [None, None], None)
            .await
            .unwrap()
            .code;
        assert_eq!(code, Some(128 + 9));
    }
}
