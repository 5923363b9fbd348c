//! Every process Locus starts, started one way: file-system daemons, a
//! run's ranks, benchmark clients, on this machine, on emulated hosts
//! (network namespaces with shaped links and CPU limits) or through a
//! site's launcher (`srun`, `mpiexec`). What a process is to be crosses
//! the process boundary as a typed configuration file (`role`); how the
//! binary is invoked on one is the embedder's (`Program`).

#![warn(missing_docs)]

pub mod cgroup;
pub mod daemons;
pub mod emulate;
mod exits;
pub mod index;
pub mod listing;
pub mod netns;
pub mod ranks;
pub mod role;
pub mod site;
pub mod supervise;

pub use daemons::{running_pid, serving, stop, Daemons, Stopped};
pub use emulate::{Emulation, FsMode, Host, Rate};
pub use ranks::{
    hold_run_dir, launch_ranks, new_run_dir, rank_options, LaunchError, On, RankLaunch, RunHold,
    CUT_OFF_EXIT, RUN_MARKER, STOPPED_EXIT,
};
pub use role::{Launched, LocusBinary, Program, Role};
pub use site::{
    deploy, purge_here, recorded, redeploy, take_down, Deploy, PurgeStores, Shape, Site,
    SiteLauncher,
};
pub use supervise::{ignore_failure_notices, supervise};

/// The signal a rank on this machine gets when its launcher dies.
const LAUNCHER_GONE: libc::c_int = libc::SIGUSR2;

/// In a rank leading its process group: when its launcher dies (however:
/// `kill -9` too) the rank ends with the programs it started, which share
/// its group.
pub fn end_with_launcher() {
    extern "C" fn gone(_: libc::c_int) {
        // SAFETY: kill is async-signal-safe; the group this rank leads.
        unsafe { libc::kill(0, libc::SIGKILL) };
    }
    // SAFETY: getpgrp/getpid cannot fail; the handler is async-signal-safe.
    unsafe {
        if libc::getpgrp() == libc::getpid() {
            let handler = gone as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::signal(LAUNCHER_GONE, handler);
        }
    }
}

/// In a child between fork and exec: `sig` when the process `parent` (that
/// forked it) dies, even by SIGKILL; an error if it died already. Only
/// async-signal-safe calls.
pub(crate) fn die_with_parent(sig: libc::c_int, parent: u32) -> std::io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, sig) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() as u32 != parent {
            return Err(std::io::Error::other("its launcher is gone"));
        }
    }
    Ok(())
}
