//! `locus run --dry-run [--resume]`: the run's control flow without its
//! apps, in a scratch run directory, and what each app call would do.
//! With `--resume` the earlier runs' records of `--run-dir` are copied into
//! it and the run's own file system is started as a resume would, so each
//! call is judged as the resumed run would judge it; nothing in the run
//! directory changes, and no file is written (apps' and builtins' outputs
//! are taken as made).

use anyhow::{bail, Context, Result};
use locus_launch::{launch_ranks, running_pid, Daemons, On, Program, RankLaunch};
use locus_runtime::{load_plan, record, Planned, RankOptions};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Runs `rank` (its `run_dir` the user's, or none) as a dry run with
/// `size` ranks on `nodes` nodes; prints the plan.
pub(crate) fn dry_run(
    program: Arc<dyn Program>,
    mut rank: RankOptions,
    size: u32,
    nodes: u32,
) -> Result<i32> {
    let scratch = locus_launch::new_run_dir().context("cannot make a scratch run directory")?;
    let user_dir = std::mem::replace(&mut rank.run_dir, scratch.clone());
    let mut started_fs = None;
    let result = (|| {
        if rank.resume.is_some() {
            copy_records(&user_dir, &scratch)?;
            // The run's own file system, started as a resume starts it.
            let own = user_dir.join("fs");
            if rank.fs_dir.is_none() && own.join("cluster.json").exists() {
                started_fs = restart(&program, &own)?;
                rank.fs_dir = Some(own);
            }
        }
        rank.dry_run = true;
        let run = RankLaunch::new(program.clone(), size, On::This { nodes }, rank.clone());
        let code = launch_ranks(&run, |_| Ok(()), |_| Ok(()))?;
        let plan = load_plan(&scratch).context("the dry run's plan")?;
        show(&mut std::io::stdout().lock(), &rank, &plan)?;
        Ok(code)
    })();
    if let Some(fs) = started_fs {
        let _ = locus_launch::stop(&fs, false);
    }
    locus_launch::index::forget(&locus_launch::index::run_id(&scratch));
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The earlier runs' records of `from` as `to`'s own (`records/` and the
/// generations in `resume/`).
fn copy_records(from: &Path, to: &Path) -> Result<()> {
    let (records, resume) = (record::records_dir(from), record::resume_dir(from));
    if !records.exists() && !resume.exists() {
        bail!(
            "--resume: {} holds no earlier run's records",
            from.display()
        );
    }
    // A run directory, which the records make non-empty.
    std::fs::File::create(to.join(locus_launch::RUN_MARKER))?;
    for (src, dst) in [
        (records, record::records_dir(to)),
        (resume, record::resume_dir(to)),
    ] {
        let Ok(entries) = std::fs::read_dir(&src) else {
            continue;
        };
        std::fs::create_dir_all(&dst)?;
        for e in entries {
            let e = e?;
            std::fs::copy(e.path(), dst.join(e.file_name()))
                .with_context(|| e.path().display().to_string())?;
        }
    }
    Ok(())
}

/// Starts the stopped daemons of the file system in `dir`; the directory
/// to stop again after, if none ran before.
fn restart(program: &Arc<dyn Program>, dir: &Path) -> Result<Option<std::path::PathBuf>> {
    let spec = locus_fs::ClusterSpec::load(dir)?;
    let none_ran = spec.nodes.iter().all(|n| running_pid(&n.dir).is_none());
    let daemons = Daemons {
        program: program.clone(),
        durability: locus_fs::Durability::Group,
        replicas: spec.replicas,
        with_launcher: true,
        upkeep: locus_fs::Upkeep::of_a_run(),
    };
    daemons
        .restart_stopped(dir)
        .with_context(|| format!("starting the run's file system {}", dir.display()))?;
    Ok(none_ran.then(|| dir.to_path_buf()))
}

/// Per function how many calls would run and how many are kept; with
/// `--resume`, why each call that would run again does.
fn show(out: &mut impl Write, rank: &RankOptions, plan: &[Planned]) -> std::io::Result<()> {
    let mut per: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for p in plan {
        let f = per.entry(p.func.as_str()).or_default();
        match p.kept {
            true => f.1 += 1,
            false => f.0 += 1,
        }
    }
    let (run, kept) = per.values().fold((0, 0), |(r, k), f| (r + f.0, k + f.1));
    writeln!(
        out,
        "dry run of {}: {} app call(s): {run} would run, {kept} kept from earlier runs",
        rank.script.display(),
        plan.len()
    )?;
    writeln!(out, "{:<24} {:>8} {:>8}", "function", "run", "kept")?;
    for (func, (r, k)) in &per {
        writeln!(out, "{func:<24} {r:>8} {k:>8}")?;
    }
    if rank.resume.is_some() && run > 0 {
        writeln!(out, "would run again:")?;
        for p in plan.iter().filter(|p| !p.kept) {
            let why = p.rerun.as_ref().map_or(String::new(), ToString::to_string);
            writeln!(out, "  {} {}: {why}", p.at, p.func)?;
            writeln!(out, "      {}", p.argv.join(" "))?;
        }
    }
    Ok(())
}
