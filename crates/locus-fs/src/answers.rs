//! What a metadata store answered lately to operations that are not safe
//! to apply twice (removals, commits and replacements under a write lock),
//! by the operation that asked (`OpId`): a client whose answer was lost —
//! with a daemon, or on the network — sends the operation again, to the
//! owner or to the replica acting for it, and must be told what was done
//! for it: not `ENOENT` or `EBUSY` for its own work, nor have a file made
//! since under the name removed in its place. Kept in memory for `KEEP`
//! (far longer than a client retries) and at most `CAP` of them; a pure
//! structure, the time given.

use locus_proto::fs::{Answer, OpId};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How long an answer is kept.
const KEEP: Duration = Duration::from_secs(300);
/// The most kept at once (the oldest go first).
const CAP: usize = 65_536;

/// Recent answers.
#[derive(Default)]
pub(crate) struct Answers {
    /// By operation (one path each): the path and the answer.
    answers: HashMap<OpId, (String, Answer)>,
    order: VecDeque<(Instant, OpId)>,
}

impl Answers {
    /// Notes that `op` on `path` was answered `answer` at `now`.
    pub(crate) fn note(&mut self, path: &str, op: OpId, answer: Answer, now: Instant) {
        self.forget_before(now.checked_sub(KEEP));
        while self.order.len() >= CAP {
            self.pop_oldest();
        }
        if self
            .answers
            .insert(op, (path.to_string(), answer))
            .is_none()
        {
            self.order.push_back((now, op));
        }
    }

    /// What `op` on `path` was answered, if it was done here lately.
    pub(crate) fn done(&self, path: &str, op: OpId) -> Option<&Answer> {
        match self.answers.get(&op) {
            Some((p, answer)) if p == path => Some(answer),
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
    use locus_proto::fs::{Kind, Record};

    fn removed() -> Answer {
        Answer::Removed(Some(Record::new(Kind::File, 0o644, 1)))
    }

    #[test]
    fn an_answer_is_given_again_for_its_own_op_only() {
        let mut r = Answers::default();
        let now = Instant::now();
        r.note("/a", 7, removed(), now);
        assert_eq!(r.done("/a", 7), Some(&removed()));
        assert_eq!(r.done("/a", 8), None, "another client's removal");
        assert_eq!(r.done("/b", 7), None);
        r.note("/lost", 9, Answer::Removed(None), now);
        assert_eq!(r.done("/lost", 9), Some(&Answer::Removed(None)));
    }

    #[test]
    fn answers_are_forgotten_after_a_while_and_past_the_cap() {
        let mut r = Answers::default();
        let t0 = Instant::now();
        r.note("/old", 1, Answer::Removed(None), t0);
        r.note("/new", 2, Answer::Removed(None), t0 + KEEP / 2);
        r.note(
            "/newer",
            3,
            Answer::Removed(None),
            t0 + KEEP + Duration::from_secs(1),
        );
        assert_eq!(r.done("/old", 1), None);
        assert!(r.done("/new", 2).is_some());
        for i in 0..CAP as u64 {
            r.note("/many", 100 + i, Answer::Removed(None), t0 + KEEP);
        }
        assert_eq!(r.answers.len(), CAP);
        assert_eq!(r.order.len(), CAP);
        assert_eq!(r.done("/new", 2), None, "the oldest went first");
        assert!(r.done("/many", 100 + CAP as u64 - 1).is_some());
    }
}
