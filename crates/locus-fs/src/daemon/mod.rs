//! The storage daemon (`locus fs serve`): one per node. It owns a metadata
//! shard and the node's data store, answers pipelined RPCs, and serves bulk
//! transfers. Every connection must first prove the cluster secret.

pub(crate) mod delegation;
pub(crate) mod fence;
pub(crate) mod join;
pub(crate) mod repair;
pub(crate) mod replicate;
pub(crate) mod scrub;
pub(crate) mod serve;
pub(crate) mod upkeep;

use crate::cluster::ClusterSpec;
use crate::daemon::delegation::Delegations;
use crate::daemon::fence::{Admit, Fences};
use crate::data::store::Store;
use crate::data::transfer;
use crate::meta::{Durability, MetaStore, Reply};
use crate::path::checked;
use crate::peer::{is_unreachable, Peer};
use locus_proto::auth::{self, Channel, Secret};
use locus_proto::fs::{Envelope, NodeId, NodeStatus, Request, Response};
use locus_proto::{frame, Errno, FsError, FsResult};
use replicate::Replicator;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};

/// A node's metadata shard, and the mark that it had one (so a shard lost
/// later is not taken for a new node's).
pub const META_FILE: &str = "meta.redb";
const META_KEPT: &str = "meta.kept";
/// Set by `locus fs repair` while it makes a node's lost metadata again:
/// the daemon then starts with an empty metadata store, which the repair
/// fills.
pub const META_REBUILD: &str = "meta.rebuild";
/// Entries per directory page at most, whatever the client asks for.
const MAX_PAGE: u32 = 10_000;
/// A connection with no request for this long is closed (clients reconnect).
const IDLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// A frame once begun must arrive within this.
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct DaemonConfig {
    pub node: NodeId,
    pub node_dir: PathBuf,
    pub secret: Secret,
    pub durability: Durability,
    /// The cluster it serves in (its replicas).
    pub cluster: ClusterSpec,
    /// It comes back to a cluster formed before (restarted): its replicas
    /// may have seen writes it missed.
    pub rejoined: bool,
}

pub(crate) struct Daemon {
    listener: TcpListener,
    state: Arc<State>,
    secret: Secret,
    /// It came back: the daemons that may have acted for it are told when
    /// it serves.
    returned: bool,
}

struct State {
    node: NodeId,
    meta: MetaStore,
    store: Store,
    /// Where this daemon's metadata writes are copied, if anywhere.
    replicator: Option<Arc<Replicator>>,
    /// Raised by an authenticated `Shutdown` (with its `purge`).
    stop: tokio::sync::watch::Sender<Option<bool>>,
    stats_answered: AtomicU64,
    delegations: Delegations,
    /// Numbers the RPC connections (a delegation's holder is one).
    connections: AtomicU64,
    cluster: ClusterSpec,
    ring: crate::ring::Ring,
    secret: Secret,
    /// Owners coming back, whose keys this daemon must not write for them.
    fences: std::sync::Mutex<Fences>,
    /// Every daemon, to ask an owner that came back whether it is there.
    peers: Vec<Peer>,
    /// The transfer connections being served, each read by a blocking
    /// thread that only a shutdown of its socket ends: done when this
    /// state goes, so a daemon stopped in its process (a test's crash, or
    /// its runtime's end) leaves no connection served.
    transfers: std::sync::Mutex<std::collections::HashMap<u64, std::net::TcpStream>>,
}

