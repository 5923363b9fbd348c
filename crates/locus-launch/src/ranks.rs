//! A run's ranks, started on this machine (each emulated node named by
//! the launcher variables a site launcher would set), on emulated hosts (in
//! their namespaces and cgroups), or through a site launcher on the hosts
//! of a job; with a file system the run starts for itself unless it uses an
//! existing one. Waits for the ranks, and stops what it started.

use crate::daemons::{self, Daemons};
use crate::emulate::Host;
use crate::exits::Exits;
use crate::role::{self, Program};
use crate::site::{self, Deploy, Shape, Site};
use locus_fs::{ClusterSpec, Durability, Placement, Scope, Upkeep, CLUSTER_FILE};
use locus_proto::run::{ErrorKind, RunError};
use locus_runtime::record::{keep_for_resume, now_us, records_dir, resume_dir};
use locus_runtime::{ranks_dir, summary_path, Layout, RankOptions, RunSummary, INTERRUPTED};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The ranks' role file in the run directory.
const ROLE_FILE: &str = "rank.json";

/// How long the other ranks get to stop on their own once the leader is
/// done or a rank failed; and a site launcher to stop its ranks.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// The longest a wait for ranks lets a SIGINT or SIGTERM go unseen (one
/// that comes just before the wait does not end it).
const INTERRUPT_CHECK: Duration = Duration::from_millis(200);

/// Where the ranks run.
#[derive(Clone)]
pub enum On {
    /// This machine, emulating nodes by name (one file-system daemon
    /// each, unless the run uses an existing file system).
    This {
        /// Nodes emulated.
        nodes: u32,
    },
    /// Emulated hosts, with their file system (`RankOptions::fs_dir`).
    Emulated(Vec<Host>),
    /// The hosts of a job, through the site's launcher.
    Site {
        /// The launcher.
        site: Site,
        /// Hosts to run on (else the launcher's choice).
        hosts: Option<u32>,
    },
}

/// A run to start.
pub struct RankLaunch {
    /// The binary that runs a rank (`locus launched FILE`).
    pub program: Arc<dyn Program>,
    /// Ranks in all.
    pub size: u32,
    /// Where the ranks run.
    pub on: On,
    /// What every rank is told; without `fs_dir` the run starts a file
    /// system in `RUN_DIR/fs` and stops it at the end.
    pub rank: RankOptions,
    /// Leave the file system the run started running when it ends (for
    /// inspection and later runs: `--fs RUN_DIR/fs`).
    pub keep_fs: bool,
    /// Copies of data and metadata the file system the run starts keeps.
    pub replicas: u32,
    /// Where the ranks' output goes, if not to this process's.
    pub log: Option<PathBuf>,
    /// Replace an earlier run found in the run directory (else only
    /// `--resume` may use it).
    pub fresh: bool,
    /// Raised by an embedder to stop the run (a program of its own, whose
    /// signals are its own: Python's Ctrl-C). Without it, SIGINT, SIGTERM
    /// and SIGHUP of this process stop the run.
    pub stop: Option<Arc<AtomicBool>>,
}

impl RankLaunch {
    /// `size` ranks of `program` playing `rank`, `on` these hosts, with a
    /// file system of one copy that ends with the run, their output this
    /// process's, a run directory holding no earlier run, and stopped by
    /// this process's signals.
    pub fn new(program: Arc<dyn Program>, size: u32, on: On, rank: RankOptions) -> RankLaunch {
        RankLaunch {
            program,
            size,
            on,
            rank,
            keep_fs: false,
            replicas: 1,
            log: None,
            fresh: false,
            stop: None,
        }
    }

    /// The flag that stops the run once raised.
    fn stop_flag(&self) -> &AtomicBool {
        match &self.stop {
            Some(flag) => flag,
            None => on_interrupt(),
        }
    }
}

/// A new run directory under the temporary directory, of a name no one can
/// guess (made 0700, never one that was there: another user cannot plant
/// a link or a directory of their own in its place). It is kept.
pub fn new_run_dir() -> std::io::Result<PathBuf> {
    let d = tempfile::Builder::new()
        .prefix("locus-run-")
        // Private, as every run directory is (tempfile's own mode follows
        // the umask: 0755 here).
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(std::env::temp_dir())?;
    Ok(d.keep())
}

