//! The directories a client holds a delegation of (lent by the daemon that
//! keeps their names, when they were empty): it knows every name in them,
//! so it answers look-ups of them itself, and makes new files in them
//! without asking anyone, publishing each once it is closed, in the
//! background. Recalled (another client looks into the directory) or given
//! back (this client does anything else in it), files still open are
//! claimed the usual way and the publications in flight are waited for.

use locus_proto::fs::{Kind, Lease, Record};
use locus_proto::FsError;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Names a client keeps of one held directory at most.
const MAX_NAMES: usize = 100_000;
/// Empty files made ahead per held directory.
const SPARES: usize = 64;

/// A new file in a held directory, not yet named to any daemon.
pub(crate) struct Unclaimed {
    pub mode: u32,
    /// When it was made: its modification time until it is published.
    made_ns: i64,
    /// Its writer's: the name is claimed locked by it.
    pub lease: Lease,
    state: Mutex<Claim>,
    settled: tokio::sync::Notify,
    /// The claimed lock's renewal, until its writer takes it over.
    renewal: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for Unclaimed {
    fn drop(&mut self) {
        if let Some(renewal) = self.take_renewal() {
            renewal.abort();
        }
    }
}

/// What became of an unclaimed file's name.
enum Claim {
    /// Still this client's alone.
    Open,
    /// Its writer closed it: it is published as a new file.
    Closing,
    /// The delegation is ending: its name is being taken the usual way.
    Claiming,
    /// Taken the usual way (write-locked by its writer), or why not.
    Claimed(Result<(), FsError>),
}

impl Unclaimed {
    pub(crate) fn new(mode: u32, lease: Lease) -> Arc<Unclaimed> {
        Arc::new(Unclaimed {
            mode,
            made_ns: crate::meta::now_ns(),
            lease,
            state: Mutex::new(Claim::Open),
            settled: tokio::sync::Notify::new(),
            renewal: Mutex::default(),
        })
    }

    pub(crate) fn take_renewal(&self) -> Option<tokio::task::AbortHandle> {
        self.renewal.lock().expect("renewal").take()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Claim> {
        self.state.lock().expect("claim")
    }

    /// For its writer's close: `None` if it may publish the file as new
    /// (it is `Closing` from now on), else how the claim ended.
    pub(crate) async fn closing(&self) -> Option<Result<(), FsError>> {
        loop {
            let settled = self.settled.notified();
            {
                let mut state = self.state();
                match &*state {
                    Claim::Open => {
                        *state = Claim::Closing;
                        return None;
                    }
                    Claim::Closing => return None,
                    Claim::Claimed(r) => return Some(r.clone()),
                    Claim::Claiming => {}
                }
            }
            settled.await;
        }
    }

    /// For the delegation's end: whether its name is to be claimed now
    /// (it is `Claiming` from now on).
    fn claiming(&self) -> bool {
        let mut state = self.state();
        if matches!(*state, Claim::Open) {
            *state = Claim::Claiming;
            return true;
        }
        false
    }

    /// How the claim ended; a claimed lock's `renewal` runs meanwhile.
    pub(crate) fn claimed(
        &self,
        r: Result<(), FsError>,
        renewal: Option<tokio::task::AbortHandle>,
    ) {
        *self.renewal.lock().expect("renewal") = renewal;
        *self.state() = Claim::Claimed(r);
        self.settled.notify_waiters();
    }
}

/// A new file of a held directory before it is published.
enum Pending {
    Open(Arc<Unclaimed>),
    /// Closed; its publication is in flight.
    Closed(Record),
}

#[derive(Default)]
struct State {
    /// Every name in the directory.
    names: HashSet<String>,
    pending: HashMap<String, Pending>,
    /// Being given back: new names are made the usual way.
    ending: bool,
}

/// One held directory.
pub(crate) struct Held {
    /// Stamps every version made in it: the new files share one store
    /// directory per node (`data/<dir>/@<stamp>/`), each under its name.
    pub stamp: u64,
    /// Where its files are written until published (under any name:
    /// publishing moves each to its own).
    pub tmp: PathBuf,
    /// Empty files made there ahead of the creates that take them, so a
    /// create allocates no inode on the program's path.
    spares: Mutex<Vec<(PathBuf, File)>>,
    filling: AtomicBool,
    made: AtomicU64,
    state: Mutex<State>,
    /// A pending file was published, claimed or dropped.
    settled: tokio::sync::Notify,
    ended: tokio::sync::Notify,
}

/// What a held directory says of one of its names.
pub(crate) enum Known {
    Missing,
    /// A new file not yet published: its record as this client has it.
    Pending(Record),
    /// Published: the daemons have it.
    Published,
}

impl Held {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("held directory")
    }

