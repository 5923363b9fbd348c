//! Running workflow benchmarks on an emulated cluster: bringing one up for
//! the benchmark (or using the caller's), running a script in one
//! configuration, reading what its records say, and the raw baselines the
//! figures are compared with (link bandwidth, dd on the host).

use anyhow::{bail, Context, Result};
use locus_fs::{ClusterSpec, Placement};
use locus_launch::emulate::{self, Emulation, FsMode, Rate, UpOptions};
use locus_launch::{launch_ranks, Daemons, On, Program, RankLaunch, Site};
use locus_runtime::report::RunView;
use locus_runtime::{Locality, RankOptions};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

/// An emulated cluster for one benchmark step, removed on drop unless it
/// was the caller's.
pub struct Cluster {
    pub dir: PathBuf,
    pub emulation: Emulation,
    owned: bool,
}

impl Cluster {
    pub fn up(dir: &Path, opts: &UpOptions) -> Result<Cluster> {
        let emulation = emulate::up(dir, opts)?;
        Ok(Cluster {
            dir: dir.to_path_buf(),
            emulation,
            owned: true,
        })
    }

    /// The caller's cluster, left as it is at the end.
    pub fn existing(at: &Path) -> Result<Cluster> {
        let (dir, emulation) = Emulation::load(at)?;
        Ok(Cluster {
            dir,
            emulation,
            owned: false,
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.owned {
            let _ = emulate::down(&self.dir);
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A file system deployed on a job's hosts (`locus fs up --launcher`) and
/// the site launcher that starts a benchmark's ranks on them: the seed
/// workflows run as on the emulator, through the launcher a cluster has.
#[derive(Clone)]
pub struct Deployed {
    pub fs_dir: PathBuf,
    pub site: Site,
}

/// Where a workflow benchmark's runs go.
pub enum Hosts<'a> {
    Emulated(&'a Cluster),
    Deployed { deployed: &'a Deployed, nodes: u32 },
}

impl Hosts<'_> {
    pub fn nodes(&self) -> u32 {
        match self {
            Hosts::Emulated(c) => c.emulation.nodes.len() as u32,
            Hosts::Deployed { nodes, .. } => *nodes,
        }
    }

    /// Removes `path` (a measured configuration's files) from the file
    /// system `mode`, as a client on a host of the cluster (an emulated
    /// cluster is reachable only from inside its namespaces).
    fn remove(&self, mode: FsMode, path: &str) -> Result<()> {
        let Some((_, fs_dir, _)) = self.run_on(mode) else {
            return Ok(());
        };
        let netns = match self {
            Hosts::Emulated(c) => Some(c.emulation.nodes[0].netns.clone()),
            Hosts::Deployed { .. } => None,
        };
        let path = path.to_string();
        std::thread::spawn(move || -> Result<()> {
            if let Some(ns) = netns {
                locus_launch::netns::enter_thread(&ns)?;
            }
            let client = locus_fs::Client::open(&fs_dir, locus_fs::ClientOptions::default())?;
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(client.remove_all(&path))?;
            Ok(())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the thread removing files panicked"))?
    }

    /// Where a run on the file system `mode` starts its ranks, that file
    /// system's directory, and whether every rank is its remote client;
    /// `None` where there is no such file system (a deployed cluster has
    /// no central one).
    fn run_on(&self, mode: FsMode) -> Option<(On, PathBuf, bool)> {
        match (self, mode) {
            (Hosts::Emulated(c), _) => Some(c.emulation.run_on(&c.dir, mode)),
            (Hosts::Deployed { deployed, nodes }, FsMode::Local) => Some((
                On::Site {
                    site: deployed.site.clone(),
                    hosts: Some(*nodes),
                },
                deployed.fs_dir.clone(),
                false,
            )),
            (Hosts::Deployed { .. }, FsMode::Central) => None,
        }
    }
}

/// How much CPU each emulated host of a benchmark gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HostCpus {
    /// An equal share of this machine's cores for every host (the nodes of
    /// the largest cluster of the sweep and its storage host), so hosts
    /// behave as separate machines.
    Auto,
    /// No limit: a busy host may use the cores idle ones leave.
    Off,
    Cores(f64),
}

impl std::str::FromStr for HostCpus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(HostCpus::Auto),
            "off" => Ok(HostCpus::Off),
            n => match n.parse::<f64>() {
                Ok(c) if c > 0.0 && c.is_finite() => Ok(HostCpus::Cores(c)),
                _ => Err(format!(
                    "'{n}' is not auto, off or a positive number of CPUs"
                )),
            },
        }
    }
}

impl HostCpus {
    /// CPUs per host for a sweep whose largest cluster has `max_nodes` nodes.
    pub fn per_host(self, max_nodes: u32) -> Option<f64> {
        match self {
            HostCpus::Auto => {
                let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
                Some(cores as f64 / f64::from(max_nodes + 1))
            }
            HostCpus::Off => None,
            HostCpus::Cores(c) => Some(c),
        }
    }
}

/// What a benchmark ran on: the machine, the emulated links and the hosts'
/// CPU limit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Testbed {
    pub machine: String,
    pub link: String,
    pub storage_link: String,
    /// CPUs each host could use (`None`: no limit).
    #[serde(default)]
    pub host_cpus: Option<f64>,
}

impl Testbed {
    /// The links and CPU limit in words, for reports.
    pub fn links(&self) -> String {
        let cpus = self
            .host_cpus
            .map_or("hosts not CPU-limited".to_string(), |c| {
                format!("{c:.2} CPU(s) per host")
            });
        if self.storage_link.is_empty() {
            return format!("a deployed cluster's own links, {cpus}");
        }
        format!(
            "links {} per node, storage link {}, {cpus}",
            self.link, self.storage_link
        )
    }
}

/// One way of running a workload: its file system, where its files are
/// stored, locality mode and script arguments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// As the seeds name it, e.g. `DP-inf TP-loc-aw HARD NODE`.
    pub name: String,
    pub central: bool,
    /// `locus run --placement`.
    #[serde(default = "writer_local")]
    pub data: Placement,
    pub locality_off: bool,
    pub args: Vec<String>,
}

fn writer_local() -> Placement {
    Placement::Local
}

impl Config {
    /// Its name as one path component (its run directory, log and files).
    fn slug(&self) -> String {
        self.name.replace(' ', "_")
    }

