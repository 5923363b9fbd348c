//! POSIX-like error codes that travel on the wire and reach the CLI as one line.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The error codes Locus reports; names and meanings follow POSIX.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Errno {
    ENOENT,
    EEXIST,
    EBUSY,
    ENOTDIR,
    EISDIR,
    ENOTEMPTY,
    EACCES,
    EINVAL,
    EIO,
    ENOSPC,
    /// Try again: a daemon acting for an owner that is coming back refuses
    /// writes to its keys, which the owner takes back meanwhile.
    EAGAIN,
}

impl Errno {
    pub fn describe(self) -> &'static str {
        match self {
            Errno::ENOENT => "no such file or directory",
            Errno::EEXIST => "file exists",
            Errno::EBUSY => "file is being written by another writer",
            Errno::ENOTDIR => "not a directory",
            Errno::EISDIR => "is a directory",
            Errno::ENOTEMPTY => "directory not empty",
            Errno::EACCES => "permission denied",
            Errno::EINVAL => "invalid argument",
            Errno::EIO => "input/output error",
            Errno::ENOSPC => "no space left on device",
            Errno::EAGAIN => "try again",
        }
    }

    /// The OS error number of this code (what a mount answers the kernel).
    pub fn raw(self) -> i32 {
        match self {
            Errno::ENOENT => libc::ENOENT,
            Errno::EEXIST => libc::EEXIST,
            Errno::EBUSY => libc::EBUSY,
            Errno::ENOTDIR => libc::ENOTDIR,
            Errno::EISDIR => libc::EISDIR,
            Errno::ENOTEMPTY => libc::ENOTEMPTY,
            Errno::EACCES => libc::EACCES,
            Errno::EINVAL => libc::EINVAL,
            Errno::EIO => libc::EIO,
            Errno::ENOSPC => libc::ENOSPC,
            Errno::EAGAIN => libc::EAGAIN,
        }
    }

    /// Maps an OS error onto the closest Locus code (EIO when there is none).
    pub fn from_io(e: &std::io::Error) -> Errno {
        match e.raw_os_error() {
            Some(libc::ENOENT) => Errno::ENOENT,
            Some(libc::EEXIST) => Errno::EEXIST,
            Some(libc::EBUSY) => Errno::EBUSY,
            Some(libc::ENOTDIR) => Errno::ENOTDIR,
            Some(libc::EISDIR) => Errno::EISDIR,
            Some(libc::ENOTEMPTY) => Errno::ENOTEMPTY,
            Some(libc::EACCES | libc::EPERM) => Errno::EACCES,
            Some(libc::EINVAL) => Errno::EINVAL,
            Some(libc::ENOSPC) => Errno::ENOSPC,
            _ => match e.kind() {
                std::io::ErrorKind::NotFound => Errno::ENOENT,
                std::io::ErrorKind::AlreadyExists => Errno::EEXIST,
                std::io::ErrorKind::PermissionDenied => Errno::EACCES,
                _ => Errno::EIO,
            },
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Why an error happened, for a caller that decides by it (never by the
/// error's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cause {
    /// The daemon of `node` could not be reached.
    Unreachable { node: u32 },
    /// A miss whose owner, `node`, could not be reached: the name may have
    /// been lost with it.
    OwnerLost { node: u32 },
    /// Every copy of the version was found bad: none is left to read.
    NoGoodCopy,
    /// A request was sent to the daemon of `node` and no answer came in
    /// time (it stalled, or the request or its answer was lost): it may
    /// still act on it.
    NoAnswer { node: u32 },
}

/// An error about one subject (a path, or a node for `EIO`), with optional
/// detail for people and, where a caller acts on it, its cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsError {
    pub code: Errno,
    pub subject: String,
    pub detail: String,
    pub cause: Option<Cause>,
}

pub type FsResult<T> = Result<T, FsError>;

impl FsError {
    pub fn new(code: Errno, subject: impl Into<String>) -> Self {
        FsError {
            code,
            subject: subject.into(),
            detail: String::new(),
            cause: None,
        }
    }

    pub fn with_cause(mut self, cause: Cause) -> Self {
        self.cause = Some(cause);
        self
    }

    /// Whether a daemon could not be reached (not that it refused).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self.cause,
            Some(Cause::Unreachable { .. } | Cause::NoAnswer { .. })
        )
    }

    /// Whether a request went unanswered: its daemon may still act on it.
    pub fn is_unanswered(&self) -> bool {
        matches!(self.cause, Some(Cause::NoAnswer { .. }))
    }

    pub fn with_detail(mut self, detail: impl fmt::Display) -> Self {
        self.detail = detail.to_string();
        self
    }

    /// An OS error on `subject`, keeping the OS message as detail.
    pub fn io(subject: impl Into<String>, e: &std::io::Error) -> Self {
        FsError::new(Errno::from_io(e), subject).with_detail(e)
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.code,
            self.subject,
            self.code.describe()
        )?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

impl std::error::Error for FsError {}
