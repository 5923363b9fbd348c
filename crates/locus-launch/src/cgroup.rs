//! CPU limits for emulated hosts: one cgroup per host with a CPU quota, so
//! a host's processes cannot use cores another host leaves idle, as on
//! separate machines. Uses cgroup v2 (`cpu.max`) when the unified hierarchy
//! has the cpu controller, else v1's cpu controller (`cpu.cfs_quota_us`).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ROOT: &str = "/sys/fs/cgroup";
/// Quota period in microseconds (the kernel's default).
const PERIOD_US: u64 = 10_000;

/// The directory a cgroup named `name` has (made or not).
pub fn path(name: &str) -> PathBuf {
    let root = Path::new(ROOT);
    let v2 = std::fs::read_to_string(root.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
    if v2 {
        root.join(name)
    } else {
        root.join("cpu").join(name)
    }
}

/// Makes the cgroup at `dir` (from `path`) limited to `cores` CPUs' worth
/// of time.
pub fn create(dir: &Path, cores: f64) -> io::Result<()> {
    if cores.is_nan() || cores <= 0.0 {
        return Err(io::Error::other(format!(
            "CPU share {cores} must be positive"
        )));
    }
    let annotate =
        |e: io::Error| io::Error::new(e.kind(), format!("cgroup {}: {e}", dir.display()));
    std::fs::create_dir(dir).map_err(annotate)?;
    let quota = ((cores * PERIOD_US as f64) as u64).max(1_000);
    let limited = if dir.join("cpu.max").exists() {
        std::fs::write(dir.join("cpu.max"), format!("{quota} {PERIOD_US}"))
    } else {
        std::fs::write(dir.join("cpu.cfs_period_us"), PERIOD_US.to_string())
            .and_then(|_| std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string()))
    };
    if let Err(e) = limited {
        let _ = std::fs::remove_dir(dir);
        return Err(annotate(e));
    }
    Ok(())
}

/// Removes a cgroup once its processes have gone (they may take a moment
/// to exit after being killed).
pub fn remove(dir: &Path) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Makes `cmd`'s process start inside the cgroup at `dir`.
pub fn join(cmd: &mut Command, dir: &Path) -> io::Result<()> {
    let procs =
        CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: open, write and close are async-signal-safe; nothing is
    // allocated between fork and exec. Writing 0 moves the writer itself.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = io::Error::last_os_error();
            libc::close(fd);
            if n != 1 {
                return Err(err);
            }
            Ok(())
        });
    }
    Ok(())
}