    /// The file system it runs on.
    fn fs_mode(&self) -> FsMode {
        if self.central {
            FsMode::Central
        } else {
            FsMode::Local
        }
    }

    /// A configuration of the workload scripts' common arguments: data
    /// placement `dp`, task placement `tp` (agnostic|aware|auto) and the
    /// aware tasks' `target` (e.g. `HARD NODE`). `dp` is `default` (seed 004:
    /// Hercules hashes each file to a node), `informed` (the script places
    /// writers evenly, files stay where written) or `local` (Locus's own:
    /// files stay where the balancer ran their writers).
    pub fn placement(name: &str, central: bool, dp: &str, tp: &str, target: &str) -> Config {
        let (strict, scope) = target.split_once(' ').unwrap_or((target, "NODE"));
        let data = if dp == "default" && !central {
            Placement::Hash
        } else {
            Placement::Local
        };
        let dp = if dp == "informed" { dp } else { "default" };
        Config {
            name: name.to_string(),
            central,
            data,
            // Agnostic means no automatic locality either.
            locality_off: tp == "agnostic",
            args: vec![
                format!("--dp={dp}"),
                format!("--tp={tp}"),
                format!("--strict={strict}"),
                format!("--scope={scope}"),
            ],
        }
    }
}

/// What one configuration's run did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub config: Config,
    #[serde(flatten)]
    pub run: RunView,
}

