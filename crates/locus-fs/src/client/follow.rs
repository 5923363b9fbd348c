//! The first replica of a file being written, made while it is written.
//! FusionFS copies a new file to a replica before `close` returns; where
//! the replica's node is on this host, a thread copies what the writer
//! appends into a temporary file of that node's store, so
//! the copy overlaps the write and `close` waits only for its tail.

use crate::data::copy;
use crate::data::store::Store;
use crate::data::sums::{self, Chunks, Content, Summer};
use locus_proto::fs::NodeId;
use locus_proto::{Errno, FsError, FsResult};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the copy waits for more bytes once it has caught up.
const CAUGHT_UP_PAUSE: Duration = Duration::from_micros(500);

pub(crate) struct Follower {
    /// The node the copy is for.
    pub node: NodeId,
    store: Store,
    tmp: PathBuf,
    state: Arc<State>,
    /// The copy's bytes and their chunks, hashed as they were copied.
    thread: Option<JoinHandle<io::Result<(File, Chunks)>>>,
}

#[derive(Default)]
struct State {
    /// The writer wrote its last byte.
    done: AtomicBool,
    /// The copy is not wanted any more.
    cancelled: AtomicBool,
}

impl Follower {
    /// Starts copying `source` (a writer's temporary file, only ever
    /// appended to while followed) into the store of node `node`, whose
    /// directory on this host is `node_dir`.
    pub(crate) fn start(node: NodeId, node_dir: &Path, source: &Path) -> FsResult<Follower> {
        let io_err = |p: &Path, e: &io::Error| FsError::io(p.display().to_string(), e);
        let store = Store::open(node_dir).map_err(|e| io_err(node_dir, &e))?;
        let from = File::open(source).map_err(|e| io_err(source, &e))?;
        let (tmp, to) = store.temp_file()?;
        let state = Arc::new(State::default());
        let spawned = std::thread::Builder::new()
            .name("locus-follow".into())
            .spawn({
                let state = state.clone();
                move || {
                    let mut summer = Summer::default();
                    let sum = |bytes: &[u8]| summer.update(bytes);
                    follow(&from, &to, (&state.done, &state.cancelled), sum)?;
                    Ok((to, summer.finish()))
                }
            });
        match spawned {
            Ok(thread) => Ok(Follower {
                node,
                store,
                tmp,
                state,
                thread: Some(thread),
            }),
            Err(e) => {
                store.discard(&tmp);
                Err(io_err(source, &e))
            }
        }
    }

    /// Once the writer wrote its last byte: waits for the copy and, if it
    /// holds what the writer wrote (`written`), stores it as copy `stamp`
    /// of `path` on its node.
    pub(crate) fn finish(mut self, path: &str, stamp: u64, written: Content) -> FsResult<()> {
        self.state.done.store(true, Ordering::Release);
        let thread = self.thread.take().expect("finished once");
        let copied =
            match thread.join() {
                Ok(Ok((file, chunks))) => {
                    match sums::judge(chunks.content(), written.size, Some(written.sum)) {
                        Ok(()) => {
                            sums::keep(&file, &chunks);
                            self.store.install(&self.tmp, path, stamp)
                        }
                        Err(why) => Err(FsError::new(Errno::EIO, path)
                            .with_detail(format!("replica copy: {why}"))),
                    }
                }
                Ok(Err(e)) => Err(FsError::io(path, &e)),
                Err(_) => Err(FsError::new(Errno::EIO, path).with_detail("replica copy panicked")),
            };
        if copied.is_err() {
            self.store.discard(&self.tmp);
        }
        copied
    }
}

impl Drop for Follower {
    /// A copy not finished is stopped and removed.
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.state.cancelled.store(true, Ordering::Release);
            let _ = thread.join();
            self.store.discard(&self.tmp);
        }
    }
}

/// Copies `from` (only ever appended to meanwhile) into `to` as it grows,
/// until `done` is set (then to its end) or `cancelled`; returns the bytes
/// copied.
pub fn copy_as_written(
    from: &File,
    to: &File,
    done: &AtomicBool,
    cancelled: &AtomicBool,
) -> io::Result<u64> {
    follow(from, to, (done, cancelled), |_| {})
}

/// `copy_as_written`, showing each piece copied to `seen`, in order.
fn follow(
    from: &File,
    to: &File,
    (done, cancelled): (&AtomicBool, &AtomicBool),
    mut seen: impl FnMut(&[u8]),
) -> io::Result<u64> {
    let mut buf = vec![0; copy::PIECE];
    let mut at = 0;
    loop {
        // Read before copying: everything written before `done` was set is
        // in the file by the time this pass reaches its end.
        let last = done.load(Ordering::Acquire);
        loop {
            match copy::piece(from, to, at, &mut buf)? {
                0 => break,
                n => {
                    seen(&buf[..n]);
                    at += n as u64;
                }
            }
            if cancelled.load(Ordering::Acquire) {
                return Ok(at);
            }
        }
        if last || cancelled.load(Ordering::Acquire) {
            return Ok(at);
        }
        std::thread::sleep(CAUGHT_UP_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_followed_file_is_copied_whole_and_a_cancelled_copy_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (mine, theirs) = (dir.path().join("a"), dir.path().join("b"));
        let store = Store::open(&mine).unwrap();
        let (tmp, mut file) = store.temp_file().unwrap();
        let follower = Follower::start(1, &theirs, &tmp).unwrap();
        let chunk = vec![7u8; 300_000];
        for _ in 0..20 {
            file.write_all(&chunk).unwrap();
        }
        let written = sums::of_bytes(&chunk.repeat(20));
        follower.finish("/d/f", 9, written).unwrap();
        let copy = Store::open(&theirs).unwrap().data_path("/d/f", 9);
        assert_eq!(std::fs::read(&copy).unwrap(), chunk.repeat(20));
        let kept = sums::kept(&File::open(&copy).unwrap(), written);
        assert!(kept.is_some(), "the replica keeps its chunks' hashes");
        // Cancelled (dropped) while the writer writes: no file is left.
        let follower = Follower::start(1, &theirs, &tmp).unwrap();
        file.write_all(&chunk).unwrap();
        drop(follower);
        assert_eq!(std::fs::read_dir(theirs.join("tmp")).unwrap().count(), 0);
        // A copy that does not hold what was written: not stored.
        for other in [sums::of_bytes(b"x"), sums::of_bytes(&vec![8u8; 6_300_000])] {
            let follower = Follower::start(1, &theirs, &tmp).unwrap();
            let e = follower.finish("/d/g", 9, other).unwrap_err();
            assert_eq!(e.code, Errno::EIO);
            assert!(!Store::open(&theirs).unwrap().data_path("/d/g", 9).exists());
        }
    }
}
