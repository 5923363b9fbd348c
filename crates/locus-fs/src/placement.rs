//! Where the data of a new file goes. A hint set with `place` wins; otherwise
//! the client's policy decides.

use crate::ring::hash_node;
use locus_proto::fs::NodeId;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// A policy for the node a new file's bytes go to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// On the writer's node (FusionFS): every write is local.
    #[default]
    Local,
    /// On the node the path hashes to (Hercules' default).
    Hash,
    /// Informed placement: successive new files go to successive nodes, each
    /// client starting at its own node, so files spread evenly.
    RoundRobin,
}

impl Placement {
    /// The node for the `seq`-th new file of a client on node `me`.
    pub fn choose(self, path: &str, me: NodeId, nodes: usize, seq: u64) -> NodeId {
        match self {
            Placement::Local => me,
            Placement::Hash => hash_node(path, nodes),
            Placement::RoundRobin => ((u64::from(me) + seq) % nodes as u64) as NodeId,
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Placement::Local => "local",
            Placement::Hash => "hash",
            Placement::RoundRobin => "round-robin",
        })
    }
}

impl FromStr for Placement {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Placement::Local),
            "hash" => Ok(Placement::Hash),
            "round-robin" => Ok(Placement::RoundRobin),
            other => Err(format!(
                "unknown placement '{other}' (expected local, hash or round-robin)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_balances_and_local_stays() {
        let mut counts = [0; 4];
        for seq in 0..400 {
            counts[Placement::RoundRobin.choose("/f", 2, 4, seq) as usize] += 1;
        }
        assert_eq!(counts, [100; 4]);
        assert_eq!(Placement::Local.choose("/f", 3, 4, 9), 3);
        assert!(Placement::Hash.choose("/f", 0, 4, 0) < 4);
        assert_eq!(
            "round-robin".parse::<Placement>().unwrap(),
            Placement::RoundRobin
        );
        assert!("nearby".parse::<Placement>().is_err());
        for p in [Placement::Local, Placement::Hash, Placement::RoundRobin] {
            assert_eq!(p.to_string().parse::<Placement>().unwrap(), p);
        }
    }
}
