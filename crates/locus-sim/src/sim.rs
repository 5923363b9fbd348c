//! One seed's simulation: an in-process cluster whose shape the seed
//! draws, a workload of steps (one to four operations each, run at once
//! from clients on different nodes, started a drawn few milliseconds
//! apart) with daemons crashed and restarted at drawn points, even while
//! operations are in flight. After every step the model judges the
//! answers; a step after a fault or an uncertain answer reads every name
//! back, so nothing acknowledged can be lost unseen. The seed fixes the
//! workload, the faults and their timing; the threads' interleaving within
//! a step is the machine's, so a failing seed replays its schedule exactly
//! and its race most of the time.

use crate::cluster::{InProcess, Shape};
use crate::lossy::{Losses, Lossy};
use crate::model::{Done, Model, Verdict};
use crate::ops::{all_paths, Op, Seen, DIRS};
use locus_fs::{Client, ClientOptions, Durability};
use locus_proto::fs::NodeId;
use locus_proto::{Cause, Errno, FsError, FsResult};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The write lock's lease in simulated clusters (short, so that locks left
/// by crashes expire within a seed).
const LEASE: Duration = Duration::from_secs(2);
/// What a lock may outlast its lease by before the model calls it held.
const LEASE_SLACK: Duration = Duration::from_secs(2);
/// The bound on one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Seeds the draw of lost messages, apart from the workload's.
const LOSS_SEED: u64 = 0x1055_1055_1055_1055;
/// Steps of reads at the end, until a single state is left.
const SETTLE_STEPS: u32 = 3;

/// What one seed runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Steps of the workload.
    pub steps: u32,
    /// How long an operation may take before it is a silent wait.
    pub deadline: Duration,
    /// A bug put in on purpose, to show the simulation finds its class.
    pub inject: Option<Inject>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            steps: 24,
            deadline: Duration::from_secs(120),
            inject: None,
        }
    }
}

/// Bugs the simulation can put in on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inject {
    /// Renames done as a read, a put and an unlink (no decided step): two
    /// renames of one file at once may both succeed.
    RenameByCopy,
}

/// What a seed did, when every step was explained.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The seed.
    pub seed: u64,
    /// The cluster it drew.
    pub shape: Shape,
    /// Operations answered.
    pub ops: usize,
    /// Daemons crashed.
    pub crashes: usize,
    /// Daemons restarted.
    pub restarts: usize,
    /// Requests and answers lost on their way.
    pub lost: usize,
}

/// A broken promise (or a harness that could not run), with the seed that
/// replays it and the steps that led there.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed that replays it.
    pub seed: u64,
    /// The step it failed at.
    pub step: u32,
    /// What failed.
    pub kind: FailureKind,
    /// Every step's operations and answers, and the faults, up to it.
    pub log: Vec<String>,
}

/// What a seed found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// No order of a step's operations explains their answers.
    NoOrder,
    /// The workload left more possible states than the model follows.
    TooUncertain(usize),
    /// An operation did not answer within the deadline.
    Stuck {
        /// The operation, as the log shows it.
        op: String,
    },
    /// A write lock held past its lease, with no writer left.
    LockOutlivedLease {
        /// The locked file.
        path: String,
    },
    /// The cluster could not be started or restarted.
    Harness(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.kind {
            FailureKind::NoOrder => "no order of its operations explains their answers".into(),
            FailureKind::TooUncertain(n) => format!("{n} possible states: too uncertain to judge"),
            FailureKind::Stuck { op } => format!("`{op}` did not answer: a silent wait"),
            FailureKind::LockOutlivedLease { path } => {
                format!("{path} stayed locked past its lease with no writer left")
            }
            FailureKind::Harness(e) => format!("harness: {e}"),
        };
        writeln!(f, "seed {} step {}: {what}", self.seed, self.step)?;
        for line in &self.log {
            writeln!(f, "  {line}")?;
        }
        write!(f, "replay: make simulate SEED={}", self.seed)
    }
}

/// A fault drawn for a step.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Crash(NodeId),
    Restart(NodeId),
}

