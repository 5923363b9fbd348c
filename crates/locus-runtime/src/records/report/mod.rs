//! `locus report RUN_DIR`: a run's summary from its task records: tasks,
//! per-worker busy and idle time, how tasks were placed, the locality hit
//! rate and the bytes moved, the apps' CPU and memory, and what failed.

mod graph;
pub mod html;
mod view;

pub use view::{RunView, Span};

use crate::ranks::rank::{summary_path, RunSummary};
use crate::records::record::{self, TaskRecord};
use locus_proto::run::Placed;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Failed tasks listed by name; the rest are counted.
const SHOWN_FAILURES: usize = 10;

/// Where a task ran, against where its input bytes were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub enum Placement {
    /// It read no Locus input.
    #[default]
    NoInputs,
    /// It read every input byte on its node.
    Local,
    /// Its server moved it off its preferred node (the record says why).
    Spilled,
    /// It fetched input bytes where it was placed (anywhere, or where the
    /// script put it).
    Remote,
}

impl Placement {
    pub const ALL: [Placement; 4] = [
        Placement::Local,
        Placement::Spilled,
        Placement::Remote,
        Placement::NoInputs,
    ];

    pub fn of(t: &TaskRecord) -> Placement {
        Placement::of_parts(t.spill.is_some(), t.local_bytes, t.remote_bytes)
    }

    /// Of a task spilled or not that read these input bytes.
    pub fn of_parts(spilled: bool, local_bytes: u64, remote_bytes: u64) -> Placement {
        if spilled {
            Placement::Spilled
        } else if remote_bytes > 0 {
            Placement::Remote
        } else if local_bytes > 0 {
            Placement::Local
        } else {
            Placement::NoInputs
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Placement::Local => "local",
            Placement::Spilled => "spilled",
            Placement::Remote => "remote as placed",
            Placement::NoInputs => "no inputs",
        }
    }
}

/// A spilled task against what it avoided: its fetch time as recorded, and
/// how long it would have waited at home (until a worker of the node it
/// left first finished a task, or the run ended).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpillCheck {
    pub fetch_us: u64,
    pub avoided_us: u64,
    pub estimated_fetch_us: u64,
    pub estimated_wait_us: u64,
}

impl SpillCheck {
    /// Leaving was worth it: the fetch took no longer than the wait.
    pub fn paid(&self) -> bool {
        self.fetch_us <= self.avoided_us
    }
}

/// Per function: how its tasks were placed and what they moved.
#[derive(Debug, Default, Clone)]
pub struct FunctionPlacement {
    pub tasks: usize,
    pub by: BTreeMap<Placement, usize>,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    pub spills: Vec<SpillCheck>,
}

impl FunctionPlacement {
    /// The share of its input bytes read on the node it ran on.
    pub fn local_share(&self) -> f64 {
        let all = self.local_bytes + self.remote_bytes;
        if all == 0 {
            1.0
        } else {
            self.local_bytes as f64 / all as f64
        }
    }
}

pub struct Report {
    pub run: RunSummary,
    pub tasks: Vec<TaskRecord>,
    /// Tasks a server held when the run was stopped that never started.
    pub never_started: Vec<record::HeldTask>,
    /// The run directory (tasks' kept output is under it).
    pub dir: PathBuf,
}

/// Calls counted by function and position, in first-seen order, the first
/// few of them: `f at wf.swift:3:5 (×4); g at wf.swift:7:1`.
pub(crate) fn calls<'a>(all: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    const SHOWN: usize = 5;
    let mut counted: Vec<((&String, &String), usize)> = Vec::new();
    for call in all {
        match counted.iter_mut().find(|(c, _)| *c == call) {
            Some((_, n)) => *n += 1,
            None => counted.push((call, 1)),
        }
    }
    let mut shown: Vec<String> = (counted.iter().take(SHOWN))
        .map(|((func, at), n)| match n {
            1 => format!("{func} at {at}"),
            n => format!("{func} at {at} (×{n})"),
        })
        .collect();
    if counted.len() > SHOWN {
        shown.push(format!("and {} more call(s)", counted.len() - SHOWN));
    }
    shown.join("; ")
}

