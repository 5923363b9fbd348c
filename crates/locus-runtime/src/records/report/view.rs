//! A finished run as the reports draw it, from its summary and records.

use super::{Placement, Report, SpillCheck};
use crate::records::record::TaskRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A task as the report draws it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Span {
    pub func: String,
    pub rank: u32,
    /// Seconds from the run's start.
    pub start: f64,
    pub end: f64,
    pub stage: f64,
    pub commit: f64,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    pub written_bytes: u64,
    #[serde(default)]
    pub placement: Placement,
    #[serde(default)]
    pub outcome: Outcome,
}

/// How a task ended, as the timelines mark it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    #[default]
    Done,
    /// Done after a failed attempt.
    Retried,
    Failed,
    /// Not run: an earlier run did it (`--resume`).
    Resumed,
    /// Run again to make files lost with a node (lineage).
    Remade,
    /// Stopped unfinished: by a lost node (its own, or its inputs'), then
    /// run again; or with the run, stopped from outside.
    Stopped,
}

impl Outcome {
    pub fn of(t: &TaskRecord) -> Outcome {
        match () {
            _ if t.stopped() || t.interrupted() => Outcome::Stopped,
            _ if t.error.is_some() => Outcome::Failed,
            _ if t.resumed => Outcome::Resumed,
            _ if t.remade => Outcome::Remade,
            _ if t.attempts > 1 => Outcome::Retried,
            _ => Outcome::Done,
        }
    }

    /// Which outcome a bar standing for several tasks shows.
    pub fn severity(self) -> u8 {
        match self {
            Outcome::Done => 0,
            Outcome::Resumed => 1,
            Outcome::Retried => 2,
            Outcome::Remade => 3,
            Outcome::Stopped => 4,
            Outcome::Failed => 5,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Retried => "retried",
            Outcome::Failed => "failed",
            Outcome::Resumed => "resumed",
            Outcome::Remade => "remade",
            Outcome::Stopped => "stopped",
        }
    }
}

/// A finished run as the reports draw it: its workers and the span of
/// every task on them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunView {
    /// Seconds from the engine's start to its end.
    pub seconds: f64,
    /// Worker ranks and their nodes.
    pub workers: Vec<(u32, String)>,
    pub spans: Vec<Span>,
    /// SOFT tasks that ran off their target.
    pub spilled: usize,
    /// Each spill against the wait it avoided.
    #[serde(default)]
    pub spill_checks: Vec<SpillCheck>,
    /// Nodes lost during the run, each with why.
    #[serde(default)]
    pub lost_nodes: Vec<(String, String)>,
    /// Workers whose process was gone during the run, each with why.
    #[serde(default)]
    pub workers_gone: Vec<String>,
}

impl RunView {
    pub fn tasks<'a>(&'a self, func: &'a str) -> impl Iterator<Item = &'a Span> + 'a {
        self.spans.iter().filter(move |s| s.func == func)
    }

    /// Seconds from the first start to the last end of `func`'s tasks.
    pub fn phase_seconds(&self, func: &str) -> f64 {
        let (mut lo, mut hi) = (f64::MAX, 0.0f64);
        for s in self.tasks(func) {
            lo = lo.min(s.start);
            hi = hi.max(s.end);
        }
        (hi - lo).max(0.0)
    }

    /// Mean of `f` over `func`'s tasks (0 when there are none).
    pub fn mean(&self, func: &str, f: impl Fn(&Span) -> f64) -> f64 {
        let (sum, n) = self
            .tasks(func)
            .fold((0.0, 0usize), |(s, n), t| (s + f(t), n + 1));
        sum / n.max(1) as f64
    }

    /// Average over `func`'s tasks of bytes moved per second of the task.
    pub fn per_task_rate(&self, func: &str, bytes: impl Fn(&Span) -> u64) -> f64 {
        let rates: Vec<f64> = self
            .tasks(func)
            .filter(|s| s.end > s.start)
            .map(|s| bytes(s) as f64 / (s.end - s.start))
            .collect();
        rates.iter().sum::<f64>() / rates.len().max(1) as f64
    }

    /// Input bytes that `func`'s tasks (all tasks: `None`) found on their
    /// node, and fetched.
    pub fn input_bytes(&self, func: Option<&str>) -> (u64, u64) {
        self.spans
            .iter()
            .filter(|t| func.is_none_or(|f| t.func == f))
            .fold((0, 0), |(l, r), t| (l + t.local_bytes, r + t.remote_bytes))
    }

    /// Seconds each worker was busy: the time covered by its tasks (a
    /// worker registers one task's outputs while the next runs, so spans
    /// may overlap), within the run.
    pub fn busy(&self) -> BTreeMap<u32, f64> {
        let spans = self.spans.iter().map(|s| (s.rank, s.start, s.end));
        busy_by_rank(spans, 0.0, self.seconds)
    }

    /// Share of all worker time spent idle between the run's start and end.
    pub fn idle_share(&self) -> f64 {
        let busy: f64 = self.busy().values().sum();
        let total = self.seconds * self.workers.len() as f64;
        if total <= 0.0 {
            return 0.0;
        }
        (1.0 - busy / total).max(0.0)
    }

    /// Input bytes of `func`'s tasks per node that ran them: (read locally,
    /// fetched from other nodes).
    pub fn bytes_in(&self, func: &str) -> BTreeMap<String, (u64, u64)> {
        let node_of: BTreeMap<u32, &str> =
            self.workers.iter().map(|(r, n)| (*r, n.as_str())).collect();
        let mut per = BTreeMap::<String, (u64, u64)>::new();
        for s in self.tasks(func) {
            let node = node_of.get(&s.rank).copied().unwrap_or("?");
            let e = per.entry(node.to_string()).or_default();
            (e.0, e.1) = (e.0 + s.local_bytes, e.1 + s.remote_bytes);
        }
        per
    }

    /// The number of nodes with workers.
    pub fn nodes(&self) -> usize {
        let mut names: Vec<&str> = self.workers.iter().map(|(_, n)| n.as_str()).collect();
        names.sort();
        names.dedup();
        names.len()
    }
}

