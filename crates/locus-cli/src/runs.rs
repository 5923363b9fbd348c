//! `locus runs`: the run directories `locus run` made without `--run-dir`
//! (`locus-run-*` in the temporary directory), what each holds, and
//! removing the finished ones.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use locus_launch::{hold_run_dir, running_pid, RunHold};
use locus_runtime::RunSummary;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Args)]
pub(crate) struct RunsArgs {
    /// Where the runs are (default: the temporary directory, `$TMPDIR` or
    /// /tmp, where `locus run` makes them).
    #[arg(long = "in", value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    action: Option<RunsAction>,
}

#[derive(Subcommand)]
enum RunsAction {
    /// Remove the runs that ended longer ago than --older-than; a live run,
    /// or one whose file system still runs (--keep-fs), is kept.
    Clean {
        /// How long ago a run must have ended (`7d`, `12h`, `0s` for all).
        #[arg(long, value_name = "AGE", value_parser = humantime::parse_duration)]
        older_than: Duration,
    },
}

/// One run directory, as listed.
struct Run {
    dir: PathBuf,
    state: String,
    /// When it ended (its summary's end, else its marker's last change).
    ended: Option<SystemTime>,
    seconds: Option<f64>,
    tasks: usize,
    bytes: u64,
}

pub(crate) fn run(a: RunsArgs) -> Result<()> {
    let root = a.dir.unwrap_or_else(std::env::temp_dir);
    let mut out = std::io::stdout().lock();
    match a.action {
        None => {
            writeln!(
                out,
                "{:<40} {:<9} {:<21} {:>9} {:>7} {:>10}  why",
                "run", "state", "ended", "seconds", "tasks", "bytes"
            )?;
            for run in runs(&root)? {
                let (state, why) = run.state.split_once(": ").unwrap_or((&run.state, ""));
                writeln!(
                    out,
                    "{:<40} {:<9} {:<21} {:>9} {:>7} {:>10}  {why}",
                    run.dir.display(),
                    state,
                    run.ended
                        .map_or("-".into(), |t| humantime::format_rfc3339_seconds(t)
                            .to_string()),
                    run.seconds.map_or("-".into(), |s| format!("{s:.1}")),
                    run.tasks,
                    run.bytes
                )?;
            }
        }
        Some(RunsAction::Clean { older_than }) => {
            let cutoff = SystemTime::now() - older_than;
            let (mut removed, mut freed) = (0, 0);
            for run in runs(&root)? {
                if run.ended.is_none_or(|t| t > cutoff) {
                    continue;
                }
                match clean(&run.dir)? {
                    Some(kept) => writeln!(out, "kept {}: {kept}", run.dir.display())?,
                    None => {
                        removed += 1;
                        freed += run.bytes;
                    }
                }
            }
            writeln!(out, "{removed} run(s) removed, {freed} bytes freed")?;
        }
    }
    Ok(())
}

/// The run directories under `root`, oldest first.
fn runs(root: &Path) -> Result<Vec<Run>> {
    let entries = std::fs::read_dir(root).with_context(|| root.display().to_string())?;
    let mut found = Vec::new();
    for e in entries {
        let e = e?;
        let name = e.file_name();
        // Only directories (not links to them) of this user's runs.
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || !name.to_string_lossy().starts_with("locus-run-") {
            continue;
        }
        let dir = e.path();
        let Ok(hold) = hold_run_dir(&dir) else {
            continue;
        };
        let state = match &hold {
            RunHold::NotARun => continue,
            RunHold::Live(owner) => format!("running: {owner}"),
            RunHold::Ended(_) => match RunSummary::load(&dir) {
                Ok(s) => match (s.error_kind, s.error) {
                    (_, None) => "done".to_string(),
                    (Some(kind), Some(e)) => format!("failed: {kind}: {e}"),
                    (None, Some(e)) => format!("failed: {e}"),
                },
                Err(_) => "ended: without run.json (killed before it began)".to_string(),
            },
        };
        drop(hold);
        let summary = RunSummary::load(&dir).ok();
        let ended = match &summary {
            Some(s) => Some(SystemTime::UNIX_EPOCH + Duration::from_micros(s.end_us)),
            None if !state.starts_with("running") => std::fs::metadata(dir.join("locus-run"))
                .and_then(|m| m.modified())
                .ok(),
            None => None,
        };
        let records = locus_runtime::record::load(&dir).unwrap_or_default();
        found.push(Run {
            seconds: summary.map(|s| s.end_us.saturating_sub(s.start_us) as f64 / 1e6),
            ended,
            tasks: records.len(),
            bytes: size(&dir),
            state,
            dir,
        });
    }
    found.sort_by_key(|r| r.ended);
    Ok(found)
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
