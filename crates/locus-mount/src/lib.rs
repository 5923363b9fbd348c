//! `locus fs mount`: the Locus file system as a POSIX mount (FUSE), a client
//! of one node, so unmodified programs open Locus files by path.

#![warn(missing_docs)]

mod dir_attrs;
mod fs;
mod handles;
mod hold;
mod inodes;
mod mountinfo;

pub use fs::LocusFs;
pub use hold::{Hold, Read};
pub use mountinfo::{is_mounted, unmount};

use std::path::Path;

/// The mount options and threads every Locus mount is served with.
pub fn config(name: &str) -> fuser::Config {
    use fuser::MountOption as O;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        O::FSName(name.to_string()),
        O::Subtype("locus".into()),
        O::NoAtime,
    ];
    // Only the mounter's own processes use a mount (it is not
    // `allow_other`). Root passes every mode check but exec, which the
    // kernel makes without `default_permissions` too (and `access` answers
    // alike), while asking the kernel to check costs every create a fifth
    // request, for its directory's attributes (on tmpfs, creates at 1.74x
    // passthrough's with it, 2.07-2.19x without). Other users' modes are
    // checked by the kernel.
    if !is_root() {
        config.mount_options.push(O::DefaultPermissions);
    }
    // A request's thread waits for its metadata round trips: programs
    // creating in several directories at once (each directory's creates
    // are one at a time in the kernel) need as many threads to overlap
    // (8 creators in 8 directories: 2,308 creates/s with 4, 2,850 with 16).
    config.n_threads = Some(16);
    config.clone_fd = true;
    config
}

/// Whether this process mounts as root (others' mounts are checked by the
/// kernel's permission rules and, in a user namespace, get no passthrough).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Mounts the file system `client` reaches at `mountpoint` and serves it
/// until it is unmounted. `name` is what `mount` lists as its source.
pub fn serve(client: locus_fs::Client, mountpoint: &Path, name: &str) -> std::io::Result<()> {
    fuser::mount(LocusFs::new(client)?, mountpoint, &config(name))
}

/// A mount served by threads of this process, unmounted when dropped.
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    hold: Hold,
}

/// [`serve`] from background threads of this process.
pub fn spawn(client: locus_fs::Client, mountpoint: &Path, name: &str) -> std::io::Result<Mounted> {
    let fs = LocusFs::new(client)?;
    let hold = fs.hold();
    let session = fuser::spawn_mount(fs, mountpoint, &config(name))?;
    Ok(Mounted {
        session: Some(session),
        hold,
    })
}

impl Mounted {
    /// Makes a task's writes through this mount all-or-nothing.
    pub fn hold(&self) -> Hold {
        self.hold.clone()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            if let Err(e) = s.umount_and_join() {
                tracing::warn!("unmounting: {e}");
            }
        }
    }
}