/// Lines of a failed task's stderr the text report shows.
const STDERR_LINES: usize = 3;

/// Why a run's report cannot be made from its directory.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// No summary: not a run's directory, or a run that has not ended.
    #[error("{}: {cause} (is {} a finished run's directory?)", path.display(), dir.display())]
    NoSummary {
        path: PathBuf,
        dir: PathBuf,
        cause: std::io::Error,
    },
    /// A summary or task record that cannot be read.
    #[error("{}: {cause}", path.display())]
    Unreadable {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl Report {
    pub fn load(run_dir: &Path) -> Result<Report, LoadError> {
        let run = RunSummary::load(run_dir).map_err(|cause| {
            let path = summary_path(run_dir);
            match cause.kind() {
                std::io::ErrorKind::InvalidData => LoadError::Unreadable { path, cause },
                _ => LoadError::NoSummary {
                    path,
                    dir: run_dir.to_path_buf(),
                    cause,
                },
            }
        })?;
        let tasks = record::load(run_dir).map_err(|cause| LoadError::Unreadable {
            path: record::records_dir(run_dir),
            cause,
        })?;
        let never_started =
            record::never_started(run_dir, &tasks).map_err(|cause| LoadError::Unreadable {
                path: record::records_dir(run_dir),
                cause,
            })?;
        Ok(Report {
            run,
            tasks,
            never_started,
            dir: run_dir.to_path_buf(),
        })
    }

    /// The tasks that failed (not those a lost node stopped).
    pub(crate) fn failures(&self) -> Vec<&TaskRecord> {
        self.tasks.iter().filter(|t| t.failed()).collect()
    }

    /// Tasks whose inputs were all on their node, among tasks with inputs.
    pub fn locality(&self) -> (usize, usize) {
        let with_inputs: Vec<_> = self
            .tasks
            .iter()
            .filter(|t| t.local_bytes + t.remote_bytes > 0)
            .collect();
        let local = with_inputs.iter().filter(|t| t.remote_bytes == 0).count();
        (local, with_inputs.len())
    }

    /// Tasks a server moved off their SOFT target.
    pub fn spilled(&self) -> usize {
        self.tasks.iter().filter(|t| t.spill.is_some()).count()
    }

    /// Every spilled task checked against the wait it avoided.
    pub fn spill_checks(&self) -> Vec<(&TaskRecord, SpillCheck)> {
        let layout = &self.run.layout;
        // Per node, when its tasks ended, in order.
        let mut ends: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for t in &self.tasks {
            ends.entry(layout.node_of(t.rank))
                .or_default()
                .push(t.end_us);
        }
        for e in ends.values_mut() {
            e.sort_unstable();
        }
        self.tasks
            .iter()
            .filter_map(|t| {
                let spill = t.spill?;
                let home_free = ends
                    .get(&spill.from)
                    .and_then(|e| e.get(e.partition_point(|end| *end <= t.start_us)))
                    .copied()
                    .unwrap_or(self.run.end_us);
                let check = SpillCheck {
                    fetch_us: t.stage_us,
                    avoided_us: home_free.saturating_sub(t.start_us),
                    estimated_fetch_us: spill.fetch_us,
                    estimated_wait_us: spill.wait_us,
                };
                Some((t, check))
            })
            .collect()
    }

    /// Per function (by name): placement outcomes, bytes and spills.
    pub fn by_function(&self) -> BTreeMap<&str, FunctionPlacement> {
        let mut per: BTreeMap<&str, FunctionPlacement> = BTreeMap::new();
        for t in &self.tasks {
            let f = per.entry(t.func.as_str()).or_default();
            f.tasks += 1;
            *f.by.entry(Placement::of(t)).or_default() += 1;
            f.local_bytes += t.local_bytes;
            f.remote_bytes += t.remote_bytes;
        }
        for (t, check) in self.spill_checks() {
            if let Some(f) = per.get_mut(t.func.as_str()) {
                f.spills.push(check);
            }
        }
        per
    }

    /// The last lines of what `t` wrote to stderr, as kept in the run
    /// directory.
    pub(crate) fn stderr_tail(&self, t: &TaskRecord) -> Vec<String> {
        let Some(file) = &t.stderr else {
            return Vec::new();
        };
        let text = std::fs::read(self.dir.join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let from = lines.len().saturating_sub(STDERR_LINES);
        lines[from..]
            .iter()
            .map(std::string::ToString::to_string)
            .collect()
    }

    /// Per function: how its tasks went, how long they took, what they used.
    fn functions_text(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "functions:          tasks  failed retried resumed  remade   mean s    max s    cpu s  peak MiB"
        );
        let mut per: BTreeMap<&str, Vec<&TaskRecord>> = BTreeMap::new();
        for t in &self.tasks {
            per.entry(t.func.as_str()).or_default().push(t);
        }
        for (func, tasks) in per {
            let count = |f: fn(&TaskRecord) -> bool| tasks.iter().filter(|t| f(t)).count();
            let took = |t: &&TaskRecord| t.end_us.saturating_sub(t.start_us);
            let total: u64 = tasks.iter().map(took).sum();
            let _ = writeln!(
                s,
                "  {func:<16} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8.3} {:>8.3} {:>8.3} {:>9.1}",
                tasks.len(),
                count(TaskRecord::failed),
                count(|t| t.attempts > 1),
                count(|t| t.resumed),
                count(TaskRecord::made_again),
                total as f64 / tasks.len() as f64 / 1e6,
                tasks.iter().map(took).max().unwrap_or(0) as f64 / 1e6,
                tasks.iter().map(|t| t.cpu_us).sum::<u64>() as f64 / 1e6,
                tasks.iter().map(|t| t.max_rss_kib).max().unwrap_or(0) as f64 / 1024.0
            );
        }
    }

    fn placement_text(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "locality by function: tasks  local bytes  {:>8} {:>8} {:>8}  fetched",
            "local", "spilled", "remote"
        );
        for (func, f) in self.by_function() {
            let n = |p: Placement| f.by.get(&p).copied().unwrap_or(0);
            let _ = writeln!(
                s,
                "  {func:<16} {:>7}  {:>10.1}%  {:>8} {:>8} {:>8}  {} B",
                f.tasks,
                100.0 * f.local_share(),
                n(Placement::Local),
                n(Placement::Spilled),
                n(Placement::Remote),
                f.remote_bytes
            );
            if f.spills.is_empty() {
                continue;
            }
            let median = |v: &mut Vec<u64>| {
                v.sort_unstable();
                v[v.len() / 2] as f64 / 1e6
            };
            let mut fetch: Vec<u64> = f.spills.iter().map(|c| c.estimated_fetch_us).collect();
            let mut wait: Vec<u64> = f.spills.iter().map(|c| c.estimated_wait_us).collect();
            let paid = f.spills.iter().filter(|c| c.paid()).count();
            let _ = writeln!(
                s,
                "    spilled when fetching was estimated quicker than waiting (medians: fetch {:.3} s, wait {:.3} s); {paid} of {} fetched in less time than the wait they avoided",
                median(&mut fetch),
                median(&mut wait),
                f.spills.len()
            );
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        let wall = self.run.end_us.saturating_sub(self.run.start_us).max(1);
        let failed = self.tasks.iter().filter(|t| t.failed()).count();
        let resumed = self.tasks.iter().filter(|t| t.resumed).count();
        let stopped = match self.tasks.iter().filter(|t| t.interrupted()).count() {
            0 => String::new(),
            n => format!(", {n} stopped with the run"),
        };
        let _ = writeln!(
            s,
            "run: {} tasks ({failed} failed{stopped}, {resumed} done by an earlier run) in {:.3} s on {} workers, {} server(s), {} node(s){}",
            self.tasks.len(),
            wall as f64 / 1e6,
            self.run.layout.workers(),
            self.run.layout.servers,
            self.run.layout.nodes.len(),
            match (&self.run.error, self.run.error_kind) {
                (Some(e), Some(kind)) => format!("; failed ({kind}): {e}"),
                (Some(e), None) => format!("; failed: {e}"),
                (None, _) => String::new(),
            }
        );
        // What was running when the run was stopped from outside.
        let running: Vec<String> = (self.tasks.iter().filter(|t| t.interrupted()))
            .map(|t| format!("{} at {} on {} (rank {})", t.func, t.at, t.node, t.rank))
            .collect();
        if !running.is_empty() {
            let _ = writeln!(s, "running when stopped: {}", running.join("; "));
        }
        if !self.never_started.is_empty() {
            let _ = writeln!(
                s,
                "never started: {} task(s): {}",
                self.never_started.len(),
                calls(self.never_started.iter().map(|h| (&h.func, &h.at)))
            );
        }
        if !self.run.lost_nodes.is_empty() {
            let remade = self.tasks.iter().filter(|t| t.made_again()).count();
            let stopped = self.tasks.iter().filter(|t| t.stopped()).count();
            for (node, why) in &self.run.lost_nodes {
                let _ = writeln!(s, "lost node: {node}: {why}");
            }
            let _ = writeln!(
                s,
                "  {remade} tasks made again the files lost with it; {stopped} stopped by the loss and ran again"
            );
        }
        for why in &self.run.workers_gone {
            let _ = writeln!(s, "{why}; its tasks ran elsewhere");
        }
        let mut busy_total = 0.0;
        let _ = writeln!(s, "workers:");
        let (lo, hi) = (self.run.start_us as f64, self.run.end_us as f64);
        // A parallel task keeps each of its job's workers busy.
        let spans = (self.tasks.iter())
            .flat_map(|t| t.workers().map(|w| (w, t.start_us as f64, t.end_us as f64)));
        let busy = view::busy_by_rank(spans, lo, hi);
        let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
        for w in self.tasks.iter().flat_map(TaskRecord::workers) {
            *counts.entry(w).or_default() += 1;
        }
        for w in 0..self.run.layout.workers() {
            let n = counts.get(&w).copied().unwrap_or(0);
            let busy = busy.get(&w).copied().unwrap_or(0.0);
            busy_total += busy;
            let share = 100.0 * busy / wall as f64;
            let _ = writeln!(
                s,
                "  rank {w:>3} {:<10} {n:>7} tasks  busy {:>8.3} s ({share:>5.1}%)  idle {:>5.1}%",
                self.run.layout.node_name(w),
                busy / 1e6,
                100.0 - share
            );
        }
        let capacity = wall * u64::from(self.run.layout.workers());
        let _ = writeln!(
            s,
            "busy: {:.1}% of worker time",
            100.0 * busy_total / capacity.max(1) as f64
        );
        let count = |p: Placed| self.tasks.iter().filter(|t| t.placed == p).count();
        let hard = self
            .tasks
            .iter()
            .filter(|t| t.target.is_some_and(|g| g.hard))
            .count();
        let _ = writeln!(
            s,
            "placement: {} explicit ({hard} HARD), {} auto, {} anywhere; {} SOFT ran off target",
            count(Placed::Explicit),
            count(Placed::Auto),
            count(Placed::Anywhere),
            self.spilled()
        );
        let (local, with_inputs) = self.locality();
        let local_bytes: u64 = self.tasks.iter().map(|t| t.local_bytes).sum();
        let remote_bytes: u64 = self.tasks.iter().map(|t| t.remote_bytes).sum();
        let _ = writeln!(
            s,
            "locality: {local} of {with_inputs} tasks read only local inputs ({:.1}%); bytes read locally {local_bytes}, fetched {remote_bytes}",
            if with_inputs == 0 { 100.0 } else { 100.0 * local as f64 / with_inputs as f64 }
        );
        self.functions_text(&mut s);
        self.placement_text(&mut s);
        let (cpu_us, rss) = self
            .tasks
            .iter()
            .fold((0, 0), |(c, m), t| (c + t.cpu_us, m.max(t.max_rss_kib)));
        if cpu_us > 0 {
            let _ = writeln!(
                s,
                "apps: {:.3} s of CPU, peak memory {:.1} MiB (one process)",
                cpu_us as f64 / 1e6,
                rss as f64 / 1024.0
            );
        }
        let failures = self.failures();
        if !failures.is_empty() {
            let _ = writeln!(s, "failed tasks:");
        }
        for t in failures.iter().take(SHOWN_FAILURES) {
            let _ = writeln!(
                s,
                "  {} {}{}",
                t.at,
                t.error.as_deref().unwrap_or_default(),
                match &t.stderr {
                    Some(p) => format!(" (its stderr: {p})"),
                    None => String::new(),
                }
            );
            for line in self.stderr_tail(t) {
                let _ = writeln!(s, "    | {line}");
            }
        }
        if failures.len() > SHOWN_FAILURES {
            let _ = writeln!(s, "  … and {} more", failures.len() - SHOWN_FAILURES);
        }
        if !self.run.control.is_empty() {
            let _ = writeln!(s, "control:");
        }
        for c in &self.run.control {
            let _ = writeln!(
                s,
                "  rank {:>3} {:>9} statements, {} calls or loop shares from other servers, {} sent to them, at most {} tasks released at once",
                c.rank, c.statements, c.received, c.sent, c.most_released
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::layout::Layout;
    use crate::records::record::JobPart;
    use locus_proto::run::{ErrorKind, Spill};

    fn record(id: u64, rank: u32, (start, end): (u64, u64), bytes: (u64, u64)) -> TaskRecord {
        serde_json::from_value(serde_json::json!({
            "id": id, "func": "map", "rank": rank, "node": "", "target": null,
            "placed": "Auto", "start_us": start, "end_us": end,
            "local_bytes": bytes.0, "remote_bytes": bytes.1,
            "exit": 0, "attempts": 1, "error": null
        }))
        .unwrap()
    }

    #[test]
    fn spills_are_checked_against_the_wait_they_avoided() {
        // Ranks 0 (node a) and 1 (node b), server 2.
        let names: Vec<String> = ["a", "b", "a"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let layout = Layout::from_names(1, &names).unwrap();
        let mut moved = record(3, 1, (100, 900), (0, 50));
        moved.stage_us = 300;
        moved.spill = Some(Spill {
            from: 0,
            fetch_us: 200,
            wait_us: 800,
        });
        let mut slow = record(4, 1, (100, 900), (0, 50));
        slow.stage_us = 700;
        slow.spill = moved.spill;
        let report = Report {
            run: RunSummary::plain(layout, 0, 1000),
            tasks: vec![
                record(1, 0, (0, 50), (10, 0)),
                // Node a's worker was busy until 600: the spills avoided
                // 500 µs of waiting.
                record(2, 0, (50, 600), (10, 0)),
                moved,
                slow,
            ],
            never_started: Vec::new(),
            dir: PathBuf::new(),
        };
        let checks: Vec<SpillCheck> = report.spill_checks().into_iter().map(|(_, c)| c).collect();
        assert_eq!(checks.len(), 2);
        assert_eq!((checks[0].avoided_us, checks[0].paid()), (500, true));
        assert_eq!((checks[1].fetch_us, checks[1].paid()), (700, false));
        let f = &report.by_function()["map"];
        assert_eq!(
            (f.tasks, f.by[&Placement::Local], f.by[&Placement::Spilled]),
            (4, 2, 2)
        );
        assert_eq!(f.local_share(), 20.0 / 120.0);
        assert_eq!(report.spilled(), 2);
        assert!(report
            .text()
            .contains("1 of 2 fetched in less time than the wait they avoided"));
    }

    #[test]
    fn a_remade_attempt_stopped_by_the_loss_counts_as_stopped_not_as_made_again() {
        let names: Vec<String> = vec!["a".into(), "a".into()];
        let mut run = RunSummary::plain(Layout::from_names(1, &names).unwrap(), 0, 1000);
        run.lost_nodes = vec![("b".into(), "gone".into())];
        let mut made = record(1, 0, (0, 100), (0, 0));
        made.remade = true;
        // Sent to a worker of the lost node before it saw the loss.
        let mut stopped = record(2, 0, (100, 200), (0, 0));
        stopped.remade = true;
        stopped.abandoned = true;
        stopped.error = Some("its node was lost".into());
        let report = Report {
            run,
            tasks: vec![made, stopped],
            never_started: Vec::new(),
            dir: PathBuf::new(),
        };
        let text = report.text();
        assert!(
            text.contains("1 tasks made again the files lost with it; 1 stopped by the loss"),
            "{text}"
        );
    }

    #[test]
    fn a_parallel_task_keeps_each_of_its_workers_busy() {
        let names: Vec<String> = ["a", "a", "b", "a"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        let mut job = record(1, 0, (0, 1000), (30, 5));
        job.job = [(0, "a", 10), (2, "b", 20)]
            .iter()
            .map(|&(rank, node, local)| JobPart {
                rank,
                node: node.into(),
                local_bytes: local,
                ..JobPart::default()
            })
            .collect();
        let report = Report {
            run: RunSummary::plain(Layout::from_names(1, &names).unwrap(), 0, 1000),
            tasks: vec![job],
            never_started: Vec::new(),
            dir: PathBuf::new(),
        };
        let view = RunView::of(&report);
        let on: Vec<(u32, u64)> = view.spans.iter().map(|s| (s.rank, s.local_bytes)).collect();
        assert_eq!(on, [(0, 10), (2, 20)], "drawn on both workers");
        let text = report.text();
        assert!(text.contains("busy: 66.7% of worker time"), "{text}");
    }

    #[test]
    fn workers_are_never_busier_than_the_run_and_failures_show_their_stderr() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tasks")).unwrap();
        std::fs::write(
            dir.path().join("tasks/2.err"),
            "first\n\nsecond\nthird\nlast words\n",
        )
        .unwrap();
        let names: Vec<String> = ["a", "a"]
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        // Rank 0 registers one task's outputs while the next runs: its
        // spans overlap, and one starts before the run's clock.
        let mut failed = record(2, 0, (300, 1200), (0, 0));
        failed.error = Some("exited with code 1".into());
        failed.attempts = 2;
        failed.stderr = Some("tasks/2.err".into());
        failed.func = "fit".into();
        let report = Report {
            run: RunSummary {
                error: Some("app 'fit' failed on a (rank 0): `fit` exited with code 1".into()),
                error_kind: Some(ErrorKind::Task),
                ..RunSummary::plain(Layout::from_names(1, &names).unwrap(), 100, 1100)
            },
            tasks: vec![record(1, 0, (0, 500), (0, 0)), failed],
            never_started: Vec::new(),
            dir: dir.path().to_path_buf(),
        };
        let text = report.text();
        assert!(text.contains("; failed (task): app 'fit' failed"), "{text}");
        assert!(
            text.contains("busy    0.001 s (100.0%)  idle   0.0%"),
            "{text}"
        );
        assert!(text.contains("busy: 100.0% of worker time"), "{text}");
        assert!(
            text.contains("    | second\n    | third\n    | last words\n"),
            "{text}"
        );
        let fit = text.lines().find(|l| l.starts_with("  fit")).unwrap();
        let columns: Vec<&str> = fit.split_whitespace().collect();
        // tasks, failed, retried, resumed, remade, mean, max.
        assert_eq!(
            columns[1..8],
            ["1", "1", "1", "0", "0", "0.001", "0.001"],
            "{fit}"
        );
    }
}
