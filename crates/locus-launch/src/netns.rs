//! Starting a process inside a named network namespace (one made by
//! `ip netns add`, bound at `/run/netns/NAME`), as the emulated cluster's
//! daemons and ranks are.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Where `ip netns` binds named namespaces.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

fn open(name: &str) -> io::Result<std::fs::File> {
    std::fs::File::open(path(name))
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {name}: {e}")))
}

/// Makes `cmd` start inside network namespace `name`. The namespace is
/// opened now, so a missing one is an error here rather than in the child.
pub fn enter(cmd: &mut Command, name: &str) -> io::Result<()> {
    let fd: OwnedFd = open(name)?.into();
    // SAFETY: setns is async-signal-safe; the fd stays open in the parent
    // (moved into the closure) until the command is dropped.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Moves the calling thread into network namespace `name`: sockets it opens
/// afterwards belong there (used to measure raw links between namespaces).
pub fn enter_thread(name: &str) -> io::Result<()> {
    let file = open(name)?;
    // SAFETY: setns on a valid fd; it affects only this thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
