//! The balancer under seeded workloads with nodes and workers lost: its
//! state machine (time passed in) driven through random steps — tasks put
//! with every kind of target and automatic placement over inputs that tie
//! between nodes, workers asking (some for work ahead), finishing and
//! dying, whole nodes lost with their file-system daemon, one or two
//! servers stealing from each other, `--soft-wait` for some seeds — then
//! drained: every live worker runs what it is given until nothing is held.
//! A task still queued then waits for a worker that never comes (a silent
//! wait of the run); each failure names its seed and replays from it. The class of bug is the one behind the `--replicas 2` run that
//! waited for ever on a lost node's queue (`least_loaded_of_the_heaviest`).
//! Parallel tasks (`@par`) gather workers among the others, some larger
//! than the workers left; a job's first worker reports once every other
//! live worker of it did, as the workers' protocol has it.

use super::balancer::tests::task;
use super::balancer::Balancer;
use super::balancer::Finished;
use super::layout::Layout;
use locus_proto::run::{Held, Outcome, Par, Placed, Rank, Target, Task};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One seed's world: a layout of 2–4 nodes of 1–3 workers and one or two
/// servers, each with its balancer (a worker is its server's: the server
/// learns of its death, the others do not).
struct World {
    rng: StdRng,
    layout: Arc<Layout>,
    balancers: Vec<Balancer>,
    now: Instant,
    next_id: u64,
    dead: HashSet<Rank>,
    lost_nodes: HashSet<u32>,
    /// Tasks put and not yet finished or failed: each must end once.
    outstanding: HashSet<u64>,
    /// Running parallel tasks: their workers (the first reports).
    jobs: HashMap<u64, Vec<Rank>>,
    /// The parts of jobs other than their first (some of a job whose first
    /// worker was lost, which end all the same).
    parts: HashSet<(u64, Rank)>,
    /// What happened, for the failure's message.
    log: Vec<String>,
}

impl World {
    fn new(seed: u64) -> World {
        let mut rng = StdRng::seed_from_u64(seed);
        let nodes = rng.gen_range(2..=4u32);
        let mut names: Vec<String> = Vec::new();
        for n in 0..nodes {
            for _ in 0..rng.gen_range(1..=3) {
                names.push(format!("n{n}"));
            }
        }
        let servers = rng.gen_range(1..=2u32);
        names.extend((0..servers).map(|_| "n0".to_string()));
        let layout = Arc::new(Layout::from_names(servers, &names).expect("a layout"));
        // `--soft-wait`, for some seeds.
        let cap = rng
            .gen_bool(0.3)
            .then(|| Duration::from_millis(rng.gen_range(50..500)));
        let balancers = (layout.workers()..layout.size())
            .map(|server| Balancer::new(layout.clone(), server, cap))
            .collect();
        World {
            balancers,
            layout,
            rng,
            now: Instant::now(),
            next_id: 0,
            dead: HashSet::new(),
            lost_nodes: HashSet::new(),
            outstanding: HashSet::new(),
            jobs: HashMap::new(),
            parts: HashSet::new(),
            log: vec![format!(
                "ranks' nodes: {names:?} ({servers} server(s) last)"
            )],
        }
    }

    /// The index of worker `w`'s server among the balancers.
    fn server(&self, w: Rank) -> usize {
        (self.layout.server_of(w) - self.layout.workers()) as usize
    }

    /// The balancer of worker `w`'s server.
    fn of(&mut self, w: Rank) -> &mut Balancer {
        let server = self.server(w);
        &mut self.balancers[server]
    }

    fn workers(&self) -> Vec<Rank> {
        (0..self.layout.workers()).collect()
    }

    fn live(&self) -> Vec<Rank> {
        let all = self.workers();
        all.into_iter().filter(|w| !self.dead.contains(w)).collect()
    }

