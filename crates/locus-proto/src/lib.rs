//! Wire protocol shared by every Locus service: framing, the authentication
//! handshake, POSIX-like error codes, and the file-system messages.

pub mod auth;
pub mod error;
pub mod frame;
pub mod fs;

pub use error::{Errno, FsError, FsResult};
