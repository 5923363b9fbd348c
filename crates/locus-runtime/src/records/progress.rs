//! The leader's task counts, kept in `RUN_DIR/progress.json` while the run
//! goes: what a watcher (`locus watch`, on any host that sees the run
//! directory) shows as waiting and running, which no task record tells.

use crate::engine::{Counts, Progress};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often the file is rewritten while the counts change: a watcher
/// shows them within this (and its own poll) of the change.
const EVERY: Duration = Duration::from_millis(200);

/// What `progress.json` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// When the engine started, and when these counts were taken
    /// (microseconds since the Unix epoch).
    pub start_us: u64,
    pub at_us: u64,
    pub counts: Counts,
    /// The run's workers: how many tasks can run at once.
    #[serde(default)]
    pub workers: u32,
}

pub(crate) fn progress_path(run_dir: &Path) -> PathBuf {
    run_dir.join("progress.json")
}

/// The run's last counts, if its leader has written any.
pub fn read_tally(run_dir: &Path) -> Option<Tally> {
    serde_json::from_slice(&std::fs::read(progress_path(run_dir)).ok()?).ok()
}

/// A `Progress` that keeps the counts in the run directory (rewritten by a
/// task of the caller's runtime, at most every `EVERY`) and passes them on
/// to `shown`, the terminal's bar.
pub(crate) struct ProgressFile {
    path: PathBuf,
    start_us: u64,
    workers: u32,
    /// The counts not yet written.
    pending: Mutex<Option<Counts>>,
    shown: Option<Arc<dyn Progress>>,
}

impl ProgressFile {
    /// Starts the writer; it ends when the returned value is dropped.
    pub(crate) fn start(
        run_dir: &Path,
        start_us: u64,
        workers: u32,
        shown: Option<Arc<dyn Progress>>,
    ) -> Arc<ProgressFile> {
        let file = Arc::new(ProgressFile {
            path: progress_path(run_dir),
            start_us,
            workers,
            pending: Mutex::new(Some(Counts::default())),
            shown,
        });
        let weak: Weak<ProgressFile> = Arc::downgrade(&file);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(file) = weak.upgrade() else { return };
                file.write_pending();
            }
        });
        file
    }

    /// Writes the counts not yet written (the run's last ones at its end).
    pub(crate) fn write_pending(&self) {
        let Some(counts) = self.pending.lock().expect("progress lock").take() else {
            return;
        };
        let tally = Tally {
            start_us: self.start_us,
            at_us: crate::record::now_us(),
            counts,
            workers: self.workers,
        };
        // Replaced whole, so that a reader never sees half of it; a failed
        // write costs the watcher one update, never the run.
        let tmp = self.path.with_extension("json.part");
        let written = serde_json::to_vec(&tally)
            .map_err(std::io::Error::other)
            .and_then(|b| std::fs::write(&tmp, b))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            tracing::debug!("{}: {e}", self.path.display());
        }
    }
}

impl Progress for ProgressFile {
    fn show(&self, counts: Counts) {
        *self.pending.lock().expect("progress lock") = Some(counts);
        if let Some(shown) = &self.shown {
            shown.show(counts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_counts_reach_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = ProgressFile::start(dir.path(), 7, 2, None);
        for done in 1..=1000 {
            file.show(Counts {
                put: 1000,
                done,
                running: 1000 - done,
                failed: 0,
            });
        }
        file.write_pending();
        let tally = read_tally(dir.path()).expect("written");
        assert_eq!((tally.start_us, tally.counts.done), (7, 1000));
        assert!(!dir.path().join("progress.json.part").exists());
        // Nothing changed since: the writer leaves the file alone.
        std::fs::remove_file(progress_path(dir.path())).unwrap();
        tokio::time::sleep(EVERY * 2).await;
        assert!(read_tally(dir.path()).is_none());
    }
}
