//! How many nodes keep a file's bytes: the setting of the directory it was
//! made in (`locus fs replicas`, inherited by what is made there), else as
//! many as the cluster keeps; and what a client last learned of each
//! directory's setting, for outputs whose copies are made before their
//! directory's daemon answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a learned setting is trusted (a change reaches new files
/// within this time).
const FRESH: Duration = Duration::from_secs(1);
/// Directories remembered at most (forgotten all at once past this).
const REMEMBERED: usize = 4096;

/// Of a version's `copies`, the replicas made before it is published
/// (FusionFS's scheme: the first; the others follow in the background).
pub(crate) fn before_publishing(copies: u32) -> u32 {
    copies.min(2) - 1
}

pub(crate) struct Copies {
    cluster: u32,
    nodes: u32,
    learned: Mutex<HashMap<String, (u32, Instant)>>,
}

impl Copies {
    pub(crate) fn new(cluster: u32, nodes: u32) -> Copies {
        Copies {
            cluster: cluster.max(1),
            nodes: nodes.max(1),
            learned: Mutex::default(),
        }
    }

    /// The copies a record's setting asks for (0: the cluster's).
    pub(crate) fn of(&self, setting: u32) -> u32 {
        match setting {
            0 => self.cluster,
            n => n.min(self.nodes),
        }
    }

    /// Notes directory `dir`'s setting, as a daemon answered it `now`.
    pub(crate) fn learn(&self, dir: &str, setting: u32, now: Instant) {
        let mut learned = self.learned.lock().expect("copies");
        if let Some(known) = learned.get_mut(dir) {
            *known = (setting, now);
            return;
        }
        if learned.len() >= REMEMBERED {
            learned.clear();
        }
        learned.insert(dir.to_string(), (setting, now));
    }

    /// The copies a new file in `dir` gets, as last learned if recently,
    /// else the cluster's.
    pub(crate) fn in_dir(&self, dir: &str, now: Instant) -> u32 {
        let learned = self.learned.lock().expect("copies");
        match learned.get(dir) {
            Some(&(setting, at)) if now.duration_since(at) < FRESH => self.of(setting),
            _ => self.cluster,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_bounded_by_the_nodes_and_learned_for_a_second() {
        let c = Copies::new(2, 3);
        assert_eq!((c.of(0), c.of(1), c.of(3), c.of(9)), (2, 1, 3, 3));
        let t = Instant::now();
        assert_eq!(c.in_dir("/d", t), 2);
        c.learn("/d", 1, t);
        assert_eq!(c.in_dir("/d", t + Duration::from_millis(900)), 1);
        assert_eq!(c.in_dir("/d", t + FRESH), 2);
        c.learn("/e", 0, t);
        assert_eq!(c.in_dir("/e", t), 2);
    }
}
