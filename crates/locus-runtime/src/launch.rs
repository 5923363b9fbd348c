//! `locus run` on one machine: starts a file-system daemon per emulated
//! node (unless the run uses an existing cluster), then every rank as a
//! process of the same binary with the launcher variables a site launcher
//! would set, waits for them, and stops what it started.

use crate::layout::Layout;
use crate::rank::{summary_path, RunSummary};
use crate::record::{now_us, records_dir};
use crate::rendezvous::ranks_dir;
use locus_fs::launch::{self, Launch};
use locus_fs::{ClusterSpec, Durability, Placement};
use std::ffi::OsString;
use std::net::IpAddr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the other ranks get to stop on their own once the leader is
/// done or a rank failed.
const STOP_GRACE: Duration = Duration::from_secs(2);

pub struct LocalRun {
    /// The `locus` binary.
    pub exe: PathBuf,
    pub size: u32,
    pub servers: u32,
    /// Emulated nodes (ignored with an existing cluster).
    pub nodes: u32,
    pub run_dir: PathBuf,
    /// An existing file-system cluster; otherwise one is started in
    /// `RUN_DIR/fs` and stopped at the end.
    pub fs_dir: Option<PathBuf>,
    /// The `locus run` arguments every rank gets (options, script, its args).
    pub rank_args: Vec<OsString>,
    /// Leave the file system the run started running when it ends (for
    /// inspection and later runs: `--fs RUN_DIR/fs`).
    pub keep_fs: bool,
    /// The emulated machines to start ranks on, instead of emulating nodes
    /// by name only; needs `fs_dir`.
    pub hosts: Option<Vec<Host>>,
}

/// An emulated machine: ranks on it run in its network namespace and its
/// servers listen on its address.
#[derive(Debug, Clone)]
pub struct Host {
    pub name: String,
    pub netns: String,
    pub addr: IpAddr,
    /// The cgroup limiting the host's CPU, if any.
    pub cgroup: Option<std::path::PathBuf>,
}

/// Runs all ranks; returns the exit code of the run.
pub fn launch_local(r: &LocalRun) -> Result<i32, String> {
    if r.servers == 0 || r.servers >= r.size {
        return Err(format!(
            "-n {} cannot hold {} server(s) and at least one worker",
            r.size, r.servers
        ));
    }
    let dir_err = |e: std::io::Error| format!("run directory {}: {e}", r.run_dir.display());
    claim_run_dir(&r.run_dir).map_err(dir_err)?;
    for stale in [ranks_dir(&r.run_dir), records_dir(&r.run_dir)] {
        if stale.exists() {
            std::fs::remove_dir_all(&stale).map_err(dir_err)?;
        }
    }
    match std::fs::remove_file(summary_path(&r.run_dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(dir_err(e)),
        _ => {}
    }
    if r.hosts.is_some() && r.fs_dir.is_none() {
        return Err("ranks on emulated hosts need the hosts' file system".into());
    }
    let fs_dir = r.fs_dir.clone().unwrap_or_else(|| r.run_dir.join("fs"));
    let spec = match &r.fs_dir {
        Some(d) => ClusterSpec::load(d).map_err(|e| e.to_string())?,
        None => {
            if fs_dir.exists() {
                // An earlier run's, possibly kept running (--keep-fs).
                let _ = launch::stop(&fs_dir, false);
                std::fs::remove_dir_all(&fs_dir).map_err(dir_err)?;
            }
            Launch {
                exe: r.exe.clone(),
                durability: Durability::Group,
            }
            .create(&fs_dir, r.nodes, Placement::Local)
            .map_err(|e| format!("starting the run's file system: {e}"))?
        }
    };
    let names: Vec<String> = match &r.hosts {
        Some(hosts) => hosts.iter().map(|h| h.name.clone()).collect(),
        None => spec.nodes.iter().map(|n| n.name.clone()).collect(),
    };
    let rank_nodes = Layout::emulated_names(r.size, r.servers, &names);
    let result = run_ranks(r, &fs_dir, &rank_nodes);
    if r.fs_dir.is_none() && !r.keep_fs {
        let _ = launch::stop(&fs_dir, false);
    }
    result
}

/// Marks a directory as a run directory: what a run replaces in it on reuse
/// (`fs`, `ranks`, `records`) is only ever its own.
const RUN_MARKER: &str = "locus-run";

/// Makes `dir` this run's directory: a new or empty directory (made private),
/// or an earlier run's; anything else is refused rather than overwritten.
fn claim_run_dir(dir: &Path) -> std::io::Result<()> {
    let fresh = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e),
    };
    locus_fs::private_dir::create(dir)?;
    if fresh {
        return std::fs::write(dir.join(RUN_MARKER), "");
    }
    if !dir.join(RUN_MARKER).exists() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "not empty and not a Locus run directory; refusing to use it (a run replaces \
             fs/, ranks/ and records/ in its directory): give a new directory",
        ));
    }
    Ok(())
}

