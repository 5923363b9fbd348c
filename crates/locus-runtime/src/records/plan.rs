//! A dry run's plan (`locus run --dry-run`): each app call the control flow
//! reached, whether it would run, and with `--resume` whether an earlier
//! run's task is kept or why it would run again. Written by the servers to
//! `RUN_DIR/plan/rank-R.jsonl`, one line per call.

use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

/// Why a task an earlier run may have done would run again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Rerun {
    /// No earlier run ran its command.
    NeverRun,
    /// The last earlier run of its command failed.
    Failed {
        error: String,
    },
    /// An earlier call from the same place, writing the same files, ran
    /// another command (`was`).
    CommandChanged {
        was: Vec<String>,
    },
    /// A file it reads is not the version the earlier run read.
    InputChanged {
        path: String,
    },
    /// A file it reads is made again by a call that would run.
    InputRemade {
        path: String,
    },
    /// A file the earlier run wrote is gone, or another version.
    OutputMissing {
        path: String,
    },
    OutputChanged {
        path: String,
    },
    /// A program it runs changed since.
    ProgramChanged {
        path: String,
    },
}

impl std::fmt::Display for Rerun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rerun::NeverRun => write!(f, "never run"),
            Rerun::Failed { error } => write!(f, "failed: {error}"),
            Rerun::CommandChanged { was } => write!(f, "command changed (was: {})", was.join(" ")),
            Rerun::InputChanged { path } => write!(f, "input version changed: {path}"),
            Rerun::InputRemade { path } => write!(f, "input made again: {path}"),
            Rerun::OutputMissing { path } => write!(f, "output missing: {path}"),
            Rerun::OutputChanged { path } => write!(f, "output changed: {path}"),
            Rerun::ProgramChanged { path } => write!(f, "program changed: {path}"),
        }
    }
}

/// One app call of a dry run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planned {
    pub func: String,
    /// Where the script calls it (`file:line:col`).
    pub at: String,
    /// Its command line, Locus files by their `/locus/` paths.
    pub argv: Vec<String>,
    /// Kept from an earlier run (`--resume`): it would not run.
    pub kept: bool,
    /// Why it would run again (`--resume`; none without it: every call
    /// runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<Rerun>,
}

fn plan_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("plan")
}

/// Appends a server's planned calls.
pub(crate) struct PlanWriter {
    path: PathBuf,
    out: Option<io::BufWriter<std::fs::File>>,
}

impl PlanWriter {
    pub(crate) fn new(run_dir: &Path, rank: locus_proto::run::Rank) -> PlanWriter {
        PlanWriter {
            path: plan_dir(run_dir).join(format!("rank-{rank}.jsonl")),
            out: None,
        }
    }

    pub(crate) fn write(&mut self, p: &Planned) -> io::Result<()> {
        let out = match &mut self.out {
            Some(out) => out,
            None => {
                std::fs::create_dir_all(self.path.parent().expect("in the plan directory"))?;
                let file = std::fs::File::create(&self.path)?;
                self.out.insert(io::BufWriter::new(file))
            }
        };
        serde_json::to_writer(&mut *out, p)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

/// Every planned call of the dry run in `run_dir`, in the order of their
/// call sites.
pub fn load_plan(run_dir: &Path) -> io::Result<Vec<Planned>> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(plan_dir(run_dir)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        rd => rd?,
    };
    for e in rd {
        let file = std::fs::File::open(e?.path())?;
        for line in io::BufReader::new(file).lines() {
            out.push(serde_json::from_str(&line?).map_err(io::Error::other)?);
        }
    }
    out.sort_by(|a: &Planned, b| (&a.at, &a.argv).cmp(&(&b.at, &b.argv)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_calls_are_read_back_in_call_site_order() {
        let dir = tempfile::tempdir().unwrap();
        let call = |at: &str, rerun: Option<Rerun>| Planned {
            func: "f".into(),
            at: at.into(),
            argv: vec!["sh".into()],
            kept: rerun.is_none(),
            rerun,
        };
        let mut w = PlanWriter::new(dir.path(), 3);
        w.write(&call("b.swift:2:1", Some(Rerun::NeverRun)))
            .unwrap();
        w.write(&call("a.swift:9:1", None)).unwrap();
        let changed = Rerun::InputChanged {
            path: "/locus/x".into(),
        };
        PlanWriter::new(dir.path(), 4)
            .write(&call("a.swift:1:1", Some(changed.clone())))
            .unwrap();
        let plan = load_plan(dir.path()).unwrap();
        let ats: Vec<&str> = plan.iter().map(|p| p.at.as_str()).collect();
        assert_eq!(ats, ["a.swift:1:1", "a.swift:9:1", "b.swift:2:1"]);
        assert_eq!(plan[0].rerun, Some(changed));
        assert_eq!(
            plan[0].rerun.as_ref().unwrap().to_string(),
            "input version changed: /locus/x"
        );
    }
}
