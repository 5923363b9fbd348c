//! Which rank runs where. Workers hold the low ranks and servers the high
//! ones (as in Swift/T); every rank is on a node, and the hostmap (node →
//! worker ranks) is what NODE targets, `ip2rank` and `hostmap*` use.

use locus_proto::run::Rank;
use serde::{Deserialize, Serialize};

/// Why ranks cannot be laid out so, or a rank cannot be a task's target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("{size} ranks cannot hold {servers} server(s) and at least one worker")]
    Servers { size: u32, servers: u32 },
    #[error("rank {rank} is a server; tasks can target workers 0..{last}")]
    Server { rank: i64, last: Rank },
    #[error("rank {rank} is not a rank of this run; tasks can target workers 0..{last}")]
    NoSuchRank { rank: i64, last: Rank },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    pub servers: u32,
    /// Node index of every rank, servers included.
    pub rank_node: Vec<u32>,
    /// Node names, by index.
    pub nodes: Vec<String>,
}

impl Layout {
    /// Builds the layout from each rank's node name, in rank order; nodes are
    /// numbered in order of first appearance.
    pub fn from_names(servers: u32, names: &[String]) -> Result<Layout, LayoutError> {
        let size = names.len() as u32;
        if servers == 0 || servers >= size {
            return Err(LayoutError::Servers { size, servers });
        }
        // Every rank builds this from all N names: a map, not a scan per name.
        let mut index: std::collections::HashMap<&str, u32> = Default::default();
        let mut nodes: Vec<String> = Vec::new();
        let mut rank_node = Vec::with_capacity(names.len());
        for n in names {
            let i = *index.entry(n).or_insert_with(|| {
                nodes.push(n.clone());
                nodes.len() as u32 - 1
            });
            rank_node.push(i);
        }
        Ok(Layout {
            servers,
            rank_node,
            nodes,
        })
    }

    /// Node names for a run of `size` ranks on `nodes` emulated nodes:
    /// workers in consecutive blocks (as `mpiexec` fills nodes), servers
    /// spread round-robin.
    pub fn emulated_names(size: u32, servers: u32, nodes: &[String]) -> Vec<String> {
        let workers = size.saturating_sub(servers).max(1) as usize;
        (0..size as usize)
            .map(|r| {
                let node = if r < workers {
                    r * nodes.len() / workers
                } else {
                    (r - workers) % nodes.len()
                };
                nodes[node].clone()
            })
            .collect()
    }

    pub fn size(&self) -> u32 {
        self.rank_node.len() as u32
    }

    pub fn workers(&self) -> u32 {
        self.size() - self.servers
    }

    pub fn is_worker(&self, rank: Rank) -> bool {
        rank < self.workers()
    }

    /// The server that queues work for `worker`.
    pub fn server_of(&self, worker: Rank) -> Rank {
        self.workers() + worker % self.servers
    }

    /// The workers `server` queues work for.
    pub fn workers_of(&self, server: Rank) -> impl Iterator<Item = Rank> + '_ {
        (0..self.workers()).filter(move |w| self.server_of(*w) == server)
    }

    /// The first server: it runs the dataflow engine.
    pub fn leader(&self) -> Rank {
        self.workers()
    }

    pub fn node_of(&self, rank: Rank) -> u32 {
        self.rank_node[rank as usize]
    }

    pub fn node_name(&self, rank: Rank) -> &str {
        &self.nodes[self.node_of(rank) as usize]
    }

    pub fn node_index(&self, name: &str) -> Option<u32> {
        self.nodes.iter().position(|n| n == name).map(|i| i as u32)
    }

    /// Worker ranks on node `node`, lowest first.
    pub fn workers_on(&self, node: u32) -> impl Iterator<Item = Rank> + '_ {
        (0..self.workers()).filter(move |r| self.node_of(*r) == node)
    }

    /// `ADLB_RANK_OFFSET`: the rank's index among the ranks of its node.
    pub fn offset(&self, rank: Rank) -> u32 {
        let node = self.node_of(rank);
        (0..rank).filter(|r| self.node_of(*r) == node).count() as u32
    }

    /// `ADLB_RANK_LEADER`: the lowest rank on the rank's node.
    pub fn node_leader(&self, rank: Rank) -> Rank {
        let node = self.node_of(rank);
        (0..self.size())
            .find(|r| self.node_of(*r) == node)
            .unwrap_or(rank)
    }

    /// Why `rank` cannot be a task's target, if it cannot.
    pub fn check_target(&self, rank: i64) -> Result<Rank, LayoutError> {
        let last = self.workers() - 1;
        match rank {
            r if r >= 0 && r <= i64::from(last) => Ok(r as Rank),
            r if r > i64::from(last) && r < i64::from(self.size()) => {
                Err(LayoutError::Server { rank, last })
            }
            _ => Err(LayoutError::NoSuchRank { rank, last }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn workers_low_servers_high() {
        let l = Layout::from_names(2, &names(&["a", "a", "b", "b", "a", "b"])).unwrap();
        assert_eq!(l.workers(), 4);
        assert_eq!(l.leader(), 4);
        assert_eq!(l.server_of(0), 4);
        assert_eq!(l.server_of(3), 5);
        assert_eq!(l.workers_on(1).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(l.offset(3), 1);
        assert_eq!(l.offset(4), 2);
        assert_eq!(l.node_leader(5), 2);
        assert_eq!(
            l.check_target(4),
            Err(LayoutError::Server { rank: 4, last: 3 })
        );
        assert_eq!(
            l.check_target(9),
            Err(LayoutError::NoSuchRank { rank: 9, last: 3 })
        );
        assert_eq!(
            l.check_target(-1),
            Err(LayoutError::NoSuchRank { rank: -1, last: 3 })
        );
        assert_eq!(l.check_target(1), Ok(1));
    }

    #[test]
    fn emulated_nodes_get_blocks_of_workers() {
        let nodes = names(&["n0", "n1"]);
        let got = Layout::emulated_names(5, 1, &nodes);
        assert_eq!(got, names(&["n0", "n0", "n1", "n1", "n0"]));
        assert!(Layout::from_names(1, &names(&["a"])).is_err());
    }
}