    /// A task as the engine makes it: a target of any kind, or placed by
    /// its inputs (some tying between nodes).
    fn new_task(&mut self) -> Task {
        self.next_id += 1;
        let workers = self.workers();
        let nodes = self.layout.nodes.len() as u32;
        let id = self.next_id;
        match self.rng.gen_range(0..7) {
            0 => task(id, None, 0),
            // Up to one more worker than the first server has.
            6 => {
                let most = self.layout.workers_of(self.layout.leader()).count() as u32;
                Task {
                    par: Some(Box::new(Par::new(self.rng.gen_range(1..=most + 1)))),
                    ..task(id, None, self.rng.gen_range(0..3))
                }
            }
            1..=3 => {
                let mut inputs = Vec::new();
                for _ in 0..self.rng.gen_range(1..=3) {
                    let copies = self.rng.gen_range(1..=2.min(nodes as usize));
                    let mut held: Vec<u32> = (0..nodes).collect();
                    held.sort_by_key(|_| self.rng.gen::<u32>());
                    held.truncate(copies);
                    let bytes = [1_000_000, 1_000_000, 4_000_000][self.rng.gen_range(0..3)];
                    inputs.push(Held { bytes, nodes: held });
                }
                let heaviest = super::cost::heaviest(&inputs)[0];
                let first = self.layout.workers_on(heaviest).next().expect("a worker");
                Task {
                    target: Some(Target {
                        rank: first,
                        hard: false,
                        node: true,
                    }),
                    placed: Placed::Auto,
                    inputs,
                    ..task(id, None, 0)
                }
            }
            _ => {
                let rank = workers[self.rng.gen_range(0..workers.len())];
                let (hard, node) = (self.rng.gen_bool(0.3), self.rng.gen_bool(0.5));
                task(id, Some((rank, hard, node)), self.rng.gen_range(0..3))
            }
        }
    }

    /// Queues `t` with the server of its target's worker (any server
    /// without one); what can run nowhere fails.
    fn put(&mut self, t: Task) {
        let server = match t.target {
            _ if t.par.is_some() => 0,
            Some(target) => self.layout.server_of(target.rank) - self.layout.workers(),
            None => self.rng.gen_range(0..self.balancers.len() as u32),
        };
        self.put_at(server as usize, t);
    }

    fn put_at(&mut self, server: usize, t: Task) {
        let id = t.id;
        if self.balancers[server].put(t, self.now).is_err() {
            self.failed(id);
        }
    }

    fn dispatch(&mut self) -> Result<(), String> {
        let now = self.now;
        let sent: Vec<(Rank, Task)> = self
            .balancers
            .iter_mut()
            .flat_map(|b| b.dispatch(now))
            .collect();
        let cannot: Vec<u64> = (self.balancers.iter_mut())
            .flat_map(Balancer::take_cannot)
            .map(|t| t.id)
            .collect();
        for id in cannot {
            self.failed(id);
        }
        for (w, t) in sent {
            if self.dead.contains(&w) {
                return Err(format!("task {} sent to dead worker {w}", t.id));
            }
            if let Some(par) = &t.par {
                // A job gathered anew (its first worker was lost) replaces
                // the old one.
                if par.index == 0 {
                    self.log
                        .push(format!("job {} gathered on {:?}", t.id, par.ranks));
                    self.jobs.insert(t.id, par.ranks.clone());
                }
                let ranks = self.jobs.entry(t.id).or_default();
                if *ranks != par.ranks || par.ranks.len() != par.size as usize {
                    return Err(format!(
                        "job {} sent as {par:?}, gathered as {ranks:?}",
                        t.id
                    ));
                }
                if par
                    .ranks
                    .iter()
                    .any(|r| self.layout.server_of(*r) != self.layout.leader())
                {
                    return Err(format!("job {} on another server's workers", t.id));
                }
                if par.index > 0 {
                    self.parts.insert((t.id, w));
                }
            }
            if let Some(target) = t.target.filter(|t| t.hard) {
                let on = match target.node {
                    true => self.layout.node_of(w) == self.layout.node_of(target.rank),
                    false => w == target.rank,
                };
                if !on {
                    return Err(format!("HARD task {} sent off its target to {w}", t.id));
                }
            }
        }
        Ok(())
    }

