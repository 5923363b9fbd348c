//! Starting a program the way `posix_spawn` does (a child sharing this
//! process's memory until it calls `execve`), with less work per start:
//! the child's stack is made once, not mapped and unmapped each time; the
//! kernel hands back a pidfd with the child (`CLONE_PIDFD`); and the child
//! resets only the signals this process handles (found once), not all 64
//! one by one as glibc's child does.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

/// The child's stack: it only moves descriptors, resets signals and calls
/// `execve` (glibc's own spawn child uses 32 KiB).
const STACK: usize = 64 << 10;

/// Starts programs; one per worker, made once.
pub(crate) struct Spawner {
    /// Held while a child runs on it (until its `execve`).
    stack: Mutex<Vec<u128>>,
    /// Signals the child sets back to their default action: those this
    /// process catches (a handler must not run in the child, which shares
    /// this process's memory) and `SIGPIPE`, which Rust ignores.
    reset: Vec<libc::c_int>,
}

/// A started process.
pub(crate) struct Child {
    pub pid: libc::pid_t,
    /// Readable once it has exited.
    pub pidfd: OwnedFd,
}

/// What the child needs, all made before it starts (it may not allocate).
struct Exec<'a> {
    program: &'a CStr,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    fds: [RawFd; 3],
    reset: &'a [libc::c_int],
    /// The child's `errno` when it could not `execve`.
    error: libc::c_int,
}

impl Spawner {
    pub(crate) fn new() -> Spawner {
        let reset = (1..=libc::SIGRTMAX())
            .filter(|&sig| {
                // SAFETY: a query only (no new action), into a zeroed struct.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                let ok = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
                ok && (sig == libc::SIGPIPE
                    || (old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN))
            })
            .collect();
        Spawner {
            stack: Mutex::new(vec![0u128; STACK / 16]),
            reset,
        }
    }

    /// Starts `program` (a path) with `argv` and `envp` (both
    /// NULL-terminated, `argv[0]` first) and `fds` as its stdin, stdout and
    /// stderr, no signal blocked.
    pub(crate) fn spawn(
        &self,
        program: &CString,
        argv: &[*mut libc::c_char],
        envp: &[*mut libc::c_char],
        fds: [RawFd; 3],
    ) -> io::Result<Child> {
        let mut exec = Exec {
            program,
            argv: argv.as_ptr().cast(),
            envp: envp.as_ptr().cast(),
            fds,
            reset: &self.reset,
            error: 0,
        };
        let mut stack = self.stack.lock().expect("spawn stack");
        let mut pidfd: libc::c_int = -1;
        // SAFETY: all signals are blocked across the clone, so no handler
        // runs in the child before it reset them; the child runs `child`
        // on `stack` (its top, 16-aligned), which stays ours and unused
        // until the child has called `execve` or `_exit` (`CLONE_VFORK`
        // holds this thread until then); `exec` outlives that too.
        let pid = unsafe {
            let (mut all, mut old): (libc::sigset_t, libc::sigset_t) =
                (std::mem::zeroed(), std::mem::zeroed());
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let top = stack.as_mut_ptr().add(stack.len()).cast::<libc::c_void>();
            let pid = libc::clone(
                child,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                (&mut exec as *mut Exec).cast(),
                &mut pidfd as *mut libc::c_int,
            );
            let e = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            if pid < 0 {
                return Err(e);
            }
            pid
        };
        drop(stack);
        // SAFETY: the kernel made this descriptor for us with the child.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
        // Written by the child, through memory the compiler does not see it
        // share.
        // SAFETY: a plain read of a live local.
        let error = unsafe { std::ptr::read_volatile(&exec.error) };
        if error != 0 {
            let mut status = 0;
            // SAFETY: reaps our own child, which exited without `execve`.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return Err(io::Error::from_raw_os_error(error));
        }
        Ok(Child { pid, pidfd })
    }
}

impl Default for Spawner {
    fn default() -> Spawner {
        Spawner::new()
    }
}

/// The child, until `execve`: only system calls, on the parent's memory.
extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Exec`, alive and not touched by the
    // parent while this runs (it waits for our `execve` or `_exit`).
    let exec = unsafe { &mut *arg.cast::<Exec>() };
    unsafe {
        for (target, &fd) in exec.fds.iter().enumerate() {
            let target = target as RawFd;
            // `dup2` onto itself would leave close-on-exec set.
            let moved = if fd == target {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, target)
            };
            if moved < 0 {
                return fail(exec);
            }
        }
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for &sig in exec.reset {
            libc::sigaction(sig, &default, std::ptr::null_mut());
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(exec.program.as_ptr(), exec.argv, exec.envp);
        fail(exec)
    }
}

/// Leaves the child with its `errno` for the parent.
unsafe fn fail(exec: &mut Exec) -> libc::c_int {
    exec.error = *libc::__errno_location();
    libc::_exit(127)
}