/// Runs seed `seed`'s workload.
pub fn simulate(seed: u64, cfg: &Config) -> Result<Summary, Failure> {
    let mut rng = StdRng::seed_from_u64(seed);
    let shape = Shape {
        nodes: rng.gen_range(2..=4),
        replicas: if rng.gen_bool(0.5) { 2 } else { 1 },
        durability: Durability::Group,
    };
    let harness = |e: &dyn fmt::Display| Failure {
        seed,
        step: 0,
        kind: FailureKind::Harness(e.to_string()),
        log: vec![format!("{shape:?}")],
    };
    let dir = tempfile::tempdir().map_err(|e| harness(&e))?;
    let cluster = InProcess::start(dir.path(), shape).map_err(|e| harness(&e))?;
    // Drawn apart from the workload, so that a seed's workload stays what
    // it was before messages were lost.
    let mut losing = StdRng::seed_from_u64(seed ^ LOSS_SEED);
    let loss = match losing.gen_bool(0.5) {
        true => losing.gen_range(0.01..0.06),
        false => 0.0,
    };
    let losses = Arc::new(Losses::default());
    let clients = (0..shape.nodes)
        .map(|node| {
            let opts = ClientOptions {
                node,
                timeout: REQUEST_TIMEOUT,
                lease: LEASE,
                ..ClientOptions::default()
            };
            let lossy_seed = losing.gen();
            cluster.client_over(opts, |tcp| {
                Arc::new(Lossy::new(tcp, lossy_seed, loss, losses.clone()))
            })
        })
        .collect::<FsResult<Vec<Client>>>()
        .map_err(|e| harness(&e))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| harness(&e))?;
    let mut sim = Sim {
        seed,
        cfg: cfg.clone(),
        rng,
        shape,
        cluster: Arc::new(Mutex::new(cluster)),
        clients,
        model: Model::new(),
        log: vec![format!("{shape:?}, messages lost: {:.1}%", loss * 100.0)],
        losses,
        touched: HashMap::new(),
        restarted: None,
        t0: Instant::now(),
        summary: Summary {
            seed,
            shape,
            ops: 0,
            crashes: 0,
            restarts: 0,
            lost: 0,
        },
    };
    let result = rt.block_on(sim.run());
    // Clients go before the daemons they talk to.
    drop(sim.clients);
    rt.shutdown_timeout(Duration::from_secs(1));
    sim.summary.lost =
        sim.losses.requests.load(Ordering::Relaxed) + sim.losses.answers.load(Ordering::Relaxed);
    result.map(|()| sim.summary)
}

struct Sim {
    seed: u64,
    cfg: Config,
    rng: StdRng,
    shape: Shape,
    cluster: Arc<Mutex<InProcess>>,
    clients: Vec<Client>,
    model: Model,
    log: Vec<String>,
    /// Messages the clients' transports lose, and when.
    losses: Arc<Losses>,
    /// When an operation last ended on each path.
    touched: HashMap<String, Duration>,
    /// The step of the last restart.
    restarted: Option<u32>,
    t0: Instant,
    summary: Summary,
}

/// An operation to run: from which client, how long after the step began.
struct Planned {
    client: usize,
    op: Op,
    delay: Duration,
}

impl Sim {
    async fn run(&mut self) -> Result<(), Failure> {
        for d in DIRS {
            if let Err(e) = self.clients[0].mkdir(d).await {
                return Err(self.fail(0, FailureKind::Harness(format!("mkdir {d}: {e}"))));
            }
        }
        let mut settle = false;
        for step in 1..=self.cfg.steps {
            let (plan, fault) = if settle {
                (self.read_back(), None)
            } else {
                (self.draw_ops(step), self.draw_fault(step))
            };
            // Messages are lost while the workload runs, not while
            // everything is read back.
            self.losses.on.store(!settle, Ordering::Relaxed);
            let uncertain = self.step(step, plan, fault).await?;
            settle = uncertain || fault.is_some();
        }
        self.losses.on.store(false, Ordering::Relaxed);
        // Every daemon back, then read until one state is left.
        let down: Vec<NodeId> = {
            let c = self.cluster.lock().expect("cluster");
            (0..self.shape.nodes).filter(|n| !c.is_up(*n)).collect()
        };
        for n in down {
            self.fault(Fault::Restart(n), self.cfg.steps).await?;
        }
        for k in 1..=SETTLE_STEPS {
            let step = self.cfg.steps + k;
            let plan = self.read_back();
            self.step(step, plan, None).await?;
            if self.model.uncertainty() == 1 {
                break;
            }
        }
        Ok(())
    }

