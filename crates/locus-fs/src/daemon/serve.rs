//! Running one daemon to its end from its typed configuration. Every
//! daemon joins its cluster the same way, whoever started it: a site
//! launcher one per host of a job, or Locus's own launcher one per node it
//! emulates on this machine or on emulated hosts. It registers in the
//! cluster's directory and takes its node id from the cluster file that
//! whichever daemon sees them all first writes; a restarted daemon rejoins
//! as the node it was.

use crate::cluster::ClusterSpec;
use crate::daemon::join;
use crate::daemon::upkeep::{look_after, Upkeep};
use crate::daemon::{Daemon, DaemonConfig, Stopped};
use crate::meta::Durability;
use crate::placement::Placement;
use crate::scope::{self, Jobs, Scope, Slurm, Sweep};
use locus_proto::auth::Secret;
use locus_proto::fs::NodeId;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// How long daemons wait for each other.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything a daemon is told when started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeConfig {
    /// How it finds its cluster: joins one forming, or is a node of a written one.
    pub join: JoinConfig,
    /// Where to listen (port 0 picks a free port; default: every interface).
    pub listen: Option<SocketAddr>,
    /// When a metadata change is on disk before it is answered.
    pub durability: Durability,
    /// Where to write the bound address once serving.
    pub addr_file: Option<PathBuf>,
    /// The daemon's background upkeep of its store.
    #[serde(default)]
    pub upkeep: Upkeep,
}

/// The cluster a daemon forms with the others, and which node it is in it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JoinConfig {
    /// The cluster's directory, on a file system every host shares.
    pub dir: PathBuf,
    /// How many daemons form the cluster (default: the launcher's count).
    pub expect: Option<u32>,
    /// Node-local storage for the store and metadata (default: `$TMPDIR`,
    /// else `/tmp`).
    pub store: Option<PathBuf>,
    /// This node's name in the cluster (default: its hostname).
    pub name: Option<String>,
    /// The address other hosts reach this one at (default: its first
    /// non-loopback IPv4 address).
    pub advertise: Option<IpAddr>,
    /// Where this host mounts the cluster once it is formed, until the
    /// daemon stops (done by the program serving it: the mount is not this
    /// crate's).
    #[serde(default)]
    pub mount: Option<PathBuf>,
    /// This node's directory, when its starter chose one (default: one
    /// under `store` named after the cluster and the host).
    #[serde(default)]
    pub node_dir: Option<PathBuf>,
    /// How the cluster places new files unless told otherwise.
    #[serde(default)]
    pub placement: Placement,
    /// Copies of data and metadata the cluster keeps (fixed when it forms).
    #[serde(default = "one")]
    pub replicas: u32,
    /// The nodes are emulated by one machine (names, not hosts): a process
    /// on a host none of them is named after still has a node's store.
    #[serde(default)]
    pub emulated: bool,
    /// Where its starter put it, for the record: the network namespace and
    /// cgroup of an emulated host.
    #[serde(default)]
    pub netns: Option<String>,
    /// The cgroup the daemon moves itself into (an emulated host's CPU limit).
    #[serde(default)]
    pub cgroup: Option<PathBuf>,
    /// Whose the stores of a cluster it forms are (fixed when it forms).
    #[serde(default)]
    pub scope: Scope,
}

impl JoinConfig {
    /// Joining the cluster in `dir` with the defaults: this host, its
    /// address, node-local storage, the launcher's count.
    pub fn new(dir: PathBuf) -> JoinConfig {
        JoinConfig {
            dir,
            expect: None,
            store: None,
            name: None,
            advertise: None,
            mount: None,
            node_dir: None,
            placement: Placement::default(),
            replicas: 1,
            emulated: false,
            netns: None,
            cgroup: None,
            scope: Scope::Kept,
        }
    }
}

fn one() -> u32 {
    1
}

fn context(what: impl std::fmt::Display) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Serves until stopped (`Shutdown`, SIGTERM or SIGINT).
pub fn serve(cfg: ServeConfig) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = rt.block_on(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let signalled = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        serve_until(&cfg, signalled).await
    });
    // Transfer threads blocked reading idle pooled connections must not
    // keep a stopped daemon alive.
    rt.shutdown_timeout(Duration::from_millis(200));
    served
}

