//! What the live page shows, kept as a run goes: fed each task record once
//! and the leader's counts as they change, with time passed in. Its size is
//! bounded whatever the run's: tasks are added up (per function, per node,
//! per worker and time bucket), and only the latest tasks and the first
//! failures are kept one by one.

use crate::ended::Ended;
use locus_proto::run::Rank;
use locus_runtime::report::Placement;
use locus_runtime::Tally;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Points of the counts-over-time chart; past it, every other is dropped
/// and the step doubles.
const SERIES_POINTS: usize = 240;
/// Columns of the busy chart; past it, neighbours merge and each covers
/// twice the time.
const BUSY_BUCKETS: usize = 120;
/// Tasks drawn one by one in the task stream.
const RECENT: usize = 400;
/// Failed tasks shown in full (the rest are counted).
const FAILURES: usize = 50;
/// Bytes of a failed task's stderr shown (its end).
pub(crate) const STDERR_TAIL: u64 = 2048;
/// Workers drawn as their own rows of the busy chart; past it, a row per
/// node.
const BUSY_ROWS: usize = 64;

/// How the run stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", content = "why", rename_all = "lowercase")]
pub(crate) enum RunState {
    /// Nothing of it seen yet.
    Starting,
    Running,
    Done,
    Failed(String),
    /// Its launcher is gone without writing how the run ended (killed).
    Stopped,
}

/// The run's end as its summary (`run.json`) tells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ending {
    pub(crate) end_us: u64,
    pub(crate) error: Option<String>,
}

/// A file-system node as its daemon answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FsNode {
    pub(crate) node: u32,
    pub(crate) name: String,
    pub(crate) up: bool,
    pub(crate) files: u64,
    pub(crate) bytes: u64,
    pub(crate) free: u64,
    /// Why it did not answer, or why its store fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize)]
struct FuncUse {
    tasks: u64,
    failed: u64,
    seconds: f64,
    max_seconds: f64,
    cpu_seconds: f64,
    max_rss_kib: u64,
}

#[derive(Debug, Default, Clone, Serialize)]
struct NodeUse {
    tasks: u64,
    bytes_local: u64,
    bytes_fetched: u64,
    bytes_written: u64,
    /// Tasks by placement (`local`, `spilled`, …).
    placement: BTreeMap<&'static str, u64>,
    /// Tasks moved here from a busier node: from which node, and the
    /// estimates that moved them (fetch here against the wait there).
    spilled_from: BTreeMap<u32, u64>,
    spill_fetch_ms: f64,
    spill_wait_ms: f64,
}

/// One ended task of the task stream (seconds from the run's start).
#[derive(Debug, Clone, Serialize)]
struct Bar {
    rank: Rank,
    func: Arc<str>,
    start: f64,
    end: f64,
    failed: bool,
}

/// A failed task in full.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Failure {
    pub(crate) id: u64,
    pub(crate) func: String,
    pub(crate) at: String,
    pub(crate) node: String,
    pub(crate) rank: Rank,
    pub(crate) exit: Option<i32>,
    pub(crate) error: String,
    pub(crate) command: String,
    pub(crate) stderr: String,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Point {
    t: f64,
    done: u64,
    failed: u64,
    running: u64,
    waiting: u64,
}

/// Busy time per row and bucket of `width_us`.
#[derive(Debug, Clone)]
struct Busy {
    width_us: u64,
    rows: BTreeMap<Rank, (String, Vec<u64>)>,
}

impl Busy {
    fn add(&mut self, rank: Rank, node: &str, from_us: u64, to_us: u64) {
        while to_us / self.width_us >= BUSY_BUCKETS as u64 {
            self.widen();
        }
        let row = &mut self
            .rows
            .entry(rank)
            .or_insert_with(|| (node.to_string(), vec![0; BUSY_BUCKETS]))
            .1;
        let mut at = from_us;
        while at < to_us {
            let bucket = at / self.width_us;
            let bucket_end = (bucket + 1) * self.width_us;
            let upto = to_us.min(bucket_end);
            row[bucket as usize] += upto - at;
            at = upto;
        }
    }

    fn widen(&mut self) {
        self.width_us *= 2;
        for (_, row) in self.rows.values_mut() {
            for i in 0..BUSY_BUCKETS {
                row[i] = match i < BUSY_BUCKETS / 2 {
                    true => row[2 * i] + row[2 * i + 1],
                    false => 0,
                };
            }
        }
    }

