//! Messages of the file-system daemon. Each request is a primitive on one
//! daemon's shard or store; the client composes them into POSIX operations.

use crate::error::FsError;
use serde::{Deserialize, Serialize};

/// Index of a node (and of its daemon) in the cluster's node list.
pub type NodeId = u32;

/// What vouches for a version's bytes: the XXH3-128 hash of the XXH3-128
/// hashes of its 1 MiB chunks and its size (`locus_fs::sums`).
pub type Sum = [u8; 16];

/// How a stored copy differs from the version its record names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mismatch {
    /// It holds this many bytes, not the record's size.
    Size(u64),
    /// Its bytes hash to something else.
    Bytes,
    /// The bytes of this chunk (of `locus_fs::sums::CHUNK` bytes, from 0)
    /// hash to something else.
    Chunk(u64),
    /// It is gone from the store that holds it.
    Missing,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Size(n) => write!(f, "the copy holds {n} bytes"),
            Mismatch::Bytes => f.write_str("the copy's bytes are not the ones written"),
            Mismatch::Chunk(k) => write!(
                f,
                "the copy's bytes {}..{} MiB are not the ones written",
                k,
                k + 1
            ),
            Mismatch::Missing => f.write_str("the copy is gone"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    File,
    Dir,
}

/// The metadata of one path, kept on the daemon that owns the path's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub kind: Kind,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
    /// Incremented by every closed write; replicas are tagged with it.
    pub version: u64,
    /// Names the stored copies of the current version (the token of the
    /// write that made it; 0 before the first). Every version is stored
    /// under its own stamp, so no write ever touches another version's bytes.
    pub stamp: u64,
    /// Nodes whose store holds the current version; the first is the primary.
    pub holders: Vec<NodeId>,
    /// The writer holding the write lock, if any and its lease has not run out.
    pub lock: Option<WriteLock>,
    /// Nodes that keep the bytes of each version (of a file; of the files
    /// made in it, for a directory, whose new entries inherit it); 0: as
    /// many as the cluster keeps.
    pub copies: u32,
    /// The hash of the current version's bytes, made where it was written:
    /// every copy read or made is checked against it (`None`: a directory,
    /// or a version whose hash was not made).
    pub sum: Option<Sum>,
    /// What made the current version, when a run's task did (`app 'f' at
    /// wf.swift:3:5 in run /path/run`): a file lost with its copies says
    /// what would make it again.
    pub made_by: Option<String>,
}

/// A write lock: the writer's token and the end of its lease (the daemon's
/// wall clock); a lock whose lease has ended is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteLock {
    pub token: u64,
    pub expires_ns: i64,
}

/// What a writer asks for when it takes or renews a lock: its token and how
/// long the lock holds without renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub token: u64,
    pub ms: u32,
}

impl Record {
    pub fn new(kind: Kind, mode: u32, mtime_ns: i64) -> Record {
        Record {
            kind,
            size: 0,
            mode,
            mtime_ns,
            version: 0,
            stamp: 0,
            holders: Vec::new(),
            lock: None,
            copies: 0,
            sum: None,
            made_by: None,
        }
    }
}

/// One name in a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
}

/// What a daemon reports about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub node: NodeId,
    pub pid: u32,
    /// Metadata records in this daemon's shard.
    pub records: u64,
    /// Files and bytes in this node's data store.
    pub stored_files: u64,
    pub stored_bytes: u64,
    pub free_bytes: u64,
    pub total_bytes: u64,
    /// Why the metadata store is failing, while it is (the daemon answers
    /// `EIO`/`ENOSPC` and reopens the store until it works again).
    pub meta_error: Option<String>,
    /// Records read (`stat`s answered) since the daemon started.
    #[serde(default)]
    pub stats_answered: u64,
    /// What the last scrub of this node's store found.
    #[serde(default)]
    pub last_scrub: Option<ScrubReport>,
}

