//! Locus run inside one process, and seeded simulations over it: an
//! in-process cluster of the file system (its daemons on their own threads
//! and loopback addresses, crashed and restarted at will) whose simulation
//! draws workloads and faults and judges every answer against a model of
//! what the file system promises; and generated workflows run by the
//! runtime's ranks in process, with failing apps, cut ranks and variables
//! never assigned, each judged by how it must end.

#![warn(missing_docs)]

mod cluster;
mod lossy;
mod model;
mod ops;
mod sim;
mod workflow;

pub use cluster::{InProcess, Shape};
pub use sim::{simulate, Config, Failure, FailureKind, Inject, Summary};
pub use workflow::{
    simulate_workflow, Expected, WorkflowConfig, WorkflowFailure, WorkflowFailureKind,
    WorkflowInject, WorkflowSummary,
};
