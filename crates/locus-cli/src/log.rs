//! `locus log RUN_DIR [TASK | --failed]`: a run's tasks, one line each, or
//! one task in full — its call, command line, node, exit, time and what it
//! wrote to stdout and stderr (Nextflow's `.command.*` in one command).

use anyhow::{bail, Context, Result};
use locus_runtime::record::{self, TaskRecord};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub(crate) struct LogArgs {
    /// The run's directory.
    dir: PathBuf,
    /// The task to show in full (its id, the first column of the list).
    #[arg(conflicts_with = "failed")]
    task: Option<u64>,
    /// Show every failed task in full.
    #[arg(long)]
    failed: bool,
}

pub(crate) fn run(a: LogArgs) -> Result<()> {
    if !a.dir.join("locus-run").exists() && !a.dir.join("records").exists() {
        bail!("{}: not a run directory", a.dir.display());
    }
    let tasks = record::load(&a.dir).with_context(|| a.dir.display().to_string())?;
    let mut out = std::io::stdout().lock();
    match (a.task, a.failed) {
        (Some(id), _) => {
            let Some(t) = tasks.iter().find(|t| t.id == id) else {
                bail!(
                    "{}: no task {id} (`locus log {}` lists them)",
                    a.dir.display(),
                    a.dir.display()
                );
            };
            shown(&mut out, &a.dir, t)?;
        }
        (None, true) => {
            let failed: Vec<&TaskRecord> = tasks.iter().filter(|t| t.failed()).collect();
            if failed.is_empty() {
                writeln!(out, "no task failed")?;
            }
            for t in failed {
                shown(&mut out, &a.dir, t)?;
            }
        }
        (None, false) => {
            writeln!(
                out,
                "{:>8} {:<20} {:<12} {:>6} {:>9}  at",
                "task", "function", "node", "exit", "seconds"
            )?;
            for t in &tasks {
                writeln!(
                    out,
                    "{:>8} {:<20} {:<12} {:>6} {:>9.3}  {}{}",
                    t.id,
                    t.func,
                    t.node,
                    outcome(t),
                    seconds(t),
                    t.at,
                    if t.resumed {
                        " (done by an earlier run)"
                    } else {
                        ""
                    }
                )?;
            }
        }
    }
    Ok(())
}

/// Its exit code, or what else ended it.
fn outcome(t: &TaskRecord) -> String {
    match (t.exit, t.failed()) {
        (Some(code), _) => code.to_string(),
        (None, true) => "failed".into(),
        (None, false) => "-".into(),
    }
}

fn seconds(t: &TaskRecord) -> f64 {
    t.end_us.saturating_sub(t.start_us) as f64 / 1e6
}

/// A word of a command line as a shell would take it back.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    match plain {
        true => word.to_string(),
        false => format!("'{}'", word.replace('\'', r"'\''")),
    }
}

fn shown(out: &mut impl Write, dir: &Path, t: &TaskRecord) -> Result<()> {
    writeln!(out, "task {}: {} at {}", t.id, t.func, t.at)?;
    if !t.argv.is_empty() {
        let words: Vec<String> = t.argv.iter().map(|w| quoted(w)).collect();
        writeln!(out, "command: {}", words.join(" "))?;
    }
    writeln!(out, "node: {} (rank {})", t.node, t.rank)?;
    writeln!(
        out,
        "exit: {}; {:.3} s; {} attempt(s)",
        outcome(t),
        seconds(t),
        t.attempts
    )?;
    if let Some(e) = &t.error {
        writeln!(out, "error: {e}")?;
    }
    for (name, kept) in [("stdout", &t.stdout), ("stderr", &t.stderr)] {
        match kept {
            Some(file) => {
                let text = std::fs::read(dir.join(file)).unwrap_or_default();
                writeln!(out, "{name} ({file}):")?;
                for line in String::from_utf8_lossy(&text).lines() {
                    writeln!(out, "  | {line}")?;
                }
            }
            None => writeln!(out, "{name}: (nothing)")?,
        }
    }
    writeln!(out)?;
    Ok(())
}
