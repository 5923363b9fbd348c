//! Clusters whose nodes Locus starts itself: N daemons on one machine,
//! each emulating a node on its own loopback address (127.0.0.K+1) or on an
//! emulated host, with its own directory under the cluster's. They form the
//! cluster as daemons a site launcher starts do (they join it), so the
//! emulator runs the deployment path of a real cluster. Used by `locus fs
//! up|down`, emulated clusters, runs and the benchmarks. Also stopping any
//! cluster, deployed ones included.

use crate::role::{self, Program};
use locus_fs::{
    Client, ClientOptions, ClusterSpec, Durability, JoinConfig, NodeInfo, Placement, ServeConfig,
    Upkeep, CLUSTER_FILE,
};
use locus_proto::fs::NodeId;
use std::io;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The daemon's role file in its node directory.
const ROLE_FILE: &str = "serve.json";
const PID_FILE: &str = "daemon.pid";
const ADDR_FILE: &str = "daemon.addr";
const LOG_FILE: &str = "daemon.log";
const START_TIMEOUT: Duration = Duration::from_secs(15);
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a daemon gets to answer `Shutdown`.
const STOP_ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// How daemons are started.
#[derive(Clone)]
pub struct Daemons {
    /// The binary that runs a daemon (`locus launched FILE`).
    pub program: Arc<dyn Program>,
    /// When their metadata changes are on disk before they are answered.
    pub durability: Durability,
    /// Copies of data and metadata a cluster they form keeps.
    pub replicas: u32,
    /// Each daemon's background upkeep of its store.
    pub upkeep: Upkeep,
    /// They stop (SIGTERM) when the process that started them dies, however
    /// it dies: a run's own file system, not kept after it.
    pub with_launcher: bool,
}

fn fail(msg: String) -> io::Error {
    io::Error::other(msg)
}

/// The directory of node `id` in the cluster directory `dir`.
pub fn node_dir(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}"))
}

