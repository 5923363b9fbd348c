//! The user's run index: one small file per run directory in
//! `$XDG_STATE_HOME/locus/runs` (default `~/.local/state/locus/runs`),
//! written atomically when a run starts there, so `locus runs` finds every
//! run — those given `--run-dir` anywhere, on a shared file system too —
//! without scanning for them. A run started again in the same directory
//! (`--resume`, `--fresh`) keeps its entry, with its new start.

use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// One run directory as the index knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Short and stable for its directory (a hash of its path).
    pub id: String,
    /// The run directory, absolute.
    pub dir: PathBuf,
    /// The script its latest run ran, absolute.
    pub script: PathBuf,
    /// When its latest run started, microseconds since the Unix epoch.
    pub started_us: u64,
}

/// Where the index is.
pub fn index_dir() -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    state.join("locus/runs")
}

/// The id of run directory `dir` (its absolute path hashed).
pub fn run_id(dir: &Path) -> String {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let hash = blake3::hash(dir.as_os_str().as_encoded_bytes());
    hash.to_hex()[..10].to_string()
}

/// Notes that a run of `script` starts in `dir` now.
pub fn register(dir: &Path, script: &Path, started_us: u64) -> io::Result<IndexEntry> {
    register_in(&index_dir(), dir, script, started_us)
}

/// `register`, in the index in directory `index`.
pub fn register_in(
    index: &Path,
    dir: &Path,
    script: &Path,
    started_us: u64,
) -> io::Result<IndexEntry> {
    let entry = IndexEntry {
        id: run_id(dir),
        dir: std::path::absolute(dir)?,
        script: std::path::absolute(script)?,
        started_us,
    };
    std::fs::create_dir_all(index)?;
    let bytes = serde_json::to_vec(&entry).map_err(io::Error::other)?;
    locus_fs::write_whole(&index.join(format!("{}.json", entry.id)), &bytes)?;
    Ok(entry)
}

/// Every entry whose directory is still there, oldest start first; those
/// whose directory is gone are dropped from the index.
pub fn entries() -> io::Result<Vec<IndexEntry>> {
    entries_in(&index_dir())
}

/// `entries` of the index in directory `index`.
pub fn entries_in(index: &Path) -> io::Result<Vec<IndexEntry>> {
    let rd = match std::fs::read_dir(index) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        rd => rd?,
    };
    let mut found = Vec::new();
    for e in rd.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        // One being replaced, or not ours: skipped, not fatal.
        let Ok(entry) = std::fs::read(&path)
            .map_err(io::Error::other)
            .and_then(|b| serde_json::from_slice::<IndexEntry>(&b).map_err(io::Error::other))
        else {
            continue;
        };
        if entry.dir.is_dir() {
            found.push(entry);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    found.sort_by_key(|e| e.started_us);
    Ok(found)
}

/// Drops `id`'s entry (its directory was removed).
pub fn forget(id: &str) {
    let _ = std::fs::remove_file(index_dir().join(format!("{id}.json")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_registered_once_per_directory_and_gone_ones_dropped() {
        let state = tempfile::tempdir().unwrap();
        // SAFETY: this test binary's other tests do not read the variable.
        unsafe { std::env::set_var("XDG_STATE_HOME", state.path()) };
        let runs = tempfile::tempdir().unwrap();
        let (a, b) = (runs.path().join("a"), runs.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let script = Path::new("/w/s.swift");
        register(&a, script, 1).unwrap();
        register(&b, script, 2).unwrap();
        // Again in the same directory: the same entry, started later.
        let again = register(&a, script, 3).unwrap();
        assert_eq!(again.id, run_id(&a));
        let listed: Vec<(PathBuf, u64)> = entries()
            .unwrap()
            .into_iter()
            .map(|e| (e.dir, e.started_us))
            .collect();
        assert_eq!(listed, [(b.clone(), 2), (a.clone(), 3)]);
        std::fs::remove_dir_all(&b).unwrap();
        assert_eq!(entries().unwrap().len(), 1);
        assert_eq!(
            std::fs::read_dir(index_dir()).unwrap().count(),
            1,
            "b's entry dropped"
        );
        forget(&again.id);
        assert!(entries().unwrap().is_empty());
        assert!(state.path().join("locus/runs").is_dir());
    }
}