    /// Each row's share of its buckets spent running tasks (a row per
    /// worker, or per node when there are many workers).
    fn shares(&self, upto_us: u64) -> Vec<(String, Vec<f32>)> {
        let buckets = (upto_us / self.width_us + 1).min(BUSY_BUCKETS as u64) as usize;
        let mut rows: BTreeMap<String, (u32, Vec<u64>)> = BTreeMap::new();
        let by_node = self.rows.len() > BUSY_ROWS;
        for (rank, (node, busy)) in &self.rows {
            let name = match by_node {
                true => node.clone(),
                false => format!("rank {rank:>4} · {node}"),
            };
            let row = rows
                .entry(name)
                .or_insert_with(|| (0, vec![0; BUSY_BUCKETS]));
            row.0 += 1;
            for (sum, b) in row.1.iter_mut().zip(busy) {
                *sum += b;
            }
        }
        let width = self.width_us as f32;
        rows.into_iter()
            .map(|(name, (workers, busy))| {
                let room = width * workers as f32;
                // Tasks of one worker may overlap a little (its next one
                // staged while the last commits).
                let share = |b: &u64| (*b as f32 / room).min(1.0);
                (name, busy[..buckets].iter().map(share).collect())
            })
            .collect()
    }
}

/// How late the page learns of a task's end (its record's end to the
/// record being read).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Lag {
    pub(crate) max_ms: f64,
    pub(crate) mean_ms: f64,
    #[serde(skip)]
    n: u64,
}

/// The aggregate a live page draws.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    /// When the watcher started.
    since_us: u64,
    start_us: Option<u64>,
    tally: Option<Tally>,
    ending: Option<Ending>,
    stopped: bool,
    done: u64,
    failed: u64,
    /// Done by an earlier run (`--resume`), or stopped by a lost node and
    /// run again.
    resumed: u64,
    rerun: u64,
    series: Vec<Point>,
    step_us: u64,
    funcs: BTreeMap<Arc<str>, FuncUse>,
    nodes: BTreeMap<String, NodeUse>,
    busy: Busy,
    recent: VecDeque<Bar>,
    failures: Vec<Failure>,
    fs: Vec<FsNode>,
    lag: Lag,
}

impl Live {
    /// A watcher started at `since_us`.
    pub(crate) fn new(since_us: u64) -> Live {
        Live {
            since_us,
            start_us: None,
            tally: None,
            ending: None,
            stopped: false,
            done: 0,
            failed: 0,
            resumed: 0,
            rerun: 0,
            series: Vec::new(),
            step_us: 500_000,
            funcs: BTreeMap::new(),
            nodes: BTreeMap::new(),
            busy: Busy {
                width_us: 1_000_000,
                rows: BTreeMap::new(),
            },
            recent: VecDeque::new(),
            failures: Vec::new(),
            fs: Vec::new(),
            lag: Lag::default(),
        }
    }

    /// The leader's counts, as last written.
    pub(crate) fn tally(&mut self, t: Tally) {
        // Another run started in the directory (resumed): its own page.
        if self.tally.is_some_and(|old| old.start_us != t.start_us) {
            *self = Live::new(self.since_us);
        }
        self.start_us.get_or_insert(t.start_us);
        self.tally = Some(t);
    }

    /// The run ended, as its summary says.
    pub(crate) fn ended(&mut self, e: Ending) {
        self.ending = Some(e);
    }

    /// Its leader counted (the run's ranks started).
    pub(crate) fn began(&self) -> bool {
        self.tally.is_some()
    }

    pub(crate) fn has_ended(&self) -> bool {
        self.ending.is_some()
    }

    /// Its launcher is gone without a summary.
    pub(crate) fn stopped(&mut self) {
        self.stopped = true;
    }

    pub(crate) fn fs(&mut self, nodes: Vec<FsNode>) {
        self.fs = nodes;
    }

    /// Whether a failed task's stderr would be shown (the caller reads it
    /// only then).
    pub(crate) fn wants_stderr(&self, r: &Ended<'_>) -> bool {
        r.ended_as().failed() && self.failures.len() < FAILURES
    }