/// Joins the cluster and serves until a client asks the daemon to stop or
/// `stop` ends (the daemon then stops without purging); flushes its
/// metadata, and removes its node directory if asked to or if the cluster
/// is its job's.
pub async fn serve_until(
    cfg: &ServeConfig,
    stop: impl std::future::Future<Output = ()>,
) -> io::Result<()> {
    let listen = cfg
        .listen
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(context(format!("listening on {listen}")))?;
    let Joined {
        spec: cluster,
        node,
        node_dir,
        secret,
        rejoined,
    } = joined(&cfg.join, listener.local_addr()?.port())?;
    let scope = cluster.scope.clone();
    let name = cluster.nodes[node as usize].name.clone();
    let daemon = Daemon::new(
        DaemonConfig {
            node,
            node_dir: node_dir.clone(),
            secret,
            durability: cfg.durability,
            cluster,
            rejoined,
        },
        listener,
    )
    .await
    .map_err(context(format!("node {node} in {}", node_dir.display())))?;
    let addr = daemon.local_addr()?;
    if let Some(f) = &cfg.addr_file {
        let tmp = f.with_extension("tmp");
        std::fs::write(&tmp, addr.to_string())?;
        std::fs::rename(&tmp, f)?;
    }
    tracing::info!("node {node} serving on {addr}");
    let meta = daemon.metadata();
    let upkeep = tokio::spawn(look_after(cfg.join.dir.clone(), node, cfg.upkeep));
    let (stopped, signalled) = tokio::select! {
        r = daemon.run() => (r?, false),
        _ = stop => (Stopped { purge: false }, true),
    };
    upkeep.abort();
    // What was acknowledged without a flush (`--durability none`) is on
    // disk before the daemon goes.
    if let Err(e) = meta.flush().await {
        tracing::warn!("flushing the metadata as the daemon stops: {e}");
    }
    if stopped.purge || scope.is_job() {
        std::fs::remove_dir_all(&node_dir)
            .map_err(context(format!("purging {}", node_dir.display())))?;
        if signalled {
            // Stopped with its job, not by `fs down`: a later `fs down
            // --purge` reads here that this host's store is gone.
            scope::note_removed(&cfg.join.dir, &name, &Ok(()))?;
        }
    }
    Ok(())
}

/// Removes this user's stores under `store` whose daemons and jobs are
/// gone (a job killed before its daemons could remove them), but `own`.
fn sweep_dead_jobs(store: &std::path::Path, own: &std::path::Path) {
    for s in scope::sweep(store, Sweep::Dead(&Slurm), Some(own)) {
        match s.error {
            None => tracing::info!(
                "removed {} ({} bytes), a store of {} whose daemon and job are gone",
                s.dir.display(),
                s.bytes,
                s.cluster.display()
            ),
            Some(e) => tracing::warn!(
                "could not remove {}, a store whose daemon and job are gone: {e}",
                s.dir.display()
            ),
        }
    }
}

/// A daemon's place in its cluster.
struct Joined {
    spec: ClusterSpec,
    node: NodeId,
    node_dir: PathBuf,
    secret: Secret,
    /// The cluster was formed before: this node comes back.
    rejoined: bool,
}

/// Joins the cluster forming in `j.dir` as this node, serving on `port`,
/// and waits until it is formed; returns this node's id, directory and the
/// cluster's secret. A node of a formed cluster that comes back (restarted)
/// takes its place again, recording its new address if it has one.
fn joined(j: &JoinConfig, port: u16) -> io::Result<Joined> {
    let name = j.name.clone().unwrap_or_else(join::hostname);
    let expect = j.expect.or_else(join::expected_from_env).ok_or_else(|| {
        io::Error::other(
            "how many daemons form the cluster? give --expect N (or start them with srun or mpiexec)",
        )
    })?;
    let node_dir = match &j.node_dir {
        Some(d) => d.clone(),
        None => {
            let store = j.store.clone().unwrap_or_else(std::env::temp_dir);
            let node_dir = join::node_dir(&store, &j.dir, &name);
            sweep_dead_jobs(&store, &node_dir);
            node_dir
        }
    };
    crate::private_dir::create(&j.dir)?;
    let secret = join::shared_secret(&j.dir)?;
    let me = join::Member {
        name: name.clone(),
        addr: SocketAddr::new(j.advertise.unwrap_or_else(join::advertised_ip), port),
        dir: node_dir.clone(),
        pid: std::process::id(),
        netns: j.netns.clone(),
        cgroup: j.cgroup.clone(),
    };
    let rejoined = j.dir.join(crate::cluster::CLUSTER_FILE).exists();
    // Whose the store is, said before the daemon is known to the cluster:
    // a daemon killed once it joined leaves a store that says.
    scope::claim(&node_dir, &j.dir, &name, &j.scope)?;
    join::register(&j.dir, &me)?;
    let form = join::Form {
        expect,
        placement: j.placement,
        hosts: !j.emulated,
        replicas: j.replicas,
        scope: j.scope.clone(),
    };
    let spec = join::wait_formed(&j.dir, &name, &form, JOIN_TIMEOUT)?;
    if spec.scope != j.scope {
        // Restarted by a starter that did not know: the cluster's stands.
        scope::claim(&node_dir, &j.dir, &name, &spec.scope)?;
    }
    if let Some(job) = spec.scope.slurm_job().filter(|_| rejoined) {
        if Slurm.running(job) == Some(false) {
            let _ = std::fs::remove_dir_all(&node_dir);
            return Err(io::Error::other(format!(
                "the file system in {} belonged to Slurm job {job}, which has ended: \
                 its store on {name} is removed (deploy with --keep to keep a file system \
                 past its job)",
                j.dir.display()
            )));
        }
    }
    let node = spec
        .node_named(&name)
        .expect("wait_formed checks membership");
    let id = node.id;
    let spec = if node.addr == me.addr {
        spec
    } else {
        // Back on another port: clients must find it there.
        let moved = |spec: &mut ClusterSpec| spec.nodes[id as usize].addr = me.addr;
        ClusterSpec::update(&j.dir, moved)
            .map_err(context(format!("recording {name}'s new address")))?
    };
    Ok(Joined {
        spec,
        node: id,
        node_dir,
        secret,
        rejoined,
    })
}
