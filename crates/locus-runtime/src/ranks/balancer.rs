//! One server's work queues (ADLB model): tasks by target, matched to the
//! server's idle workers by priority, and given away to other servers that
//! have idle workers.
//!
//! Rules (docs/semantics.md): a HARD RANK task runs only on its rank and is
//! never given away; a HARD NODE task runs on any worker of its node and is
//! given only to a server that has an idle worker there; a SOFT task runs on
//! its target when it can, and *spills* to an idle worker elsewhere (its
//! target's node first) when fetching its missing input bytes there is
//! expected to take less than waiting for its target (`cost`), or once it
//! has waited the run's cap, if it has one.
//!
//! A busy worker may also be sent work *ahead* (the server decides when),
//! but only work that could not run better elsewhere: HARD RANK tasks for
//! it, and untargeted tasks no idle worker took.
//!
//! A parallel task (`@par=N`) waits in a queue of its own; the most urgent
//! one holds idle workers as they come until N are held, then runs on N of
//! them (`reserve`): a copy of the task goes to each, the first launching
//! the job. Held workers meanwhile run short work of their own that is
//! expected to end before the job could start.

use crate::ranks::cost::{self, Costs};
use crate::ranks::layout::Layout;
use crate::ranks::reserve;
use locus_proto::run::{JobId, Outcome, Par, Placed, Rank, Spill, Task};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often SOFT tasks waiting beside idle workers are weighed again: the
/// estimates change as their targets' tasks run.
pub(crate) const RECHECK: Duration = Duration::from_millis(20);
/// Tasks of one queue looked at to estimate the work ahead of a task.
const SAMPLE: usize = 256;
/// Tasks of one queue looked through for one short enough to run while a
/// parallel task gathers its workers.
const BACKFILL_SCAN: usize = 32;

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

/// A task sent to one of this server's workers and not done (kept, to be
/// queued again if its worker leaves the run).
struct Sent {
    task: Task,
    /// When it started (when it was sent, or when the task before it on
    /// its worker ended).
    since: Instant,
    /// The node it fetches most from, if it fetches.
    source: Option<u32>,
    /// Its function was known to be short when it was sent.
    short: bool,
}

pub(crate) struct Balancer {
    layout: Arc<Layout>,
    /// The server rank this balancer belongs to.
    me: Rank,
    /// `--soft-wait`: the longest a SOFT task waits for its target.
    cap: Option<Duration>,
    seq: u64,
    queues: HashMap<Slot, Heap>,
    /// Idle workers of this server, in the order they asked.
    idle: VecDeque<Rank>,
    /// Busy workers that may be sent a task ahead.
    ahead: VecDeque<Rank>,
    /// Per worker, its tasks not done, in the order it runs them.
    sent: HashMap<Rank, VecDeque<Sent>>,
    costs: Costs,
    /// Nodes lost during the run (a worker of theirs left): nothing runs
    /// there any more.
    lost_nodes: HashSet<u32>,
    /// Workers whose process is gone.
    lost_ranks: HashSet<Rank>,
    /// Parallel tasks waiting for workers.
    par: Heap,
    /// Idle workers held for the first of them.
    holding: Vec<Rank>,
    /// Parallel tasks running: their workers, and whether one of them is
    /// gone (the job then runs again once its first worker reports).
    jobs: HashMap<u64, Job>,
    /// Parallel tasks that can never run now (fewer live workers than
    /// they need), for the server to fail.
    cannot: Vec<Task>,
}

struct Job {
    ranks: Vec<Rank>,
    gathered: u64,
    broken: bool,
}

/// What became of a task a worker reported done.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Finished {
    /// Its outcome goes to the engine.
    Deliver,
    /// A parallel task one of whose workers was lost while it ran: it is
    /// queued again, its outcome dropped.
    Again,
}

