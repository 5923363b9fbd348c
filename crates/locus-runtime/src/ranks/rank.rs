//! One rank of a run, started by `locus run` itself or by a site launcher
//! (`srun`, `mpiexec`): finds the others, then serves as a worker or a
//! server with its dataflow engine; the leader (first server) runs `main`.

use crate::builtins::storage::Storage;
use crate::engine::remote::ControlStats;
use crate::engine::{Engine, Locality, Progress, RunOptions};
use crate::exec::apps::Apps;
use crate::exec::files::LOCUS_PREFIX;
use crate::exec::job::JobLauncher;
use crate::exec::mount::{MountError, MountMode};
use crate::ranks::layout::Layout;
use crate::ranks::pmi::Pmi;
use crate::ranks::rendezvous::{self, Entry, RankEnv, RanksDir, Wireup};
use crate::ranks::server::{Server, ServerConfig};
use crate::ranks::worker::{run_worker, WorkerConfig};
use crate::records::progress::ProgressFile;
use crate::records::record::now_us;
use crate::records::resume::{Resume, ResumeBy};
use locus_fs::{Client, ClientOptions, ClusterSpec, Placement};
use locus_lang::ir::Program;
use locus_proto::run::{ErrorKind, RunError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const GATHER_TIMEOUT: Duration = Duration::from_secs(60);

/// What every rank of a run is told: the same for all ranks (each learns
/// its own rank from the launcher's environment). Serialised by launchers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankOptions {
    /// The Swift script.
    pub script: PathBuf,
    /// Where its user modules are looked for after its own directory.
    #[serde(default)]
    pub include: Vec<PathBuf>,
    pub run_dir: PathBuf,
    pub servers: u32,
    /// The Locus file system of the run (a `locus fs up` directory).
    pub fs_dir: Option<PathBuf>,
    /// Workers on hosts without a daemon of it use it over the network on
    /// purpose (a central store); otherwise no worker on a file-system host
    /// is an error.
    pub fs_remote: bool,
    /// Where files the run writes are stored; the file system's own policy
    /// when `None`.
    pub placement: Option<Placement>,
    pub locality: Locality,
    pub retries: u32,
    /// An app running longer is killed and fails (retried like any failure).
    #[serde(default)]
    pub task_timeout: Option<Duration>,
    /// Keep apps' unredirected stdout and stderr only in `RUN/tasks/`, not
    /// on this process's streams too.
    #[serde(default)]
    pub quiet_apps: bool,
    /// Whether each worker mounts the file system at `/locus` in a mount
    /// namespace of its own, which its apps share.
    #[serde(default)]
    pub mount: MountMode,
    /// Pick up where the run directory's earlier runs stopped: an app task
    /// they did whose files are unchanged (by version, or by content) is
    /// not run again.
    #[serde(default)]
    pub resume: Option<ResumeBy>,
    /// Records hold the hashes of the files tasks read and write.
    #[serde(default)]
    pub record_hashes: bool,
    /// `--soft-wait`: the longest a SOFT task waits for its busy target.
    pub soft_wait: Option<Duration>,
    pub args: Vec<String>,
    /// How long without progress (and no task running) means stuck.
    pub stall: Duration,
    /// The most resident memory each rank may use (`--max-memory`);
    /// default: half of its node's (or cgroup's) memory shared by the
    /// servers on the node, a quarter shared by the workers.
    #[serde(default)]
    pub max_memory: Option<u64>,
    /// How deep calls of composite functions may nest (`--max-depth`).
    #[serde(default = "default_depth")]
    pub max_depth: u32,
    /// A task's failure does not end the run (`--keep-going`).
    #[serde(default)]
    pub keep_going: bool,
    /// The fewest ranks the run goes on with when some did not start
    /// (`--min-ranks`); `None`: all of them.
    #[serde(default)]
    pub min_ranks: Option<u32>,
    /// Run the control flow without starting apps, their outputs taken as
    /// made, and write what each app call would do (`records::plan`).
    #[serde(default)]
    pub dry_run: bool,
    /// What starts a parallel task's (`@par`) MPI job: the launcher the
    /// ranks were started with, or `mpiexec` on this machine.
    #[serde(default)]
    pub job_launcher: JobLauncher,
}

