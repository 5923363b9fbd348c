//! `locus bench runs`: listing many past runs, as `locus runs` does, beside
//! `du -sb` walking the same directories. One real run (ten app tasks with
//! its own file system) is copied into `runs` run directories, each
//! registered in a run index of the benchmark's own.

use crate::disturbed::{launch, Shape};
use crate::report::{header, median, row_precise, target};
use anyhow::{ensure, Result};
use locus_launch::{index, listing, Program};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

pub struct RunsOpts {
    pub program: Arc<dyn Program>,
    pub runs: u32,
    pub rounds: u32,
}

const SCRIPT: &str = "app (file o) w(int i) { \"sh\" \"-c\" \"echo $1 > $0\" o i }\n\
    foreach i in [1:10] { file f<sprintf(\"/locus/r/f%i.txt\", i)> = w(i); }\n";

pub fn run(o: RunsOpts) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "runs: {} past runs (copies of one with 10 app tasks and its own file system) listed \
         as `locus runs` lists them, beside `du -sb` of their directories; median of {} rounds \
         after a warm-up round",
        o.runs, o.rounds
    );
    let dir = crate::workspace::default_root("runs");
    std::fs::create_dir_all(&dir)?;
    let shape = Shape {
        file: "runs.swift",
        script: SCRIPT,
        ranks: 3,
        nodes: 1,
        servers: 1,
    };
    let first = launch(&o.program, &dir, "first", &shape)?;
    let (index_dir, empty) = (dir.join("index"), dir.join("tmp"));
    std::fs::create_dir_all(&empty)?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for i in 0..o.runs {
        let d = dir.join(format!("run-{i}"));
        let copied = Command::new("cp").arg("-a").arg(&first).arg(&d).status()?;
        ensure!(copied.success(), "cp -a {} failed", first.display());
        index::register_in(&index_dir, &d, &dir.join("runs.swift"), u64::from(i))?;
        dirs.push(d);
    }
    let listed = || -> Result<f64> {
        let t = Instant::now();
        let runs = listing::list(listing::indexed_or_made_in(&index_dir, &empty)?);
        let secs = t.elapsed().as_secs_f64();
        ensure!(
            runs.len() == dirs.len(),
            "{} of {} runs listed",
            runs.len(),
            dirs.len()
        );
        ensure!(runs.iter().all(|r| r.tasks == 10 && r.bytes > 0));
        Ok(secs)
    };
    let walked = || -> Result<f64> {
        let t = Instant::now();
        let out = Command::new("du").arg("-sb").args(&dirs).output()?;
        ensure!(out.status.success(), "du failed");
        Ok(t.elapsed().as_secs_f64())
    };
    listed()?;
    walked()?;
    let (mut ours, mut du) = (Vec::new(), Vec::new());
    for _ in 0..o.rounds.max(1) {
        ours.push(listed()?);
        du.push(walked()?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (ours, du) = (median(ours) * 1e3, median(du) * 1e3);
    header("ms", "du -sb");
    row_precise(
        &format!("list {} runs (vs du -sb of them)", o.runs),
        ours,
        du,
    );
    if o.runs >= 1000 {
        target(
            &format!("`locus runs` over 1,000 past runs < 200 ms ({ours:.0} ms)"),
            ours < 200.0,
        );
    }
    Ok(())
}
