//! A cluster whose daemons run inside this process, each on its own thread
//! and runtime and its own loopback address, formed through the join path
//! deployed daemons take. A node is crashed by dropping its runtime: its
//! connections close and nothing is flushed or answered, as when its
//! process is killed (what it wrote to files stays, as the page cache
//! keeps it then). It restarts on the same address.

use locus_fs::{
    serve_until, Client, ClientOptions, ClusterSpec, Durability, JoinConfig, ServeConfig,
    Transport, Upkeep,
};
use locus_proto::fs::NodeId;
use locus_proto::FsResult;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a daemon gets to start serving.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What a cluster is made of.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Daemons.
    pub nodes: u32,
    /// Copies of metadata and data.
    pub replicas: u32,
    /// When a daemon's metadata changes are on disk before they are answered.
    pub durability: Durability,
}

/// N daemons in this process. Node ids follow the names' order, which is
/// the order they are made in. Dropping it crashes every one still running.
pub struct InProcess {
    dir: PathBuf,
    nodes: Vec<Node>,
}

struct Node {
    config: ServeConfig,
    running: Option<Running>,
}

/// A daemon's thread, and the sender that crashes it.
struct Running {
    crash: oneshot::Sender<()>,
    thread: JoinHandle<std::io::Result<()>>,
}

impl InProcess {
    /// Forms a cluster of `shape` in `dir` (a fresh directory) and waits
    /// until every daemon serves.
    pub fn start(dir: &Path, shape: Shape) -> std::io::Result<InProcess> {
        let nodes: Vec<Node> = (0..shape.nodes)
            .map(|k| {
                let name = format!("node{k:03}");
                let node_dir = dir.join(&name);
                Node {
                    config: ServeConfig {
                        join: JoinConfig {
                            expect: Some(shape.nodes),
                            name: Some(name),
                            advertise: Some(loopback(k)),
                            node_dir: Some(node_dir.clone()),
                            replicas: shape.replicas,
                            emulated: true,
                            ..JoinConfig::new(dir.to_path_buf())
                        },
                        listen: Some(SocketAddr::new(loopback(k), 0)),
                        durability: shape.durability,
                        addr_file: Some(node_dir.join("daemon.addr")),
                        upkeep: Upkeep::default(),
                    },
                    running: None,
                }
            })
            .collect();
        let mut cluster = InProcess {
            dir: dir.to_path_buf(),
            nodes,
        };
        for k in 0..shape.nodes {
            cluster.launch(k)?;
        }
        for k in 0..shape.nodes {
            cluster.wait_serving(k)?;
        }
        // Restarts listen where the cluster file says each node is.
        let spec = cluster.spec()?;
        for node in &spec.nodes {
            let k = cluster.index_of(&node.name);
            cluster.nodes[k].config.listen = Some(node.addr);
        }
        Ok(cluster)
    }

    /// The cluster's directory (its cluster file, secret and nodes' stores).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cluster file as written.
    pub fn spec(&self) -> std::io::Result<ClusterSpec> {
        ClusterSpec::load(&self.dir)
    }

    /// A client acting on node `node`.
    pub fn client(&self, opts: ClientOptions) -> FsResult<Client> {
        Client::open(&self.dir, opts)
    }

    /// A client whose metadata requests travel through what `wrap` makes
    /// of its TCP transport.
    pub fn client_over(
        &self,
        opts: ClientOptions,
        wrap: impl FnOnce(Arc<dyn Transport>) -> Arc<dyn Transport>,
    ) -> FsResult<Client> {
        Client::open_with_transport(&self.dir, opts, wrap)
    }

    /// Whether `node`'s daemon runs (not crashed).
    pub fn is_up(&self, node: NodeId) -> bool {
        self.nodes[node as usize].running.is_some()
    }

    /// Kills node `node`'s daemon as a crash would and waits until it is
    /// gone: its thread ended and its metadata store let go (the store's
    /// writer thread ends once the last request holding it is dropped,
    /// where a killed process lets go at once).
    pub fn crash(&mut self, node: NodeId) -> std::io::Result<()> {
        let n = &mut self.nodes[node as usize];
        if let Some(r) = n.running.take() {
            let _ = r.crash.send(());
            let _ = r.thread.join();
            let dir = n.config.join.node_dir.as_ref().expect("set at start");
            wait_released(&dir.join(locus_fs::META_FILE))?;
        }
        Ok(())
    }

    /// Starts node `node`'s daemon again and waits until it serves.
    pub fn restart(&mut self, node: NodeId) -> std::io::Result<()> {
        if self.nodes[node as usize].running.is_none() {
            self.launch(node)?;
            self.wait_serving(node)?;
        }
        Ok(())
    }

    fn launch(&mut self, k: u32) -> std::io::Result<()> {
        let node = &mut self.nodes[k as usize];
        if let Some(f) = &node.config.addr_file {
            let _ = std::fs::remove_file(f);
        }
        let config = node.config.clone();
        let (crash, crashed) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("daemon-{k}"))
            .spawn(move || run_daemon(config, crashed))?;
        node.running = Some(Running { crash, thread });
        Ok(())
    }

    fn wait_serving(&mut self, k: u32) -> std::io::Result<()> {
        let node = &mut self.nodes[k as usize];
        let addr_file = node.config.addr_file.clone().expect("set at start");
        let deadline = Instant::now() + START_TIMEOUT;
        while !addr_file.exists() {
            let ended = node
                .running
                .as_ref()
                .is_some_and(|r| r.thread.is_finished());
            if ended || Instant::now() > deadline {
                let why = match node.running.take() {
                    Some(r) if ended => match r.thread.join() {
                        Ok(Err(e)) => e.to_string(),
                        Ok(Ok(())) => "it stopped".into(),
                        Err(_) => "it panicked".into(),
                    },
                    _ => format!("not serving within {START_TIMEOUT:?}"),
                };
                return Err(std::io::Error::other(format!("daemon {k}: {why}")));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    fn index_of(&self, name: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n.config.join.name.as_deref() == Some(name))
            .expect("a node of this cluster")
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        for k in 0..self.nodes.len() {
            let _ = self.crash(k as NodeId);
        }
    }
}

/// Waits until no one holds `file`'s lock (redb's `flock`).
fn wait_released(file: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(file) else {
        return Ok(());
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            // Closing the file releases the lock.
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(std::io::Error::other(format!(
                "{} still held {START_TIMEOUT:?} after its daemon crashed",
                file.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Node `k`'s loopback address, as Locus's own launcher gives emulated
/// nodes.
fn loopback(k: u32) -> std::net::IpAddr {
    std::net::Ipv4Addr::new(127, 0, 0, (k + 1) as u8).into()
}

/// One daemon's life: served until its crash is sent, then its runtime is
/// dropped with everything in it.
fn run_daemon(config: ServeConfig, crashed: oneshot::Receiver<()>) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let served = rt.block_on(async {
        tokio::select! {
            r = serve_until(&config, std::future::pending()) => r,
            _ = crashed => Ok(()),
        }
    });
    rt.shutdown_background();
    served
}
