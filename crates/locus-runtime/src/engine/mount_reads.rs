//! What placement learns of a function's inputs from its earlier tasks'
//! reads through the mount: files its programs open by path that no
//! command line names (a model, a table every task reads), weighed as its
//! next tasks' inputs.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// The most files kept per function: its latest distinct reads (the
/// placement of each of its tasks stats them).
const KEPT: usize = 8;

#[derive(Default)]
pub(super) struct MountReads(Mutex<HashMap<String, VecDeque<String>>>);

impl MountReads {
    /// Notes that a task of `func` read `paths` through the mount.
    pub(super) fn learn(&self, func: &str, paths: &[String]) {
        if paths.is_empty() {
            return;
        }
        let mut all = self.0.lock().expect("mount reads");
        let kept = all.entry(func.to_string()).or_default();
        for p in paths {
            kept.retain(|k| k != p);
            kept.push_back(p.clone());
            if kept.len() > KEPT {
                kept.pop_front();
            }
        }
    }

    /// The files `func`'s earlier tasks read through the mount, latest last.
    pub(super) fn of(&self, func: &str) -> Vec<String> {
        let all = self.0.lock().expect("mount reads");
        all.get(func)
            .map_or_else(Vec::new, |k| k.iter().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_keeps_its_latest_distinct_reads() {
        let reads = MountReads::default();
        assert!(reads.of("f").is_empty());
        reads.learn("f", &["/locus/model".into(), "/locus/a".into()]);
        reads.learn("f", &["/locus/model".into()]);
        reads.learn("g", &["/locus/other".into()]);
        assert_eq!(reads.of("f"), ["/locus/a", "/locus/model"]);
        let many: Vec<String> = (0..20).map(|i| format!("/locus/{i}")).collect();
        reads.learn("f", &many);
        assert_eq!(reads.of("f"), many[12..]);
        assert_eq!(reads.of("g"), ["/locus/other"]);
    }
}
