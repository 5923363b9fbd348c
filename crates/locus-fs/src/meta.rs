//! A daemon's metadata shard: file records, directory entries and placement
//! hints in an embedded crash-safe KV engine (redb).
//!
//! Reads run on the caller's thread against the last committed state. Writes
//! go to one writer thread that applies everything queued in a single
//! transaction and commits it with one fsync (group commit); the bounded delay
//! an operation waits is one commit. Each operation replies only after its
//! transaction is durable, so an acknowledged change survives `kill -9`.

use crate::answers::Answers;
use crate::path::join;
use locus_proto::fs::{
    Answer, Change, Entry, Kind, Lease, NodeId, OpId, Record, Request, Response, WriteLock,
};
use locus_proto::{Errno, FsError, FsResult};
use redb::{Database, ReadableTable, ReadableTableMetadata, Table, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

const RECORDS: TableDefinition<&str, &[u8]> = TableDefinition::new("records");
/// (directory, name) -> kind byte; a directory's entries live beside its record.
const ENTRIES: TableDefinition<(&str, &str), u8> = TableDefinition::new("entries");
const HINTS: TableDefinition<&str, NodeId> = TableDefinition::new("hints");

/// Upper bound on operations in one transaction, to bound a commit's latency.
const MAX_BATCH: usize = 8192;
/// The longest lease a writer may ask for.
const MAX_LEASE_MS: u32 = 3_600_000;

/// When a commit reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Every acknowledged operation is on disk (fsync per group commit).
    Group,
    /// Commits are flushed in groups (every 64 commits, or 1 s after the
    /// first unflushed one); a crash may lose the operations since.
    None,
}

impl std::str::FromStr for Durability {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "group" => Ok(Durability::Group),
            "none" => Ok(Durability::None),
            other => Err(format!(
                "unknown durability '{other}' (expected group or none)"
            )),
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Durability::Group => "group",
            Durability::None => "none",
        })
    }
}

/// Called by the writer thread with an operation's durable result, what it
/// wrote, in order (for replication; nothing if it failed), and whether it
/// was alone in its commit (a commit's many answers are better sent
/// together than one at a time).
pub(crate) type Reply = Box<dyn FnOnce(Response, Vec<Change>, bool) + Send>;

struct Job {
    /// `None`: no operation, only a commit that reaches the disk.
    op: Option<Request>,
    reply: Reply,
    /// Its commit need not be flushed before it is answered.
    lazy: bool,
}

/// The open database, or why it is not open; shared by readers and the
/// writer thread, which reopens it after a failure (redb refuses all work
/// after an I/O error until the database is reopened).
struct Db {
    file: PathBuf,
    open: RwLock<Option<Arc<Database>>>,
    failure: Mutex<Option<FsError>>,
}

#[derive(Clone)]
pub(crate) struct MetaStore {
    db: Arc<Db>,
    jobs: mpsc::Sender<Job>,
}

/// A storage failure as `EIO`, or `ENOSPC` when the disk is full.
fn storage_error(e: impl Into<redb::Error>) -> FsError {
    let e: redb::Error = e.into();
    let code = match &e {
        redb::Error::Io(io) => Errno::from_io(io),
        _ => Errno::EIO,
    };
    let code = if code == Errno::ENOSPC {
        code
    } else {
        Errno::EIO
    };
    FsError::new(code, "metadata store").with_detail(e)
}

fn internal_error(e: impl std::fmt::Display) -> FsError {
    FsError::new(Errno::EIO, "metadata store").with_detail(e)
}

/// The wall clock in nanoseconds since the epoch (records' times).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn lock_for(lease: &Lease) -> WriteLock {
    WriteLock {
        token: lease.token,
        expires_ns: now_ns() + i64::from(lease.ms.min(MAX_LEASE_MS)) * 1_000_000,
    }
}

fn kind_byte(kind: Kind) -> u8 {
    match kind {
        Kind::File => 0,
        Kind::Dir => 1,
    }
}

fn byte_kind(b: u8) -> Kind {
    if b == 1 {
        Kind::Dir
    } else {
        Kind::File
    }
}

fn root_record() -> Record {
    Record::new(Kind::Dir, 0o755, 0)
}

/// A stored record as clients see it: a lock whose lease ended is gone.
fn decode_record(bytes: &[u8]) -> FsResult<Record> {
    let mut rec: Record = postcard::from_bytes(bytes).map_err(internal_error)?;
    if rec.lock.is_some_and(|l| l.expires_ns <= now_ns()) {
        rec.lock = None;
    }
    Ok(rec)
}

fn wrong_kind(path: &str, found: Kind) -> FsError {
    match found {
        Kind::Dir => FsError::new(Errno::EISDIR, path),
        Kind::File => FsError::new(Errno::ENOTDIR, path),
    }
}

impl MetaStore {
    /// Opens (or creates) the shard at `file` and starts its writer thread.
    pub(crate) fn open(file: &Path, durability: Durability) -> FsResult<MetaStore> {
        let db = Arc::new(Db {
            file: file.to_path_buf(),
            open: RwLock::new(Some(Arc::new(open_database(file)?))),
            failure: Mutex::new(None),
        });
        let (jobs, rx) = mpsc::channel();
        let writer_db = db.clone();
        std::thread::Builder::new()
            .name("locus-meta-writer".into())
            .spawn(move || writer_loop(&writer_db, rx, durability))
            .map_err(|e| FsError::io("metadata store", &e))?;
        Ok(MetaStore { db, jobs })
    }

    /// Why the store's last write failed, until a write succeeds again.
    pub(crate) fn failure(&self) -> Option<FsError> {
        self.db.failure.lock().expect("failure lock").clone()
    }

    fn read_txn(&self) -> FsResult<redb::ReadTransaction> {
        self.db.reopen()?.begin_read().map_err(storage_error)
    }

    /// Queues a write operation and waits for its durable result.
    pub(crate) async fn write(&self, op: Request) -> Response {
        self.wait_for(Some(op)).await
    }

    /// Queues a write operation; `reply` gets its result once it is durable
    /// (a `Lazy` one's once committed, before the commit is flushed, which
    /// follows within a second or 64 commits, or at `flush`). The daemon
    /// passes a closure that queues the answer on the connection directly,
    /// saving a task and a wake-up per operation.
    pub(crate) fn submit(&self, op: Request, reply: Reply) {
        let (op, lazy) = match op {
            Request::Lazy { op } => (*op, true),
            op => (op, false),
        };
        self.queue(Job {
            op: Some(op),
            reply,
            lazy,
        });
    }

    /// Waits until every operation acknowledged so far is on disk (with
    /// `--durability none`, those since the last flushed commit): a daemon
    /// that stops cleanly loses nothing.
    pub(crate) async fn flush(&self) -> FsResult<()> {
        match self.wait_for(None).await {
            Response::Err(e) => Err(e),
            _ => Ok(()),
        }
    }