    /// One task's record, read at `now_us`; `stderr` is the end of its
    /// stderr when `wants_stderr` asked for it.
    pub(crate) fn record(&mut self, r: &Ended<'_>, stderr: Option<String>, now_us: u64) {
        let ended = r.ended_as();
        if r.resumed {
            self.resumed += 1;
            return;
        }
        if ended.stopped() || ended.interrupted() {
            self.rerun += 1;
            return;
        }
        // Only tasks that ended while watched: a page opened late reads
        // the earlier ones at once.
        if r.end_us >= self.since_us {
            let lag_ms = now_us.saturating_sub(r.end_us) as f64 / 1e3;
            self.lag.n += 1;
            self.lag.max_ms = self.lag.max_ms.max(lag_ms);
            self.lag.mean_ms += (lag_ms - self.lag.mean_ms) / self.lag.n as f64;
        }
        let start = *self.start_us.get_or_insert(r.start_us);
        let failed = ended.failed();
        self.done += 1;
        self.failed += u64::from(failed);
        let seconds = r.end_us.saturating_sub(r.start_us) as f64 / 1e6;
        // Names are added once: most records find theirs.
        let func = match self.funcs.get_key_value(&*r.func) {
            Some((name, _)) => name.clone(),
            None => Arc::from(&*r.func),
        };
        let f = self.funcs.entry(func.clone()).or_default();
        f.tasks += 1;
        f.failed += u64::from(failed);
        f.seconds += seconds;
        f.max_seconds = f.max_seconds.max(seconds);
        f.cpu_seconds += r.cpu_us as f64 / 1e6;
        f.max_rss_kib = f.max_rss_kib.max(r.max_rss_kib);
        if !self.nodes.contains_key(&*r.node) {
            self.nodes.insert(r.node.to_string(), NodeUse::default());
        }
        let n = self.nodes.get_mut(&*r.node).expect("added above");
        n.tasks += 1;
        n.bytes_local += r.local_bytes;
        n.bytes_fetched += r.remote_bytes;
        n.bytes_written += r.written_bytes;
        let placed = Placement::of_parts(r.spill.is_some(), r.local_bytes, r.remote_bytes);
        *n.placement.entry(placed.label()).or_default() += 1;
        if let Some(s) = r.spill {
            let spilled = n.spilled_from.values().sum::<u64>() as f64;
            *n.spilled_from.entry(s.from).or_default() += 1;
            n.spill_fetch_ms += (s.fetch_us as f64 / 1e3 - n.spill_fetch_ms) / (spilled + 1.0);
            n.spill_wait_ms += (s.wait_us as f64 / 1e3 - n.spill_wait_ms) / (spilled + 1.0);
        }
        let (from, to) = (
            r.start_us.saturating_sub(start),
            r.end_us.saturating_sub(start),
        );
        for (rank, node) in r.workers() {
            self.busy.add(rank, node, from, to.max(from));
            self.recent.push_back(Bar {
                rank,
                func: func.clone(),
                start: from as f64 / 1e6,
                end: to as f64 / 1e6,
                failed,
            });
        }
        while self.recent.len() > RECENT {
            self.recent.pop_front();
        }
        if failed && self.failures.len() < FAILURES {
            self.failures.push(Failure {
                id: r.id,
                func: r.func.to_string(),
                at: r.at.to_string(),
                node: r.node.to_string(),
                rank: r.rank,
                exit: r.exit,
                error: r.error.clone().unwrap_or_default(),
                command: r.argv.join(" "),
                stderr: stderr.unwrap_or_default(),
            });
        }
    }

    /// Tasks in flight: running (at most one per worker) and waiting.
    fn in_flight(&self) -> (u64, u64) {
        let Some(t) = self.tally.filter(|_| self.state_now().is_live()) else {
            return (0, 0);
        };
        let flying = t.counts.running;
        let running = flying.min(u64::from(t.workers));
        (running, flying - running)
    }

    fn state_now(&self) -> RunState {
        match (&self.ending, self.stopped) {
            (Some(Ending { error: None, .. }), _) => RunState::Done,
            (Some(Ending { error: Some(e), .. }), _) => RunState::Failed(e.clone()),
            (None, true) => RunState::Stopped,
            (None, false) if self.start_us.is_none() => RunState::Starting,
            (None, false) => RunState::Running,
        }
    }

