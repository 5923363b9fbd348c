//! The cluster file: the node list every client and tool reads to find the
//! daemons, their stores and the cluster secret.

use crate::placement::Placement;
use crate::ring::Ring;
use crate::scope::Scope;
use locus_proto::fs::NodeId;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The cluster file in a cluster's directory: its nodes and settings.
pub const CLUSTER_FILE: &str = "cluster.json";
pub(crate) const SECRET_FILE: &str = "secret";

/// One node of a cluster: its daemon's address and directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// Its index in the cluster's node list.
    pub id: NodeId,
    /// Stable name; the metadata ring is built from names.
    pub name: String,
    /// Where its daemon listens.
    pub addr: SocketAddr,
    /// The node's directory: metadata shard, data store, daemon log.
    pub dir: PathBuf,
    /// The network namespace its daemon runs in (an emulated node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    /// The cgroup limiting its daemon's CPU (an emulated node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<PathBuf>,
}

/// A cluster: its nodes and how files are spread over them (the cluster
/// file, `CLUSTER_FILE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSpec {
    /// The nodes, in node-id order.
    pub nodes: Vec<NodeInfo>,
    /// Virtual nodes per node on the metadata ring.
    pub vnodes: u32,
    /// Default data placement for new files.
    pub placement: Placement,
    /// Formed by daemons on real hosts (`fs serve --join`): a node is the
    /// host of its name, and a client elsewhere has no store of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub joined: bool,
    /// Copies of every file's data and of every metadata key (1: no
    /// replication). A key's copies are on its owner and the next
    /// `replicas - 1` nodes in node order; a file's on its writer's node
    /// and the next ones.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub replicas: u32,
    /// Whose its stores are: kept, or the job's that deployed it.
    #[serde(default)]
    pub scope: Scope,
}

/// The cluster clients use when none is named: `$LOCUS_DIR`, else
/// `$TMPDIR/locus-<uid>` (one default cluster per user).
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LOCUS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("locus-{uid}"))
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `node` and the nodes after it in node order (wrapping), `count` in all
/// at most: where the copies of what `node` owns or writes go.
pub(crate) fn replica_set(node: NodeId, nodes: usize, count: u32) -> Vec<NodeId> {
    let n = nodes.max(1) as u32;
    (0..count.clamp(1, n)).map(|k| (node + k) % n).collect()
}

impl ClusterSpec {
    /// The node called `name` (a host's, in a joined cluster).
    pub fn node_named(&self, name: &str) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The metadata ring of these nodes: which daemon owns which path.
    pub fn ring(&self) -> Ring {
        Ring::new(
            self.nodes.iter().map(|n| (n.id, n.name.as_str())),
            self.vnodes,
        )
    }

    /// Reads `DIR/cluster.json`, from a directory only this user controls:
    /// another user's could name their daemons and secret, and receive
    /// everything written.
    pub fn load(dir: &Path) -> io::Result<ClusterSpec> {
        if dir.exists() {
            crate::private_dir::check(dir)?;
        }
        let path = dir.join(CLUSTER_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "no cluster at {} ({e}); start one with `locus fs up`",
                    dir.display()
                ),
            )
        })?;
        let spec: ClusterSpec = serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        if spec.nodes.is_empty()
            || spec
                .nodes
                .iter()
                .enumerate()
                .any(|(i, n)| n.id as usize != i)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: nodes must be numbered 0..N-1", path.display()),
            ));
        }
        Ok(spec)
    }

    /// Writes `DIR/cluster.json` atomically.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        crate::whole::write_json(&dir.join(CLUSTER_FILE), self)
    }

    /// Changes the cluster file in `dir` by `change`, one writer at a time
    /// (a lock beside it), so that daemons restarted together each keep
    /// their change; returns the cluster as written.
    pub fn update(dir: &Path, change: impl FnOnce(&mut ClusterSpec)) -> io::Result<ClusterSpec> {
        use std::os::fd::AsRawFd;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{CLUSTER_FILE}.lock")))?;
        // SAFETY: flock(2) on a descriptor this function owns; released
        // when it is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut spec = ClusterSpec::load(dir)?;
        change(&mut spec);
        spec.save(dir)?;
        Ok(spec)
    }
}
