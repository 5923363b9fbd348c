//! A node's data: the store of its versions' bytes, what vouches for them
//! (sums, checks on read), and how they move between nodes and files.

pub(crate) mod copy;
pub(crate) mod ranged;
pub(crate) mod store;
pub mod sums;
pub(crate) mod transfer;
pub(crate) mod verify;
pub(crate) mod version;
