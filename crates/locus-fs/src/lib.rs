//! The Locus distributed node-local file system (FusionFS/Hercules model):
//! metadata spread over every node's daemon by consistent hashing, data kept
//! on the node that wrote it, and its location exposed for scheduling.

pub mod client;
pub mod cluster;
mod copies;
mod copy;
mod delegation;
mod fence;
mod follow;
mod held_dirs;
pub mod join;
pub mod meta;
pub mod path;
pub mod peer;
pub mod placement;
pub mod private_dir;
mod ranged;
mod repair;
pub mod replicate;
pub mod ring;
mod scrub;
pub mod serve;
pub mod server;
pub mod stage;
pub mod store;
pub mod sums;
pub mod transfer;
mod upkeep;
mod verify;
mod version;

pub use client::{Client, ClientOptions, LocalCopy, Output, Writer};
pub use cluster::{ClusterSpec, NodeInfo};
pub use follow::copy_as_written;
pub use meta::{now_ns, Durability};
pub use placement::Placement;
pub use repair::{Rebuilt, Reclaimed};
pub use scrub::{made_by_note, Lost, Scrubbed};
pub use serve::{serve, serve_until, JoinConfig, ServeConfig};
pub use upkeep::Upkeep;
pub use version::VersionRef;
