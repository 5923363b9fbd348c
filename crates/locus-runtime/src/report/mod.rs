//! `locus report RUN_DIR`: a run's summary from its task records: tasks,
//! per-worker busy and idle time, how tasks were placed, the locality hit
//! rate and the bytes moved, the apps' CPU and memory, and what failed.

pub mod html;
mod view;

pub use view::{RunView, Span};

use crate::rank::{summary_path, RunSummary};
use crate::record::{self, TaskRecord};
use locus_proto::run::Placed;
use std::fmt::Write;
use std::path::Path;

/// Failed tasks listed by name; the rest are counted.
const SHOWN_FAILURES: usize = 10;

pub struct Report {
    pub run: RunSummary,
    pub tasks: Vec<TaskRecord>,
}

impl Report {
    pub fn load(run_dir: &Path) -> Result<Report, String> {
        let path = summary_path(run_dir);
        let text = std::fs::read(&path).map_err(|e| {
            format!(
                "{}: {e} (is {} a finished run's directory?)",
                path.display(),
                run_dir.display()
            )
        })?;
        let run = serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let tasks = record::load(run_dir).map_err(|e| e.to_string())?;
        Ok(Report { run, tasks })
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

    /// Tasks with a SOFT target that ran off it (another rank for RANK,
    /// another node for NODE).
    pub fn spilled(&self) -> usize {
        let layout = &self.run.layout;
        self.tasks
            .iter()
            .filter(|t| match t.target {
                Some(tg) if tg.node => layout.node_of(tg.rank) != layout.node_of(t.rank),
                Some(tg) => tg.rank != t.rank,
                None => false,
            })
            .count()
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        let wall = self.run.end_us.saturating_sub(self.run.start_us).max(1);
        let failed = self.tasks.iter().filter(|t| t.error.is_some()).count();
        let resumed = self.tasks.iter().filter(|t| t.resumed).count();
        let _ = writeln!(
            s,
            "run: {} tasks ({failed} failed, {resumed} done by an earlier run) in {:.3} s on {} workers, {} server(s), {} node(s){}",
            self.tasks.len(),
            wall as f64 / 1e6,
            self.run.layout.workers(),
            self.run.layout.servers,
            self.run.layout.nodes.len(),
            match &self.run.error {
                Some(e) => format!("; failed: {e}"),
                None => String::new(),
            }
        );
        let mut busy_total = 0u64;
        let _ = writeln!(s, "workers:");
        for w in 0..self.run.layout.workers() {
            let mine = self.tasks.iter().filter(|t| t.rank == w);
            let (n, busy) = mine.fold((0, 0u64), |(n, b), t| {
                (n + 1, b + t.end_us.saturating_sub(t.start_us))
            });
            busy_total += busy;
            let _ = writeln!(
                s,
                "  rank {w:>3} {:<10} {n:>7} tasks  busy {:>8.3} s ({:>5.1}%)  idle {:>5.1}%",
                self.run.layout.node_name(w),
                busy as f64 / 1e6,
                100.0 * busy as f64 / wall as f64,
                100.0 - (100.0 * busy as f64 / wall as f64).min(100.0)
            );
        }
        let capacity = wall * self.run.layout.workers() as u64;
        let _ = writeln!(
            s,
            "busy: {:.1}% of worker time",
            100.0 * busy_total as f64 / capacity.max(1) as f64
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
        let failures: Vec<&TaskRecord> = self.tasks.iter().filter(|t| t.error.is_some()).collect();
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
                "  rank {:>3} {:>9} statements, {} calls or loop shares from other servers, {} sent to them",
                c.rank, c.statements, c.received, c.sent
            );
        }
        s
    }
}
