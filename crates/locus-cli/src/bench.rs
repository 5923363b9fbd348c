//! `locus bench …`: drivers live in `locus-bench`.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use locus_bench::{check, io, meta, tasks};
use locus_fs::launch::Launch;
use locus_fs::Durability;
use std::path::PathBuf;

#[derive(Args)]
pub struct Common {
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
    fn launch(&self) -> Result<Launch> {
        Ok(Launch {
            exe: std::env::current_exe().context("locating the locus binary")?,
            durability: self.durability,
        })
    }
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// mdtest-like create/stat/remove rates and a large listing, beside the raw file system.
    Meta {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 2)]
        nodes: u32,
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
        #[arg(long, default_value_t = 10_000)]
        lines: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// Leaf-task throughput of `locus run` (1 server, 2 workers): builtin
    /// tasks beside the engine alone, `/bin/true` apps beside raw fork/exec.
    Tasks {
        /// No-op builtin tasks per round.
        #[arg(long, default_value_t = 200_000)]
        builtin: u32,
        /// `/bin/true` app tasks per round.
        #[arg(long, default_value_t = 4_000)]
        apps: u32,
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Local write/read and remote-fetch throughput, beside raw dd.
    Io {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 4)]
        files: u32,
        /// MiB per file.
        #[arg(long, default_value_t = 256)]
        size_mib: u64,
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
}

pub fn run(b: BenchCommand) -> Result<()> {
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
            launch: common.launch()?,
            dir: common.dir,
            keep: common.keep,
        }),
        BenchCommand::Check { lines, rounds } => check::run(lines, rounds),
        BenchCommand::Tasks {
            builtin,
            apps,
            rounds,
        } => tasks::run(tasks::TasksOpts {
            exe: std::env::current_exe().context("locating the locus binary")?,
            builtin,
            apps,
            rounds,
        }),
        BenchCommand::Io {
            common,
            files,
            size_mib,
            rounds,
        } => io::run(io::IoOpts {
            files,
            size: size_mib << 20,
            rounds,
            launch: common.launch()?,
            dir: common.dir,
            keep: common.keep,
        }),
    }
}