    /// A new empty file to write one of its files in, and whether more
    /// are to be made ahead (by one caller: `made_ahead` ends it).
    pub(crate) fn spare(&self) -> (Option<(PathBuf, File)>, bool) {
        let mut spares = self.spares.lock().expect("spares");
        let taken = spares.pop();
        let low = spares.len() < SPARES / 2 && !self.filling.swap(true, Ordering::AcqRel);
        (taken, low)
    }

    /// The name of the next file made in `tmp`.
    pub(crate) fn next_spare(&self) -> PathBuf {
        self.tmp
            .join(format!("{:x}", self.made.fetch_add(1, Ordering::Relaxed)))
    }

    /// How many files to make ahead.
    pub(crate) fn wanted(&self) -> usize {
        SPARES.saturating_sub(self.spares.lock().expect("spares").len())
    }

    /// Files made ahead (also when the directory is no longer held: those
    /// are then `left`).
    pub(crate) fn made_ahead(&self, files: Vec<(PathBuf, File)>) {
        self.spares.lock().expect("spares").extend(files);
        self.filling.store(false, Ordering::Release);
    }

    /// A spare used by a file that ended empty (published without it), to
    /// be taken again; `false` if there are enough already (more than are
    /// made ahead: those may have been made while it was in use).
    pub(crate) fn take_back(&self, spare: (PathBuf, File)) -> bool {
        let mut spares = self.spares.lock().expect("spares");
        if spares.len() >= 2 * SPARES {
            return false;
        }
        spares.push(spare);
        true
    }

    /// The files made ahead that no create took, to remove.
    pub(crate) fn left(&self) -> Vec<PathBuf> {
        let mut spares = self.spares.lock().expect("spares");
        spares.drain(..).map(|(p, _)| p).collect()
    }

    /// What this client knows of `name`, while it holds the directory.
    pub(crate) fn known(&self, name: &str) -> Option<Known> {
        let state = self.state();
        if state.ending {
            return None;
        }
        Some(match state.pending.get(name) {
            Some(Pending::Open(u)) => Known::Pending(Record::new(Kind::File, u.mode, u.made_ns)),
            Some(Pending::Closed(rec)) => Known::Pending(rec.clone()),
            None if state.names.contains(name) => Known::Published,
            None => Known::Missing,
        })
    }

    /// Takes `name` for a new file (`None` if the name exists, `Some(None)`
    /// if it is to be made the usual way: the directory is being given
    /// back, or has grown too large to be held).
    pub(crate) fn make(
        &self,
        name: &str,
        mode: u32,
        lease: Lease,
    ) -> Option<Option<Arc<Unclaimed>>> {
        let mut state = self.state();
        // A directory grown this large goes back to being kept by its daemon.
        if state.ending || state.names.len() >= MAX_NAMES {
            return Some(None);
        }
        if !state.names.insert(name.to_string()) {
            return None;
        }
        let u = Unclaimed::new(mode, lease);
        state
            .pending
            .insert(name.to_string(), Pending::Open(u.clone()));
        Some(Some(u))
    }

    /// `name`'s writer closed it: its publication as `rec` is in flight.
    pub(crate) fn closed(&self, name: &str, rec: Record) {
        self.state()
            .pending
            .insert(name.to_string(), Pending::Closed(rec));
    }

    /// `name` was published, or claimed the usual way, or (not `ok`) dropped.
    pub(crate) fn settled(&self, name: &str, ok: bool) {
        let mut state = self.state();
        state.pending.remove(name);
        if !ok {
            state.names.remove(name);
        }
        self.settled.notify_waiters();
    }

    async fn until(&self, done: impl Fn(&State) -> bool) {
        loop {
            let settled = self.settled.notified();
            if done(&self.state()) {
                return;
            }
            settled.await;
        }
    }

    /// Waits until every file closed so far is published.
    pub(crate) async fn flushed(&self) {
        let closed = |s: &State| s.pending.values().any(|p| matches!(p, Pending::Closed(_)));
        self.until(|s| !closed(s)).await;
    }

    /// Waits until no file is pending (once given back: all are claimed or
    /// published).
    pub(crate) async fn emptied(&self) {
        self.until(|s| s.pending.is_empty()).await;
    }