impl Drop for State {
    fn drop(&mut self) {
        let transfers = self.transfers.get_mut().expect("transfers lock");
        for (_, s) in transfers.drain() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// How a daemon's service ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// The node directory is to be removed (`locus fs down --purge`).
    pub purge: bool,
}

impl Daemon {
    /// Opens the node's shard and store and serves on `listener` (bound
    /// beforehand, so that its address can be published before the node
    /// knows its id).
    pub(crate) async fn new(cfg: DaemonConfig, listener: TcpListener) -> io::Result<Daemon> {
        let store = Store::open(&cfg.node_dir)?;
        let meta_file = cfg.node_dir.join(META_FILE);
        let kept = cfg.node_dir.join(META_KEPT);
        let recoverable =
            (cfg.rejoined && cfg.cluster.replicas > 1) || cfg.node_dir.join(META_REBUILD).exists();
        if !meta_file.metadata().is_ok_and(|m| m.len() > 0) && !recoverable {
            let files = store.usage().0;
            if kept.exists() || files > 0 {
                return Err(io::Error::other(format!(
                    "{}: metadata store missing or empty, but this node kept names before \
                     ({files} stored file(s)): serving it empty would lose them; put the \
                     file back, or make it again with `locus fs repair --node {}`",
                    meta_file.display(),
                    cfg.node
                )));
            }
        }
        let meta = MetaStore::open(&meta_file, cfg.durability)
            .map_err(|e| io::Error::other(e.to_string()))?;
        if !kept.exists() {
            std::fs::write(&kept, b"")?;
        }
        let swept = store.sweep_dead_writers();
        if swept > 0 {
            tracing::info!("removed {swept} file(s) left by writers that died");
        }
        let replicator = Replicator::new(&cfg.cluster, cfg.node, &cfg.secret);
        if cfg.rejoined && cfg.cluster.nodes.len() > 1 {
            let taken = replicate::take_back(&cfg.cluster, cfg.node, &cfg.secret, &meta)
                .await
                .map_err(|e| io::Error::other(e.to_string()))?;
            match taken {
                Some((from, keys)) => {
                    tracing::info!("took {keys} metadata key(s) back from node(s) {from:?}");
                }
                None if replicator.is_some() => {
                    tracing::warn!("no replica answered: serving the keys kept here");
                }
                None => tracing::info!("no other node answered: serving the keys kept here"),
            }
        }
        if cfg.rejoined && replicator.is_some() {
            // Writes its owners made while it was down are not here.
            for owner in replicate::replicated_by(&cfg.cluster, cfg.node) {
                match replicate::catch_up(&cfg.cluster, owner, &cfg.secret, &meta).await {
                    Ok(keys) => tracing::info!("caught up with node {owner}: {keys} key(s)"),
                    Err(e) => tracing::warn!("could not catch up with node {owner}: {e}"),
                }
            }
        }
        let peers = (0..cfg.cluster.nodes.len() as NodeId)
            .map(|n| replicate::peer(&cfg.cluster, n, &cfg.secret))
            .collect();
        Ok(Daemon {
            listener,
            state: Arc::new(State {
                node: cfg.node,
                meta,
                store,
                replicator,
                stop: tokio::sync::watch::channel(None).0,
                stats_answered: AtomicU64::new(0),
                delegations: Delegations::default(),
                connections: AtomicU64::new(0),
                ring: cfg.cluster.ring(),
                cluster: cfg.cluster,
                secret: cfg.secret.clone(),
                fences: Default::default(),
                peers,
                transfers: Default::default(),
            }),
            secret: cfg.secret,
            returned: cfg.rejoined,
        })
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The node's metadata shard, to flush once the daemon has stopped.
    pub(crate) fn metadata(&self) -> MetaStore {
        self.state.meta.clone()
    }

    /// Accepts connections until a client asks the daemon to stop.
    pub(crate) async fn run(self) -> io::Result<Stopped> {
        let mut stop = self.state.stop.subscribe();
        if self.returned && self.state.cluster.nodes.len() > 1 {
            let state = self.state.clone();
            tokio::spawn(async move {
                replicate::announce(&state.cluster, state.node, &state.secret, true).await;
                replicate::back_for_owners(&state.cluster, state.node, &state.secret).await;
            });
        }
        loop {
            let accepted = tokio::select! {
                a = self.listener.accept() => a,
                _ = stop.changed() => {
                    let purge = stop.borrow().unwrap_or(false);
                    return Ok(Stopped { purge });
                }
            };
            let (stream, peer) = match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors and similar: keep serving the others.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let state = self.state.clone();
            let secret = self.secret.clone();
            tokio::spawn(async move {
                if let Err(e) = serve_connection(stream, state, secret).await {
                    tracing::debug!("connection from {peer} closed: {e}");
                }
            });
        }
    }
}

async fn serve_connection(
    mut stream: TcpStream,
    state: Arc<State>,
    secret: Secret,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    match auth::accept(&mut stream, &secret).await? {
        Channel::Rpc => serve_rpc(stream, state).await,
        Channel::Transfer => {
            let stream = stream.into_std()?;
            stream.set_nonblocking(false)?;
            // Blocking reads: a stalled or idle peer times out.
            stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
            let id = state.connections.fetch_add(1, Ordering::Relaxed);
            let transfers = &state.transfers;
            transfers
                .lock()
                .expect("transfers lock")
                .insert(id, stream.try_clone()?);
            // The thread holds the store only: this task holds the state.
            let store = state.store.clone();
            let served = tokio::task::spawn_blocking(move || transfer::serve(stream, &store)).await;
            transfers.lock().expect("transfers lock").remove(&id);
            served.map_err(io::Error::other)?
        }
        Channel::Ranks => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a workflow rank called a file-system daemon",
        )),
    }
}

