//! `locus bench tasks`: leaf-task throughput of `locus run` with one server
//! and two workers. No-op builtin tasks (`sleep(0.0)`, a worker task in
//! Swift/T) beside the engine alone running as many control statements;
//! `app` tasks running `/bin/true` beside raw `posix_spawn` from two threads;
//! and control work (a large `foreach`, recursive composite calls) with
//! two servers beside one, all in the same run.

use crate::disturbed::{launch, Shape};
use crate::report::{header, median, row, target};
use anyhow::Result;
use locus_launch::Program;
use locus_runtime::RunSummary;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

pub struct TasksOpts {
    pub program: Arc<dyn Program>,
    pub builtin: u32,
    pub apps: u32,
    /// `fib(n)` by recursive composite calls, for control work.
    pub fib: u32,
    pub rounds: u32,
}

/// Composite calls `fib(n)` makes (itself included).
fn fib_calls(n: u32) -> f64 {
    let (mut a, mut b) = (1.0, 1.0);
    for _ in 1..n {
        (a, b) = (b, a + b + 1.0);
    }
    b
}

/// Runs `script` with `servers` servers and 2 workers; returns the seconds
/// from the engine's start to its end, as the leader recorded them.
pub(crate) fn timed_run(
    program: &Arc<dyn Program>,
    dir: &Path,
    name: &str,
    script: &str,
    servers: u32,
) -> Result<f64> {
    let (secs, run_dir) = kept_run(program, dir, name, script, servers)?;
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(secs)
}

/// `timed_run`, its run directory (records) kept.
fn kept_run(
    program: &Arc<dyn Program>,
    dir: &Path,
    name: &str,
    script: &str,
    servers: u32,
) -> Result<(f64, std::path::PathBuf)> {
    let _ = std::fs::remove_dir_all(dir.join(name));
    let file = format!("{name}.swift");
    let shape = Shape {
        file: &file,
        script,
        ranks: 2 + servers,
        nodes: 1,
        servers,
    };
    let run_dir = launch(program, dir, name, &shape)?;
    let s = RunSummary::load(&run_dir)?;
    Ok((s.end_us.saturating_sub(s.start_us) as f64 / 1e6, run_dir))
}