impl Balancer {
    pub(crate) fn new(layout: Arc<Layout>, me: Rank, cap: Option<Duration>) -> Balancer {
        Balancer {
            layout,
            me,
            cap,
            seq: 0,
            queues: HashMap::new(),
            idle: VecDeque::new(),
            ahead: VecDeque::new(),
            sent: HashMap::new(),
            costs: Costs::new(),
            lost_nodes: HashSet::new(),
            lost_ranks: HashSet::new(),
            par: Heap::new(),
            holding: Vec::new(),
            jobs: HashMap::new(),
            cannot: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn costs(&self) -> &Costs {
        &self.costs
    }

    /// Queues `task`; gives it back if it can never run: a HARD target on
    /// a lost node. A SOFT target there is dropped (the task runs anywhere).
    pub(crate) fn put(&mut self, mut task: Task, now: Instant) -> Result<(), Box<Task>> {
        // First among the nodes holding as much (a copy on a live node
        // keeps the task near its data when its first choice is lost).
        if task.placed == Placed::Auto {
            self.least_loaded_of_the_heaviest(&mut task);
        }
        if let Some(t) = task.target {
            let rank_gone = !t.node && self.lost_ranks.contains(&t.rank);
            if rank_gone || self.lost_nodes.contains(&self.layout.node_of(t.rank)) {
                if t.hard {
                    return Err(Box::new(task));
                }
                task.target = None;
            }
        }
        if task.par.is_some() {
            self.seq += 1;
            self.par.push(Queued {
                prio: task.prio,
                seq: self.seq,
                since: now,
                task: Box::new(task),
            });
            return Ok(());
        }
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
        Ok(())
    }

    /// An automatically placed task whose inputs weigh the same on several
    /// nodes goes to the one of them (served here, not lost) with the least
    /// work. A lost node has none: chosen, the task would wait there for a
    /// worker that never comes.
    fn least_loaded_of_the_heaviest(&self, task: &mut Task) {
        let Some(target) = task.target.as_mut() else {
            return;
        };
        let tied = cost::heaviest(&task.inputs);
        if tied.len() < 2 {
            return;
        }
        let load = |n: u32| {
            let queued: usize = [Slot::SoftNode(n), Slot::HardNode(n)]
                .iter()
                .filter_map(|s| self.queues.get(s))
                .map(BinaryHeap::len)
                .sum();
            let running: usize = self
                .layout
                .workers_on(n)
                .filter_map(|w| self.sent.get(&w))
                .map(VecDeque::len)
                .sum();
            queued + running
        };
        let best = tied
            .into_iter()
            .filter(|n| !self.lost_nodes.contains(n))
            .filter_map(|n| {
                let first = self.layout.workers_on(n).next()?;
                (self.layout.server_of(first) == self.me).then_some((load(n), n, first))
            })
            .min();
        if let Some((_, _, rank)) = best {
            target.rank = rank;
        }
    }

    /// Every task this balancer holds: queued, or sent to a worker and not
    /// done (running, or sent ahead).
    pub(crate) fn held(&self) -> impl Iterator<Item = &Task> {
        let queued = (self.queues.values().chain([&self.par]))
            .flat_map(|h| h.iter().map(|q| q.task.as_ref()));
        // A parallel task once, by its first worker.
        let sent = (self.sent.iter())
            .flat_map(|(w, d)| d.iter().map(move |s| (w, &s.task)))
            .filter(|(w, t)| t.par.as_ref().is_none_or(|p| p.head() == Some(**w)))
            .map(|(_, t)| t);
        queued.chain(sent)
    }

    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.queues.values().map(BinaryHeap::len).sum::<usize>() + self.par.len()
    }

    /// `worker` is ready for a task (it asked, or finished its last one).
    pub(crate) fn ready(&mut self, worker: Rank) {
        self.ahead.retain(|w| *w != worker);
        if !self.idle.contains(&worker) && !self.holding.contains(&worker) {
            self.idle.push_back(worker);
        }
    }

    /// `worker` is busy but may be sent a task ahead (not while it is one
    /// of a job's: the job is as long as its longest rank).
    pub(crate) fn ready_ahead(&mut self, worker: Rank) {
        let in_job = !self.jobs.is_empty()
            && (self.sent.get(&worker)).is_some_and(|d| d.iter().any(|s| s.task.par.is_some()));
        if !in_job && !self.idle.contains(&worker) && !self.ahead.contains(&worker) {
            self.ahead.push_back(worker);
        }
    }

    /// `worker` finished a task it was sent: what it took (and fetched) is
    /// learned. A parallel task's first worker reports for the job, once
    /// every other worker of it did (`part_done`).
    pub(crate) fn finished(&mut self, worker: Rank, o: &Outcome, now: Instant) -> Finished {
        // (Most runs have no job: no lookup then.)
        let job = (!self.jobs.is_empty())
            .then(|| self.jobs.remove(&o.id))
            .flatten();
        let Some(done) = self.take_sent(worker, o.id, now) else {
            return Finished::Deliver;
        };
        self.costs
            .ran(&done.task.func, Duration::from_micros(o.micros));
        // (A job's fetches are its workers' together: no one link's.)
        if let (Some(f), Some(from), None) = (o.fetched, done.source, &job) {
            let to = self.layout.node_of(worker);
            self.costs
                .fetched(from, to, f.bytes, Duration::from_micros(f.micros));
        }
        if job.is_some_and(|j| j.broken) {
            self.again(done.task, now);
            return Finished::Again;
        }
        Finished::Deliver
    }

    /// `worker` is done with its part of parallel task `id` (not its
    /// first worker's, which reports the task).
    pub(crate) fn part_done(&mut self, worker: Rank, id: u64, now: Instant) {
        self.take_sent(worker, id, now);
    }

    /// Task `id`, sent to `worker`, is done there; the one after it starts.
    fn take_sent(&mut self, worker: Rank, id: u64, now: Instant) -> Option<Sent> {
        let tasks = self.sent.get_mut(&worker)?;
        let pos = tasks.iter().position(|s| s.task.id == id)?;
        let done = tasks.remove(pos).expect("a listed task");
        if pos == 0 {
            if let Some(next) = tasks.front_mut() {
                next.since = now;
            }
        }
        Some(done)
    }

    #[cfg(test)]
    pub(crate) fn job(&self, id: u64) -> Option<&[Rank]> {
        self.jobs.get(&id).map(|j| j.ranks.as_slice())
    }

    /// The running parallel tasks `worker` is one of the workers of, and
    /// their workers.
    pub(crate) fn jobs_of(&self, worker: Rank) -> Vec<(JobId, Vec<Rank>)> {
        (self.jobs.iter())
            .filter(|(_, j)| j.ranks.contains(&worker))
            .map(|(&task, j)| {
                let job = JobId {
                    task,
                    gathered: j.gathered,
                };
                (job, j.ranks.clone())
            })
            .collect()
    }

    /// Queues parallel task `t` again, to gather workers anew.
    fn again(&mut self, mut t: Task, now: Instant) {
        t.par = t.par.map(|p| Box::new(Par::new(p.size)));
        if let Err(t) = self.put(t, now) {
            self.cannot.push(*t);
        }
    }

    /// This server's workers still in the run (neither gone nor on a lost
    /// node).
    pub(crate) fn live(&self) -> usize {
        (self.layout.workers_of(self.me))
            .filter(|w| !self.lost_ranks.contains(w))
            .filter(|w| !self.lost_nodes.contains(&self.layout.node_of(*w)))
            .count()
    }

    /// Parallel tasks that can never run now, taken.
    pub(crate) fn take_cannot(&mut self) -> Vec<Task> {
        std::mem::take(&mut self.cannot)
    }

    /// Tasks sent to `worker` and not done, and how many of them are not
    /// short.
    pub(crate) fn outstanding(&self, worker: Rank) -> (u32, u32) {
        self.sent.get(&worker).map_or((0, 0), |tasks| {
            let long = tasks.iter().filter(|s| !s.short).count();
            (tasks.len() as u32, long as u32)
        })
    }

    /// The task `worker` is running (the first it was sent and not done).
    pub(crate) fn running(&self, worker: Rank) -> Option<u64> {
        self.sent.get(&worker)?.front().map(|s| s.task.id)
    }

    /// Forgets a worker that went away; returns the tasks it was sent and
    /// had not finished.
    /// A parallel task's copy goes back only from its first worker (the
    /// job then runs again); another's breaks the job, which runs again
    /// once its first worker reports.
    pub(crate) fn lost(&mut self, worker: Rank) -> Vec<Task> {
        self.idle.retain(|w| *w != worker);
        self.ahead.retain(|w| *w != worker);
        self.holding.retain(|w| *w != worker);
        let sent = self.sent.remove(&worker).unwrap_or_default();
        let mut back = Vec::new();
        for s in sent {
            let mut t = s.task;
            t.was_lost = true;
            let Some((head, size)) = t.par.as_ref().map(|p| (p.head(), p.size)) else {
                back.push(t);
                continue;
            };
            if head == Some(worker) {
                self.jobs.remove(&t.id);
                t.par = Some(Box::new(Par::new(size)));
                back.push(t);
            } else if let Some(job) = self.jobs.get_mut(&t.id) {
                job.broken = true;
            }
        }
        back
    }

    /// Node `node` is lost (a worker of it left: its file-system daemon is
    /// gone): its queued SOFT work may run anywhere; its HARD work, which
    /// never can now, is given back.
    pub(crate) fn node_lost(&mut self, node: u32, now: Instant) -> Vec<Task> {
        if !self.lost_nodes.insert(node) {
            return Vec::new();
        }
        let slots: Vec<Slot> = self
            .queues
            .keys()
            .copied()
            .filter(|s| match *s {
                Slot::HardRank(r) | Slot::SoftRank(r) => self.layout.node_of(r) == node,
                Slot::HardNode(n) | Slot::SoftNode(n) => n == node,
                Slot::Any => false,
            })
            .collect();
        self.put_again(slots, now)
    }

    /// Worker `w`'s process is gone: work queued for it runs elsewhere
    /// (SOFT) or is given back (HARD); its node is lost once no worker of
    /// it is left. What it was sent is `lost`'s.
    pub(crate) fn rank_lost(&mut self, w: Rank, now: Instant) -> Vec<Task> {
        if !self.lost_ranks.insert(w) {
            return Vec::new();
        }
        let node = self.layout.node_of(w);
        if self
            .layout
            .workers_on(node)
            .all(|r| self.lost_ranks.contains(&r))
        {
            return self.node_lost(node, now);
        }
        self.put_again([Slot::HardRank(w), Slot::SoftRank(w)], now)
    }

    /// Whether worker `rank`'s process is gone while its node is not lost.
    pub(crate) fn rank_gone(&self, rank: Rank) -> bool {
        self.lost_ranks.contains(&rank) && !self.lost_nodes.contains(&self.layout.node_of(rank))
    }

    /// Queues the work of `slots` again, after a loss changed where it may
    /// run; returns what can run nowhere now.
    fn put_again(&mut self, slots: impl IntoIterator<Item = Slot>, now: Instant) -> Vec<Task> {
        let mut stuck = Vec::new();
        for slot in slots {
            for q in self.queues.remove(&slot).unwrap_or_default() {
                if let Err(t) = self.put(*q.task, now) {
                    stuck.push(*t);
                }
            }
        }
        stuck
    }

    /// Idle workers (not those held for a parallel task).
    pub(crate) fn idle(&self) -> impl Iterator<Item = Rank> + '_ {
        self.idle.iter().copied()
    }

