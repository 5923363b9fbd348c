//! The Locus runtime (Turbine/ADLB model): the dataflow `engine` on the
//! leader executes a program's IR and puts leaf tasks on the servers'
//! queues (`server`, `balancer`); `worker` ranks run them next to their
//! data (`files`, `storage`); ranks find each other through their
//! launcher's PMI or the run directory (`rendezvous`, `pmi`, `layout`);
//! `record` keeps one line per task.
//!
//! Folders: `engine/` (the dataflow core: futures, values, plans, and the
//! engines' talk between servers), `builtins/` (Swift/T's library),
//! `ranks/` (ranks and the wire between them), `exec/` (processes and
//! interpreters), `records/` (task records, resume, the report).

mod builtins;
mod engine;
mod exec;
mod in_process;
mod ranks;
mod records;

pub use builtins::cmdline::CommandLine;
pub use engine::{Counts, Engine, Locality, Progress, RunOptions};
pub use exec::files::{fs_path, namespace_path, LOCUS_PREFIX};
pub use exec::job::JobLauncher;
pub use exec::mount::{mount_allowed, MountError, MountMode, Step};
pub use in_process::{Cut, FakeApps, Finished, InProcess, NeverEnded};
pub use ranks::layout::{Layout, LayoutError};
pub use ranks::rank::{run_rank, summary_path, RankOptions, RunSummary, DEFAULT_MAX_DEPTH};
pub use ranks::rendezvous::{met, ranks_dir, Entry, RankEnv};
pub use ranks::server::RELEASED_MOST;
pub use records::plan::{load_plan, Planned, Rerun};
pub use records::progress::{read_tally, Tally};
pub use records::resume::ResumeBy;
pub use records::{record, report};

/// What a run stopped from outside says.
pub const INTERRUPTED: &str = "the run was interrupted (SIGINT or SIGTERM)";
