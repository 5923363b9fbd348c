//! `locus bench filecopy`: seed 004 §V.A on an emulated cluster. n writers
//! then n readers (`examples/bench/filecopy.swift`) in the configurations of
//! seed 004 Table I, Locus's automatic locality, and the central file system
//! standing in for GPFS; scaled over nodes and workers per node. Figures sit
//! beside the links' raw TCP rate and the host's own dd, measured in the
//! same run.

use crate::emulated::{
    dd_rates, link_rate, ClusterOpts, Config, Hosts, Outcome, Testbed, Workload,
};
use crate::report::target;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub const SCRIPT: &str = include_str!("../../../examples/bench/filecopy.swift");

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Scaling {
    /// Files grow with the workers (`--files-per-worker` each).
    Weak,
    /// `--files` in all, whatever the number of workers.
    Strong,
}

pub struct FilecopyOpts {
    pub cluster: ClusterOpts,
    pub nodes: Vec<u32>,
    pub workers_per_node: Vec<u32>,
    pub scaling: Scaling,
    pub files_per_worker: u32,
    pub files: u32,
    pub size: u64,
    pub chunk: u64,
    /// The aware configurations' target mode, e.g. `HARD NODE`.
    pub strict: String,
    pub scope: String,
    pub work: PathBuf,
    pub out: PathBuf,
}

/// Raw rates measured on the step's cluster, in bytes/s.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Baselines {
    /// Between two nodes: measured on an emulated cluster, the stated
    /// `--link` on a deployed one.
    pub link: f64,
    /// To the central file system, where there is one.
    pub storage_link: Option<f64>,
    pub dd_write: f64,
    pub dd_read: f64,
}

/// One scaling step: a cluster shape and every configuration run on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub nodes: u32,
    pub workers_per_node: u32,
    pub files: u32,
    pub size: u64,
    pub baselines: Baselines,
    pub outcomes: Vec<Outcome>,
}

/// `locus bench filecopy`'s results (`OUT/filecopy.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    #[serde(flatten)]
    pub testbed: Testbed,
    pub scaling: Scaling,
    pub steps: Vec<Step>,
}

fn configs(o: &FilecopyOpts) -> Vec<Config> {
    let target = format!("{} {}", o.strict, o.scope);
    let aw = |dp: &str| format!("{dp} TP-loc-aw {target}");
    vec![
        Config::placement("central", true, "default", "agnostic", &target),
        Config::placement("DP-def TP-loc-ag", false, "default", "agnostic", &target),
        Config::placement("DP-inf TP-loc-ag", false, "informed", "agnostic", &target),
        Config::placement(&aw("DP-def"), false, "default", "aware", &target),
        Config::placement(&aw("DP-inf"), false, "informed", "aware", &target),
        Config::placement("DP-local TP-auto", false, "local", "auto", &target),
    ]
}

const MB: f64 = 1e6;

/// Time the read phase could take at best: the busiest node reads all its
/// bytes at its share of the host's measured concurrent dd rate and pulls
/// its remote ones through its own link at the measured rate. (Data placed
/// unevenly, as hashing does, raises the bound: that node's work is the
/// phase's floor however well the readers run.)
pub fn read_bound(o: &Outcome, b: &Baselines) -> f64 {
    let per_node_dd = b.dd_read / o.run.nodes().max(1) as f64;
    o.run
        .bytes_in("read_task")
        .into_values()
        .map(|(local, remote)| (local + remote) as f64 / per_node_dd + remote as f64 / b.link)
        .fold(0.0, f64::max)
}

pub fn run(o: FilecopyOpts) -> Result<()> {
    let testbed = o.cluster.testbed()?;
    println!("{}", testbed.machine);
    std::fs::create_dir_all(&o.work)?;
    let mut results = Results {
        testbed,
        scaling: o.scaling,
        steps: Vec::new(),
    };
    for &nodes in &o.nodes {
        for &wpn in &o.workers_per_node {
            let step = run_step(&o, nodes, wpn)?;
            print_step(&step);
            results.steps.push(step);
        }
    }
    let page = crate::html::filecopy(&results);
    crate::emulated::save(&o.out, "filecopy", &results, page)
}