/// Why a run could not be launched, or its launch failed (a run that ran
/// and failed is its exit code, not one of these).
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// `-n` leaves no room for a worker beside the servers.
    #[error("-n {size} cannot hold {servers} server(s) and at least one worker")]
    Shape {
        /// The ranks asked for.
        size: u32,
        /// The servers among them.
        servers: u32,
    },
    /// The run directory cannot be made, claimed, cleared or written.
    #[error("run directory {}: {source}", dir.display())]
    RunDir {
        /// The run directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It holds an earlier run, and neither `--resume` nor `--fresh` says
    /// what to do with it.
    #[error(
        "{} holds an earlier run ({earlier}): --resume goes on from it, --fresh replaces it",
        dir.display()
    )]
    EarlierRun {
        /// The run directory.
        dir: PathBuf,
        /// How the earlier run ended.
        earlier: String,
    },
    /// `--resume` of a directory no run recorded anything in.
    #[error("--resume: {} holds no earlier run's records", dir.display())]
    NothingToResume {
        /// The run directory.
        dir: PathBuf,
    },
    /// Ranks on emulated hosts without the hosts' file system.
    #[error("ranks on emulated hosts need the hosts' file system")]
    NoHostsFs,
    /// The run's own file system did not start.
    #[error("starting the run's file system: {0:#}")]
    FileSystem(anyhow::Error),
    /// A rank's process, or the site's launcher, could not be started or
    /// watched.
    #[error("{what}: {source}")]
    Start {
        /// What was being started.
        what: String,
        /// Why it could not be.
        source: std::io::Error,
    },
    /// The caller's staging before or after the run failed.
    #[error("{0:#}")]
    Staging(anyhow::Error),
}