/// The default bound of nested calls: far past any recursion a script
/// means (each call is a task, not a stack frame), reached in seconds by one
/// without a base case.
pub const DEFAULT_MAX_DEPTH: u32 = 1_000_000;

fn default_depth() -> u32 {
    DEFAULT_MAX_DEPTH
}

impl RankOptions {
    /// A run of `script` in `run_dir` with one server and the defaults:
    /// automatic locality, no retries, SOFT tasks wait 100 ms.
    pub fn new(script: PathBuf, run_dir: PathBuf) -> RankOptions {
        RankOptions {
            script,
            include: Vec::new(),
            run_dir,
            servers: 1,
            fs_dir: None,
            fs_remote: false,
            placement: None,
            locality: Locality::Auto,
            retries: 0,
            task_timeout: None,
            quiet_apps: false,
            mount: MountMode::Off,
            resume: None,
            record_hashes: false,
            soft_wait: None,
            args: Vec::new(),
            stall: Duration::from_millis(500),
            max_memory: None,
            max_depth: DEFAULT_MAX_DEPTH,
            keep_going: false,
            min_ranks: None,
            dry_run: false,
            job_launcher: JobLauncher::default(),
        }
    }
}

/// What the leader writes to `RUN_DIR/run.json` for `locus report`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    pub layout: Layout,
    pub start_us: u64,
    pub end_us: u64,
    pub error: Option<String>,
    /// What kind of failure `error` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// Each server's control work (the leader's first).
    #[serde(default)]
    pub control: Vec<ControlStats>,
    /// Hosts whose workers had no daemon of the run's file system (their
    /// tasks read and wrote over the network).
    #[serde(default)]
    pub diskless_hosts: Vec<String>,
    /// How the ranks met.
    #[serde(default)]
    pub wireup: Option<Wireup>,
    /// Nodes lost during the run (a worker of theirs found its file-system
    /// daemon gone), each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_nodes: Vec<(String, String)>,
    /// Workers whose process died (or was cut off) during the run, each
    /// with why; their tasks ran elsewhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers_gone: Vec<String>,
}

pub fn summary_path(run_dir: &std::path::Path) -> PathBuf {
    run_dir.join("run.json")
}

impl RunSummary {
    /// A run of `layout` from `start_us` to `end_us` that succeeded and
    /// noted nothing else (the reports' tests).
    #[cfg(test)]
    pub(crate) fn plain(layout: Layout, start_us: u64, end_us: u64) -> RunSummary {
        RunSummary {
            layout,
            start_us,
            end_us,
            error: None,
            error_kind: None,
            control: Vec::new(),
            diskless_hosts: Vec::new(),
            wireup: None,
            lost_nodes: Vec::new(),
            workers_gone: Vec::new(),
        }
    }

