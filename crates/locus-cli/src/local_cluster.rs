//! Starting, stopping and inspecting daemons: `locus fs serve|up|down|status`.

use crate::deploy::{self, Deploy, SiteLauncher};
use crate::fs_ops::ClusterArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use locus_fs::cluster::CLUSTER_FILE;
use locus_fs::join;
use locus_fs::launch::{self, running_pid, Launch};
use locus_fs::meta::Durability;
use locus_fs::server::{Daemon, DaemonConfig, Stopped};
use locus_fs::{Client, ClientOptions, ClusterSpec, Placement};
use locus_proto::auth::Secret;
use locus_proto::fs::NodeId;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    /// Join the cluster being formed in DIR (on the shared file system),
    /// one daemon per host as a site launcher starts them; the cluster forms
    /// when --expect daemons (or the launcher's node count) have joined.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["node_dir", "node", "secret"])]
    pub join: Option<PathBuf>,
    /// With --join: how many daemons form the cluster (default: the
    /// launcher's SLURM_NNODES, PMI_SIZE or OMPI_COMM_WORLD_SIZE).
    #[arg(long, requires = "join")]
    pub expect: Option<u32>,
    /// With --join: node-local storage for this host's store and metadata
    /// (default: $TMPDIR, else /tmp).
    #[arg(long, requires = "join")]
    pub store: Option<PathBuf>,
    /// With --join: this host's name in the cluster (default: its hostname).
    #[arg(long, requires = "join")]
    pub name: Option<String>,
    /// With --join: the address other hosts reach this one at (default: its
    /// first non-loopback IPv4 address).
    #[arg(long, requires = "join")]
    pub advertise: Option<std::net::IpAddr>,
    /// This node's directory: metadata shard, data store.
    #[arg(long, required_unless_present = "join")]
    pub node_dir: Option<PathBuf>,
    /// This node's id in the cluster's node list.
    #[arg(long, required_unless_present = "join")]
    pub node: Option<NodeId>,
    /// Address to listen on (port 0 picks a free port; default with --join:
    /// every interface).
    #[arg(long, required_unless_present = "join")]
    pub listen: Option<SocketAddr>,
    /// File holding the cluster secret.
    #[arg(long, required_unless_present = "join")]
    pub secret: Option<PathBuf>,
    /// group: every acknowledged metadata change is on disk; none: not flushed.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
    /// Write the bound address here once serving.
    #[arg(long)]
    pub addr_file: Option<PathBuf>,
}

/// How long daemons started by a launcher wait for each other.
const JOIN_TIMEOUT: Duration = Duration::from_secs(120);

pub fn serve(a: ServeArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = rt.block_on(async move {
        let listen = a
            .listen
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let (cfg, node_dir) = match &a.join {
            Some(dir) => joined(&a, dir, listener.local_addr()?.port())?,
            None => {
                let secret = a.secret.as_ref().expect("required without --join");
                let secret = Secret::load(secret)
                    .with_context(|| format!("cluster secret {}", secret.display()))?;
                let node_dir = a.node_dir.clone().expect("required without --join");
                let node = a.node.expect("required without --join");
                let cfg = DaemonConfig {
                    node,
                    node_dir: node_dir.clone(),
                    secret,
                    durability: a.durability,
                };
                (cfg, node_dir)
            }
        };
        let node = cfg.node;
        let daemon = Daemon::new(cfg, listener)
            .await
            .with_context(|| format!("node {node} in {}", node_dir.display()))?;
        let addr = daemon.local_addr()?;
        if let Some(f) = &a.addr_file {
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
                .with_context(|| format!("purging {}", node_dir.display()))?;
        }
        Ok(())
    });
    // Transfer threads blocked reading idle pooled connections must not
    // keep a stopped daemon alive.
    rt.shutdown_timeout(Duration::from_millis(200));
    served
}

/// Joins the cluster forming in `dir` as this host, serving on `port`, and
/// waits until it is formed; returns this node's configuration.
fn joined(a: &ServeArgs, dir: &Path, port: u16) -> Result<(DaemonConfig, PathBuf)> {
    let name = a.name.clone().unwrap_or_else(join::hostname);
    let expect = a.expect.or_else(join::expected_from_env).context(
        "how many daemons form the cluster? give --expect N (or start them with srun or mpiexec)",
    )?;
    let store = a.store.clone().unwrap_or_else(std::env::temp_dir);
    let node_dir = join::node_dir(&store, dir, &name);
    locus_fs::private_dir::create(dir)?;
    let secret = join::shared_secret(dir)?;
    let me = join::Member {
        name: name.clone(),
        addr: SocketAddr::new(a.advertise.unwrap_or_else(join::advertised_ip), port),
        dir: node_dir.clone(),
        pid: std::process::id(),
    };
    join::register(dir, &me)?;
    let spec = join::wait_formed(dir, &name, expect, JOIN_TIMEOUT)?;
    let node = spec
        .nodes
        .iter()
        .find(|n| n.name == name)
        .map(|n| n.id)
        .expect("wait_formed checks membership");
    let cfg = DaemonConfig {
        node,
        node_dir: node_dir.clone(),
        secret,
        durability: a.durability,
    };
    Ok((cfg, node_dir))
}