/// Runs all ranks; returns the exit code of the run. Once the file system
/// serves and before any rank starts, `before` gets its directory (to
/// stage inputs in; its error ends the run); after a run that succeeded,
/// `after` gets it while it still serves (to stage results out).
pub fn launch_ranks(
    r: &RankLaunch,
    before: impl FnOnce(&Path) -> anyhow::Result<()>,
    after: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> Result<i32, LaunchError> {
    let (size, servers) = (r.size, r.rank.servers);
    if servers == 0 || servers >= size {
        return Err(LaunchError::Shape { size, servers });
    }
    let run_dir = &r.rank.run_dir;
    let dir_err = |source: std::io::Error| LaunchError::RunDir {
        dir: run_dir.clone(),
        source,
    };
    let _held = claim_run_dir(run_dir).map_err(dir_err)?;
    // Found by `locus runs` wherever it is; a run goes on without it.
    if let Err(e) = crate::index::register(run_dir, &r.rank.script, now_us()) {
        eprintln!(
            "locus: the run is not in the run index {} ({e}); `locus runs` will not list it",
            crate::index::index_dir().display()
        );
    }
    if r.rank.resume.is_none() && !r.fresh {
        if let Some(earlier) = earlier_run(run_dir) {
            return Err(LaunchError::EarlierRun {
                dir: run_dir.clone(),
                earlier,
            });
        }
    }
    if r.rank.resume.is_some() {
        if !records_dir(run_dir).exists() && !resume_dir(run_dir).exists() {
            return Err(LaunchError::NothingToResume {
                dir: run_dir.clone(),
            });
        }
        keep_for_resume(run_dir).map_err(dir_err)?;
    }
    for stale in [ranks_dir(run_dir), records_dir(run_dir)] {
        if stale.exists() {
            std::fs::remove_dir_all(&stale).map_err(dir_err)?;
        }
    }
    match std::fs::remove_file(summary_path(run_dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(dir_err(e)),
        _ => {}
    }
    if matches!(r.on, On::Emulated(_)) && r.rank.fs_dir.is_none() {
        return Err(LaunchError::NoHostsFs);
    }
    let own_fs = r.rank.fs_dir.is_none();
    let fs_dir = r.rank.fs_dir.clone().unwrap_or_else(|| run_dir.join("fs"));
    // A resumed run goes on with the files of the file system it made.
    let reuse_fs = own_fs && r.rank.resume.is_some() && fs_dir.join(CLUSTER_FILE).exists();
    if own_fs && !reuse_fs && fs_dir.exists() {
        // An earlier run's, possibly kept running (--keep-fs).
        take_down(r, &fs_dir);
        std::fs::remove_dir_all(&fs_dir).map_err(dir_err)?;
    }
    let mut rank = r.rank.clone();
    rank.fs_dir = Some(fs_dir.clone());
    if let On::Site { site, .. } = &r.on {
        rank.job_launcher = site.job_launcher();
    }
    // Written before anything starts: a failure here leaves nothing running.
    let role_file = run_dir.join(ROLE_FILE);
    role::write(&role_file, &rank).map_err(dir_err)?;
    // The launcher of a file system deployed for this run.
    let mut fs_launcher = None;
    let result = match &r.on {
        On::Site { site, hosts } => {
            if own_fs && !reuse_fs {
                let (_, launcher) = site::deploy(
                    r.program.as_ref(),
                    Deploy {
                        dir: &fs_dir,
                        site: site.clone(),
                        hosts: *hosts,
                        store: None,
                        durability: Durability::Group,
                        mount: None,
                        placement: Placement::Local,
                        replicas: r.replicas,
                        upkeep: Upkeep::of_a_run(),
                        scope: Scope::deployed(r.keep_fs),
                    },
                )
                .map_err(LaunchError::FileSystem)?;
                fs_launcher = Some(launcher);
            }
            before(&fs_dir)
                .map_err(LaunchError::Staging)
                .and_then(|()| run_site(r, site, *hosts, &role_file))
        }
        On::This { nodes } => {
            let daemons = Daemons {
                program: r.program.clone(),
                durability: Durability::Group,
                replicas: r.replicas,
                with_launcher: own_fs && !r.keep_fs,
                upkeep: Upkeep::of_a_run(),
            };
            let spec = if reuse_fs {
                daemons.restart_stopped(&fs_dir).map(|(spec, _)| spec)
            } else if own_fs {
                daemons.create(&fs_dir, *nodes, Placement::Local)
            } else {
                ClusterSpec::load(&fs_dir)
            }
            .map_err(|e| LaunchError::FileSystem(e.into()))?;
            let names: Vec<String> = spec.nodes.iter().map(|n| n.name.clone()).collect();
            let layout = Layout::emulated_names(size, servers, &names);
            before(&fs_dir)
                .map_err(LaunchError::Staging)
                .and_then(|()| run_here(r, &role_file, &layout, &[]))
        }
        On::Emulated(hosts) => {
            let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
            let layout = Layout::emulated_names(size, servers, &names);
            before(&fs_dir)
                .map_err(LaunchError::Staging)
                .and_then(|()| run_here(r, &role_file, &layout, hosts))
        }
    };
    let result = match result {
        Ok(0) => after(&fs_dir).map(|()| 0).map_err(LaunchError::Staging),
        other => other,
    };
    if own_fs && !r.keep_fs {
        match r.on {
            // Node-local stores of a job's hosts are not left behind.
            On::Site { .. } => take_down(r, &fs_dir),
            // The local one stays in the run directory.
            _ => {
                let _ = daemons::stop(&fs_dir, false);
            }
        }
        if let Some(launcher) = fs_launcher {
            reap(launcher);
        }
    }
    result
}

/// Stops the file system in `fs_dir` and removes its stores, through the
/// launcher on hosts whose daemons are gone; says which it could not.
fn take_down(r: &RankLaunch, fs_dir: &Path) {
    if r.stop.is_none() && on_interrupt().load(Ordering::Relaxed) {
        // Stopped with its job (`scancel`, a time limit): the daemons,
        // signalled too, remove their own stores, and the launcher can
        // start nothing more in a job that is ending.
        let _ = daemons::stop(fs_dir, true);
        return;
    }
    let Ok((_, left)) = site::take_down(r.program.as_ref(), fs_dir) else {
        return;
    };
    for (node, why) in left {
        eprintln!(
            "locus: the store of {} ({}) is left: {why}",
            node.name,
            node.dir.display()
        );
    }
}

/// Marks a directory as a run directory (and is locked by its live run):
/// what a run replaces in it on reuse (`fs`, `ranks`, `records`) is only
/// ever its own.
pub const RUN_MARKER: &str = "locus-run";
/// Makes `dir` this run's directory: a new or empty directory (made private),
/// or an earlier run's that no live run holds; anything else is refused
/// rather than overwritten. The directory is this run's while the returned
/// file is open (a lock on its marker, which names this run: the kernel
/// ends it with the process, however it ends).
fn claim_run_dir(dir: &Path) -> std::io::Result<std::fs::File> {
    let fresh = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e),
    };
    locus_fs::create_private_dir(dir)?;
    let marker = dir.join(RUN_MARKER);
    if !fresh && !marker.exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "not empty and not a Locus run directory; refusing to use it (a run replaces \
             fs/, ranks/ and records/ in its directory): give a new directory",
        ));
    }
    let mut lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&marker)?;
    if let Some(owner) = lock_marker(&lock, &marker)? {
        return Err(std::io::Error::new(
            std::io::ErrorKind::ResourceBusy,
            format!(
                "a live run holds it ({owner}): stop that run first, or give another --run-dir"
            ),
        ));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    lock.set_len(0)?;
    writeln!(
        lock,
        "locus run, pid {} on {}",
        std::process::id(),
        host.trim()
    )?;
    Ok(lock)
}

