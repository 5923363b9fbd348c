//! `locus run`: launch a run's ranks (and its file system, unless it uses
//! an existing one) on this machine, on an emulated cluster or through a
//! site launcher; as a rank (launcher variables set by `srun`, `mpiexec`
//! or Locus itself), play that rank.

use crate::fs_ops::{self, ClientArgs, ClusterArgs, FsOp, ViaArgs};
use crate::local_cluster::LauncherArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use locus_fs::Placement;
use locus_lang::{compile, ir::Program, Source};
use locus_launch::{launch_ranks, Emulation, FsMode, On, RankLaunch, CUT_OFF_EXIT, STOPPED_EXIT};
use locus_proto::run::ErrorKind;
use locus_runtime::{
    run_rank, Counts, Locality, MountMode, Progress, RankEnv, RankOptions, ResumeBy,
};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub(crate) struct RunArgs {
    /// Ranks in all: workers plus servers (default: one worker per core).
    #[arg(short = 'n', long = "ranks")]
    pub ranks: Option<u32>,
    /// Emulated nodes, each with its own file-system daemon (default 1);
    /// with --launcher, the hosts to spread the ranks over (default: the
    /// launcher's choice).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// Server ranks (the highest ranks; the first one leads).
    #[arg(long, default_value_t = 1)]
    pub servers: u32,
    /// auto: a task without a location runs SOFT on the node holding most
    /// of its input bytes; off: anywhere.
    #[arg(long, default_value = "auto", value_name = "auto|off")]
    pub locality: Locality,
    /// Where files the run writes are stored: local (the writer's node),
    /// hash (the node the path hashes to, Hercules' default) or round-robin;
    /// default: the file system's policy (local for the run's own).
    #[arg(long)]
    pub placement: Option<Placement>,
    /// Extra attempts for an app that fails (exits non-zero, leaves an
    /// output unwritten, or runs past --task-timeout).
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Seconds an app may run before it is killed and fails.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub task_timeout: Option<f64>,
    /// The most memory each rank may use (`512M`, `4GiB`, bytes): a run
    /// whose script state grows past it on a server fails, naming the loop
    /// or function that made it grow; on a worker (a task's value growing),
    /// naming the task. Default: half of the node's memory (or of its
    /// cgroup's limit) shared by the run's servers on the node, a quarter
    /// shared by its workers.
    #[arg(long, value_name = "SIZE", value_parser = memory_size)]
    pub max_memory: Option<u64>,
    /// How deep calls of composite functions may nest: a run whose calls
    /// go deeper (a recursion without a base case) fails at that call,
    /// naming the first calls of the chain.
    #[arg(long, value_name = "CALLS", default_value_t = locus_runtime::DEFAULT_MAX_DEPTH)]
    pub max_depth: u32,
    /// After a task fails (past its --retries), run everything that does
    /// not depend on it; the run then fails listing every failure (a
    /// --resume reruns only those and what depends on them).
    #[arg(long)]
    pub keep_going: bool,
    /// Go on with at least N of the -n ranks when some do not start (a
    /// rank that fails, or whose node's file-system daemon does not answer,
    /// before it takes work); by default the run fails at once naming them.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub min_ranks: Option<u32>,
    /// Keep apps' stdout and stderr (those the script does not redirect)
    /// only in RUN_DIR/tasks/<id>.out|.err, not on the terminal too.
    #[arg(long)]
    pub quiet_apps: bool,
    /// Each worker mounts the file system at /locus for itself and its apps
    /// (a mount namespace of their own): programs open any Locus file by
    /// path, and apps get their Locus inputs as /locus/… paths. The default
    /// where this user may (root, or user namespaces and /locus); with
    /// --mount a worker that cannot fails the run.
    #[arg(long, conflicts_with = "no_mount")]
    pub mount: bool,
    /// Give apps their Locus files as store paths (no mount).
    #[arg(long)]
    pub no_mount: bool,
    /// Pick up where an earlier run of this --run-dir stopped (same script,
    /// same file system): an app task it finished whose command is the same
    /// and whose input and output files are the versions it saw is not run
    /// again. `--resume=content`: files of other versions with the same
    /// bytes count as unchanged too, where the earlier run recorded their
    /// hashes (--record-hashes; a run resumed by content records them). The
    /// run's own file system (RUN_DIR/fs) is started again.
    #[arg(
        long,
        requires = "run_dir",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "versions",
        value_name = "versions|content"
    )]
    pub resume: Option<ResumeBy>,
    /// Replace the earlier run in --run-dir (its records and file system;
    /// its results stay where it wrote them). Without it, or --resume, a
    /// run directory holding an earlier run is refused.
    #[arg(long, conflicts_with = "resume")]
    pub fresh: bool,
    /// Records hold the BLAKE3 hashes of the files each app task read and
    /// wrote, for a later `--resume=content` (each file is read once more).
    #[arg(long)]
    pub record_hashes: bool,
    /// The longest (milliseconds) a SOFT task waits for its busy target
    /// before another worker may take it (same node first). Without it, a
    /// SOFT task leaves when fetching its inputs is expected to be quicker
    /// than waiting.
    #[arg(long)]
    pub soft_wait: Option<u64>,
    /// Directory of the run: rendezvous, records, file system (default: a
    /// new one under /tmp).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Use this existing file-system cluster (`locus fs up --dir`) instead
    /// of starting one per run.
    #[arg(long, conflicts_with_all = ["cluster", "replicas"])]
    pub fs: Option<PathBuf>,
    /// Run on an emulated cluster (`locus cluster up --emulate`; its
    /// directory or its emulation.json): each rank in its node's namespace.
    #[arg(long, conflicts_with_all = ["nodes", "launcher"])]
    pub cluster: Option<PathBuf>,
    /// With --cluster: local uses Locus (a daemon per node); central keeps
    /// all data and metadata on the storage host, like a shared file system.
    #[arg(
        long,
        default_value = "local",
        value_name = "local|central",
        requires = "cluster"
    )]
    pub fs_mode: FsMode,
    /// Start the ranks on the hosts of a job through the site's launcher
    /// (with a file system of one daemon per host, unless --fs is given).
    #[command(flatten)]
    pub site: LauncherArgs,
    /// Before the first task, copy host file or tree SRC into the run's
    /// file system as Locus path DST (`--stage-in data:/locus/inputs`), as
    /// `locus fs put -r` does; repeatable.
    #[arg(long, value_name = "SRC:DST", value_parser = stage_in_pair)]
    pub stage_in: Vec<(PathBuf, String)>,
    /// When the run succeeds, copy Locus file or tree SRC (e.g.
    /// /locus/results) to host path DST, as `locus fs get -r` does.
    #[arg(long, num_args = 2, value_names = ["SRC", "DST"])]
    pub stage_out: Option<Vec<String>>,
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
    /// For the file system the run starts for itself.
    #[command(flatten)]
    pub replicas: crate::local_cluster::Replicas,
    #[command(flatten)]
    pub modules: crate::check::ModuleArgs,
    /// Print the run's summary (`locus report`) when it ends.
    #[arg(long)]
    pub summary: bool,
    /// Serve a live page of the run while it goes (its address is printed;
    /// default a free loopback port). An address beyond loopback is served
    /// only to a URL holding the run's token (printed with it).
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "127.0.0.1:0",
        value_name = "ADDR"
    )]
    pub watch: Option<std::net::SocketAddr>,
    /// Run the control flow without starting apps (their outputs taken as
    /// made, no file written) and print per function how many calls would
    /// run; with --resume, which an earlier run did are kept and why each
    /// other would run again. Nothing in --run-dir changes.
    #[arg(long, conflicts_with_all = ["cluster", "launcher", "watch", "keep_fs", "fresh", "stage_in", "stage_out"])]
    pub dry_run: bool,
    /// The Swift script.
    pub script: PathBuf,
    /// Arguments for the script (`--name=value` for argv(), others for argp()).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

