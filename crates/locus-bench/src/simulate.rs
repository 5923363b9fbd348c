//! `locus bench simulate`: many seeds of a simulation (`locus-sim`): the
//! file system's, or with `--runs` generated workflows run by the runtime
//! in process, spread over worker threads; the first broken promise is
//! printed with its seed and what led to it, and fails the command. With
//! one seed, replays it.

use locus_sim::{simulate, simulate_workflow, Config, Expected, Summary, WorkflowConfig};
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub struct SimulateOpts {
    /// The first seed.
    pub from: u64,
    pub seeds: u64,
    /// Seeds run at once.
    pub jobs: u32,
    /// Steps of each seed's workload (the file system's simulation).
    pub steps: u32,
    /// Simulate workflow runs rather than the file system.
    pub runs: bool,
}

/// What the file system's seeds run so far did.
#[derive(Default)]
struct FsTotals {
    seeds: u64,
    ops: usize,
    crashes: usize,
    restarts: usize,
    replicated: u64,
    lost: usize,
}

impl FsTotals {
    fn add(&mut self, s: &Summary) {
        self.seeds += 1;
        self.ops += s.ops;
        self.crashes += s.crashes;
        self.restarts += s.restarts;
        self.replicated += u64::from(s.shape.replicas > 1);
        self.lost += s.lost;
    }
}

impl Display for FsTotals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} seeds ({} with two copies), {} operations, {} daemon crashes, {} restarts, \
             {} requests or answers lost",
            self.seeds, self.replicated, self.ops, self.crashes, self.restarts, self.lost
        )
    }
}

/// What the workflow seeds run so far did.
#[derive(Default)]
struct RunTotals {
    seeds: u64,
    tasks: usize,
    /// Runs by how they ended: done, task failed, stalled, server lost,
    /// a rank cut before it joined.
    ended: [u64; 5],
    /// Runs that lost a file-system node while they ran.
    node_lost: u64,
}

impl RunTotals {
    fn add(&mut self, s: &locus_sim::WorkflowSummary) {
        self.seeds += 1;
        self.tasks += s.tasks;
        let i = match s.ended {
            Expected::Done => 0,
            Expected::TaskFailed => 1,
            Expected::Stalled => 2,
            Expected::ServerLost => 3,
            Expected::NeverJoined => 4,
        };
        self.ended[i] += 1;
        self.node_lost += u64::from(s.node_lost);
    }
}

impl Display for RunTotals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [done, failed, stalled, lost, unjoined] = self.ended;
        write!(
            f,
            "{} runs ({} app tasks): {done} done with every output right, {failed} failed \
             naming the app, {stalled} cannot progress naming the variable, {lost} lost \
             with a cut server, {unjoined} failed naming a rank cut before it joined; \
             {} lost a file-system node while they ran",
            self.seeds, self.tasks, self.node_lost
        )
    }
}

pub fn run(opts: SimulateOpts) -> anyhow::Result<()> {
    println!("{}", crate::machine::describe());
    let what = match opts.runs {
        true => "workflow runs".to_string(),
        false => format!("the file system, {} steps each", opts.steps),
    };
    println!(
        "simulate {what}: seeds {}..{} ({} at once); replay one with --from S --seeds 1",
        opts.from,
        opts.from + opts.seeds,
        opts.jobs,
    );
    if opts.runs {
        let cfg = WorkflowConfig::default();
        sweep(&opts, |seed| simulate_workflow(seed, &cfg), RunTotals::add)
    } else {
        let cfg = Config {
            steps: opts.steps,
            ..Config::default()
        };
        sweep(&opts, |seed| simulate(seed, &cfg), FsTotals::add)
    }
}

/// Runs the seeds on `opts.jobs` threads until they are done or one fails.
fn sweep<S, F: Display + Send, T: Default + Display + Send>(
    opts: &SimulateOpts,
    one: impl Fn(u64) -> Result<S, F> + Sync,
    add: impl Fn(&mut T, &S) + Sync,
) -> anyhow::Result<()> {
    let next = AtomicU64::new(opts.from);
    let end = opts.from + opts.seeds;
    let failed = AtomicBool::new(false);
    let totals = Mutex::new((0u64, T::default()));
    let failure = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1) {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end || failed.load(Ordering::Relaxed) {
                    return;
                }
                match one(seed) {
                    Ok(summary) => {
                        let mut t = totals.lock().expect("totals");
                        add(&mut t.1, &summary);
                        t.0 += 1;
                        if t.0 % 500 == 0 {
                            let secs = started.elapsed().as_secs_f64();
                            println!("{}: every one as promised ({secs:.0} s)", t.1);
                        }
                    }
                    Err(f) => {
                        failed.store(true, Ordering::Relaxed);
                        failure.lock().expect("failure").get_or_insert((seed, f));
                    }
                }
            });
        }
    });
    let (seeds, t) = totals.into_inner().expect("totals");
    let secs = started.elapsed().as_secs_f64();
    println!("{t} in {secs:.0} s ({:.1} seeds/s)", seeds as f64 / secs);
    match failure.into_inner().expect("failure") {
        None => {
            println!("violations: 0");
            Ok(())
        }
        Some((seed, f)) => {
            println!("{f}");
            anyhow::bail!("seed {seed} broke a promise")
        }
    }
}
