//! A run's live page: `locus run --watch` and `locus watch RUN_DIR` serve
//! it over HTTP from what the run writes to its directory (the workers'
//! task records, the leader's counts, the summary at its end) and the file
//! system's daemons, so it works for a run started anywhere whose
//! directory this host sees, and keeps working after the run ended.
#![warn(missing_docs)]

mod ended;
mod live;
mod server;
mod tail;

pub use server::{watch, watch_token, WatchError, WatchOptions, Watching};