/// Reads requests and answers each as soon as it is done, in any order; a
/// malformed frame ends this connection only.
async fn serve_rpc(stream: TcpStream, state: Arc<State>) -> io::Result<()> {
    let conn = state.connections.fetch_add(1, Ordering::Relaxed);
    let (rd, wr) = stream.into_split();
    let (out, flusher) = frame::Outbox::new(wr);
    let writer = tokio::spawn(flusher);
    let mut rd = BufReader::with_capacity(64 << 10, rd);
    let mut buf = Vec::new();
    let result = loop {
        let next = frame::read_async_within(&mut rd, &mut buf, Some(FRAME_TIMEOUT));
        match tokio::time::timeout(IDLE_TIMEOUT, next).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) | Err(_) => break Ok(()),
            Ok(Err(e)) => break Err(e),
        }
        let env: Envelope<Request> = match frame::decode(&buf) {
            Ok(env) => env,
            Err(e) => break Err(e),
        };
        if let Request::Shutdown { purge } = env.body {
            tracing::info!("asked to stop (purge: {purge})");
            let _ = out.send(
                &Envelope {
                    id: env.id,
                    body: Response::Ok,
                },
                true,
            );
            // The answer is written before the daemon stops (its runtime's
            // end would drop it unsent), bounded by answers still pending.
            drop(out);
            let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
            let _ = state.stop.send(Some(purge));
            return Ok(());
        }
        // With more requests already read, answers join a burst.
        let alone = rd.buffer().is_empty();
        state.dispatch(env, &out, alone, conn);
    };
    state.delegations.closed(conn);
    drop(out);
    if result.is_err() {
        writer.abort();
    } else {
        let _ = writer.await;
    }
    result
}

/// The largest file `ImportData` copies on the connection's own task.
const SMALL_FILE: u64 = 64 << 10;

fn small_file(p: &std::path::Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() <= SMALL_FILE)
}

/// `EAGAIN` for a write to keys whose owner is back, or coming back.
fn coming_back(write: &Request) -> FsError {
    let key = write.keys_written().first().copied().unwrap_or("/");
    FsError::new(Errno::EAGAIN, key).with_detail("its metadata daemon serves it, or is coming back")
}

fn content_of(c: crate::data::sums::Content) -> Response {
    Response::Content {
        size: c.size,
        sum: c.sum,
    }
}

fn answer(r: FsResult<Response>) -> Response {
    r.unwrap_or_else(Response::Err)
}