    /// Matches idle workers with tasks they may run: first each worker's own
    /// work, then SOFT work worth moving, to a worker of the target's node if
    /// one is idle; then busy workers with room get work ahead.
    pub(crate) fn dispatch(&mut self, now: Instant) -> Vec<(Rank, Task)> {
        let mut out = Vec::new();
        self.gather(now, &mut out);
        let mut waiting = VecDeque::new();
        while let Some(w) = self.idle.pop_front() {
            match self.take_own(&self.own(w)) {
                Some(mut t) => {
                    // On its target after all (given here by another
                    // server that meant it to spill).
                    t.spill = None;
                    out.push(self.start(w, t, now));
                }
                None => waiting.push_back(w),
            }
        }
        self.idle = waiting;
        while !self.idle.is_empty() {
            let Some((slot, node, spill)) = self.best_spill(now) else {
                break;
            };
            let pos = self
                .idle
                .iter()
                .position(|w| self.layout.node_of(*w) == node)
                .expect("an idle worker of the chosen node");
            let w = self.idle.remove(pos).expect("an idle worker");
            let mut task = self.pop(slot);
            // A task another server gave away keeps that server's reason.
            task.spill = task.spill.or(Some(spill));
            out.push(self.start(w, task, now));
        }
        let mut waiting = VecDeque::new();
        while let Some(w) = self.ahead.pop_front() {
            match self.take_own(&[Slot::HardRank(w), Slot::Any]) {
                Some(t) => out.push(self.start(w, t, now)),
                None => waiting.push_back(w),
            }
        }
        self.ahead = waiting;
        out
    }

    /// Gathers workers for the most urgent parallel tasks, in turn; starts
    /// each that has enough. Held workers take short work of their own
    /// meanwhile (`backfill`).
    fn gather(&mut self, now: Instant, out: &mut Vec<(Rank, Task)>) {
        while let Some(q) = self.par.peek() {
            let size = q.task.par.as_ref().map_or(1, |p| p.size);
            if self.live() < size as usize {
                let t = self.par.pop().expect("a peeked task");
                self.cannot.push(*t.task);
                continue;
            }
            self.holding.extend(self.idle.drain(..));
            let prefer = q.task.target.map(|t| self.layout.node_of(t.rank));
            let wanted = (q.task.inputs.as_slice(), prefer);
            let Some(ranks) = reserve::choose(&self.layout, &self.holding, size, wanted) else {
                self.backfill(size, now, out);
                return;
            };
            let task = *self.par.pop().expect("a peeked task").task;
            self.holding.retain(|w| !ranks.contains(w));
            self.seq += 1;
            let gathered = self.seq;
            for (i, &w) in ranks.iter().enumerate() {
                let mut part = task.clone();
                part.par = Some(Box::new(Par {
                    size,
                    ranks: ranks.clone(),
                    index: i as u32,
                    gathered,
                }));
                out.push(self.start(w, part, now));
            }
            self.jobs.insert(
                task.id,
                Job {
                    ranks,
                    gathered,
                    broken: false,
                },
            );
            // The rest are free again (for the next parallel task first).
            self.idle.extend(self.holding.drain(..));
        }
        self.idle.extend(self.holding.drain(..));
    }

    /// Held workers, while the first parallel task waits for `size`, take
    /// work of their own known to end before enough others are expected to
    /// be free.
    fn backfill(&mut self, size: u32, now: Instant, out: &mut Vec<(Rank, Task)>) {
        let busy: Vec<Duration> = (self.layout.workers_of(self.me))
            .filter(|w| !self.lost_ranks.contains(w) && !self.holding.contains(w))
            .map(|w| self.busy_for(w, now))
            .collect();
        let more = (size as usize).saturating_sub(self.holding.len());
        let until = reserve::until_gathered(busy, more);
        // Nothing known to be that short: no queue is looked through.
        if self.costs.shortest().is_none_or(|d| d >= until) {
            return;
        }
        let mut i = 0;
        while i < self.holding.len() {
            let w = self.holding[i];
            let mut fits: Vec<(Slot, Queued)> = (self.own(w).iter())
                .filter_map(|slot| Some((*slot, self.take_fitting(*slot, until)?)))
                .collect();
            // The most urgent, the more specific among equal priorities.
            let best = (fits.iter().enumerate())
                .max_by_key(|(k, (_, q))| (q.prio, Reverse(*k)))
                .map(|(k, _)| k);
            let best = best.map(|k| fits.swap_remove(k));
            for (slot, q) in fits {
                self.queues.entry(slot).or_default().push(q);
            }
            match best {
                Some((_, q)) => {
                    self.holding.remove(i);
                    let mut t = *q.task;
                    t.spill = None;
                    out.push(self.start(w, t, now));
                }
                None => i += 1,
            }
        }
    }