    /// Adds a point of the counts over time, at `now_us` (each poll; kept
    /// `step_us` apart).
    pub(crate) fn sample(&mut self, now_us: u64) {
        let Some(start) = self.start_us else { return };
        let now_us = self
            .ending
            .as_ref()
            .map_or(now_us, |e| e.end_us.min(now_us));
        let t = now_us.saturating_sub(start);
        if let Some(last) = self.series.last() {
            if ((t as f64) / 1e6 - last.t) * 1e6 < self.step_us as f64 {
                return;
            }
        }
        let (running, waiting) = self.in_flight();
        self.series.push(Point {
            t: t as f64 / 1e6,
            done: self.done,
            failed: self.failed,
            running,
            waiting,
        });
        if self.series.len() > SERIES_POINTS {
            let kept: Vec<Point> = self.series.iter().copied().step_by(2).collect();
            self.series = kept;
            self.step_us *= 2;
        }
    }

    /// What the page is sent at `now_us`.
    pub(crate) fn view(&self, now_us: u64) -> View<'_> {
        let start = self.start_us.unwrap_or(now_us);
        let upto = self.ending.as_ref().map_or(now_us, |e| e.end_us);
        let (running, waiting) = self.in_flight();
        View {
            run: self.state_now(),
            seconds: upto.saturating_sub(start) as f64 / 1e6,
            done: self.done,
            failed: self.failed,
            running,
            waiting,
            put: self.tally.map_or(0, |t| t.counts.put),
            resumed: self.resumed,
            rerun: self.rerun,
            workers: self.tally.map_or(0, |t| t.workers),
            series: &self.series,
            funcs: &self.funcs,
            nodes: &self.nodes,
            busy_bucket_s: self.busy.width_us as f64 / 1e6,
            busy: self.busy.shares(upto.saturating_sub(start)),
            recent: &self.recent,
            failures: &self.failures,
            more_failures: self.failed.saturating_sub(self.failures.len() as u64),
            fs: &self.fs,
            lag: self.lag,
        }
    }
}

impl RunState {
    pub(crate) fn is_live(&self) -> bool {
        matches!(self, RunState::Starting | RunState::Running)
    }
}

