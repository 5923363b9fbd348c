//! `locus runs`: the runs of this user — those in the run index (every
//! `--run-dir`, `locus_launch::index`) and the directories `locus run` made
//! without one (`locus-run-*` in the temporary directory) — what each
//! holds, one in full, and removing the finished ones.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use locus_launch::{hold_run_dir, listing, running_pid, RunHold};
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

pub(crate) fn run(a: RunsArgs) -> Result<()> {
    let found = match &a.dir {
        Some(root) => listing::list(listing::made_in(root)?),
        None => {
            let index = locus_launch::index::index_dir();
            listing::list(listing::indexed_or_made_in(&index, &std::env::temp_dir())?)
        }
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
            let matching: Vec<&listing::ListedRun> =
                found.iter().filter(|r| r.id.starts_with(&id)).collect();
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