    /// The most urgent of the first `BACKFILL_SCAN` tasks of `slot` known
    /// to take less than `until`, taken out of its queue.
    fn take_fitting(&mut self, slot: Slot, until: Duration) -> Option<Queued> {
        let heap = self.queues.get_mut(&slot)?;
        let mut passed = Vec::new();
        let mut found = None;
        while let Some(q) = heap.pop() {
            if self.costs.runs(&q.task.func).1.is_some_and(|d| d < until) {
                found = Some(q);
                break;
            }
            passed.push(q);
            if passed.len() == BACKFILL_SCAN {
                break;
            }
        }
        heap.extend(passed);
        if heap.is_empty() {
            self.queues.remove(&slot);
        }
        found
    }

    /// The queues worker `w` takes work from, most specific first.
    fn own(&self, w: Rank) -> [Slot; 5] {
        let node = self.layout.node_of(w);
        [
            Slot::HardRank(w),
            Slot::SoftRank(w),
            Slot::HardNode(node),
            Slot::SoftNode(node),
            Slot::Any,
        ]
    }

    fn start(&mut self, w: Rank, task: Task, now: Instant) -> (Rank, Task) {
        let source = cost::source(&task.inputs, self.layout.node_of(w));
        let short = self.costs.is_short(&task.func);
        self.sent.entry(w).or_default().push_back(Sent {
            task: task.clone(),
            since: now,
            source,
            short,
        });
        (w, task)
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

    /// The most urgent SOFT task worth moving to an idle worker, the node
    /// it goes to and why.
    fn best_spill(&self, now: Instant) -> Option<(Slot, u32, Spill)> {
        let nodes = distinct(self.idle.iter().map(|w| self.layout.node_of(*w)));
        self.queues
            .iter()
            .filter(|(slot, _)| matches!(slot, Slot::SoftRank(_) | Slot::SoftNode(_)))
            .filter_map(|(slot, heap)| {
                let q = heap.peek()?;
                let (node, spill) = self.spill_to(*slot, q, &nodes, now)?;
                Some((q.key(), *slot, node, spill))
            })
            .max_by_key(|(k, ..)| *k)
            .map(|(_, slot, node, spill)| (slot, node, spill))
    }

    /// Where the head `q` of SOFT `slot` should go, among `nodes` with an
    /// idle worker: the node it reaches fastest, if fetching its missing
    /// bytes there takes less than its expected wait for its target (or it
    /// has waited the cap).
    fn spill_to(
        &self,
        slot: Slot,
        q: &Queued,
        nodes: &[u32],
        now: Instant,
    ) -> Option<(u32, Spill)> {
        let (workers, from) = self.on_target(slot);
        // The target's node first among equally quick ones.
        let (fetch, _, to) = nodes
            .iter()
            .filter(|&&n| !matches!(slot, Slot::SoftNode(t) if t == n))
            .map(|&n| (self.costs.fetch_time(&q.task.inputs, n), n != from, n))
            .min()?;
        let wait = self.expected_wait(slot, &workers, q, now);
        let capped = self.cap.is_some_and(|c| now.duration_since(q.since) >= c);
        (fetch < wait || capped).then(|| {
            let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
            let spill = Spill {
                from,
                fetch_us: us(fetch),
                wait_us: us(wait),
            };
            (to, spill)
        })
    }

    /// The live workers of this server that run a task of `slot` on target
    /// (none for work another server gave away, or when they are all gone:
    /// the task then waits for ever, so it leaves), and its target's node.
    fn on_target(&self, slot: Slot) -> (Vec<Rank>, u32) {
        let (rank, node) = match slot {
            Slot::SoftRank(r) | Slot::HardRank(r) => (Some(r), self.layout.node_of(r)),
            Slot::SoftNode(n) | Slot::HardNode(n) => (None, n),
            Slot::Any => return (Vec::new(), 0),
        };
        let workers = self
            .layout
            .workers_of(self.me)
            .filter(|w| rank.map_or(self.layout.node_of(*w) == node, |r| *w == r))
            .filter(|w| !self.lost_ranks.contains(w))
            .collect();
        (workers, node)
    }

    /// How long `q`, the head of `slot`, is expected to wait for one of
    /// `workers`: the work they have left, and the queued work those
    /// workers take first, shared out over them as it comes free (the
    /// water level the work ahead fills the free times to).
    fn expected_wait(&self, slot: Slot, workers: &[Rank], q: &Queued, now: Instant) -> Duration {
        if workers.is_empty() {
            return Duration::MAX;
        }
        let mut free: Vec<f64> = workers
            .iter()
            .map(|w| self.busy_for(*w, now).as_secs_f64())
            .collect();
        free.sort_by(f64::total_cmp);
        let node = self.layout.node_of(workers[0]);
        let competing = workers
            .iter()
            .flat_map(|w| [Slot::HardRank(*w), Slot::SoftRank(*w)])
            .chain([Slot::HardNode(node), Slot::SoftNode(node), Slot::Any])
            .filter(|s| *s != slot);
        let mut ahead = 0.0;
        for s in competing {
            let Some(heap) = self.queues.get(&s) else {
                continue;
            };
            let sampled = heap.len().min(SAMPLE);
            let work: f64 = heap
                .iter()
                .take(sampled)
                .filter(|o| o.key() > q.key())
                .filter_map(|o| self.costs.runs(&o.task.func).1)
                .map(|d| d.as_secs_f64())
                .sum();
            ahead += work * heap.len() as f64 / sampled as f64;
        }
        Duration::from_secs_f64(water_level(&free, ahead))
    }

    /// The expected time until `w` has done every task it was sent.
    fn busy_for(&self, w: Rank, now: Instant) -> Duration {
        let Some(tasks) = self.sent.get(&w) else {
            return Duration::ZERO;
        };
        tasks
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let ran = if i == 0 {
                    now.duration_since(s.since)
                } else {
                    Duration::ZERO
                };
                self.costs.left(&s.task.func, ran)
            })
            .sum()
    }

    /// When SOFT tasks waiting beside idle workers are weighed again.
    pub(crate) fn next_spill(&self, now: Instant) -> Option<Instant> {
        let waiting = self
            .queues
            .keys()
            .any(|s| matches!(s, Slot::SoftRank(_) | Slot::SoftNode(_)));
        (waiting && !self.idle.is_empty()).then_some(now + RECHECK)
    }

    /// Tasks for another server whose `idle` workers (rank, node) have
    /// nothing to do: up to half of what they may run, never HARD RANK
    /// work and HARD NODE work only for their nodes. SOFT work leaves its
    /// node on the terms of a spill.
    pub(crate) fn give(&mut self, idle: &[(Rank, u32)], now: Instant) -> Vec<Task> {
        let nodes = distinct(idle.iter().map(|(_, n)| *n));
        let mut slots: Vec<(Slot, Option<Spill>)> = Vec::new();
        let mut eligible = 0;
        for (slot, heap) in &self.queues {
            let ok = match *slot {
                Slot::Any => Some(None),
                Slot::HardNode(n) => nodes.contains(&n).then_some(None),
                // Their node's workers elsewhere are as good as the target.
                Slot::SoftNode(n) if nodes.contains(&n) => Some(None),
                Slot::SoftRank(_) | Slot::SoftNode(_) => heap
                    .peek()
                    .and_then(|q| self.spill_to(*slot, q, &nodes, now))
                    .map(|(_, spill)| Some(spill)),
                Slot::HardRank(_) => None,
            };
            if let Some(spill) = ok {
                slots.push((*slot, spill));
                eligible += heap.len();
            }
        }
        let mut budget = eligible.div_ceil(2);
        let mut out = Vec::new();
        for (slot, spill) in slots {
            while budget > 0 && self.queues.contains_key(&slot) {
                let mut task = self.pop(slot);
                task.spill = spill;
                out.push(task);
                budget -= 1;
            }
        }
        out
    }
}

