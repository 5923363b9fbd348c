//! `locus bench …`: drivers live in `locus-bench`.

use crate::local_cluster::LauncherArgs;
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use locus_bench::emulated::{ClusterOpts, Deployed, HostCpus};
use locus_bench::filecopy::{self, Scaling};
use locus_bench::{check, io, mapreduce, meta, meta_cluster, outputs, scrub, tasks};
use locus_fs::Durability;
use locus_launch::{Daemons, Emulation, Rate};
use std::path::PathBuf;

/// A benchmark that runs a workflow undisturbed and disturbed.
#[derive(Args)]
pub(crate) struct Disturbed {
    #[command(flatten)]
    common: Common,
    /// Tasks per run (`node-loss`: iterations of its two-stage workflow).
    #[arg(long, default_value_t = 320)]
    tasks: u32,
    /// How many times each measurement is made.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
}

impl Disturbed {
    fn opts(self) -> anyhow::Result<locus_bench::disturbed::DisturbedOpts> {
        Ok(locus_bench::disturbed::DisturbedOpts {
            program: crate::launched::program()?,
            tasks: self.tasks,
            rounds: self.rounds,
            dir: self.common.dir,
            keep: self.common.keep,
        })
    }
}

#[derive(Args)]
pub(crate) struct Common {
    /// Scratch directory (must not exist; default: a new one under /tmp).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the scratch directory afterwards.
    #[arg(long)]
    pub keep: bool,
    /// Metadata durability of the daemons: group (durable) or none.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
}

impl Common {
    fn daemons(&self) -> Result<Daemons> {
        Ok(Daemons {
            program: crate::launched::program()?,
            durability: self.durability,
            replicas: 1,
            with_launcher: false,
            upkeep: Default::default(),
        })
    }
}

/// The large files a data benchmark moves in each round, and its rounds.
#[derive(Args)]
pub(crate) struct LargeFiles {
    /// Large files written, then read, per round.
    #[arg(long, default_value_t = 4)]
    files: u32,
    /// MiB per file.
    #[arg(long, default_value_t = 256)]
    size_mib: u64,
    /// How many times each measurement is made (after a warm-up).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
}

impl LargeFiles {
    fn opts(self, common: Common) -> Result<io::DataOpts> {
        Ok(io::DataOpts {
            files: self.files,
            size: self.size_mib << 20,
            rounds: self.rounds,
            daemons: common.daemons()?,
            dir: common.dir,
            keep: common.keep,
        })
    }
}

/// The emulated cluster a workflow benchmark runs on.
#[derive(Args)]
pub(crate) struct EmulatedArgs {
    /// Each node's link (tc units).
    #[arg(long, default_value = "500mbit")]
    pub link: Rate,
    /// The storage host's link, the central file system's only way in.
    #[arg(long, default_value = "500mbit")]
    pub storage_link: Rate,
    /// Use this emulated cluster (`locus cluster up --emulate`) instead of
    /// making one per step; its node count then fixes --nodes.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Where results (JSON and the HTML report) are written.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CPUs each host (node or storage) may use: auto (an equal share of
    /// this machine's cores, as separate machines), off, or a number.
    /// Default: auto for mapreduce and meta-cluster, off for filecopy.
    #[arg(long)]
    pub host_cpus: Option<HostCpus>,
    /// Runs of every configuration, interleaved; each configuration's
    /// median run (by time) is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
}

/// A file system deployed on a job's hosts to run on instead of an
/// emulated cluster.
#[derive(Args)]
pub(crate) struct DeployedArgs {
    /// Run on this deployed file system (`locus fs up --launcher … --dir
    /// DIR`), every rank started by --launcher on its hosts, instead of on
    /// an emulated cluster (configurations that need the central file
    /// system are skipped).
    #[arg(long, requires = "launcher", conflicts_with = "cluster")]
    pub fs: Option<PathBuf>,
    #[command(flatten)]
    pub site: LauncherArgs,
}

impl DeployedArgs {
    fn deployed(&self) -> Result<Option<Deployed>> {
        Ok(match (&self.fs, self.site.site()) {
            (Some(fs_dir), Some(site)) => Some(Deployed {
                fs_dir: fs_dir.clone(),
                site,
            }),
            (None, Some(_)) => bail!("--launcher: give the deployed file system with --fs DIR"),
            _ => None,
        })
    }
}

