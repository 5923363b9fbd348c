//! Starting, stopping and inspecting daemons: `locus fs serve|up|down|status`.

use crate::fs_ops::ClusterArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use locus_fs::cluster::CLUSTER_FILE;
use locus_fs::launch::{self, running_pid, Launch};
use locus_fs::meta::Durability;
use locus_fs::server::{Daemon, DaemonConfig};
use locus_fs::{Client, ClientOptions, ClusterSpec, Placement};
use locus_proto::auth::Secret;
use locus_proto::fs::NodeId;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args)]
pub struct ServeArgs {
    /// This node's directory: metadata shard, data store.
    #[arg(long)]
    pub node_dir: PathBuf,
    /// This node's id in the cluster's node list.
    #[arg(long)]
    pub node: NodeId,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long)]
    pub listen: SocketAddr,
    /// File holding the cluster secret.
    #[arg(long)]
    pub secret: PathBuf,
    /// group: every acknowledged metadata change is on disk; none: not flushed.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
    /// Write the bound address here once serving.
    #[arg(long)]
    pub addr_file: Option<PathBuf>,
}

pub fn serve(a: ServeArgs) -> Result<()> {
    let secret = Secret::load(&a.secret)
        .with_context(|| format!("cluster secret {}", a.secret.display()))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let daemon = Daemon::bind(DaemonConfig {
            node: a.node,
            listen: a.listen,
            node_dir: a.node_dir.clone(),
            secret,
            durability: a.durability,
        })
        .await
        .with_context(|| format!("node {} on {}", a.node, a.listen))?;
        let addr = daemon.local_addr()?;
        if let Some(f) = &a.addr_file {
            let tmp = f.with_extension("tmp");
            std::fs::write(&tmp, addr.to_string())?;
            std::fs::rename(&tmp, f)?;
        }
        tracing::info!("node {} serving on {addr}", a.node);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = daemon.run() => r?,
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(())
    })
}

#[derive(Args)]
pub struct UpArgs {
    /// Number of nodes to emulate (for a new cluster).
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
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
    let spec = launch.create(dir, a.nodes, a.placement)?;
    println!("cluster at {}: {} nodes up", dir.display(), a.nodes);
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
    let stopped = launch::stop(dir)?;
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
        let pid = running_pid(&n.dir).map_or("-".to_string(), |p| p.to_string());
        let head = format!(
            "{:>4} {:<8} {:<21} {:>8}",
            n.id,
            n.name,
            n.addr.to_string(),
            pid
        );
        match rt.block_on(client.status(n.id)) {
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