/// What a scrub of one node's store found, kept beside the store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrubReport {
    /// When it ended (ns since the epoch).
    pub at_ns: i64,
    /// Copies checked, and their bytes.
    pub checked: u64,
    pub bytes: u64,
    /// Bad copies made again from a good one.
    pub repaired: u64,
    /// Files with no good copy left, each with what made it if a run's
    /// task did (`Record::made_by`).
    pub lost: Vec<(String, Option<String>)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    Ping,
    Status,
    /// Stops the daemon once it answered; with `purge` it also removes its
    /// node directory (metadata and data).
    Shutdown {
        purge: bool,
    },
    GetRecord {
        path: String,
    },
    /// The node a file not yet created will be created on (`SetHint`);
    /// answered by `Hint`.
    GetHint {
        path: String,
    },
    /// Inserts a new record (`EEXIST` if present), write-locked by `lease`
    /// if given. A placement hint left by `SetHint` is consumed and returned
    /// as `Response::Created`.
    CreateRecord {
        path: String,
        record: Record,
        lease: Option<Lease>,
    },
    /// Takes the write lock by compare-and-swap (`EBUSY` if held by another
    /// writer whose lease has not ended).
    Lock {
        path: String,
        lease: Lease,
    },
    /// Extends a held lock's lease (`EBUSY` if it was lost).
    Renew {
        path: String,
        lease: Lease,
    },
    /// Releases the lock held by `token`; `None` breaks any lock (an
    /// operator's `locus fs unlock`).
    Unlock {
        path: String,
        token: Option<u64>,
    },
    /// Closes a write: new size and mtime, version + 1, the stamp becomes
    /// `token`, `holder` becomes the only holder, lock released. Answers
    /// `Response::Committed`.
    /// A new file (or directory), created already committed in one step
    /// by the daemon that keeps both its parent's entries and its record:
    /// the entry, and `record` (naming copy `record.stamp`, stored on its
    /// holder before this is sent). `parents`, outermost first, are
    /// directories this daemon also keeps that are made first where
    /// missing (`ENOENT` if the first one's parent is). `EEXIST` if the
    /// name is taken; `Hint(Some(node))`, with nothing created, if a
    /// placement hint puts a file's data on another node. With a writer's
    /// `lease`, the record is created locked by it, and a hint is only
    /// answered in `Created` (the writer places the bytes when it closes).
    CreateFile {
        parent: String,
        name: String,
        path: String,
        record: Record,
        parents: Vec<String>,
        lease: Option<Lease>,
    },
    CommitWrite {
        path: String,
        token: u64,
        size: u64,
        mtime_ns: i64,
        holder: NodeId,
        /// Nodes that also stored the copy (data replicas), after `holder`.
        replicas: Vec<NodeId>,
        /// The hash of its bytes.
        sum: Option<Sum>,
        /// The run's task that made it, if one did (`Record::made_by`).
        made_by: Option<String>,
    },
    /// Sets the permission bits and/or modification time (`chmod`,
    /// `utimens`); answers with the record.
    SetAttr {
        path: String,
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    },
    /// Registers a cached replica of `version` (ignored if the file changed).
    AddHolder {
        path: String,
        version: u64,
        node: NodeId,
    },
    /// Removes `node` from the holders of the version stamped `stamp`
    /// (ignored if the file changed): its copy was found bad.
    DropHolder {
        path: String,
        stamp: u64,
        node: NodeId,
    },
    /// Deletes a record of the given kind; a directory must have no entries
    /// (`ENOTEMPTY`). With `locked_by`, only if that token holds its write
    /// lock, or the file was never written and no one holds its lock
    /// (`EBUSY` otherwise): a writer or a rename removing what it alone may
    /// change; without, only if no one holds it (`EBUSY`: an unlink of a
    /// file being written or renamed). Answers with the removed record.
    /// Sent again with the same `op` (its answer lost with a daemon), it
    /// is answered as it was.
    RemoveRecord {
        path: String,
        kind: Kind,
        locked_by: Option<u64>,
        op: OpId,
    },
    /// Removes a file in one step where one daemon keeps its entry in
    /// `parent` and its record: `ENOENT` if there is no such entry,
    /// `EISDIR` for a directory, `EBUSY` while it is being written or
    /// renamed. Answers `Record` with the removed record, or `Ok` for a
    /// name whose record a crash lost. Sent again with the same `op`, it
    /// is answered as it was.
    RemoveFile {
        parent: String,
        name: String,
        path: String,
        op: OpId,
    },
    /// Replaces the record of file `path`, whose write lock `token` holds,
    /// with `record` (unlocked): a rename's decided step, moving a file's
    /// record onto a name it locked. `EBUSY` if `token` does not hold the
    /// lock. Answers `Committed` with the record it replaced.
    ReplaceLocked {
        path: String,
        token: u64,
        record: Record,
    },
    /// Records the node a file not yet created will be created on.
    SetHint {
        path: String,
        node: NodeId,
    },
    /// Adds `name` to directory `parent`, which must exist on this daemon;
    /// answered by `Response::Added` with the parent's `copies`. Sent again
    /// as `op` (its answer lost), answered as it was.
    AddEntry {
        parent: String,
        name: String,
        kind: Kind,
        op: OpId,
    },
    /// Removes `name` from `parent`; `EISDIR`/`ENOTDIR` if its kind differs.
    /// Sent again as `op`, answered as it was: a name made since stays.
    RemoveEntry {
        parent: String,
        name: String,
        kind: Kind,
        op: OpId,
    },
    /// One page of a directory, names after `after` in byte order.
    ListEntries {
        dir: String,
        after: Option<String>,
        limit: u32,
    },
    /// Hard-links stored copy `stamp` of `from` as `to` on this node
    /// (rename's first step).
    LinkData {
        from: String,
        to: String,
        stamp: u64,
    },
    /// Deletes this node's stored copy `stamp` of `path`, if any.
    DropData {
        path: String,
        stamp: u64,
    },
    /// Sets stored copy `stamp` of `path` aside (in the node's
    /// `quarantine/`): its bytes are not the ones its record vouches for.
    Quarantine {
        path: String,
        stamp: u64,
    },
    /// Copies host file `source` (on a file system this node's host sees,
    /// e.g. the cluster's shared one) in as stored copy `stamp` of `path`;
    /// answered by `Content`. Staging in by the nodes themselves.
    ImportData {
        path: String,
        stamp: u64,
        source: std::path::PathBuf,
    },
    /// Copies stored copy `stamp` of `path` out to host file `dest` (made or
    /// replaced whole); answered by `Size`. Staging out by the holders.
    ExportData {
        path: String,
        stamp: u64,
        dest: std::path::PathBuf,
        /// What the version holds (its record's size and hash): a copy
        /// that differs is not exported (`BadCopy`).
        size: u64,
        sum: Option<Sum>,
    },
    /// Metadata replication: applies what another daemon's operations
    /// wrote, in the order it wrote them, without checks (the daemon that
    /// replicates made them).
    Replicate {
        changes: Vec<Change>,
    },
    /// One page of this daemon's shard, for a restarted daemon taking its
    /// keys back from a replica: changes that set every key after `after`
    /// in (table, key) order; answered by `Changes`.
    Dump {
        after: Option<Change>,
        limit: u32,
    },
    /// Metadata writes applied in order in one transaction (one commit to
    /// disk); answered by `Response::Batch`, one answer per operation. A
    /// failed operation changes nothing and does not stop the others.
    Batch {
        ops: Vec<Request>,
    },
    /// Sets `copies` of a record (`locus fs replicas`); answers with it.
    SetCopies {
        path: String,
        copies: u32,
    },
    /// Whether `parent` has an entry `name`: answered by `Present` with its
    /// kind. A reader's check of a name its record's owner did not know,
    /// which a delegation of `parent` is recalled for first.
    HasEntry {
        parent: String,
        name: String,
    },
    /// Delegates the names of `dir`, which must be an empty directory, to
    /// this connection: until it is given back, this daemon recalls it
    /// before any other connection reads or changes a name in `dir`, so the
    /// holder may answer for them and publish what it makes later.
    /// `EBUSY` if another connection holds it, `ENOTEMPTY` if it has names.
    Delegate {
        dir: String,
    },
    /// Answered (`Ok`) when the delegation of `dir` this connection holds
    /// is recalled, or at once if it holds none: the holder then publishes
    /// what it made in `dir` and sends `GiveBack`.
    AwaitRecall {
        dir: String,
    },
    /// Ends this connection's delegation of `dir`.
    GiveBack {
        dir: String,
    },
    /// A metadata write answered once it is committed, before its commit
    /// is flushed to disk (within a second or 64 commits, or at `Sync`):
    /// the background publications of a client, which no program waits for.
    Lazy {
        op: Box<Request>,
    },
    /// Answered once every write this daemon acknowledged is on disk.
    Sync,
    /// From daemon `owner` coming back to the daemons that may have acted
    /// for it: until it serves (`serving`), they refuse writes to its keys
    /// (`EAGAIN`) — answered once every write they accepted before is
    /// committed, so the keys it takes back hold them all; once it serves,
    /// they act for it again only after finding it unreachable themselves.
    Returning {
        owner: NodeId,
        serving: bool,
    },
    /// From daemon `owner` to a replica of its keys that missed some of its
    /// writes (it could not be reached): the replica replaces its copy of
    /// `owner`'s keys with `owner`'s current ones before answering.
    CatchUp {
        owner: NodeId,
    },
    /// From a daemon that came back to an owner whose keys it keeps: the
    /// owner catches it up at once (it may have answered writes on fewer
    /// copies while `replica` was down) rather than at its next try.
    ReplicaBack {
        replica: NodeId,
    },
    /// The copies this daemon's store holds (`locus fs repair`): answered
    /// by `Stored`.
    ListStored,
}