/// Runs `script` (its text) on `cluster` in configuration `c` with
/// `workers_per_node` workers on every node and one server.
pub fn run_config(
    program: &Arc<dyn Program>,
    hosts: &Hosts,
    work: &Path,
    script: &str,
    workers_per_node: u32,
    c: &Config,
) -> Result<Outcome> {
    let file = work.join("workload.swift");
    std::fs::write(&file, script)?;
    let run_dir = work.join(c.slug());
    let _ = std::fs::remove_dir_all(&run_dir);
    let (on, fs_dir, fs_remote) = hosts
        .run_on(c.fs_mode())
        .with_context(|| format!("{}: no such file system here", c.name))?;
    let log = work.join(format!("{}.log", c.slug()));
    let _ = std::fs::remove_file(&log);
    let rank = RankOptions {
        fs_dir: Some(fs_dir),
        fs_remote,
        placement: Some(c.data),
        locality: if c.locality_off {
            Locality::Off
        } else {
            Locality::Auto
        },
        args: c.args.clone(),
        ..RankOptions::new(file, run_dir.clone())
    };
    let size = workers_per_node * hosts.nodes() + 1;
    let run = RankLaunch {
        log: Some(log.clone()),
        // Each measurement replaces the last.
        fresh: true,
        ..RankLaunch::new(program.clone(), size, on, rank)
    };
    let code = launch_ranks(&run, |_| Ok(()), |_| Ok(())).with_context(|| c.name.clone())?;
    if code != 0 {
        let out = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = out.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{}: locus run failed ({code}): {}", c.name, tail.join("\n"));
    }
    outcome(&run_dir, c.clone())
}

/// What the other configurations are compared with: the central file
/// system, else (where there is none) Locus with placement-agnostic tasks
/// on hashed data.
pub fn baseline(outcomes: &[Outcome]) -> Option<&Outcome> {
    outcomes.iter().find(|o| o.config.central).or_else(|| {
        outcomes
            .iter()
            .find(|o| o.config.name == "DP-def TP-loc-ag")
    })
}

/// Issue targets of automatic placement: Locus's own configuration
/// (`DP-local TP-auto`) within 95% of the best hand-placed one's speed, and
/// ≥ 90% of all spills fetching in less time than the wait they avoided.
pub fn placement_targets(outcomes: &[Outcome]) {
    let hand = outcomes
        .iter()
        .filter(|o| o.config.args.iter().any(|a| a == "--tp=aware"))
        .min_by(|a, b| a.run.seconds.total_cmp(&b.run.seconds));
    let auto = outcomes
        .iter()
        .find(|o| o.config.name == "DP-local TP-auto");
    if let (Some(hand), Some(auto)) = (hand, auto) {
        let ratio = hand.run.seconds / auto.run.seconds;
        crate::report::target(
            &format!(
                "automatic placement ≥ 95% of the best hand placement's speed ({:.0}%: {:.2} s vs {:.2} s for {})",
                100.0 * ratio,
                auto.run.seconds,
                hand.run.seconds,
                hand.config.name
            ),
            ratio >= 0.95,
        );
    }
    let checks: Vec<_> = outcomes.iter().flat_map(|o| &o.run.spill_checks).collect();
    let paid = checks.iter().filter(|c| c.paid()).count();
    crate::report::target(
        &format!(
            "≥ 90% of spills fetched in less time than the wait they avoided ({paid} of {})",
            checks.len()
        ),
        paid * 10 >= checks.len() * 9,
    );
}

/// What the finished run in `run_dir` did, as configuration `config`.
pub fn outcome(run_dir: &Path, config: Config) -> Result<Outcome> {
    let run = RunView::load(run_dir)?;
    Ok(Outcome { config, run })
}

/// A benchmark's workflow: its name, script text and arguments.
pub struct Workload<'a> {
    pub bench: &'a str,
    pub script: &'a str,
    pub args: &'a [String],
}