    /// Task `id` can run nowhere: its server fails it.
    fn failed(&mut self, id: u64) {
        self.log.push(format!("task {id} can run nowhere: failed"));
        self.outstanding.remove(&id);
    }

    fn finish_one(&mut self, w: Rank) -> Result<(), String> {
        let (micros, now) = (self.rng.gen_range(1_000..200_000), self.now);
        let ended = self.of(w).running(w);
        let mut again = false;
        if let Some(id) = ended {
            if self.parts.remove(&(id, w)) {
                // Another worker's part ends: it is free.
                self.of(w).part_done(w, id, now);
                self.offer(w);
                return Ok(());
            }
            if let Some(ranks) = self.jobs.get(&id).cloned() {
                // The first reports once the others' parts ended.
                let waiting = (ranks[1..].iter())
                    .any(|r| !self.dead.contains(r) && self.parts.contains(&(id, *r)));
                if waiting {
                    return Ok(());
                }
                self.jobs.remove(&id);
            }
            self.log.push(format!("task {id} ends on {w}"));
            let o = Outcome {
                id,
                rank: w,
                micros,
                ..Outcome::default()
            };
            again = self.of(w).finished(w, &o, now) == Finished::Again;
        }
        self.offer(w);
        match ended {
            Some(id) if again => {
                self.log
                    .push(format!("job {id} lost a worker: it runs again"));
                Ok(())
            }
            Some(id) if !self.outstanding.remove(&id) => {
                Err(format!("task {id} ended twice (worker {w})"))
            }
            _ => Ok(()),
        }
    }

    /// As the server offers work to a worker: idle with nothing left, else
    /// ready for work ahead.
    fn offer(&mut self, w: Rank) {
        match self.of(w).outstanding(w).0 {
            0 => self.of(w).ready(w),
            _ => self.of(w).ready_ahead(w),
        }
    }

    /// Worker `w` dies: its server queues what it was sent again; every
    /// server notes it (told by its server) and fails what can run nowhere
    /// now.
    fn kill(&mut self, w: Rank) {
        self.dead.insert(w);
        let node = self.layout.node_of(w);
        if self.layout.workers_on(node).all(|r| self.dead.contains(&r)) {
            self.lost_nodes.insert(node);
        }
        self.log.push(format!("worker {w} dies"));
        let server = self.server(w);
        let now = self.now;
        let stuck: Vec<Task> = (self.balancers.iter_mut())
            .flat_map(|b| b.rank_lost(w, now))
            .collect();
        for t in stuck {
            self.failed(t.id);
        }
        for t in self.balancers[server].lost(w) {
            self.put_at(server, t);
        }
    }

    fn step(&mut self) -> Result<(), String> {
        let live = self.live();
        match self.rng.gen_range(0..10) {
            0..=4 => {
                let t = self.new_task();
                self.outstanding.insert(t.id);
                self.log
                    .push(format!("put {} {:?} {:?}", t.id, t.target, t.inputs));
                self.put(t);
            }
            5..=6 if !live.is_empty() => {
                let w = live[self.rng.gen_range(0..live.len())];
                self.finish_one(w)?;
            }
            // A busy worker with room asks for work ahead.
            7 if !live.is_empty() => {
                let w = live[self.rng.gen_range(0..live.len())];
                if self.of(w).running(w).is_some() {
                    self.of(w).ready_ahead(w);
                }
            }
            // Never the last worker: a run without workers fails whole.
            8 if live.len() > 1 => {
                let w = live[self.rng.gen_range(0..live.len())];
                let node = self.layout.node_of(w);
                let others = live.iter().any(|r| self.layout.node_of(*r) != node);
                match self.rng.gen_bool(0.5) && others {
                    true => self.leave(node),
                    false => self.kill(w),
                }
            }
            _ => self.now += Duration::from_millis(self.rng.gen_range(1..500)),
        }
        self.dispatch()
    }