/// How the earlier run whose directory `dir` is ended, if one ran there:
/// its summary's outcome, or that it left records without one.
fn earlier_run(dir: &Path) -> Option<String> {
    if let Ok(s) = RunSummary::load(dir) {
        return Some(match (s.error_kind, &s.error) {
            (Some(ErrorKind::Interrupted), _) => "interrupted".into(),
            (None, None) => "done".into(),
            (Some(kind), _) => format!("failed: {kind}"),
            (None, Some(_)) => "failed".into(),
        });
    }
    let records = std::fs::read_dir(records_dir(dir)).ok()?;
    (records.count() > 0).then(|| "ended before writing its summary".into())
}

/// Locks run marker `marker` (open as `lock`) as a run holds it for its
/// life; `Some` naming the live run that holds it instead.
fn lock_marker(lock: &std::fs::File, marker: &Path) -> std::io::Result<Option<String>> {
    // SAFETY: flock(2) on a descriptor the caller owns.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(None);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() != std::io::ErrorKind::WouldBlock {
        return Err(e);
    }
    let owner = std::fs::read_to_string(marker).unwrap_or_default();
    Ok(Some(owner.trim().to_string()))
}

/// What every rank of the run in `run_dir` was told (its role file,
/// written before any rank started).
pub fn rank_options(run_dir: &Path) -> std::io::Result<locus_runtime::RankOptions> {
    crate::role::Launched::load(&run_dir.join(ROLE_FILE))?.config()
}

/// What holds the run directory `dir`.
pub enum RunHold {
    /// Not a run directory (no marker).
    NotARun,
    /// A live run, named.
    Live(String),
    /// No run lives: held by the caller (as a run holds it, so that none
    /// starts in it) while this file is open.
    Ended(std::fs::File),
}

/// Holds the run directory `dir` if no run lives in it.
pub fn hold_run_dir(dir: &Path) -> std::io::Result<RunHold> {
    let marker = dir.join(RUN_MARKER);
    let lock = match std::fs::File::open(&marker) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RunHold::NotARun),
        Err(e) => return Err(e),
    };
    Ok(match lock_marker(&lock, &marker)? {
        Some(owner) => RunHold::Live(owner),
        None => RunHold::Ended(lock),
    })
}

/// Where a rank's stdout and stderr go.
fn output(r: &RankLaunch) -> std::io::Result<(Stdio, Stdio)> {
    match &r.log {
        Some(f) => {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(f)?;
            Ok((log.try_clone()?.into(), log.into()))
        }
        None => Ok((Stdio::inherit(), Stdio::inherit())),
    }
}