    /// The summary the leader of the run in `run_dir` wrote.
    pub fn load(run_dir: &std::path::Path) -> std::io::Result<RunSummary> {
        let bytes = std::fs::read(summary_path(run_dir))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

/// Where a server listens: `LOCUS_LISTEN`, else loopback for ranks of a
/// local run, else (a site launcher's ranks) this host's address.
fn listen_addr() -> Result<SocketAddr, RunError> {
    match std::env::var("LOCUS_LISTEN") {
        Ok(a) => a
            .parse()
            .map_err(|e| RunError::launch(format!("LOCUS_LISTEN={a}: {e}"))),
        // Ranks our own launcher started all run on this machine.
        Err(_) if std::env::var_os("LOCUS_RANK").is_some() => {
            Ok(SocketAddr::from(([127, 0, 0, 1], 0)))
        }
        // A site launcher's ranks may be on other hosts.
        Err(_) => Ok(SocketAddr::new(locus_fs::advertised_ip(), 0)),
    }
}

/// What a rank is given besides its options: how its apps run, where it
/// listens as a server, where the script's output goes. A process's own
/// rank gets processes, `listen_addr` and stdout (`run_rank`); a rank
/// run inside a test gets what the test gives.
pub(crate) struct RankParts {
    /// Runs a worker's apps; processes with the rank's environment when
    /// `None`.
    pub apps: Option<Arc<dyn Apps>>,
    /// Where a server listens; `listen_addr()` when `None`.
    pub listen: Option<SocketAddr>,
    pub out: Arc<Mutex<dyn Write + Send>>,
    /// Ends the rank at once when it fires, as a kill ends a process: its
    /// connections close, nothing more is sent or written.
    pub cut: Option<tokio::sync::oneshot::Receiver<()>>,
    /// A worker told to stop by a signal (SIGTERM, SIGINT) says so to its
    /// server before it ends: a process's own rank; not ranks sharing a
    /// test's process.
    pub stop_on_signal: bool,
    /// The node the rank is on; this machine's name (or `LOCUS_NODE`) when
    /// `None`.
    pub node: Option<String>,
}

/// Runs this process's rank to the end of the run. `program` is needed on
/// servers only and compiled on demand; the leader shows its progress on
/// `progress`.
pub fn run_rank(
    env: RankEnv,
    opts: RankOptions,
    program: impl FnOnce() -> Result<Program, RunError> + Send + 'static,
    progress: Option<Arc<dyn Progress>>,
) -> Result<(), RunError> {
    let parts = RankParts {
        apps: None,
        listen: None,
        out: Arc::new(Mutex::new(std::io::stdout())),
        cut: None,
        stop_on_signal: true,
        node: None,
    };
    run_rank_with(env, opts, program, progress, parts)
}

/// `run_rank`, with the parts given. A rank that fails says why in the
/// run directory (`ranks/failed-R.txt`): the ranks and the server waiting
/// for it fail at once naming it, rather than at the end of their wait.
pub(crate) fn run_rank_with(
    env: RankEnv,
    opts: RankOptions,
    program: impl FnOnce() -> Result<Program, RunError> + Send + 'static,
    progress: Option<Arc<dyn Progress>>,
    parts: RankParts,
) -> Result<(), RunError> {
    let ranks = RanksDir::of(&opts.run_dir);
    let result = rank_process(env, opts, program, progress, parts);
    match &result {
        Err(e) if e.kind != ErrorKind::Interrupted => {
            rendezvous::note_failed(&ranks, env.rank, &e.to_string());
        }
        _ => {}
    }
    result
}

fn rank_process(
    env: RankEnv,
    opts: RankOptions,
    program: impl FnOnce() -> Result<Program, RunError> + Send + 'static,
    progress: Option<Arc<dyn Progress>>,
    mut parts: RankParts,
) -> Result<(), RunError> {
    // Before any thread starts: every thread of the rank (and every app)
    // then shares the namespace.
    let namespace = match opts.mount {
        MountMode::Off => None,
        MountMode::On => Some(Ok(crate::exec::mount::private_namespace()?)),
        MountMode::Auto => Some(crate::exec::mount::private_namespace()),
    };
    // One thread per rank: ranks are processes, one per core, and a single
    // thread spares the engine's futures cross-thread wake-ups.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::internal(e.to_string()))?;
    let cut = parts.cut.take();
    let result = rt.block_on(async {
        let ranked = rank_main(env, opts, namespace, program, progress, parts);
        match cut {
            None => ranked.await,
            Some(cut) => tokio::select! {
                result = ranked => result,
                Ok(()) = cut => Err(RunError::lost(format!("rank {} was cut", env.rank))),
            },
        }
    });
    // Tasks left waiting on a failed run must not hold the process open.
    rt.shutdown_timeout(Duration::from_millis(100));
    result
}

/// `namespace`: the rank's own mount namespace, made (or refused) if it
/// is to mount.
async fn rank_main(
    env: RankEnv,
    opts: RankOptions,
    namespace: Option<Result<(), MountError>>,
    program: impl FnOnce() -> Result<Program, RunError> + Send + 'static,
    progress: Option<Arc<dyn Progress>>,
    mut parts: RankParts,
) -> Result<(), RunError> {
    let me = env.rank;
    if opts.servers == 0 || opts.servers >= env.size {
        return Err(RunError::launch(format!(
            "{} ranks cannot hold {} server(s) and at least one worker",
            env.size, opts.servers
        )));
    }
    let is_server = me >= env.size - opts.servers;
    let dir_err = |e: std::io::Error| {
        RunError::launch(format!("run directory {}: {e}", opts.run_dir.display()))
    };
    std::fs::create_dir_all(&opts.run_dir).map_err(dir_err)?;
    let secret = locus_fs::shared_secret(&opts.run_dir).map_err(dir_err)?;
    let server = if is_server {
        let addr = match parts.listen {
            Some(addr) => addr,
            None => listen_addr()?,
        };
        Some(Server::bind(addr, me).map_err(|e| {
            RunError::launch(format!("server rank {me} cannot listen on {addr}: {e}"))
        })?)
    } else {
        None
    };
    let entry = Entry {
        rank: me,
        node: parts.node.take().unwrap_or_else(rendezvous::node_name),
        addr: match &server {
            Some(s) => Some(
                s.local_addr()
                    .map_err(|e| RunError::launch(e.to_string()))?,
            ),
            None => None,
        },
        pid: std::process::id(),
        nonce: rand::random(),
    };
    let size = env.size;
    // The leader (first server) gathers.
    let gatherer = size - opts.servers;
    // Kept to the rank's end: dropping it finalizes the PMI session.
    let (entries, wireup, _pmi) = match Pmi::from_env(GATHER_TIMEOUT)
        .map_err(|e| RunError::launch(format!("rank {me}: {e}")))?
    {
        Some(mut pmi) => {
            let mine = entry.clone();
            let (entries, pmi) = tokio::task::spawn_blocking(move || {
                (
                    rendezvous::exchange_pmi(&mut pmi, &mine, size, gatherer),
                    pmi,
                )
            })
            .await
            .map_err(|e| RunError::internal(e.to_string()))?;
            let entries = entries.map_err(|e| RunError::launch(e.to_string()))?;
            if me == gatherer {
                let board = RanksDir::of(&opts.run_dir);
                rendezvous::keep_met(&board, &entries).map_err(dir_err)?;
            }
            (entries, Wireup::Pmi, Some(pmi))
        }
        None => {
            let board = RanksDir::of(&opts.run_dir);
            rendezvous::publish(&board, &entry).map_err(dir_err)?;
            let entries = tokio::task::spawn_blocking(move || {
                rendezvous::gather(&board, size, me, gatherer, GATHER_TIMEOUT)
            })
            .await
            .map_err(|e| RunError::internal(e.to_string()))?
            .map_err(|e| RunError::launch(e.to_string()))?;
            (entries, Wireup::RunDir, None)
        }
    };
    let names: Vec<String> = entries.iter().map(|e| e.node.clone()).collect();
    let layout = Layout::from_names(opts.servers, &names);
    let layout = Arc::new(layout.map_err(|e| RunError::launch(e.to_string()))?);
    let fs = match &opts.fs_dir {
        Some(d) => Some(open_fs(d, &entry.node, opts.placement, &opts.run_dir)?),
        None => None,
    };
    // The leader checks where the workers are against the file system.
    let diskless_hosts = match (&fs, &opts.fs_dir) {
        (Some((_, fs_hosts)), Some(dir)) if me == layout.leader() => {
            diskless_hosts(&layout, fs_hosts, opts.fs_remote, dir)?
        }
        _ => Vec::new(),
    };
    let Some(server) = server else {
        let server_rank = layout.server_of(me);
        let client = fs.map(|(c, _)| c);
        // Dropped (unmounted) when the worker is done.
        let store_paths = |e: MountError| {
            tracing::warn!(
                "worker rank {me}: its apps get store paths, not {LOCUS_PREFIX}/ paths: {e}"
            );
            None
        };
        let mounted = match (&client, namespace) {
            (Some(c), Some(Ok(()))) => {
                match crate::exec::mount::at_locus(c.clone(), &opts.run_dir) {
                    Ok(m) => Some(m),
                    Err(e) if opts.mount == MountMode::On => return Err(e.into()),
                    Err(e) => store_paths(e),
                }
            }
            (Some(_), Some(Err(e))) => store_paths(e),
            _ => None,
        };
        let apps = match parts.apps {
            Some(apps) => apps,
            None => Arc::new(crate::ranks::worker::launcher(me, &layout).map_err(|e| {
                RunError::launch(format!(
                    "worker rank {me} cannot prepare to start apps: {e}"
                ))
            })?),
        };
        let cfg = WorkerConfig {
            me,
            apps,
            record_hashes: opts.record_hashes,
            memory_budget: opts.max_memory.or_else(|| {
                let workers = layout.workers_on(layout.node_of(me)).count();
                crate::engine::memory::worker_budget(workers as u32)
            }),
            registering: Default::default(),
            server: entries[server_rank as usize].addr.ok_or_else(|| {
                RunError::launch(format!("server rank {server_rank} published no address"))
            })?,
            layout,
            secret,
            fs: client,
            mounted: mounted.as_ref().map(locus_mount::Mounted::hold),
            run_dir: opts.run_dir.clone(),
            retries: opts.retries,
            task_timeout: opts.task_timeout,
            echo_apps: !opts.quiet_apps,
            python: Default::default(),
            r: Default::default(),
            running: tokio::sync::Semaphore::new(1),
            left: Default::default(),
            stop_on_signal: parts.stop_on_signal,
            stopping: Default::default(),
            stop: Default::default(),
            jobs: Default::default(),
            job_launcher: opts.job_launcher.clone(),
        };
        return run_worker(cfg).await;
    };
    let dispatch = server.dispatch();
    let run_id = format!("{:08x}", entries[layout.leader() as usize].nonce);
    let serving = server
        .start(ServerConfig {
            me,
            layout: layout.clone(),
            entries,
            secret,
            soft_wait: opts.soft_wait,
            held_to: parts.stop_on_signal.then(|| opts.run_dir.clone()),
            run_dir: opts.run_dir.clone(),
            min_ranks: opts.min_ranks.unwrap_or(env.size),
        })
        .await?;
    // Loaded off the rank's one thread: its connections' heartbeats go on
    // while a large script is read and checked.
    let program = tokio::task::spawn_blocking(program)
        .await
        .map_err(|e| RunError::internal(e.to_string()))??;
    let leads = me == layout.leader();
    let start_us = now_us();
    // The leader keeps its counts in the run directory for a watcher.
    let progress =
        leads.then(|| ProgressFile::start(&opts.run_dir, start_us, layout.workers(), progress));
    let engine = Engine::new(
        program,
        RunOptions {
            dispatch: dispatch.clone(),
            server: me - layout.workers(),
            servers: layout.servers,
            first_server: layout.workers(),
            storage: Storage::new(layout.clone(), fs).dry_run(opts.dry_run),
            dry_run: opts.dry_run,
            locality: opts.locality,
            run_id,
            args: crate::CommandLine::new(opts.script.display().to_string(), &opts.args),
            run_dir: opts.run_dir.clone(),
            out: parts.out,
            stall: opts.stall,
            memory_budget: opts.max_memory.or_else(|| {
                let here = layout.node_of(me);
                let servers =
                    (layout.workers()..layout.size()).filter(|r| layout.node_of(*r) == here);
                crate::engine::memory::default_budget(servers.count() as u32)
            }),
            max_depth: opts.max_depth,
            keep_going: opts.keep_going,
            progress: progress.clone().map(|p| p as Arc<dyn Progress>),
            resume: Resume::new(&opts.run_dir, me, opts.resume, opts.dry_run)?,
        },
    );
    engine.fail_on_panic();
    engine.start();
    if !leads {
        return serving.await;
    }
    let serve = tokio::spawn(serving);
    let result = engine.run().await;
    let end_us = now_us();
    if let Some(p) = &progress {
        p.write_pending();
    }
    let control = engine.control_stats().await;
    dispatch.finish();
    let _ = serve.await;
    let summary = RunSummary {
        layout: (*layout).clone(),
        start_us,
        end_us,
        error: result.as_ref().err().map(|e| e.message.clone()),
        error_kind: result.as_ref().err().map(|e| e.kind),
        control,
        diskless_hosts,
        wireup: Some(wireup),
        lost_nodes: dispatch.lost_nodes(),
        workers_gone: dispatch.workers_gone(),
    };
    let written = serde_json::to_vec_pretty(&summary)
        .map_err(std::io::Error::other)
        .and_then(|b| std::fs::write(summary_path(&opts.run_dir), b));
    let _ = std::io::stdout().flush();
    result?;
    written.map_err(|e| RunError::fs(format!("{}: {e}", summary_path(&opts.run_dir).display())))
}

/// The hosts of `layout`'s workers that are not hosts of the file system in
/// `dir` (said on stderr); none of them being one is an error unless the
/// file system is used over the network on purpose (`fs_remote`).
fn diskless_hosts(
    layout: &Layout,
    fs_hosts: &[String],
    fs_remote: bool,
    dir: &std::path::Path,
) -> Result<Vec<String>, RunError> {
    let workers: BTreeSet<&str> = (0..layout.workers()).map(|w| layout.node_name(w)).collect();
    let (on_fs, off): (Vec<&str>, Vec<&str>) = workers
        .into_iter()
        .partition(|h| fs_hosts.iter().any(|f| f == h));
    if off.is_empty() {
        return Ok(Vec::new());
    }
    let dir = dir.display();
    if on_fs.is_empty() && !fs_remote {
        return Err(RunError::launch(format!(
            "no worker of this run is on a host of the file system in {dir}: workers on {}, \
             its daemons on {}; start the ranks on the file system's hosts (or give \
             --fs-remote to use it over the network)",
            off.join(", "),
            fs_hosts.join(", ")
        )));
    }
    eprintln!(
        "locus: workers on {} have no daemon of the file system in {dir}: their tasks \
         read and write over the network",
        off.join(", ")
    );
    Ok(off.into_iter().map(str::to_string).collect())
}

/// A client of the run's file system acting on this rank's node: the
/// daemon whose node name is this rank's node. A node with no daemon of
/// that file system (one of a central store) reaches it over the network,
/// staging data in `RUN_DIR/scratch/NODE`.
fn open_fs(
    dir: &std::path::Path,
    node: &str,
    placement: Option<Placement>,
    run_dir: &std::path::Path,
) -> Result<(Client, Vec<String>), RunError> {
    let spec = ClusterSpec::load(dir).map_err(|e| RunError::fs(e.to_string()))?;
    let names: Vec<String> = spec.nodes.iter().map(|n| n.name.clone()).collect();
    let opts = match names.iter().position(|n| n == node) {
        Some(id) => ClientOptions {
            node: id as u32,
            placement,
            take_over: true,
            ..ClientOptions::default()
        },
        None => ClientOptions {
            scratch: Some(run_dir.join("scratch").join(node)),
            placement,
            take_over: true,
            ..ClientOptions::default()
        },
    };
    let client = Client::open_loaded(dir, &spec, opts).map_err(|e| RunError::fs(e.to_string()))?;
    Ok((client, names))
}
