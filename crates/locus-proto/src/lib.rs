//! Wire protocol shared by every Locus service: framing, the authentication
//! handshake, POSIX-like error codes, the file-system messages and the
//! messages between the ranks of a workflow run.

pub mod auth;
pub mod error;
pub mod frame;
pub mod fs;
pub mod run;

pub use error::{Cause, Errno, FsError, FsResult};
