//! The runs of this user, as `locus runs` lists them: those in the run
//! index and the directories `locus run` made without `--run-dir`, each
//! with how it is and what it holds.

use crate::ranks::{hold_run_dir, RunHold, RUN_MARKER};
use locus_runtime::RunSummary;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One run directory, as listed.
pub struct ListedRun {
    /// Its id (`index::run_id`).
    pub id: String,
    /// Its directory.
    pub dir: PathBuf,
    /// `running: OWNER`, `done`, `failed: KIND: ERROR` or `stopped: WHY`.
    pub state: String,
    /// When it ended (its summary's end, else its marker's last change).
    pub ended: Option<SystemTime>,
    /// Its length, from its summary.
    pub seconds: Option<f64>,
    /// Its task records.
    pub tasks: usize,
    /// Bytes of the files under its directory.
    pub bytes: u64,
}

/// The run directories `locus run` made in `root` without --run-dir.
pub fn made_in(root: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(root)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", root.display())))?;
    let mut dirs = Vec::new();
    for e in entries {
        let e = e?;
        // Only directories (not links to them) of this user's runs.
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && e.file_name().to_string_lossy().starts_with("locus-run-") {
            dirs.push(e.path());
        }
    }
    Ok(dirs)
}

/// The directories of the run index in `index` and those made in `root`,
/// each once.
pub fn indexed_or_made_in(index: &Path, root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = crate::index::entries_in(index)?
        .into_iter()
        .map(|e| e.dir)
        .collect();
    for d in made_in(root)? {
        let d = std::path::absolute(&d).unwrap_or(d);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    Ok(dirs)
}

/// What each of `dirs` holds, the runs that ended first (oldest first).
/// Read side by side: each is a few files and a walk of its directory,
/// mostly waiting on the file system (a shared one, often).
pub fn list(dirs: Vec<PathBuf>) -> Vec<ListedRun> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut found: Vec<ListedRun> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS.min(dirs.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(dir) = dirs.get(i) else { return out };
                        out.extend(read_run(dir));
                    }
                })
            })
            .collect();
        readers
            .into_iter()
            .flat_map(|r| r.join().unwrap_or_default())
            .collect()
    });
    found.sort_by(|a, b| (a.ended, &a.dir).cmp(&(b.ended, &b.dir)));
    found
}

/// Run directories read at once by `locus runs`.
const READERS: usize = 8;

/// What run directory `dir` holds, if it is one.
fn read_run(dir: &Path) -> Option<ListedRun> {
    let hold = hold_run_dir(dir).ok()?;
    let summary = RunSummary::load(dir).ok();
    let state = match &hold {
        RunHold::NotARun => return None,
        RunHold::Live(owner) => format!("running: {owner}"),
        RunHold::Ended(_) => match &summary {
            Some(s) => match (s.error_kind, &s.error) {
                (_, None) => "done".to_string(),
                (Some(kind), Some(e)) => format!("failed: {kind}: {e}"),
                (None, Some(e)) => format!("failed: {e}"),
            },
            // Its launcher killed (SIGKILL: nothing could write it), or
            // it ended before its ranks began.
            None => "stopped: without run.json (killed, or ended before it began)".to_string(),
        },
    };
    drop(hold);
    let ended = match &summary {
        Some(s) => Some(SystemTime::UNIX_EPOCH + Duration::from_micros(s.end_us)),
        None if !state.starts_with("running") => std::fs::metadata(dir.join(RUN_MARKER))
            .and_then(|m| m.modified())
            .ok(),
        None => None,
    };
    Some(ListedRun {
        id: crate::index::run_id(dir),
        seconds: summary.map(|s| s.end_us.saturating_sub(s.start_us) as f64 / 1e6),
        ended,
        tasks: locus_runtime::record::count(dir).unwrap_or_default(),
        bytes: size(dir),
        state,
        dir: dir.to_path_buf(),
    })
}

/// Bytes of the files under `dir` (links not followed).
fn size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}
