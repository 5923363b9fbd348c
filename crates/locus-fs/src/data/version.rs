//! A version of a file by name: its bytes are kept under its path and stamp
//! on every node holding them, and moved between nodes by that pair.

/// One version of a file: the path it was written at and its stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRef<'a> {
    /// The path the version was written at.
    pub path: &'a str,
    /// Its stamp (`Record::stamp`).
    pub stamp: u64,
}