    /// Queues `op` (`None`: a flushed commit only) and waits for its answer.
    async fn wait_for(&self, op: Option<Request>) -> Response {
        let (tx, rx) = oneshot::channel();
        let reply: Reply = Box::new(move |r, _, _| {
            let _ = tx.send(r);
        });
        self.queue(Job {
            op,
            reply,
            lazy: false,
        });
        rx.await
            .unwrap_or_else(|_| Response::Err(internal_error("writer stopped")))
    }

    fn queue(&self, job: Job) {
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            (job.reply)(
                Response::Err(internal_error("writer stopped")),
                Vec::new(),
                true,
            );
        }
    }

    pub(crate) fn get(&self, path: &str) -> FsResult<Record> {
        get_in(&self.read_txn()?, path)
    }

    /// The placement hint left for `path`, if any.
    pub(crate) fn hint(&self, path: &str) -> FsResult<Option<NodeId>> {
        let txn = self.read_txn()?;
        let hints = txn.open_table(HINTS).map_err(storage_error)?;
        let hint = hints.get(path).map_err(storage_error)?;
        Ok(hint.map(|h| h.value()))
    }

    /// The kind of `parent`'s entry `name`, if it has one.
    pub(crate) fn entry(&self, parent: &str, name: &str) -> FsResult<Option<Kind>> {
        let txn = self.read_txn()?;
        let entries = txn.open_table(ENTRIES).map_err(storage_error)?;
        let kind = entries.get((parent, name)).map_err(storage_error)?;
        Ok(kind.map(|k| byte_kind(k.value())))
    }

    /// One page of `dir`'s entries after `after`, and whether more follow.
    pub(crate) fn list(
        &self,
        dir: &str,
        after: Option<&str>,
        limit: u32,
    ) -> FsResult<(Vec<Entry>, bool)> {
        list_in(&self.read_txn()?, dir, after, limit)
    }

    /// One page of the whole shard, as the changes that would set each key,
    /// in (table, key) order after `after`; and whether more follow.
    pub(crate) fn dump(&self, after: Option<&Change>, limit: u32) -> FsResult<(Vec<Change>, bool)> {
        let txn = self.read_txn()?;
        let mut page = Page {
            out: Vec::new(),
            limit: limit.max(1) as usize,
            after,
        };
        let table = after.map_or(0, table_of);
        if table == 0 {
            let records = txn.open_table(RECORDS).map_err(storage_error)?;
            let from = match after {
                Some(Change::Record { path, .. }) => path.as_str(),
                _ => "",
            };
            for item in records.range(from..).map_err(storage_error)? {
                let (k, v) = item.map_err(storage_error)?;
                let record = postcard::from_bytes(v.value()).map_err(internal_error)?;
                let path = k.value().to_string();
                if page.full(Change::Record {
                    path,
                    record: Some(record),
                }) {
                    return Ok((page.out, true));
                }
            }
        }
        if table <= 1 {
            let entries = txn.open_table(ENTRIES).map_err(storage_error)?;
            let from = match after {
                Some(Change::Entry { parent, name, .. }) => (parent.as_str(), name.as_str()),
                _ => ("", ""),
            };
            for item in entries.range(from..).map_err(storage_error)? {
                let (k, v) = item.map_err(storage_error)?;
                let (parent, name) = k.value();
                let kind = Some(byte_kind(v.value()));
                let (parent, name) = (parent.to_string(), name.to_string());
                if page.full(Change::Entry { parent, name, kind }) {
                    return Ok((page.out, true));
                }
            }
        }
        let hints = txn.open_table(HINTS).map_err(storage_error)?;
        let from = match after {
            Some(Change::Hint { path, .. }) => path.as_str(),
            _ => "",
        };
        for item in hints.range(from..).map_err(storage_error)? {
            let (k, v) = item.map_err(storage_error)?;
            let path = k.value().to_string();
            if page.full(Change::Hint {
                path,
                node: Some(v.value()),
            }) {
                return Ok((page.out, true));
            }
        }
        Ok((page.out, false))
    }

    /// The changes that set every key `mine` selects (by the path its owner
    /// is chosen by), as `dump` gives them.
    pub(crate) fn keys(&self, mine: impl Fn(&str) -> bool) -> FsResult<Vec<Change>> {
        let (mut keys, mut after, mut more) = (Vec::new(), None, true);
        while more {
            let page;
            (page, more) = self.dump(after.as_ref(), 10_000)?;
            after = page.last().cloned();
            keys.extend(page.into_iter().filter(|c| mine(c.key_path())));
        }
        Ok(keys)
    }

    /// Replaces every key `mine` selects (by the path its owner is chosen
    /// by) with those of `theirs` that it selects, in one transaction: a
    /// restarted daemon taking back its keys from a replica that saw the
    /// writes it missed. Without `replace`, theirs are added to (and win
    /// over) its own: the keys a daemon that took over this one's made.
    pub(crate) fn take_back(
        &self,
        theirs: &[Change],
        mine: impl Fn(&str) -> bool,
        replace: bool,
    ) -> FsResult<usize> {
        let db = self.db.reopen()?;
        let txn = db.begin_write().map_err(storage_error)?;
        let mut taken = 0;
        // Keys only: no operation is answered from here.
        let answers = Answers::default();
        {
            let mut shard = Shard::open(&txn, &answers)?;
            if replace {
                for c in self.keys(&mine)? {
                    shard.change(c.removal())?;
                }
            }
            for c in theirs.iter().filter(|c| mine(c.key_path())) {
                shard.change(c.clone())?;
                taken += 1;
            }
        }
        txn.commit().map_err(storage_error)?;
        Ok(taken)
    }

    pub(crate) fn record_count(&self) -> FsResult<u64> {
        let txn = self.read_txn()?;
        let table = txn.open_table(RECORDS).map_err(storage_error)?;
        table.len().map_err(storage_error)
    }
}

/// A page of a dump being filled.
struct Page<'a> {
    out: Vec<Change>,
    limit: usize,
    /// The last key of the page before (not repeated).
    after: Option<&'a Change>,
}

impl Page<'_> {
    /// Adds `c` unless it is the key the page starts after; true, without
    /// adding it, once the page is full.
    fn full(&mut self, c: Change) -> bool {
        if self.after.is_some_and(|a| a.same_key(&c)) {
            return false;
        }
        if self.out.len() == self.limit {
            return true;
        }
        self.out.push(c);
        false
    }
}

/// The table a change writes to, in dump order.
fn table_of(c: &Change) -> u8 {
    match c {
        Change::Record { .. } => 0,
        Change::Entry { .. } => 1,
        Change::Hint { .. } => 2,
        Change::Answered { .. } => 3,
    }
}

/// Fails unless `dir` is an existing directory in `records`.
/// The record of directory `dir` (`ENOTDIR` if it is a file).
fn check_dir<T: ReadableTable<&'static str, &'static [u8]>>(
    records: &T,
    dir: &str,
) -> FsResult<Record> {
    let rec = read_record(records, dir)?;
    match rec.kind {
        Kind::Dir => Ok(rec),
        Kind::File => Err(FsError::new(Errno::ENOTDIR, dir)),
    }
}

