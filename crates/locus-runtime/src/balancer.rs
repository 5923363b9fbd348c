//! One server's work queues (ADLB model): tasks by target, matched to the
//! server's idle workers by priority, and given away to other servers that
//! have idle workers.
//!
//! Rules (docs/semantics.md): a HARD RANK task runs only on its rank and is
//! never given away; a HARD NODE task runs on any worker of its node and is
//! given only to a server that has an idle worker there; a SOFT task runs on
//! its target when it can, and *spills* to another worker (same node first)
//! once its target is busy and it has waited `soft_wait`.
//!
//! A busy worker may also be sent work *ahead* (the server decides when),
//! but only work that could not run better elsewhere: HARD RANK tasks for
//! it, and untargeted tasks no idle worker took.

use crate::layout::Layout;
use locus_proto::run::{Rank, Task};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Queued {
    prio: i64,
    seq: u64,
    since: Instant,
    /// Boxed: heaps move their entries on every push and pop.
    task: Box<Task>,
}

impl Queued {
    /// Higher priority first, then first come.
    fn key(&self) -> (i64, Reverse<u64>) {
        (self.prio, Reverse(self.seq))
    }
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        self.seq == o.seq
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

type Heap = BinaryHeap<Queued>;

/// Which queue a task is in.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Slot {
    HardRank(Rank),
    SoftRank(Rank),
    HardNode(u32),
    SoftNode(u32),
    Any,
}

pub struct Balancer {
    layout: Arc<Layout>,
    soft_wait: Duration,
    seq: u64,
    queues: HashMap<Slot, Heap>,
    /// Idle workers of this server, in the order they asked.
    idle: VecDeque<Rank>,
    /// Busy workers that may be sent a task ahead.
    ahead: VecDeque<Rank>,
}

impl Balancer {
    pub fn new(layout: Arc<Layout>, soft_wait: Duration) -> Balancer {
        Balancer {
            layout,
            soft_wait,
            seq: 0,
            queues: HashMap::new(),
            idle: VecDeque::new(),
            ahead: VecDeque::new(),
        }
    }

    pub fn put(&mut self, task: Task, now: Instant) {
        let slot = match task.target {
            None => Slot::Any,
            Some(t) => match (t.hard, t.node) {
                (true, false) => Slot::HardRank(t.rank),
                (false, false) => Slot::SoftRank(t.rank),
                (true, true) => Slot::HardNode(self.layout.node_of(t.rank)),
                (false, true) => Slot::SoftNode(self.layout.node_of(t.rank)),
            },
        };
        self.seq += 1;
        self.queues.entry(slot).or_default().push(Queued {
            prio: task.prio,
            seq: self.seq,
            since: now,
            task: Box::new(task),
        });
    }

    pub fn queued(&self) -> usize {
        self.queues.values().map(BinaryHeap::len).sum()
    }

    /// `worker` is ready for a task (it asked, or finished its last one).
    pub fn ready(&mut self, worker: Rank) {
        self.ahead.retain(|w| *w != worker);
        if !self.idle.contains(&worker) {
            self.idle.push_back(worker);
        }
    }

    /// `worker` is busy but may be sent a task ahead.
    pub fn ready_ahead(&mut self, worker: Rank) {
        if !self.idle.contains(&worker) && !self.ahead.contains(&worker) {
            self.ahead.push_back(worker);
        }
    }

    /// Forgets a worker that went away.
    pub fn lost(&mut self, worker: Rank) {
        self.idle.retain(|w| *w != worker);
        self.ahead.retain(|w| *w != worker);
    }

