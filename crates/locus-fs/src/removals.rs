//! Removals a metadata store answered lately, by the operation that asked
//! (`OpId`): a client whose daemon died before answering sends its removal
//! again, to the replica acting for the owner or to the owner back, and
//! must be told what was done for it — not `ENOENT` for its own work, nor
//! have a file created since under the name removed in its place. Kept in
//! memory for `KEEP` (far longer than a client retries) and at most `CAP`
//! of them; a pure structure, the time given.

use locus_proto::fs::{OpId, Record};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How long a removal's answer is kept.
const KEEP: Duration = Duration::from_secs(300);
/// The most kept at once (the oldest go first).
const CAP: usize = 65_536;

/// Recent removals: the record each took (none for a name whose record a
/// crash had lost).
#[derive(Default)]
pub(crate) struct Removals {
    /// By operation (one path each): the path and the record it took.
    answers: HashMap<OpId, (String, Option<Record>)>,
    order: VecDeque<(Instant, OpId)>,
}

impl Removals {
    /// Notes that `op` removed `path` (and `record`) at `now`.
    pub(crate) fn note(&mut self, path: &str, op: OpId, record: Option<Record>, now: Instant) {
        self.forget_before(now.checked_sub(KEEP));
        while self.order.len() >= CAP {
            self.pop_oldest();
        }
        if self
            .answers
            .insert(op, (path.to_string(), record))
            .is_none()
        {
            self.order.push_back((now, op));
        }
    }

    /// What `op` removing `path` took, if it was done here lately.
    pub(crate) fn done(&self, path: &str, op: OpId) -> Option<&Option<Record>> {
        match self.answers.get(&op) {
            Some((p, record)) if p == path => Some(record),
            _ => None,
        }
    }

    fn forget_before(&mut self, cutoff: Option<Instant>) {
        let Some(cutoff) = cutoff else { return };
        while self.order.front().is_some_and(|(at, ..)| *at < cutoff) {
            self.pop_oldest();
        }
    }

    fn pop_oldest(&mut self) {
        if let Some((_, op)) = self.order.pop_front() {
            self.answers.remove(&op);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_proto::fs::Kind;

    fn record() -> Record {
        Record::new(Kind::File, 0o644, 1)
    }

    #[test]
    fn a_removal_is_answered_again_for_its_own_op_only() {
        let mut r = Removals::default();
        let now = Instant::now();
        r.note("/a", 7, Some(record()), now);
        assert_eq!(r.done("/a", 7), Some(&Some(record())));
        assert_eq!(r.done("/a", 8), None, "another client's removal");
        assert_eq!(r.done("/b", 7), None);
        r.note("/lost", 9, None, now);
        assert_eq!(r.done("/lost", 9), Some(&None));
    }

    #[test]
    fn removals_are_forgotten_after_a_while_and_past_the_cap() {
        let mut r = Removals::default();
        let t0 = Instant::now();
        r.note("/old", 1, None, t0);
        r.note("/new", 2, None, t0 + KEEP / 2);
        r.note("/newer", 3, None, t0 + KEEP + Duration::from_secs(1));
        assert_eq!(r.done("/old", 1), None);
        assert!(r.done("/new", 2).is_some());
        for i in 0..CAP as u64 {
            r.note("/many", 100 + i, None, t0 + KEEP);
        }
        assert_eq!(r.answers.len(), CAP);
        assert_eq!(r.order.len(), CAP);
        assert_eq!(r.done("/new", 2), None, "the oldest went first");
        assert!(r.done("/many", 100 + CAP as u64 - 1).is_some());
    }
}
