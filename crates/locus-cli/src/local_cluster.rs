//! Starting, stopping and inspecting daemons: `locus fs serve|up|down|status`.
//! A local cluster emulates N nodes on one machine, each daemon on its own
//! loopback address (127.0.0.K+1) with its own directory under the cluster's.

use crate::fs_ops::ClusterArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use locus_fs::cluster::{CLUSTER_FILE, SECRET_FILE};
use locus_fs::meta::Durability;
use locus_fs::server::{Daemon, DaemonConfig};
use locus_fs::{Client, ClientOptions, ClusterSpec, NodeInfo, Placement};
use locus_proto::auth::Secret;
use locus_proto::fs::NodeId;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PID_FILE: &str = "daemon.pid";
const ADDR_FILE: &str = "daemon.addr";
const LOG_FILE: &str = "daemon.log";
const START_TIMEOUT: Duration = Duration::from_secs(15);

fn parse_durability(s: &str) -> Result<Durability, String> {
    match s {
        "group" => Ok(Durability::Group),
        "none" => Ok(Durability::None),
        other => Err(format!(
            "unknown durability '{other}' (expected group or none)"
        )),
    }
}

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
    #[arg(long, default_value = "group", value_parser = parse_durability)]
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
    #[arg(long, default_value = "group", value_parser = parse_durability)]
    pub durability: Durability,
}

fn node_dir(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}"))
}

/// The pid in `node_dir`'s pid file if that process is still a running daemon.
fn running_pid(node_dir: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(node_dir.join(PID_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // A zombie (state Z after the command name) is not running.
    let state = stat.rsplit(')').next()?.split_whitespace().next()?;
    let is_daemon = String::from_utf8_lossy(&cmdline).contains("serve") && state != "Z";
    is_daemon.then_some(pid)
}

/// Starts the daemon of `node` and waits until it serves; returns its address.
fn start_daemon(
    node: &NodeInfo,
    listen: SocketAddr,
    secret: &Path,
    durability: Durability,
) -> Result<SocketAddr> {
    let addr_file = node.dir.join(ADDR_FILE);
    let _ = std::fs::remove_file(&addr_file);
    std::fs::create_dir_all(&node.dir)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.dir.join(LOG_FILE))?;
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["fs", "serve", "--node"])
        .arg(node.id.to_string())
        .arg("--node-dir")
        .arg(&node.dir)
        .arg("--listen")
        .arg(listen.to_string())
        .arg("--secret")
        .arg(secret)
        .arg("--addr-file")
        .arg(&addr_file)
        .arg("--durability")
        .arg(match durability {
            Durability::Group => "group",
            Durability::None => "none",
        })
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; the daemon leaves our session so it
    // outlives the terminal that ran `locus fs up`.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting a daemon")?;
    std::fs::write(node.dir.join(PID_FILE), child.id().to_string())?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(&addr_file) {
            return text.trim().parse().context("daemon address");
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(node.dir.join(LOG_FILE)).unwrap_or_default();
            let last = log.lines().last().unwrap_or("").to_string();
            bail!("daemon of node {} exited ({status}): {last}", node.id);
        }
        if Instant::now() > deadline {
            bail!(
                "daemon of node {} did not start within {START_TIMEOUT:?}",
                node.id
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn up(a: UpArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let secret = dir.join(SECRET_FILE);
    if dir.join(CLUSTER_FILE).exists() {
        // An existing cluster: restart whichever daemons are not running, on
        // their recorded addresses and directories.
        let spec = ClusterSpec::load(dir)?;
        let mut restarted = 0;
        for node in &spec.nodes {
            if running_pid(&node.dir).is_none() {
                start_daemon(node, node.addr, &secret, a.durability)?;
                restarted += 1;
            }
        }
        println!(
            "cluster at {}: {} nodes, {restarted} daemon(s) restarted",
            dir.display(),
            spec.nodes.len()
        );
        return Ok(());
    }
    if a.nodes == 0 || a.nodes > 250 {
        bail!("--nodes must be between 1 and 250");
    }
    Secret::generate()
        .save(&secret)
        .with_context(|| secret.display().to_string())?;
    let mut spec = ClusterSpec {
        nodes: Vec::new(),
        vnodes: locus_fs::ring::DEFAULT_VNODES,
        placement: a.placement,
    };
    for id in 0..a.nodes {
        let mut node = NodeInfo {
            id,
            name: format!("node{id}"),
            addr: SocketAddr::from(([127, 0, 0, id as u8 + 1], 0)),
            dir: node_dir(dir, id),
        };
        node.addr = start_daemon(&node, node.addr, &secret, a.durability)?;
        spec.nodes.push(node);
    }
    spec.save(dir)?;
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
    let spec = ClusterSpec::load(dir)?;
    let pids: Vec<i32> = spec
        .nodes
        .iter()
        .filter_map(|n| running_pid(&n.dir))
        .collect();
    for &pid in &pids {
        // SAFETY: plain signal to a process we started (checked via /proc).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && spec.nodes.iter().any(|n| running_pid(&n.dir).is_some()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    for n in &spec.nodes {
        if let Some(pid) = running_pid(&n.dir) {
            // SAFETY: as above; it ignored SIGTERM for 5 s.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = std::fs::remove_file(n.dir.join(PID_FILE));
    }
    if a.purge {
        std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    println!(
        "cluster at {}: {} daemon(s) stopped",
        dir.display(),
        pids.len()
    );
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
        match rt.block_on(client.status(n.id)) {
            Ok(s) => println!(
                "{:>4} {:<8} {:<21} {:>8} {:<5} {:>9} {:>9} {:>12}",
                n.id,
                n.name,
                n.addr.to_string(),
                pid,
                "up",
                s.records,
                s.stored_files,
                s.stored_bytes
            ),
            Err(e) => {
                down += 1;
                println!(
                    "{:>4} {:<8} {:<21} {:>8} down  {e}",
                    n.id,
                    n.name,
                    n.addr.to_string(),
                    pid
                );
            }
        }
    }
    if down > 0 {
        bail!("{down} of {} daemons down", spec.nodes.len());
    }
    Ok(())
}