impl Request {
    /// What a request not safe to apply twice is known by when sent again
    /// after its answer was lost — its path and its operation id (a write's
    /// token for commits, replacements and whole files made at once) — so
    /// that the daemon answers it as it was done.
    pub fn once(&self) -> Option<(String, OpId)> {
        match self {
            Request::RemoveRecord { path, op, .. } | Request::RemoveFile { path, op, .. } => {
                Some((path.clone(), *op))
            }
            Request::AddEntry {
                parent, name, op, ..
            }
            | Request::RemoveEntry {
                parent, name, op, ..
            } => Some((join(parent, name), *op)),
            Request::CommitWrite { path, token, .. }
            | Request::ReplaceLocked { path, token, .. } => Some((path.clone(), *token)),
            // A whole file written at once (its one version stamped with
            // its writer's token; no commit follows). A locked create is
            // committed later under the same token.
            Request::CreateFile {
                path,
                record,
                lease: None,
                ..
            } if record.stamp != 0 => Some((path.clone(), record.stamp)),
            _ => None,
        }
    }

    /// The directories whose names this request (or a batch's operations)
    /// reads or changes: the parent of a name whose entry or record it
    /// touches, and a directory it lists or removes (whose names it reads).
    /// What a delegation of a directory must be recalled for.
    pub fn dirs_touched(&self) -> Vec<&str> {
        match self {
            Request::Batch { ops } => ops.iter().flat_map(Request::dirs_touched).collect(),
            Request::Lazy { op } => op.dirs_touched(),
            Request::AddEntry { parent: p, .. }
            | Request::RemoveEntry { parent: p, .. }
            | Request::CreateFile { parent: p, .. }
            | Request::RemoveFile { parent: p, .. }
            | Request::HasEntry { parent: p, .. } => vec![p],
            Request::ListEntries { dir, .. } => vec![dir],
            Request::RemoveRecord {
                path,
                kind: Kind::Dir,
                ..
            }
            | Request::SetCopies { path, .. } => vec![parent(path), path],
            Request::GetRecord { path }
            | Request::CreateRecord { path, .. }
            | Request::Lock { path, .. }
            | Request::Renew { path, .. }
            | Request::Unlock { path, .. }
            | Request::CommitWrite { path, .. }
            | Request::SetAttr { path, .. }
            | Request::AddHolder { path, .. }
            | Request::DropHolder { path, .. }
            | Request::RemoveRecord { path, .. }
            | Request::ReplaceLocked { path, .. }
            | Request::SetHint { path, .. }
            | Request::GetHint { path } => vec![parent(path)],
            _ => Vec::new(),
        }
    }
}

