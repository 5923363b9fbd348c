//! `locus bench frozen`: what a frozen worker costs a run. Tasks of
//! `sleep 1` run on 8 workers and a server of this node: once undisturbed,
//! once with one worker stopped (`SIGSTOP`, as a process stuck in the
//! kernel or a swapped-out node is) after its first task; the run must
//! notice it within the liveness bound, run its task elsewhere and finish
//! on the other 7. Undisturbed and frozen runs alternate; medians.

use crate::disturbed::{in_turn, launch, DisturbedOpts, Shape};
use crate::report::{median, target};
use crate::workspace::in_scratch;
use anyhow::{bail, Result};
use locus_launch::Program;
use locus_runtime::{met, record, RunSummary};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    let run_dir = dir.join(name);
    let _ = std::fs::remove_dir_all(&run_dir);
    let freezer = freeze.then(|| {
        let run_dir = run_dir.clone();
        std::thread::spawn(move || freeze_after_first_tasks(&run_dir))
    });
    let shape = Shape {
        file: "frozen.swift",
        script: &script(tasks),
        ranks: WORKERS + 1,
        nodes: 1,
        servers: 1,
    };
    let launched = launch(program, dir, name, &shape);
    let frozen = match freezer {
        Some(f) => Some(
            f.join()
                .map_err(|_| anyhow::anyhow!("the freezer thread panicked"))??,
        ),
        None => None,
    };
    if let Some(pid) = frozen {
        // The launcher ends the stopped worker with its run; if it is still
        // there, it is this benchmark's to end.
        // SAFETY: signals to a rank this benchmark's run started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGCONT);
        }
    }
    launched?;
    let s = RunSummary::load(&run_dir)?;
    let done = record::load(&run_dir)?
        .iter()
        .filter(|r| r.error.is_none() && !r.stopped())
        .count();
    if done < tasks as usize {
        bail!("{name}: {done} of {tasks} tasks done");
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

pub fn run(o: DisturbedOpts) -> Result<()> {
    in_scratch(o.dir.clone(), "frozen", o.keep, |root| measure(&o, root))
}

fn measure(o: &DisturbedOpts, root: &Path) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "frozen: {} app tasks of `sleep 1` on {WORKERS} workers and a server of this node; \
         worker {FROZEN} stopped (SIGSTOP) once each worker finished a task; undisturbed \
         and frozen runs alternate, medians of {} rounds",
        o.tasks, o.rounds
    );
    let (base, frozen) = in_turn(o.rounds, |name, freeze| {
        run_once(&o.program, root, name, o.tasks, freeze)
    })?;
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
