//! The Locus distributed node-local file system (FusionFS/Hercules model):
//! metadata spread over every node's daemon by consistent hashing, data kept
//! on the node that wrote it, and its location exposed for scheduling.

#![warn(missing_docs)]

mod answers;
mod client;
mod cluster;
mod daemon;
mod data;
mod meta;
mod offline;
pub mod path;
mod peer;
mod placement;
mod private_dir;
mod ring;
mod scope;
mod stage;
mod transport;
mod whole;

pub use client::follow::copy_as_written;
pub use client::{Client, ClientOptions, LocalCopy, Output, Writer};
pub use cluster::{default_dir, ClusterSpec, NodeInfo, CLUSTER_FILE};
pub use daemon::join::{advertised_ip, expected_from_env, hostname, shared_secret, write_once};
pub use daemon::repair::{Rebuilt, Reclaimed};
pub use daemon::scrub::{made_by_note, Lost, Scrubbed};
pub use daemon::serve::{serve, serve_until, JoinConfig, ServeConfig, JOIN_TIMEOUT};
pub use daemon::upkeep::Upkeep;
pub use daemon::{META_FILE, META_REBUILD};
pub use data::store::Store;
pub use data::sums;
pub use data::version::VersionRef;
pub use meta::{now_ns, Durability};
pub use offline::Offline;
pub use peer::Endpoint;
pub use placement::Placement;
pub use private_dir::create as create_private_dir;
pub use ring::{hash_node, Ring, DEFAULT_VNODES};
pub use scope::{
    forget_removed, note_removed, noted_removed, remove_store, store_served, sweep, Jobs, Scope,
    Slurm, StoreKept, Sweep, Swept,
};
pub use stage::{get_tree, put_tree, Via};
pub use transport::{Calling, Transport};
pub use whole::{write_json, write_whole};
