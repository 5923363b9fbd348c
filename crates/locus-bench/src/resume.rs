//! `locus bench resume`: what resuming a finished run costs beside the run
//! itself. App tasks each write one Locus file in a run that keeps its own
//! file system; the same run is then resumed (`--resume`) and does no
//! task. Both are timed whole, as a user waits for them (ranks and file
//! system started and stopped), alternating fresh runs and resumes.

use crate::report::{header, median, row_precise, target};
use crate::workspace::in_scratch;
use anyhow::{bail, Result};
use locus_launch::{launch_ranks, On, Program, RankLaunch};
use locus_runtime::{record, RankOptions, ResumeBy};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub struct ResumeOpts {
    pub program: Arc<dyn Program>,
    /// App tasks per run.
    pub tasks: u32,
    pub rounds: u32,
    pub dir: Option<std::path::PathBuf>,
    pub keep: bool,
}

fn script(tasks: u32) -> String {
    format!(
        "app (file o) w(int i) {{ \"sh\" \"-c\" \"echo $1 > $0\" o i }}\n\
         foreach i in [1:{tasks}] {{\n\
           file f<sprintf(\"/locus/r/f%i.txt\", i)> = w(i);\n\
         }}\n"
    )
}

/// One run of the script in `run_dir` (resumed if `resume`): its seconds,
/// and how many of its tasks an earlier run had done.
fn timed(
    program: &Arc<dyn Program>,
    dir: &Path,
    run_dir: &Path,
    resume: bool,
) -> Result<(f64, usize)> {
    let file = dir.join("resume.swift");
    let log = dir.join("run.log");
    let rank = RankOptions {
        quiet_apps: true,
        resume: resume.then_some(ResumeBy::Versions),
        ..RankOptions::new(file, run_dir.to_path_buf())
    };
    let run = RankLaunch {
        keep_fs: true,
        log: Some(log.clone()),
        // Each measurement replaces the last.
        fresh: true,
        ..RankLaunch::new(program.clone(), 3, On::This { nodes: 1 }, rank)
    };
    let start = Instant::now();
    let code = launch_ranks(&run, |_| Ok(()), |_| Ok(()))?;
    let secs = start.elapsed().as_secs_f64();
    if code != 0 {
        bail!("{}", std::fs::read_to_string(&log).unwrap_or_default());
    }
    let resumed = record::load(run_dir)?.iter().filter(|r| r.resumed).count();
    Ok((secs, resumed))
}

pub fn run(o: ResumeOpts) -> Result<()> {
    in_scratch(o.dir.clone(), "resume", o.keep, |root| {
        let measured = measure(&o, root);
        // The file systems the runs kept.
        for round in 0..o.rounds.max(1) {
            let fs = root.join(format!("r{round}/fs"));
            if fs.exists() {
                let _ = locus_launch::stop(&fs, false);
            }
        }
        measured
    })
}

fn measure(o: &ResumeOpts, root: &Path) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "resume: {} app tasks each writing one Locus file (locus run, 2 workers, 1 server, \
         its own file system kept), then the same run resumed; each timed whole; \
         medians of {} rounds",
        o.tasks, o.rounds
    );
    std::fs::write(root.join("resume.swift"), script(o.tasks))?;
    let (mut runs, mut resumes) = (Vec::new(), Vec::new());
    for round in 0..o.rounds.max(1) {
        let run_dir = root.join(format!("r{round}"));
        let (secs, _) = timed(&o.program, root, &run_dir, false)?;
        runs.push(secs);
        let (again, resumed) = timed(&o.program, root, &run_dir, true)?;
        if resumed != o.tasks as usize {
            bail!(
                "the resumed run did {} of {} tasks again",
                o.tasks as usize - resumed,
                o.tasks
            );
        }
        resumes.push(again);
    }
    let (run, resume) = (median(runs), median(resumes));
    header("seconds", "the run");
    row_precise("resuming the finished run", resume, run);
    target(
        &format!(
            "resuming takes < 5% of the run ({:.1}%)",
            100.0 * resume / run
        ),
        resume < 0.05 * run,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_checks() {
        let src = locus_lang::Source::new("resume.swift", script(10));
        if let Err(d) = locus_lang::compile(&src) {
            panic!("{d:?}");
        }
    }
}