#[derive(Args)]
pub struct UpArgs {
    /// Number of nodes to emulate (for a new cluster); with --launcher, the
    /// number of hosts (default for srun: the allocation's nodes).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// Start one daemon per host of a job through the site's launcher
    /// (instead of emulating nodes on this machine).
    #[arg(long)]
    pub launcher: Option<SiteLauncher>,
    /// With --launcher: the launcher program (default: srun or mpiexec).
    #[arg(long, requires = "launcher")]
    pub launcher_program: Option<PathBuf>,
    /// With --launcher: one more argument for the launcher, before the
    /// command (repeat it: `--launcher-arg=-hosts --launcher-arg=a,b`).
    #[arg(long, requires = "launcher", allow_hyphen_values = true)]
    pub launcher_arg: Vec<String>,
    /// With --launcher: node-local storage on every host (default: its
    /// $TMPDIR, else /tmp).
    #[arg(long, requires = "launcher")]
    pub store: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Default placement of new files: local, hash or round-robin.
    #[arg(long, default_value = "local")]
    pub placement: Placement,
    /// Metadata durability: group (fsync per group commit) or none.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
}

fn launch(durability: Durability) -> Result<Launch> {
    Ok(Launch {
        exe: std::env::current_exe().context("locating the locus binary")?,
        durability,
    })
}

pub fn up(a: UpArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    let launch = launch(a.durability)?;
    if dir.join(CLUSTER_FILE).exists() {
        let (spec, restarted) = launch.restart_stopped(dir)?;
        println!(
            "cluster at {}: {} nodes, {restarted} daemon(s) restarted",
            dir.display(),
            spec.nodes.len()
        );
        return Ok(());
    }
    let spec = match a.launcher {
        Some(launcher) => deploy::up(Deploy {
            dir,
            launcher,
            program: a.launcher_program.clone(),
            hosts: a.nodes,
            store: a.store.clone(),
            launcher_args: &a.launcher_arg,
        })?,
        None => launch.create(dir, a.nodes.unwrap_or(4), a.placement)?,
    };
    println!(
        "cluster at {}: {} nodes up",
        dir.display(),
        spec.nodes.len()
    );
    for n in &spec.nodes {
        println!("  node {} {} {}", n.id, n.name, n.addr);
    }
    Ok(())
}

#[derive(Args)]
pub struct DownArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Also delete the cluster's directory (all its data).
    #[arg(long)]
    pub purge: bool,
}

pub fn down(a: DownArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    let stopped = launch::stop(dir, a.purge)?;
    if a.purge {
        std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    println!("cluster at {}: {stopped} daemon(s) stopped", dir.display());
    Ok(())
}

pub fn status(a: ClusterArgs) -> Result<()> {
    let spec = ClusterSpec::load(&a.dir)?;
    let client = Client::open(&a.dir, ClientOptions::default())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "{:>4} {:<8} {:<21} {:>8} {:<5} {:>9} {:>9} {:>12}",
        "node", "name", "address", "pid", "state", "records", "files", "bytes"
    );
    let mut down = 0;
    for n in &spec.nodes {
        let status = rt.block_on(client.status(n.id));
        // The daemon says its pid (it may run on another host).
        let pid = match &status {
            Ok(s) => s.pid.to_string(),
            Err(_) => running_pid(&n.dir).map_or("-".to_string(), |p| p.to_string()),
        };
        let head = format!(
            "{:>4} {:<8} {:<21} {:>8}",
            n.id,
            n.name,
            n.addr.to_string(),
            pid
        );
        match status {
            Ok(s) => match s.meta_error {
                Some(why) => {
                    down += 1;
                    println!("{head} degraded  metadata store failing: {why}");
                }
                None => println!(
                    "{head} {:<5} {:>9} {:>9} {:>12}",
                    "up", s.records, s.stored_files, s.stored_bytes
                ),
            },
            Err(e) => {
                down += 1;
                println!("{head} down  {e}");
            }
        }
    }
    if down > 0 {
        bail!("{down} of {} daemons down or degraded", spec.nodes.len());
    }
    Ok(())
}