    fn draw_ops(&mut self, step: u32) -> Vec<Planned> {
        let n = self.rng.gen_range(1..=4);
        (0..n)
            .map(|k| Planned {
                client: self.rng.gen_range(0..self.clients.len()),
                op: Op::draw(&mut self.rng, &format!("s{}.{step}.{k}", self.seed)),
                delay: Duration::from_micros(self.rng.gen_range(0..4000)),
            })
            .collect()
    }

    /// A crash now and then; a node down comes back a few steps later. No
    /// crash in the step after a restart: a daemon back is caught up by its
    /// owners within a few requests, and losing one of them before then
    /// loses what it acknowledged on fewer copies (documented).
    fn draw_fault(&mut self, step: u32) -> Option<Fault> {
        let c = self.cluster.lock().expect("cluster");
        let down = (0..self.shape.nodes).find(|n| !c.is_up(*n));
        let settled = self.restarted.is_none_or(|s| step > s + 1);
        let fault = match down {
            Some(n) if self.rng.gen_bool(0.4) => Some(Fault::Restart(n)),
            None if self.rng.gen_bool(0.12) && settled => {
                Some(Fault::Crash(self.rng.gen_range(0..self.shape.nodes)))
            }
            _ => None,
        };
        if let Some(Fault::Restart(_)) = fault {
            self.restarted = Some(step);
        }
        fault
    }

    /// Reads of every name and listings of every directory, from drawn
    /// clients.
    fn read_back(&mut self) -> Vec<Planned> {
        let reads = all_paths().into_iter().map(|path| Op::Get { path });
        let lists = DIRS.iter().map(|d| Op::List { dir: d.to_string() });
        reads
            .chain(lists)
            .map(|op| Planned {
                client: self.rng.gen_range(0..self.clients.len()),
                op,
                delay: Duration::ZERO,
            })
            .collect()
    }

