//! Processes a site launcher starts, kept between the launcher and the
//! process doing the work. MPICH's Hydra takes one of its processes dying
//! of a signal for the job's failure and kills all the others, with or
//! without `-disable-auto-cleanup`; an exit code it lets pass. So what a
//! site launcher starts runs its own command again as a child and exits
//! with the child's code (128 + the signal that killed it): a worker or a
//! daemon killed on one host costs what it held, not the job.

use locus_runtime::RankEnv;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

/// Set on what a site launcher starts; its child runs without it.
const ENV: &str = "LOCUS_SUPERVISE";

/// The signals that stop a launched process, passed on to its child.
const STOPPING: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];

static CHILD: AtomicI32 = AtomicI32::new(0);

/// Asks the process `cmd` starts to supervise itself.
pub(crate) fn mark(cmd: &mut Command) {
    cmd.env(ENV, "1");
}

/// Lets this process, started by a site launcher, outlive another process
/// of its launch: Hydra without auto-cleanup tells the survivors with
/// SIGUSR1, whose default action would end them. A handler, not `SIG_IGN`,
/// so that the programs a rank starts get the default back at `exec`.
pub fn ignore_failure_notices() {
    extern "C" fn noticed(_: libc::c_int) {}
    let handler = noticed as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler does nothing (async-signal-safe).
    unsafe { libc::signal(libc::SIGUSR1, handler) };
}

/// In a process a site launcher started: runs this process's command again
/// as its child (which dies with it), passes on the signals that stop it to
/// the child's process group, and once the child ended stops what it left
/// there (a dead rank's apps must not go on writing) and returns the code
/// to exit with. `None` elsewhere: the caller is the process that does the
/// work.
pub fn supervise() -> io::Result<Option<i32>> {
    if std::env::var_os(ENV).is_none() {
        return Ok(None);
    }
    extern "C" fn pass_on(sig: libc::c_int) {
        let child = CHILD.load(Ordering::Relaxed);
        if child > 0 {
            // SAFETY: kill is async-signal-safe; the group our child leads.
            unsafe { libc::kill(-child, sig) };
        }
    }
    let handler = pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: an empty set filled with the stopping signals, blocked until
    // the child's pid is known, so none arrives before it can be passed on.
    let stopping = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOPPING {
            libc::sigaddset(&mut set, sig);
            libc::signal(sig, handler);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let parent = std::process::id() as libc::pid_t;
    let mut cmd = Command::new(std::env::current_exe()?);
    // A process group of its own, which the programs it starts share:
    // Hydra's notices to this one's group do not reach them, and what
    // stops this process stops them all.
    cmd.args(std::env::args_os().skip(1))
        .env_remove(ENV)
        .process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::sigprocmask(libc::SIG_UNBLOCK, &stopping, std::ptr::null_mut());
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // The supervisor is gone already.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    };
    let spawned = cmd.spawn();
    if let Ok(child) = &spawned {
        CHILD.store(child.id() as i32, Ordering::Relaxed);
    }
    // SAFETY: unblocks what was blocked above; a pending signal is passed on.
    unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &stopping, std::ptr::null_mut()) };
    let mut child = spawned?;
    let pid = child.id() as libc::pid_t;
    // Waits for its end without reaping it, so that its group's id is not
    // another's when what it left there is stopped.
    loop {
        // SAFETY: a zeroed siginfo is a valid out-parameter; our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT;
        if unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) } == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    // SAFETY: a signal to the process group our (unreaped) child led.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let status = child.wait()?;
    if let Some(sig) = status.signal() {
        // The launcher only learns a code: say what happened.
        let which = match RankEnv::from_env() {
            Some(e) => format!("process {} of {}", e.rank, e.size),
            None => "a process".to_string(),
        };
        eprintln!(
            "locus: {which} the launcher started on {} was killed by signal {sig}",
            locus_fs::hostname()
        );
    }
    Ok(Some(status.code().unwrap_or_else(|| {
        128 + status.signal().unwrap_or(libc::SIGKILL)
    })))
}
