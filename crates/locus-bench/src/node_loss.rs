//! `locus bench node-loss`: what losing a node mid-run costs. The same
//! two-stage workflow (each task of the first stage writes a file, a task
//! of the second reads it) runs on 8 local nodes, two workers each, with
//! one copy of every file: once undisturbed, once with one node's daemon
//! killed (`kill -9`) when half its tasks are done, so that node's workers
//! leave and the files it held are made again by the tasks that made them.
//! The extra time is set beside that node's share of the work (the
//! undisturbed run's time over the node count), alternating, medians.

use crate::disturbed::{in_turn, launch, DisturbedOpts, Shape};
use crate::report::{median, target};
use crate::workspace::in_scratch;
use anyhow::{bail, Result};
use locus_launch::Program;
use locus_runtime::{record, RunSummary};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NODES: u32 = 8;
const WORKERS_PER_NODE: u32 = 2;
/// The node whose daemon is killed.
const LOST: u32 = 3;

fn script(tasks: u32) -> String {
    format!(
        "app (file o) make(int i) {{ \"sh\" \"-c\" (\"sleep 0.2; seq \" + toString(i) + \" > $0\") o }}\n\
         app (file o) count(file i) {{ \"sh\" \"-c\" \"sleep 0.1; wc -l < $1 > $0\" o i }}\n\
         foreach i in [1:{tasks}] {{\n\
           file p<sprintf(\"/locus/made/p%i\", i)> = make(i);\n\
           file q<sprintf(\"/locus/counted/q%i\", i)> = count(p);\n\
         }}\n"
    )
}

/// One run; with `kill`, node `LOST`'s daemon is killed once half the
/// tasks are recorded. Returns its seconds and its records.
fn run_once(
    program: &Arc<dyn Program>,
    dir: &Path,
    name: &str,
    tasks: u32,
    kill: bool,
) -> Result<(f64, Vec<record::TaskRecord>)> {
    let run_dir = dir.join(name);
    let _ = std::fs::remove_dir_all(&run_dir);
    let killer = kill.then(|| {
        let run_dir = run_dir.clone();
        std::thread::spawn(move || kill_when_half_done(&run_dir, tasks))
    });
    let shape = Shape {
        file: "node_loss.swift",
        script: &script(tasks),
        ranks: NODES * WORKERS_PER_NODE + 1,
        nodes: NODES,
        servers: 1,
    };
    let launched = launch(program, dir, name, &shape);
    if let Some(k) = killer {
        k.join()
            .map_err(|_| anyhow::anyhow!("the killer thread panicked"))??;
    }
    launched?;
    let s = RunSummary::load(&run_dir)?;
    if kill && s.lost_nodes.is_empty() {
        bail!("{name}: the run did not see its node lost");
    }
    let records = record::load(&run_dir)?;
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok((s.end_us.saturating_sub(s.start_us) as f64 / 1e6, records))
}

fn kill_when_half_done(run_dir: &Path, tasks: u32) -> Result<()> {
    let pid_file: PathBuf = run_dir.join(format!("fs/node-{LOST}/daemon.pid"));
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        let done = record::load(run_dir).map_or(0, |r| r.len());
        if done as u32 >= tasks {
            let pid: i32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
            // SAFETY: a signal to a daemon this benchmark's run started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("the run never got half way")
}

pub fn run(o: DisturbedOpts) -> Result<()> {
    in_scratch(o.dir.clone(), "node-loss", o.keep, |root| measure(&o, root))
}

fn measure(o: &DisturbedOpts, root: &Path) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "node-loss: {} iterations of make (sleep 0.2 s, writes a file) then count \
         (sleep 0.1 s, reads it) on {NODES} local nodes × {WORKERS_PER_NODE} workers, \
         one copy of every file; node {LOST}'s daemon killed once half the tasks are \
         done; undisturbed and disturbed runs alternate, medians of {} rounds",
        o.tasks, o.rounds
    );
    let (calm, lost) = in_turn(o.rounds, |name, kill| {
        run_once(&o.program, root, name, o.tasks, kill)
    })?;
    let count = |of: fn(&record::TaskRecord) -> bool| -> Vec<f64> {
        let runs = lost.iter().map(|(_, records)| records);
        runs.map(|r| r.iter().filter(|t| of(t)).count() as f64)
            .collect()
    };
    let (remade, stopped) = (count(|r| r.remade), count(record::TaskRecord::stopped));
    let base: Vec<f64> = calm.iter().map(|(secs, _)| *secs).collect();
    let lost: Vec<f64> = lost.iter().map(|(secs, _)| *secs).collect();
    let (base, lost) = (median(base), median(lost));
    let share = base / f64::from(NODES);
    let extra = lost - base;
    println!("undisturbed run             {base:>8.3} s");
    println!("node {LOST} lost mid-run         {lost:>8.3} s");
    println!(
        "extra time                  {extra:>8.3} s = {:.2} × the node's share of the work ({share:.3} s)",
        extra / share
    );
    println!(
        "tasks run again: {} made lost files again, {} stopped by the loss (medians)",
        median(remade),
        median(stopped)
    );
    target(
        &format!(
            "losing one node costs < 2 × its share of the work ({:.2}×)",
            extra / share
        ),
        extra < 2.0 * share,
    );
    Ok(())
}
