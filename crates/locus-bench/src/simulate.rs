//! `locus bench simulate`: many seeds of the file system's simulation
//! (`locus-sim`), spread over worker threads; the first broken promise is
//! printed with its seed and the steps that led to it, and fails the
//! command. With one seed, replays it.

use locus_sim::{simulate, Config, Summary};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub struct SimulateOpts {
    /// The first seed.
    pub from: u64,
    pub seeds: u64,
    /// Seeds run at once.
    pub jobs: u32,
    /// Steps of each seed's workload.
    pub steps: u32,
}

/// What the seeds run so far did.
#[derive(Default)]
struct Totals {
    seeds: u64,
    ops: usize,
    crashes: usize,
    restarts: usize,
    replicated: u64,
}

impl Totals {
    fn add(&mut self, s: &Summary) {
        self.seeds += 1;
        self.ops += s.ops;
        self.crashes += s.crashes;
        self.restarts += s.restarts;
        self.replicated += u64::from(s.shape.replicas > 1);
    }
}

pub fn run(opts: SimulateOpts) -> anyhow::Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "simulate: seeds {}..{} ({} at once), {} steps each; replay one with --from S --seeds 1",
        opts.from,
        opts.from + opts.seeds,
        opts.jobs,
        opts.steps
    );
    let cfg = Config {
        steps: opts.steps,
        ..Config::default()
    };
    let next = AtomicU64::new(opts.from);
    let end = opts.from + opts.seeds;
    let failed = AtomicBool::new(false);
    let totals = Mutex::new(Totals::default());
    let failure = Mutex::new(None);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1) {
            s.spawn(|| loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end || failed.load(Ordering::Relaxed) {
                    return;
                }
                match simulate(seed, &cfg) {
                    Ok(summary) => {
                        let mut t = totals.lock().expect("totals");
                        t.add(&summary);
                        if t.seeds % 500 == 0 {
                            println!(
                                "{} seeds, {} operations, {} crashes: every answer explained ({:.0} s)",
                                t.seeds,
                                t.ops,
                                t.crashes,
                                started.elapsed().as_secs_f64()
                            );
                        }
                    }
                    Err(f) => {
                        failed.store(true, Ordering::Relaxed);
                        failure.lock().expect("failure").get_or_insert(f);
                    }
                }
            });
        }
    });
    let t = totals.into_inner().expect("totals");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} seeds ({} with two copies), {} operations, {} daemon crashes, {} restarts in {secs:.0} s \
         ({:.1} seeds/s)",
        t.seeds,
        t.replicated,
        t.ops,
        t.crashes,
        t.restarts,
        t.seeds as f64 / secs
    );
    match failure.into_inner().expect("failure") {
        None => {
            println!("violations: 0");
            Ok(())
        }
        Some(f) => {
            println!("{f}");
            anyhow::bail!("seed {} broke a promise", f.seed)
        }
    }
}
