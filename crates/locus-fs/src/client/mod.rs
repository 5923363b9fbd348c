//! The client library: POSIX-like operations composed from daemon primitives.
//!
//! A client acts on one node: its writes go to that node's store, its reads
//! are served from that store when the data is there and fetched into it
//! otherwise. Metadata requests go straight to the daemon that owns the path's
//! hash (zero hops); the directory entry, on the parent's daemon, is inserted
//! first and decides which of two racing creators wins.

pub(crate) mod copies;
pub(crate) mod follow;
pub(crate) mod held_dirs;
mod leases;
mod lent;
mod namespace;
mod publish;
mod reading;
mod recovery;
mod rename;
mod replicas;
mod routing;
mod writing;

pub use publish::Output;
use publish::{Later, PUBLISHING_AT_ONCE};
pub use reading::LocalCopy;
pub use writing::Writer;

use crate::client::copies::Copies;
use crate::client::held_dirs::HeldDirs;
use crate::cluster::{ClusterSpec, SECRET_FILE};
use crate::data::store::Store;
use crate::peer::Endpoint;
use crate::placement::Placement;
use crate::ring::Ring;
use crate::transport::{no_such_node, Tcp, Transport};
use locus_proto::auth::Secret;
use locus_proto::fs::{NodeId, Record, Response};
use locus_proto::{Errno, FsError, FsResult};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Times a write or a rename finds the name it would replace unlinked
/// before it takes the name anew.
const CLAIM_TRIES: u32 = 3;

/// How a client acts: on which node, placing new files how, waiting how long.
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

/// A client of one cluster, acting on one node; cheap to clone (clones share
/// connections and what they learned).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    me: NodeId,
    /// This node's store, or the scratch directory of a diskless client.
    store: Store,
    diskless: bool,
    /// How metadata requests reach the daemons.
    transport: Arc<dyn Transport>,
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
    checked: crate::data::verify::Checked,
}

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

/// The secret of the cluster in `dir`.
fn load_secret(dir: &Path) -> FsResult<Secret> {
    let path = dir.join(SECRET_FILE);
    Secret::load(&path).map_err(|e| FsError::io(path.display().to_string(), &e))
}

impl Client {
    /// A client of the cluster described in `dir` (as written by `locus fs up`).
    pub fn open(dir: &Path, opts: ClientOptions) -> FsResult<Client> {
        let spec =
            ClusterSpec::load(dir).map_err(|e| FsError::io(dir.display().to_string(), &e))?;
        Client::open_loaded(dir, &spec, opts)
    }

    /// A client of the cluster in `dir` as a program on this host takes
    /// part: on `node` if given, else on this host's node, else node 0 —
    /// with no store of its own (staging in `scratch`) when the cluster's
    /// daemons run on other hosts (`fs serve --join`).
    pub fn on_this_host(
        dir: &Path,
        node: Option<NodeId>,
        scratch: PathBuf,
        opts: ClientOptions,
    ) -> FsResult<Client> {
        let spec =
            ClusterSpec::load(dir).map_err(|e| FsError::io(dir.display().to_string(), &e))?;
        let (node, scratch) = match node {
            Some(k) => (k, None),
            None => match spec.node_named(&crate::hostname()) {
                Some(n) => (n.id, None),
                // Node 0's store is on node 0, not here.
                None if spec.joined => (0, Some(scratch)),
                None => (0, None),
            },
        };
        let opts = ClientOptions {
            node,
            scratch,
            ..opts
        };
        Client::open_loaded(dir, &spec, opts)
    }

    /// [`Client::open`] of the cluster in `dir` whose file the caller read
    /// already (to choose the node).
    pub fn open_loaded(dir: &Path, spec: &ClusterSpec, opts: ClientOptions) -> FsResult<Client> {
        Client::new(spec, load_secret(dir)?, opts)
    }

    /// [`Client::open`], its transport wrapped (see `with_transport`).
    pub fn open_with_transport(
        dir: &Path,
        opts: ClientOptions,
        wrap: impl FnOnce(Arc<dyn Transport>) -> Arc<dyn Transport>,
    ) -> FsResult<Client> {
        let spec =
            ClusterSpec::load(dir).map_err(|e| FsError::io(dir.display().to_string(), &e))?;
        Client::with_transport(&spec, load_secret(dir)?, opts, wrap)
    }

    /// A client of the cluster `spec` describes, proving `secret` to its daemons.
    pub fn new(spec: &ClusterSpec, secret: Secret, opts: ClientOptions) -> FsResult<Client> {
        Client::with_transport(spec, secret, opts, |tcp| tcp)
    }

    /// `new`, its metadata requests carried by what `wrap` makes of the
    /// TCP transport (a test's or a simulation's faults around it).
    pub fn with_transport(
        spec: &ClusterSpec,
        secret: Secret,
        opts: ClientOptions,
        wrap: impl FnOnce(Arc<dyn Transport>) -> Arc<dyn Transport>,
    ) -> FsResult<Client> {
        let me = spec.nodes.get(opts.node as usize).ok_or_else(|| {
            FsError::new(Errno::EINVAL, format!("node {}", opts.node))
                .with_detail(format!("the cluster has nodes 0..{}", spec.nodes.len() - 1))
        })?;
        let store_dir = opts.scratch.as_deref().unwrap_or(&me.dir);
        let store =
            Store::open(store_dir).map_err(|e| FsError::io(store_dir.display().to_string(), &e))?;
        let endpoints = spec
            .nodes
            .iter()
            .map(|n| Endpoint {
                node: n.id,
                name: n.name.clone(),
                addr: n.addr,
                secret: secret.clone(),
                timeout: opts.timeout,
            })
            .collect();
        let transport = wrap(Arc::new(Tcp::new(endpoints)));
        Ok(Client {
            inner: Arc::new(Inner {
                me: opts.node,
                store,
                diskless: opts.scratch.is_some(),
                transport,
                dirs: spec.nodes.iter().map(|n| n.dir.clone()).collect(),
                ring: spec.ring(),
                placement: opts.placement.unwrap_or(spec.placement),
                lease_ms: opts.lease.as_millis().clamp(30, u128::from(u32::MAX)) as u32,
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
    pub(crate) fn checked(&self) -> &crate::data::verify::Checked {
        &self.inner.checked
    }

    /// Whether this node's store holds a copy of `rec`'s current data.
    pub(crate) fn holds(&self, rec: &Record) -> bool {
        !self.inner.diskless && rec.holders.contains(&self.inner.me)
    }

    /// Nodes in the cluster.
    pub fn node_count(&self) -> usize {
        self.inner.transport.nodes()
    }

    /// Name and address of node `id`.
    pub fn endpoint(&self, id: NodeId) -> FsResult<&Endpoint> {
        self.inner
            .transport
            .endpoint(id)
            .ok_or_else(|| no_such_node(id))
    }
}