    /// Starts giving the directory back: the files still open, whose names
    /// must now be claimed; `None` if another caller is giving it back.
    pub(crate) fn end(&self) -> Option<Vec<(String, Arc<Unclaimed>)>> {
        let mut state = self.state();
        if std::mem::replace(&mut state.ending, true) {
            return None;
        }
        Some(
            state
                .pending
                .iter()
                .filter_map(|(name, p)| match p {
                    Pending::Open(u) if u.claiming() => Some((name.clone(), u.clone())),
                    _ => None,
                })
                .collect(),
        )
    }
}

/// A client's held directories.
#[derive(Default)]
pub(crate) struct HeldDirs {
    dirs: Mutex<HashMap<String, Arc<Held>>>,
    /// Directories held, read without the lock.
    count: AtomicUsize,
}

impl HeldDirs {
    /// Whether any directory is held.
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    /// `dir`, if held.
    pub(crate) fn get(&self, dir: &str) -> Option<Arc<Held>> {
        if !self.any() {
            return None;
        }
        self.dirs.lock().expect("held dirs").get(dir).cloned()
    }

    /// Starts holding `dir` (empty when lent).
    pub(crate) fn insert(&self, dir: &str, stamp: u64, tmp: PathBuf) -> Arc<Held> {
        let held = Arc::new(Held {
            stamp,
            tmp,
            spares: Mutex::default(),
            filling: AtomicBool::new(false),
            made: AtomicU64::new(0),
            state: Mutex::default(),
            settled: tokio::sync::Notify::new(),
            ended: tokio::sync::Notify::new(),
        });
        let mut dirs = self.dirs.lock().expect("held dirs");
        dirs.insert(dir.to_string(), held.clone());
        self.count.store(dirs.len(), Ordering::Release);
        held
    }

    /// Whether `held` is still held (not given back since).
    pub(crate) fn holds(&self, dir: &str, held: &Arc<Held>) -> bool {
        self.get(dir).is_some_and(|h| Arc::ptr_eq(&h, held))
    }

    /// Stops holding `dir` (given back): whoever waits for it goes on.
    pub(crate) fn remove(&self, dir: &str) {
        let mut dirs = self.dirs.lock().expect("held dirs");
        if let Some(held) = dirs.remove(dir) {
            held.ended.notify_waiters();
        }
        self.count.store(dirs.len(), Ordering::Release);
    }

    /// Waits until `held` (being given back by another caller) is gone.
    pub(crate) async fn gone(&self, dir: &str, held: &Held) {
        loop {
            let ended = held.ended.notified();
            if self.get(dir).is_none() {
                return;
            }
            ended.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn names_are_answered_until_the_directory_is_given_back_and_open_files_are_claimed() {
        let dirs = Arc::new(HeldDirs::default());
        let held = dirs.insert("/d", 1, PathBuf::from("/tmp/x.shared"));
        assert!(matches!(held.known("a"), Some(Known::Missing)));
        let lease = Lease { token: 1, ms: 1000 };
        let a = held.make("a", 0o600, lease).unwrap().unwrap();
        assert!(held.make("a", 0o600, lease).is_none(), "the name is taken");
        let b = held.make("b", 0o644, lease).unwrap().unwrap();
        assert!(matches!(held.known("a"), Some(Known::Pending(r)) if r.mode == 0o600));
        // `b` is closed: published in the background.
        assert!(b.closing().await.is_none());
        let mut rec = Record::new(Kind::File, 0o644, 1);
        rec.size = 3;
        held.closed("b", rec);
        assert!(matches!(held.known("b"), Some(Known::Pending(r)) if r.size == 3));
        let claims = held.end().unwrap();
        assert!(held.end().is_none(), "one caller gives it back");
        assert!(held.known("a").is_none(), "not answered while given back");
        assert!(matches!(held.make("c", 0o644, lease), Some(None)));
        // `a`, still open, is claimed; its writer's close waits for that.
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0].0, "a");
        let closing = tokio::spawn(async move { a.closing().await });
        tokio::task::yield_now().await;
        assert!(!closing.is_finished());
        claims[0].1.claimed(Ok(()), None);
        assert!(matches!(closing.await.unwrap(), Some(Ok(()))));
        held.settled("a", true);
        let emptied = {
            let held = held.clone();
            tokio::spawn(async move { held.emptied().await })
        };
        tokio::task::yield_now().await;
        assert!(!emptied.is_finished(), "b's publication is in flight");
        held.settled("b", true);
        emptied.await.unwrap();
        assert!(held.known("b").is_none());
        let gone = {
            let (dirs, held) = (dirs.clone(), held.clone());
            tokio::spawn(async move { dirs.gone("/d", &held).await })
        };
        tokio::task::yield_now().await;
        assert!(!gone.is_finished());
        dirs.remove("/d");
        gone.await.unwrap();
        assert!(dirs.get("/d").is_none());
    }
}
