//! Waiting for any of several child processes to end without polling
//! them: one pidfd each, waited on together with `poll(2)`. (Asking every
//! rank every 2 ms woke `locus run` 500 times a second, each time taking a
//! core from the apps.)

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Child;
use std::time::Duration;

enum Watch {
    Pidfd(OwnedFd),
    /// No pidfd (a kernel before 5.3): asked again every few milliseconds.
    Asked,
    Ended,
}

/// The children still watched, by the index they were given in.
pub(crate) struct Exits {
    children: Vec<Watch>,
}

impl Exits {
    /// Watches `children` (index `i` is the `i`-th).
    pub(crate) fn of<'a>(children: impl IntoIterator<Item = &'a Child>) -> Exits {
        let children = children
            .into_iter()
            .map(|c| pidfd(c.id()).map_or(Watch::Asked, Watch::Pidfd))
            .collect();
        Exits { children }
    }

    /// Stops watching child `i`, reaped (its pidfd would stay readable).
    pub(crate) fn ended(&mut self, i: usize) {
        if let Some(w) = self.children.get_mut(i) {
            *w = Watch::Ended;
        }
    }

    /// Returns once a watched child may have ended, a signal came, or
    /// `most` passed.
    pub(crate) fn wait(&self, most: Duration) {
        let mut polled: Vec<libc::pollfd> = Vec::new();
        let mut most = most;
        for w in &self.children {
            match w {
                Watch::Pidfd(fd) => polled.push(libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }),
                Watch::Asked => most = most.min(ASK_EVERY),
                Watch::Ended => {}
            }
        }
        let ms = most.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `polled` holds `polled.len()` initialised entries whose
        // descriptors stay open (borrowed from `self`) for the call.
        unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    }
}

/// How often a child without a pidfd is asked whether it ended.
const ASK_EVERY: Duration = Duration::from_millis(2);

/// A pidfd of process `pid`, if the kernel gives one.
fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) with no flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a new descriptor only this value owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    #[test]
    fn a_wait_ends_when_a_child_ends_and_not_for_a_reaped_one() {
        let mut quick = Command::new("sleep").arg("0.1").spawn().unwrap();
        let mut slow = Command::new("sleep").arg("30").spawn().unwrap();
        let mut exits = Exits::of([&quick, &slow]);
        let started = Instant::now();
        exits.wait(Duration::from_secs(20));
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "woke for the exit"
        );
        assert!(quick.try_wait().unwrap().is_some());
        // Reaped, it no longer wakes the wait: only the time bound does.
        exits.ended(0);
        let started = Instant::now();
        exits.wait(Duration::from_millis(300));
        assert!(started.elapsed() >= Duration::from_millis(300));
        slow.kill().unwrap();
        slow.wait().unwrap();
    }
}