    /// Runs one step (its fault at a drawn point among its operations) and
    /// judges it; true if it left the namespace uncertain.
    async fn step(
        &mut self,
        step: u32,
        plan: Vec<Planned>,
        fault: Option<Fault>,
    ) -> Result<bool, Failure> {
        let fault_at = Duration::from_micros(self.rng.gen_range(0..6000));
        let mut tasks = Vec::new();
        for p in plan {
            let client = self.clients[p.client].clone();
            let (t0, deadline, inject) = (self.t0, self.cfg.deadline, self.cfg.inject);
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(p.delay).await;
                let start = t0.elapsed();
                let seen = tokio::time::timeout(deadline, execute(&client, &p.op, inject)).await;
                (p.client, p.op, seen.ok(), start, t0.elapsed())
            }));
        }
        if let Some(f) = fault {
            tokio::time::sleep(fault_at).await;
            self.fault(f, step).await?;
        }
        let mut done = Vec::new();
        let mut stuck = None;
        for t in tasks {
            let (client, op, seen, start, end) = t.await.expect("operation task");
            let shown = seen
                .as_ref()
                .map_or("(no answer)".into(), std::string::ToString::to_string);
            self.log.push(format!(
                "step {step} client {client} +{:?}: {op} -> {shown} ({:?})",
                start,
                end - start
            ));
            match seen {
                Some(seen) => done.push(Done {
                    op,
                    seen,
                    start,
                    end,
                }),
                None => stuck = Some(op.to_string()),
            }
        }
        self.summary.ops += done.len();
        if let Some(op) = stuck {
            return Err(self.fail(step, FailureKind::Stuck { op }));
        }
        self.check_leases(step, &done)?;
        let uncertain = done
            .iter()
            .any(|d| d.seen.binding() == crate::ops::Binding::Unknown);
        match self.model.step(&done) {
            Ok(()) => Ok(uncertain || self.model.uncertainty() > 1),
            Err(v) => {
                let kind = match v {
                    Verdict::NoOrder => FailureKind::NoOrder,
                    Verdict::TooUncertain(n) => FailureKind::TooUncertain(n),
                };
                let mut f = self.fail(step, kind);
                for d in done.iter().filter(|d| !matches!(d.op, Op::List { .. })) {
                    for p in d.op.paths() {
                        let may = self.model.possible(p);
                        f.log
                            .push(format!("before step {step}, {p} was one of {may:?}"));
                    }
                }
                Err(f)
            }
        }
    }

    /// `EBUSY` for an operation whose names no other operation of this step
    /// touched, and whose last writers ended a lease ago, is a lock that
    /// outlived its lease.
    fn check_leases(&mut self, step: u32, done: &[Done]) -> Result<(), Failure> {
        for (i, d) in done.iter().enumerate() {
            if d.seen != Seen::Failed(Errno::EBUSY) {
                continue;
            }
            let paths = d.op.paths();
            let shared = done
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.op.paths().iter().any(|p| paths.contains(p)));
            let quiet = |p: &&str| {
                self.touched
                    .get(*p)
                    .is_none_or(|t| *t + LEASE + LEASE_SLACK < d.start)
            };
            if !shared && paths.iter().all(quiet) {
                let kind = FailureKind::LockOutlivedLease {
                    path: paths.join(" or "),
                };
                return Err(self.fail(step, kind));
            }
        }
        for d in done {
            for p in d.op.paths() {
                let t = self.touched.entry(p.to_string()).or_default();
                *t = (*t).max(d.end);
            }
        }
        Ok(())
    }

    async fn fault(&mut self, f: Fault, step: u32) -> Result<(), Failure> {
        let cluster = self.cluster.clone();
        self.log
            .push(format!("step {step} +{:?}: {f:?}", self.t0.elapsed()));
        let r = tokio::task::spawn_blocking(move || {
            let mut c = cluster.lock().expect("cluster");
            match f {
                Fault::Crash(n) => c.crash(n),
                Fault::Restart(n) => c.restart(n),
            }
        })
        .await
        .expect("fault task");
        match (f, r) {
            (_, Err(e)) => Err(self.fail(step, FailureKind::Harness(e.to_string()))),
            (Fault::Crash(_), Ok(())) => {
                self.summary.crashes += 1;
                Ok(())
            }
            (Fault::Restart(_), Ok(())) => {
                self.summary.restarts += 1;
                Ok(())
            }
        }
    }

    fn fail(&self, step: u32, kind: FailureKind) -> Failure {
        Failure {
            seed: self.seed,
            step,
            kind,
            log: self.log.clone(),
        }
    }
}

/// Runs `op` as a program would, with the library's calls.
async fn execute(c: &Client, op: &Op, inject: Option<Inject>) -> Seen {
    let r: FsResult<Seen> = async {
        match op {
            Op::Create { path, data } => {
                let w = c.create(path).await?;
                write_close(w, data).await
            }
            Op::Put { path, data } => c.put(path, data).await.map(|_| Seen::Done),
            Op::Append { path, data } => {
                let w = c.open_write(path, false).await?;
                write_close(w, data).await
            }
            Op::Rename { from, to } if inject == Some(Inject::RenameByCopy) => {
                let bytes = c.get(from).await?;
                c.put(to, &bytes).await?;
                c.unlink(from).await.map(|()| Seen::Done)
            }
            Op::Rename { from, to } => c.rename(from, to).await.map(|()| Seen::Done),
            Op::Unlink { path } => c.unlink(path).await.map(|()| Seen::Done),
            Op::Get { path } => c.get(path).await.map(Seen::Read),
            Op::List { dir } => c
                .readdir(dir)
                .await
                .map(|es| Seen::Listed(es.into_iter().map(|e| e.name).collect())),
        }
    }
    .await;
    r.unwrap_or_else(|e| match e.cause {
        Some(Cause::Unreachable { .. } | Cause::NoAnswer { .. } | Cause::OwnerLost { .. }) => {
            Seen::Unreachable(e.code)
        }
        _ => Seen::Failed(e.code),
    })
}

async fn write_close(mut w: locus_fs::Writer, data: &[u8]) -> FsResult<Seen> {
    w.write_all(data)
        .map_err(|e| FsError::io(w.path().to_string(), &e))?;
    w.close().await.map(|_| Seen::Done)
}