/// Starts every rank on this machine, rank K as node `nodes[K]` (in that
/// host's namespace and cgroup when it is one of `hosts`).
fn run_here(
    r: &RankLaunch,
    role_file: &Path,
    nodes: &[String],
    hosts: &[Host],
) -> Result<i32, LaunchError> {
    let start_us = now_us();
    let mut children: Vec<(u32, Child)> = Vec::new();
    for (rank, node) in nodes.iter().enumerate() {
        let mut cmd = r.program.command(role_file);
        if let Some(h) = hosts.iter().find(|h| &h.name == node) {
            if let Err(e) = h.enter(&mut cmd) {
                stop_all(&mut children);
                return Err(LaunchError::Start {
                    what: format!("cannot start rank {rank} on {node}"),
                    source: e,
                });
            }
            cmd.env(
                "LOCUS_LISTEN",
                std::net::SocketAddr::new(h.addr.into(), 0).to_string(),
            );
        }
        let spawned = output(r).and_then(|(out, err)| {
            cmd.env("LOCUS_RANK", rank.to_string())
                .env("LOCUS_SIZE", r.size.to_string())
                .env("LOCUS_NODE", node)
                // A PMI session of a launcher that started this process
                // (`mpiexec -n 1 locus run -n 4 …`) is not the ranks'.
                .env_remove("PMI_FD")
                // Each rank leads a process group its apps inherit, so
                // stopping a rank stops what it started.
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            // Ranks, and the programs they started, die with the launcher
            // however it dies (kill -9, a closed terminal): never a run
            // going on unwatched (`end_with_launcher`).
            let launcher = std::process::id();
            // SAFETY: die_with_parent makes only async-signal-safe calls.
            unsafe { cmd.pre_exec(move || crate::die_with_parent(crate::LAUNCHER_GONE, launcher)) };
            cmd.spawn()
        });
        match spawned {
            Ok(c) => children.push((rank as u32, c)),
            Err(e) => {
                stop_all(&mut children);
                return Err(LaunchError::Start {
                    what: format!("cannot start rank {rank}"),
                    source: e,
                });
            }
        }
    }
    let leader = r.size - r.rank.servers;
    let mut codes: Vec<Option<i32>> = vec![None; children.len()];
    let mut ended_at: Option<Instant> = None;
    let mut killed = None;
    // Workers that died while the run went on: their servers run their
    // tasks elsewhere, so their exit is not the run's.
    let mut gone = Vec::new();
    // Ranks that did not stop on their own once the run ended (a worker
    // cut off from its server cannot be told to).
    let mut stragglers = Vec::new();
    let interrupted = r.stop_flag();
    let mut exits = Exits::of(children.iter().map(|(_, c)| c));
    loop {
        for (rank, child) in &mut children {
            if codes[*rank as usize].is_none() {
                let asked = child.try_wait();
                if asked.is_err() {
                    // Not ours to reap (any more): its pidfd would wake
                    // every wait; it is asked again at each one.
                    exits.ended(*rank as usize);
                }
                if let Ok(Some(status)) = asked {
                    let code = status.code().unwrap_or(128 + status.signal().unwrap_or(9));
                    codes[*rank as usize] = Some(code);
                    exits.ended(*rank as usize);
                    if *rank < leader && code != 0 && (ended_at.is_none() || code == CUT_OFF_EXIT) {
                        let how = match status.signal() {
                            Some(sig) => format!("was killed by signal {sig}"),
                            None => format!("exited with code {code}"),
                        };
                        // The run goes on without it if it had started
                        // (its leader judges one that had not); one cut
                        // off may see so only after the run's end.
                        say(&format!(
                            "rank {rank} (a worker) on {} {how}",
                            nodes[*rank as usize]
                        ));
                        // SAFETY: a signal to the process group it led: the
                        // apps it started go with it.
                        unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
                        gone.push(*rank as usize);
                        continue;
                    }
                    if let Some(sig) = status.signal() {
                        // It could not say why itself.
                        let why = format!(
                            "rank {rank} ({}) on {} was killed by signal {sig}",
                            role(*rank, leader),
                            nodes[*rank as usize]
                        );
                        say(&why);
                        killed.get_or_insert((ErrorKind::Lost, why));
                    }
                    if code != 0 || *rank == leader {
                        ended_at.get_or_insert_with(Instant::now);
                    }
                }
            }
        }
        if codes.iter().all(Option::is_some) {
            break;
        }
        if interrupted.load(Ordering::Relaxed) {
            eprintln!("locus: {INTERRUPTED}; stopping it");
            stop_told(&mut children);
            killed = Some((ErrorKind::Interrupted, INTERRUPTED.to_string()));
            codes[leader as usize] = Some(130);
            // What a rank saw while being stopped is not the story.
            let _ = std::fs::remove_file(summary_path(&r.rank.run_dir));
            break;
        }
        if ended_at.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            stop_all(&mut children);
            for (rank, child) in &mut children {
                if codes[*rank as usize].is_none() {
                    codes[*rank as usize] = Some(child.wait().map_or(1, |s| s.code().unwrap_or(1)));
                    stragglers.push(*rank as usize);
                }
            }
            break;
        }
        let most = match ended_at {
            Some(t) => STOP_GRACE.saturating_sub(t.elapsed()),
            None => INTERRUPT_CHECK,
        };
        exits.wait(most);
    }
    let leader_code = codes[leader as usize].unwrap_or(1);
    let code = if leader_code != 0 {
        leader_code
    } else {
        for &rank in &stragglers {
            eprintln!(
                "locus: rank {rank} ({}) on {} did not stop within {STOP_GRACE:?} of the run's end; \
                 it was killed",
                role(rank as u32, leader),
                nodes[rank]
            );
        }
        codes
            .iter()
            .enumerate()
            .filter(|(rank, _)| !gone.contains(rank) && !stragglers.contains(rank))
            .find_map(|(_, c)| c.filter(|c| *c != 0))
            .unwrap_or(0)
    };
    if code != 0 {
        // Apps of a failed run must not go on writing.
        stop_all(&mut children);
    }
    if let Some((kind, why)) = killed {
        summarize_stopped(r, nodes, start_us, RunError::new(kind, why));
    }
    Ok(code)
}