/// The record of `path` in `records` (`/` always exists).
fn read_record<T: ReadableTable<&'static str, &'static [u8]>>(
    records: &T,
    path: &str,
) -> FsResult<Record> {
    if path == "/" {
        return Ok(root_record());
    }
    match records.get(path).map_err(storage_error)? {
        Some(v) => decode_record(v.value()),
        None => Err(FsError::new(Errno::ENOENT, path)),
    }
}

/// Opens (or creates) the database and its tables, so readers never see
/// them missing.
/// A stopped daemon's shard, read from a copy of its file: the daemon's
/// own is never touched (opening a file not closed cleanly repairs it).
pub(crate) struct Snapshot {
    db: Database,
    /// Holds the copy.
    _dir: tempfile::TempDir,
}

impl Snapshot {
    pub(crate) fn of(file: &Path) -> FsResult<Snapshot> {
        let io = |e: std::io::Error| FsError::io(file.display().to_string(), &e);
        let dir = tempfile::tempdir().map_err(io)?;
        let copy = dir.path().join(crate::daemon::META_FILE);
        std::fs::copy(file, &copy).map_err(io)?;
        Ok(Snapshot {
            db: open_database(&copy)?,
            _dir: dir,
        })
    }

    pub(crate) fn get(&self, path: &str) -> FsResult<Record> {
        get_in(&self.db.begin_read().map_err(storage_error)?, path)
    }

    /// Every entry of directory `dir`, in name order.
    pub(crate) fn list(&self, dir: &str) -> FsResult<Vec<Entry>> {
        let txn = self.db.begin_read().map_err(storage_error)?;
        list_in(&txn, dir, None, u32::MAX).map(|(all, _)| all)
    }
}

/// The record of `path` as of `txn`.
fn get_in(txn: &redb::ReadTransaction, path: &str) -> FsResult<Record> {
    read_record(&txn.open_table(RECORDS).map_err(storage_error)?, path)
}

/// One page of `dir`'s entries after `after` as of `txn`, and whether
/// more follow.
fn list_in(
    txn: &redb::ReadTransaction,
    dir: &str,
    after: Option<&str>,
    limit: u32,
) -> FsResult<(Vec<Entry>, bool)> {
    let records = txn.open_table(RECORDS).map_err(storage_error)?;
    check_dir(&records, dir)?;
    let entries = txn.open_table(ENTRIES).map_err(storage_error)?;
    let start = after.unwrap_or("");
    let mut out = Vec::new();
    let mut more = false;
    for item in entries.range((dir, start)..).map_err(storage_error)? {
        let (k, v) = item.map_err(storage_error)?;
        let (d, name) = k.value();
        if d != dir {
            break;
        }
        if after == Some(name) {
            continue;
        }
        if out.len() == limit.max(1) as usize {
            more = true;
            break;
        }
        out.push(Entry {
            name: name.to_string(),
            kind: byte_kind(v.value()),
        });
    }
    Ok((out, more))
}

fn open_database(file: &Path) -> FsResult<Database> {
    // redb asserts on some damaged files (one cut short) instead of
    // answering an error: a damaged file is an error, never a panic.
    let created = std::panic::catch_unwind(|| Database::create(file)).map_err(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("the store library failed");
        FsError::new(Errno::EIO, file.display().to_string())
            .with_detail(format!("metadata store damaged: {why}"))
    })?;
    let db = created.map_err(|e| FsError {
        subject: file.display().to_string(),
        ..storage_error(e)
    })?;
    let txn = db.begin_write().map_err(storage_error)?;
    txn.open_table(RECORDS).map_err(storage_error)?;
    txn.open_table(ENTRIES).map_err(storage_error)?;
    txn.open_table(HINTS).map_err(storage_error)?;
    txn.commit().map_err(storage_error)?;
    Ok(db)
}

impl Db {
    /// The open database, or the failure that closed it.
    fn get(&self) -> FsResult<Arc<Database>> {
        if let Some(db) = self.open.read().expect("db lock").as_ref() {
            return Ok(db.clone());
        }
        Err(self
            .failure
            .lock()
            .expect("failure lock")
            .clone()
            .unwrap_or_else(|| FsError::new(Errno::EIO, "metadata store").with_detail("not open")))
    }

    /// Closes the database after `e`; the writer reopens it before its next batch.
    fn fail(&self, e: &FsError) {
        tracing::error!("metadata store failed, reopening it: {e}");
        *self.failure.lock().expect("failure lock") = Some(e.clone());
        self.open.write().expect("db lock").take();
    }

    /// Reopens a closed database (redb allows it once the last reader let go).
    fn reopen(&self) -> FsResult<Arc<Database>> {
        if let Ok(db) = self.get() {
            return Ok(db);
        }
        let mut open = self.open.write().expect("db lock");
        // Another thread may have reopened it while this one waited.
        if let Some(db) = open.as_ref() {
            return Ok(db.clone());
        }
        let db = Arc::new(open_database(&self.file).inspect_err(|e| {
            *self.failure.lock().expect("failure lock") = Some(e.clone());
        })?);
        *open = Some(db.clone());
        tracing::warn!("metadata store reopened");
        Ok(db)
    }
}

/// With `--durability none`, a commit is flushed after this many unflushed
/// ones or this long after the first of them: redb frees the pages a
/// transaction replaced only at a flushed commit, so without one the file
/// grows with every operation (tens of KiB each).
const UNFLUSHED_COMMITS: u32 = 64;
const UNFLUSHED_FOR: Duration = Duration::from_secs(1);

/// Whether the writer's next commit is flushed to disk.
struct Flushing {
    durability: Durability,
    unflushed: u32,
    since: Option<Instant>,
}

impl Flushing {
    /// Whether the next commit is flushed (`lazy`: all it holds may wait).
    fn next_is_flushed(&self, now: Instant, lazy: bool) -> bool {
        (self.durability == Durability::Group && !lazy)
            || self.unflushed + 1 >= UNFLUSHED_COMMITS
            || self
                .since
                .is_some_and(|t| now.duration_since(t) >= UNFLUSHED_FOR)
    }

    fn committed(&mut self, flushed: bool, now: Instant) {
        if flushed {
            (self.unflushed, self.since) = (0, None);
        } else {
            self.unflushed += 1;
            self.since.get_or_insert(now);
        }
    }

    /// How long the writer may wait for work before flushing what it has.
    fn patience(&self, now: Instant) -> Option<Duration> {
        self.since
            .map(|t| UNFLUSHED_FOR.saturating_sub(now.duration_since(t)))
    }
}

