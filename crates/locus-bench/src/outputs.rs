//! `locus bench outputs`: app tasks that each write and register 1, 10 or
//! 100 small Locus outputs, beside the same tasks writing host files and
//! beside the same files written by the client library directly (two
//! writers, as the run has two workers), all in one run.

use crate::report::{header, median, row, target};
use crate::tasks::timed_run;
use crate::workspace::{default_root, Workspace};
use anyhow::Result;
use locus_launch::{Daemons, Program};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

pub struct OutputsOpts {
    pub program: Arc<dyn Program>,
    pub daemons: Daemons,
    /// Files written per configuration and round.
    pub files: u32,
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
}

/// Outputs per task in each configuration.
const PER_TASK: [u32; 3] = [1, 10, 100];

/// A script of `files / per_task` tasks, each an app writing `per_task`
/// small files under `dir` (a Locus or a host directory).
fn script(dir: &str, per_task: u32, files: u32) -> String {
    let outs: Vec<String> = (0..per_task).map(|k| format!("file o{k}")).collect();
    let args: Vec<String> = (0..per_task).map(|k| format!("o{k}")).collect();
    let mut s = format!(
        "app ({}) w(int i) {{ \"sh\" \"-c\" \"i=$1; shift; for f; do echo $i > $f; done\" \"w\" i {} }}\n",
        outs.join(", "),
        args.join(" ")
    );
    let _ = writeln!(s, "foreach i in [1:{}] {{", files / per_task);
    let mapped: Vec<String> = (0..per_task)
        .map(|k| format!("file f{k}<sprintf(\"{dir}/t%i/f{k}\", i)>"))
        .collect();
    let bound: Vec<String> = (0..per_task).map(|k| format!("f{k}")).collect();
    let _ = writeln!(s, "  {};", mapped.join("; "));
    let _ = writeln!(s, "  {} = w(i);\n}}", paren(&bound));
    s
}

fn paren(names: &[String]) -> String {
    match names {
        [one] => one.clone(),
        _ => format!("({})", names.join(", ")),
    }
}

/// Seconds for two writers to `put` `files` small files through the client
/// library, `per_task` per directory as the tasks lay them out.
fn library_puts(ws: &Workspace, round: u32, per_task: u32, files: u32) -> Result<f64> {
    let client = ws.client(0)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let t = Instant::now();
    rt.block_on(async {
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let c = client.clone();
                tokio::spawn(async move {
                    for i in (1 + w..=files / per_task).step_by(2) {
                        for k in 0..per_task {
                            let path = format!("/lib{round}-{per_task}/t{i}/f{k}");
                            c.put(&path, format!("{i}\n").as_bytes()).await?;
                        }
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for w in writers {
            w.await??;
        }
        anyhow::Ok(())
    })?;
    Ok(t.elapsed().as_secs_f64())
}

pub fn run(o: OutputsOpts) -> Result<()> {
    if o.files < 100 {
        anyhow::bail!(
            "--files must be at least 100 (one task writes 100 in the largest configuration)"
        );
    }
    let root = o.dir.clone().unwrap_or_else(|| default_root("outputs"));
    let ws = Workspace::start(&root, 1, &o.daemons, o.keep)?;
    println!("{}", crate::machine::describe());
    println!(
        "outputs: {} small files per configuration, written by app tasks of locus run \
         (2 workers, 1 server, its own file system) 1, 10 or 100 per task; \
         baselines: the same tasks writing host files, and two writers putting \
         the files through the client library; median of {} rounds after a warm-up round",
        o.files, o.rounds
    );
    let scripts = ws.raw_dir("scripts")?;
    let host = ws.raw_dir("host")?;
    // Per configuration: run on Locus, run on host files, library puts.
    let mut rates = vec![[Vec::new(), Vec::new(), Vec::new()]; PER_TASK.len()];
    for round in 0..=o.rounds.max(1) {
        for (c, &per) in PER_TASK.iter().enumerate() {
            let files = o.files - o.files % per;
            let h = host.join(format!("r{round}-{per}"));
            let run = |name: String, dir: &str| {
                timed_run(&o.program, &scripts, &name, &script(dir, per, files), 1)
            };
            let (locus_run, host_run) = (
                || run(format!("locus{per}"), "/locus/out"),
                || run(format!("host{per}"), &h.display().to_string()),
            );
            // Taking turns at going first: the host file system's create
            // rate drifts within a run (see `bench replicas`).
            let (locus, on_host) = match round % 2 {
                0 => (locus_run()?, host_run()?),
                _ => {
                    let on_host = host_run()?;
                    (locus_run()?, on_host)
                }
            };
            let _ = std::fs::remove_dir_all(&h);
            let lib = library_puts(&ws, round, per, files)?;
            if round > 0 {
                let f = f64::from(files);
                rates[c][0].push(f / locus);
                rates[c][1].push(f / on_host);
                rates[c][2].push(f / lib);
            }
        }
    }
    header("files/s", "baseline");
    let mut one = (0.0, 0.0);
    for (&per, [locus, on_host, lib]) in PER_TASK.iter().zip(rates) {
        let (l, h, c) = (median(locus), median(on_host), median(lib));
        row(&format!("{per} per task (vs host files)"), l, h);
        row(&format!("{per} per task (vs client library)"), l, c);
        if per == 1 {
            one = (l, h);
        }
    }
    target(
        &format!(
            "one Locus output per task ≥ 70% of host files ({:.0}%)",
            100.0 * one.0 / one.1
        ),
        one.0 >= 0.7 * one.1,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_check() {
        for per in PER_TASK {
            let src = locus_lang::Source::new("outputs.swift", script("/locus/out", per, 200));
            if let Err(d) = locus_lang::compile(&src) {
                panic!("{per} per task: {d:?}");
            }
        }
    }
}
