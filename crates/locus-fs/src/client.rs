//! The client library: POSIX-like operations composed from daemon primitives.
//!
//! A client acts on one node: its writes go to that node's store, its reads
//! are served from that store when the data is there and fetched into it
//! otherwise. Metadata requests go straight to the daemon that owns the path's
//! hash (zero hops); the directory entry, on the parent's daemon, is inserted
//! first and decides which of two racing creators wins.

use crate::cluster::{replica_set, ClusterSpec, SECRET_FILE};
use crate::copies::{before_publishing, Copies};
use crate::copy;
use crate::follow::Follower;
use crate::held_dirs::{HeldDirs, Known, Unclaimed};
use crate::meta::now_ns;
use crate::path::{join, normalise, split};
use crate::peer::{is_unreachable, Endpoint, Peer};
use crate::placement::Placement;
use crate::ring::Ring;
use crate::store::Store;
use crate::sums::{self, Chunks, Content, Mismatch, Summer};
use crate::transfer;
use futures_util::future::join_all;
use locus_proto::auth::{Channel, Secret};
use locus_proto::fs::{Entry, Kind, Lease, NodeId, NodeStatus, Record, Request, Response, Sum};
use locus_proto::{Cause, Errno, FsError, FsResult};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Entries asked for per `readdir` round trip.
const PAGE: u32 = 10_000;
/// Files at least this large are fetched over several streams at once.
const PARALLEL_FETCH_MIN: u64 = 16 << 20;
/// How long a write waits for an owner taking its keys back (`EAGAIN`
/// from the daemon that acted for it) before the error is the answer.
const RETURN_WAIT: Duration = Duration::from_secs(90);
const FETCH_STREAMS: u64 = 4;
/// Times a write or a rename finds the name it would replace unlinked
/// before it takes the name anew.
const CLAIM_TRIES: u32 = 3;

#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The node this client acts on.
    pub node: NodeId,
    /// Placement of new files; the cluster's default when `None`.
    pub placement: Option<Placement>,
    /// Bound on connecting to a daemon and on any one request.
    pub timeout: Duration,
    /// Set when this client runs where no daemon of the cluster does (a
    /// client of a central store): every read and write crosses the network,
    /// staged in this directory, and new files go to `node`.
    pub scratch: Option<PathBuf>,
    /// How long a write lock this client takes holds without renewal; an
    /// open writer renews it, so this bounds how long a dead writer's lock
    /// outlives it.
    pub lease: Duration,
    /// Copy the data of a holder on this host (its daemon on loopback) in
    /// the kernel instead of over TCP; off measures the network path.
    pub same_host_copy: bool,
    /// Without replicas, send a request whose owner cannot be reached to
    /// the next daemon that answers, which takes the owner's keys over (its
    /// names lost; new ones made there). Off (the default), such a request
    /// fails naming the owner, so a daemon that is only stalled keeps its
    /// names; a run whose node's daemon is lost turns it on (lineage makes
    /// the lost files again).
    pub take_over: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            node: 0,
            placement: None,
            timeout: Duration::from_secs(5),
            scratch: None,
            lease: Duration::from_secs(30),
            same_host_copy: true,
            take_over: false,
        }
    }
}

#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    me: NodeId,
    /// This node's store, or the scratch directory of a diskless client.
    store: Store,
    diskless: bool,
    peers: Vec<Peer>,
    /// Each node's directory (its store, for nodes on this host).
    dirs: Vec<PathBuf>,
    ring: Ring,
    placement: Placement,
    lease_ms: u32,
    same_host_copy: bool,
    take_over: bool,
    /// Copies the cluster keeps of data and metadata.
    replicas: u32,
    /// Copies of data asked for by directories.
    copies: Copies,
    /// Replicas being made after their version was published.
    background: Mutex<tokio::task::JoinSet<()>>,
    new_files: AtomicU64,
    /// Idle authenticated transfer streams, per node.
    transfers: Vec<Mutex<Vec<TcpStream>>>,
    /// Directories lent to this client.
    held: HeldDirs,
    /// Background publications in flight at most: closes wait beyond it,
    /// so programs go no faster than their files are published.
    publishing: Arc<tokio::sync::Semaphore>,
    /// Closed files waiting for the publisher task, and whether it runs.
    to_publish: Mutex<(Vec<Later>, bool)>,
    /// `Lazy` writes sent, and how many of the first were on disk at the
    /// last `settle_dir`: one with none since asks no daemon.
    lazy: (AtomicU64, AtomicU64),
    /// Local copies found good.
    checked: crate::verify::Checked,
}

/// A file closed in a held directory, to publish in the background.
struct Later {
    out: Output,
    held: Option<Arc<crate::held_dirs::Held>>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

tokio::task_local! {
    /// Set while a held directory's files are published or claimed: those
    /// requests go out without giving the directory back; `Lazy` ones (in
    /// the background: no program waits for them) are answered before
    /// their commit is flushed.
    static PUBLISHING: Publishing;
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Publishing {
    Lazy,
    Flushed,
}

/// Background publications one client has in flight at most.
const PUBLISHING_AT_ONCE: usize = 128;

/// Publications of a new file that fail because a daemon cannot be reached
/// are tried again this many times, a second apart (a daemon restarting).
const PUBLISH_TRIES: u32 = 30;

fn unexpected(r: Response) -> FsError {
    FsError::new(Errno::EIO, "protocol").with_detail(format!("unexpected answer {r:?}"))
}

fn expect_ok(r: Response) -> FsResult<()> {
    match r {
        Response::Ok => Ok(()),
        other => Err(unexpected(other)),
    }
}

fn expect_added(r: Response) -> FsResult<u32> {
    match r {
        Response::Added { copies } => Ok(copies),
        other => Err(unexpected(other)),
    }
}

fn expect_record(r: Response) -> FsResult<Record> {
    match r {
        Response::Record(rec) => Ok(rec),
        other => Err(unexpected(other)),
    }
}

fn blocking_failed(e: tokio::task::JoinError) -> FsError {
    FsError::new(Errno::EIO, "client").with_detail(e)
}

/// Runs file-system work that blocks off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> FsResult<T> + Send + 'static,
) -> FsResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(blocking_failed)
        .and_then(|r| r)
}

impl Client {
    /// A client of the cluster described in `dir` (as written by `locus fs up`).
    pub fn open(dir: &Path, opts: ClientOptions) -> FsResult<Client> {
        let spec =
            ClusterSpec::load(dir).map_err(|e| FsError::io(dir.display().to_string(), &e))?;
        Client::open_loaded(dir, &spec, opts)
    }

    /// [`Client::open`] of the cluster in `dir` whose file the caller read
    /// already (to choose the node).
    pub fn open_loaded(dir: &Path, spec: &ClusterSpec, opts: ClientOptions) -> FsResult<Client> {
        let secret_path = dir.join(SECRET_FILE);
        let secret = Secret::load(&secret_path)
            .map_err(|e| FsError::io(secret_path.display().to_string(), &e))?;
        Client::new(spec, secret, opts)
    }

    pub fn new(spec: &ClusterSpec, secret: Secret, opts: ClientOptions) -> FsResult<Client> {
        let me = spec.nodes.get(opts.node as usize).ok_or_else(|| {
            FsError::new(Errno::EINVAL, format!("node {}", opts.node))
                .with_detail(format!("the cluster has nodes 0..{}", spec.nodes.len() - 1))
        })?;
        let store_dir = opts.scratch.as_deref().unwrap_or(&me.dir);
        let store =
            Store::open(store_dir).map_err(|e| FsError::io(store_dir.display().to_string(), &e))?;
        let peers = spec
            .nodes
            .iter()
            .map(|n| {
                Peer::new(Endpoint {
                    node: n.id,
                    name: n.name.clone(),
                    addr: n.addr,
                    secret: secret.clone(),
                    timeout: opts.timeout,
                })
            })
            .collect();
        Ok(Client {
            inner: Arc::new(Inner {
                me: opts.node,
                store,
                diskless: opts.scratch.is_some(),
                peers,
                dirs: spec.nodes.iter().map(|n| n.dir.clone()).collect(),
                ring: spec.ring(),
                placement: opts.placement.unwrap_or(spec.placement),
                lease_ms: opts.lease.as_millis().clamp(30, u32::MAX as u128) as u32,
                same_host_copy: opts.same_host_copy,
                take_over: opts.take_over,
                replicas: spec.replicas.max(1),
                copies: Copies::new(spec.replicas, spec.nodes.len() as u32),
                background: Mutex::default(),
                new_files: AtomicU64::new(0),
                transfers: spec.nodes.iter().map(|_| Mutex::default()).collect(),
                held: HeldDirs::default(),
                publishing: Arc::new(tokio::sync::Semaphore::new(PUBLISHING_AT_ONCE)),
                to_publish: Mutex::default(),
                lazy: Default::default(),
                checked: Default::default(),
            }),
        })
    }

    /// The node this client acts on.
    pub fn node(&self) -> NodeId {
        self.inner.me
    }

    /// Whether this client runs where no daemon of the cluster does.
    pub fn is_diskless(&self) -> bool {
        self.inner.diskless
    }

    /// This node's store (a diskless client's scratch).
    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The local copies this client found good.
    pub(crate) fn checked(&self) -> &crate::verify::Checked {
        &self.inner.checked
    }

    /// Whether this node's store holds a copy of `rec`'s current data.
    pub(crate) fn holds(&self, rec: &Record) -> bool {
        !self.inner.diskless && rec.holders.contains(&self.inner.me)
    }

    pub fn node_count(&self) -> usize {
        self.inner.peers.len()
    }

    /// Name and address of node `id`.
    pub fn endpoint(&self, id: NodeId) -> FsResult<&Endpoint> {
        self.inner
            .peers
            .get(id as usize)
            .map(|p| &p.endpoint)
            .ok_or_else(|| {
                FsError::new(Errno::EINVAL, format!("node {id}")).with_detail("no such node")
            })
    }

    /// The daemon owning the metadata of `path`.
    pub fn owner(&self, path: &str) -> NodeId {
        self.inner.ring.owner(path)
    }

    pub(crate) async fn call(&self, node: NodeId, req: Request) -> FsResult<Response> {
        self.endpoint(node)?;
        self.inner.peers[node as usize].call(req).await
    }

    /// A metadata request to the owner of `path`; while the owner cannot be
    /// reached, to the next daemons in node order, the first that answers
    /// acting for it: with replicas it holds the owner's keys; without
    /// (`take_over` only), the names the owner kept are lost (a miss names
    /// the owner) and new ones are made there.
    pub(crate) async fn meta(&self, path: &str, req: Request) -> FsResult<Response> {
        self.meta_retried(path, req).await.0
    }

