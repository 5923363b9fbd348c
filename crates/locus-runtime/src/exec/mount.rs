//! `locus run --mount`: each worker mounts its node at `/locus`, in a mount
//! namespace of its own that its apps share, so programs open any Locus
//! file by the path the script uses.

use crate::exec::files::LOCUS_PREFIX;
use locus_fs::Client;
use locus_proto::run::{ErrorKind, RunError};
use std::path::Path;

/// Why a rank could not mount its node at `/locus`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MountError {
    /// The rank's own mount namespace could not be made (`step` failed).
    #[error("--mount: {step}: {cause} (a mount namespace per rank needs root)")]
    Namespace {
        step: &'static str,
        cause: std::io::Error,
    },
    /// The file system could not be mounted there.
    #[error("--mount: {LOCUS_PREFIX}: {0}")]
    Mount(std::io::Error),
}

impl From<MountError> for RunError {
    fn from(e: MountError) -> RunError {
        let kind = match e {
            MountError::Namespace { .. } => ErrorKind::Launch,
            MountError::Mount(_) => ErrorKind::Fs,
        };
        RunError::new(kind, e.to_string())
    }
}

/// Moves this process (still single-threaded) into a mount namespace of its
/// own, whose mounts do not reach the host's.
pub(crate) fn private_namespace() -> Result<(), MountError> {
    let failed = |step| MountError::Namespace {
        step,
        cause: std::io::Error::last_os_error(),
    };
    // SAFETY: unshare(2) with a flag and no pointers.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(failed("unshare"));
    }
    // SAFETY: valid NUL-terminated strings; no data argument.
    let done = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if done != 0 {
        return Err(failed("making / private"));
    }
    Ok(())
}

/// Mounts the file system `client` reaches at `/locus` (made if missing);
/// unmounted when the guard is dropped.
pub(crate) fn at_locus(client: Client, run_dir: &Path) -> Result<locus_mount::Mounted, MountError> {
    let point = Path::new(LOCUS_PREFIX);
    std::fs::create_dir_all(point).map_err(MountError::Mount)?;
    let name = format!("locus:{}", run_dir.display());
    locus_mount::spawn(client, point, &name).map_err(MountError::Mount)
}