impl EmulatedArgs {
    /// The node counts to run on: `nodes`, or the given cluster's.
    fn sweep(&self, nodes: Vec<u32>) -> Result<Vec<u32>> {
        Ok(match &self.cluster {
            Some(at) => vec![Emulation::load(at)?.1.nodes.len() as u32],
            None => nodes,
        })
    }

    /// How to make each step's cluster for a sweep over `nodes`; `cpus`
    /// applies unless `--host-cpus` is given.
    fn cluster_opts(&self, common: &Common, nodes: &[u32], cpus: HostCpus) -> Result<ClusterOpts> {
        let max_nodes = nodes.iter().copied().max().unwrap_or(1);
        Ok(ClusterOpts {
            daemons: common.daemons()?,
            link: self.link,
            storage_link: self.storage_link,
            host_cpus: self.host_cpus.unwrap_or(cpus).per_host(max_nodes),
            cluster: self.cluster.clone(),
            deployed: None,
            rounds: self.rounds,
        })
    }

    fn out_dir(&self, bench: &str) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| PathBuf::from("bench-results").join(bench))
    }
}

impl Common {
    /// Runs `bench` in its scratch directory (`--dir`, or a new one under
    /// /tmp), removed afterwards unless `--keep`.
    fn in_work_dir(&self, bench: &str, f: impl FnOnce(PathBuf) -> Result<()>) -> Result<()> {
        let work = self.dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("locus-bench-{bench}-{}", std::process::id()))
        });
        let result = f(work.clone());
        if !self.keep {
            let _ = std::fs::remove_dir_all(&work);
        }
        result
    }
}

fn list(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("'{x}' is not a positive number"))
        })
        .collect()
}

