//! The Locus runtime. This first part is the dataflow engine on one machine:
//! it executes a checked program's IR with every variable a future, every
//! statement a control task released when its inputs close, and `app` calls
//! as processes limited to the number of workers. The balancer over ranks
//! and nodes, and file-system-aware placement, build on it.

pub mod builtins;
pub mod engine;
pub mod format;
pub mod plan;
pub mod store;
pub mod value;

pub use engine::{Engine, RunOptions};