impl RunView {
    /// The run whose directory is `run_dir`.
    pub fn load(run_dir: &Path) -> Result<RunView, super::LoadError> {
        Ok(RunView::of(&Report::load(run_dir)?))
    }

    /// The view of a loaded run.
    pub fn of(report: &Report) -> RunView {
        let t0 = report.run.start_us;
        let secs = |us: u64| us.saturating_sub(t0) as f64 / 1e6;
        let layout = &report.run.layout;
        RunView {
            seconds: secs(report.run.end_us),
            workers: (0..layout.workers())
                .map(|r| (r, layout.node_name(r).to_string()))
                .collect(),
            spans: report
                .tasks
                .iter()
                .flat_map(|t| spans_of(t, secs))
                .collect(),
            spilled: report.spilled(),
            spill_checks: report.spill_checks().into_iter().map(|(_, c)| c).collect(),
            lost_nodes: report.run.lost_nodes.clone(),
            workers_gone: report.run.workers_gone.clone(),
        }
    }
}

/// A task's spans: one, or for a parallel task one on each of its job's
/// workers, each with that worker's file I/O.
fn spans_of(t: &TaskRecord, secs: impl Fn(u64) -> f64) -> Vec<Span> {
    let span = Span {
        func: t.func.clone(),
        rank: t.rank,
        start: secs(t.start_us),
        end: secs(t.end_us),
        stage: t.stage_us as f64 / 1e6,
        commit: t.commit_us as f64 / 1e6,
        local_bytes: t.local_bytes,
        remote_bytes: t.remote_bytes,
        written_bytes: t.written_bytes,
        placement: Placement::of(t),
        outcome: Outcome::of(t),
    };
    if t.job.is_empty() {
        return vec![span];
    }
    (t.job.iter())
        .map(|p| Span {
            rank: p.rank,
            local_bytes: p.local_bytes,
            remote_bytes: p.remote_bytes,
            written_bytes: p.written_bytes,
            ..span.clone()
        })
        .collect()
}

/// Per rank, the time its tasks' spans `(rank, start, end)` cover within
/// `[lo, hi]`.
pub(super) fn busy_by_rank(
    spans: impl Iterator<Item = (u32, f64, f64)>,
    lo: f64,
    hi: f64,
) -> BTreeMap<u32, f64> {
    let mut per: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for (rank, start, end) in spans {
        per.entry(rank).or_default().push((start, end));
    }
    per.into_iter()
        .map(|(rank, spans)| (rank, covered(spans, lo, hi)))
        .collect()
}

/// The length of the union of `spans` within `[lo, hi]`: time covered at
/// least once, never more than `hi - lo`.
fn covered(mut spans: Vec<(f64, f64)>, lo: f64, hi: f64) -> f64 {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut total, mut reached) = (0.0, lo);
    for (start, end) in spans {
        let (start, end) = (start.max(reached), end.min(hi));
        if end > start {
            total += end - start;
            reached = end;
        }
    }
    total
}