/// One update of the page (JSON).
#[derive(Debug, Serialize)]
pub(crate) struct View<'a> {
    pub(crate) run: RunState,
    /// Since the run's start (to its end, once it ended).
    pub(crate) seconds: f64,
    /// Tasks ended, and of those failed.
    pub(crate) done: u64,
    pub(crate) failed: u64,
    pub(crate) running: u64,
    pub(crate) waiting: u64,
    /// Released to the workers so far.
    pub(crate) put: u64,
    pub(crate) resumed: u64,
    pub(crate) rerun: u64,
    pub(crate) workers: u32,
    series: &'a [Point],
    funcs: &'a BTreeMap<Arc<str>, FuncUse>,
    nodes: &'a BTreeMap<String, NodeUse>,
    busy_bucket_s: f64,
    busy: Vec<(String, Vec<f32>)>,
    recent: &'a VecDeque<Bar>,
    pub(crate) failures: &'a [Failure],
    more_failures: u64,
    fs: &'a [FsNode],
    pub(crate) lag: Lag,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ended::JobWorker;

    fn task(
        id: u64,
        func: &str,
        start_us: u64,
        end_us: u64,
        error: Option<&str>,
    ) -> Ended<'static> {
        Ended {
            id,
            func: func.to_string().into(),
            rank: (id % 4) as Rank,
            node: format!("node{}", id % 2).into(),
            spill: None,
            start_us,
            end_us,
            local_bytes: 10,
            remote_bytes: 0,
            written_bytes: 5,
            exit: error.map(|_| 3),
            error: error.map(String::from),
            error_kind: None,
            at: "a.swift:3:5".into(),
            argv: vec!["sh".into(), "-c".into(), "exit 3".into()],
            resumed: false,
            abandoned: false,
            lost: Vec::new(),
            cpu_us: 1000,
            max_rss_kib: 64,
            stderr: None,
            job: Vec::new(),
        }
    }

    /// A run of 4 workers whose leader counted it started at 1 s.
    fn started() -> Live {
        let mut live = Live::new(0);
        live.tally(Tally {
            start_us: 1_000_000,
            at_us: 1_000_000,
            counts: Default::default(),
            workers: 4,
        });
        live
    }

    #[test]
    fn tasks_add_up_per_function_node_and_worker() {
        let mut live = started();
        live.record(&task(1, "sim", 1_000_000, 3_000_000, None), None, 3_100_000);
        live.record(
            &task(2, "sim", 1_500_000, 2_000_000, Some("exit 3")),
            Some("boom".into()),
            2_200_000,
        );
        live.record(
            &task(3, "count", 2_000_000, 2_250_000, None),
            None,
            2_300_000,
        );
        let v = live.view(4_000_000);
        assert_eq!((v.done, v.failed, v.run.clone()), (3, 1, RunState::Running));
        let sim = &v.funcs["sim"];
        assert_eq!((sim.tasks, sim.failed, sim.max_seconds), (2, 1, 2.0));
        assert_eq!(v.nodes["node0"].tasks, 1);
        assert_eq!(v.nodes["node1"].bytes_written, 10);
        assert_eq!(v.failures[0].stderr, "boom");
        assert_eq!(v.failures[0].command, "sh -c exit 3");
        // Rank 1 ran task 1 from 0 s to 2 s: its first two buckets full.
        let rank1 = v
            .busy
            .iter()
            .find(|(n, _)| n.starts_with("rank    1"))
            .unwrap();
        assert_eq!(&rank1.1[..3], &[1.0, 1.0, 0.0]);
        assert!((v.lag.max_ms - 200.0).abs() < 1e-6);
    }

    #[test]
    fn a_parallel_task_fills_each_of_its_workers_rows() {
        let mut live = started();
        let mut job = task(4, "sim", 1_000_000, 3_000_000, None);
        job.job = [(0, "node0"), (3, "node1")]
            .into_iter()
            .map(|(rank, node)| JobWorker {
                rank,
                node: node.into(),
            })
            .collect();
        live.record(&job, None, 3_000_000);
        let v = live.view(4_000_000);
        let full = |rank: &str| v.busy.iter().find(|(n, _)| n.starts_with(rank)).unwrap().1[0];
        assert_eq!((full("rank    0"), full("rank    3")), (1.0, 1.0));
        let bars: Vec<Rank> = v.recent.iter().map(|b| b.rank).collect();
        assert_eq!(bars, [0, 3]);
        assert_eq!(v.done, 1);
    }

    #[test]
    fn a_long_run_keeps_the_view_bounded() {
        let mut live = Live::new(0);
        let n = 200_000u64;
        for i in 0..n {
            // 50 tasks a second over 4,000 s; one in a hundred fails.
            let start = i * 20_000;
            let failed = (i % 100 == 0).then_some("exit 1");
            let r = task(i, &format!("f{}", i % 7), start, start + 15_000, failed);
            let stderr = live
                .wants_stderr(&r)
                .then(|| "x".repeat(STDERR_TAIL as usize));
            live.record(&r, stderr, start + 20_000);
            live.sample(start + 20_000);
        }
        let v = live.view(n * 20_000);
        assert_eq!((v.done, v.failed), (n, n / 100));
        assert_eq!(v.failures.len(), FAILURES);
        let json = serde_json::to_string(&v).unwrap();
        assert!(json.len() < 400_000, "{} bytes", json.len());
        assert!(live.series.len() <= SERIES_POINTS && live.recent.len() == RECENT);
        // Every bucket of a worker's row is a share of its time.
        assert!(v
            .busy
            .iter()
            .all(|(_, r)| r.iter().all(|s| (0.0..=1.0).contains(s))));
    }

    #[test]
    fn many_workers_are_drawn_per_node() {
        let mut live = Live::new(0);
        for i in 0..200u64 {
            let mut r = task(i, "f", 0, 1_000_000, None);
            r.rank = i as Rank;
            live.record(&r, None, 1_000_000);
        }
        let v = live.view(1_000_000);
        assert_eq!(v.busy.len(), 2);
        assert_eq!(v.busy[0].1[0], 1.0);
    }

    #[test]
    fn an_ended_or_stopped_run_says_so() {
        let mut live = Live::new(0);
        assert_eq!(live.view(0).run, RunState::Starting);
        live.tally(Tally {
            start_us: 0,
            at_us: 0,
            counts: locus_runtime::Counts {
                put: 5,
                done: 1,
                running: 4,
                failed: 0,
            },
            workers: 2,
        });
        let v = live.view(10);
        assert_eq!((v.running, v.waiting), (2, 2));
        live.stopped();
        assert_eq!(live.view(10).run, RunState::Stopped);
        assert_eq!(live.view(10).running, 0);
        live.ended(Ending {
            end_us: 5,
            error: Some("boom".into()),
        });
        assert_eq!(live.view(10).run, RunState::Failed("boom".into()));
    }
}
