//! Locus's file system run inside one process: an in-process cluster (its
//! daemons on their own threads and loopback addresses, crashed and
//! restarted at will) and a seeded simulation over it that draws
//! workloads and faults and judges every answer against a model of what
//! the file system promises.

#![warn(missing_docs)]

mod cluster;
mod model;
mod ops;
mod sim;

pub use cluster::{InProcess, Shape};
pub use sim::{simulate, Config, Failure, FailureKind, Inject, Summary};
