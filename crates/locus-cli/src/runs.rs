//! `locus runs`: the runs of this user — those in the run index (every
//! `--run-dir`, `locus_launch::index`) and the directories `locus run` made
//! without one (`locus-run-*` in the temporary directory) — what each
//! holds, one in full, and removing the finished ones.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use locus_launch::{hold_run_dir, running_pid, RunHold};
use locus_runtime::RunSummary;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Args)]
pub(crate) struct RunsArgs {
    /// Only the runs made in DIR without --run-dir (default: those in the
    /// run index, `$XDG_STATE_HOME/locus/runs`, and those made in the
    /// temporary directory, `$TMPDIR` or /tmp).
    #[arg(long = "in", value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    action: Option<RunsAction>,
}

#[derive(Subcommand)]
enum RunsAction {
    /// One run in full (`locus report` of its directory), by its id.
    Show {
        /// The id `locus runs` lists (a prefix of it is enough).
        id: String,
    },
    /// Remove the run directories (their records, and file systems made for
    /// them) of runs that ended: listed first, removed only with --yes. A
    /// live run, or one whose file system still runs (--keep-fs), is kept.
    Clean {
        /// Only those that ended longer ago than this (`7d`, `12h`).
        #[arg(long, value_name = "AGE", value_parser = humantime::parse_duration)]
        older_than: Option<Duration>,
        /// Only those that failed.
        #[arg(long)]
        failed: bool,
        /// Remove them (without it, say what would be removed).
        #[arg(long)]
        yes: bool,
    },
}

/// One run directory, as listed.
struct Run {
    id: String,
    dir: PathBuf,
    state: String,
    /// When it ended (its summary's end, else its marker's last change).
    ended: Option<SystemTime>,
    seconds: Option<f64>,
    tasks: usize,
    bytes: u64,
}

pub(crate) fn run(a: RunsArgs) -> Result<()> {
    let found = match &a.dir {
        Some(root) => runs(made_in(root)?),
        None => runs(indexed_or_made_in(&std::env::temp_dir())?),
    };
    let mut out = std::io::stdout().lock();
    match a.action {
        None => {
            writeln!(
                out,
                "{:<10} {:<9} {:<21} {:>9} {:>7} {:>10}  {:<40} why",
                "id", "state", "ended", "seconds", "tasks", "bytes", "run"
            )?;
            for run in found {
                let (state, why) = run.state.split_once(": ").unwrap_or((&run.state, ""));
                writeln!(
                    out,
                    "{:<10} {:<9} {:<21} {:>9} {:>7} {:>10}  {:<40} {why}",
                    run.id,
                    state,
                    run.ended
                        .map_or("-".into(), |t| humantime::format_rfc3339_seconds(t)
                            .to_string()),
                    run.seconds.map_or("-".into(), |s| format!("{s:.1}")),
                    run.tasks,
                    run.bytes,
                    run.dir.display(),
                )?;
            }
        }
        Some(RunsAction::Show { id }) => {
            let matching: Vec<&Run> = found.iter().filter(|r| r.id.starts_with(&id)).collect();
            let run = match matching[..] {
                [one] => one,
                [] => bail!("no run {id} (`locus runs` lists them)"),
                _ => bail!("{id} names {} runs: give more of its id", matching.len()),
            };
            writeln!(out, "{} ({})", run.dir.display(), run.state)?;
            let report = locus_runtime::report::Report::load(&run.dir)?;
            write!(out, "{}", report.text())?;
        }
        Some(RunsAction::Clean {
            older_than,
            failed,
            yes,
        }) => {
            let cutoff = SystemTime::now() - older_than.unwrap_or_default();
            let (mut removed, mut freed) = (0, 0);
            for run in found {
                if run.ended.is_none_or(|t| t > cutoff)
                    || (failed && !run.state.starts_with("failed"))
                {
                    continue;
                }
                if !yes {
                    writeln!(
                        out,
                        "would remove {} ({}, {} bytes)",
                        run.dir.display(),
                        run.state,
                        run.bytes
                    )?;
                    removed += 1;
                    freed += run.bytes;
                    continue;
                }
                match clean(&run.dir)? {
                    Some(kept) => writeln!(out, "kept {}: {kept}", run.dir.display())?,
                    None => {
                        locus_launch::index::forget(&run.id);
                        removed += 1;
                        freed += run.bytes;
                    }
                }
            }
            match yes {
                true => writeln!(out, "{removed} run(s) removed, {freed} bytes freed")?,
                false => writeln!(out, "{removed} run(s), {freed} bytes: --yes removes them")?,
            }
        }
    }
    Ok(())
}

