//! Directories only their owner can use: a cluster's directory, node stores,
//! run directories. One made in a shared place like `/tmp` could otherwise be
//! made first by another user, who would then read (or replace) what is
//! written there, so an existing one is used only if it is ours and private.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Creates `dir` (and missing parents) readable by its owner only, or checks
/// an existing one with [`check`].
pub fn create(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    check(dir)
}

/// Fails unless `dir` is a directory (not a link to one: another user may
/// have planted it) that belongs to this user and no one else can write in.
/// It is opened without following a link and judged by what was opened,
/// not by its path (which could change between a look and a use); in a
/// sticky shared directory such as `/tmp`, an entry found so stays so.
pub(crate) fn check(dir: &Path) -> io::Result<()> {
    let refuse = |why: String| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}; refusing to use it", dir.display()),
        )
    };
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY)
        .open(dir);
    let meta = match opened {
        Ok(d) => d.metadata()?,
        // Refused either way; the look at the path only names why.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
            let why = if link {
                "a symbolic link"
            } else {
                "not a directory"
            };
            return Err(refuse(why.into()));
        }
        Err(e) => return Err(e),
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(refuse(format!(
            "owned by uid {}, not by you (uid {me})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "writable by other users (mode {:o})",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_dirs_are_made_0700_and_shared_ones_refused() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("a/b");
        create(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        create(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check(&dir).unwrap_err();
        assert!(
            e.to_string().contains("writable by other users (mode 777)"),
            "{e}"
        );
        // A link planted where a private directory goes is refused, and
        // nothing is made through it.
        let planted = top.path().join("planted");
        let target = top.path().join("victim");
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        let e = create(&planted).unwrap_err();
        assert!(
            e.to_string().contains("planted: a symbolic link; refusing"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
        if unsafe { libc::geteuid() } == 0 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            std::os::unix::fs::chown(&dir, Some(12345), None).unwrap();
            let e = create(&dir).unwrap_err();
            assert!(
                e.to_string().contains("owned by uid 12345, not by you"),
                "{e}"
            );
        }
    }
}