    /// Node `node`'s file-system daemon is lost: each of its live workers
    /// leaves, telling its server, which queues what the worker had again;
    /// every server (told by that one) takes the node for lost: fails its
    /// HARD work there, moves its SOFT work.
    fn leave(&mut self, node: u32) {
        self.log.push(format!("node {node} is lost"));
        self.lost_nodes.insert(node);
        let leaving: Vec<Rank> = self
            .live()
            .into_iter()
            .filter(|w| self.layout.node_of(*w) == node)
            .collect();
        let now = self.now;
        for w in leaving {
            self.dead.insert(w);
            let server = self.server(w);
            let stuck: Vec<Task> = (self.balancers.iter_mut())
                .flat_map(|b| b.node_lost(node, now))
                .collect();
            for t in stuck {
                self.failed(t.id);
            }
            for t in self.balancers[server].lost(w) {
                self.put_at(server, t);
            }
        }
    }

    /// A server whose live workers are idle asks the others for work, as
    /// servers steal.
    fn steal(&mut self) {
        for thief in 0..self.balancers.len() {
            let idle: Vec<(Rank, u32)> = (self.balancers[thief].idle())
                .filter(|w| !self.dead.contains(w))
                .map(|w| (w, self.layout.node_of(w)))
                .collect();
            if idle.is_empty() {
                continue;
            }
            for victim in (0..self.balancers.len()).filter(|v| *v != thief) {
                let now = self.now;
                for t in self.balancers[victim].give(&idle, now) {
                    self.put_at(thief, t);
                }
            }
        }
    }

    /// Every live worker runs what it is given until nothing is held.
    fn drain(&mut self) -> Result<(), String> {
        for _ in 0..2_000 {
            if self.balancers.iter().all(|b| b.held().next().is_none()) {
                // Every task put ended once, or failed: none vanished (its
                // engine would wait for it for ever).
                return match self.outstanding.is_empty() {
                    true => Ok(()),
                    false => Err(format!("tasks vanished: {:?}", self.outstanding)),
                };
            }
            for w in self.live() {
                self.finish_one(w)?;
            }
            self.now += Duration::from_secs(1);
            self.dispatch()?;
            self.steal();
            self.dispatch()?;
        }
        let stuck: Vec<String> = self
            .balancers
            .iter()
            .flat_map(Balancer::held)
            .map(|t| {
                format!(
                    "task {} (target {:?}, inputs {:?})",
                    t.id, t.target, t.inputs
                )
            })
            .collect();
        Err(format!(
            "a silent wait: live workers {:?} idle (nodes lost {:?}) while the balancer holds {}",
            self.live(),
            self.lost_nodes,
            stuck.join("; ")
        ))
    }
}

/// Runs seed `seed`: `steps` random steps, then the drain.
fn run_seed(seed: u64, steps: usize) -> Result<(), String> {
    let mut w = World::new(seed);
    let ran = (0..steps)
        .try_for_each(|_| w.step())
        .and_then(|()| w.drain());
    ran.map_err(|why| {
        let tail = w.log.len().saturating_sub(12);
        format!(
            "seed {seed}: {why}\n  {}\nreplay: make simulate-balancer FROM={seed} SEEDS=1",
            w.log[tail..].join("\n  ")
        )
    })
}

/// Seeds a test run takes (`make simulate-balancer SEEDS=N` takes more,
/// through `LOCUS_BALANCER_SEEDS`; `LOCUS_BALANCER_FROM` is the first).
fn budget(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn a_budget_of_seeded_workloads_with_lost_workers_never_waits_silently() {
    let from = budget("LOCUS_BALANCER_FROM", 0);
    for seed in from..from + budget("LOCUS_BALANCER_SEEDS", 2_000) {
        if let Err(why) = run_seed(seed, 150) {
            panic!("{why}");
        }
    }
}