impl Request {
    /// The paths whose owners keep the keys this metadata write (or a
    /// batch's writes) changes: a record's or hint's path, an entry's parent.
    pub fn keys_written(&self) -> Vec<&str> {
        match self {
            Request::Batch { ops } => ops.iter().flat_map(Request::keys_written).collect(),
            Request::Lazy { op } => op.keys_written(),
            Request::AddEntry { parent, .. } | Request::RemoveEntry { parent, .. } => vec![parent],
            Request::CreateFile { parent, path, .. } | Request::RemoveFile { parent, path, .. } => {
                vec![parent, path]
            }
            Request::CreateRecord { path, .. }
            | Request::Lock { path, .. }
            | Request::Renew { path, .. }
            | Request::Unlock { path, .. }
            | Request::CommitWrite { path, .. }
            | Request::AddHolder { path, .. }
            | Request::DropHolder { path, .. }
            | Request::SetAttr { path, .. }
            | Request::RemoveRecord { path, .. }
            | Request::ReplaceLocked { path, .. }
            | Request::SetHint { path, .. }
            | Request::SetCopies { path, .. } => vec![path],
            _ => Vec::new(),
        }
    }

    /// Whether this is one metadata write (what a `Batch` or `Lazy` holds).
    pub fn is_metadata_write(&self) -> bool {
        matches!(
            self,
            Request::CreateRecord { .. }
                | Request::Lock { .. }
                | Request::Renew { .. }
                | Request::Unlock { .. }
                | Request::CommitWrite { .. }
                | Request::AddHolder { .. }
                | Request::DropHolder { .. }
                | Request::SetAttr { .. }
                | Request::RemoveRecord { .. }
                | Request::RemoveFile { .. }
                | Request::ReplaceLocked { .. }
                | Request::SetHint { .. }
                | Request::SetCopies { .. }
                | Request::AddEntry { .. }
                | Request::RemoveEntry { .. }
                | Request::CreateFile { .. }
        )
    }
}

