//! Reads hand out only the bytes that were written: a copy is checked
//! against its version's record (size, and the hash made where it was
//! written) before it is read on its node or installed as a fetched
//! replica. A bad copy is set aside on its node and dropped from the
//! version's holders, and the read goes on from another holder; with none
//! left it fails with `EIO` naming the path and every node's fault.
//!
//! A local copy found good is not hashed again by the same client while
//! it stays the same file, unchanged (its inode, size and change time): a
//! task reading an input many times, or many tasks of one worker reading
//! it, pay once. What changes a copy's bytes without a write through the
//! kernel (a failing disk) is found by reading it in a new client.

use crate::data::sums::{self, Chunks, Mismatch};
use crate::Client;
use locus_proto::fs::{NodeId, Record, Request};
use locus_proto::{Cause, Errno, FsError, FsResult};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

/// Copies a client remembers as checked before it forgets them all.
const REMEMBERED: usize = 100_000;

/// A copy's file as the kernel last saw it change.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileState {
    ino: u64,
    len: u64,
    ctime_ns: i64,
}

fn state(meta: &std::fs::Metadata) -> FileState {
    FileState {
        ino: meta.ino(),
        len: meta.len(),
        ctime_ns: crate::data::store::changed_ns(meta),
    }
}

/// Local copies found good, by path and stamp.
#[derive(Default)]
pub(crate) struct Checked(Mutex<HashMap<(String, u64), FileState>>);

/// Whether the file at `file` holds what `rec` vouches for.
fn check_file(file: &Path, rec: &Record) -> std::io::Result<Result<(), Mismatch>> {
    match File::open(file) {
        Ok(f) => sums::check(&f, rec.size, rec.sum),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Err(Mismatch::Missing)),
        Err(e) => Err(e),
    }
}

/// Whether `copied`, the chunks of the bytes copied into `file`, are
/// version `rec`'s; if so `file` keeps them.
pub(crate) fn judge_copied(file: &File, copied: &Chunks, rec: &Record) -> Result<(), Mismatch> {
    let verdict = sums::judge(copied.content(), rec.size, rec.sum);
    if verdict.is_ok() && rec.sum.is_some() {
        sums::keep(file, copied);
    }
    verdict
}

/// The error of a read that found no good copy: each bad one's node and
/// fault (none: every holder was dropped before, its copy found bad).
pub(crate) fn no_good_copy(path: &str, bad: &[(NodeId, Mismatch)]) -> FsError {
    let faults: Vec<String> = bad
        .iter()
        .map(|(node, m)| format!("node {node}: {m}"))
        .collect();
    let detail = match faults.is_empty() {
        true => "no good copy left (the bad ones were set aside)".to_string(),
        false => format!("no good copy left ({}; set aside)", faults.join(", ")),
    };
    FsError::new(Errno::EIO, path)
        .with_detail(detail)
        .with_cause(Cause::NoGoodCopy)
}

impl Client {
    /// Checks this node's copy `file` of version `rec` of `path` (once
    /// while it stays unchanged, for this client).
    pub(crate) async fn check_local(
        &self,
        path: &str,
        rec: &Record,
        file: &Path,
    ) -> FsResult<Result<(), Mismatch>> {
        let key = (path.to_string(), rec.stamp);
        let meta = match std::fs::metadata(file) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Err(Mismatch::Missing))
            }
            Err(e) => return Err(FsError::io(path, &e)),
        };
        let now = state(&meta);
        let checked = &self.checked().0;
        if checked.lock().expect("checked").get(&key) == Some(&now) {
            return Ok(Ok(()));
        }
        let verdict = self.check_copy(path, rec, file).await?;
        if verdict.is_ok() {
            // As it is now: a check that kept the chunks' hashes with it
            // changed its change time.
            if let Ok(meta) = std::fs::metadata(file) {
                self.remember(key, state(&meta));
            }
        }
        Ok(verdict)
    }

    /// Whether `file`, a copy of version `rec` of `path`, is one this client
    /// checked and that has not changed since (no hashing: a diskless
    /// client's staged copy read again, by its mount say).
    pub(crate) fn still_checked(&self, path: &str, rec: &Record, file: &Path) -> bool {
        let Ok(meta) = std::fs::metadata(file) else {
            return false;
        };
        let key = (path.to_string(), rec.stamp);
        self.checked().0.lock().expect("checked").get(&key) == Some(&state(&meta))
    }

    /// Notes this node's copy of version `rec` of `path`, just hashed and
    /// stored by this client (written, or fetched and checked), as checked:
    /// reading back what it wrote or fetched does not hash it again.
    pub(crate) fn checked_here(&self, path: &str, rec: &Record) {
        if rec.sum.is_none() {
            return;
        }
        let file = self.store().data_path(path, rec.stamp);
        if let Ok(meta) = std::fs::metadata(file) {
            self.remember((path.to_string(), rec.stamp), state(&meta));
        }
    }

    fn remember(&self, key: (String, u64), now: FileState) {
        let mut checked = self.checked().0.lock().expect("checked");
        if checked.len() >= REMEMBERED {
            checked.clear();
        }
        checked.insert(key, now);
    }

    /// Whether the file at `file` holds version `rec` of `path`, read off
    /// the async threads.
    pub(crate) async fn check_copy(
        &self,
        path: &str,
        rec: &Record,
        file: &Path,
    ) -> FsResult<Result<(), Mismatch>> {
        let (p, rec, file) = (path.to_string(), rec.clone(), file.to_path_buf());
        crate::client::blocking(move || check_file(&file, &rec).map_err(|e| FsError::io(&p, &e)))
            .await
    }

    /// Node `node`'s copy of version `rec` of `path` is not what `rec`
    /// says: set aside, unless it is missing because the version was
    /// replaced since `rec` was read (its writer drops the replaced copies
    /// once the new version is published). Then the read must start again
    /// from the current version: this fails, and the caller's next look
    /// at the record finds it changed.
    pub(crate) async fn bad_copy(
        &self,
        path: &str,
        rec: &Record,
        node: NodeId,
        why: Mismatch,
    ) -> FsResult<()> {
        if why == Mismatch::Missing && self.stat(path).await?.stamp != rec.stamp {
            return Err(FsError::new(Errno::EIO, path)
                .with_detail("replaced by a newer version while it was read"));
        }
        self.set_aside(path, rec, node, why).await;
        Ok(())
    }

    /// Sets node `node`'s bad copy of version `rec` of `path` aside and
    /// drops it from the version's holders, so no reader is sent to it.
    pub(crate) async fn set_aside(&self, path: &str, rec: &Record, node: NodeId, why: Mismatch) {
        tracing::warn!(
            "{path}: node {node}'s copy is bad ({why}): set aside, read from another holder"
        );
        let aside = Request::Quarantine {
            path: path.to_string(),
            stamp: rec.stamp,
        };
        if let Err(e) = self.call(node, aside).await {
            tracing::warn!("{path}: node {node}'s bad copy not set aside: {e}");
        }
        let drop = Request::DropHolder {
            path: path.to_string(),
            stamp: rec.stamp,
            node,
        };
        if let Err(e) = self.meta(path, drop).await {
            tracing::warn!("{path}: node {node} still named a holder: {e}");
        }
        self.forget_checked(path, rec.stamp);
    }

    fn forget_checked(&self, path: &str, stamp: u64) {
        let key = (path.to_string(), stamp);
        self.checked().0.lock().expect("checked").remove(&key);
    }
}