fn writer_loop(db: &Db, rx: mpsc::Receiver<Job>, durability: Durability) {
    let mut flushing = Flushing {
        durability,
        unflushed: 0,
        since: None,
    };
    let mut answers = Answers::default();
    loop {
        let first = match flushing.patience(Instant::now()) {
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(left) => rx.recv_timeout(left),
        };
        let mut batch = match first {
            Ok(job) => vec![job],
            Err(mpsc::RecvTimeoutError::Timeout) => Vec::new(),
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        while !batch.is_empty() && batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let asked = batch.iter().any(|j| j.op.is_none());
        let lazy = batch.iter().all(|j| j.lazy);
        let flush = asked || flushing.next_is_flushed(Instant::now(), lazy);
        let applied = db
            .reopen()
            .and_then(|open| apply_batch(&open, &batch, flush, &answers));
        let alone = batch.len() == 1;
        match applied {
            Ok(replies) => {
                let now = Instant::now();
                flushing.committed(flush, now);
                for (_, changes) in &replies {
                    for c in changes {
                        if let Change::Answered { path, op, answer } = c {
                            answers.note(path, *op, answer.clone(), now);
                        }
                    }
                }
                // Failing until a write succeeds again.
                db.failure.lock().expect("failure lock").take();
                for (job, (reply, changes)) in batch.into_iter().zip(replies) {
                    (job.reply)(reply, changes, alone);
                }
            }
            Err(e) => {
                db.fail(&e);
                for job in batch {
                    (job.reply)(Response::Err(e.clone()), Vec::new(), alone);
                }
            }
        }
    }
}

/// Each operation's answer and what it wrote.
type Applied = (Response, Vec<Change>);

fn apply_batch(
    db: &Database,
    batch: &[Job],
    flush: bool,
    answers: &Answers,
) -> FsResult<Vec<Applied>> {
    let mut txn = db.begin_write().map_err(storage_error)?;
    txn.set_durability(match flush {
        true => redb::Durability::Immediate,
        false => redb::Durability::None,
    });
    let mut replies = Vec::with_capacity(batch.len());
    {
        let mut shard = Shard::open(&txn, answers)?;
        for job in batch {
            let reply = match &job.op {
                Some(op) => shard.answer(op)?,
                None => Response::Ok,
            };
            replies.push((reply, std::mem::take(&mut shard.changes)));
        }
    }
    txn.commit().map_err(storage_error)?;
    Ok(replies)
}

/// The tables of one write transaction, and what the current operation
/// wrote to them. Every write goes through [`Shard::change`].
struct Shard<'t> {
    records: Table<'t, &'static str, &'static [u8]>,
    entries: Table<'t, (&'static str, &'static str), u8>,
    hints: Table<'t, &'static str, u32>,
    changes: Vec<Change>,
    /// Operations answered before this transaction.
    answers: &'t Answers,
}