    pub fn idle(&self) -> impl Iterator<Item = Rank> + '_ {
        self.idle.iter().copied()
    }

    /// Matches idle workers with tasks they may run: first each worker's own
    /// work, then spilled SOFT work, to a worker of the target's node if one
    /// is idle; then busy workers with room get work ahead.
    pub fn dispatch(&mut self, now: Instant) -> Vec<(Rank, Task)> {
        let mut out = Vec::new();
        let mut waiting = VecDeque::new();
        while let Some(w) = self.idle.pop_front() {
            let node = self.layout.node_of(w);
            let own = [
                Slot::HardRank(w),
                Slot::SoftRank(w),
                Slot::HardNode(node),
                Slot::SoftNode(node),
                Slot::Any,
            ];
            match self.take_own(&own) {
                Some(t) => out.push((w, t)),
                None => waiting.push_back(w),
            }
        }
        self.idle = waiting;
        while !self.idle.is_empty() {
            let Some((slot, node)) = self.best_spill(now) else {
                break;
            };
            let pos = self
                .idle
                .iter()
                .position(|w| self.layout.node_of(*w) == node)
                .unwrap_or(0);
            let w = self.idle.remove(pos).expect("an idle worker");
            out.push((w, self.pop(slot)));
        }
        let mut waiting = VecDeque::new();
        while let Some(w) = self.ahead.pop_front() {
            match self.take_own(&[Slot::HardRank(w), Slot::Any]) {
                Some(t) => out.push((w, t)),
                None => waiting.push_back(w),
            }
        }
        self.ahead = waiting;
        out
    }

    fn top(&self, slot: Slot) -> Option<&Queued> {
        self.queues.get(&slot).and_then(BinaryHeap::peek)
    }

    fn pop(&mut self, slot: Slot) -> Task {
        let heap = self.queues.get_mut(&slot).expect("a chosen queue");
        let q = heap.pop().expect("a chosen task");
        if heap.is_empty() {
            self.queues.remove(&slot);
        }
        *q.task
    }

    /// The most urgent task in `own` (a worker's queues, most specific
    /// first), the more specific among equal priorities.
    fn take_own(&mut self, own: &[Slot]) -> Option<Task> {
        let best = own
            .iter()
            .enumerate()
            .filter_map(|(i, s)| self.top(*s).map(|q| ((q.prio, Reverse(i)), *s)))
            .max_by_key(|(k, _)| *k)
            .map(|(_, s)| s)?;
        Some(self.pop(best))
    }

    /// The most urgent SOFT task that may spill, and its target's node.
    fn best_spill(&self, now: Instant) -> Option<(Slot, u32)> {
        self.queues
            .iter()
            .filter_map(|(slot, heap)| {
                let q = heap.peek()?;
                let node = match *slot {
                    Slot::SoftRank(r) => self.layout.node_of(r),
                    Slot::SoftNode(n) => n,
                    _ => return None,
                };
                self.spillable(*slot, q, now)
                    .then_some((q.key(), *slot, node))
            })
            .max_by_key(|(k, _, _)| *k)
            .map(|(_, s, n)| (s, n))
    }

    /// A SOFT task may leave its target once it has waited `soft_wait` and
    /// no idle worker of this server could run it on target.
    fn spillable(&self, slot: Slot, q: &Queued, now: Instant) -> bool {
        if now.duration_since(q.since) < self.soft_wait {
            return false;
        }
        match slot {
            Slot::SoftRank(r) => !self.idle.contains(&r),
            Slot::SoftNode(n) => !self.idle.iter().any(|w| self.layout.node_of(*w) == n),
            _ => false,
        }
    }

    /// When the next SOFT task becomes spillable, if any is waiting for that.
    pub fn next_spill(&self, now: Instant) -> Option<Instant> {
        self.queues
            .iter()
            .filter(|(s, _)| matches!(s, Slot::SoftRank(_) | Slot::SoftNode(_)))
            .filter_map(|(_, h)| h.peek())
            .map(|q| q.since + self.soft_wait)
            .filter(|t| *t > now)
            .min()
    }

    /// Tasks for another server whose `idle` workers (rank, node) have
    /// nothing to do: up to half of what they may run, never HARD RANK
    /// work and HARD NODE work only for their nodes.
    pub fn give(&mut self, idle: &[(Rank, u32)], now: Instant) -> Vec<Task> {
        let mut slots: Vec<Slot> = Vec::new();
        let mut eligible = 0;
        for (slot, heap) in &self.queues {
            let ok = match *slot {
                Slot::Any => true,
                Slot::HardNode(n) => idle.iter().any(|(_, m)| *m == n),
                // Their node's workers elsewhere are as good as the target.
                Slot::SoftNode(n) if idle.iter().any(|(_, m)| *m == n) => true,
                Slot::SoftRank(_) | Slot::SoftNode(_) => {
                    heap.peek().is_some_and(|q| self.spillable(*slot, q, now))
                }
                Slot::HardRank(_) => false,
            };
            if ok {
                slots.push(*slot);
                eligible += heap.len();
            }
        }
        let mut budget = eligible.div_ceil(2);
        let mut out = Vec::new();
        for slot in slots {
            while budget > 0 && self.queues.contains_key(&slot) {
                out.push(self.pop(slot));
                budget -= 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_proto::run::{Placed, Target, Work};

    /// Ranks 0,1 on node a; 2,3 on node b; 4 the server.
    fn layout() -> Arc<Layout> {
        let names: Vec<String> = ["a", "a", "b", "b", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        Arc::new(Layout::from_names(1, &names).unwrap())
    }

    fn task(id: u64, target: Option<(Rank, bool, bool)>, prio: i64) -> Task {
        Task {
            id,
            func: "f".into(),
            target: target.map(|(rank, hard, node)| Target { rank, hard, node }),
            placed: Placed::Explicit,
            prio,
            work: Work::Sleep { secs: 0.0 },
            at: String::new(),
            key: String::new(),
        }
    }

    fn ids(v: &[(Rank, Task)]) -> Vec<(Rank, u64)> {
        v.iter().map(|(w, t)| (*w, t.id)).collect()
    }

    #[test]
    fn hard_rank_waits_for_its_worker() {
        let mut b = Balancer::new(layout(), Duration::ZERO);
        let now = Instant::now();
        b.put(task(1, Some((3, true, false)), 0), now);
        b.ready(0);
        b.ready(2);
        assert!(b.dispatch(now).is_empty());
        assert!(b.give(&[(1, 0), (2, 1)], now).is_empty());
        b.ready(3);
        assert_eq!(ids(&b.dispatch(now)), vec![(3, 1)]);
    }

    #[test]
    fn work_ahead_is_only_hard_rank_or_untargeted() {
        let mut b = Balancer::new(layout(), Duration::ZERO);
        let now = Instant::now();
        b.put(task(1, Some((0, false, false)), 0), now);
        b.put(task(2, Some((0, true, true)), 0), now);
        b.ready_ahead(0);
        assert!(b.dispatch(now).is_empty());
        b.put(task(3, Some((0, true, false)), 0), now);
        b.put(task(4, None, 0), now);
        let got: Vec<u64> = (0..2)
            .flat_map(|_| {
                b.ready_ahead(0);
                ids(&b.dispatch(now))
            })
            .map(|(_, id)| id)
            .collect();
        assert_eq!(got, vec![3, 4]);
    }

    #[test]
    fn hard_node_runs_on_any_worker_of_the_node_only() {
        let mut b = Balancer::new(layout(), Duration::ZERO);
        let now = Instant::now();
        b.put(task(1, Some((2, true, true)), 0), now);
        b.ready(0);
        assert!(b.dispatch(now).is_empty());
        assert!(b.give(&[(1, 0)], now).is_empty());
        b.ready(3);
        assert_eq!(ids(&b.dispatch(now)), vec![(3, 1)]);
        b.put(task(2, Some((2, true, true)), 0), now);
        assert_eq!(b.give(&[(3, 1)], now).len(), 1);
    }

    #[test]
    fn soft_spills_same_node_first_when_target_busy() {
        let mut b = Balancer::new(layout(), Duration::ZERO);
        let now = Instant::now();
        b.ready(2);
        b.put(task(1, Some((2, false, false)), 0), now);
        assert_eq!(ids(&b.dispatch(now)), vec![(2, 1)]);
        // Rank 2 is busy now: its next SOFT task goes to an idle worker,
        // rank 3 (same node) before rank 0.
        b.put(task(2, Some((2, false, false)), 0), now);
        b.ready(0);
        b.ready(3);
        let got = ids(&b.dispatch(now));
        assert_eq!(got, vec![(3, 2)]);
    }

    #[test]
    fn soft_waits_for_the_spill_delay() {
        let wait = Duration::from_millis(50);
        let mut b = Balancer::new(layout(), wait);
        let now = Instant::now();
        b.put(task(1, Some((1, false, false)), 0), now);
        b.ready(0);
        assert!(b.dispatch(now).is_empty());
        assert_eq!(b.next_spill(now), Some(now + wait));
        assert_eq!(ids(&b.dispatch(now + wait)), vec![(0, 1)]);
    }

    #[test]
    fn priority_then_arrival_then_specificity() {
        let mut b = Balancer::new(layout(), Duration::ZERO);
        let now = Instant::now();
        b.put(task(1, None, 0), now);
        b.put(task(2, None, 5), now);
        b.put(task(3, Some((0, true, false)), 0), now);
        for _ in 0..3 {
            b.ready(0);
        }
        let mut order = Vec::new();
        for _ in 0..3 {
            b.ready(0);
            order.extend(ids(&b.dispatch(now)).into_iter().map(|(_, id)| id));
        }
        assert_eq!(order, vec![2, 3, 1]);
    }

    #[test]
    fn give_hands_over_half_of_the_movable_work() {
        let mut b = Balancer::new(layout(), Duration::ZERO);
        let now = Instant::now();
        for i in 0..10 {
            b.put(task(i, None, 0), now);
        }
        b.put(task(99, Some((0, true, false)), 0), now);
        let given = b.give(&[(2, 1)], now);
        assert_eq!(given.len(), 5);
        assert_eq!(b.queued(), 6);
        assert!(given.iter().all(|t| t.target.is_none()));
    }
}