fn load(script: &Path, search: Vec<PathBuf>) -> Result<Program, String> {
    compiled(&crate::check::source(script, search)?)
}

/// The program, or its diagnostics rendered.
fn compiled(src: &Source) -> Result<Program, String> {
    compile(src).map_err(|diags| locus_lang::diag::report(&diags, src))
}

/// Leaf tasks done out of those put, on a terminal.
struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn show(&self, c: Counts) {
        self.0.set_length(c.put);
        self.0.set_position(c.done);
        self.0
            .set_message(format!("{} running, {} failed", c.running, c.failed));
    }
}

/// Plays the rank the launcher's environment names.
pub(crate) fn as_rank(opts: RankOptions) -> Result<()> {
    locus_launch::end_with_launcher();
    let env = RankEnv::from_env()
        .context("not started as a rank: no rank and size in the launcher's environment")?;
    // The launcher's rule: the servers are the last ranks.
    let worker = env.rank < env.size.saturating_sub(opts.servers);
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} tasks done, {msg} ({per_sec})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    });
    let progress = bar.clone().map(|b| Arc::new(Bar(b)) as Arc<dyn Progress>);
    let (script, search) = (opts.script.clone(), opts.include.clone());
    let program = move || load(&script, search).map_err(locus_proto::run::RunError::script);
    let result = run_rank(env, opts, program, progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match result {
        // Stopped with its run, which its launcher reports once.
        Err(e) if e.kind == ErrorKind::Interrupted => std::process::exit(STOPPED_EXIT),
        Err(e) if worker && e.kind == ErrorKind::Lost => {
            eprintln!("locus: {e}");
            std::process::exit(CUT_OFF_EXIT)
        }
        done => done.map_err(anyhow::Error::msg),
    }
}