#[derive(Subcommand)]
pub(crate) enum BenchCommand {
    /// mdtest-like create/stat/remove rates and a large listing, beside the raw file system.
    Meta {
        #[command(flatten)]
        common: Common,
        /// Daemons of the cluster.
        #[arg(long, default_value_t = 2)]
        nodes: u32,
        /// Client processes working at once.
        #[arg(long, default_value_t = 4)]
        clients: u32,
        /// Files per client.
        #[arg(long, default_value_t = 20_000)]
        files: u32,
        /// Operations each client keeps in flight (group commit turns depth
        /// into throughput: each operation waits for a commit).
        #[arg(long, default_value_t = 128)]
        depth: u32,
        /// Entries in the directory that is listed.
        #[arg(long, default_value_t = 100_000)]
        list: u32,
        /// Run the raw baseline under this directory (e.g. /dev/shm for
        /// tmpfs) instead of beside the stores.
        #[arg(long)]
        raw_dir: Option<PathBuf>,
    },
    /// Front-end speed on a generated script, beside lexing alone.
    Check {
        /// Lines of the generated script checked.
        #[arg(long, default_value_t = 10_000)]
        lines: usize,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// What losing a node mid-run costs: a two-stage workflow on 8 local
    /// nodes with one copy of every file, undisturbed and with one node's
    /// daemon killed half way, beside that node's share of the work.
    NodeLoss(Disturbed),
    /// What a frozen worker costs a run: `sleep 1` apps on 8 workers,
    /// undisturbed and with one worker stopped (SIGSTOP) after its first
    /// task, beside each other.
    Frozen(Disturbed),
    /// What resuming a finished run costs beside the run: app tasks each
    /// writing one Locus file, run, then resumed (no task done again).
    Resume {
        #[command(flatten)]
        common: Common,
        /// App tasks per run.
        #[arg(long, default_value_t = 10_000)]
        tasks: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Leaf-task throughput of `locus run` (1 server, 2 workers): builtin
    /// tasks beside the engine alone, `/bin/true` apps beside raw posix_spawn.
    Tasks {
        /// No-op builtin tasks per round.
        #[arg(long, default_value_t = 200_000)]
        builtin: u32,
        /// `/bin/true` app tasks per round.
        #[arg(long, default_value_t = 4_000)]
        apps: u32,
        /// Control work: `fib(N)` by recursive composite calls.
        #[arg(long, default_value_t = 20)]
        fib: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// `locus runs` over many past runs (copies of one), beside `du -sb`
    /// of their directories.
    Runs {
        /// Past runs to list.
        #[arg(long, default_value_t = 1000)]
        runs: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
    },
    /// What a live page (`--watch`) costs a run: `tasks`' builtin tasks
    /// unwatched and watched in turn, and how late a task's end reaches
    /// the page.
    Watch {
        /// No-op builtin tasks per run.
        #[arg(long, default_value_t = 200_000)]
        tasks: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Parallel tasks (`@par`): a chain of jobs of 8 ranks beside `mpiexec`
    /// alone, and the busy share of parallel tasks among small ones beside
    /// the same work as single tasks.
    Par {
        /// Jobs in the chain.
        #[arg(long, default_value_t = 20)]
        jobs: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// App tasks writing 1, 10 or 100 small Locus outputs each, beside the
    /// same tasks writing host files and the client library writing the
    /// same files.
    Outputs {
        #[command(flatten)]
        common: Common,
        /// Small files written per configuration and round.
        #[arg(long, default_value_t = 2_000)]
        files: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Seed 004's filecopy on an emulated cluster (needs root): writers then
    /// readers in the Table I configurations and on a central file system,
    /// beside raw link and dd rates; writes an HTML report.
    Filecopy {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        emulated: EmulatedArgs,
        #[command(flatten)]
        deployed: DeployedArgs,
        /// Node counts to run on, e.g. 2,4,8.
        #[arg(long, default_value = "8", value_parser = list)]
        nodes: std::vec::Vec<u32>,
        /// Workers per node, e.g. 1,2.
        #[arg(long, default_value = "1", value_parser = list)]
        workers_per_node: std::vec::Vec<u32>,
        /// Weak (files grow with the workers) or strong (a fixed number of files).
        #[arg(long, value_enum, default_value_t = Scaling::Weak)]
        scaling: Scaling,
        /// Weak scaling: files per worker.
        #[arg(long, default_value_t = 1)]
        files_per_worker: u32,
        /// Strong scaling: files in all.
        #[arg(long, default_value_t = 16)]
        files: u32,
        /// MiB per file.
        #[arg(long, default_value_t = 128)]
        size_mib: u64,
        /// KiB per write or read call.
        #[arg(long, default_value_t = 8192)]
        chunk_kib: u64,
        /// Strictness of the locality-aware configurations: HARD or SOFT.
        #[arg(long, default_value = "HARD", value_parser = ["HARD", "SOFT"])]
        strict: String,
        /// Scope of the locality-aware configurations: NODE or RANK.
        #[arg(long, default_value = "NODE", value_parser = ["NODE", "RANK"])]
        scope: String,
    },
    /// Seed 004's MapReduce-like workflow on an emulated cluster (needs
    /// root): per-phase times and busy/idle timelines per configuration;
    /// writes an HTML report.
    Mapreduce {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        emulated: EmulatedArgs,
        #[command(flatten)]
        deployed: DeployedArgs,
        /// Nodes of the emulated cluster.
        #[arg(long, default_value_t = 8)]
        nodes: u32,
        /// Workers per node.
        #[arg(long, default_value_t = 1)]
        workers_per_node: u32,
        /// Input text files (jobs).
        #[arg(long, default_value_t = 32)]
        files: u32,
        /// MiB of text per file.
        #[arg(long, default_value_t = 8)]
        size_mib: u64,
    },
    /// Seed 002's metadata rates on an emulated cluster (needs root): one
    /// client per node creates empty files in its own directory, then all in
    /// one directory, on Locus and on the central file system; writes an
    /// HTML report.
    MetaCluster {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        emulated: EmulatedArgs,
        /// Node counts to run on, e.g. 1,2,4,8.
        #[arg(long, default_value = "1,2,4,8", value_parser = list)]
        nodes: std::vec::Vec<u32>,
        /// Empty files each client creates per layout.
        #[arg(long, default_value_t = 2_000)]
        files: u32,
        /// Creates each client keeps in flight.
        #[arg(long, default_value_t = 16)]
        depth: u32,
    },
    /// Programs using the FUSE mount (fio, creates, stats), beside the
    /// store's own file system and the client library (needs root).
    Mount {
        #[command(flatten)]
        common: Common,
        /// MiB per fio file.
        #[arg(long, default_value_t = 512)]
        size_mib: u64,
        /// Empty files created (then stat'ed) per round.
        #[arg(long, default_value_t = 2_000)]
        files: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// libfuse's `passthrough` example (`scripts/fuse-passthrough.sh`
        /// builds it): creates and stats through it over the store's file
        /// system are the mount's baseline too.
        #[arg(long)]
        passthrough: Option<std::path::PathBuf>,
    },
    /// What a second copy of every file costs: large-file writes and
    /// small-file creates with `--replicas 2` beside a cluster keeping one.
    Replicas {
        #[command(flatten)]
        common: Common,
        /// Daemons of the cluster.
        #[arg(long, default_value_t = 4)]
        nodes: u32,
        /// Large files written per round.
        #[arg(long, default_value_t = 8)]
        files: u32,
        /// MiB per large file.
        #[arg(long, default_value_t = 64)]
        size_mib: u64,
        /// Small files created per round.
        #[arg(long, default_value_t = 2_000)]
        creates: u32,
        /// How many times each measurement is made.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Nothing acknowledged is lost while daemons die: clients put new
    /// files while one daemon at a time is killed and restarted, then every
    /// acknowledged file is read back; fails if any was lost or is wrong.
    Kills {
        #[command(flatten)]
        common: Common,
        /// Daemons of the cluster.
        #[arg(long, default_value_t = 3)]
        nodes: u32,
        /// Clients putting files while daemons die.
        #[arg(long, default_value_t = 3)]
        clients: u32,
        /// Seconds of kills per repetition.
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// Milliseconds a killed daemon stays down.
        #[arg(long, default_value_t = 1000)]
        down_ms: u64,
        /// Milliseconds between a restart and the next kill.
        #[arg(long, default_value_t = 2000)]
        every_ms: u64,
        /// Repetitions of the whole experiment.
        #[arg(long, default_value_t = 20)]
        repetitions: u32,
        /// Replica counts, each run in every repetition.
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        replicas: Vec<u32>,
    },
    /// How fast a scrub checks a node's copies from the disk, beside
    /// reading files of the same sizes.
    Scrub {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        set: LargeFiles,
    },
    /// The file system's seeded simulation (in-process daemons, crashed
    /// and restarted while clients work): every answer checked against
    /// what the file system promises; fails on the first that is not.
    /// With `--runs`, generated workflows run in process with failing
    /// apps and cut ranks, each judged by how it must end.
    Simulate {
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// How many seeds, from --from on.
        #[arg(long, default_value_t = 1000)]
        seeds: u64,
        /// Seeds run at once.
        #[arg(long, default_value_t = 2)]
        jobs: u32,
        /// Steps of each seed's workload.
        #[arg(long, default_value_t = 24)]
        steps: u32,
        /// Simulate workflow runs rather than the file system.
        #[arg(long)]
        runs: bool,
    },
    /// Local write/read and remote-fetch throughput, beside raw dd.
    Io {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        set: LargeFiles,
    },
}

pub(crate) fn run(b: BenchCommand) -> Result<()> {
    match b {
        BenchCommand::Meta {
            common,
            nodes,
            clients,
            files,
            depth,
            list,
            raw_dir,
        } => meta::run(meta::MetaOpts {
            raw_dir,
            nodes,
            clients,
            files,
            depth,
            list,
            daemons: common.daemons()?,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::Check { lines, rounds } => check::run(lines, rounds),
        BenchCommand::Mapreduce {
            common,
            emulated,
            deployed,
            nodes,
            workers_per_node,
            files,
            size_mib,
        } => {
            let nodes = emulated.sweep(vec![nodes])?[0];
            common.in_work_dir("mapreduce", |work| {
                mapreduce::run(mapreduce::MapreduceOpts {
                    nodes,
                    cluster: ClusterOpts {
                        deployed: deployed.deployed()?,
                        ..emulated.cluster_opts(&common, &[nodes], HostCpus::Auto)?
                    },
                    workers_per_node,
                    files,
                    size: size_mib << 20,
                    work,
                    out: emulated.out_dir("mapreduce"),
                })
            })
        }
        BenchCommand::Filecopy {
            common,
            emulated,
            deployed,
            nodes,
            workers_per_node,
            scaling,
            files_per_worker,
            files,
            size_mib,
            chunk_kib,
            strict,
            scope,
        } => {
            let nodes = emulated.sweep(nodes)?;
            common.in_work_dir("filecopy", |work| {
                filecopy::run(filecopy::FilecopyOpts {
                    cluster: ClusterOpts {
                        deployed: deployed.deployed()?,
                        ..emulated.cluster_opts(&common, &nodes, HostCpus::Off)?
                    },
                    nodes,
                    workers_per_node,
                    scaling,
                    files_per_worker,
                    files,
                    size: size_mib << 20,
                    chunk: chunk_kib << 10,
                    strict,
                    scope,
                    work,
                    out: emulated.out_dir("filecopy"),
                })
            })
        }
        BenchCommand::MetaCluster {
            common,
            emulated,
            nodes,
            files,
            depth,
        } => {
            let nodes = emulated.sweep(nodes)?;
            common.in_work_dir("meta-cluster", |work| {
                meta_cluster::run(meta_cluster::MetaClusterOpts {
                    cluster: emulated.cluster_opts(&common, &nodes, HostCpus::Auto)?,
                    nodes,
                    files,
                    depth,
                    work,
                    out: emulated.out_dir("meta-cluster"),
                })
            })
        }
        BenchCommand::Outputs {
            common,
            files,
            rounds,
        } => outputs::run(outputs::OutputsOpts {
            program: crate::launched::program()?,
            daemons: common.daemons()?,
            files,
            rounds,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::NodeLoss(d) => locus_bench::node_loss::run(d.opts()?),
        BenchCommand::Frozen(d) => locus_bench::frozen::run(d.opts()?),
        BenchCommand::Resume {
            common,
            tasks,
            rounds,
        } => locus_bench::resume::run(locus_bench::resume::ResumeOpts {
            program: crate::launched::program()?,
            tasks,
            rounds,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::Tasks {
            builtin,
            apps,
            fib,
            rounds,
        } => tasks::run(tasks::TasksOpts {
            program: crate::launched::program()?,
            builtin,
            apps,
            fib,
            rounds,
        }),
        BenchCommand::Runs { runs, rounds } => {
            locus_bench::runs_index::run(locus_bench::runs_index::RunsOpts {
                program: crate::launched::program()?,
                runs,
                rounds,
            })
        }
        BenchCommand::Par { jobs, rounds } => locus_bench::par::run(locus_bench::par::ParOpts {
            program: crate::launched::program()?,
            jobs,
            rounds,
        }),
        BenchCommand::Watch { tasks, rounds } => {
            locus_bench::watch::run(locus_bench::watch::WatchOpts {
                program: crate::launched::program()?,
                tasks,
                rounds,
            })
        }
        BenchCommand::Mount {
            common,
            size_mib,
            files,
            rounds,
            passthrough,
        } => locus_bench::mount::run(locus_bench::mount::MountOpts {
            size: size_mib << 20,
            files,
            rounds,
            passthrough,
            daemons: common.daemons()?,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::Kills {
            common,
            nodes,
            clients,
            seconds,
            down_ms,
            every_ms,
            repetitions,
            replicas,
        } => locus_bench::kills::run(locus_bench::kills::KillsOpts {
            nodes,
            clients,
            seconds,
            down: std::time::Duration::from_millis(down_ms),
            every: std::time::Duration::from_millis(every_ms),
            repetitions,
            replicas,
            daemons: common.daemons()?,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::Replicas {
            common,
            nodes,
            files,
            size_mib,
            creates,
            rounds,
        } => locus_bench::replicas::run(locus_bench::replicas::ReplicasOpts {
            nodes,
            files,
            size: size_mib << 20,
            creates,
            rounds,
            daemons: common.daemons()?,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::Scrub { common, set } => scrub::run(set.opts(common)?),
        BenchCommand::Io { common, set } => io::run(set.opts(common)?),
        BenchCommand::Simulate {
            from,
            seeds,
            jobs,
            steps,
            runs,
        } => locus_bench::simulate::run(locus_bench::simulate::SimulateOpts {
            from,
            seeds,
            jobs,
            steps,
            runs,
        }),
    }
}