/// The nodes in `nodes`, each once.
fn distinct(nodes: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = nodes.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The time the first of several workers, free after `free` seconds each
/// (sorted), can take a new task once `work` seconds of tasks ahead of it
/// have been shared out over them as each comes free.
fn water_level(free: &[f64], work: f64) -> f64 {
    let mut left = work;
    for (i, f) in free.iter().enumerate() {
        let next = free.get(i + 1).copied().unwrap_or(f64::INFINITY);
        let room = (next - f) * (i + 1) as f64;
        if left <= room {
            return f + left / (i + 1) as f64;
        }
        left -= room;
    }
    free.last().copied().unwrap_or(0.0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use locus_proto::run::{Fetched, Held, Placed, Target, Work};

    /// Ranks 0,1 on node a (0); 2,3 on node b (1); 4 the server.
    fn layout() -> Arc<Layout> {
        let names: Vec<String> = ["a", "a", "b", "b", "a"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        Arc::new(Layout::from_names(1, &names).unwrap())
    }

    fn balancer(cap: Option<Duration>) -> Balancer {
        Balancer::new(layout(), 4, cap)
    }

    /// A sleep task, targeted at (rank, HARD, NODE) if given.
    pub(crate) fn task(id: u64, target: Option<(Rank, bool, bool)>, prio: i64) -> Task {
        Task {
            id,
            func: "f".into(),
            target: target.map(|(rank, hard, node)| Target { rank, hard, node }),
            placed: Placed::Explicit,
            prio,
            work: Work::Sleep { secs: 0.0 },
            at: String::new(),
            key: String::new(),
            inputs: Vec::new(),
            stats: None,
            spill: None,
            remade: false,
            was_lost: false,
            par: None,
        }
    }

    /// A SOFT NODE task of `func` reading `mb` MB held on `node`.
    fn reader(id: u64, func: &str, node: u32, mb: u64) -> Task {
        Task {
            func: func.into(),
            inputs: vec![Held {
                bytes: mb * 1_000_000,
                nodes: vec![node],
            }],
            ..task(id, Some((node * 2, false, true)), 0)
        }
    }

    fn ids(v: &[(Rank, Task)]) -> Vec<(Rank, u64)> {
        v.iter().map(|(w, t)| (*w, t.id)).collect()
    }

    fn outcome(id: u64, w: Rank, ms: u64, fetched: Option<Fetched>) -> Outcome {
        Outcome {
            id,
            rank: w,
            micros: ms * 1000,
            fetched,
            ..Outcome::default()
        }
    }

    /// Worker `w` starts a task of `func` at `now` (HARD RANK, id `id`).
    fn busy(b: &mut Balancer, w: Rank, id: u64, func: &str, now: Instant) {
        b.put(
            Task {
                func: func.into(),
                ..task(id, Some((w, true, false)), 0)
            },
            now,
        )
        .unwrap();
        b.ready(w);
        assert_eq!(ids(&b.dispatch(now)), vec![(w, id)]);
    }

    /// The balancer learns that `func` takes `ms`.
    fn learn(b: &mut Balancer, func: &str, ms: u64, now: Instant) {
        busy(b, 0, 1000, func, now);
        b.finished(0, &outcome(1000, 0, ms, None), now);
    }

    fn job(id: u64, size: u32) -> Task {
        Task {
            func: "sim".into(),
            par: Some(Box::new(Par::new(size))),
            ..task(id, None, 0)
        }
    }

    /// The workers a parallel task was sent to, each with its index.
    fn parts(v: &[(Rank, Task)], id: u64) -> Vec<(Rank, u32)> {
        (v.iter())
            .filter(|(_, t)| t.id == id)
            .map(|(w, t)| (*w, t.par.as_ref().unwrap().index))
            .collect()
    }

    #[test]
    fn a_parallel_task_holds_workers_until_it_has_enough_then_runs_on_one_node_first() {
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(job(1, 2), now).unwrap();
        b.put(task(2, None, 0), now).unwrap();
        b.ready(0);
        b.ready(2);
        // Two on different nodes would do, but the other task waits too:
        // held workers run only work known to end before the job starts.
        let first = b.dispatch(now);
        assert_eq!(parts(&first, 1), vec![(0, 0), (2, 1)]);
        assert!(b.job(1).is_some());
        b.ready(1);
        b.ready(3);
        assert_eq!(ids(&b.dispatch(now)), vec![(1, 2)]);
        // The job ends: its first worker reports once the other did.
        b.part_done(2, 1, now);
        assert_eq!(
            b.finished(0, &outcome(1, 0, 5, None), now),
            Finished::Deliver
        );
        assert!(b.job(1).is_none());
        assert_eq!(b.outstanding(0), (0, 0));
        assert_eq!(b.outstanding(2), (0, 0));
    }

    #[test]
    fn a_job_prefers_one_node_and_then_the_node_with_its_inputs() {
        let mut b = balancer(None);
        let now = Instant::now();
        for w in 0..4 {
            b.ready(w);
        }
        b.put(
            Task {
                inputs: vec![Held {
                    bytes: 5,
                    nodes: vec![1],
                }],
                ..job(1, 2)
            },
            now,
        )
        .unwrap();
        assert_eq!(parts(&b.dispatch(now), 1), vec![(2, 0), (3, 1)]);
    }

    #[test]
    fn two_jobs_each_over_half_the_workers_run_in_turn() {
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(job(1, 3), now).unwrap();
        b.put(job(2, 3), now).unwrap();
        for w in 0..4 {
            b.ready(w);
        }
        let out = b.dispatch(now);
        let first = parts(&out, 1);
        assert_eq!(first.len(), 3);
        assert!(parts(&out, 2).is_empty());
        // Two free of four: the second job waits for a third.
        b.part_done(first[1].0, 1, now);
        b.ready(first[1].0);
        assert!(b.dispatch(now).is_empty());
        b.part_done(first[2].0, 1, now);
        b.ready(first[2].0);
        b.finished(first[0].0, &outcome(1, first[0].0, 5, None), now);
        b.ready(first[0].0);
        assert_eq!(parts(&b.dispatch(now), 2).len(), 3, "three are free");
    }

    #[test]
    fn held_workers_take_work_known_to_end_before_the_job_can_start() {
        let mut b = balancer(None);
        let now = Instant::now();
        learn(&mut b, "short", 10, now);
        learn(&mut b, "long", 10_000, now);
        // Workers 1 and 2 busy for about 10 s; a job of 3 waits for one.
        busy(&mut b, 1, 10, "long", now);
        busy(&mut b, 2, 11, "long", now);
        b.put(job(1, 3), now).unwrap();
        b.put(
            Task {
                func: "long".into(),
                ..task(3, None, 0)
            },
            now,
        )
        .unwrap();
        b.put(
            Task {
                func: "short".into(),
                ..task(4, None, 0)
            },
            now,
        )
        .unwrap();
        b.ready(0);
        b.ready(3);
        let out = b.dispatch(now);
        assert_eq!(ids(&out), vec![(0, 4)], "only the short task fills a hole");
    }

    #[test]
    fn a_job_that_lost_a_worker_runs_again_and_one_too_big_for_those_left_fails() {
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(job(1, 2), now).unwrap();
        b.ready(0);
        b.ready(1);
        assert_eq!(parts(&b.dispatch(now), 1), vec![(0, 0), (1, 1)]);
        assert!(b.lost(1).is_empty(), "the first worker reports for the job");
        b.rank_lost(1, now);
        let failed = outcome(1, 0, 5, None);
        assert_eq!(b.finished(0, &failed, now), Finished::Again);
        b.ready(0);
        b.ready(2);
        assert_eq!(parts(&b.dispatch(now), 1), vec![(0, 0), (2, 1)]);
        // Its first worker gone: the task comes back at once, to gather anew.
        let back = b.lost(0);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].par.as_deref(), Some(&Par::new(2)));
        b.rank_lost(0, now);
        b.put(job(5, 3), now).unwrap();
        b.ready(3);
        b.dispatch(now);
        let cannot = b.take_cannot();
        assert_eq!(cannot.iter().map(|t| t.id).collect::<Vec<_>>(), vec![5]);
    }

    #[test]
    fn hard_rank_waits_for_its_worker() {
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(task(1, Some((3, true, false)), 0), now).unwrap();
        b.ready(0);
        b.ready(2);
        assert!(b.dispatch(now).is_empty());
        assert!(b.give(&[(1, 0), (2, 1)], now).is_empty());
        b.ready(3);
        assert_eq!(ids(&b.dispatch(now)), vec![(3, 1)]);
    }

    #[test]
    fn work_ahead_is_only_hard_rank_or_untargeted() {
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(task(1, Some((0, false, false)), 0), now).unwrap();
        b.put(task(2, Some((0, true, true)), 0), now).unwrap();
        b.ready_ahead(0);
        assert!(b.dispatch(now).is_empty());
        b.put(task(3, Some((0, true, false)), 0), now).unwrap();
        b.put(task(4, None, 0), now).unwrap();
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
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(task(1, Some((2, true, true)), 0), now).unwrap();
        b.ready(0);
        assert!(b.dispatch(now).is_empty());
        assert!(b.give(&[(1, 0)], now).is_empty());
        b.ready(3);
        assert_eq!(ids(&b.dispatch(now)), vec![(3, 1)]);
        b.put(task(2, Some((2, true, true)), 0), now).unwrap();
        assert_eq!(b.give(&[(3, 1)], now).len(), 1);
    }

    #[test]
    fn soft_without_inputs_spills_same_node_first_when_target_busy() {
        let mut b = balancer(None);
        let now = Instant::now();
        busy(&mut b, 2, 1, "f", now);
        // Rank 2 is busy: its next SOFT task has nothing to fetch, so any
        // expected wait is worth leaving for; rank 3 (same node) before 0.
        b.put(task(2, Some((2, false, false)), 0), now).unwrap();
        b.ready(0);
        b.ready(3);
        let later = now + Duration::from_millis(10);
        let got = b.dispatch(later);
        assert_eq!(ids(&got), vec![(3, 2)]);
        let spill = got[0].1.spill.expect("recorded");
        assert_eq!((spill.from, spill.fetch_us), (1, 0));
        assert_eq!(spill.wait_us, 10_000);
    }

    #[test]
    fn soft_leaves_only_when_fetching_is_quicker_than_waiting() {
        let mut b = balancer(None);
        let now = Instant::now();
        learn(&mut b, "map", 1000, now);
        // Both workers of node a have just started a map (1 s each).
        busy(&mut b, 0, 1, "map", now);
        busy(&mut b, 1, 2, "map", now);
        b.ready(2);
        // 250 MB at the default 125 MB/s: 2 s to fetch, more than the wait.
        b.put(reader(10, "map", 0, 250), now).unwrap();
        assert!(b.dispatch(now).is_empty());
        assert_eq!(b.next_spill(now), Some(now + RECHECK));
        // It runs at home when a worker there is free.
        b.finished(0, &outcome(1, 0, 1000, None), now);
        b.ready(0);
        let got = b.dispatch(now);
        assert_eq!(ids(&got), vec![(0, 10)]);
        assert_eq!(got[0].1.spill, None);
        // 50 MB: 0.4 s, less than the 1 s wait: it goes to node b.
        b.put(reader(11, "map", 0, 50), now).unwrap();
        let got = b.dispatch(now);
        assert_eq!(ids(&got), vec![(2, 11)]);
        assert_eq!(
            got[0].1.spill,
            Some(Spill {
                from: 0,
                fetch_us: 400_000,
                wait_us: 1_000_000
            })
        );
    }

    #[test]
    fn work_ahead_on_the_target_lengthens_the_wait() {
        let mut b = balancer(None);
        let now = Instant::now();
        learn(&mut b, "map", 1000, now);
        busy(&mut b, 0, 1, "map", now);
        busy(&mut b, 1, 2, "map", now);
        // Four HARD NODE maps of node a come first (higher priority): two
        // workers finish at 1 s, take two each: the reader waits 3 s.
        for id in 3..7 {
            b.put(
                Task {
                    func: "map".into(),
                    ..task(id, Some((0, true, true)), 5)
                },
                now,
            )
            .unwrap();
        }
        b.ready(2);
        // 250 MB: 2 s to fetch < 3 s wait.
        b.put(reader(10, "map", 0, 250), now).unwrap();
        let got = b.dispatch(now);
        assert_eq!(ids(&got), vec![(2, 10)]);
        assert_eq!(got[0].1.spill.unwrap().wait_us, 3_000_000);
    }

    #[test]
    fn fetch_rates_are_learned_from_outcomes() {
        let mut b = balancer(None);
        let now = Instant::now();
        learn(&mut b, "map", 1000, now);
        busy(&mut b, 2, 1, "map", now);
        busy(&mut b, 3, 2, "map", now);
        // 10 MB of node b: 80 ms at the default rate, less than the wait.
        b.put(reader(5, "map", 1, 10), now).unwrap();
        b.ready(0);
        assert_eq!(ids(&b.dispatch(now)), vec![(0, 5)]);
        // It took 1 s to fetch: 10 MB/s from b to a.
        let fetched = Fetched {
            bytes: 10_000_000,
            micros: 1_000_000,
        };
        b.finished(0, &outcome(5, 0, 1100, Some(fetched)), now);
        assert_eq!(b.costs().rate(1, 0), 10e6);
        // Now 8 MB takes 0.8 s: more than the maps' remaining 0.5 s.
        b.ready(0);
        b.put(reader(8, "map", 1, 8), now).unwrap();
        assert!(b.dispatch(now + Duration::from_millis(500)).is_empty());
    }

    #[test]
    fn the_cap_moves_a_task_that_waited_long_enough() {
        let wait = Duration::from_millis(50);
        let mut b = balancer(Some(wait));
        let now = Instant::now();
        learn(&mut b, "map", 1000, now);
        busy(&mut b, 0, 1, "map", now);
        busy(&mut b, 1, 2, "map", now);
        b.put(reader(10, "map", 0, 1000), now).unwrap();
        b.ready(2);
        assert!(b.dispatch(now).is_empty());
        let got = b.dispatch(now + wait);
        assert_eq!(ids(&got), vec![(2, 10)]);
        assert_eq!(got[0].1.spill.unwrap().fetch_us, 8_000_000);
    }

    #[test]
    fn ties_between_heaviest_nodes_go_to_the_less_loaded() {
        let mut b = balancer(None);
        let now = Instant::now();
        busy(&mut b, 0, 1, "f", now);
        let both = Task {
            placed: Placed::Auto,
            inputs: vec![
                Held {
                    bytes: 5,
                    nodes: vec![0],
                },
                Held {
                    bytes: 5,
                    nodes: vec![1],
                },
            ],
            ..task(2, Some((0, false, true)), 0)
        };
        b.put(both, now).unwrap();
        b.ready(1);
        b.ready(2);
        // Node a has a running task, node b none: b's worker takes it as
        // its own (no spill).
        let got = b.dispatch(now);
        assert_eq!(ids(&got), vec![(2, 2)]);
        assert_eq!(got[0].1.spill, None);
    }

    #[test]
    fn soft_work_whose_node_has_none_of_this_servers_workers_left_moves() {
        // Two servers: 4 has workers 0 (node a) and 2 (node b), 5 has 1
        // and 3. Worker 2 is gone; node b lives on (worker 3, server 5's).
        let names: Vec<String> = ["a", "a", "b", "b", "a", "a"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let mut b = Balancer::new(Arc::new(Layout::from_names(2, &names).unwrap()), 4, None);
        let now = Instant::now();
        assert!(b.rank_lost(2, now).is_empty());
        b.put(reader(1, "f", 1, 1), now).unwrap();
        b.ready(0);
        // It waited, for ever, on its dead worker (busy with nothing).
        assert_eq!(ids(&b.dispatch(now)), vec![(0, 1)]);
    }

    #[test]
    fn a_tie_with_a_lost_node_goes_to_the_live_one() {
        // The bytes are on nodes 0 and 1 (a copy each); node 1 is lost and
        // has no work left, node 0 is busy: the task still runs on node 0
        // (it waited on node 1, silently, for ever).
        let mut b = balancer(None);
        let now = Instant::now();
        busy(&mut b, 0, 1, "f", now);
        assert!(b.lost(2).is_empty() && b.lost(3).is_empty());
        assert!(b.node_lost(1, now).is_empty());
        let copies = Task {
            placed: Placed::Auto,
            inputs: vec![Held {
                bytes: 5,
                nodes: vec![0, 1],
            }],
            ..task(2, Some((0, false, true)), 0)
        };
        b.put(copies.clone(), now).unwrap();
        b.ready(1);
        assert_eq!(ids(&b.dispatch(now)), vec![(1, 2)]);
        // First placed on the lost node, it goes to the live copy's node
        // (not anywhere): rank 0 takes it as its node's own work.
        let moved = Task {
            id: 3,
            target: Some(Target {
                rank: 2,
                hard: false,
                node: true,
            }),
            ..copies
        };
        b.put(moved, now).unwrap();
        b.finished(0, &outcome(1, 0, 1, None), now);
        b.ready(0);
        let got = b.dispatch(now);
        assert_eq!(ids(&got), vec![(0, 3)]);
        assert_eq!(got[0].1.target.map(|t| t.rank), Some(0));
    }

    #[test]
    fn give_spills_on_the_same_terms() {
        let mut b = balancer(None);
        let now = Instant::now();
        learn(&mut b, "map", 1000, now);
        busy(&mut b, 0, 1, "map", now);
        busy(&mut b, 1, 2, "map", now);
        // Another server's idle worker on node b: 0.4 s to fetch < 1 s.
        b.put(reader(10, "map", 0, 50), now).unwrap();
        let given = b.give(&[(7, 1)], now);
        assert_eq!(given.len(), 1);
        assert_eq!(given[0].spill.map(|s| s.fetch_us), Some(400_000));
        // 2 s to fetch > 1 s: kept.
        b.put(reader(11, "map", 0, 250), now).unwrap();
        assert!(b.give(&[(7, 1)], now).is_empty());
    }

    #[test]
    fn soft_work_given_away_runs_on_the_receivers_workers() {
        // Two servers: ranks 0,1 (node a) served by 4, ranks 2,3 (node b) by
        // 5. Server 5 was given a SOFT task of rank 0 with a big input: it
        // cannot run it on target, so its idle worker takes it.
        let names: Vec<String> = ["a", "a", "b", "b", "a", "b"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let layout = Arc::new(Layout::from_names(2, &names).unwrap());
        let mut b = Balancer::new(layout.clone(), 5, None);
        let now = Instant::now();
        b.put(reader(1, "map", 0, 1000), now).unwrap();
        let w = layout.workers_of(5).next().unwrap();
        b.ready(w);
        assert_eq!(ids(&b.dispatch(now)), vec![(w, 1)]);
    }

    #[test]
    fn a_given_task_that_runs_on_its_target_is_no_spill() {
        let mut b = balancer(None);
        let now = Instant::now();
        let mut t = reader(1, "map", 0, 10);
        t.spill = Some(Spill {
            from: 0,
            fetch_us: 1,
            wait_us: 2,
        });
        b.put(t, now).unwrap();
        b.ready(1);
        let got = b.dispatch(now);
        assert_eq!(ids(&got), vec![(1, 1)]);
        assert_eq!(got[0].1.spill, None);
    }

    #[test]
    fn priority_then_arrival_then_specificity() {
        let mut b = balancer(None);
        let now = Instant::now();
        b.put(task(1, None, 0), now).unwrap();
        b.put(task(2, None, 5), now).unwrap();
        b.put(task(3, Some((0, true, false)), 0), now).unwrap();
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
        let mut b = balancer(None);
        let now = Instant::now();
        for i in 0..10 {
            b.put(task(i, None, 0), now).unwrap();
        }
        b.put(task(99, Some((0, true, false)), 0), now).unwrap();
        let given = b.give(&[(2, 1)], now);
        assert_eq!(given.len(), 5);
        assert_eq!(b.queued(), 6);
        assert!(given.iter().all(|t| t.target.is_none()));
    }

    #[test]
    fn water_level_shares_work_over_workers_as_they_free() {
        assert_eq!(water_level(&[1.0, 3.0], 0.0), 1.0);
        assert_eq!(water_level(&[1.0, 3.0], 1.0), 2.0);
        // 2 s lifts the first to 3, the other 2 s are shared: 4.
        assert_eq!(water_level(&[1.0, 3.0], 4.0), 4.0);
        assert_eq!(water_level(&[0.5], 2.0), 2.5);
    }

    #[test]
    fn a_lost_node_fails_its_hard_work_and_lets_its_soft_work_run_anywhere() {
        let mut b = balancer(None);
        let now = Instant::now();
        // Node 1 is ranks 2 and 3.
        b.put(task(1, Some((2, true, false)), 0), now).unwrap();
        b.put(task(2, Some((3, true, true)), 0), now).unwrap();
        b.put(task(3, Some((2, false, false)), 0), now).unwrap();
        b.put(task(4, Some((3, false, true)), 0), now).unwrap();
        b.put(task(5, Some((0, true, false)), 0), now).unwrap();
        b.ready(2);
        assert_eq!(ids(&b.dispatch(now)), vec![(2, 1)]);
        let unfinished: Vec<u64> = b.lost(2).iter().map(|t| t.id).collect();
        assert_eq!(unfinished, vec![1], "what it was sent and did not finish");
        let mut stuck: Vec<u64> = b.node_lost(1, now).iter().map(|t| t.id).collect();
        stuck.sort_unstable();
        assert_eq!(stuck, vec![2]);
        // Later HARD work there is refused; SOFT work runs anywhere.
        assert_eq!(
            b.put(task(6, Some((3, true, false)), 0), now)
                .unwrap_err()
                .id,
            6
        );
        b.put(task(7, Some((3, false, false)), 0), now).unwrap();
        b.ready(1);
        b.ready(0);
        let mut ran = Vec::new();
        loop {
            let assigned = b.dispatch(now);
            if assigned.is_empty() {
                break;
            }
            for (w, t) in assigned {
                ran.push(t.id);
                b.finished(w, &outcome(t.id, w, 1, None), now);
                b.ready(w);
            }
        }
        ran.sort_unstable();
        assert_eq!(ran, vec![3, 4, 5, 7]);
    }

    #[test]
    fn a_gone_worker_fails_its_hard_work_and_its_node_goes_with_its_last_worker() {
        let mut b = balancer(None);
        let now = Instant::now();
        // Node 1 is ranks 2 and 3.
        b.put(task(1, Some((2, true, false)), 0), now).unwrap();
        b.put(task(2, Some((2, false, false)), 0), now).unwrap();
        b.put(task(3, Some((2, true, true)), 0), now).unwrap();
        let stuck: Vec<u64> = b.rank_lost(2, now).iter().map(|t| t.id).collect();
        assert_eq!(stuck, vec![1], "HARD on the gone rank");
        assert!(b.put(task(4, Some((2, true, false)), 0), now).is_err());
        // HARD on its node waits for the node's other worker.
        b.put(task(5, Some((3, true, true)), 0), now).unwrap();
        b.ready(0);
        assert_eq!(
            ids(&b.dispatch(now)),
            vec![(0, 2)],
            "its SOFT work, anywhere"
        );
        // The node's last worker gone: its HARD work is given back.
        let mut stuck: Vec<u64> = b.rank_lost(3, now).iter().map(|t| t.id).collect();
        stuck.sort_unstable();
        assert_eq!(stuck, vec![3, 5]);
    }
}
