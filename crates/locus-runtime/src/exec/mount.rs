//! A worker's mount: each worker mounts its node at `/locus`, in a mount
//! namespace of its own that its apps share, so programs open any Locus
//! file by the path the script uses (`locus run` does where it may: root,
//! or any user where the kernel allows user namespaces).

use crate::exec::files::LOCUS_PREFIX;
use locus_fs::Client;
use locus_mount::is_root;
use locus_proto::run::{ErrorKind, RunError};
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Whether workers mount the file system at `/locus` for their apps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MountMode {
    /// Apps get their Locus files as store paths.
    #[default]
    Off,
    /// Each worker mounts where it can; one that cannot says why once and
    /// gives its apps store paths.
    Auto,
    /// Each worker mounts, or the run fails.
    On,
}

impl MountMode {
    /// The mode a run's workers use, tried once by whoever starts the run
    /// (`mount_allowed`): `On` that cannot is an error; `Auto` that cannot
    /// is `Off`, with why (to be said once).
    pub fn settled(self) -> Result<(MountMode, Option<MountError>), MountError> {
        if self == MountMode::Off {
            return Ok((self, None));
        }
        match (mount_allowed(), self) {
            (Ok(()), _) => Ok((self, None)),
            (Err(e), MountMode::On) => Err(e),
            (Err(e), _) => Ok((MountMode::Off, Some(e))),
        }
    }
}

/// Why a rank could not mount its node at `/locus`.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// The rank's own namespace could not be made (`step` failed).
    #[error("{}: {cause} ({})", step.what(), namespace_hint())]
    Namespace { step: Step, cause: std::io::Error },
    /// There is no `/locus` to mount on, and this user may not make one.
    #[error(
        "{LOCUS_PREFIX} does not exist and only root may make it \
         (an administrator's `mkdir {LOCUS_PREFIX}` lets every user's runs mount there)"
    )]
    NoMountPoint,
    /// `/dev/fuse` could not be opened (no FUSE on this host).
    #[error("/dev/fuse: {0}")]
    Device(std::io::Error),
    /// The file system could not be mounted there.
    #[error("{LOCUS_PREFIX}: {0}")]
    Mount(std::io::Error),
}

fn namespace_hint() -> &'static str {
    match is_root() {
        true => "a mount namespace per worker",
        false => {
            "a user and mount namespace per worker: the kernel may forbid them to users \
                  (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, \
                  kernel.apparmor_restrict_unprivileged_userns)"
        }
    }
}

impl From<MountError> for RunError {
    fn from(e: MountError) -> RunError {
        let kind = match e {
            MountError::Namespace { .. } | MountError::NoMountPoint => ErrorKind::Launch,
            MountError::Device(_) | MountError::Mount(_) => ErrorKind::Fs,
        };
        RunError::new(kind, format!("--mount: {e}"))
    }
}

/// The steps of making a worker's namespace and mounting in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    Unshare = 1,
    Maps,
    Private,
    /// Starting the probe's child.
    Fork,
}

impl Step {
    fn what(self) -> &'static str {
        match self {
            Step::Unshare => "unshare",
            Step::Maps => "writing the user namespace's maps",
            Step::Private => "making / private",
            Step::Fork => "starting a child to try it",
        }
    }
}

/// What making a worker's namespace takes, made before any of it is done
/// (the probe's child may only make system calls).
struct Namespace {
    /// Root's mounts need only a mount namespace; a user's, a user
    /// namespace too, in which they are themselves (`uid_map`/`gid_map`).
    maps: Option<[(CString, CString); 3]>,
}

impl Namespace {
    fn for_this_user() -> Namespace {
        if is_root() {
            return Namespace { maps: None };
        }
        // SAFETY: getuid and getgid have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let file = |f: &str, s: String| {
            (
                CString::new(format!("/proc/self/{f}")).expect("no NUL"),
                CString::new(s).expect("no NUL"),
            )
        };
        Namespace {
            maps: Some([
                // A user namespace maps groups only once setgroups is denied.
                file("setgroups", "deny".into()),
                file("uid_map", format!("{uid} {uid} 1")),
                file("gid_map", format!("{gid} {gid} 1")),
            ]),
        }
    }

    /// Moves this process (single-threaded) into it: system calls only,
    /// so a forked child may call it. Mounts made in it never reach the
    /// host's.
    fn enter(&self) -> Result<(), (Step, i32)> {
        let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let flags = match self.maps {
            None => libc::CLONE_NEWNS,
            Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
        };
        // SAFETY: unshare(2) with flags and no pointers.
        if unsafe { libc::unshare(flags) } != 0 {
            return Err((Step::Unshare, errno()));
        }
        for (file, line) in self.maps.iter().flatten() {
            // SAFETY: valid NUL-terminated path; the buffer is `line`'s.
            let written = unsafe {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                let n = match fd >= 0 {
                    true => libc::write(fd, line.as_ptr().cast(), line.as_bytes().len()),
                    false => -1,
                };
                if fd >= 0 {
                    libc::close(fd);
                }
                n
            };
            if written < 0 {
                return Err((Step::Maps, errno()));
            }
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
            return Err((Step::Private, errno()));
        }
        Ok(())
    }
}