impl<'t> Shard<'t> {
    fn open(txn: &'t redb::WriteTransaction, answers: &'t Answers) -> FsResult<Shard<'t>> {
        Ok(Shard {
            records: txn.open_table(RECORDS).map_err(storage_error)?,
            entries: txn.open_table(ENTRIES).map_err(storage_error)?,
            hints: txn.open_table(HINTS).map_err(storage_error)?,
            changes: Vec::new(),
            answers,
        })
    }

    /// The answer `op` on `path` had here lately: the same operation sent
    /// again.
    fn answered_before(&self, path: &str, op: OpId) -> Option<Response> {
        self.answers.done(path, op).cloned().map(Response::from)
    }

    fn get(&self, path: &str) -> FsResult<Record> {
        read_record(&self.records, path)
    }

    /// Writes one key and notes it.
    fn change(&mut self, c: Change) -> FsResult<()> {
        match &c {
            Change::Record {
                path,
                record: Some(r),
            } => {
                let bytes = postcard::to_allocvec(r).map_err(internal_error)?;
                self.records
                    .insert(path.as_str(), bytes.as_slice())
                    .map(drop)
            }
            Change::Record { path, record: None } => self.records.remove(path.as_str()).map(drop),
            Change::Entry {
                parent,
                name,
                kind: Some(k),
            } => self
                .entries
                .insert((parent.as_str(), name.as_str()), kind_byte(*k))
                .map(drop),
            Change::Entry { parent, name, .. } => self
                .entries
                .remove((parent.as_str(), name.as_str()))
                .map(drop),
            Change::Hint {
                path,
                node: Some(n),
            } => self.hints.insert(path.as_str(), *n).map(drop),
            Change::Hint { path, node: None } => self.hints.remove(path.as_str()).map(drop),
            // Kept by the writer once the transaction is committed.
            Change::Answered { .. } => Ok(()),
        }
        .map_err(storage_error)?;
        self.changes.push(c);
        Ok(())
    }

    /// `answer`, noted (for the writer, and the replicas) as what `op` on
    /// `path` was answered: the same operation sent again gets it again.
    fn answered(&mut self, path: &str, op: OpId, answer: Answer) -> FsResult<Response> {
        self.change(Change::Answered {
            path: path.to_string(),
            op,
            answer: answer.clone(),
        })?;
        Ok(answer.into())
    }

    fn put(&mut self, path: &str, record: &Record) -> FsResult<()> {
        if path == "/" {
            return Err(FsError::new(Errno::EBUSY, path).with_detail("the root cannot change"));
        }
        self.change(Change::Record {
            path: path.to_string(),
            record: Some(record.clone()),
        })
    }

    /// Removes and returns the placement hint of `path`.
    fn take_hint(&mut self, path: &str) -> FsResult<Option<NodeId>> {
        let hint = self
            .hints
            .get(path)
            .map_err(storage_error)?
            .map(|v| v.value());
        if hint.is_some() {
            self.change(Change::Hint {
                path: path.to_string(),
                node: None,
            })?;
        }
        Ok(hint)
    }

    /// Makes directory `dir` (entry and record) unless it exists.
    fn make_dir(&mut self, dir: &str, mtime_ns: i64) -> FsResult<()> {
        match read_record(&self.records, dir) {
            Ok(rec) if rec.kind == Kind::Dir => return Ok(()),
            Ok(_) => return Err(FsError::new(Errno::ENOTDIR, dir)),
            Err(e) if e.code != Errno::ENOENT => return Err(e),
            Err(_) => {}
        }
        let (parent, name) = dir
            .rsplit_once('/')
            .map(|(p, n)| (if p.is_empty() { "/" } else { p }, n))
            .ok_or_else(|| FsError::new(Errno::EINVAL, dir))?;
        let above = check_dir(&self.records, parent)?;
        self.insert_entry(parent, name, Kind::Dir)?;
        let mut rec = Record::new(Kind::Dir, 0o755, mtime_ns);
        rec.copies = above.copies;
        self.put(dir, &rec)
    }

    /// `EEXIST` unless directory `parent` exists and has no `name`; else
    /// the parent's record.
    fn free_name(&self, parent: &str, name: &str) -> FsResult<Record> {
        let rec = check_dir(&self.records, parent)?;
        match self.entries.get((parent, name)).map_err(storage_error)? {
            Some(_) => Err(FsError::new(Errno::EEXIST, join(parent, name))),
            None => Ok(rec),
        }
    }

    fn insert_entry(&mut self, parent: &str, name: &str, kind: Kind) -> FsResult<()> {
        self.change(Change::Entry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Some(kind),
        })
    }

    fn has_entries(&self, dir: &str) -> FsResult<bool> {
        let mut range = self.entries.range((dir, "")..).map_err(storage_error)?;
        match range.next() {
            Some(item) => Ok(item.map_err(storage_error)?.0.value().0 == dir),
            None => Ok(false),
        }
    }

    /// The answer to `op`, applied; `Err` only when the store itself fails
    /// (the transaction is then abandoned). A failed operation changes
    /// nothing: every check precedes its writes.
    fn answer(&mut self, op: &Request) -> FsResult<Response> {
        match self.apply(op) {
            Ok(r) => Ok(r),
            Err(e) if matches!(e.code, Errno::EIO | Errno::ENOSPC) => Err(e),
            Err(e) => Ok(Response::Err(e)),
        }
    }

    fn apply(&mut self, op: &Request) -> FsResult<Response> {
        // Not safe twice, and done here lately: the same operation sent
        // again after its answer was lost.
        if let Some((path, id)) = op.once() {
            if let Some(answer) = self.answered_before(&path, id) {
                return Ok(answer);
            }
        }
        match op {
            Request::Batch { ops } => ops
                .iter()
                .map(|op| self.answer(op))
                .collect::<FsResult<_>>()
                .map(Response::Batch),
            Request::CreateRecord {
                path,
                record,
                lease,
            } => {
                // The directory entry, inserted first on the parent's daemon,
                // decides who creates a name; a record already here is a
                // leftover of an interrupted operation and is replaced.
                let hint = self.take_hint(path)?;
                let mut record = record.clone();
                record.lock = lease.as_ref().map(lock_for);
                self.put(path, &record)?;
                Ok(Response::Created { record, hint })
            }
            Request::Lock { path, lease } => {
                let mut rec = self.get(path)?;
                if rec.kind == Kind::Dir {
                    return Err(FsError::new(Errno::EISDIR, path));
                }
                match rec.lock {
                    Some(l) if l.token != lease.token => Err(FsError::new(Errno::EBUSY, path)),
                    _ => {
                        rec.lock = Some(lock_for(lease));
                        self.put(path, &rec)?;
                        Ok(Response::Record(rec))
                    }
                }
            }
            Request::Renew { path, lease } => {
                let mut rec = self.get(path)?;
                if rec.lock.map(|l| l.token) != Some(lease.token) {
                    return Err(FsError::new(Errno::EBUSY, path).with_detail("write lock lost"));
                }
                rec.lock = Some(lock_for(lease));
                self.put(path, &rec)?;
                Ok(Response::Ok)
            }
            Request::Unlock { path, token } => {
                let mut rec = self.get(path)?;
                let held = rec.lock.map(|l| l.token);
                if held.is_some() && (token.is_none() || held == *token) {
                    rec.lock = None;
                    self.put(path, &rec)?;
                }
                Ok(Response::Ok)
            }
            Request::CommitWrite {
                path,
                token,
                size,
                mtime_ns,
                holder,
                replicas,
                sum,
                made_by,
            } => {
                let replaced = self.get(path)?;
                if replaced.lock.map(|l| l.token) != Some(*token) {
                    return Err(FsError::new(Errno::EBUSY, path).with_detail("write lock lost"));
                }
                let mut rec = replaced.clone();
                rec.size = *size;
                rec.sum = *sum;
                rec.made_by.clone_from(made_by);
                rec.mtime_ns = *mtime_ns;
                rec.version += 1;
                rec.stamp = *token;
                rec.holders = std::iter::once(*holder)
                    .chain(replicas.iter().copied().filter(|r| r != holder))
                    .collect();
                rec.lock = None;
                self.put(path, &rec)?;
                self.answered(
                    path,
                    *token,
                    Answer::Committed {
                        record: rec,
                        replaced,
                    },
                )
            }
            Request::ReplaceLocked {
                path,
                token,
                record,
            } => {
                let replaced = self.get(path)?;
                if replaced.kind != Kind::File {
                    return Err(wrong_kind(path, replaced.kind));
                }
                if replaced.lock.map(|l| l.token) != Some(*token) {
                    return Err(FsError::new(Errno::EBUSY, path).with_detail("write lock lost"));
                }
                let rec = Record {
                    lock: None,
                    ..record.clone()
                };
                self.put(path, &rec)?;
                self.answered(
                    path,
                    *token,
                    Answer::Committed {
                        record: rec,
                        replaced,
                    },
                )
            }
            Request::SetAttr {
                path,
                mode,
                mtime_ns,
            } => {
                let mut rec = self.get(path)?;
                if let Some(m) = mode {
                    rec.mode = m & 0o7777;
                }
                if let Some(t) = mtime_ns {
                    rec.mtime_ns = *t;
                }
                self.put(path, &rec)?;
                Ok(Response::Record(rec))
            }
            Request::AddHolder {
                path,
                version,
                node,
            } => {
                let mut rec = self.get(path)?;
                if rec.version == *version && !rec.holders.contains(node) {
                    rec.holders.push(*node);
                    self.put(path, &rec)?;
                }
                Ok(Response::Ok)
            }
            Request::DropHolder { path, stamp, node } => {
                let mut rec = self.get(path)?;
                if rec.stamp == *stamp && rec.holders.contains(node) {
                    rec.holders.retain(|h| h != node);
                    self.put(path, &rec)?;
                }
                Ok(Response::Ok)
            }
            Request::RemoveRecord {
                path,
                kind,
                locked_by,
                op,
            } => {
                let rec = self.get(path)?;
                if rec.kind != *kind {
                    return Err(wrong_kind(path, rec.kind));
                }
                if path == "/" {
                    return Err(
                        FsError::new(Errno::EBUSY, path).with_detail("the root cannot be removed")
                    );
                }
                if rec.kind == Kind::Dir && self.has_entries(path)? {
                    return Err(FsError::new(Errno::ENOTEMPTY, path));
                }
                // Without a token, only if no one holds the lock.
                if locked_by.is_none() && rec.lock.is_some() {
                    return Err(FsError::new(Errno::EBUSY, path));
                }
                // Ours, or never written and no one's (our lock was broken).
                let free_and_unwritten = rec.lock.is_none() && rec.version == 0;
                if locked_by.is_some()
                    && rec.lock.map(|l| l.token) != *locked_by
                    && !free_and_unwritten
                {
                    return Err(FsError::new(Errno::EBUSY, path).with_detail("write lock lost"));
                }
                self.change(Change::Record {
                    path: path.clone(),
                    record: None,
                })?;
                self.answered(path, *op, Answer::Removed(Some(rec)))
            }
            Request::RemoveFile {
                parent,
                name,
                path,
                op,
            } => {
                if *path != join(parent, name) {
                    return Err(FsError::new(Errno::EINVAL, path.as_str())
                        .with_detail("the name is not the path's"));
                }
                let key = (parent.as_str(), name.as_str());
                match self.entries.get(key).map_err(storage_error)? {
                    Some(v) if byte_kind(v.value()) == Kind::File => {}
                    Some(v) => return Err(wrong_kind(path, byte_kind(v.value()))),
                    None => return Err(FsError::new(Errno::ENOENT, path.as_str())),
                }
                let rec = match self.get(path) {
                    Ok(rec) => Some(rec),
                    // A name whose record a crash lost: removing it is the job.
                    Err(e) if e.code == Errno::ENOENT => None,
                    Err(e) => return Err(e),
                };
                if rec.as_ref().is_some_and(|r| r.lock.is_some()) {
                    return Err(FsError::new(Errno::EBUSY, path.as_str()));
                }
                self.change(Change::Entry {
                    parent: parent.clone(),
                    name: name.clone(),
                    kind: None,
                })?;
                if rec.is_some() {
                    self.change(Change::Record {
                        path: path.clone(),
                        record: None,
                    })?;
                }
                self.answered(path, *op, Answer::Removed(rec))
            }
            Request::SetHint { path, node } => {
                if self
                    .records
                    .get(path.as_str())
                    .map_err(storage_error)?
                    .is_some()
                {
                    return Err(FsError::new(Errno::EEXIST, path)
                        .with_detail("placement applies to files not yet created"));
                }
                self.change(Change::Hint {
                    path: path.clone(),
                    node: Some(*node),
                })?;
                Ok(Response::Ok)
            }
            Request::CreateFile {
                parent,
                name,
                path,
                record,
                parents,
                lease,
            } => {
                if *path != join(parent, name) {
                    return Err(FsError::new(Errno::EINVAL, path.as_str())
                        .with_detail("the name is not the path's"));
                }
                // A whole file written at once: sent again after its answer
                // was lost, it is answered as it was (`once`) — the version
                // may have been replaced since —, not `EEXIST`.
                let write = op.once().map(|(_, token)| token);
                for dir in parents {
                    self.make_dir(dir, record.mtime_ns)?;
                }
                let above = self.free_name(parent, name)?;
                let hint = self
                    .hints
                    .get(path.as_str())
                    .map_err(storage_error)?
                    .map(|v| v.value());
                let elsewhere = hint.filter(|n| !record.holders.contains(n));
                if let Some(node) = elsewhere.filter(|_| record.kind == Kind::File) {
                    if lease.is_none() {
                        return Ok(Response::Hint(Some(node)));
                    }
                }
                self.take_hint(path)?;
                self.insert_entry(parent, name, record.kind)?;
                let mut record = record.clone();
                record.lock = lease.as_ref().map(lock_for);
                if record.copies == 0 {
                    record.copies = above.copies;
                }
                self.put(path, &record)?;
                match write {
                    Some(token) => self.answered(path, token, Answer::Created { record, hint }),
                    None => Ok(Response::Created { record, hint }),
                }
            }
            Request::AddEntry {
                parent,
                name,
                kind,
                op,
            } => {
                let path = join(parent, name);
                let above = self.free_name(parent, name)?;
                self.insert_entry(parent, name, *kind)?;
                let copies = above.copies;
                self.answered(&path, *op, Answer::Added { copies })
            }
            Request::SetCopies { path, copies } => {
                let mut rec = self.get(path)?;
                rec.copies = *copies;
                self.put(path, &rec)?;
                Ok(Response::Record(rec))
            }
            Request::RemoveEntry {
                parent,
                name,
                kind,
                op,
            } => {
                let path = join(parent, name);
                let key = (parent.as_str(), name.as_str());
                let found = match self.entries.get(key).map_err(storage_error)? {
                    Some(v) => byte_kind(v.value()),
                    None => return Err(FsError::new(Errno::ENOENT, path)),
                };
                if found != *kind {
                    return Err(wrong_kind(&path, found));
                }
                self.change(Change::Entry {
                    parent: parent.clone(),
                    name: name.clone(),
                    kind: None,
                })?;
                self.answered(&path, *op, Answer::Removed(None))
            }
            Request::Replicate { changes } => {
                for c in changes {
                    self.change(c.clone())?;
                }
                Ok(Response::Ok)
            }
            other => Err(FsError::new(Errno::EINVAL, "metadata store")
                .with_detail(format!("not a metadata write: {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(parent: &str, name: &str) -> Request {
        Request::AddEntry {
            parent: parent.into(),
            name: name.into(),
            kind: Kind::File,
            op: rand::random(),
        }
    }

    #[tokio::test]
    async fn group_commits_are_durable_and_failures_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("meta.redb");
        {
            let meta = MetaStore::open(&file, Durability::Group).unwrap();
            // Many writers at once: they share commits, and each sees the
            // effects of those queued before it.
            let mut set = tokio::task::JoinSet::new();
            for i in 0..500 {
                let meta = meta.clone();
                set.spawn(async move { meta.write(add("/", &format!("f{i}"))).await });
            }
            while let Some(r) = set.join_next().await {
                assert!(matches!(r.unwrap(), Response::Added { copies: 0 }));
            }
            match meta.write(add("/", "f7")).await {
                Response::Err(e) => assert_eq!(e.code, Errno::EEXIST),
                other => panic!("{other:?}"),
            }
            match meta.write(add("/missing", "x")).await {
                Response::Err(e) => assert_eq!(e.code, Errno::ENOENT),
                other => panic!("{other:?}"),
            }
        }
        // The writer thread releases the database once its queue closes
        // (within ten seconds on a loaded machine).
        let mut reopened = MetaStore::open(&file, Durability::Group);
        for _ in 0..1000 {
            if reopened.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            reopened = MetaStore::open(&file, Durability::Group);
        }
        let meta = reopened.unwrap();
        let (page, more) = meta.list("/", None, 1000).unwrap();
        assert_eq!((page.len(), more), (500, false));
        let (page, more) = meta.list("/", Some("f48"), 2).unwrap();
        assert_eq!(
            page.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["f480", "f481"]
        );
        assert!(more);
    }

    #[tokio::test]
    async fn what_is_made_in_a_directory_inherits_its_copies() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(&dir.path().join("m.redb"), Durability::None).unwrap();
        let mkdir = |path: &str, parents: Vec<String>| {
            let (parent, name) = path.rsplit_once('/').unwrap();
            Request::CreateFile {
                parent: if parent.is_empty() { "/" } else { parent }.into(),
                name: name.into(),
                path: path.into(),
                record: Record::new(Kind::Dir, 0o755, 0),
                parents,
                lease: None,
            }
        };
        assert!(matches!(
            meta.write(mkdir("/d", vec![])).await,
            Response::Created { .. }
        ));
        let set = Request::SetCopies {
            path: "/d".into(),
            copies: 3,
        };
        let answer = meta.write(set).await;
        assert!(
            matches!(&answer, Response::Record(r) if r.copies == 3),
            "{answer:?}"
        );
        assert!(matches!(
            meta.write(add("/d", "a")).await,
            Response::Added { copies: 3 }
        ));
        // Made in one step with a missing parent: both inherit.
        match meta.write(mkdir("/d/e/f", vec!["/d/e".into()])).await {
            Response::Created { record, .. } => assert_eq!(record.copies, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(meta.get("/d/e").unwrap().copies, 3);
        // The root keeps the cluster's count.
        let root = Request::SetCopies {
            path: "/".into(),
            copies: 1,
        };
        assert!(matches!(meta.write(root).await, Response::Err(e) if e.code == Errno::EBUSY));
    }

    #[tokio::test]
    async fn a_batch_answers_each_operation_and_a_failed_one_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(&dir.path().join("m.redb"), Durability::Group).unwrap();
        let ops = vec![add("/", "a"), add("/", "a"), add("/", "b")];
        match meta.write(Request::Batch { ops }).await {
            Response::Batch(answers) => match answers.as_slice() {
                [Response::Added { .. }, Response::Err(e), Response::Added { .. }] => {
                    assert_eq!(e.code, Errno::EEXIST);
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        let names: Vec<_> = meta.list("/", None, 10).unwrap().0;
        assert_eq!(
            names.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[tokio::test]
    async fn without_flushes_the_file_still_reuses_its_pages() {
        // redb frees replaced pages only at a flushed commit: 3,000 commits
        // none of which is flushed grew the file by ~50 KiB each (150 MB).
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.redb");
        let meta = MetaStore::open(&file, Durability::None).unwrap();
        for i in 0..3000 {
            let create = Request::CreateFile {
                parent: "/".into(),
                name: format!("f{i}"),
                path: format!("/f{i}"),
                record: Record::new(Kind::File, 0o644, 0),
                parents: Vec::new(),
                lease: None,
            };
            assert!(matches!(meta.write(create).await, Response::Created { .. }));
        }
        let len = std::fs::metadata(&file).unwrap().len();
        assert!(len < 32 << 20, "the store grew to {len} bytes");
    }

    #[tokio::test]
    async fn create_file_makes_name_parents_and_committed_record_in_one_step() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(&dir.path().join("m.redb"), Durability::None).unwrap();
        let mut record = Record::new(Kind::File, 0o644, 0);
        (record.size, record.version, record.stamp, record.holders) = (3, 1, 77, vec![0]);
        let create = |path: &str, parents: &[&str]| {
            let (parent, name) = path.rsplit_once('/').unwrap();
            Request::CreateFile {
                parent: if parent.is_empty() { "/" } else { parent }.into(),
                name: name.into(),
                path: path.into(),
                record: record.clone(),
                parents: parents
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect(),
                lease: None,
            }
        };
        // A missing parent not listed: nothing made.
        match meta.write(create("/a/b/f", &[])).await {
            Response::Err(e) => assert_eq!(e.code, Errno::ENOENT),
            other => panic!("{other:?}"),
        }
        match meta.write(create("/a/b/f", &["/a", "/a/b"])).await {
            Response::Created { record, .. } => {
                assert_eq!((record.stamp, record.version, record.lock), (77, 1, None));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(meta.list("/a", None, 10).unwrap().0.len(), 1);
        assert_eq!(meta.list("/a/b", None, 10).unwrap().0[0].name, "f");
        // The same write's create sent again (its answer lost) is answered
        // as it was; another write's finds the name taken.
        match meta.write(create("/a/b/f", &["/a", "/a/b"])).await {
            Response::Created { record, .. } => assert_eq!(record.stamp, 77),
            other => panic!("{other:?}"),
        }
        let mut another = create("/a/b/f", &["/a", "/a/b"]);
        if let Request::CreateFile { record, .. } = &mut another {
            record.stamp = 78;
        }
        match meta.write(another).await {
            Response::Err(e) => assert_eq!(e.code, Errno::EEXIST),
            other => panic!("{other:?}"),
        }
        // A placement hint to another node: nothing made, the hint kept.
        let hint = Request::SetHint {
            path: "/a/g".into(),
            node: 3,
        };
        assert!(matches!(meta.write(hint).await, Response::Ok));
        assert!(matches!(
            meta.write(create("/a/g", &[])).await,
            Response::Hint(Some(3))
        ));
        assert_eq!(meta.list("/a", None, 10).unwrap().0.len(), 1);
        // A writer's create: made, locked by its lease, the hint answered.
        let lease = Lease { token: 9, ms: 1000 };
        let mut writer = create("/a/g", &[]);
        if let Request::CreateFile {
            lease: l, record, ..
        } = &mut writer
        {
            (*l, *record) = (Some(lease), Record::new(Kind::File, 0o644, 0));
        }
        match meta.write(writer).await {
            Response::Created { record, hint } => {
                assert_eq!((record.lock.map(|l| l.token), hint), (Some(9), Some(3)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(meta.get("/a/g").unwrap().lock.unwrap().token, 9);
        assert_eq!(meta.list("/a", None, 10).unwrap().0.len(), 2);
    }

    #[tokio::test]
    async fn write_lock_is_compare_and_swap() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(&dir.path().join("m.redb"), Durability::None).unwrap();
        let create = Request::CreateRecord {
            path: "/f".into(),
            record: Record::new(Kind::File, 0o644, 0),
            lease: None,
        };
        assert!(matches!(
            meta.write(create).await,
            Response::Created { hint: None, .. }
        ));
        let lock = |token| Request::Lock {
            path: "/f".into(),
            lease: Lease { token, ms: 60_000 },
        };
        assert!(matches!(meta.write(lock(1)).await, Response::Record(_)));
        match meta.write(lock(2)).await {
            Response::Err(e) => assert_eq!(e.code, Errno::EBUSY),
            other => panic!("{other:?}"),
        }
        let commit = Request::CommitWrite {
            path: "/f".into(),
            token: 1,
            size: 3,
            mtime_ns: 5,
            holder: 4,
            replicas: vec![4, 6],
            sum: Some([7; 16]),
            made_by: None,
        };
        match meta.write(commit).await {
            Response::Committed { record, replaced } => {
                assert_eq!(
                    (record.version, record.stamp, record.holders, record.lock),
                    (1, 1, vec![4, 6], None)
                );
                assert_eq!(record.sum, Some([7; 16]));
                assert_eq!((replaced.version, replaced.stamp), (0, 0));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(meta.write(lock(2)).await, Response::Record(_)));
    }

    #[tokio::test]
    async fn only_the_lock_holder_replaces_or_removes_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(&dir.path().join("m.redb"), Durability::None).unwrap();
        let mut moved = Record::new(Kind::File, 0o600, 9);
        (moved.size, moved.stamp, moved.holders) = (7, 77, vec![2]);
        for path in ["/f", "/g"] {
            let create = Request::CreateRecord {
                path: path.into(),
                record: Record::new(Kind::File, 0o644, 0),
                lease: Some(Lease {
                    token: 1,
                    ms: 60_000,
                }),
            };
            assert!(matches!(meta.write(create).await, Response::Created { .. }));
        }
        let replace = |token| Request::ReplaceLocked {
            path: "/f".into(),
            token,
            record: moved.clone(),
        };
        let remove = |token| Request::RemoveRecord {
            path: "/g".into(),
            kind: Kind::File,
            locked_by: Some(token),
            op: token,
        };
        for wrong in [replace(2), remove(2)] {
            match meta.write(wrong).await {
                Response::Err(e) => assert_eq!(e.code, Errno::EBUSY),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(meta.get("/g").unwrap().lock.map(|l| l.token), Some(1));
        match meta.write(replace(1)).await {
            Response::Committed { record, replaced } => {
                assert_eq!(record, moved);
                assert_eq!(replaced.lock.map(|l| l.token), Some(1));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(meta.get("/f").unwrap(), moved);
        assert!(matches!(meta.write(remove(1)).await, Response::Record(_)));
        assert_eq!(meta.get("/g").unwrap_err().code, Errno::ENOENT);
        // Unlocked now: a second replace by the same token is refused.
        assert!(matches!(meta.write(replace(1)).await, Response::Err(_)));
    }

    #[tokio::test]
    async fn a_lock_whose_lease_ended_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(&dir.path().join("m.redb"), Durability::None).unwrap();
        let lease = |token, ms| Lease { token, ms };
        let create = Request::CreateRecord {
            path: "/f".into(),
            record: Record::new(Kind::File, 0o644, 0),
            lease: Some(lease(1, 1000)),
        };
        assert!(matches!(meta.write(create).await, Response::Created { .. }));
        let lock = |l| Request::Lock {
            path: "/f".into(),
            lease: l,
        };
        let busy = |r: Response| matches!(r, Response::Err(e) if e.code == Errno::EBUSY);
        assert!(busy(meta.write(lock(lease(2, 1000))).await));
        // Renewed, it stays held past its first lease.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let renew = |l| Request::Renew {
            path: "/f".into(),
            lease: l,
        };
        assert!(matches!(
            meta.write(renew(lease(1, 1000))).await,
            Response::Ok
        ));
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert!(busy(meta.write(lock(lease(2, 1000))).await));
        // Not renewed, it ends: another writer takes it and the first has lost it.
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        assert!(meta.get("/f").unwrap().lock.is_none());
        assert!(matches!(
            meta.write(lock(lease(2, 1000))).await,
            Response::Record(_)
        ));
        assert!(busy(meta.write(renew(lease(1, 1000))).await));
        // An operator's unlock breaks any lock.
        let unlock = Request::Unlock {
            path: "/f".into(),
            token: None,
        };
        assert!(matches!(meta.write(unlock).await, Response::Ok));
        assert!(matches!(
            meta.write(lock(lease(3, 50))).await,
            Response::Record(_)
        ));
    }

    /// Everything in a shard, as `dump` pages it (3 keys per page).
    fn all(meta: &MetaStore) -> Vec<Change> {
        let (mut out, mut after) = (Vec::new(), None);
        loop {
            let (page, more) = meta.dump(after.as_ref(), 3).unwrap();
            after = page.last().cloned();
            out.extend(page);
            if !more {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn a_removal_sent_again_is_answered_as_it_was_here_and_on_the_replica() {
        let dir = tempfile::tempdir().unwrap();
        let primary = MetaStore::open(&dir.path().join("a.redb"), Durability::Group).unwrap();
        let replica = MetaStore::open(&dir.path().join("b.redb"), Durability::Group).unwrap();
        let create = |name: &str| Request::CreateFile {
            parent: "/".into(),
            name: name.into(),
            path: join("/", name),
            record: Record::new(Kind::File, 0o644, 1),
            parents: Vec::new(),
            lease: None,
        };
        let unlink = |name: &str, op| Request::RemoveFile {
            parent: "/".into(),
            name: name.into(),
            path: join("/", name),
            op,
        };
        let remove = |name: &str, op| Request::RemoveRecord {
            path: join("/", name),
            kind: Kind::File,
            locked_by: None,
            op,
        };
        for op in [create("f"), create("g"), unlink("f", 7), remove("g", 8)] {
            let (tx, rx) = oneshot::channel();
            primary.submit(
                op,
                Box::new(move |r, changes, _| drop(tx.send((r, changes)))),
            );
            let (r, changes) = rx.await.unwrap();
            assert!(!matches!(r, Response::Err(_)), "{r:?}");
            let r = replica.write(Request::Replicate { changes }).await;
            assert!(matches!(r, Response::Ok), "{r:?}");
        }
        for store in [&primary, &replica] {
            // The same operations again: their answers, not ENOENT.
            assert!(matches!(
                store.write(unlink("f", 7)).await,
                Response::Record(_)
            ));
            assert!(matches!(
                store.write(remove("g", 8)).await,
                Response::Record(_)
            ));
            // Another's removal of a removed file is a miss.
            match store.write(unlink("f", 9)).await {
                Response::Err(e) => assert_eq!(e.code, Errno::ENOENT),
                other => panic!("{other:?}"),
            }
            // A file made again under the name is not taken by the old
            // removal sent again.
            assert!(matches!(
                store.write(create("f")).await,
                Response::Created { .. }
            ));
            assert!(matches!(
                store.write(unlink("f", 7)).await,
                Response::Record(_)
            ));
            assert!(store.get("/f").is_ok(), "the new file stays");
        }
    }

    #[tokio::test]
    async fn a_replica_applying_the_changes_in_order_holds_the_same_shard() {
        let dir = tempfile::tempdir().unwrap();
        let primary = MetaStore::open(&dir.path().join("a.redb"), Durability::Group).unwrap();
        let replica = MetaStore::open(&dir.path().join("b.redb"), Durability::Group).unwrap();
        let mut ops = vec![Request::SetHint {
            path: "/d/h".into(),
            node: 3,
        }];
        for (parent, name) in [("/", "d"), ("/d", "x"), ("/d", "y")] {
            ops.push(Request::CreateFile {
                parent: parent.into(),
                name: name.into(),
                path: join(parent, name),
                record: Record::new(if name == "d" { Kind::Dir } else { Kind::File }, 0o644, 1),
                parents: Vec::new(),
                lease: None,
            });
        }
        ops.push(Request::RemoveEntry {
            parent: "/d".into(),
            name: "y".into(),
            kind: Kind::File,
            op: 7,
        });
        ops.push(add("/d", "x")); // refused: changes nothing
        for op in ops {
            let (tx, rx) = oneshot::channel();
            primary.submit(
                op,
                Box::new(move |r, changes, _| drop(tx.send((r, changes)))),
            );
            let (_, changes) = rx.await.unwrap();
            let r = replica.write(Request::Replicate { changes }).await;
            assert!(matches!(r, Response::Ok), "{r:?}");
        }
        let shard = all(&primary);
        // Records /d, /d/x, /d/y; entries d, x; the hint.
        assert_eq!(shard.len(), 6, "{shard:?}");
        assert_eq!(all(&replica), shard);

        // A restarted daemon takes back the keys it owns (here: all but
        // those under /keep) from its replica, whatever it held before.
        let back = MetaStore::open(&dir.path().join("c.redb"), Durability::Group).unwrap();
        for op in [
            add("/", "stale"),
            Request::SetHint {
                path: "/keep/h".into(),
                node: 1,
            },
        ] {
            back.write(op).await;
        }
        let mine = |p: &str| !p.starts_with("/keep");
        let merged = MetaStore::open(&dir.path().join("d.redb"), Durability::Group).unwrap();
        merged.write(add("/", "own")).await;
        assert_eq!(back.take_back(&shard, mine, true).unwrap(), 6);
        let mut expected = shard.clone();
        expected.push(Change::Hint {
            path: "/keep/h".into(),
            node: Some(1),
        });
        assert_eq!(all(&back), expected);
        // Taken over (no replicas): theirs are added to its own.
        assert_eq!(merged.take_back(&shard, mine, false).unwrap(), 6);
        let merged = all(&merged);
        assert_eq!(merged.len(), 7, "{merged:?}");
        assert!(shard.iter().all(|c| merged.contains(c)));
    }
}