/// How a rank told to stop by a signal ends (as SIGTERM's default would):
/// a launcher ending so says the run was stopped from outside.
pub const STOPPED_EXIT: i32 = 128 + libc::SIGTERM;

/// How a rank that lost the run ends (a worker cut off from its server):
/// its server has judged it gone and runs its tasks elsewhere, so a worker
/// ending so, even after the run's end, does not fail the run.
pub const CUT_OFF_EXIT: i32 = 75;

/// The summary of a run whose site launcher ended with `code` before the
/// run's leader wrote one: stopped from outside (`scancel`, a time limit)
/// if its ranks ended as stopped ranks do, else lost with the launcher.
fn launcher_ended(code: i32, launcher: &Path) -> RunError {
    match code {
        STOPPED_EXIT | 130 => RunError::new(ErrorKind::Interrupted, INTERRUPTED),
        _ => RunError::lost(format!(
            "{} ended with code {code} before the run's leader wrote its outcome",
            launcher.display()
        )),
    }
}

/// Writes the summary of a run its site launcher ended (`error`) in place
/// of what a rank wrote while being stopped (workers gone, a server gone:
/// not the story), its ranks where they met — not known for a run stopped
/// before they met.
fn summarize_site_run(r: &RankLaunch, start_us: u64, error: RunError) {
    let _ = std::fs::remove_file(summary_path(&r.rank.run_dir));
    let nodes = match locus_runtime::met(&r.rank.run_dir) {
        Some(entries) => entries.into_iter().map(|e| e.node).collect(),
        None => vec!["(ranks not met)".to_string(); r.size as usize],
    };
    summarize_stopped(r, &nodes, start_us, error);
}

/// Writes the summary of a run whose leader did not live to write it
/// (stopped, or killed), so that the run can be read: its ranks on
/// `nodes`, `error` the cause. Nothing if the leader wrote one.
fn summarize_stopped(r: &RankLaunch, nodes: &[String], start_us: u64, error: RunError) {
    let summary = summary_path(&r.rank.run_dir);
    if summary.exists() {
        return;
    }
    let written = Layout::from_names(r.rank.servers, nodes).map(|layout| RunSummary {
        layout,
        start_us,
        end_us: now_us(),
        error: Some(error.message),
        error_kind: Some(error.kind),
        control: Vec::new(),
        diskless_hosts: Vec::new(),
        wireup: None,
        lost_nodes: Vec::new(),
        workers_gone: Vec::new(),
    });
    if let Ok(s) = written {
        let _ = serde_json::to_vec_pretty(&s).map(|b| std::fs::write(&summary, b));
    }
}