fn namespace_error((step, errno): (Step, i32)) -> MountError {
    MountError::Namespace {
        step,
        cause: std::io::Error::from_raw_os_error(errno),
    }
}

/// Moves this process (still single-threaded) into a mount namespace of its
/// own (and, for a user, a user namespace of its own), whose mounts do not
/// reach the host's.
pub(crate) fn private_namespace() -> Result<(), MountError> {
    Namespace::for_this_user().enter().map_err(namespace_error)
}

/// `/locus`, made if missing and this user may.
fn mount_point() -> Result<&'static Path, MountError> {
    let point = Path::new(LOCUS_PREFIX);
    match std::fs::create_dir_all(point) {
        Ok(()) => Ok(point),
        Err(_) if !is_root() && !point.is_dir() => Err(MountError::NoMountPoint),
        Err(e) => Err(MountError::Mount(e)),
    }
}

/// Mounts the file system `client` reaches at `/locus`; unmounted when the
/// guard is dropped.
pub(crate) fn at_locus(client: Client, run_dir: &Path) -> Result<locus_mount::Mounted, MountError> {
    let point = mount_point()?;
    let name = format!("locus:{}", run_dir.display());
    locus_mount::spawn(client, point, &name).map_err(MountError::Mount)
}

/// The probe's reports of a failed open of `/dev/fuse` and a failed mount
/// (past every [`Step`]).
const OPENING: u8 = u8::MAX - 1;
const MOUNTING: u8 = u8::MAX;

/// Whether a worker started by this user on this host could mount at
/// `/locus`: a child process makes the namespace a worker makes and
/// mounts a FUSE file system (no server behind it) at `/locus` in it; both
/// end with the child.
pub fn mount_allowed() -> Result<(), MountError> {
    let point = mount_point()?;
    let mode = std::fs::metadata(point)
        .map_err(MountError::Mount)?
        .permissions()
        .mode();
    // /dev/fuse is opened in the namespace (the kernel refuses a device
    // opened outside the mount's user namespace), onto this descriptor.
    let fuse = std::fs::File::open("/dev/null").map_err(MountError::Mount)?;
    // SAFETY: getuid and getgid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let options = CString::new(format!(
        "fd={},rootmode={mode:o},user_id={uid},group_id={gid}",
        std::os::fd::AsRawFd::as_raw_fd(&fuse)
    ))
    .expect("no NUL");
    let point = CString::new(LOCUS_PREFIX).expect("no NUL");
    let namespace = Namespace::for_this_user();
    let mut pipe = [0; 2];
    // SAFETY: a two-int array for pipe(2).
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(MountError::Mount(std::io::Error::last_os_error()));
    }
    // SAFETY: the child makes system calls only (no allocation, no locks)
    // and ends with _exit, as a child of a threaded process must.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // The step that failed (0: none; past the namespace's, the mount)
        // and its errno, through the pipe.
        let report = |step: u8, errno: i32| -> ! {
            let mut msg = [0u8; 5];
            msg[0] = step;
            msg[1..].copy_from_slice(&errno.to_ne_bytes());
            // SAFETY: a buffer of ours, then _exit.
            unsafe {
                libc::write(pipe[1], msg.as_ptr().cast(), msg.len());
                libc::_exit(0)
            }
        };
        if let Err((step, errno)) = namespace.enter() {
            report(step as u8, errno)
        }
        // SAFETY: a valid NUL-terminated path; `fuse` is our descriptor;
        // valid NUL-terminated strings.
        let mounted = unsafe {
            let dev = libc::open(c"/dev/fuse".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if dev < 0 || libc::dup2(dev, std::os::fd::AsRawFd::as_raw_fd(&fuse)) < 0 {
                report(
                    OPENING,
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                )
            }
            libc::mount(
                c"locus-probe".as_ptr(),
                point.as_ptr(),
                c"fuse".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                options.as_ptr().cast(),
            )
        };
        match mounted {
            0 => report(0, 0),
            _ => report(
                MOUNTING,
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ),
        }
    }
    // SAFETY: our pipe's ends.
    unsafe { libc::close(pipe[1]) };
    let mut msg = [0u8; 5];
    // SAFETY: reading into a buffer of ours from our pipe.
    let got = unsafe { libc::read(pipe[0], msg.as_mut_ptr().cast(), msg.len()) };
    // SAFETY: our pipe's end; the child is ours to reap.
    unsafe {
        libc::close(pipe[0]);
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    drop(fuse);
    if pid < 0 || got != msg.len() as isize {
        return Err(namespace_error((Step::Fork, libc::EAGAIN)));
    }
    let errno = i32::from_ne_bytes(msg[1..].try_into().expect("four bytes"));
    match msg[0] {
        0 => Ok(()),
        OPENING => Err(MountError::Device(std::io::Error::from_raw_os_error(errno))),
        MOUNTING => Err(MountError::Mount(std::io::Error::from_raw_os_error(errno))),
        s if s == Step::Unshare as u8 => Err(namespace_error((Step::Unshare, errno))),
        s if s == Step::Maps as u8 => Err(namespace_error((Step::Maps, errno))),
        _ => Err(namespace_error((Step::Private, errno))),
    }
}
