//! `locus bench par`: parallel tasks (`@par`). What gathering workers for
//! a job costs: a chain of `@par=8` jobs on an idle run of 16 workers (4
//! nodes), beside the same job started by `mpiexec` alone in the same
//! bench; and how busy reservation leaves the workers: a workflow of
//! parallel simulations mixed with small tasks, beside the same work as
//! single tasks (no gathering), by the report's busy share.

use crate::disturbed::{launch, Shape};
use crate::report::{header, median, row, row_precise, target};
use anyhow::{bail, Result};
use locus_launch::Program;
use locus_runtime::report::RunView;
use locus_runtime::RunSummary;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

pub struct ParOpts {
    pub program: Arc<dyn Program>,
    /// Jobs in the chain.
    pub jobs: u32,
    pub rounds: u32,
}

/// What each rank of a job runs: rank 0 writes the job's output.
const RANK: &str = r#"[ "$PMI_RANK" = 0 ] && echo done > "$0"; true"#;

/// 16 workers (and the server) on 4 nodes.
fn shape<'a>(file: &'a str, script: &'a str) -> Shape<'a> {
    Shape {
        file,
        script,
        ranks: 17,
        nodes: 4,
        servers: 1,
    }
}

/// A chain of `n` jobs of 8 ranks, each started when the one before ended.
fn chain(n: u32) -> String {
    format!(
        r#"app (file o) job(file i) {{ "sh" "-c" {RANK:?} o i }}
app (file o) first() {{ "touch" o }}
(file o) chain(int k) {{
  if (k == 0) {{
    o = first();
  }} else {{
    file before = chain(k - 1);
    file out <sprintf("/locus/chain/%i", k)> = @par=8 job(before);
    o = out;
  }}
}}
file last = chain({n});
"#
    )
}

/// Seconds per job in a chain of `n`, and the median of its jobs' own
/// durations (as their records say).
fn chained(program: &Arc<dyn Program>, dir: &Path, n: u32) -> Result<(f64, f64)> {
    let script = chain(n);
    let run_dir = launch(program, dir, "chain", &shape("chain.swift", &script))?;
    let s = RunSummary::load(&run_dir)?;
    let recs = locus_runtime::record::load(&run_dir)?;
    let jobs: Vec<f64> = (recs.iter())
        .filter(|r| !r.job.is_empty())
        .map(|r| r.end_us.saturating_sub(r.start_us) as f64 / 1e6)
        .collect();
    if jobs.len() != n as usize {
        bail!("{} of {n} jobs recorded", jobs.len());
    }
    let first = recs
        .iter()
        .filter(|r| !r.job.is_empty())
        .map(|r| r.start_us)
        .min();
    let last = recs.iter().map(|r| r.end_us).max();
    let span = match (first, last) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e6,
        _ => s.end_us.saturating_sub(s.start_us) as f64 / 1e6,
    };
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok((span / f64::from(n), median(jobs)))
}

/// `mpiexec -n 8` of what a job's ranks run, and of `true`: seconds each.
fn alone(dir: &Path) -> Result<(f64, f64)> {
    let out = dir.join("alone.out");
    let time = |args: &[&str]| -> Result<f64> {
        let t = Instant::now();
        let status = Command::new("mpiexec").args(args).status()?;
        if !status.success() {
            bail!("mpiexec {args:?}: {status}");
        }
        Ok(t.elapsed().as_secs_f64())
    };
    let job = time(&["-n", "8", "sh", "-c", RANK, out.to_str().unwrap_or("")])?;
    Ok((job, time(&["-n", "8", "true"])?))
}

/// A workflow of `sims` simulations of 4 ranks × `sim_s` seconds among
/// `small` tasks of `small_s` seconds; with `par` off, each simulation is
/// 4 single tasks instead. Its busy share, as the report counts it.
fn busy_share(program: &Arc<dyn Program>, dir: &Path, par: bool) -> Result<f64> {
    let (sims, sim_s, small, small_s) = (8, 1.0, 480, 0.1);
    let sim = match par {
        true => "@par=4 sim(s);".to_string(),
        false => "foreach r in [0:3] { sim(s * 4 + r); }".to_string(),
    };
    let script = format!(
        r#"app (void o) sim(int s) {{ "sleep" "{sim_s}" }}
app (void o) small(int i) {{ "sleep" "{small_s}" }}
foreach i in [0:{last_small}] {{
  if (i %% {every} == 0) {{ int s = i %/ {every}; {sim} }}
  small(i);
}}
"#,
        last_small = small - 1,
        every = small / sims,
    );
    let name = if par { "mixed-par" } else { "mixed-single" };
    let run_dir = launch(
        program,
        dir,
        name,
        &shape(&format!("{name}.swift"), &script),
    )?;
    let view = RunView::load(&run_dir)?;
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(1.0 - view.idle_share())
}

pub fn run(o: ParOpts) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "par: 16 workers and 1 server on 4 emulated nodes; a chain of {} jobs of 8 ranks, \
         beside mpiexec -n 8 alone; median of {} rounds after a warm-up round",
        o.jobs, o.rounds
    );
    let dir = crate::workspace::default_root("par");
    std::fs::create_dir_all(&dir)?;
    chained(&o.program, &dir, 2)?;
    alone(&dir)?;
    let (mut per_job, mut recorded, mut job_alone, mut true_alone) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut busy = (Vec::new(), Vec::new());
    for _ in 0..o.rounds.max(1) {
        let (a, b) = alone(&dir)?;
        job_alone.push(a);
        true_alone.push(b);
        let (per, rec) = chained(&o.program, &dir, o.jobs)?;
        per_job.push(per);
        recorded.push(rec);
        busy.0.push(busy_share(&o.program, &dir, true)?);
        busy.1.push(busy_share(&o.program, &dir, false)?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let ms = |v: Vec<f64>| 1e3 * median(v);
    let (per_job, recorded, job_alone, true_alone) =
        (ms(per_job), ms(recorded), ms(job_alone), ms(true_alone));
    header("ms", "mpiexec alone");
    row_precise("a @par=8 job in a chain", per_job, job_alone);
    row_precise("  its record (worker side)", recorded, job_alone);
    row_precise("mpiexec -n 8 true", true_alone, true_alone);
    let (busy_par, busy_single) = (100.0 * median(busy.0), 100.0 * median(busy.1));
    header("busy %", "single tasks");
    row(
        "simulations @par=4 among small tasks",
        busy_par,
        busy_single,
    );
    let beyond = per_job - job_alone;
    target(
        &format!("gathering 8 workers costs < 10 ms beyond the launcher's start ({beyond:.1} ms)"),
        beyond < 10.0,
    );
    target(
        &format!("workers ≥ 90% busy with parallel tasks among small ones ({busy_par:.1}%)"),
        busy_par >= 90.0,
    );
    Ok(())
}