/// Runs every configuration on `hosts` `rounds` times, interleaved, each
/// run with the workload's arguments and its own directory
/// `/locus/<bench>/<configuration>-<round>`; keeps each configuration's median run by
/// time. Central ones run only where there is a central file system.
pub fn run_configs(
    program: &Arc<dyn Program>,
    hosts: &Hosts,
    work: &Path,
    w: &Workload,
    workers_per_node: u32,
    configs: Vec<Config>,
    rounds: u32,
) -> Result<Vec<Outcome>> {
    let Workload {
        bench,
        script,
        args,
    } = *w;
    let nodes = hosts.nodes();
    let configs: Vec<Config> = configs
        .into_iter()
        .filter(|c| {
            let runs = !c.central || hosts.run_on(FsMode::Central).is_some();
            if !runs {
                eprintln!("  {}: skipped (no central file system here)", c.name);
            }
            runs
        })
        .collect();
    let mut runs: Vec<Vec<Outcome>> = configs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (k, config) in configs.iter().enumerate() {
            let mut c = config.clone();
            c.args.extend(args.iter().cloned());
            // Named after the configuration, not its position: where hash
            // placement puts a file depends on its path, so the same
            // configuration must write the same paths wherever it runs
            // (a deployed cluster skips the central one, shifting positions).
            let files = format!("/{bench}/{}-{round}", c.slug());
            c.args.push(format!("--dir=/locus{files}"));
            // No configuration pays for the writeback of the one before (the
            // kernel flushes dirty pages ~30 s after they were written).
            crate::io::settle();
            eprintln!(
                "  {nodes} nodes × {workers_per_node} workers: {} (round {} of {rounds})",
                c.name,
                round + 1
            );
            runs[k].push(run_config(
                program,
                hosts,
                work,
                script,
                workers_per_node,
                &c,
            )?);
            // Nor for its data: measured once, its files go. Left in place,
            // the gigabytes of the configurations before made the page
            // cache writes of the last ones' apps twice as costly (their
            // generators' CPU time went from ~37 to ~66 ms).
            hosts
                .remove(c.fs_mode(), &files)
                .with_context(|| format!("removing {files} after {}", c.name))?;
        }
    }
    Ok(runs
        .into_iter()
        .map(|mut r| {
            r.sort_by(|a, b| a.run.seconds.total_cmp(&b.run.seconds));
            r.swap_remove(r.len() / 2)
        })
        .collect())
}

/// Writes a benchmark's results as `OUT/<bench>.json` and its page as
/// `OUT/<bench>.html`.
pub fn save(out: &Path, bench: &str, results: &impl Serialize, page: String) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let json = out.join(format!("{bench}.json"));
    std::fs::write(&json, serde_json::to_vec_pretty(results)?)?;
    let html = out.join(format!("{bench}.html"));
    std::fs::write(&html, page)?;
    println!("results: {} and {}", json.display(), html.display());
    Ok(())
}

/// Raw TCP throughput in bytes/s from namespace `from` to `to` (address
/// `to_addr`), one stream of `bytes`: what a link gives without Locus.
pub fn link_rate(from: &str, to: &str, to_addr: std::net::Ipv4Addr, bytes: u64) -> Result<f64> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let to = to.to_string();
    let receiver = std::thread::spawn(move || -> Result<f64> {
        locus_launch::netns::enter_thread(&to)?;
        let l = TcpListener::bind(SocketAddr::from((to_addr, 0)))?;
        ready_tx.send(l.local_addr()?)?;
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let (mut got, t) = (0u64, Instant::now());
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            got += n as u64;
        }
        Ok(got as f64 / t.elapsed().as_secs_f64())
    });
    let addr = ready_rx.recv().context("link receiver did not start")?;
    let from = from.to_string();
    let sender = std::thread::spawn(move || -> Result<()> {
        locus_launch::netns::enter_thread(&from)?;
        let mut s = TcpStream::connect(addr)?;
        let buf = vec![7u8; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(buf.len() as u64) as usize;
            s.write_all(&buf[..n])?;
            left -= n as u64;
        }
        Ok(())
    });
    sender
        .join()
        .map_err(|_| anyhow::anyhow!("link sender panicked"))??;
    receiver
        .join()
        .map_err(|_| anyhow::anyhow!("link receiver panicked"))?
}