/// The directory `path` (absolute, normalised) is named in; `/` for `/`.
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Joins a name onto a normalised directory path.
pub fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// One write to a metadata shard (`None`: the key is removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    Record {
        path: String,
        record: Option<Record>,
    },
    Entry {
        parent: String,
        name: String,
        kind: Option<Kind>,
    },
    Hint {
        path: String,
        node: Option<NodeId>,
    },
    /// Not a key: operation `op` on `path` was answered `answer`. Daemons
    /// keep it in memory for a while, so that the operation sent again
    /// after its answer was lost (with a daemon, or on the network) is
    /// answered as it was — not `ENOENT` or `EBUSY` for its own work.
    Answered {
        path: String,
        op: OpId,
        answer: Answer,
    },
}

/// A client's name for one operation, the same each time it sends it: a
/// removal's `op`, a commit's or a replacement's lock token.
pub type OpId = u64;

/// What an operation that is not safe to apply twice answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// A removal: the record it took (none for a name whose record a
    /// crash had lost, or a name's removal alone).
    Removed(Option<Record>),
    /// A name added to its directory, whose `copies` its record inherits.
    Added { copies: u32 },
    /// A commit or a replacement under a write lock.
    Committed { record: Record, replaced: Record },
    /// A write's new file made, name and record at once (`CreateFile` with
    /// a lease, keyed by its token).
    Created {
        record: Record,
        hint: Option<NodeId>,
    },
}