fn run_ranks(r: &LocalRun, fs_dir: &Path, nodes: &[String]) -> Result<i32, String> {
    let start_us = now_us();
    let mut children: Vec<(u32, Child)> = Vec::new();
    for (rank, node) in nodes.iter().enumerate() {
        let mut cmd = Command::new(&r.exe);
        if let Some(h) = r.hosts.iter().flatten().find(|h| &h.name == node) {
            let entered =
                locus_fs::netns::enter(&mut cmd, &h.netns).and_then(|_| match &h.cgroup {
                    Some(cg) => locus_fs::cgroup::join(&mut cmd, cg),
                    None => Ok(()),
                });
            if let Err(e) = entered {
                stop_all(&mut children);
                return Err(format!("cannot start rank {rank} on {node}: {e}"));
            }
            cmd.env(
                "LOCUS_LISTEN",
                std::net::SocketAddr::new(h.addr, 0).to_string(),
            );
        }
        let spawned = cmd
            .arg("run")
            .arg("--run-dir")
            .arg(&r.run_dir)
            .arg("--fs")
            .arg(fs_dir)
            .args(&r.rank_args)
            .env("LOCUS_RANK", rank.to_string())
            .env("LOCUS_SIZE", r.size.to_string())
            .env("LOCUS_NODE", node)
            // Each rank leads a process group its apps inherit, so stopping
            // a rank stops what it started.
            .process_group(0)
            .stdin(Stdio::null())
            .spawn();
        match spawned {
            Ok(c) => children.push((rank as u32, c)),
            Err(e) => {
                stop_all(&mut children);
                return Err(format!("cannot start rank {rank}: {e}"));
            }
        }
    }
    let leader = r.size - r.servers;
    let mut codes: Vec<Option<i32>> = vec![None; children.len()];
    let mut ended_at: Option<Instant> = None;
    let mut killed = None;
    let interrupted = on_interrupt();
    loop {
        for (rank, child) in &mut children {
            if codes[*rank as usize].is_none() {
                if let Ok(Some(status)) = child.try_wait() {
                    let code = status.code().unwrap_or(128 + status.signal().unwrap_or(9));
                    codes[*rank as usize] = Some(code);
                    if let Some(sig) = status.signal() {
                        // It could not say why itself.
                        let why = format!(
                            "rank {rank} ({}) on {} was killed by signal {sig}",
                            role(*rank, leader),
                            nodes[*rank as usize]
                        );
                        eprintln!("locus: {why}");
                        killed.get_or_insert(why);
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
            let why = "the run was interrupted (SIGINT or SIGTERM)".to_string();
            eprintln!("locus: {why}; stopping it");
            stop_all(&mut children);
            killed = Some(why);
            codes[leader as usize] = Some(130);
            // What a rank saw while being stopped is not the story.
            let _ = std::fs::remove_file(summary_path(&r.run_dir));
            break;
        }
        if ended_at.is_some_and(|t| t.elapsed() > STOP_GRACE) {
            stop_all(&mut children);
            for (rank, child) in &mut children {
                if codes[*rank as usize].is_none() {
                    codes[*rank as usize] = Some(child.wait().map_or(1, |s| s.code().unwrap_or(1)));
                }
            }
            break;
        }
        // Each pass asks every rank: keep that under ~5% of a core.
        std::thread::sleep(Duration::from_micros(2_000.max(20 * children.len() as u64)));
    }
    let leader_code = codes[leader as usize].unwrap_or(1);
    let code = if leader_code != 0 {
        leader_code
    } else {
        codes
            .iter()
            .flatten()
            .copied()
            .find(|c| *c != 0)
            .unwrap_or(0)
    };
    if code != 0 {
        // Apps of a failed run must not go on writing.
        stop_all(&mut children);
    }
    let summary = summary_path(&r.run_dir);
    if let (Some(why), false) = (killed, summary.exists()) {
        // The leader did not live to write the run's summary.
        let written = Layout::from_names(r.servers, nodes).map(|layout| RunSummary {
            layout,
            start_us,
            end_us: now_us(),
            error: Some(why),
            control: Vec::new(),
            diskless_hosts: Vec::new(),
        });
        if let Ok(s) = written {
            let _ = serde_json::to_vec_pretty(&s).map(|b| std::fs::write(&summary, b));
        }
    }
    Ok(code)
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
    }
    &INTERRUPTED
}