/// The pid in `node_dir`'s pid file if that process is still a running daemon.
pub fn running_pid(node_dir: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(node_dir.join(PID_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // A zombie (state Z after the command name) is not running.
    let state = stat.rsplit(')').next()?.split_whitespace().next()?;
    // Started on this node's role file: not a reused pid.
    let role = node_dir.join(ROLE_FILE);
    let is_daemon = cmdline
        .split(|b| *b == 0)
        .any(|arg| Path::new(std::ffi::OsStr::from_bytes(arg)) == role)
        && state != "Z";
    is_daemon.then_some(pid)
}

impl Daemons {
    /// Starts the daemon of `node` of the formed cluster `spec` in `dir`
    /// again, on `listen`, and waits until it serves.
    fn start(
        &self,
        dir: &Path,
        spec: &ClusterSpec,
        node: &NodeInfo,
        listen: SocketAddr,
    ) -> io::Result<()> {
        let size = spec.nodes.len() as u32;
        let child = self.spawn(dir, size, spec.placement, node, listen)?;
        wait_started(node, child)
    }

    /// Starts the daemon of `node` without waiting for it: it joins the
    /// cluster forming in `dir` under its name, on its node's address.
    fn spawn(
        &self,
        dir: &Path,
        size: u32,
        placement: Placement,
        node: &NodeInfo,
        listen: SocketAddr,
    ) -> io::Result<Child> {
        let addr_file = node.dir.join(ADDR_FILE);
        let _ = std::fs::remove_file(&addr_file);
        locus_fs::create_private_dir(&node.dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.dir.join(LOG_FILE))?;
        let config = ServeConfig {
            join: JoinConfig {
                expect: Some(size),
                name: Some(node.name.clone()),
                advertise: Some(node.addr.ip()),
                node_dir: Some(node.dir.clone()),
                placement,
                replicas: self.replicas,
                emulated: true,
                netns: node.netns.clone(),
                cgroup: node.cgroup.clone(),
                ..JoinConfig::new(dir.to_path_buf())
            },
            listen: Some(listen),
            durability: self.durability,
            addr_file: Some(addr_file),
            upkeep: self.upkeep,
        };
        let role_file = node.dir.join(ROLE_FILE);
        role::write(&role_file, &config)?;
        let mut cmd = self.program.command(&role_file);
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(ns) = &node.netns {
            crate::netns::enter(&mut cmd, ns)?;
        }
        if let Some(cg) = &node.cgroup {
            crate::cgroup::join(&mut cmd, cg)?;
        }
        // SAFETY: setsid is async-signal-safe; the daemon leaves our session so
        // it outlives the terminal that started it.
        let (with_launcher, launcher) = (self.with_launcher, std::process::id());
        unsafe {
            cmd.pre_exec(move || {
                libc::setsid();
                if with_launcher {
                    crate::die_with_parent(libc::SIGTERM, launcher)?;
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        std::fs::write(node.dir.join(PID_FILE), child.id().to_string())?;
        Ok(child)
    }

    /// Creates a cluster of `nodes` daemons in the new directory `dir`, each
    /// emulating a node on its own loopback address.
    pub fn create(&self, dir: &Path, nodes: u32, placement: Placement) -> io::Result<ClusterSpec> {
        if nodes == 0 || nodes > 250 {
            return Err(fail("the number of nodes must be between 1 and 250".into()));
        }
        let nodes = (0..nodes)
            .map(|id| NodeInfo {
                id,
                name: format!("node{id}"),
                addr: SocketAddr::from(([127, 0, 0, id as u8 + 1], 0)),
                dir: node_dir(dir, id),
                netns: None,
                cgroup: None,
            })
            .collect();
        self.create_nodes(dir, nodes, placement)
    }

    /// Creates a cluster in the new directory `dir` from `nodes` (numbered
    /// 0..N-1 in the natural order of their names), starting each node's
    /// daemon on its address, in its network namespace if it has one; port
    /// 0 picks a free port. The daemons form the cluster.
    pub fn create_nodes(
        &self,
        dir: &Path,
        nodes: Vec<NodeInfo>,
        placement: Placement,
    ) -> io::Result<ClusterSpec> {
        locus_fs::create_private_dir(dir)?;
        if dir.join(CLUSTER_FILE).exists() {
            return Err(fail(format!(
                "{}: a cluster already exists there",
                dir.display()
            )));
        }
        let size = nodes.len() as u32;
        // All start at once, then each is waited for.
        let mut started = Vec::new();
        let mut failed = None;
        for node in &nodes {
            match self.spawn(dir, size, placement, node, node.addr) {
                Ok(child) => started.push((node, child)),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        for (node, child) in started {
            if failed.is_none() {
                if let Err(e) = wait_started(node, child) {
                    failed = Some(e);
                }
            }
        }
        let formed = match failed {
            None => ClusterSpec::load(dir),
            Some(e) => Err(e),
        };
        if formed.is_err() {
            // Leave nothing running for a cluster that was not made.
            stop_dirs(nodes.iter().map(|n| n.dir.as_path()));
        }
        formed
    }

    /// Restarts the daemons of the cluster in `dir` that are not running, on
    /// their recorded addresses; returns the cluster and how many restarted.
    pub fn restart_stopped(&self, dir: &Path) -> io::Result<(ClusterSpec, usize)> {
        let spec = ClusterSpec::load(dir)?;
        if spec.joined {
            // Its stores are on its hosts: never started anywhere else.
            return Err(fail(format!(
                "the file system in {} runs on a job's hosts: start its daemons again \
                 through their launcher (`locus fs up --dir {0} --launcher srun|mpiexec`, \
                 inside an allocation holding its hosts)",
                dir.display()
            )));
        }
        let (mut restarted, mut failed) = (0, Vec::new());
        for node in &spec.nodes {
            if running_pid(&node.dir).is_some() {
                continue;
            }
            // Its port may have been taken meanwhile (ports are reused):
            // then any port on its address, which the daemon records.
            let started = self
                .start(dir, &spec, node, node.addr)
                .or_else(|_| self.start(dir, &spec, node, SocketAddr::new(node.addr.ip(), 0)));
            match started {
                Ok(()) => restarted += 1,
                // The others start all the same.
                Err(e) => failed.push(format!("node {} ({}): {e}", node.id, node.name)),
            }
        }
        if !failed.is_empty() {
            return Err(fail(format!(
                "{restarted} daemon(s) restarted, {} did not: {}",
                failed.len(),
                failed.join("; ")
            )));
        }
        Ok((ClusterSpec::load(dir)?, restarted))
    }
}

/// Waits until the daemon `child` of `node` serves (it wrote its address).
fn wait_started(node: &NodeInfo, mut child: Child) -> io::Result<()> {
    let addr_file = node.dir.join(ADDR_FILE);
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if addr_file.exists() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(node.dir.join(LOG_FILE)).unwrap_or_default();
            let last = log.lines().last().unwrap_or("").to_string();
            return Err(fail(format!(
                "daemon of {} exited ({status}): {last}",
                node.name
            )));
        }
        if Instant::now() > deadline {
            return Err(fail(format!(
                "daemon of {} did not start within {START_TIMEOUT:?}",
                node.name
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What stopping a cluster did.
#[derive(Debug)]
pub struct Stopped {
    /// How many daemons were stopped.
    pub daemons: usize,
    /// Asked to purge: the nodes whose stores are still there (their
    /// daemons did not answer, and the stores are on other hosts).
    pub stores_left: Vec<NodeInfo>,
}

/// Stops every daemon of the cluster in `dir`: asks each over the network
/// (authenticated; wherever it runs), then signals the ones this machine
/// started that are still running (SIGTERM, SIGKILL after a grace period).
/// With `purge` each daemon also removes its node directory, and the node
/// directories on this host of daemons that did not answer are removed
/// here.
pub fn stop(dir: &Path, purge: bool) -> io::Result<Stopped> {
    let spec = ClusterSpec::load(dir)?;
    let mut stopped: std::collections::BTreeSet<NodeId> = spec
        .nodes
        .iter()
        .filter(|n| running_pid(&n.dir).is_some())
        .map(|n| n.id)
        .collect();
    let answered = ask_to_stop(dir, &spec, purge);
    stop_dirs(spec.nodes.iter().map(|n| n.dir.as_path()));
    let mut stores_left = Vec::new();
    if purge {
        let here = locus_fs::hostname();
        for n in spec.nodes.iter().filter(|n| !answered.contains(&n.id)) {
            let on_this_host = !spec.joined || n.name == here;
            if !(on_this_host && locus_fs::remove_store(&n.dir).is_ok()) {
                stores_left.push(n.clone());
            }
        }
    }
    stopped.extend(answered);
    Ok(Stopped {
        daemons: stopped.len(),
        stores_left,
    })
}

/// Sends `Shutdown` to every daemon at once; returns those that answered.
fn ask_to_stop(dir: &Path, spec: &ClusterSpec, purge: bool) -> Vec<NodeId> {
    ask_each(dir, spec, move |client, id| async move {
        client.shutdown(id, purge).await
    })
}

/// The nodes of the cluster in `dir` whose daemons answer.
pub fn serving(dir: &Path) -> io::Result<Vec<NodeId>> {
    let spec = ClusterSpec::load(dir)?;
    Ok(ask_each(dir, &spec, |client, id| async move {
        client.ping(id).await
    }))
}

/// Asks every daemon of the cluster `spec` in `dir` at once; returns those
/// for which `ask` succeeded. The client is diskless: a node's store is not
/// made again here (on a host not the node's, or after its daemon removed
/// it) to send a message.
fn ask_each<F, Fut>(dir: &Path, spec: &ClusterSpec, ask: F) -> Vec<NodeId>
where
    F: Fn(Client, NodeId) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = locus_proto::FsResult<()>> + Send + 'static,
{
    let scratch = std::env::temp_dir().join(format!("locus-ask-{}", std::process::id()));
    let opts = ClientOptions {
        timeout: STOP_ASK_TIMEOUT,
        scratch: Some(scratch.clone()),
        ..ClientOptions::default()
    };
    let Ok(client) = Client::open(dir, opts) else {
        return Vec::new();
    };
    let ids: Vec<NodeId> = spec.nodes.iter().map(|n| n.id).collect();
    // A thread of its own: callers may be inside an async runtime.
    let answered = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return Vec::new();
        };
        rt.block_on(async {
            let asks: Vec<_> = (ids.into_iter())
                .map(|id| {
                    let asked = ask(client.clone(), id);
                    tokio::spawn(async move { asked.await.ok().map(|()| id) })
                })
                .collect();
            let mut answered = Vec::new();
            for ask in asks {
                answered.extend(ask.await.ok().flatten());
            }
            answered
        })
    })
    .join()
    .unwrap_or_default();
    let _ = std::fs::remove_dir_all(scratch);
    answered
}

/// Stops the daemons running from the node directories `dirs` (SIGTERM,
/// SIGKILL after a grace period).
fn stop_dirs<'a>(dirs: impl Iterator<Item = &'a Path> + Clone) {
    for pid in dirs.clone().filter_map(running_pid) {
        // SAFETY: a plain signal to a daemon of this cluster (checked via /proc).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline && dirs.clone().any(|d| running_pid(d).is_some()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    for d in dirs {
        if let Some(pid) = running_pid(d) {
            // SAFETY: as above; it ignored SIGTERM for the grace period.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = std::fs::remove_file(d.join(PID_FILE));
    }
}
