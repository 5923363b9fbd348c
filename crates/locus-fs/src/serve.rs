//! Running one daemon to its end from its typed configuration: as a node
//! of a cluster whose node list its starter made (`locus fs up` on one
//! machine, an emulated cluster), or joining a cluster that forms as a
//! site launcher starts one daemon per host.

use crate::join;
use crate::meta::Durability;
use crate::server::{Daemon, DaemonConfig, Stopped};
use locus_proto::auth::Secret;
use locus_proto::fs::NodeId;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// How long daemons started by a launcher wait for each other.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything a daemon is told when started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeConfig {
    pub membership: Membership,
    /// Where to listen (port 0 picks a free port; default: every interface).
    pub listen: Option<SocketAddr>,
    pub durability: Durability,
    /// Where to write the bound address once serving.
    pub addr_file: Option<PathBuf>,
}

/// Which node the daemon is, or how it learns it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Membership {
    /// Node `node` of a cluster whose node list is already made.
    Node {
        node: NodeId,
        node_dir: PathBuf,
        /// The file holding the cluster secret.
        secret: PathBuf,
    },
    /// One of the daemons forming the cluster in a shared directory.
    Join(JoinConfig),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JoinConfig {
    /// The cluster's directory, on a file system every host shares.
    pub dir: PathBuf,
    /// How many daemons form the cluster (default: the launcher's count).
    pub expect: Option<u32>,
    /// Node-local storage for the store and metadata (default: `$TMPDIR`,
    /// else `/tmp`).
    pub store: Option<PathBuf>,
    /// This host's name in the cluster (default: its hostname).
    pub name: Option<String>,
    /// The address other hosts reach this one at (default: its first
    /// non-loopback IPv4 address).
    pub advertise: Option<IpAddr>,
    /// Where this host mounts the cluster once it is formed, until the
    /// daemon stops (done by the program serving it: the mount is not this
    /// crate's).
    #[serde(default)]
    pub mount: Option<PathBuf>,
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
        let listen = cfg
            .listen
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(context(format!("listening on {listen}")))?;
        let (node, node_dir, secret) = match &cfg.membership {
            Membership::Node {
                node,
                node_dir,
                secret,
            } => {
                let secret = Secret::load(secret)
                    .map_err(context(format!("cluster secret {}", secret.display())))?;
                (*node, node_dir.clone(), secret)
            }
            Membership::Join(j) => joined(j, listener.local_addr()?.port())?,
        };
        let daemon = Daemon::new(
            DaemonConfig {
                node,
                node_dir: node_dir.clone(),
                secret,
                durability: cfg.durability,
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
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let stopped = tokio::select! {
            r = daemon.run() => r?,
            _ = term.recv() => Stopped { purge: false },
            _ = tokio::signal::ctrl_c() => Stopped { purge: false },
        };
        if stopped.purge {
            std::fs::remove_dir_all(&node_dir)
                .map_err(context(format!("purging {}", node_dir.display())))?;
        }
        Ok(())
    });
    // Transfer threads blocked reading idle pooled connections must not
    // keep a stopped daemon alive.
    rt.shutdown_timeout(Duration::from_millis(200));
    served
}

/// Joins the cluster forming in `j.dir` as this host, serving on `port`,
/// and waits until it is formed; returns this node's id, directory and the
/// cluster's secret.
fn joined(j: &JoinConfig, port: u16) -> io::Result<(NodeId, PathBuf, Secret)> {
    let name = j.name.clone().unwrap_or_else(join::hostname);
    let expect = j.expect.or_else(join::expected_from_env).ok_or_else(|| {
        io::Error::other(
            "how many daemons form the cluster? give --expect N (or start them with srun or mpiexec)",
        )
    })?;
    let store = j.store.clone().unwrap_or_else(std::env::temp_dir);
    let node_dir = join::node_dir(&store, &j.dir, &name);
    crate::private_dir::create(&j.dir)?;
    let secret = join::shared_secret(&j.dir)?;
    let me = join::Member {
        name: name.clone(),
        addr: SocketAddr::new(j.advertise.unwrap_or_else(join::advertised_ip), port),
        dir: node_dir.clone(),
        pid: std::process::id(),
    };
    join::register(&j.dir, &me)?;
    let spec = join::wait_formed(&j.dir, &name, expect, JOIN_TIMEOUT)?;
    let node = spec
        .node_named(&name)
        .map(|n| n.id)
        .expect("wait_formed checks membership");
    Ok((node, node_dir, secret))
}