fn run_step(o: &FilecopyOpts, nodes: u32, wpn: u32) -> Result<Step> {
    let work = o.work.join(format!("n{nodes}-w{wpn}"));
    std::fs::create_dir_all(&work)?;
    o.cluster.on_hosts(&work, nodes, |hosts| {
        let nodes = hosts.nodes();
        let workers = nodes * wpn;
        let files = match o.scaling {
            Scaling::Weak => workers * o.files_per_worker,
            Scaling::Strong => o.files,
        };
        let (link, storage_link) = match hosts {
            Hosts::Emulated(cluster) => {
                let e = &cluster.emulation;
                let probe = (o.size * 2).clamp(8 << 20, 64 << 20);
                let far = &e.nodes[e.nodes.len() - 1];
                let link = if e.nodes.len() > 1 {
                    link_rate(&e.nodes[0].netns, &far.netns, far.addr, probe)?
                } else {
                    e.link.bytes_per_sec()
                };
                let storage =
                    link_rate(&e.nodes[0].netns, &e.storage.netns, e.storage.addr, probe)?;
                (link, Some(storage))
            }
            Hosts::Deployed { .. } => (o.cluster.link.bytes_per_sec(), None),
        };
        let (dd_write, dd_read) = dd_rates(&work.join("dd"), workers, o.size, o.chunk)?;
        let args = [
            format!("--n={files}"),
            format!("--size={}", o.size),
            format!("--chunk={}", o.chunk),
        ];
        let workload = Workload {
            bench: "filecopy",
            script: SCRIPT,
            args: &args,
        };
        let outcomes = crate::emulated::run_configs(
            &o.cluster.daemons.program,
            hosts,
            &work,
            &workload,
            wpn,
            configs(o),
            o.cluster.rounds,
        )?;
        Ok(Step {
            nodes,
            workers_per_node: wpn,
            files,
            size: o.size,
            baselines: Baselines {
                link,
                storage_link,
                dd_write,
                dd_read,
            },
            outcomes,
        })
    })
}

fn print_step(s: &Step) {
    let b = &s.baselines;
    let storage = b.storage_link.map_or("no central file system".into(), |r| {
        format!("storage link {:.1} MB/s", r / MB)
    });
    println!(
        "\n{} nodes × {} workers, {} files of {} MiB: link {:.1} MB/s, {storage}, dd write {:.0} MB/s, dd read {:.0} MB/s (raw, same run)",
        s.nodes,
        s.workers_per_node,
        s.files,
        s.size >> 20,
        b.link / MB,
        b.dd_write / MB,
        b.dd_read / MB
    );
    println!(
        "{:<28} {:>10} {:>10} {:>12} {:>8} {:>7} {:>9} {:>8}",
        "configuration",
        "write MB/s",
        "read MB/s",
        "workflow MB/s",
        "remote",
        "idle",
        "read/bound",
        "vs base"
    );
    let central = s.outcomes.iter().find(|o| o.config.central);
    let base = crate::emulated::baseline(&s.outcomes);
    let total = 2.0 * f64::from(s.files) * s.size as f64;
    for o in &s.outcomes {
        let write = o.run.per_task_rate("write_task", |t| t.written_bytes) / MB;
        let read = o
            .run
            .per_task_rate("read_task", |t| t.local_bytes + t.remote_bytes)
            / MB;
        let (local, remote) = o.run.input_bytes(Some("read_task"));
        let all = local + remote;
        let bound = if o.config.central {
            f64::NAN
        } else {
            read_bound(o, b) / o.run.phase_seconds("read_task")
        };
        let speedup = base.map_or(f64::NAN, |c| c.run.seconds / o.run.seconds);
        println!(
            "{:<28} {:>10.1} {:>10.1} {:>12.1} {:>7.0}% {:>6.1}% {:>10.2} {:>8.2}",
            o.config.name,
            write,
            read,
            total / o.run.seconds / MB,
            100.0 * remote as f64 / all.max(1) as f64,
            100.0 * o.run.idle_share(),
            bound,
            speedup
        );
    }
    if let Some(b) = base {
        println!("(vs base: speed-up over {})", b.config.name);
    }
    if let Some(ag) = s
        .outcomes
        .iter()
        .find(|o| o.config.name == "DP-def TP-loc-ag")
    {
        let (local, remote) = ag.run.input_bytes(Some("read_task"));
        let all = local + remote;
        println!(
            "locality-agnostic reads fetched {:.0}% of their bytes; a reader placed at random lands away from its file {:.0}% of the time",
            100.0 * remote as f64 / all.max(1) as f64,
            100.0 * (1.0 - 1.0 / f64::from(s.nodes))
        );
    }
    let aware: Vec<&Outcome> = s
        .outcomes
        .iter()
        .filter(|o| o.config.args.iter().any(|a| a == "--tp=aware"))
        .collect();
    let worst = aware
        .iter()
        .map(|o| read_bound(o, b) / o.run.phase_seconds("read_task"))
        .fold(f64::MAX, f64::min);
    target(
        &format!(
            "locality-aware reads ≥ 80% of the bound from local and link rates (worst {:.0}%)",
            100.0 * worst
        ),
        worst >= 0.8,
    );
    if let (Some(c), Some(storage_link)) = (central, b.storage_link) {
        let best = s
            .outcomes
            .iter()
            .filter(|o| !o.config.central)
            .map(|o| c.run.seconds / o.run.seconds)
            .fold(0.0, f64::max);
        let ratio = f64::from(s.nodes) * b.link / storage_link;
        target(
            &format!(
                "workflow vs central ≥ 80% of aggregate node / storage bandwidth ({best:.1}x vs {ratio:.1}x)"
            ),
            best >= 0.8 * ratio,
        );
    }
    crate::emulated::placement_targets(&s.outcomes);
}
