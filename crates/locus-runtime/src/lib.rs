//! The Locus runtime (Turbine/ADLB model): the dataflow `engine` on the
//! leader executes a program's IR and puts leaf tasks on the servers'
//! queues (`server`, `balancer`); `worker` ranks run them next to their
//! data (`files`, `storage`); ranks find each other through their
//! launcher's PMI or the run directory (`rendezvous`, `pmi`, `layout`);
//! `record` keeps one line per task.

pub mod balancer;
pub mod builtins;
mod cmdline;
pub mod cost;
pub mod engine;
pub mod files;
pub mod format;
pub mod ids;
pub mod interp;
pub mod json;
pub mod layout;
pub mod mount;
mod paths;
pub mod plan;
pub mod pmi;
pub mod process;
pub mod rank;
pub mod record;
pub mod remote;
pub mod rendezvous;
pub mod report;
pub mod resume;
pub mod server;
pub mod spawn;
pub mod storage;
pub mod store;
mod strings;
mod text_files;
pub mod value;
pub mod wire;
pub mod worker;

pub use cmdline::CommandLine;
pub use engine::{Counts, Engine, Locality, Progress, RunOptions};