impl State {
    /// Answers quick reads inline, hands metadata writes to the group-commit
    /// writer (which queues the answer itself), and runs the rest as tasks.
    /// A request that reads or changes a name in a directory lent to
    /// another connection waits until the delegation is given back.
    fn dispatch(
        self: &Arc<Self>,
        env: Envelope<Request>,
        out: &frame::Outbox,
        alone: bool,
        conn: u64,
    ) {
        let id = env.id;
        let send = |body| drop(out.send(&Envelope { id, body }, alone));
        // Answers given later: a write's when its commit is done (at once
        // if it was the commit's only operation), the others' when they end.
        let later = || {
            let out = out.clone();
            move |body, alone| drop(out.send(&Envelope { id, body }, alone))
        };
        if let Err(e) = check_paths(&env.body) {
            return send(Response::Err(e));
        }
        if let Some(recalled) = self.delegations.blocking(&env.body, conn) {
            let (state, out) = (self.clone(), out.clone());
            tokio::spawn(async move {
                recalled.ended(&state.delegations).await;
                state.dispatch(env, &out, true, conn);
            });
            return;
        }
        match env.body {
            Request::Ping => send(Response::Ok),
            Request::HasEntry { parent, name } => send(answer(
                self.meta.entry(&parent, &name).map(Response::Present),
            )),
            Request::Delegate { dir } => {
                let (state, send) = (self.clone(), later());
                tokio::spawn(async move { send(answer(state.lend(dir, conn).await), true) });
            }
            Request::AwaitRecall { dir } => match self.delegations.await_recall(&dir, conn) {
                Err(()) => send(Response::Ok),
                Ok(told) => {
                    let send = later();
                    tokio::spawn(async move {
                        let _ = told.await;
                        send(Response::Ok, true);
                    });
                }
            },
            Request::GiveBack { dir } => {
                self.delegations.end(&dir, Some(conn));
                send(Response::Ok);
            }
            Request::GetRecord { path } => {
                self.stats_answered.fetch_add(1, Ordering::Relaxed);
                send(answer(self.meta.get(&path).map(Response::Record)));
            }
            Request::GetHint { path } => send(answer(self.meta.hint(&path).map(Response::Hint))),
            Request::ListEntries { dir, after, limit } => send(answer(
                self.meta
                    .list(&dir, after.as_deref(), limit.min(MAX_PAGE))
                    .map(|(entries, more)| Response::Entries { entries, more }),
            )),
            // A small file is copied here at once: a blocking thread's
            // hand-off and wake-up cost more than its few system calls.
            Request::ImportData {
                path,
                stamp,
                source,
            } if small_file(&source) => send(answer(
                self.store.import(&source, &path, stamp).map(content_of),
            )),
            req @ (Request::Status
            | Request::ListStored
            | Request::Sync
            | Request::LinkData { .. }
            | Request::DropData { .. }
            | Request::Quarantine { .. }
            | Request::ImportData { .. }
            | Request::ExportData { .. }) => {
                let (state, send) = (self.clone(), later());
                tokio::spawn(async move { send(state.handle(req).await, true) });
            }
            Request::Dump { after, limit } => send(answer(
                self.meta
                    .dump(after.as_ref(), limit.min(MAX_PAGE))
                    .map(|(changes, more)| Response::Changes { changes, more }),
            )),
            Request::Returning { owner, .. } | Request::CatchUp { owner }
                if owner as usize >= self.peers.len() =>
            {
                send(Response::Err(
                    FsError::new(Errno::EINVAL, format!("node {owner}"))
                        .with_detail("no such node"),
                ));
            }
            Request::ReplicaBack { replica } => {
                if let Some(r) = &self.replicator {
                    r.replica_back(replica);
                }
                send(Response::Ok);
            }
            Request::Returning { owner, serving } => {
                self.fences
                    .lock()
                    .expect("fences")
                    .announced(owner, serving, Instant::now());
                // What was accepted before is committed before it is copied.
                let (state, send) = (self.clone(), later());
                tokio::spawn(async move {
                    send(
                        answer(state.meta.flush().await.map(|()| Response::Ok)),
                        true,
                    );
                });
            }
            Request::CatchUp { owner } => {
                let (state, send) = (self.clone(), later());
                tokio::spawn(async move {
                    let caught =
                        replicate::catch_up(&state.cluster, owner, &state.secret, &state.meta);
                    send(answer(caught.await.map(|_| Response::Ok)), true);
                });
            }
            write => {
                // Held while the write is queued: a return announced after
                // this check waits for its commit.
                let fences = self.fences.lock().expect("fences");
                match self.admit(&fences, &write) {
                    (Admit::Apply, _) => {}
                    (Admit::AskOwner, Some(owner)) => {
                        drop(fences);
                        let env = Envelope { id, body: write };
                        return self.ask_owner(owner, env, out.clone(), conn);
                    }
                    _ => return send(Response::Err(coming_back(&write))),
                }
                let send = later();
                // A `Replicate` is applied as the replicated daemon wrote
                // it; not sent on.
                let forward = match write {
                    Request::Replicate { .. } => None,
                    _ => self.replicator.clone(),
                };
                let reply: Reply = match forward {
                    None => Box::new(move |r, _, alone| send(r, alone)),
                    Some(replicator) => Box::new(move |r, changes: Vec<_>, alone| {
                        if changes.is_empty() {
                            return send(r, alone);
                        }
                        replicator.forward(changes, move || send(r, true));
                    }),
                };
                self.meta.submit(write, reply);
            }
        }
    }

