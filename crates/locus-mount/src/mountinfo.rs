//! Whether a Locus mount is at a path, and taking it away.

use std::io;
use std::path::Path;

/// `/proc/self/mountinfo` escapes blanks and backslashes in paths as octal.
fn unescape(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The Locus mount points listed in a mountinfo table.
fn locus_mounts(table: &str) -> Vec<String> {
    table
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut fields = right.split(' ');
            let (fstype, source) = (fields.next()?, fields.next()?);
            // The subtype shows in the type only when a helper mounted it.
            let locus =
                fstype == "fuse.locus" || (fstype == "fuse" && source.starts_with("locus:"));
            locus.then(|| unescape(point))
        })
        .collect()
}

/// Whether a Locus file system is mounted at `mountpoint`.
pub fn is_mounted(mountpoint: &Path) -> bool {
    // Not the mount point itself: a mount whose process died cannot be
    // resolved (ENOTCONN), and must still be found to be unmounted.
    let (Some(parent), Some(name)) = (mountpoint.parent(), mountpoint.file_name()) else {
        return false;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(parent) = parent.canonicalize() else {
        return false;
    };
    let point = parent.join(name);
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    locus_mounts(&table).iter().any(|m| Path::new(m) == point)
}

/// Unmounts the Locus mount at `mountpoint` (`EBUSY` while programs use it,
/// unless `lazy`: then it is detached now and goes when they are done).
pub fn unmount(mountpoint: &Path, lazy: bool) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(mountpoint.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EPERM) {
        return Err(e);
    }
    // Not root: the setuid helper unmounts what this user mounted.
    let mut cmd = std::process::Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    let out = cmd.arg(mountpoint).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_locus_mounts_with_escaped_names() {
        let table = "\
36 35 98:0 / /mnt1 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
99 29 0:52 / /tmp/a\\040b rw,nosuid,nodev,noatime - fuse.locus locus:/tmp/c rw,user_id=0
100 29 0:53 / /tmp/other rw - fuse.sshfs host: rw
101 29 0:54 / /tmp/direct rw - fuse locus:/tmp/c rw
";
        assert_eq!(
            locus_mounts(table),
            vec!["/tmp/a b".to_string(), "/tmp/direct".to_string()]
        );
    }
}
