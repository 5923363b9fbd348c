//! `locus run`: on one machine, launch a run's ranks and file system; as a
//! rank (launcher variables set by `locus run`, `srun` or `mpiexec`), play
//! that rank.

use anyhow::{Context, Result};
use clap::Args;
use locus_bench::emulate::{Emulation, FsMode};
use locus_fs::Placement;
use locus_lang::{compile, ir::Program, Source};
use locus_runtime::launch::{launch_local, Host, LocalRun};
use locus_runtime::rank::{run_rank, RankOptions};
use locus_runtime::rendezvous::RankEnv;
use locus_runtime::Locality;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// Ranks in all: workers plus servers (default: one worker per core).
    #[arg(short = 'n', long = "ranks")]
    pub ranks: Option<u32>,
    /// Emulated nodes, each with its own file-system daemon.
    #[arg(long, default_value_t = 1)]
    pub nodes: u32,
    /// Server ranks (the highest ranks; the first one leads).
    #[arg(long, default_value_t = 1)]
    pub servers: u32,
    /// auto: a task without a location runs SOFT on the node holding most
    /// of its input bytes; off: anywhere.
    #[arg(long, value_enum, default_value_t = Locality::Auto)]
    pub locality: Locality,
    /// Where files the run writes are stored: local (the writer's node),
    /// hash (the node the path hashes to, Hercules' default) or round-robin;
    /// default: the file system's policy (local for the run's own).
    #[arg(long)]
    pub placement: Option<Placement>,
    /// Extra attempts for an app that exits non-zero.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Milliseconds a SOFT task waits for its busy target before another
    /// worker may take it (same node first).
    #[arg(long, default_value_t = 100)]
    pub soft_wait: u64,
    /// Directory of the run: rendezvous, records, file system (default: a
    /// new one under /tmp).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Use this existing file-system cluster (`locus fs up --dir`) instead
    /// of starting one per run.
    #[arg(long, conflicts_with = "cluster")]
    pub fs: Option<PathBuf>,
    /// Run on an emulated cluster (`locus cluster up --emulate`; its
    /// directory or its emulation.json): each rank in its node's namespace.
    #[arg(long, conflicts_with = "nodes")]
    pub cluster: Option<PathBuf>,
    /// With --cluster: local uses Locus (a daemon per node); central keeps
    /// all data and metadata on the storage host, like a shared file system.
    #[arg(long, value_enum, default_value_t = FsMode::Local, requires = "cluster")]
    pub fs_mode: FsMode,
    /// With --fs: ranks on hosts without a daemon of that file system use
    /// it over the network (diskless). Without this, a run none of whose
    /// workers is on a file-system host is an error.
    #[arg(long)]
    pub fs_remote: bool,
    /// Keep the file system the run starts for itself (RUN_DIR/fs) running
    /// after the run, for inspection and later runs (`--fs RUN_DIR/fs`);
    /// `locus fs down --dir RUN_DIR/fs` stops it.
    #[arg(long, conflicts_with_all = ["fs", "cluster"])]
    pub keep_fs: bool,
    /// Print the run's summary (`locus report`) when it ends.
    #[arg(long)]
    pub summary: bool,
    /// The Swift script.
    pub script: PathBuf,
    /// Arguments for the script (`--name=value` for argv(), others for argp()).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

fn load(script: &Path) -> Result<Program, String> {
    let text =
        std::fs::read(script).map_err(|e| format!("cannot read {}: {e}", script.display()))?;
    let src = Source::new(script.display().to_string(), String::from_utf8_lossy(&text));
    compile(&src).map_err(|diags| locus_lang::diag::report(&diags, &src))
}

pub fn run(a: RunArgs) -> Result<()> {
    if let Some(env) = RankEnv::from_env() {
        let opts = RankOptions {
            run_dir: a
                .run_dir
                .clone()
                .context("a rank started by a launcher needs --run-dir (shared by all ranks)")?,
            servers: a.servers,
            fs_dir: a.fs.clone(),
            fs_remote: a.fs_remote,
            placement: a.placement,
            locality: a.locality,
            retries: a.retries,
            soft_wait: Duration::from_millis(a.soft_wait),
            args: a.args.clone(),
            stall: Duration::from_millis(500),
        };
        let script = a.script.clone();
        return run_rank(env, opts, move || load(&script)).map_err(anyhow::Error::msg);
    }
    // Check the script before starting anything.
    if let Err(diags) = load(&a.script) {
        eprintln!("{diags}");
        std::process::exit(1);
    }
    let run_dir = match &a.run_dir {
        Some(d) => d.clone(),
        None => {
            let d = std::env::temp_dir().join(format!("locus-run-{}", std::process::id()));
            // It is kept (records, the run's files): say where it is.
            eprintln!("locus: run directory {}", d.display());
            d
        }
    };
    let size = a.ranks.unwrap_or_else(|| default_workers() + a.servers);
    let (fs_dir, hosts) = match &a.cluster {
        Some(at) => {
            let (dir, e) = Emulation::load(at)?;
            let hosts = e.nodes.iter().map(|h| Host {
                name: h.name.clone(),
                netns: h.netns.clone(),
                addr: h.addr.into(),
                cgroup: h.cgroup.clone(),
            });
            (
                Some(Emulation::fs_dir(&dir, a.fs_mode)),
                Some(hosts.collect()),
            )
        }
        None => (a.fs.clone(), None),
    };
    let run = LocalRun {
        exe: std::env::current_exe().context("locating the locus binary")?,
        size,
        servers: a.servers,
        nodes: a.nodes,
        run_dir: run_dir.clone(),
        fs_dir,
        rank_args: rank_args(&a),
        keep_fs: a.keep_fs,
        hosts,
    };
    let code = launch_local(&run).map_err(anyhow::Error::msg)?;
    if a.keep_fs {
        eprintln!(
            "locus: the run's file system is still up: --fs {}",
            run_dir.join("fs").display()
        );
    }
    if a.summary {
        if let Ok(s) = locus_runtime::report::Report::load(&run_dir) {
            eprint!("{}", s.text());
        }
    }
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// The options every rank of a local run gets (the launcher adds
/// `--run-dir` and `--fs`).
fn rank_args(a: &RunArgs) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![
        "--servers".into(),
        a.servers.to_string().into(),
        "--locality".into(),
        match a.locality {
            Locality::Auto => "auto",
            Locality::Off => "off",
        }
        .into(),
        "--retries".into(),
        a.retries.to_string().into(),
        "--soft-wait".into(),
        a.soft_wait.to_string().into(),
    ];
    // The central store of an emulated cluster has no daemon on any node.
    if a.fs_remote || (a.cluster.is_some() && matches!(a.fs_mode, FsMode::Central)) {
        v.push("--fs-remote".into());
    }
    if let Some(p) = a.placement {
        v.extend(["--placement".into(), p.to_string().into()]);
    }
    v.push(a.script.clone().into());
    v.extend(a.args.iter().map(OsString::from));
    v
}

fn default_workers() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}