    /// Whether `write` may change keys of owners this daemon acts for: the
    /// most restrictive answer over them, with the owner to ask (a
    /// `Replicate` is always applied: its daemon made it).
    fn admit(&self, fences: &Fences, write: &Request) -> (Admit, Option<NodeId>) {
        if matches!(write, Request::Replicate { .. }) {
            return (Admit::Apply, None);
        }
        let now = Instant::now();
        let mut verdict = (Admit::Apply, None);
        for owner in write.keys_written().into_iter().map(|k| self.ring.owner(k)) {
            match (owner == self.node, fences.admit(owner, now)) {
                (true, _) | (false, Admit::Apply) => {}
                (false, Admit::Refuse) => return (Admit::Refuse, Some(owner)),
                (false, Admit::AskOwner) => verdict = (Admit::AskOwner, Some(owner)),
            }
        }
        verdict
    }

    /// A write for an owner this daemon has not found lost: dispatched again
    /// once the owner cannot be reached from here either (it is down: act
    /// for it; the next owner it writes for, if any, is asked then), else
    /// refused so the client writes to the owner again.
    fn ask_owner(
        self: &Arc<Self>,
        owner: NodeId,
        env: Envelope<Request>,
        out: frame::Outbox,
        conn: u64,
    ) {
        let state = self.clone();
        tokio::spawn(async move {
            match state.peers[owner as usize].call(Request::Ping).await {
                Err(e) if is_unreachable(&e) => {
                    tracing::info!("acting for node {owner}: {e}");
                    state
                        .fences
                        .lock()
                        .expect("fences")
                        .lost(owner, Instant::now());
                    state.dispatch(env, &out, true, conn);
                }
                _ => {
                    let refused = Response::Err(coming_back(&env.body));
                    let _ = out.send(
                        &Envelope {
                            id: env.id,
                            body: refused,
                        },
                        true,
                    );
                }
            }
        });
    }

    /// Lends `dir` to `conn` if it is an empty directory. Lent first, then
    /// checked after every write queued before it is committed: a name
    /// added meanwhile by another connection either is seen, or waited
    /// for the loan.
    async fn lend(&self, dir: String, conn: u64) -> FsResult<Response> {
        self.delegations.grant(&dir, conn).map_err(|e| {
            FsError::new(e, dir.as_str()).with_detail("delegated to another client")
        })?;
        let empty = match self.meta.flush().await {
            Ok(()) => self
                .meta
                .list(&dir, None, 1)
                .map(|(names, _)| names.is_empty()),
            Err(e) => Err(e),
        };
        match empty {
            Ok(true) => Ok(Response::Ok),
            other => {
                self.delegations.end(&dir, Some(conn));
                other.and(Err(FsError::new(Errno::ENOTEMPTY, dir.as_str())))
            }
        }
    }