/// Starts the ranks through the site's launcher and waits for it. An
/// interrupted run asks the launcher to stop them (it forwards the signal
/// to every rank on every host), then kills it after a grace period.
fn run_site(
    r: &RankLaunch,
    site: &Site,
    hosts: Option<u32>,
    role_file: &Path,
) -> Result<i32, LaunchError> {
    let mut cmd = site.command(Shape::Tasks(r.size, hosts), &r.program.command(role_file));
    let starting = |source| LaunchError::Start {
        what: format!("starting {}", site.program().display()),
        source,
    };
    let (out, err) = output(r).map_err(starting)?;
    let mut launcher = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(starting)?;
    let start_us = now_us();
    let interrupted = r.stop_flag();
    let exits = Exits::of([&launcher]);
    loop {
        if let Some(status) = launcher.try_wait().map_err(starting)? {
            let code = status.code().unwrap_or(128 + status.signal().unwrap_or(9));
            // The launcher reports the worst of its processes; a worker it
            // lost does not fail a run whose leader finished it.
            let launcher = site.program();
            let summary = RunSummary::load(&r.rank.run_dir);
            if let Ok(s) = &summary {
                if code != 0 && s.error.is_none() {
                    eprintln!(
                        "locus: {} ended with code {code} (a rank it started failed); \
                         the run finished without it",
                        launcher.display()
                    );
                    return Ok(0);
                }
            }
            let stopped = matches!(code, STOPPED_EXIT | 130);
            if stopped || (code != 0 && summary.is_err()) {
                let ended = launcher_ended(code, &launcher);
                eprintln!("locus: {ended}");
                summarize_site_run(r, start_us, ended);
            }
            return Ok(code);
        }
        if interrupted.load(Ordering::Relaxed) {
            eprintln!("locus: {INTERRUPTED}; stopping it");
            // SAFETY: a signal to the launcher we started; it passes it on
            // to every rank it started, on every host.
            unsafe { libc::kill(launcher.id() as i32, libc::SIGTERM) };
            reap(launcher);
            let stopped = RunError::new(ErrorKind::Interrupted, INTERRUPTED);
            summarize_site_run(r, start_us, stopped);
            return Ok(130);
        }
        exits.wait(INTERRUPT_CHECK);
    }
}

/// Waits for a launcher whose processes were told to stop; kills it (and
/// its process group) if it lingers.
fn reap(mut launcher: Child) {
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if !matches!(launcher.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: the group of a launcher we started (it leads its own group).
    unsafe { libc::killpg(launcher.id() as i32, libc::SIGKILL) };
    let _ = launcher.wait();
}

fn role(rank: u32, leader: u32) -> &'static str {
    match rank {
        r if r == leader => "the leading server",
        r if r > leader => "a server",
        _ => "a worker",
    }
}

/// Stops every rank's process group: the rank, if still running, and the
/// apps it started (they are ours: we spawned the ranks).
fn stop_all(children: &mut [(u32, Child)]) {
    // All at once: a rank that sees another go first would report that.
    for (_, c) in children.iter() {
        // SAFETY: a signal to the process group our child leads.
        unsafe { libc::killpg(c.id() as i32, libc::SIGKILL) };
    }
    for (_, c) in children.iter_mut() {
        let _ = c.wait();
    }
}

/// How long ranks told to stop have to record how their tasks ended.
const TOLD_GRACE: Duration = Duration::from_millis(1500);

/// Stops every rank as a job's end does: SIGTERM to each rank (a worker
/// then records its tasks in flight as stopped with the run), and what is
/// left after `TOLD_GRACE`, apps included, killed.
fn stop_told(children: &mut [(u32, Child)]) {
    for (_, c) in children.iter() {
        // SAFETY: a signal to a process we started (not yet reaped).
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    }
    let deadline = Instant::now() + TOLD_GRACE;
    while Instant::now() < deadline
        && children
            .iter_mut()
            .any(|(_, c)| matches!(c.try_wait(), Ok(None)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop_all(children);
}

/// A flag raised by SIGINT or SIGTERM, so that an interrupted `locus run`
/// stops its ranks (in process groups of their own, the terminal's signal
/// does not reach them) and the file system it started.
fn on_interrupt() -> &'static AtomicBool {
    static INTERRUPTED: AtomicBool = AtomicBool::new(false);
    extern "C" fn raise(_: libc::c_int) {
        INTERRUPTED.store(true, Ordering::Relaxed);
    }
    let handler = raise as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
        // A closed terminal stops the run as Ctrl-C does.
        libc::signal(libc::SIGHUP, handler);
    }
    &INTERRUPTED
}

/// Prints `locus: LINE` on stderr in one write: the ranks write there too,
/// and a line written in pieces (as `eprintln!` writes its arguments) can
/// be cut by one of theirs.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("locus: {line}\n").as_bytes());
}