/// The run directories `locus run` made in `root` without --run-dir.
fn made_in(root: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(root).with_context(|| root.display().to_string())?;
    let mut dirs = Vec::new();
    for e in entries {
        let e = e?;
        // Only directories (not links to them) of this user's runs.
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && e.file_name().to_string_lossy().starts_with("locus-run-") {
            dirs.push(e.path());
        }
    }
    Ok(dirs)
}

/// The run index's directories and those made in `root`, each once.
fn indexed_or_made_in(root: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = locus_launch::index::entries()?
        .into_iter()
        .map(|e| e.dir)
        .collect();
    for d in made_in(root)? {
        let d = std::path::absolute(&d).unwrap_or(d);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    Ok(dirs)
}

/// What each of `dirs` holds, the runs that ended first (oldest first).
fn runs(dirs: Vec<PathBuf>) -> Vec<Run> {
    let mut found = Vec::new();
    for dir in dirs {
        let Ok(hold) = hold_run_dir(&dir) else {
            continue;
        };
        let summary = RunSummary::load(&dir).ok();
        let state = match &hold {
            RunHold::NotARun => continue,
            RunHold::Live(owner) => format!("running: {owner}"),
            RunHold::Ended(_) => match &summary {
                Some(s) => match (s.error_kind, &s.error) {
                    (_, None) => "done".to_string(),
                    (Some(kind), Some(e)) => format!("failed: {kind}: {e}"),
                    (None, Some(e)) => format!("failed: {e}"),
                },
                // Its launcher killed (SIGKILL: nothing could write it), or
                // it ended before its ranks began.
                None => "stopped: without run.json (killed, or ended before it began)".to_string(),
            },
        };
        drop(hold);
        let ended = match &summary {
            Some(s) => Some(SystemTime::UNIX_EPOCH + Duration::from_micros(s.end_us)),
            None if !state.starts_with("running") => std::fs::metadata(dir.join("locus-run"))
                .and_then(|m| m.modified())
                .ok(),
            None => None,
        };
        found.push(Run {
            id: locus_launch::index::run_id(&dir),
            seconds: summary.map(|s| s.end_us.saturating_sub(s.start_us) as f64 / 1e6),
            ended,
            tasks: locus_runtime::record::count(&dir).unwrap_or_default(),
            bytes: size(&dir),
            state,
            dir,
        });
    }
    found.sort_by_key(|r| r.ended);
    found
}

/// Removes the ended run at `dir`, held meanwhile so that no run starts in
/// it; `Some(why)` when it is kept.
fn clean(dir: &Path) -> Result<Option<String>> {
    let _held = match hold_run_dir(dir)? {
        RunHold::Ended(file) => file,
        RunHold::Live(owner) => return Ok(Some(format!("a live run holds it ({owner})"))),
        RunHold::NotARun => return Ok(Some("not a run directory".into())),
    };
    // Its own file system, kept up after it (`--keep-fs`), still serves.
    if let Ok(spec) = locus_fs::ClusterSpec::load(&dir.join("fs")) {
        if let Some(pid) = spec.nodes.iter().find_map(|n| running_pid(&n.dir)) {
            return Ok(Some(format!(
                "its file system runs (daemon pid {pid}): `locus fs down --dir {}` first",
                dir.join("fs").display()
            )));
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    Ok(None)
}

/// Bytes of the files under `dir` (links not followed).
fn size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}