impl From<Answer> for Response {
    fn from(a: Answer) -> Response {
        match a {
            Answer::Removed(Some(rec)) => Response::Record(rec),
            Answer::Removed(None) => Response::Ok,
            Answer::Added { copies } => Response::Added { copies },
            Answer::Committed { record, replaced } => Response::Committed { record, replaced },
            Answer::Created { record, hint } => Response::Created { record, hint },
        }
    }
}

impl Change {
    /// The path whose owner keeps this key (an entry lives with its parent).
    pub fn key_path(&self) -> &str {
        match self {
            Change::Record { path, .. }
            | Change::Hint { path, .. }
            | Change::Answered { path, .. } => path,
            Change::Entry { parent, .. } => parent,
        }
    }

    /// The change that removes the key this one writes.
    pub fn removal(&self) -> Change {
        match self.clone() {
            Change::Record { path, .. } => Change::Record { path, record: None },
            Change::Entry { parent, name, .. } => Change::Entry {
                parent,
                name,
                kind: None,
            },
            Change::Hint { path, .. } => Change::Hint { path, node: None },
            // A note, not a key: there is nothing to remove.
            answered @ Change::Answered { .. } => answered,
        }
    }

    /// Whether both write the same key (whatever they set it to).
    pub fn same_key(&self, other: &Change) -> bool {
        match (self, other) {
            (Change::Record { path: a, .. }, Change::Record { path: b, .. })
            | (Change::Hint { path: a, .. }, Change::Hint { path: b, .. }) => a == b,
            (
                Change::Entry { parent, name, .. },
                Change::Entry {
                    parent: p, name: n, ..
                },
            ) => parent == p && name == n,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    Ok,
    Record(Record),
    Created {
        record: Record,
        hint: Option<NodeId>,
    },
    /// The new record, and the one it replaced (whose copies are now stale).
    Committed {
        record: Record,
        replaced: Record,
    },
    Entries {
        entries: Vec<Entry>,
        more: bool,
    },
    Status(NodeStatus),
    Hint(Option<NodeId>),
    /// Bytes copied.
    Size(u64),
    /// What a copy holds: its size and the hash of its bytes.
    Content {
        size: u64,
        sum: Sum,
    },
    /// The copy asked for is not the version its record names.
    BadCopy(Mismatch),
    /// A page of a shard (`Dump`).
    Changes {
        changes: Vec<Change>,
        more: bool,
    },
    Err(FsError),
    /// One answer per operation of a `Request::Batch`.
    Batch(Vec<Response>),
    /// An entry added (`AddEntry`), and its directory's `copies`, which
    /// the new name's record inherits.
    Added {
        copies: u32,
    },
    /// The kind of an entry asked for by `HasEntry`, if there is one.
    Present(Option<Kind>),
    /// The copies a store holds (`ListStored`).
    Stored(Vec<StoredCopy>),
}

/// A copy of a version a daemon's store holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCopy {
    pub path: String,
    pub stamp: u64,
    pub size: u64,
    /// When the copy was put in place.
    pub stored_ns: i64,
}

/// Opening frame on a transfer channel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TransferRequest {
    /// Send up to `len` bytes of stored copy `stamp` of `path` from
    /// `offset`; answered by `Ready` with the file's whole size, then the raw
    /// bytes of the range.
    Fetch {
        path: String,
        stamp: u64,
        offset: u64,
        len: u64,
    },
    /// Store `size` raw bytes that follow as copy `stamp` of `path`, if
    /// they hash to `sum` (when given); answered by `Ready`.
    Push {
        path: String,
        stamp: u64,
        size: u64,
        sum: Option<Sum>,
    },
    /// Where stored copy `stamp` of `path` is on the holder's host; answered
    /// by `Located`, for a reader on the same host to copy the file itself.
    Locate { path: String, stamp: u64 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TransferReply {
    Ready {
        size: u64,
    },
    Err(FsError),
    /// The copy's absolute path, device and inode on the holder's host.
    Located {
        file: String,
        dev: u64,
        ino: u64,
    },
}

/// A request or response with the id that pairs them on a pipelined channel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub id: u64,
    pub body: T,
}
