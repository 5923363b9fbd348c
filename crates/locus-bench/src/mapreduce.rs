//! `locus bench mapreduce`: seed 004 §V.B–C on an emulated cluster. Count
//! the words of each length in n generated text files (map → count → merge,
//! `examples/bench/mapreduce.swift`) in the configurations of seed 004
//! Fig. 7 and on the central file system; per-phase times (Figs. 7–9) and
//! per-worker busy/idle timelines (Fig. 10).

use crate::emulated::{ClusterOpts, Config, Outcome, Testbed, Workload};
use crate::report::target;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub const SCRIPT: &str = include_str!("../../../examples/bench/mapreduce.swift");
/// The workflow's functions, in order.
pub const PHASES: [&str; 4] = ["generate", "map", "count", "merge"];

pub struct MapreduceOpts {
    pub cluster: ClusterOpts,
    pub nodes: u32,
    pub workers_per_node: u32,
    pub files: u32,
    pub size: u64,
    pub work: PathBuf,
    pub out: PathBuf,
}

/// `locus bench mapreduce`'s results (`OUT/mapreduce.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    #[serde(flatten)]
    pub testbed: Testbed,
    pub nodes: u32,
    pub workers_per_node: u32,
    pub files: u32,
    pub size: u64,
    pub outcomes: Vec<Outcome>,
}

fn configs() -> Vec<Config> {
    vec![
        Config::placement("central", true, "default", "agnostic", "HARD NODE"),
        Config::placement(
            "DP-def TP-loc-ag",
            false,
            "default",
            "agnostic",
            "HARD NODE",
        ),
        Config::placement("DP-def HARD NODE", false, "default", "aware", "HARD NODE"),
        Config::placement("DP-def SOFT NODE", false, "default", "aware", "SOFT NODE"),
        Config::placement("DP-inf HARD NODE", false, "informed", "aware", "HARD NODE"),
        Config::placement("DP-inf SOFT NODE", false, "informed", "aware", "SOFT NODE"),
        Config::placement("DP-local TP-auto", false, "local", "auto", "HARD NODE"),
    ]
}

/// Average seconds per task of `func`.
pub fn phase_avg(o: &Outcome, func: &str) -> f64 {
    o.run.mean(func, |t| t.end - t.start)
}

pub fn run(o: MapreduceOpts) -> Result<()> {
    let testbed = o.cluster.testbed()?;
    println!("{}", testbed.machine);
    std::fs::create_dir_all(&o.work)?;
    let (nodes, outcomes) = o.cluster.on_hosts(&o.work, o.nodes, |hosts| {
        let args = [format!("--n={}", o.files), format!("--size={}", o.size)];
        let workload = Workload {
            bench: "mapreduce",
            script: SCRIPT,
            args: &args,
        };
        let outcomes = crate::emulated::run_configs(
            &o.cluster.daemons.program,
            hosts,
            &o.work,
            &workload,
            o.workers_per_node,
            configs(),
            o.cluster.rounds,
        )?;
        Ok((hosts.nodes(), outcomes))
    })?;
    let r = Results {
        testbed,
        nodes,
        workers_per_node: o.workers_per_node,
        files: o.files,
        size: o.size,
        outcomes,
    };
    print_results(&r);
    crate::emulated::save(&o.out, "mapreduce", &r, crate::html::mapreduce(&r))
}

fn print_results(r: &Results) {
    println!(
        "\n{} nodes × {} workers, {} files of {} MiB, {}; average seconds per task:",
        r.nodes,
        r.workers_per_node,
        r.files,
        r.size >> 20,
        r.testbed.links()
    );
    println!(
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8} {:>10}",
        "configuration",
        "total s",
        "generate",
        "map",
        "count",
        "merge",
        "busy",
        "fetched",
        "vs base"
    );
    let base = crate::emulated::baseline(&r.outcomes);
    for o in &r.outcomes {
        let (local, fetched) = o.run.input_bytes(None);
        let p: Vec<f64> = PHASES.iter().map(|f| phase_avg(o, f)).collect();
        println!(
            "{:<20} {:>9.2} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>6.1}% {:>7.0}% {:>10.2}",
            o.config.name,
            o.run.seconds,
            p[0],
            p[1],
            p[2],
            p[3],
            100.0 * (1.0 - o.run.idle_share()),
            100.0 * fetched as f64 / (local + fetched).max(1) as f64,
            base.map_or(f64::NAN, |b| b.run.seconds / o.run.seconds)
        );
    }
    if let Some(b) = base {
        println!("(vs base: speed-up over {})", b.config.name);
    }
    if let Some(inf) = r
        .outcomes
        .iter()
        .find(|o| o.config.name == "DP-inf HARD NODE")
    {
        let busy = 1.0 - inf.run.idle_share();
        target(
            &format!(
                "informed placement with HARD NODE keeps workers ≥ 90% busy ({:.1}%)",
                100.0 * busy
            ),
            busy >= 0.9,
        );
    }
    crate::emulated::placement_targets(&r.outcomes);
}