    /// `meta`, and whether the answer came after an attempt that could not
    /// be completed: the request may then have been applied before, and a
    /// create answered `EEXIST` may be this client's own.
    async fn meta_retried(&self, path: &str, req: Request) -> (FsResult<Response>, bool) {
        self.give_back_touched(&req).await;
        // No program waits for a background publication: its writes go to
        // disk with the next flushed commit (or at `settle_dir`).
        let lazy = PUBLISHING.try_with(|p| *p == Publishing::Lazy && req.is_metadata_write());
        let req = match lazy {
            Ok(true) => {
                self.inner.lazy.0.fetch_add(1, Ordering::Relaxed);
                Request::Lazy { op: Box::new(req) }
            }
            _ => req,
        };
        let owner = self.owner(path);
        if self.inner.replicas == 1 && !self.inner.take_over {
            return (self.call(owner, req).await, false);
        }
        let nodes = self.inner.peers.len();
        let candidates = match self.inner.take_over {
            true => nodes as u32,
            false => self.inner.replicas,
        };
        let coming_back = Instant::now();
        let (mut tried, mut retried) = (Vec::new(), false);
        'owner: loop {
            tried.clear();
            for node in replica_set(owner, nodes, candidates) {
                match self.call(node, req.clone()).await {
                    Err(e) if is_unreachable(&e) => {
                        tried.push(e);
                        retried = true;
                    }
                    // A miss where the owner's keys are kept (a replica
                    // of them) is as sure as the owner's own.
                    Err(e)
                        if e.code == Errno::ENOENT
                            && !tried.is_empty()
                            && !replica_set(owner, nodes, self.inner.replicas).contains(&node) =>
                    {
                        let detail =
                            format!("lost? its owner {} cannot be reached", tried[0].subject);
                        let lost = Cause::OwnerLost { node: owner };
                        return (Err(e.with_detail(detail).with_cause(lost)), retried);
                    }
                    // The owner is taking its keys back from the daemon
                    // that acted for it, or serves them again: try it.
                    Err(e) if e.code == Errno::EAGAIN && coming_back.elapsed() < RETURN_WAIT => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue 'owner;
                    }
                    other => return (other, retried),
                }
            }
            break;
        }
        let first = tried.remove(0);
        let others: Vec<String> = tried.iter().map(|e| e.subject.clone()).collect();
        let detail = format!("and the daemons after it: {}", others.join(", "));
        (Err(first.with_detail(detail)), retried)
    }

    /// Whether `e` is a miss whose owner could not be reached: the name
    /// may have been lost with it.
    pub fn owner_lost(e: &FsError) -> bool {
        matches!(e.cause, Some(Cause::OwnerLost { .. }))
    }

    /// Resolves, with the error, once node `node`'s daemon has stopped
    /// answering: a ping (one every `every`) found it unreachable, and so
    /// did another shortly after.
    pub async fn lost_node(&self, node: NodeId, every: std::time::Duration) -> FsError {
        let confirm = every / 5;
        loop {
            tokio::time::sleep(every).await;
            if !matches!(self.ping(node).await, Err(e) if is_unreachable(&e)) {
                continue;
            }
            tokio::time::sleep(confirm).await;
            if let Err(e) = self.ping(node).await {
                if is_unreachable(&e) {
                    return e;
                }
            }
        }
    }

    /// Names `path` again as `rec` (a version this client saw made) says,
    /// when its name was lost with the daemon that kept it and a node `rec`
    /// names still holds those bytes: the file comes back as it was,
    /// without being made again. `true` also if it is named meanwhile (by
    /// another look at it) with bytes in reach: nothing is to be made
    /// again; `false` if its name is gone or no node holds the bytes.
    pub async fn reinstate(&self, path: &str, rec: &Record) -> FsResult<bool> {
        let path = normalise(path)?;
        match self.stat(&path).await {
            // Named (again, by another look at it): lost only if its bytes are.
            Ok(now) => return Ok(!self.out_of_reach(&now).await),
            Err(e) if Client::owner_lost(&e) => {}
            Err(e) if e.code != Errno::ENOENT => return Err(e),
            Err(_) => return Ok(false),
        }
        let mut holders = Vec::new();
        for &h in &rec.holders {
            let (client, p, stamp) = (self.clone(), path.clone(), rec.stamp);
            let located =
                blocking(move || client.with_transfer(h, |s| transfer::locate(s, (&p, stamp))))
                    .await;
            if matches!(located, Ok(Some(_))) {
                holders.push(h);
            }
        }
        if holders.is_empty() {
            return Ok(false);
        }
        let (parent, name) = split(&path)?;
        self.mkdir_all(parent).await?;
        let entry = Request::AddEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::File,
        };
        match self.meta(parent, entry).await {
            Err(e) if e.code != Errno::EEXIST => return Err(e),
            _ => {}
        }
        let record = Record {
            holders,
            lock: None,
            ..rec.clone()
        };
        match self.record_again(&path, record, None).await {
            // Named again meanwhile, by another look at it.
            Err(e) if e.code != Errno::EEXIST => Err(e),
            _ => Ok(true),
        }
    }

    /// Whether the current version of file `path` is lost: its name is
    /// gone, or no node holding its bytes can be reached (or holds good
    /// ones).
    pub async fn lost(&self, path: &str) -> FsResult<bool> {
        let rec = match self.stat(path).await {
            Ok(rec) => rec,
            Err(e) if e.code == Errno::ENOENT => return Ok(Client::owner_lost(&e)),
            Err(e) => return Err(e),
        };
        Ok(self.out_of_reach(&rec).await)
    }

    /// Whether every node holding the bytes of version `rec` cannot be
    /// reached, or none holds them any more (every copy was found bad and
    /// set aside; a file never written holds no bytes).
    async fn out_of_reach(&self, rec: &Record) -> bool {
        if rec.holders.is_empty() {
            return rec.size > 0;
        }
        for &h in &rec.holders {
            if self.ping(h).await.is_ok() {
                return false;
            }
        }
        true
    }

    pub async fn ping(&self, node: NodeId) -> FsResult<()> {
        expect_ok(self.call(node, Request::Ping).await?)
    }

    /// Stops node `node`'s daemon (it answers first); with `purge` it also
    /// removes its node directory.
    pub async fn shutdown(&self, node: NodeId, purge: bool) -> FsResult<()> {
        expect_ok(self.call(node, Request::Shutdown { purge }).await?)
    }

    pub async fn status(&self, node: NodeId) -> FsResult<NodeStatus> {
        match self.call(node, Request::Status).await? {
            Response::Status(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    pub async fn stat(&self, path: &str) -> FsResult<Record> {
        let path = normalise(path)?;
        if let Some((held, name)) = self.held_parent(&path) {
            match held.known(name) {
                Some(Known::Missing) => return Err(FsError::new(Errno::ENOENT, path)),
                Some(Known::Pending(rec)) => return Ok(rec),
                Some(Known::Published) | None => {}
            }
        }
        let got = self.record(&path).await;
        // A miss whose name's entry is kept elsewhere, in a directory
        // another client may hold: the entry's keeper has the last word
        // (and recalls the directory first).
        let (parent, name) = match (&got, split(&path)) {
            (Err(e), Ok((parent, name)))
                if e.code == Errno::ENOENT && self.owner(parent) != self.owner(&path) =>
            {
                (parent, name)
            }
            _ => return got,
        };
        let has = Request::HasEntry {
            parent: parent.to_string(),
            name: name.to_string(),
        };
        match self.meta(parent, has).await? {
            Response::Present(Some(_)) => self.stat_created(&path).await,
            Response::Present(None) => got,
            other => Err(unexpected(other)),
        }
    }

    /// The record of normalised `path`, as its owner has it.
    async fn record(&self, path: &str) -> FsResult<Record> {
        let get = Request::GetRecord {
            path: path.to_string(),
        };
        expect_record(self.meta(path, get).await?)
    }

    /// The held directory `path` is in, and its name there.
    fn held_parent<'p>(&self, path: &'p str) -> Option<(Arc<crate::held_dirs::Held>, &'p str)> {
        let (parent, name) = split(path).ok()?;
        Some((self.inner.held.get(parent)?, name))
    }

    /// Whether directory `dir` (normalised) is lent to this client: it
    /// exists, since removing it elsewhere recalls it first.
    pub fn is_lent(&self, dir: &str) -> bool {
        self.inner.held.get(dir).is_some()
    }

    /// Asks for `dir`, an empty directory, to be lent to this client: its
    /// new files are then made here without asking any daemon and
    /// published in the background after they are closed, until another
    /// client looks into `dir` or this one does anything else there.
    /// Whether it was lent.
    pub async fn delegate(&self, dir: &str) -> FsResult<bool> {
        let dir = normalise(dir)?;
        if self.inner.held.get(&dir).is_some() {
            return Ok(true);
        }
        // Its files are made here: not where they must go elsewhere.
        if self.inner.diskless || self.inner.placement != Placement::Local {
            return Ok(false);
        }
        let owner = self.owner(&dir);
        let asked = self
            .call(owner, Request::Delegate { dir: dir.clone() })
            .await;
        match asked {
            Ok(r) => expect_ok(r)?,
            Err(e) if matches!(e.code, Errno::EBUSY | Errno::ENOTEMPTY) => return Ok(false),
            Err(e) => return Err(e),
        }
        let stamp = self.new_lease().token;
        self.inner
            .held
            .insert(&dir, stamp, self.inner.store.shared_dir());
        let client = self.clone();
        tokio::spawn(async move {
            let recall = Request::AwaitRecall { dir: dir.clone() };
            // Recalled, given back or the connection lost: all end it here.
            let _ = client.call(owner, recall).await;
            client.give_back(&dir).await;
        });
        Ok(true)
    }

    /// Gives held `dir` back: its open new files are claimed as usual
    /// (write-locked by their writers), its closed ones published, then
    /// the daemon is told. Returns once `dir` is no longer held.
    async fn give_back(&self, dir: &str) {
        let Some(held) = self.inner.held.get(dir) else {
            return;
        };
        let Some(open) = held.end() else {
            return self.inner.held.gone(dir, &held).await;
        };
        PUBLISHING
            .scope(Publishing::Lazy, async {
                join_all(open.into_iter().map(|(name, unclaimed)| {
                    let path = join(dir, &name);
                    let held = held.clone();
                    async move {
                        let rec = Record::new(Kind::File, unclaimed.mode, now_ns());
                        let lease = unclaimed.lease;
                        let claimed = self.create_name(&path, rec, Some(lease)).await.map(drop);
                        let renewal = match claimed {
                            Ok(()) => {
                                let mut guard = self.keep_lease(&path, lease);
                                guard.0.take()
                            }
                            Err(_) => None,
                        };
                        held.settled(&name, claimed.is_ok());
                        unclaimed.claimed(claimed, renewal);
                    }
                }))
                .await;
                held.emptied().await;
            })
            .await;
        self.inner.held.remove(dir);
        self.discard_spares(&held);
        let owner = self.owner(dir);
        let given = Request::GiveBack {
            dir: dir.to_string(),
        };
        if let Err(e) = self.call(owner, given).await {
            tracing::debug!("{dir}: giving the delegation back: {e}");
        }
    }

    /// Gives back the held directories `req` reads or changes names in
    /// (this client does something else there than making new files).
    async fn give_back_touched(&self, req: &Request) {
        if !self.inner.held.any()
            || matches!(req, Request::GetRecord { .. } | Request::GetHint { .. })
            || PUBLISHING.try_with(|_| ()).is_ok()
        {
            return;
        }
        for dir in req.dirs_touched() {
            if self.inner.held.get(dir).is_some() {
                self.give_back(dir).await;
            }
        }
    }

    /// `fsync` of a directory: waits until the new files closed in `dir`,
    /// if it is held, are published, and every daemon's names are on disk
    /// (publications are flushed lazily, also after a directory is given back).
    pub async fn settle_dir(&self, dir: &str) -> FsResult<()> {
        if let Some(held) = normalise(dir).ok().and_then(|d| self.inner.held.get(&d)) {
            held.flushed().await;
        }
        // A `Sync` follows the writes sent before it on each connection.
        let (sent, synced) = &self.inner.lazy;
        let upto = sent.load(Ordering::Relaxed);
        if synced.load(Ordering::Relaxed) >= upto {
            return Ok(());
        }
        let nodes = 0..self.node_count() as NodeId;
        for done in join_all(nodes.map(|n| self.call(n, Request::Sync))).await {
            expect_ok(done?)?;
        }
        synced.fetch_max(upto, Ordering::Relaxed);
        Ok(())
    }

    /// Sets the permission bits and/or modification time of `path`.
    pub async fn set_attr(
        &self,
        path: &str,
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    ) -> FsResult<Record> {
        let path = normalise(path)?;
        let req = Request::SetAttr {
            path: path.clone(),
            mode,
            mtime_ns,
        };
        expect_record(self.meta(&path, req).await?)
    }

    /// Makes files written from now on under directory `dir` (in it and in
    /// its subdirectories, existing or made later) keep their bytes on
    /// `copies` nodes; files already there keep theirs. Returns the number
    /// of directories set.
    pub async fn set_copies(&self, dir: &str, copies: u32) -> FsResult<u64> {
        let dir = normalise(dir)?;
        let nodes = self.inner.peers.len() as u32;
        if copies == 0 || copies > nodes {
            return Err(FsError::new(Errno::EINVAL, dir)
                .with_detail(format!("copies must be 1 to {nodes}, the cluster's nodes")));
        }
        if dir == "/" {
            return Err(FsError::new(Errno::EINVAL, dir)
                .with_detail("the root keeps the cluster's count (its --replicas)"));
        }
        if self.stat(&dir).await?.kind != Kind::Dir {
            return Err(FsError::new(Errno::ENOTDIR, dir));
        }
        let mut todo = vec![dir];
        let mut set = 0;
        while let Some(d) = todo.pop() {
            let req = Request::SetCopies {
                path: d.clone(),
                copies,
            };
            expect_record(self.meta(&d, req).await?)?;
            set += 1;
            for e in self.readdir(&d).await? {
                if e.kind == Kind::Dir {
                    todo.push(join(&d, &e.name));
                }
            }
        }
        Ok(set)
    }

    /// The nodes that keep the bytes of the versions of `rec`'s file (of a
    /// directory: of new files in it).
    pub fn copies(&self, rec: &Record) -> u32 {
        self.inner.copies.of(rec.copies)
    }

    /// The nodes holding the current data of `path` (primary first).
    pub async fn locate(&self, path: &str) -> FsResult<Vec<NodeId>> {
        let rec = self.stat(path).await?;
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        Ok(rec.holders)
    }

    /// Makes `node` the node the file `path`, not yet created, will be stored on.
    pub async fn place(&self, path: &str, node: NodeId) -> FsResult<()> {
        self.endpoint(node)?;
        let path = normalise(path)?;
        expect_ok(
            self.meta(
                &path,
                Request::SetHint {
                    path: path.clone(),
                    node,
                },
            )
            .await?,
        )
    }

    /// The node `place` chose for `path`, not yet created, if any.
    pub async fn hint(&self, path: &str) -> FsResult<Option<NodeId>> {
        let path = normalise(path)?;
        match self
            .meta(&path, Request::GetHint { path: path.clone() })
            .await?
        {
            Response::Hint(h) => Ok(h),
            other => Err(unexpected(other)),
        }
    }

    /// Makes the record of `path` again where its owner's keys are now:
    /// its name is in its parent, its record was lost with its owner.
    async fn record_again(
        &self,
        path: &str,
        record: Record,
        lease: Option<Lease>,
    ) -> FsResult<(Option<NodeId>, Record)> {
        let req = Request::CreateRecord {
            path: path.to_string(),
            record,
            lease,
        };
        match self.meta(path, req).await? {
            Response::Created { hint, record } => Ok((hint, record)),
            other => Err(unexpected(other)),
        }
    }

    /// Adds `path` as a name in its parent and creates its record (locked by
    /// `lease` if given, its `copies` its parent's); returns the placement
    /// hint left for it, if any, and the record.
    async fn create_name(
        &self,
        path: &str,
        mut record: Record,
        lease: Option<Lease>,
    ) -> FsResult<(Option<NodeId>, Record)> {
        let (parent, name) = split(path)?;
        if self.owner(parent) == self.owner(path) {
            // One daemon keeps the entry and the record: one request.
            let req = Request::CreateFile {
                parent: parent.to_string(),
                name: name.to_string(),
                path: path.to_string(),
                record,
                parents: Vec::new(),
                lease,
            };
            let (answer, retried) = self.meta_retried(path, req).await;
            let (hint, record) = match answer {
                Ok(Response::Created { hint, record }) => (hint, record),
                // Sent again after its answer was lost: the file there is
                // this create's own if this create's lease holds it (its
                // placement hint is lost with the answer).
                Err(e) if e.code == Errno::EEXIST && retried => {
                    match (lease, self.record(path).await) {
                        (Some(l), Ok(rec)) if rec.lock.map(|k| k.token) == Some(l.token) => {
                            (None, rec)
                        }
                        _ => return Err(e),
                    }
                }
                Ok(other) => return Err(unexpected(other)),
                Err(e) => return Err(e),
            };
            self.inner
                .copies
                .learn(parent, record.copies, Instant::now());
            return Ok((hint, record));
        }
        let kind = record.kind;
        let entry = Request::AddEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind,
        };
        let copies = match self.meta_retried(parent, entry).await {
            (Err(e), true) if e.code == Errno::EEXIST && self.nameless(path, kind).await => {
                self.stat(parent).await?.copies
            }
            (added, _) => expect_added(added?)?,
        };
        self.inner.copies.learn(parent, copies, Instant::now());
        record.copies = copies;
        let created = self
            .meta(
                path,
                Request::CreateRecord {
                    path: path.to_string(),
                    record,
                    lease,
                },
            )
            .await;
        match created {
            Ok(Response::Created { hint, record }) => Ok((hint, record)),
            other => {
                let undo = Request::RemoveEntry {
                    parent: parent.to_string(),
                    name: name.to_string(),
                    kind,
                };
                let _ = self.meta(parent, undo).await;
                Err(match other {
                    Err(e) => e,
                    Ok(r) => unexpected(r),
                })
            }
        }
    }

    /// Whether name `path`, found taken by an `AddEntry` that may have
    /// been applied before its answer was lost, is this create's own: it
    /// has the kind asked for and no record, even after a creator between
    /// its two steps would have made one, and it is still there then (an
    /// unlink between its two steps, record first, removes it by then).
    async fn nameless(&self, path: &str, kind: Kind) -> bool {
        let Ok((parent, name)) = split(path) else {
            return false;
        };
        let named = || async {
            let has = Request::HasEntry {
                parent: parent.to_string(),
                name: name.to_string(),
            };
            matches!(self.meta(parent, has).await, Ok(Response::Present(Some(k))) if k == kind)
        };
        named().await
            && matches!(self.stat_created(path).await, Err(e) if e.code == Errno::ENOENT)
            && named().await
    }

    pub async fn mkdir(&self, path: &str) -> FsResult<()> {
        self.mkdir_with_mode(path, 0o755).await
    }

    /// `mkdir` of a directory whose permission bits are `mode`.
    pub async fn mkdir_with_mode(&self, path: &str, mode: u32) -> FsResult<()> {
        let path = normalise(path)?;
        let record = Record::new(Kind::Dir, mode & 0o7777, now_ns());
        self.create_name(&path, record, None).await.map(drop)
    }

    /// The record of a name that exists: a concurrent creator may have added
    /// the name and not yet its record, so `ENOENT` is retried for a while
    /// (200 tries a millisecond apart: longer when the daemons are busy).
    async fn stat_created(&self, path: &str) -> FsResult<Record> {
        let mut tries = 0;
        loop {
            match self.record(path).await {
                // (A record lost with its owner never comes.)
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) && tries < 200 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                other => return other,
            }
        }
    }

    /// `mkdir -p`: creates missing ancestors; an existing directory is fine.
    pub async fn mkdir_all(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        if path == "/" {
            return Ok(());
        }
        // From the deepest name up: where only the last directories are
        // missing (the usual case), the ones above cost nothing.
        let mut missing = vec![path];
        while let Some(dir) = missing.last().cloned() {
            match self.mkdir(&dir).await {
                Ok(()) => {
                    missing.pop();
                }
                Err(e) if e.code == Errno::EEXIST => {
                    match self.stat_created(&dir).await {
                        Ok(rec) if rec.kind != Kind::Dir => {
                            return Err(FsError::new(Errno::ENOTDIR, dir))
                        }
                        Ok(_) => {}
                        // Named in its parent, its record lost with its
                        // owner: made again where the owner's keys are now.
                        Err(e) if Client::owner_lost(&e) => {
                            let rec = Record::new(Kind::Dir, 0o755, now_ns());
                            match self.record_again(&dir, rec, None).await {
                                Ok(_) => {}
                                Err(e) if e.code == Errno::EEXIST => {}
                                Err(e) => return Err(e),
                            }
                        }
                        Err(e) => return Err(e),
                    }
                    missing.pop();
                }
                Err(e) if e.code == Errno::ENOENT => {
                    let parent = split(&dir)?.0.to_string();
                    if parent == "/" || missing.contains(&parent) {
                        return Err(e);
                    }
                    missing.push(parent);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One page of `dir`'s names after `after`, and whether more follow.
    pub async fn readdir_page(
        &self,
        dir: &str,
        after: Option<&str>,
        limit: u32,
    ) -> FsResult<(Vec<Entry>, bool)> {
        let dir = normalise(dir)?;
        let req = Request::ListEntries {
            dir: dir.clone(),
            after: after.map(str::to_string),
            limit,
        };
        match self.meta(&dir, req).await? {
            Response::Entries { entries, more } => Ok((entries, more)),
            other => Err(unexpected(other)),
        }
    }

    /// Every name in `dir`, in byte order.
    pub async fn readdir(&self, dir: &str) -> FsResult<Vec<Entry>> {
        let mut all: Vec<Entry> = Vec::new();
        loop {
            let after = all.last().map(|e| e.name.clone());
            let (page, more) = self.readdir_page(dir, after.as_deref(), PAGE).await?;
            all.extend(page);
            if !more {
                return Ok(all);
            }
        }
    }

    /// Tells `nodes` to delete their stored copy `stamp` of `path`. A node
    /// that cannot be reached keeps an orphan copy, never a visible file.
    async fn drop_copies(&self, path: &str, nodes: Vec<NodeId>, stamp: u64) {
        let drops: Vec<_> = nodes
            .into_iter()
            .map(|node| {
                let (client, path) = (self.clone(), path.to_string());
                let req = Request::DropData { path, stamp };
                tokio::spawn(async move { client.call(node, req).await })
            })
            .collect();
        for d in drops {
            match d.await {
                // A lost node's copies went with it (or are swept as
                // orphans if it comes back).
                Ok(Err(e)) if is_unreachable(&e) => {
                    tracing::debug!("could not delete a stale copy: {e}")
                }
                Ok(Err(e)) => tracing::warn!("could not delete a stale copy: {e}"),
                _ => {}
            }
        }
    }

    /// Removes file `path`; `EBUSY` while it is being written or renamed
    /// (as a rename of it would be). Where one daemon keeps its entry and
    /// its record, in one step. Elsewhere record first, if no one holds its
    /// lock, then the name (as a rename removes its old name): a new file
    /// cannot take the name before the record is gone, so the record
    /// removed is never a new file's.
    pub async fn unlink(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        let (parent, name) = split(&path)?;
        if self.owner(parent) == self.owner(&path) {
            let remove = Request::RemoveFile {
                parent: parent.to_string(),
                name: name.to_string(),
                path: path.clone(),
            };
            match self.meta(&path, remove).await? {
                Response::Record(rec) => self.drop_copies(&path, rec.holders, rec.stamp).await,
                Response::Ok => {}
                other => return Err(unexpected(other)),
            }
            return Ok(());
        }
        let mut removed = self.remove_file(&path, None).await;
        if matches!(&removed, Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(e)) {
            match self.without_record(&path).await? {
                NoRecord::NoName => return removed.map(drop),
                NoRecord::LeftoverRemoved => return Ok(()),
                NoRecord::Created => removed = self.remove_file(&path, None).await,
            }
        }
        let rec = removed?;
        self.drop_copies(&path, rec.holders, rec.stamp).await;
        Ok(())
    }

    /// What is at `path`, where an unlink found no record: no name (or
    /// one that goes meanwhile: another unlink's); a create between its two
    /// steps (its record comes within a request's time: one coming later
    /// was never acknowledged); or a name a crash left without a record,
    /// which is removed.
    async fn without_record(&self, path: &str) -> FsResult<NoRecord> {
        let (parent, name) = split(path)?;
        let has = || Request::HasEntry {
            parent: parent.to_string(),
            name: name.to_string(),
        };
        let patience = Instant::now() + self.inner.peers[0].endpoint.timeout;
        loop {
            if let Response::Present(None) = self.meta(parent, has()).await? {
                return Ok(NoRecord::NoName);
            }
            match self.record(path).await {
                Ok(_) => return Ok(NoRecord::Created),
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) => {}
                Err(e) => return Err(e),
            }
            if Instant::now() > patience {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let entry = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::File,
        };
        expect_ok(self.meta(parent, entry).await?)?;
        Ok(NoRecord::LeftoverRemoved)
    }

    pub async fn rmdir(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        let (parent, name) = split(&path)?;
        // The record goes first: its daemon also holds the directory's entries,
        // so the emptiness check and the removal are one atomic step.
        let removed = Request::RemoveRecord {
            path: path.clone(),
            kind: Kind::Dir,
            locked_by: None,
        };
        let lost_record = match self.meta(&path, removed).await {
            Ok(r) => expect_record(r).map(|_| false)?,
            // A name whose record an earlier crash lost: removing the name is
            // the whole job (and fails with ENOENT if there is none).
            Err(e) if e.code == Errno::ENOENT => true,
            Err(e) => return Err(e),
        };
        let entry = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::Dir,
        };
        match self.meta(parent, entry).await {
            Err(e) if !lost_record && e.code == Errno::ENOENT => Ok(()),
            other => other.and_then(expect_ok),
        }
    }

    /// Removes `path` and, for a directory, everything under it.
    pub async fn remove_all(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        if self.stat(&path).await?.kind == Kind::File {
            return self.unlink(&path).await;
        }
        let mut stack = vec![(path, false)];
        while let Some((dir, emptied)) = stack.pop() {
            if emptied {
                self.rmdir(&dir).await?;
                continue;
            }
            stack.push((dir.clone(), true));
            for e in self.readdir(&dir).await? {
                let child = join(&dir, &e.name);
                match e.kind {
                    Kind::File => self.unlink(&child).await?,
                    Kind::Dir => stack.push((child, false)),
                }
            }
        }
        Ok(())
    }

    /// Renames `from` to `to`, replacing a file at `to`. A directory is moved
    /// entry by entry (not atomically). Stored copies are hard-linked under the
    /// new name before the metadata moves, so the file is readable throughout.
    pub async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        self.rename_as(from, to, true).await
    }

    /// `rename` that fails with `EEXIST` instead of replacing anything at
    /// `to` (`RENAME_NOREPLACE`), decided by the same step that makes `to`.
    pub async fn rename_noreplace(&self, from: &str, to: &str) -> FsResult<()> {
        self.rename_as(from, to, false).await
    }

    async fn rename_as(&self, from: &str, to: &str, replace: bool) -> FsResult<()> {
        let (from, to) = (normalise(from)?, normalise(to)?);
        if from == to {
            self.stat(&from).await?;
            return Ok(());
        }
        if to.starts_with(&format!("{from}/")) || from == "/" {
            return Err(
                FsError::new(Errno::EINVAL, to).with_detail("cannot move a directory into itself")
            );
        }
        match self.stat(&from).await?.kind {
            Kind::File => self.rename_file(&from, &to, replace).await,
            Kind::Dir => Box::pin(self.rename_dir(&from, &to, replace)).await,
        }
    }

    /// A file's rename, decided under its write lock: `from` is locked by
    /// compare-and-swap (a second rename of it, or a writer, gets `EBUSY`),
    /// its copies are linked under `to`, and one step puts its record at
    /// `to` — the create of a new name, or `ReplaceLocked` of a file at `to`
    /// this rename locked. Before that step a failure undoes only what this
    /// rename made; after it the file is at `to`, and `from` is removed only
    /// while the lock is still this rename's.
    async fn rename_file(&self, from: &str, to: &str, replace: bool) -> FsResult<()> {
        let lease = self.new_lease();
        let rec = self.lock(from, lease).await?;
        let _renewal = self.keep_lease(from, lease);
        let moved = self.move_record(from, to, &rec, lease, replace).await;
        let replaced = match moved {
            Ok(replaced) => replaced,
            Err(e) => {
                let _ = self.unlock(from, lease.token).await;
                return Err(e);
            }
        };
        match replaced {
            Some(old) => self.drop_copies(to, old.holders, old.stamp).await,
            None => drop(self.unlock(to, lease.token).await),
        }
        // The file is at `to` now; if the old name cannot be removed (its
        // daemon lost, or this client stalled past its lease and someone
        // else has it), it stays too, and the rename is not acknowledged.
        let removed = self.remove_locked(from, lease.token).await.map_err(|e| {
            let detail = format!("copied to {to}, but the old name stays: {}", e.detail);
            e.with_detail(detail)
        })?;
        self.drop_copies(from, removed.holders, removed.stamp).await;
        Ok(())
    }

    /// Links `rec`'s copies under `to` and puts `rec` there (the decided
    /// step), holding `lease` on `from` and on `to`; the record it replaced,
    /// or `None` if `to` was made new (and is left locked). On failure, what
    /// was made here is undone.
    async fn move_record(
        &self,
        from: &str,
        to: &str,
        rec: &Record,
        lease: Lease,
        replace: bool,
    ) -> FsResult<Option<Record>> {
        for &h in &rec.holders {
            let link = Request::LinkData {
                from: from.to_string(),
                to: to.to_string(),
                stamp: rec.stamp,
            };
            if let Err(e) = self.call(h, link).await.and_then(expect_ok) {
                self.drop_copies(to, rec.holders.clone(), rec.stamp).await;
                return Err(e);
            }
        }
        let mut tries = 0;
        let placed = loop {
            match self.create_name(to, rec.clone(), Some(lease)).await {
                Ok(_) => return Ok(None),
                Err(e) if e.code == Errno::EEXIST && replace => {
                    match self.replace_locked(to, rec, lease).await {
                        // Unlinked since its name was found taken: the name
                        // may be free now.
                        Err(e)
                            if e.code == Errno::ENOENT
                                && !Client::owner_lost(&e)
                                && tries < CLAIM_TRIES =>
                        {
                            tries += 1;
                        }
                        replaced => break replaced,
                    }
                }
                Err(e) => break Err(e),
            }
        };
        // A step whose answer was lost may have been applied: its links stay.
        if placed.as_ref().is_err_and(|e| !is_unreachable(e)) {
            self.drop_copies(to, rec.holders.clone(), rec.stamp).await;
        }
        placed.map(Some)
    }

    /// Locks the existing file `to` with `lease` and puts `rec` in its
    /// place; answers the record replaced.
    async fn replace_locked(&self, to: &str, rec: &Record, lease: Lease) -> FsResult<Record> {
        self.lock_created(to, lease).await?;
        let replace = Request::ReplaceLocked {
            path: to.to_string(),
            token: lease.token,
            record: rec.clone(),
        };
        match self.meta(to, replace).await {
            Ok(Response::Committed { replaced, .. }) => Ok(replaced),
            Ok(other) => Err(unexpected(other)),
            Err(e) => {
                let _ = self.unlock(to, lease.token).await;
                Err(e)
            }
        }
    }

    async fn rename_dir(&self, from: &str, to: &str, replace: bool) -> FsResult<()> {
        match self.mkdir(to).await {
            Ok(()) => {}
            Err(e) if e.code == Errno::EEXIST && replace => {
                // POSIX: a directory may replace an empty directory.
                if self.stat(to).await?.kind != Kind::Dir {
                    return Err(FsError::new(Errno::ENOTDIR, to));
                }
                if !self.readdir_page(to, None, 1).await?.0.is_empty() {
                    return Err(FsError::new(Errno::ENOTEMPTY, to));
                }
            }
            Err(e) => return Err(e),
        }
        for e in self.readdir(from).await? {
            self.rename(&join(from, &e.name), &join(to, &e.name))
                .await?;
        }
        self.rmdir(from).await
    }

    fn new_file_target(&self, path: &str, hint: Option<NodeId>) -> NodeId {
        hint.unwrap_or_else(|| {
            let seq = self.inner.new_files.fetch_add(1, Ordering::Relaxed);
            self.inner
                .placement
                .choose(path, self.inner.me, self.node_count(), seq)
        })
    }

    /// Creates a new empty file (`EEXIST` if the name is taken) without
    /// opening it, like `open(O_CREAT|O_EXCL)` then `close`. An empty file has
    /// no stored data, so this costs two metadata inserts and nothing else.
    pub async fn create_empty(&self, path: &str) -> FsResult<Record> {
        let path = normalise(path)?;
        let record = Record::new(Kind::File, 0o644, now_ns());
        Ok(self.create_name(&path, record, None).await?.1)
    }

    /// A new lease: a fresh token (which also stamps the version it writes).
    fn new_lease(&self) -> Lease {
        Lease {
            token: rand::random::<u64>() | 1,
            ms: self.inner.lease_ms,
        }
    }

    /// Renews `lease` on `path` in the background until the guard is dropped.
    fn keep_lease(&self, path: &str, lease: Lease) -> LeaseGuard {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return LeaseGuard(None);
        };
        let (client, path) = (self.clone(), path.to_string());
        let every = Duration::from_millis(u64::from(lease.ms) / 3);
        let task = rt.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let renew = Request::Renew {
                    path: path.clone(),
                    lease,
                };
                if let Err(e) = client.meta(&path, renew).await {
                    tracing::warn!("renewing the write lock: {e}");
                    if e.code == Errno::EBUSY {
                        return;
                    }
                }
            }
        });
        LeaseGuard(Some(task.abort_handle()))
    }

    /// Creates a new file (`EEXIST` if the name is taken) and opens it for
    /// writing. Its data lands on this node unless a hint or the placement
    /// policy names another.
    pub async fn create(&self, path: &str) -> FsResult<Writer> {
        self.create_with_mode(path, 0o644).await
    }

    /// `create` of a file whose permission bits are `mode`: set by the same
    /// request that makes the name.
    pub async fn create_with_mode(&self, path: &str, mode: u32) -> FsResult<Writer> {
        let path = normalise(path)?;
        if let Some(w) = self.unclaimed_writer(&path, mode)? {
            return Ok(w);
        }
        let lease = self.new_lease();
        let record = Record::new(Kind::File, mode & 0o7777, now_ns());
        let (hint, rec) = self.create_name(&path, record, Some(lease)).await?;
        let target = self.new_file_target(&path, hint);
        let copies = self.inner.copies.of(rec.copies);
        self.writer(path, lease, (target, copies), None).await
    }

    /// A writer of a new file in a held directory, named to no daemon
    /// until it is closed (`None` where the directory is not held).
    fn unclaimed_writer(&self, path: &str, mode: u32) -> FsResult<Option<Writer>> {
        let (parent, name) = split(path)?;
        let Some(held) = self.inner.held.get(parent) else {
            return Ok(None);
        };
        let lease = Lease {
            token: held.stamp,
            ms: self.inner.lease_ms,
        };
        let unclaimed = match held.make(name, mode & 0o7777, lease) {
            None => return Err(FsError::new(Errno::EEXIST, path)),
            Some(None) => return Ok(None),
            Some(Some(u)) => u,
        };
        let (spare, low) = held.spare();
        if low {
            self.make_spares(parent, held.clone());
        }
        let made = spare.map_or_else(|| self.inner.store.shared_file(&held.next_spare()), Ok);
        let (tmp, file) = match made {
            Ok(made) => made,
            Err(e) => {
                held.settled(name, false);
                return Err(e);
            }
        };
        Ok(Some(Writer {
            client: self.clone(),
            path: path.to_string(),
            lease,
            target: self.inner.me,
            copies: self.inner.copies.in_dir(parent, Instant::now()),
            replacing: None,
            tmp,
            file: Some(file),
            may_follow: false,
            follower: None,
            summer: Some(Summer::default()),
            closed: false,
            _renewal: LeaseGuard(None),
            unclaimed: Some(unclaimed),
        }))
    }

    /// Queues `later` for the publisher task (started if it is not running):
    /// files closed together are published together, their requests
    /// sharing frames and wake-ups.
    fn publish_later(&self, later: Later) {
        let mut queue = self.inner.to_publish.lock().expect("publish queue");
        queue.0.push(later);
        if std::mem::replace(&mut queue.1, true) {
            return;
        }
        let client = self.clone();
        tokio::spawn(async move {
            loop {
                let batch = {
                    let mut queue = client.inner.to_publish.lock().expect("publish queue");
                    if queue.0.is_empty() {
                        queue.1 = false;
                        return;
                    }
                    std::mem::take(&mut queue.0)
                };
                let client = &client;
                join_all(batch.into_iter().map(|later| async move {
                    let published = client.publish_held(&later.out, later.held, Publishing::Lazy);
                    if let Err(e) = published.await {
                        tracing::warn!("{}: publishing after its close: {e}", later.out.path);
                    }
                }))
                .await;
            }
        });
    }

    /// Makes empty files ahead for `held`'s creates, off their path.
    fn make_spares(&self, dir: &str, held: Arc<crate::held_dirs::Held>) {
        let (client, dir) = (self.clone(), dir.to_string());
        tokio::task::spawn_blocking(move || {
            let store = &client.inner.store;
            let made = (0..held.wanted())
                .map_while(|_| store.shared_file(&held.next_spare()).ok())
                .collect();
            held.made_ahead(made);
            // Given back meanwhile: no create will take them.
            if !client.inner.held.holds(&dir, &held) {
                client.discard_spares(&held);
            }
        });
    }

    /// Removes the empty files `held` no longer needs, and their directory.
    fn discard_spares(&self, held: &crate::held_dirs::Held) {
        let store = &self.inner.store;
        held.left().iter().for_each(|f| store.discard(f));
        store.remove_shared(&held.tmp);
    }

    /// Publishes `out` as a new file (or the next version of a file made
    /// meanwhile), trying again while a daemon cannot be reached.
    async fn publish_new(&self, out: &Output, how: Publishing) -> FsResult<Record> {
        let mut tries = 0;
        loop {
            match PUBLISHING.scope(how, self.commit_named(out)).await {
                Err(e) if is_unreachable(&e) && tries < PUBLISH_TRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                other => return other,
            }
        }
    }

    /// Publishes `out`, a new file of `held`, and settles its name there;
    /// its bytes go if it could not be published.
    async fn publish_held(
        &self,
        out: &Output,
        held: Option<Arc<crate::held_dirs::Held>>,
        how: Publishing,
    ) -> FsResult<Record> {
        let published = self.publish_new(out, how).await;
        if published.is_err() {
            self.discard(out);
        }
        if let (Some(held), Ok((_, name))) = (held, split(&out.path)) {
            held.settled(name, published.is_ok());
        }
        published
    }

    /// Opens an existing file for writing, taking its write lock (`EBUSY` if
    /// another writer has it). Unless `truncate`, the current contents are
    /// made local first and writing continues at their end. On close this
    /// node becomes the file's holder.
    pub async fn open_write(&self, path: &str, truncate: bool) -> FsResult<Writer> {
        let path = normalise(path)?;
        let lease = self.new_lease();
        let rec = self.lock(&path, lease).await?;
        self.open_locked(path, lease, rec, truncate).await
    }

    async fn open_locked(
        &self,
        path: String,
        lease: Lease,
        rec: Record,
        truncate: bool,
    ) -> FsResult<Writer> {
        let me = self.inner.me;
        let copies = self.inner.copies.of(rec.copies);
        let mut w = self
            .writer(path, lease, (me, copies), Some(rec.clone()))
            .await?;
        if !truncate && rec.size > 0 {
            if let Err(e) = self.copy_current(&w.path, &rec, &w.tmp).await {
                w.abort().await;
                return Err(e);
            }
            w.file()
                .seek(io::SeekFrom::End(0))
                .map_err(|e| FsError::io(w.path.clone(), &e))?;
        }
        Ok(w)
    }

    /// Takes the write lock of normalised `path` by compare-and-swap.
    async fn lock(&self, path: &str, lease: Lease) -> FsResult<Record> {
        let req = Request::Lock {
            path: path.to_string(),
            lease,
        };
        expect_record(self.meta(path, req).await?)
    }

    /// `lock` of a name that exists: a concurrent creator may have added the
    /// name and not yet its record (then holding its lock: `EBUSY`).
    async fn lock_created(&self, path: &str, lease: Lease) -> FsResult<Record> {
        let mut tries = 0;
        loop {
            match self.lock(path, lease).await {
                // (A record lost with its owner never comes.)
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) && tries < 200 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                other => return other,
            }
        }
    }

    /// Releases a write lock this client took, leaving the file unchanged.
    async fn unlock(&self, path: &str, token: u64) -> FsResult<Response> {
        let req = Request::Unlock {
            path: path.to_string(),
            token: Some(token),
        };
        self.meta(path, req).await
    }

    /// Breaks the write lock of `path`, whoever holds it (an operator's
    /// remedy for a writer known to be gone; its lease would end it too).
    pub async fn break_lock(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        let req = Request::Unlock {
            path: path.clone(),
            token: None,
        };
        expect_ok(self.meta(&path, req).await?)
    }

    /// A writer holding `lease` on `path`, writing into a new temporary file;
    /// the lock is released if it cannot be made.
    async fn writer(
        &self,
        path: String,
        lease: Lease,
        (target, copies): (NodeId, u32),
        replacing: Option<Record>,
    ) -> FsResult<Writer> {
        let renewal = self.keep_lease(&path, lease);
        let (tmp, file) = match self.inner.store.temp_file() {
            Ok(t) => t,
            Err(e) => {
                let _ = self.unlock(&path, lease.token).await;
                return Err(e);
            }
        };
        Ok(Writer {
            client: self.clone(),
            path,
            lease,
            target,
            copies,
            replacing,
            tmp,
            file: Some(file),
            may_follow: true,
            follower: None,
            summer: Some(Summer::default()),
            closed: false,
            _renewal: renewal,
            unclaimed: None,
        })
    }

    /// The copy of a file written here to its first replica, made while it
    /// is written, where that node is on this host.
    fn follower(&self, tmp: &Path, target: NodeId, copies: u32) -> Option<Follower> {
        let me = self.inner.me;
        if copies == 1 || target != me || self.inner.diskless {
            return None;
        }
        let first = replica_set(me, self.inner.peers.len(), 2)
            .into_iter()
            .nth(1)?;
        if !self.same_host(first) {
            return None;
        }
        Follower::start(first, &self.inner.dirs[first as usize], tmp)
            .inspect_err(|e| tracing::debug!("no replica copy while writing: {e}"))
            .ok()
    }

    /// Copies the current contents of `path` into `tmp`, from this node's
    /// store or from a holder.
    async fn copy_current(&self, path: &str, rec: &Record, tmp: &Path) -> FsResult<()> {
        let dest = std::fs::OpenOptions::new()
            .write(true)
            .open(tmp)
            .map_err(|e| FsError::io(path, &e))?;
        // Made local (and checked) first: a write goes on from the bytes
        // that were written.
        let local = self.make_local(path, rec).await?;
        File::open(&local.path)
            .and_then(|from| copy::whole(&from, &dest))
            .map(drop)
            .map_err(|e| FsError::io(path, &e))
    }

    /// The holders of `rec` that another node can fetch from (this node's
    /// copy, if it had one, is gone).
    fn remote_holders(&self, rec: &Record) -> Vec<NodeId> {
        let me = self.inner.me;
        let diskless = self.inner.diskless;
        rec.holders
            .iter()
            .copied()
            .filter(|&h| diskless || h != me)
            .collect()
    }

    /// Fetches the current version of `path` (as `rec` describes it) from the
    /// first reachable holder into `dest`. A large file comes over several
    /// streams at once: one stream's receiver, copying into the page cache,
    /// is the bottleneck, not the network.
    /// Returns the holder it came from, and whether what it sent is the
    /// version (hashed as it came; a good copy keeps its chunks' hashes).
    async fn fetch_into(
        &self,
        path: &str,
        rec: &Record,
        dest: File,
    ) -> FsResult<(NodeId, Result<(), Mismatch>)> {
        let (client, path, rec) = (self.clone(), path.to_string(), rec.clone());
        let holders = self.remote_holders(&rec);
        tokio::task::spawn_blocking(move || {
            let mut last = FsError::new(Errno::EIO, &path).with_detail("no node holds the data");
            for h in holders {
                match client.fetch_parts(h, (&path, rec.stamp), rec.size, &dest) {
                    Ok(sent) => {
                        let verdict = sent
                            .and_then(|chunks| crate::verify::judge_copied(&dest, &chunks, &rec));
                        return Ok((h, verdict));
                    }
                    // Gone from its store (or replaced since `rec` was read:
                    // setting it aside then changes nothing).
                    Err(e) if e.code == Errno::ENOENT => return Ok((h, Err(Mismatch::Missing))),
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
        .await
        .map_err(blocking_failed)?
    }

    fn fetch_parts(
        &self,
        node: NodeId,
        (path, stamp): (&str, u64),
        size: u64,
        dest: &File,
    ) -> FsResult<Result<Chunks, Mismatch>> {
        // A holder on this host is copied from directly, without a socket,
        // its bytes hashed as they pass.
        if self.same_host(node) {
            let copied =
                self.with_transfer(node, |st| transfer::copy_local(st, (path, stamp), dest))?;
            if let Some(chunks) = copied {
                return Ok(Ok(chunks));
            }
        }
        let streams = if size >= PARALLEL_FETCH_MIN {
            FETCH_STREAMS
        } else {
            1
        };
        // Parts start at chunks, each hashed by its stream as it lands.
        let part = size.div_ceil(streams).next_multiple_of(sums::CHUNK as u64);
        let results: Vec<FsResult<(u64, Vec<u64>)>> = std::thread::scope(|s| {
            let parts: Vec<_> = (0..streams)
                .map(|k| {
                    // The last part asks for everything left, however long.
                    let len = if k + 1 == streams { u64::MAX } else { part };
                    s.spawn(move || {
                        let mut trail = sums::Trailing::new(dest, k * part);
                        let size = self.with_transfer(node, |st| {
                            let landed = |at| trail.landed(at);
                            transfer::fetch(st, (path, stamp), (k * part, len), dest, landed)
                        })?;
                        let sums = trail.finish().map_err(|e| FsError::io(path, &e))?;
                        Ok((size, sums))
                    })
                })
                .collect();
            parts
                .into_iter()
                .map(|p| {
                    p.join()
                        .unwrap_or_else(|_| Err(FsError::new(Errno::EIO, path)))
                })
                .collect()
        });
        let mut chunks = Chunks {
            size,
            sums: Vec::new(),
        };
        for r in results {
            let (n, sums) = r?;
            if n != size {
                return Ok(Err(Mismatch::Size(n)));
            }
            chunks.sums.extend(sums);
        }
        Ok(Ok(chunks))
    }

    /// Runs `f` on an idle authenticated transfer stream to `node`, returning
    /// the stream to the pool unless the connection failed.
    fn with_transfer<T>(
        &self,
        node: NodeId,
        f: impl FnOnce(&mut TcpStream) -> io::Result<FsResult<T>>,
    ) -> FsResult<T> {
        let pool = &self.inner.transfers[node as usize];
        let peer = &self.inner.peers[node as usize];
        // A stream the daemon closed while it sat idle (the daemon was
        // restarted) is dropped, not taken for the daemon being down.
        let pooled = std::iter::from_fn(|| pool.lock().expect("transfer pool").pop())
            .find(|s| !transfer::closed_by_peer(s));
        let mut stream = match pooled {
            Some(s) => s,
            None => peer.endpoint.open_blocking(Channel::Transfer)?,
        };
        match f(&mut stream) {
            Ok(result) => {
                pool.lock().expect("transfer pool").push(stream);
                result
            }
            Err(e) => Err(transfer::this_side(&e).unwrap_or_else(|| peer.endpoint.unreachable(e))),
        }
    }

    /// Pushes `src` to `node` as copy `stamp` of `path`, kept there only
    /// if it holds what `sum` says.
    fn push_to(
        &self,
        node: NodeId,
        src: &Path,
        (path, stamp): (&str, u64),
        sum: Option<Sum>,
    ) -> FsResult<u64> {
        self.with_transfer(node, |s| transfer::push(s, src, (path, stamp), sum))
    }

    /// Makes the current data of `path` present in this node's store and
    /// returns where it is, for handing to a program. A remote file is
    /// fetched whole and registered as a cached replica.
    pub async fn local_path(&self, path: &str) -> FsResult<PathBuf> {
        self.local_copy(path).await.map(|c| c.path)
    }

    /// `local_path`, also saying how big the file is and whether it was
    /// fetched from another node.
    pub async fn local_copy(&self, path: &str) -> FsResult<LocalCopy> {
        self.local_copy_from(path, None).await
    }

    /// `local_copy` starting from `known`, a record of `path` read shortly
    /// before (by whoever placed the task that reads it): the owner is
    /// asked only if it no longer leads to the bytes.
    pub async fn local_copy_from(&self, path: &str, known: Option<&Record>) -> FsResult<LocalCopy> {
        let path = normalise(path)?;
        self.published(&path).await;
        let mut rec = match known {
            // Seen while a version was being written (one made again, say)
            // or before any was closed: its empty last version may be gone
            // by now.
            Some(rec) if rec.lock.is_none() && rec.version > 0 => rec.clone(),
            _ => self.stat(&path).await?,
        };
        let mut attempts = 0;
        loop {
            match self.make_local(&path, &rec).await {
                // Rewritten while we fetched it (the old copies are dropped
                // once the new version is published), or its copies moved
                // since `known` was read: fetch what is there now.
                Err(e) if attempts < 3 => {
                    let now = self.stat(&path).await?;
                    if now == rec {
                        return Err(e);
                    }
                    tracing::debug!("{path} changed while fetched ({e}); again");
                    rec = now;
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    /// Waits until normalised `path`, if a new file of a held directory,
    /// is published: it is read once it is.
    pub(crate) async fn published(&self, path: &str) {
        if let Some((held, name)) = self.held_parent(path) {
            if matches!(held.known(name), Some(Known::Pending(_))) {
                held.flushed().await;
            }
        }
    }

    async fn make_local(&self, path: &str, rec: &Record) -> FsResult<LocalCopy> {
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        let me = self.inner.me;
        let mut local = LocalCopy {
            path: self.inner.store.data_path(path, rec.stamp),
            size: rec.size,
            stamp: rec.stamp,
            sum: rec.sum,
            fetched: true,
        };
        // Copies found bad (set aside), and the holders left to read from.
        let mut bad = Vec::new();
        let mut rec = rec.clone();
        if self.holds(&rec) {
            let verdict = match local.path.exists() {
                true => self.check_local(path, &rec, &local.path).await?,
                false => Err(Mismatch::Missing),
            };
            match verdict {
                Ok(()) => {
                    local.fetched = false;
                    return Ok(local);
                }
                Err(why) => {
                    self.set_aside(path, &rec, me, why).await;
                    rec.holders.retain(|&h| h != me);
                    bad.push((me, why));
                }
            }
        }
        // One fetch of a version per node: a client of this node fetching
        // it already is waited for, and its copy used. (A diskless client's
        // scratch is its own, and it stages every read.)
        let fetching = match self.inner.diskless {
            true => None,
            false => {
                let (store, p, stamp) = (self.inner.store.clone(), path.to_string(), rec.stamp);
                Some(blocking(move || store.lock_fetch(&p, stamp)).await?)
            }
        };
        if fetching.is_some() && local.path.exists() && bad.is_empty() {
            local.fetched = false;
            return Ok(local);
        }
        // An empty version has no bytes to fetch (a file never closed has no
        // holder: its last closed version is empty).
        if rec.size == 0 {
            self.inner.store.install_empty(path, rec.stamp)?;
        } else {
            loop {
                if rec.holders.is_empty() {
                    return Err(crate::verify::no_good_copy(path, &bad));
                }
                let (tmp, file) = self.inner.store.temp_file()?;
                let (from, sent) = match self.fetch_into(path, &rec, file).await {
                    Ok(fetched) => fetched,
                    Err(e) => {
                        self.inner.store.discard(&tmp);
                        return Err(e);
                    }
                };
                if let Err(why) = sent {
                    self.inner.store.discard(&tmp);
                    self.set_aside(path, &rec, from, why).await;
                    rec.holders.retain(|&h| h != from);
                    bad.push((from, why));
                    continue;
                }
                self.inner.store.install(&tmp, path, rec.stamp)?;
                self.checked_here(path, &rec);
                break;
            }
        }
        if self.inner.diskless {
            // A staged copy, not a replica the cluster can serve.
            return Ok(local);
        }
        let cached = Request::AddHolder {
            path: path.to_string(),
            version: rec.version,
            node: me,
        };
        expect_ok(self.meta(path, cached).await?)?;
        if !bad.is_empty() {
            // Back to as many copies as the version keeps, from this good one.
            if let Ok(now) = self.stat(path).await {
                self.replicate_rest(path, &now);
            }
        }
        Ok(local)
    }

    pub async fn open_read(&self, path: &str) -> FsResult<File> {
        let local = self.local_path(path).await?;
        File::open(&local).map_err(|e| FsError::io(path, &e))
    }

    /// Reads a whole file.
    pub async fn get(&self, path: &str) -> FsResult<Vec<u8>> {
        let local = self.local_path(path).await?;
        std::fs::read(&local).map_err(|e| FsError::io(path, &e))
    }

    /// Opens `path` for writing from empty, creating it if it does not exist.
    pub async fn create_or_truncate(&self, path: &str) -> FsResult<Writer> {
        match self.create(path).await {
            Err(e) if e.code == Errno::EEXIST => {
                let path = normalise(path)?;
                let lease = self.new_lease();
                let rec = self.lock_created(&path, lease).await?;
                self.open_locked(path, lease, rec, true).await
            }
            other => other,
        }
    }

    /// Writes a whole file, creating it (and its missing parent
    /// directories) or replacing its contents: written in a private place,
    /// then published as `commit` does (a new file in one request where one
    /// daemon keeps its name and record).
    pub async fn put(&self, path: &str, data: &[u8]) -> FsResult<Record> {
        let out = self.output(path)?;
        let published = match std::fs::write(&out.local, data) {
            Ok(()) => self.commit(&out).await,
            Err(e) => Err(FsError::io(&out.path, &e)),
        };
        if published.is_err() {
            self.discard(&out);
        }
        published
    }

    /// A private place in this node's store for a program to write `path`
    /// (the file name is kept), published by `commit` or removed by
    /// `discard`. Nothing is visible, and no version is touched, before
    /// `commit` succeeds.
    pub fn output(&self, path: &str) -> FsResult<Output> {
        let path = normalise(path)?;
        let (_, name) = split(&path)?;
        let local = self.inner.store.private_file(name)?;
        Ok(Output {
            lease: self.new_lease(),
            path,
            local,
            mode: 0o644,
            written: None,
            made_by: None,
        })
    }

    /// Removes an output that will not be committed (its program failed).
    pub fn discard(&self, out: &Output) {
        self.inner.store.discard(&out.local);
    }

    /// Publishes the file a program wrote at `out.local` as the next version
    /// of `out.path`, creating the name (and missing parent directories) if
    /// needed. A new file goes where a
    /// placement hint or the placement policy says (its bytes are moved
    /// there); a rewritten file, like `open_write`, stays on this node. If
    /// this fails, the previous version is kept, readable and unlocked.
    pub async fn commit(&self, out: &Output) -> FsResult<Record> {
        let content = output_content(out).await?;
        if let Some(new) = self.prepare_new(out, content, false).await? {
            let answer = self.meta(&out.path, new.request(out)).await;
            if let Some(record) = self.finish_new(out, new, answer).await? {
                return Ok(record);
            }
        }
        self.commit_claimed(out, content).await
    }

    /// `commit` of a new file whose bytes were written where no one saw
    /// them (in a held directory): they are stored first, then named with
    /// their record already committed, so a reader never finds the name
    /// without its bytes, even where two daemons keep name and record.
    async fn commit_named(&self, out: &Output) -> FsResult<Record> {
        let content = output_content(out).await?;
        if let Some(new) = self.prepare_new(out, content, true).await? {
            let named = self.create_name(&out.path, new.record.clone(), None).await;
            let answer = named.map(|(hint, record)| Response::Created { record, hint });
            if let Some(record) = self.finish_new(out, new, answer).await? {
                return Ok(record);
            }
        }
        self.commit_claimed(out, content).await
    }

    /// `commit` of many outputs (one program's) as one batch: the new files
    /// one daemon keeps entirely go to it as one `Batch` (one transaction,
    /// one commit to disk), the rest as `commit` does, all at once. One
    /// result per output, in order.
    pub async fn commit_all(&self, outs: &[Output]) -> Vec<FsResult<Record>> {
        let prepared = join_all(outs.iter().map(|out| async move {
            let content = output_content(out).await?;
            Ok((content, self.prepare_new(out, content, false).await?))
        }))
        .await;
        let mut batches: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
        for (i, p) in prepared.iter().enumerate() {
            if let Ok((_, Some(_))) = p {
                batches
                    .entry(self.owner(&outs[i].path))
                    .or_default()
                    .push(i);
            }
        }
        let mut answers: Vec<Option<FsResult<Response>>> = outs.iter().map(|_| None).collect();
        let sent = join_all(batches.into_values().map(|batch| {
            let ops = batch
                .iter()
                .filter_map(|&i| match &prepared[i] {
                    Ok((_, Some(new))) => Some(new.request(&outs[i])),
                    _ => None,
                })
                .collect();
            let first = outs[batch[0]].path.as_str();
            async move { (self.meta(first, Request::Batch { ops }).await, batch) }
        }))
        .await;
        for (answer, batch) in sent {
            let n = batch.len();
            let each: Vec<FsResult<Response>> = match answer {
                Ok(Response::Batch(rs)) if rs.len() == n => rs
                    .into_iter()
                    .map(|r| match r {
                        Response::Err(e) => Err(e),
                        r => Ok(r),
                    })
                    .collect(),
                Ok(r) => vec![Err(unexpected(r)); n],
                Err(e) => vec![Err(e); n],
            };
            for (i, a) in batch.into_iter().zip(each) {
                answers[i] = Some(a);
            }
        }
        join_all(outs.iter().zip(prepared).zip(answers).map(
            |((out, prepared), answer)| async move {
                let (content, new) = prepared?;
                if let (Some(new), Some(answer)) = (new, answer) {
                    if let Some(record) = self.finish_new(out, new, answer).await? {
                        return Ok(record);
                    }
                }
                self.commit_claimed(out, content).await
            },
        ))
        .await
    }

    /// `commit` the usual way: claim the name (making missing parents),
    /// then store and publish the bytes.
    async fn commit_claimed(&self, out: &Output, content: Content) -> FsResult<Record> {
        let path = out.path.as_str();
        let lease = out.lease;
        let claimed = match self.claim(path, lease, out.mode).await {
            Err(e) => {
                self.make_parents(path, e).await?;
                self.claim(path, lease, out.mode).await?
            }
            Ok(c) => c,
        };
        let target = claimed.target.unwrap_or(self.inner.me);
        let replacing = claimed.replacing;
        let _renewal = self.keep_lease(path, lease);
        let version = NewVersion {
            token: lease.token,
            content,
            made_by: out.made_by.as_deref(),
        };
        self.finish_write(
            &out.local,
            path,
            version,
            (target, claimed.copies, &[]),
            replacing.as_ref(),
        )
        .await
    }

    /// The first half of `commit` of a new file in one round trip, where it
    /// can be: the client places new files on its own node and one daemon
    /// keeps both the parent's entries and the file's record. The bytes are
    /// stored, and the `CreateFile` that makes name and record at once,
    /// committed, is returned to be sent. `None` when the usual way must be
    /// taken.
    /// With `two_daemons`, also where two daemons keep name and record
    /// (the request is then made by `create_name`).
    async fn prepare_new(
        &self,
        out: &Output,
        content: Content,
        two_daemons: bool,
    ) -> FsResult<Option<NewFile>> {
        let (path, token) = (out.path.as_str(), out.lease.token);
        let parent = split(path)?.0;
        let me = self.inner.me;
        if self.inner.diskless
            || self.inner.placement != Placement::Local
            || (self.owner(parent) != self.owner(path) && !two_daemons)
        {
            return Ok(None);
        }
        let store = &self.inner.store;
        let copies = self.inner.copies.in_dir(parent, Instant::now());
        let replicas = self
            .push_replicas(
                &out.local,
                (path, token, Some(content.sum)),
                me,
                &[],
                before_publishing(copies),
            )
            .await;
        let installed = match content.size {
            0 => store.install_empty(path, token),
            _ => store.install(&out.local, path, token),
        };
        if let Err(e) = installed {
            store.discard(&out.local);
            self.drop_copies(path, replicas, token).await;
            return Err(e);
        }
        let holders = std::iter::once(me).chain(replicas.iter().copied());
        Ok(Some(NewFile {
            record: out.first_version(content.size, Some(content.sum), holders.collect()),
            parents: self.kept_with(path),
            replicas,
        }))
    }

    /// The second half, given the daemon's `answer`: the record, or `None`
    /// (the bytes back in the output's place) when the usual way must be
    /// taken: the name exists, or a placement hint puts the data elsewhere.
    /// Missing parents the daemon does not keep are made, and the request
    /// sent again.
    async fn finish_new(
        &self,
        out: &Output,
        new: NewFile,
        mut answer: FsResult<Response>,
    ) -> FsResult<Option<Record>> {
        let (path, token) = (out.path.as_str(), out.lease.token);
        let (parent, _) = split(path)?;
        if matches!(&answer, Err(e) if e.code == Errno::ENOENT)
            && self.mkdir_all(parent).await.is_ok()
        {
            answer = self.meta(path, new.request(out)).await;
        }
        // Stored as a name of the store's empty file: the output's file stays.
        let empty = new.record.size == 0;
        let NewFile { replicas, .. } = new;
        let store = &self.inner.store;
        // The bytes back in the output's place (an empty file never left it).
        let uninstall = || match empty {
            true => store.drop_copy(path, token),
            false => store.uninstall(path, token, &out.local),
        };
        let published = match answer {
            Ok(Response::Created { record, .. }) => {
                self.inner
                    .copies
                    .learn(parent, record.copies, Instant::now());
                self.checked_here(path, &record);
                self.replicate_rest(path, &record);
                Ok(Some(record))
            }
            Ok(Response::Hint(_)) => {
                self.drop_copies(path, replicas, token).await;
                uninstall().map(|()| None)
            }
            Err(e) if matches!(e.code, Errno::EEXIST | Errno::ENOENT) => {
                // Made by this very request, sent again after its answer
                // was lost (to the daemon acting for the owner, or the
                // owner back)?
                let made = match e.code {
                    Errno::EEXIST => self.made_by(path, token).await,
                    _ => None,
                };
                match made {
                    Some(rec) => {
                        self.replicate_rest(path, &rec);
                        Ok(Some(rec))
                    }
                    None => {
                        self.drop_copies(path, replicas, token).await;
                        uninstall().map(|()| None)
                    }
                }
            }
            other => {
                let failed = match other {
                    Err(e) => e,
                    Ok(r) => unexpected(r),
                };
                // The answer may be what was lost: the record says whether
                // the file was made; the copy goes only if it was not, and
                // stays if that cannot be learned (as after a commit).
                match self.stat(path).await {
                    Ok(rec) if rec.stamp == token => Ok(Some(rec)),
                    Err(e) if e.code != Errno::ENOENT => Err(failed),
                    _ => {
                        self.drop_copies(path, replicas, token).await;
                        let _ = uninstall();
                        Err(failed)
                    }
                }
            }
        };
        if empty && matches!(published, Ok(Some(_))) {
            self.spare_again(&out.local, path);
        }
        published
    }

    /// The record of `path` if its current version is the one write
    /// `token` made.
    async fn made_by(&self, path: &str, token: u64) -> Option<Record> {
        self.stat(path).await.ok().filter(|rec| rec.stamp == token)
    }

    /// The empty file a new empty file was written in, published without
    /// it (`Store::install_empty`): a held directory takes it back for a
    /// later create (which then makes no inode), else it goes.
    fn spare_again(&self, file: &Path, path: &str) {
        let store = &self.inner.store;
        let held = self
            .held_parent(path)
            .filter(|(held, _)| file.parent() == Some(held.tmp.as_path()));
        let reopened = held.and_then(|(held, _)| {
            let file = File::options().write(true).open(file).ok()?;
            Some((held, file))
        });
        let Some((held, reopened)) = reopened else {
            return store.discard(file);
        };
        if !held.take_back((file.to_path_buf(), reopened)) {
            return store.discard(file);
        }
        // Given back meanwhile: no create will take it.
        let dir = split(path).map_or("/", |(dir, _)| dir);
        if !self.inner.held.holds(dir, &held) {
            self.discard_spares(&held);
        }
    }

    /// The directories above `path` (outermost first) whose entries and
    /// records the daemon keeping `path` keeps too: it can make those
    /// itself if they are missing.
    fn kept_with(&self, path: &str) -> Vec<String> {
        let owner = self.owner(path);
        let mut dirs = Vec::new();
        let mut dir = split(path).map_or("/", |(p, _)| p);
        while dir != "/" {
            let above = split(dir).map_or("/", |(p, _)| p);
            if self.owner(dir) != owner || self.owner(above) != owner {
                break;
            }
            dirs.push(dir.to_string());
            dir = above;
        }
        dirs.reverse();
        dirs
    }

    /// After creating `path` failed with `failed`: makes its parent
    /// directories if that was why (the caller then tries again), else
    /// gives `failed` back. Parents are only made when a name is missing,
    /// so the usual case (they exist) costs no round trip.
    async fn make_parents(&self, path: &str, failed: FsError) -> FsResult<()> {
        if failed.code != Errno::ENOENT {
            return Err(failed);
        }
        let path = normalise(path)?;
        self.mkdir_all(split(&path)?.0).await
    }

    /// Takes the name `path` for a write holding `lease`: creates it (and
    /// says where its data goes), or locks the existing file (and returns
    /// its record); with the copies its versions get.
    async fn claim(&self, path: &str, lease: Lease, mode: u32) -> FsResult<Claim> {
        let record = Record::new(Kind::File, mode, now_ns());
        let new = |hint| Some(self.new_file_target(path, hint));
        let mut tries = 0;
        let (target, replacing) = loop {
            let created = match self.create_name(path, record.clone(), Some(lease)).await {
                Err(e) if e.code == Errno::EEXIST => None,
                made => Some(made?),
            };
            let Some((hint, rec)) = created else {
                match self.lock_created(path, lease).await {
                    // Named in its parent, its record lost with its owner
                    // (taken over): made again, as new, where its keys are
                    // now (unless another writer just did: then locked as
                    // any).
                    Err(e) if Client::owner_lost(&e) => {
                        match self.record_again(path, record, Some(lease)).await {
                            Ok((hint, rec)) => break (new(hint), rec),
                            Err(e) if e.code == Errno::EEXIST => {
                                break (None, self.lock_created(path, lease).await?)
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    // Unlinked since its name was found taken: the name may
                    // be free now (a name a crash left without its record
                    // stays taken, and this fails).
                    Err(e) if e.code == Errno::ENOENT && tries < CLAIM_TRIES => {
                        tries += 1;
                        continue;
                    }
                    locked => break (None, locked?),
                }
            };
            break (new(hint), rec);
        };
        Ok(Claim {
            target,
            copies: self.inner.copies.of(replacing.copies),
            replacing: target.is_none().then_some(replacing),
        })
    }

    /// Copies host file `source` in as the next version of `path`, creating
    /// the name if needed, its bytes read by the node the placement policy
    /// picks (also for a file that exists) straight from `source`: staging
    /// in from a file system every node's host sees, without the bytes
    /// passing through this client. If this fails, the previous version is
    /// kept, readable and unlocked.
    pub async fn import(&self, path: &str, source: &Path) -> FsResult<Record> {
        let path = normalise(path)?;
        let lease = self.new_lease();
        let claimed = self.claim(&path, lease, 0o644).await?;
        let replacing = claimed.replacing;
        let target = claimed
            .target
            .unwrap_or_else(|| self.new_file_target(&path, None));
        let _renewal = self.keep_lease(&path, lease);
        // The replicas' nodes read the source too, at the same time.
        let copies = replica_set(target, self.inner.peers.len(), claimed.copies);
        let imports: Vec<_> = copies
            .iter()
            .map(|&node| {
                let (c, p, src) = (self.clone(), path.clone(), source.to_path_buf());
                tokio::spawn(async move { c.import_on(node, &p, lease.token, &src).await })
            })
            .collect();
        let mut copied = Vec::new();
        for i in imports {
            copied.push(i.await.map_err(blocking_failed).and_then(|r| r));
        }
        // A replica counts if it holds what the first copy does (the
        // source may change while they read it).
        let first = copied[0].as_ref().ok().copied();
        let (mut made, mut differ) = (Vec::new(), Vec::new());
        for (&node, c) in copies.iter().zip(&copied) {
            match c {
                Ok(c) if Some(*c) == first => made.push(node),
                Ok(_) => differ.push(node),
                Err(_) => {}
            }
        }
        match copied.swap_remove(0) {
            Ok(content) => {
                if !differ.is_empty() {
                    tracing::warn!("{path}: changed while copied in; copies on {differ:?} dropped");
                    self.drop_copies(&path, differ, lease.token).await;
                }
                let replacing = replacing.as_ref();
                let version = NewVersion::plain(lease.token, content);
                self.publish(&path, version, made, replacing).await
            }
            Err(e) => {
                // Copied in or not, an unpublished stamp is not kept.
                self.drop_copies(&path, copies, lease.token).await;
                self.give_up(&path, lease.token, replacing.is_none()).await;
                Err(e)
            }
        }
    }

    /// Has node `node` copy host file `source` in as copy `stamp` of `path`
    /// (this client itself when it is that node's).
    async fn import_on(
        &self,
        node: NodeId,
        path: &str,
        stamp: u64,
        source: &Path,
    ) -> FsResult<Content> {
        if node == self.inner.me && !self.inner.diskless {
            let (store, p, src) = (
                self.inner.store.clone(),
                path.to_string(),
                source.to_path_buf(),
            );
            return blocking(move || store.import(&src, &p, stamp)).await;
        }
        let req = Request::ImportData {
            path: path.to_string(),
            stamp,
            source: source.to_path_buf(),
        };
        match self.call(node, req).await? {
            Response::Content { size, sum } => Ok(Content { size, sum }),
            other => Err(unexpected(other)),
        }
    }

    /// Copies file `path` out to host file `dest` by a node holding it (this
    /// one if it does): staging out to a file system every node's host
    /// sees, without the bytes passing through this client. Returns the
    /// bytes copied.
    pub async fn export(&self, path: &str, dest: &Path) -> FsResult<u64> {
        let path = normalise(path)?;
        let rec = self.stat(&path).await?;
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        if rec.size == 0 {
            return std::fs::write(dest, b"")
                .map(|()| 0)
                .map_err(|e| FsError::io(dest.display().to_string(), &e));
        }
        // This node's copy first; a holder whose copy is bad is set aside
        // and the next one asked.
        let me = self.inner.me;
        let mut holders = rec.holders.clone();
        if self.holds(&rec) {
            holders.retain(|&h| h != me);
            holders.insert(0, me);
        }
        let expect = (rec.size, rec.sum);
        let mut bad = Vec::new();
        for node in holders {
            let exported = if node == me && !self.inner.diskless {
                let (store, src, dst) =
                    (self.inner.store.clone(), path.clone(), dest.to_path_buf());
                blocking(move || store.export(&src, rec.stamp, &dst, expect)).await?
            } else {
                let req = Request::ExportData {
                    path: path.clone(),
                    stamp: rec.stamp,
                    dest: dest.to_path_buf(),
                    size: rec.size,
                    sum: rec.sum,
                };
                match self.call(node, req).await? {
                    Response::Size(n) => Ok(n),
                    Response::BadCopy(why) => Err(why),
                    other => return Err(unexpected(other)),
                }
            };
            match exported {
                Ok(n) => return Ok(n),
                Err(why) => {
                    self.set_aside(&path, &rec, node, why).await;
                    bad.push((node, why));
                }
            }
        }
        Err(crate::verify::no_good_copy(&path, &bad))
    }

    /// Stores `src` (holding `content`) as the version `token` of `path` on node
    /// `target` (and its replicas, besides nodes `made` that hold it
    /// already) and commits it, as the write holding lock `token`; a write
    /// whose bytes cannot be stored is given up.
    async fn finish_write(
        &self,
        src: &Path,
        path: &str,
        version: NewVersion<'_>,
        placing: (NodeId, u32, &[NodeId]),
        replacing: Option<&Record>,
    ) -> FsResult<Record> {
        let (token, content) = (version.token, version.content);
        let copies = match self.place_bytes(src, (path, token, content), placing).await {
            Ok(c) => c,
            Err(e) => {
                self.give_up(path, token, replacing.is_none()).await;
                return Err(e);
            }
        };
        self.publish(path, version, copies, replacing).await
    }

    /// Stores `src` as copy `stamp` of `path` on node `target` (moved here,
    /// pushed there; `src` is gone either way), and, of the `copies` - 1
    /// replicas, the first on the next node that takes it (all of them when
    /// `target` is another node: `src` is not kept), unless the nodes
    /// `made` hold it already. No other copy is touched. Returns the nodes
    /// holding the copy, `target` first.
    async fn place_bytes(
        &self,
        src: &Path,
        (path, stamp, content): (&str, u64, Content),
        (target, copies, made): (NodeId, u32, &[NodeId]),
    ) -> FsResult<Vec<NodeId>> {
        let sum = Some(content.sum);
        let here = target == self.inner.me && !self.inner.diskless;
        let wanted = match here {
            true => before_publishing(copies),
            false => copies - 1,
        };
        let wanted = wanted.saturating_sub(made.len() as u32);
        let pushed = self
            .push_replicas(src, (path, stamp, sum), target, made, wanted)
            .await;
        let replicas: Vec<NodeId> = made.iter().copied().chain(pushed).collect();
        let placed = if here {
            let installed = self
                .inner
                .store
                .install_sized(src, path, stamp, content.size);
            if installed.is_err() {
                self.inner.store.discard(src);
            }
            installed
        } else {
            let (c, p, l) = (self.clone(), path.to_string(), src.to_path_buf());
            let pushed = blocking(move || c.push_to(target, &l, (&p, stamp), sum)).await;
            self.inner.store.discard(src);
            pushed.map(drop)
        };
        if let Err(e) = placed {
            self.drop_copies(path, replicas, stamp).await;
            return Err(e);
        }
        Ok(std::iter::once(target).chain(replicas).collect())
    }

    /// Copies `src` as copy `stamp` of `path` to up to `wanted` nodes after
    /// `holder` in node order that do not have it (`have`), skipping nodes
    /// that cannot take it: FusionFS's replicas, off the writer's node. A
    /// node on this host copies the file itself, without a socket.
    async fn push_replicas(
        &self,
        src: &Path,
        (path, stamp, sum): (&str, u64, Option<Sum>),
        holder: NodeId,
        have: &[NodeId],
        wanted: u32,
    ) -> Vec<NodeId> {
        if wanted == 0 {
            return Vec::new();
        }
        let mut made = Vec::new();
        let others = replica_set(holder, self.inner.peers.len(), u32::MAX);
        for node in others.into_iter().skip(1).filter(|n| !have.contains(n)) {
            if made.len() as u32 == wanted {
                break;
            }
            let copied = if self.same_host(node) {
                self.import_on(node, path, stamp, src).await.map(Some)
            } else {
                let (c, p, l) = (self.clone(), path.to_string(), src.to_path_buf());
                blocking(move || c.push_to(node, &l, (&p, stamp), sum))
                    .await
                    .map(|_| None)
            };
            match copied {
                // A copy on this host was hashed as it was made.
                Ok(Some(c)) if sum.is_some_and(|sum| c.sum != sum) => {
                    tracing::warn!("{path}: the replica made on node {node} differs; dropped");
                    self.drop_copies(path, vec![node], stamp).await;
                }
                Ok(_) => made.push(node),
                Err(e) => tracing::debug!("{path}: no replica on node {node}: {e}"),
            }
        }
        made
    }

    /// Whether `node`'s daemon is on this host (on loopback, not an
    /// emulated node behind its own link) and may copy files directly.
    fn same_host(&self, node: NodeId) -> bool {
        let addr = self.inner.peers[node as usize].endpoint.addr;
        self.inner.same_host_copy && addr.ip().is_loopback()
    }

    /// Waits for the replicas being made in the background (a program that
    /// wrote files calls this before it exits, or they are not made).
    pub async fn settled(&self) {
        let mut pending = std::mem::take(&mut *self.inner.background.lock().expect("background"));
        while pending.join_next().await.is_some() {}
    }

    /// Makes the replicas a committed version still lacks, in the
    /// background, from this node's copy, and registers each.
    fn replicate_rest(&self, path: &str, rec: &Record) {
        let missing = self
            .inner
            .copies
            .of(rec.copies)
            .saturating_sub(rec.holders.len() as u32);
        if missing == 0 || !self.holds(rec) || self.inner.diskless {
            return;
        }
        let (c, path, rec) = (self.clone(), path.to_string(), rec.clone());
        let mut background = self.inner.background.lock().expect("background");
        while background.try_join_next().is_some() {}
        background.spawn(async move {
            let src = c.inner.store.data_path(&path, rec.stamp);
            let made = c
                .push_replicas(
                    &src,
                    (&path, rec.stamp, rec.sum),
                    rec.holders[0],
                    &rec.holders,
                    missing,
                )
                .await;
            for node in made {
                let req = Request::AddHolder {
                    path: path.clone(),
                    version: rec.version,
                    node,
                };
                if let Err(e) = c.meta(&path, req).await {
                    tracing::warn!("{path}: replica on node {node} not registered: {e}");
                }
            }
        });
    }

    /// Makes copy `token` on `holder` the current version of `path` (the
    /// write holding lock `token` commits), then drops the replaced copies.
    /// If the commit fails, or its outcome cannot be learned, nothing of
    /// the previous version is touched; the new copy is dropped only once
    /// the record is known not to name it.
    async fn publish(
        &self,
        path: &str,
        version: NewVersion<'_>,
        copies: Vec<NodeId>,
        replacing: Option<&Record>,
    ) -> FsResult<Record> {
        let NewVersion {
            token,
            content,
            made_by,
        } = version;
        let req = Request::CommitWrite {
            path: path.to_string(),
            token,
            size: content.size,
            mtime_ns: now_ns(),
            holder: copies[0],
            replicas: copies[1..].to_vec(),
            sum: Some(content.sum),
            made_by: made_by.map(String::from),
        };
        let mut answer = self.meta(path, req.clone()).await;
        if matches!(&answer, Err(e) if Client::owner_lost(e)) {
            // The record was lost with its owner while this wrote (its keys
            // taken over): made again where they are now, locked by this
            // write, which is committed to it.
            let mode = replacing.map_or(0o644, |r| r.mode);
            let record = Record::new(Kind::File, mode, now_ns());
            let lease = Lease {
                token,
                ms: self.inner.lease_ms,
            };
            if self.record_again(path, record, Some(lease)).await.is_ok() {
                answer = self.meta(path, req).await;
            }
        }
        let failed = match answer {
            Ok(Response::Committed { record, replaced }) => {
                // A version this write published already (a request sent
                // again after its answer was lost) shares its stamp.
                if replaced.stamp != token {
                    self.drop_copies(path, replaced.holders, replaced.stamp)
                        .await;
                }
                self.checked_here(path, &record);
                self.replicate_rest(path, &record);
                return Ok(record);
            }
            Ok(other) => unexpected(other),
            Err(e) => e,
        };
        // Refused (lock lost, name gone) or unknown (daemon unreachable):
        // ask the record which it was. (A lock lost may be this very
        // commit's, sent again after its answer was lost with its owner.)
        let current = match failed.code {
            Errno::EIO | Errno::EBUSY => self.stat(path).await,
            _ => Err(failed.clone()),
        };
        match current {
            Ok(rec) if rec.stamp == token => {
                if let Some(old) = replacing.filter(|old| old.stamp != token) {
                    self.drop_copies(path, old.holders.clone(), old.stamp).await;
                }
                Ok(rec)
            }
            Err(e) if e.code == Errno::EIO => Err(failed.with_detail(
                "metadata daemon unreachable; the write is published or not as it decided, \
                 the previous version is kept otherwise",
            )),
            _ => {
                self.drop_copies(path, copies, token).await;
                self.give_up(path, token, replacing.is_none()).await;
                Err(failed)
            }
        }
    }

    /// Releases the lock `token` of a write that will not be published; a
    /// name the write created is removed again if nothing was ever
    /// published under it (best effort: a daemon that cannot be reached
    /// leaves it, empty, and the lease ends the lock).
    async fn give_up(&self, path: &str, token: u64, created: bool) {
        if created && self.remove_locked(path, token).await.is_ok() {
            return;
        }
        let _ = self.unlock(path, token).await;
    }

    /// Removes file `path` — record, then name — if `token` still holds its
    /// write lock: no one else changed it meanwhile, so nothing removed is
    /// anyone else's. Answers with the removed record.
    async fn remove_locked(&self, path: &str, token: u64) -> FsResult<Record> {
        self.remove_file(path, Some(token)).await
    }

    /// Removes file `path`'s record (held by `locked_by`, or by no one),
    /// then its name; a name already gone is no error (a failure between
    /// leaves the name without its record, as a crash would).
    async fn remove_file(&self, path: &str, locked_by: Option<u64>) -> FsResult<Record> {
        let remove = Request::RemoveRecord {
            path: path.to_string(),
            kind: Kind::File,
            locked_by,
        };
        let rec = expect_record(self.meta(path, remove).await?)?;
        let (parent, name) = split(path)?;
        let entry = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::File,
        };
        match self.meta(parent, entry).await {
            Err(e) if e.code != Errno::ENOENT => Err(e),
            _ => Ok(rec),
        }
    }
}

/// A version about to be committed: the write lock's token that names its
/// copies, what it holds, and the run's task that made it, if one did.
struct NewVersion<'a> {
    token: u64,
    content: Content,
    made_by: Option<&'a str>,
}

impl NewVersion<'_> {
    /// A version no run's task made (a library writer's, an import).
    fn plain(token: u64, content: Content) -> NewVersion<'static> {
        NewVersion {
            token,
            content,
            made_by: None,
        }
    }
}

/// A file a program writes in a private place, then publishes with
/// `Client::commit` (or drops with `Client::discard`).
#[derive(Debug, Clone)]
pub struct Output {
    /// The logical path it will be published as.
    pub path: String,
    /// Where the program writes it (its file name is the logical one's).
    pub local: PathBuf,
    lease: Lease,
    /// The permission bits it gets if it is new.
    mode: u32,
    /// What a writer of this client wrote, hashed as it was written (a
    /// program's output is read once it is done).
    written: Option<Chunks>,
    /// The run's task that writes it (`Record::made_by`).
    made_by: Option<String>,
}

/// Where a file's data is on this node, once `local_copy` made it local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCopy {
    pub path: PathBuf,
    pub size: u64,
    /// The version it is (`Record::stamp`).
    pub stamp: u64,
    /// The hash of its bytes, which it was checked against (`Record::sum`).
    pub sum: Option<Sum>,
    /// The data came from another node (it was not here before).
    pub fetched: bool,
}

/// Renews a write lock's lease while alive.
struct LeaseGuard(Option<tokio::task::AbortHandle>);

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// An open file being written. Bytes go to a private temporary file in this
/// node's store; `close` publishes them as the file's next version.
pub struct Writer {
    client: Client,
    path: String,
    lease: Lease,
    target: NodeId,
    /// Nodes to keep the bytes (`target` and replicas).
    copies: u32,
    /// The record when the lock was taken (`None` for a new file).
    replacing: Option<Record>,
    tmp: PathBuf,
    file: Option<File>,
    /// Whether the first replica may still be copied as the file is
    /// written: until something but `Write` touches the file.
    may_follow: bool,
    /// That copy, from the first `write` on.
    follower: Option<Follower>,
    /// The bytes hashed as they are written, while they are only appended
    /// from the start (`None` once the file is touched otherwise: it is
    /// read at `close`).
    summer: Option<Summer>,
    closed: bool,
    _renewal: LeaseGuard,
    /// A new file of a held directory, not yet named to any daemon.
    unclaimed: Option<Arc<Unclaimed>>,
}

impl Writer {
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The underlying local file, for seeking or positioned writes (the
    /// first replica is then copied at `close`).
    pub fn file(&mut self) -> &mut File {
        self.may_follow = false;
        self.follower = None;
        self.summer = None;
        self.file.as_mut().expect("open until closed")
    }

    /// The written bytes, to read (the copy made as they are written goes on).
    pub fn written(&self) -> &File {
        self.file.as_ref().expect("open until closed")
    }

    /// Publishes the written bytes as the file's next version: stores them
    /// under a new stamp on the target node, then commits size, mtime,
    /// version and stamp and releases the write lock. If this fails, the
    /// previous version is kept, readable and unlocked.
    pub async fn close(mut self) -> FsResult<Record> {
        if self.unclaimed.is_some() {
            match self.claimed().await {
                Ok(true) => {}
                Ok(false) => {
                    let (out, held) = self.take_output();
                    return self
                        .client
                        .publish_held(&out, held, Publishing::Flushed)
                        .await;
                }
                // Taken by another writer while the directory was recalled.
                Err(e) => {
                    self.drop_unclaimed();
                    return Err(e);
                }
            }
        }
        self.closed = true;
        drop(self.file.take().expect("open until closed"));
        let content = self.content().await?;
        // A copy on a node that does not answer would not count: the
        // replica goes to the next node that does.
        let follower = match self.follower.take() {
            Some(f) if self.client.ping(f.node).await.is_ok() => Some(f),
            _ => None,
        };
        let made = match follower {
            Some(f) => {
                let (node, path, token) = (f.node, self.path.clone(), self.lease.token);
                match blocking(move || f.finish(&path, token, content)).await {
                    Ok(()) => vec![node],
                    Err(e) => {
                        tracing::debug!("{}: replica copy while writing: {e}", self.path);
                        Vec::new()
                    }
                }
            }
            None => Vec::new(),
        };
        let replacing = self.replacing.as_ref();
        self.client
            .finish_write(
                &self.tmp,
                &self.path,
                NewVersion::plain(self.lease.token, content),
                (self.target, self.copies, &made),
                replacing,
            )
            .await
    }

    /// What the written file holds: hashed as written if it was only
    /// appended to, else read.
    async fn content(&mut self) -> FsResult<Content> {
        let (tmp, path) = (self.tmp.clone(), self.path.clone());
        let written = self.summer.take().map(Summer::finish);
        blocking(move || content_of(&path, &tmp, written)).await
    }

    /// Closes a writer that wrote nothing: a file it created stays, empty,
    /// with no version published (one metadata request); an existing file
    /// it was opened on is published as written (truncated or as it was).
    pub async fn close_unwritten(mut self) -> FsResult<()> {
        if self.replacing.is_some() || self.unclaimed.is_some() {
            return self.close().await.map(drop);
        }
        self.closed = true;
        self.file.take();
        self.client.inner.store.discard(&self.tmp);
        self.client
            .unlock(&self.path, self.lease.token)
            .await
            .and_then(expect_ok)
    }

    /// Discards the written bytes and releases the lock, leaving the file
    /// as it was (a file this writer created is removed).
    pub async fn abort(mut self) {
        if self.unclaimed.is_some() && !matches!(self.claimed().await, Ok(true)) {
            return self.drop_unclaimed();
        }
        self.closed = true;
        self.file.take();
        self.client.inner.store.discard(&self.tmp);
        let created = self.replacing.is_none();
        self.client
            .give_up(&self.path, self.lease.token, created)
            .await;
    }
}

/// Writers of new files in held directories.
impl Writer {
    /// Whether the name was claimed the usual way (the writer then goes on
    /// as any other); if not, it is this writer's to publish as new.
    async fn claimed(&mut self) -> FsResult<bool> {
        let Some(u) = self.unclaimed.clone() else {
            return Ok(true);
        };
        match u.closing().await {
            None => Ok(false),
            Some(claimed) => {
                self.unclaimed = None;
                self._renewal = LeaseGuard(u.take_renewal());
                claimed.map(|()| true)
            }
        }
    }

    /// The written file as an output to publish, and its held directory.
    fn take_output(&mut self) -> (Output, Option<Arc<crate::held_dirs::Held>>) {
        self.closed = true;
        self.file.take();
        let mode = self.unclaimed.take().map_or(0o644, |u| u.mode);
        let written = self.summer.take().map(Summer::finish);
        let out = Output {
            path: self.path.clone(),
            local: self.tmp.clone(),
            lease: self.lease,
            mode,
            written,
            made_by: None,
        };
        let held = self.client.held_parent(&self.path).map(|(h, _)| h);
        (out, held)
    }

    /// Publishes a new file of a held directory in the background: the
    /// record it will have is returned at once, and the directory answers
    /// for it until the daemons do. Anything else comes back to be closed
    /// as usual.
    pub async fn close_later(mut self) -> Result<Record, Writer> {
        if !matches!(self.claimed().await, Ok(false)) {
            return Err(self);
        }
        let size = match self.file.as_ref().map(File::metadata) {
            Some(Ok(m)) => m.len(),
            _ => return Err(self),
        };
        let slots = self.client.inner.publishing.clone();
        let Ok(slot) = slots.acquire_owned().await else {
            return Err(self);
        };
        let (out, held) = self.take_output();
        // Its hash is made as it is published (the record named meanwhile
        // is read only once it is).
        let record = out.first_version(size, None, vec![self.client.inner.me]);
        if let Some(held) = &held {
            held.closed(split(&out.path).map_or("", |(_, n)| n), record.clone());
        }
        self.client.publish_later(Later {
            out,
            held,
            _slot: slot,
        });
        Ok(record)
    }

    /// Drops a new file of a held directory that was never claimed.
    fn drop_unclaimed(&mut self) {
        self.closed = true;
        self.file.take();
        self.unclaimed = None;
        self.client.inner.store.discard(&self.tmp);
        if let Some((held, name)) = self.client.held_parent(&self.path) {
            held.settled(name, false);
        }
    }
}

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.may_follow) {
            self.follower = self.client.follower(&self.tmp, self.target, self.copies);
        }
        let n = self.file.as_mut().expect("open until closed").write(buf)?;
        if let Some(summer) = &mut self.summer {
            summer.update(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("open until closed").flush()
    }
}

impl Drop for Writer {
    /// A writer dropped without `close` is aborted in the background (its
    /// lease ends the lock if the release cannot be sent).
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        if self.unclaimed.is_some() {
            return self.drop_unclaimed();
        }
        self.client.inner.store.discard(&self.tmp);
        let (client, path, token) = (self.client.clone(), self.path.clone(), self.lease.token);
        let created = self.replacing.is_none();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { client.give_up(&path, token, created).await });
        }
    }
}

/// What an unlink that found no record found at the name.
enum NoRecord {
    NoName,
    Created,
    LeftoverRemoved,
}

/// A name taken for a write (`claim`): where a new file's bytes go, or the
/// record of the file it rewrites; and how many nodes keep them.
struct Claim {
    target: Option<NodeId>,
    replacing: Option<Record>,
    copies: u32,
}

/// A new file stored and ready to be named: its committed record, the
/// directories above it its daemon keeps too, and the nodes its bytes were
/// also copied to.
struct NewFile {
    record: Record,
    parents: Vec<String>,
    replicas: Vec<NodeId>,
}

impl NewFile {
    /// The one request that names `out`'s file where one daemon keeps both
    /// its entry and its record (and makes the `parents` it lacks).
    fn request(&self, out: &Output) -> Request {
        // The path was split when the output was made.
        let (parent, name) = split(&out.path).unwrap_or(("/", ""));
        Request::CreateFile {
            parent: parent.to_string(),
            name: name.to_string(),
            path: out.path.clone(),
            record: self.record.clone(),
            parents: self.parents.clone(),
            lease: None,
        }
    }
}

impl Output {
    /// Names the run's task that writes it, kept in its record.
    pub fn made_by(&mut self, task: String) {
        self.made_by = Some(task);
    }

    /// The record of this file's first version, `size` bytes hashing to
    /// `sum` on `holders`.
    fn first_version(&self, size: u64, sum: Option<Sum>, holders: Vec<NodeId>) -> Record {
        let mut record = Record::new(Kind::File, self.mode, now_ns());
        record.size = size;
        record.sum = sum;
        record.version = 1;
        record.stamp = self.lease.token;
        record.holders = holders;
        record.made_by.clone_from(&self.made_by);
        record
    }
}

/// What the file a program wrote for `out` holds (`EISDIR` for a
/// directory), read off the async threads.
async fn output_content(out: &Output) -> FsResult<Content> {
    let (path, local, written) = (out.path.clone(), out.local.clone(), out.written.clone());
    blocking(move || content_of(&path, &local, written)).await
}

/// What file `local`, written for `path`, holds: `written`, hashed by its
/// writer as it wrote, while the file is as long as that; else read. Its
/// chunks' hashes are kept with it.
fn content_of(path: &str, local: &Path, written: Option<Chunks>) -> FsResult<Content> {
    let io_err = |e: &io::Error| FsError::io(path, e);
    let file = File::open(local).map_err(|e| io_err(&e))?;
    let meta = file.metadata().map_err(|e| io_err(&e))?;
    if meta.is_dir() {
        return Err(FsError::new(Errno::EISDIR, path));
    }
    let chunks = match written {
        Some(c) if meta.len() == c.size => c,
        _ => sums::of_file(&file).map_err(|e| io_err(&e))?,
    };
    sums::keep(&file, &chunks);
    Ok(chunks.content())
}