/// Aggregate bytes/s of `writers` concurrent `dd` writes of `size` bytes
/// in `chunk`-byte blocks into `dir`, then of reading them back: the host's
/// own local I/O with the same concurrency as the workload.
pub fn dd_rates(dir: &Path, writers: u32, size: u64, chunk: u64) -> Result<(f64, f64)> {
    std::fs::create_dir_all(dir)?;
    let count = (size / chunk).max(1);
    let files: Vec<PathBuf> = (0..writers).map(|i| dir.join(format!("dd{i}"))).collect();
    let all = |args: &dyn Fn(&Path) -> Vec<String>| -> Result<f64> {
        let t = Instant::now();
        let children: Vec<_> = files
            .iter()
            .map(|f| Command::new("dd").args(args(f)).arg("status=none").spawn())
            .collect::<std::io::Result<_>>()?;
        for mut c in children {
            if !c.wait()?.success() {
                bail!("dd failed");
            }
        }
        Ok((u64::from(writers) * count * chunk) as f64 / t.elapsed().as_secs_f64())
    };
    let write = all(&|f| {
        vec![
            "if=/dev/zero".into(),
            format!("of={}", f.display()),
            format!("bs={chunk}"),
            format!("count={count}"),
        ]
    })?;
    let read = all(&|f| {
        vec![
            format!("if={}", f.display()),
            "of=/dev/null".into(),
            format!("bs={chunk}"),
        ]
    })?;
    let _ = std::fs::remove_dir_all(dir);
    Ok((write, read))
}

/// Options shared by the workflow benchmarks.
pub struct ClusterOpts {
    pub daemons: Daemons,
    pub link: Rate,
    pub storage_link: Rate,
    /// CPUs each host may use (`None`: no limit).
    pub host_cpus: Option<f64>,
    /// An existing emulated cluster to use instead of making one per step.
    pub cluster: Option<PathBuf>,
    /// A deployed cluster to use instead of an emulated one.
    pub deployed: Option<Deployed>,
    /// Interleaved runs of every configuration (the median is kept).
    pub rounds: u32,
}

impl ClusterOpts {
    /// What the benchmark runs on: the given cluster's settings, else these
    /// options'.
    pub fn testbed(&self) -> Result<Testbed> {
        let machine = crate::machine::describe();
        if self.deployed.is_some() {
            return Ok(Testbed {
                machine,
                link: "the job's network".into(),
                // No storage host: there is no central file system.
                storage_link: String::new(),
                host_cpus: None,
            });
        }
        let (link, storage_link, host_cpus) = match &self.cluster {
            Some(at) => {
                let e = Emulation::load(at)?.1;
                (e.link, e.storage_link, e.host_cpus)
            }
            None => (self.link, self.storage_link, self.host_cpus),
        };
        Ok(Testbed {
            machine,
            link: link.to_string(),
            storage_link: storage_link.to_string(),
            host_cpus,
        })
    }

    /// Runs `f` on the hosts of a step with `nodes` nodes under `work`: the
    /// deployed cluster (whatever its size), else an emulated one.
    pub fn on_hosts<T>(
        &self,
        work: &Path,
        nodes: u32,
        f: impl FnOnce(&Hosts) -> Result<T>,
    ) -> Result<T> {
        match &self.deployed {
            Some(deployed) => {
                let spec = ClusterSpec::load(&deployed.fs_dir)
                    .with_context(|| format!("{}", deployed.fs_dir.display()))?;
                f(&Hosts::Deployed {
                    deployed,
                    nodes: spec.nodes.len() as u32,
                })
            }
            None => f(&Hosts::Emulated(&self.cluster(work, nodes)?)),
        }
    }

    /// The emulated cluster for a step with `nodes` nodes under `work`.
    pub fn cluster(&self, work: &Path, nodes: u32) -> Result<Cluster> {
        match &self.cluster {
            Some(at) => Cluster::existing(at),
            None => Cluster::up(
                &work.join(format!("cluster-{nodes}")),
                &UpOptions {
                    nodes,
                    link: self.link,
                    storage_link: self.storage_link,
                    host_cpus: self.host_cpus,
                    daemons: self.daemons.clone(),
                },
            ),
        }
    }
}