/// CPU seconds (user + system) of this process, or of its children that
/// ended (and theirs).
fn cpu_s(who: libc::c_int) -> f64 {
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills `ru`.
    unsafe { libc::getrusage(who, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(ru.ru_utime) + s(ru.ru_stime)
}

/// Microseconds of CPU per app task spent beside the app (the run's ranks
/// and daemons), and in the app itself (its records' CPU time).
fn app_cpu(program: &Arc<dyn Program>, dir: &Path, script: &str, n: u32) -> Result<(f64, f64)> {
    let before = cpu_s(libc::RUSAGE_CHILDREN);
    let (_, run_dir) = kept_run(program, dir, "apps", script, 1)?;
    let all = cpu_s(libc::RUSAGE_CHILDREN) - before;
    let apps = locus_runtime::record::load(&run_dir)?
        .iter()
        .map(|r| r.cpu_us)
        .sum::<u64>() as f64
        / 1e6;
    let _ = std::fs::remove_dir_all(&run_dir);
    let per = |s: f64| s * 1e6 / f64::from(n);
    Ok((per(all - apps), per(apps)))
}

/// The same for raw spawns: the spawning threads, and `/bin/true`.
fn raw_cpu(n: u32) -> Result<(f64, f64)> {
    let (me, children) = (cpu_s(libc::RUSAGE_SELF), cpu_s(libc::RUSAGE_CHILDREN));
    raw_spawns(n)?;
    let per = |s: f64| s * 1e6 / f64::from(n);
    Ok((
        per(cpu_s(libc::RUSAGE_SELF) - me),
        per(cpu_s(libc::RUSAGE_CHILDREN) - children),
    ))
}

/// `/bin/true` `n` times from two threads, as two workers would (std's
/// `Command` spawns with `posix_spawn` when, as here, nothing runs between
/// fork and exec).
fn raw_spawns(n: u32) -> Result<f64> {
    let t = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|i| {
            std::thread::spawn(move || -> std::io::Result<()> {
                for _ in 0..(n / 2 + i * (n % 2)) {
                    Command::new("/bin/true").status()?;
                }
                Ok(())
            })
        })
        .collect();
    for th in threads {
        th.join()
            .map_err(|_| anyhow::anyhow!("spawn thread panicked"))??;
    }
    Ok(t.elapsed().as_secs_f64())
}

pub fn run(o: TasksOpts) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "tasks: locus run with 2 workers and 1 server (2 for the control rows); {} builtin tasks, {} app tasks, fib({}); median of {} rounds after a warm-up round",
        o.builtin, o.apps, o.fib, o.rounds
    );
    let dir = crate::workspace::default_root("tasks");
    std::fs::create_dir_all(&dir)?;
    let builtin = format!(
        "import sys;\nforeach i in [1:{}] {{ sleep(0.0); }}\n",
        o.builtin
    );
    let control = format!("foreach i in [1:{}] {{ int x = i + 1; }}\n", o.builtin);
    let apps = format!(
        "app (void o) t() {{ \"/bin/true\" }}\nforeach i in [1:{}] {{ t(); }}\n",
        o.apps
    );
    let fib = format!(
        "(int o) fib(int n) {{ if (n < 2) {{ o = n; }} else {{ o = fib(n - 1) + fib(n - 2); }} }}\ntrace(fib({}));\n",
        o.fib
    );
    // One untimed round first: on a VM that hands free memory back to its
    // host, the first run after a pause pays for touching it again (see
    // docs/benchmarks.md), which is not what is measured here.
    let runs = [
        ("builtin", &builtin, 1),
        ("control", &control, 1),
        ("apps", &apps, 1),
        ("control", &control, 2),
        ("fib", &fib, 1),
        ("fib", &fib, 2),
    ];
    for (name, script, servers) in runs {
        timed_run(&o.program, &dir, name, script, servers)?;
    }
    // Rates per round: the runs above in order, then raw posix_spawn.
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); runs.len() + 1];
    for _ in 0..o.rounds.max(1) {
        for (i, (name, script, servers)) in runs.iter().enumerate() {
            let n = match *name {
                "apps" => f64::from(o.apps),
                "fib" => fib_calls(o.fib),
                _ => f64::from(o.builtin),
            };
            rates[i].push(n / timed_run(&o.program, &dir, name, script, *servers)?);
        }
        rates[runs.len()].push(f64::from(o.apps) / raw_spawns(o.apps)?);
    }
    // Where the CPU goes, one more run each (rates are not taken from it).
    let (beside, app) = app_cpu(&o.program, &dir, &apps, o.apps)?;
    let (spawner, raw_app) = raw_cpu(o.apps)?;
    let _ = std::fs::remove_dir_all(&dir);
    let m: Vec<f64> = rates.into_iter().map(median).collect();
    let (b, c, a, c2, f1, f2, r) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
    header("tasks/s", "baseline");
    row("builtin leaf tasks (vs engine alone)", b, c);
    row("app /bin/true (vs raw posix_spawn)", a, r);
    row("foreach iterations, 2 servers (vs 1)", c2, c);
    row(&format!("fib({}) calls, 2 servers (vs 1)", o.fib), f2, f1);
    println!(
        "CPU per app task: {beside:.0} us beside the app in the run's ranks and daemons, \
         {spawner:.0} us in the raw spawner; the app itself {app:.0} us (raw: {raw_app:.0} us)"
    );
    target(
        &format!("≥ 50,000 no-op builtin leaf tasks/s ({b:.0})"),
        b >= 50_000.0,
    );
    target(
        &format!("app tasks ≥ 90% of raw posix_spawn ({:.0}%)", 100.0 * a / r),
        a >= 0.9 * r,
    );
    Ok(())
}