impl RunArgs {
    /// What every rank is told.
    fn rank_options(&self, run_dir: PathBuf) -> RankOptions {
        RankOptions {
            servers: self.servers,
            fs_dir: self.fs.clone(),
            fs_remote: self.fs_remote,
            placement: self.placement,
            locality: self.locality,
            retries: self.retries,
            task_timeout: self.task_timeout.map(Duration::from_secs_f64),
            quiet_apps: self.quiet_apps,
            mount: match (self.mount, self.no_mount) {
                (true, _) => MountMode::On,
                (_, true) => MountMode::Off,
                _ => MountMode::Auto,
            },
            resume: self.resume,
            record_hashes: self.record_hashes || self.resume == Some(ResumeBy::Content),
            soft_wait: self.soft_wait.map(Duration::from_millis),
            max_memory: self.max_memory,
            max_depth: self.max_depth,
            keep_going: self.keep_going,
            min_ranks: self.min_ranks,
            args: self.args.clone(),
            include: self.modules.search(),
            ..RankOptions::new(self.script.clone(), run_dir)
        }
    }
}

pub(crate) fn run(a: RunArgs) -> Result<()> {
    // Started by a launcher as one rank of many (a batch script's own
    // environment may name a rank too: --launcher says this starts them).
    if a.site.launcher.is_none() && RankEnv::from_env().is_some() {
        let run_dir = a
            .run_dir
            .clone()
            .context("a rank started by a launcher needs --run-dir (shared by all ranks)")?;
        return as_rank(a.rank_options(run_dir));
    }
    // Check the script before starting anything (one that cannot be read
    // is one line, as every other error).
    let src = crate::check::source(&a.script, a.modules.search()).map_err(anyhow::Error::msg)?;
    if let Err(diags) = compiled(&src) {
        eprintln!("{diags}");
        std::process::exit(1);
    }
    if let (Some(m), Some(n)) = (a.min_ranks, a.ranks) {
        if m > n {
            bail!("--min-ranks {m} is more than the run's {n} ranks (-n)");
        }
    }
    if a.dry_run {
        let rank = a.rank_options(a.run_dir.clone().unwrap_or_default());
        let size = a.ranks.unwrap_or_else(|| default_workers() + a.servers);
        let code = crate::dry_run::dry_run(
            crate::launched::program()?,
            rank,
            size,
            a.nodes.unwrap_or(1),
        )?;
        if code != 0 {
            std::process::exit(code);
        }
        return Ok(());
    }
    let run_dir = match &a.run_dir {
        Some(d) => d.clone(),
        None => {
            let d = locus_launch::new_run_dir().context("cannot make a run directory")?;
            // It is kept (records, the run's files): say where it is.
            eprintln!("locus: run directory {}", d.display());
            d
        }
    };
    let mut rank = a.rank_options(run_dir.clone());
    // Tried here and said once, rather than by every worker.
    rank.mount = match rank.mount.settled() {
        Ok((mode, None)) => mode,
        Ok((mode, Some(e))) => {
            eprintln!(
                "locus: apps get their Locus files as store paths, not /locus/ paths: {e} \
                 (--no-mount chooses that without this note)"
            );
            mode
        }
        Err(e) => bail!("--mount: {e}"),
    };
    let on = match (&a.cluster, a.site.site()) {
        (Some(at), _) => {
            let (dir, e) = Emulation::load(at)?;
            let (on, fs_dir, fs_remote) = e.run_on(&dir, a.fs_mode);
            rank.fs_dir = Some(fs_dir);
            rank.fs_remote |= fs_remote;
            on
        }
        (None, Some(site)) => On::Site {
            site,
            hosts: a.nodes,
        },
        (None, None) => {
            if let Some(hint) = one_node_of_an_allocation() {
                eprintln!("{hint}");
            }
            On::This {
                nodes: a.nodes.unwrap_or(1),
            }
        }
    };
    let size = match (a.ranks, &on) {
        (Some(n), _) => n,
        (None, On::Site { .. }) => bail!("with --launcher, give the number of ranks: -n N"),
        (None, _) => default_workers() + a.servers,
    };
    if a.min_ranks.is_some_and(|m| m > size) {
        bail!(
            "--min-ranks {} is more than the run's {size} ranks",
            a.min_ranks.unwrap_or(0)
        );
    }
    let stage_out = a
        .stage_out
        .as_deref()
        .map(|v| (v[0].clone(), PathBuf::from(&v[1])));
    let run = RankLaunch {
        keep_fs: a.keep_fs,
        replicas: a.replicas.count,
        fresh: a.fresh,
        ..RankLaunch::new(crate::launched::program()?, size, on, rank)
    };
    // The page starts once the launcher holds the directory (an earlier
    // run's records moved aside, for --resume), before any rank starts.
    let mut watching = None;
    let before = |fs_dir: &Path| -> Result<()> {
        a.stage_in.iter().try_for_each(|(src, dst)| {
            put(fs_dir, src, dst).with_context(|| format!("--stage-in {}:{dst}", src.display()))
        })?;
        if let Some(listen) = a.watch {
            let run_dir = run_dir.clone();
            let w = locus_watch::watch(locus_watch::WatchOptions { run_dir, listen })
                .context("--watch")?;
            eprintln!("locus: watch the run at {}", w.url);
            watching = Some(w);
        }
        Ok(())
    };
    let code = launch_ranks(&run, before, |fs_dir| match &stage_out {
        Some((src, dst)) => stage(fs_dir, src, dst).context("--stage-out"),
        None => Ok(()),
    })?;
    // The page's last update (the run's end) reaches it before it stops.
    if let Some(w) = watching {
        w.settle();
    }
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

/// `SRC:DST` of `--stage-in`: a host path, and the Locus path after its
/// last `:/locus` (a host path may hold colons).
fn stage_in_pair(s: &str) -> Result<(PathBuf, String), String> {
    let (src, dst) = s
        .rfind(":/locus")
        .filter(|&i| i > 0)
        .map(|i| (&s[..i], &s[i + 1..]))
        .filter(|(_, dst)| *dst == "/locus" || locus_runtime::fs_path(dst).is_some())
        .ok_or_else(|| format!("'{s}' is not SRC:DST with DST a /locus/ path"))?;
    Ok((PathBuf::from(src), dst.to_string()))
}

/// Copies host file or tree `src` into the file system in `fs_dir` as
/// Locus path `dst`.
fn put(fs_dir: &Path, src: &Path, dst: &str) -> Result<()> {
    fs_ops::run(FsOp::Put {
        c: ClientArgs::of(ClusterArgs {
            dir: fs_dir.to_path_buf(),
        }),
        recursive: true,
        via: ViaArgs::auto(),
        local: src.to_path_buf(),
        path: locus_runtime::namespace_path(dst).to_string(),
    })
}

/// Copies Locus tree `src` out of the file system in `fs_dir` to `dst`.
fn stage(fs_dir: &Path, src: &str, dst: &Path) -> Result<()> {
    fs_ops::run(FsOp::Get {
        c: ClientArgs::of(ClusterArgs {
            dir: fs_dir.to_path_buf(),
        }),
        recursive: true,
        via: ViaArgs::auto(),
        path: locus_runtime::namespace_path(src).to_string(),
        local: dst.to_path_buf(),
        offline: fs_ops::OfflineArgs { offline: false },
    })
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x < 1e9 => Ok(x),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// Inside a Slurm allocation of several nodes (a batch script, `salloc`),
/// a run without `--launcher` uses this node only: said at once, with how
/// to use them all.
fn one_node_of_an_allocation() -> Option<String> {
    let job = std::env::var("SLURM_JOB_ID").ok()?;
    let nodes: u32 = ["SLURM_JOB_NUM_NODES", "SLURM_NNODES"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())?;
    (nodes > 1).then(|| {
        format!(
            "locus: Slurm job {job} has {nodes} nodes; without --launcher srun this run uses \
             this node only (add --launcher srun -n RANKS to use them all)"
        )
    })
}

fn memory_size(s: &str) -> Result<u64, String> {
    match parse_size::parse_size(s) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a size (bytes, or with a unit: 512M, 4GiB)"
        )),
    }
}

fn default_workers() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}
