//! `locus bench frozen`: what a frozen worker costs a run. Tasks of
//! `sleep 1` run on 8 workers and a server of this node: once undisturbed,
//! once with one worker stopped (`SIGSTOP`, as a process stuck in the
//! kernel or a swapped-out node is) after its first task; the run must
//! notice it within the liveness bound, run its task elsewhere and finish
//! on the other 7. Undisturbed and frozen runs alternate; medians.

use crate::report::{median, target};
use crate::workspace::in_scratch;
use anyhow::{bail, Result};
use locus_launch::{launch_ranks, On, Program, RankLaunch};
use locus_runtime::{met, record, RankOptions, RunSummary};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct FrozenOpts {
    pub program: Arc<dyn Program>,
    /// `sleep 1` tasks per run.
    pub tasks: u32,
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
}

const WORKERS: u32 = 8;
/// The worker stopped.
const FROZEN: u32 = 0;

fn script(tasks: u32) -> String {
    format!(
        "app (void v) nap(int i) {{ \"sleep\" \"1\" }}\n\
         foreach i in [1:{tasks}] {{ nap(i); }}\n"
    )
}

/// One run; with `freeze`, worker `FROZEN` is stopped once the run has
/// recorded its first tasks. Its seconds.
fn run_once(
    program: &Arc<dyn Program>,
    dir: &Path,
    name: &str,
    tasks: u32,
    freeze: bool,
) -> Result<f64> {
    let file = dir.join("frozen.swift");
    std::fs::write(&file, script(tasks))?;
    let run_dir = dir.join(name);
    let _ = std::fs::remove_dir_all(&run_dir);
    let log = dir.join(format!("{name}.log"));
    let freezer = freeze.then(|| {
        let run_dir = run_dir.clone();
        std::thread::spawn(move || freeze_after_first_tasks(&run_dir))
    });
    let run = RankLaunch {
        program: program.clone(),
        size: WORKERS + 1,
        on: On::This { nodes: 1 },
        rank: RankOptions::new(file, run_dir.clone()),
        keep_fs: false,
        replicas: 1,
        log: Some(log.clone()),
        fresh: true,
    };
    let code = launch_ranks(&run, |_| Ok(()), |_| Ok(())).map_err(anyhow::Error::msg)?;
    let frozen = match freezer {
        Some(f) => Some(
            f.join()
                .map_err(|_| anyhow::anyhow!("the freezer thread panicked"))??,
        ),
        None => None,
    };
    if code != 0 {
        bail!(
            "{name}: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    let s = RunSummary::load(&run_dir)?;
    let done = record::load(&run_dir)?
        .iter()
        .filter(|r| r.error.is_none() && !r.stopped())
        .count();
    if done < tasks as usize {
        bail!("{name}: {done} of {tasks} tasks done");
    }
    if let Some(pid) = frozen {
        // The launcher ends the stopped worker with its run; if it is still
        // there, it is this benchmark's to end.
        // SAFETY: signals to a rank this benchmark's run started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGCONT);
        }
    }
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(s.end_us.saturating_sub(s.start_us) as f64 / 1e6)
}

/// Stops worker `FROZEN` once the run has recorded a task of each worker
/// (every worker is busy, the frozen one with its second task); its pid.
fn freeze_after_first_tasks(run_dir: &Path) -> Result<i32> {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let done = record::load(run_dir).map_or(0, |r| r.len());
        let entries = met(run_dir).unwrap_or_default();
        if let Some(e) = entries.iter().find(|e| e.rank == FROZEN) {
            if done as u32 >= WORKERS {
                let pid = i32::try_from(e.pid)?;
                // SAFETY: a signal to a rank this benchmark's run started.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                return Ok(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("the run never recorded its first tasks")
}

pub fn run(o: FrozenOpts) -> Result<()> {
    in_scratch(o.dir.clone(), "frozen", o.keep, |root| measure(&o, root))
}

fn measure(o: &FrozenOpts, root: &Path) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "frozen: {} app tasks of `sleep 1` on {WORKERS} workers and a server of this node; \
         worker {FROZEN} stopped (SIGSTOP) once each worker finished a task; undisturbed \
         and frozen runs alternate, medians of {} rounds",
        o.tasks, o.rounds
    );
    let (mut base, mut frozen) = (vec![], vec![]);
    for round in 0..o.rounds.max(1) {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for freeze in order {
            let name = format!("r{round}-{}", if freeze { "frozen" } else { "base" });
            let secs = run_once(&o.program, root, &name, o.tasks, freeze)?;
            match freeze {
                true => frozen.push(secs),
                false => base.push(secs),
            }
        }
    }
    let (base, frozen) = (median(base), median(frozen));
    let ratio = frozen / base;
    let ideal = base * f64::from(WORKERS) / f64::from(WORKERS - 1);
    println!("undisturbed run             {base:>8.3} s");
    println!("one worker of {WORKERS} frozen       {frozen:>8.3} s  ({ratio:.2}×)");
    println!(
        "ideal with {} workers        {ideal:>8.3} s  ({:.2}×)",
        WORKERS - 1,
        ideal / base
    );
    target(
        &format!("a run with one frozen worker of {WORKERS} takes ≤ 1.2× its time ({ratio:.2}×)"),
        ratio <= 1.2,
    );
    Ok(())
}