    /// The requests that touch the store, off the connection's task.
    async fn handle(self: Arc<Self>, req: Request) -> Response {
        match req {
            Request::Status => answer(self.status().await),
            Request::Sync => answer(self.meta.flush().await.map(|()| Response::Ok)),
            Request::ListStored => answer(
                self.blocking(|s| Ok(Response::Stored(s.store.stored())))
                    .await,
            ),
            Request::LinkData { from, to, stamp } => answer(
                self.blocking(move |s| s.store.link(&from, &to, stamp).map(|()| Response::Ok))
                    .await,
            ),
            Request::DropData { path, stamp } => answer(
                self.blocking(move |s| s.store.drop_copy(&path, stamp).map(|()| Response::Ok))
                    .await,
            ),
            Request::Quarantine { path, stamp } => answer(
                self.blocking(move |s| s.store.quarantine(&path, stamp).map(|()| Response::Ok))
                    .await,
            ),
            Request::ImportData {
                path,
                stamp,
                source,
            } => answer(
                self.blocking(move |s| s.store.import(&source, &path, stamp).map(content_of))
                    .await,
            ),
            Request::ExportData {
                path,
                stamp,
                dest,
                size,
                sum,
            } => answer(
                self.blocking(move |s| {
                    s.store
                        .export(&path, stamp, &dest, (size, sum))
                        .map(|r| r.map_or_else(Response::BadCopy, Response::Size))
                })
                .await,
            ),
            write => self.meta.write(write).await,
        }
    }

    /// `f`'s answer, run off the connection's task (it touches the store).
    async fn blocking(
        self: Arc<Self>,
        f: impl FnOnce(&State) -> FsResult<Response> + Send + 'static,
    ) -> FsResult<Response> {
        tokio::task::spawn_blocking(move || f(&self))
            .await
            .map_err(|e| FsError::new(Errno::EIO, "daemon").with_detail(e))?
    }

    async fn status(self: Arc<Self>) -> FsResult<Response> {
        // A failing metadata store is reported, not an error of `status`.
        let records = self.meta.record_count().unwrap_or(0);
        let (node, store) = (self.node, self.store.clone());
        let (usage, capacity, last_scrub) = tokio::task::spawn_blocking(move || {
            (store.usage(), store.capacity(), store.last_scrub())
        })
        .await
        .map_err(|e| FsError::new(Errno::EIO, "daemon").with_detail(e))?;
        Ok(Response::Status(NodeStatus {
            node,
            pid: std::process::id(),
            records,
            stored_files: usage.0,
            stored_bytes: usage.1,
            free_bytes: capacity.0,
            total_bytes: capacity.1,
            meta_error: self.meta.failure().map(|e| e.to_string()),
            stats_answered: self.stats_answered.load(Ordering::Relaxed),
            last_scrub,
        }))
    }
}

/// Refuses anything but one metadata write with normalised paths.
fn check_write(op: &Request) -> FsResult<()> {
    match op.is_metadata_write() {
        true => check_paths(op),
        false => Err(FsError::new(Errno::EINVAL, "batch").with_detail("not a metadata write")),
    }
}

/// Refuses any request whose paths are not normalised absolute paths.
fn check_paths(req: &Request) -> FsResult<()> {
    match req {
        Request::Ping
        | Request::Status
        | Request::Shutdown { .. }
        | Request::Dump { .. }
        | Request::Returning { .. }
        | Request::CatchUp { .. }
        | Request::ReplicaBack { .. }
        | Request::ListStored
        | Request::Sync => Ok(()),
        Request::Replicate { changes } => changes
            .iter()
            .try_for_each(|c| checked(c.key_path()).map(drop)),
        Request::GetRecord { path }
        | Request::GetHint { path }
        | Request::CreateRecord { path, .. }
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
        | Request::SetCopies { path, .. }
        | Request::DropData { path, .. }
        | Request::Quarantine { path, .. }
        | Request::ImportData { path, .. }
        | Request::ExportData { path, .. } => checked(path).map(drop),
        Request::ListEntries { dir, .. }
        | Request::Delegate { dir }
        | Request::AwaitRecall { dir }
        | Request::GiveBack { dir } => checked(dir).map(drop),
        Request::AddEntry { parent, name, .. }
        | Request::RemoveEntry { parent, name, .. }
        | Request::HasEntry { parent, name }
        | Request::CreateFile { parent, name, .. }
        | Request::RemoveFile { parent, name, .. } => {
            checked(parent)?;
            if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                return Err(
                    FsError::new(Errno::EINVAL, name.as_str()).with_detail("not a file name")
                );
            }
            Ok(())
        }
        Request::LinkData { from, to, .. } => checked(from).and(checked(to)).map(drop),
        // Metadata writes only: these are applied by the writer.
        Request::Batch { ops } => ops.iter().try_for_each(check_write),
        Request::Lazy { op } => check_write(op),
    }
}
