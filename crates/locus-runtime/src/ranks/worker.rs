//! A worker rank: asks its server for tasks and runs them one at a time.
//! An `app` task's Locus inputs are made local first (fetched if another
//! node holds them), its Locus outputs are written in private places in this
//! node's store and published only when the process succeeds, so a failed
//! task leaves every file as it was; host files are used as they are.

mod par;

use crate::exec::apps::Apps;
use crate::exec::files::{fs_path, LOCUS_PREFIX};
use crate::exec::interp::{InterpError, Interpreter, Lang};
use crate::exec::job::JobLauncher;
use crate::exec::process::{self, Capture, Ended, Stream, Usage};
use crate::ranks::layout::Layout;
use crate::ranks::wire;
use crate::records::record::{hash_of, now_us, task_stream, JobPart, Recorder, Seen, TaskRecord};
use locus_fs::{Client, Output};
use locus_proto::auth::Secret;
use locus_proto::fs::Record;
use locus_proto::run::{
    Arg, ErrorKind, Fetched, Outcome, ParPart, Rank, RankMsg, RunError, Stats, Task, Work,
};
use locus_proto::{Cause, Errno, FsResult};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// The longest a finished task's record waits in the buffer.
const RECORD_FLUSH: std::time::Duration = std::time::Duration::from_millis(50);
/// How often a worker checks that its node's file-system daemon answers.
const NODE_WATCH: std::time::Duration = std::time::Duration::from_millis(250);
/// By when a worker has seen its node's daemon gone (two checks in a row
/// find it unreachable) and left.
pub(crate) const NODE_LOSS_SEEN: std::time::Duration = NODE_WATCH.saturating_mul(3);

pub(crate) struct WorkerConfig {
    pub me: Rank,
    pub layout: Arc<Layout>,
    pub server: SocketAddr,
    pub secret: Secret,
    /// This node's file-system client, when the run has a Locus file system.
    pub fs: Option<Client>,
    /// The file system is mounted at `/locus` for this worker's apps, with
    /// this hold on what they write through it.
    pub mounted: Option<locus_mount::Hold>,
    pub run_dir: PathBuf,
    /// Extra attempts for a process that exits non-zero.
    pub retries: u32,
    /// How long an app may run (`--task-timeout`).
    pub task_timeout: Option<std::time::Duration>,
    /// Pass apps' unredirected stdout and stderr to this process's own too
    /// (they are kept in `RUN/tasks/` either way).
    pub echo_apps: bool,
    /// This worker's Python and R interpreters, each started by its first
    /// task.
    pub python: tokio::sync::Mutex<Option<Interpreter>>,
    pub r: tokio::sync::Mutex<Option<Interpreter>>,
    /// One task's work at a time (its app, sleep, interpreter call); a
    /// task registers its outputs after giving this up, so that overlaps
    /// the next task's work (a task sent ahead).
    pub running: tokio::sync::Semaphore,
    /// Set when this worker's node is lost (its daemon stopped answering):
    /// what it writes from then on would be lost with it, so nothing more
    /// is published.
    pub left: std::sync::atomic::AtomicBool,
    /// Runs apps: processes with the rank's environment (`launcher`).
    pub apps: Arc<dyn Apps>,
    /// The most resident memory this worker may use (`--max-memory`):
    /// past it the run fails, naming the task it ran last.
    pub memory_budget: Option<u64>,
    /// Records hold the hashes of the files tasks read and write
    /// (`--record-hashes`, for `--resume=content`).
    pub record_hashes: bool,
    /// Tasks registering their outputs after their work (while the next
    /// one works): with none, nothing else needs this worker's thread
    /// while an app runs.
    pub registering: std::sync::atomic::AtomicUsize,
    /// Told to stop by SIGTERM or SIGINT, it says so to its server and ends
    /// (`RankParts::stop_on_signal`).
    pub stop_on_signal: bool,
    /// Set, and `stop` notified, once told to stop: the apps running end
    /// their tasks as stopped with the run.
    pub stopping: std::sync::atomic::AtomicBool,
    pub stop: tokio::sync::Notify,
    /// This worker's parts of parallel tasks.
    pub jobs: par::Jobs,
    /// What starts a parallel task's MPI job.
    pub job_launcher: JobLauncher,
}

/// How long after its app was killed by SIGTERM or SIGINT a worker told to
/// stop takes it as stopped with the run (the job's end signals both).
const SIGNALLED_TOGETHER: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a worker told to stop waits for its tasks in flight to record
/// how they ended.
const STOP_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Resolves when this process is told to stop (SIGTERM, SIGINT), if `on`.
pub(crate) async fn told_to_stop(on: bool) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Some(mut term), Some(mut int)) = (
        on.then(|| signal(SignalKind::terminate()).ok()).flatten(),
        on.then(|| signal(SignalKind::interrupt()).ok()).flatten(),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

impl WorkerConfig {
    /// Whether this worker left the run (its node was lost).
    fn has_left(&self) -> bool {
        self.left.load(std::sync::atomic::Ordering::Acquire)
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Resolves once this worker is told to stop.
    async fn stopped(&self) {
        loop {
            let told = self.stop.notified();
            if self.is_stopping() {
                return;
            }
            told.await;
        }
    }
}

/// What starts this worker's apps: this process's environment, with the
/// rank's variables set (Swift/T's and Locus's), and without the ones that
/// make a process one of the run's ranks (a process that runs `locus`
/// itself is not, and the launcher's PMI session is the rank's).
pub(crate) fn launcher(me: Rank, layout: &Layout) -> std::io::Result<process::Launcher> {
    process::Launcher::new(
        &[
            ("ADLB_RANK_SELF", me.to_string()),
            ("ADLB_RANK_OFFSET", layout.offset(me).to_string()),
            ("ADLB_RANK_LEADER", layout.node_leader(me).to_string()),
            ("LOCUS_RANK", me.to_string()),
            ("LOCUS_NODE", layout.node_name(me).to_string()),
        ],
        &["LOCUS_SIZE", "PMI_FD"],
    )
}

/// How long a worker that asked for the run to end waits for its end.
const ABORT_HEARD: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves tasks until the server says the run is over.
pub(crate) async fn run_worker(cfg: WorkerConfig) -> Result<(), RunError> {
    let me = cfg.me;
    let server = (cfg.server, cfg.layout.server_of(me));
    let (reader, wr) = wire::connect(server, &cfg.secret, me).await.map_err(|e| {
        RunError::launch(format!(
            "worker rank {me} cannot reach its server {}: {e}",
            cfg.server
        ))
    })?;
    let mut reader = reader.of_a_server();
    let records_err = |e: std::io::Error| RunError::fs(format!("worker rank {me}: records: {e}"));
    let mut records = Recorder::new(&cfg.run_dir, me);
    let lost = |e: std::io::Error| {
        RunError::lost(format!("worker rank {me}: connection to its server: {e}"))
    };
    // Messages go out through a batching writer; tasks sent ahead queue here.
    let (out, writer) = wire::spawn_writer(wr);
    cfg.jobs.connect(&out);
    // A worker whose node's daemon does not answer at its start leaves
    // before it asks for work: its server knows it did not start.
    match &cfg.fs {
        Some(fs) => match Box::pin(fs.ping(fs.node())).await {
            Err(e) if e.is_unreachable() => {
                cfg.left.store(true, std::sync::atomic::Ordering::Release);
                let node = cfg.layout.node_of(me);
                let reason = format!("its file-system daemon does not answer ({e})");
                let _ = out.send(RankMsg::Leave { node, reason });
            }
            _ => {
                let _ = out.send(RankMsg::Want);
            }
        },
        None => {
            let _ = out.send(RankMsg::Want);
        }
    }
    let (tasks, mut queue) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let msg = reader.next().await;
            let end = !matches!(msg, Ok(Some(RankMsg::Run(_) | RankMsg::Par { .. })));
            if tasks.send(msg).is_err() || end {
                return;
            }
        }
    });
    let mut flushed = Instant::now();
    // A worker whose node's daemon is gone leaves the run: its server puts
    // what it was sent elsewhere, and it runs nothing more.
    let watched = cfg.fs.clone().filter(|c| !c.is_diskless());
    let node_lost = async move {
        match watched {
            Some(fs) => fs.lost_node(fs.node(), NODE_WATCH).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(node_lost);
    let budget = cfg.memory_budget;
    let over_budget = async move {
        match budget {
            Some(b) => (crate::engine::memory::past(b).await, b),
            None => std::future::pending().await,
        }
    };
    tokio::pin!(over_budget);
    // The task this worker was sent last (its function and position).
    let mut last: Option<(String, String)> = None;
    let stop = told_to_stop(cfg.stop_on_signal);
    let drain = tokio::time::sleep(STOP_DRAIN);
    tokio::pin!(stop, drain);
    // An app registers its outputs after its process ends: it runs in a
    // tokio task of its own, so that registering overlaps the next task
    // (their work still one at a time: `running`), as does any task that
    // comes while one is in flight; outcomes come back here as they end.
    // Other work with none in flight is done here (a spawn would cost more
    // than a `sleep(0)` does).
    let cfg = Arc::new(cfg);
    let (ended, mut outcomes) = mpsc::unbounded_channel();
    let (mut open, mut in_flight) = (true, 0usize);
    let mut held = Held::default();
    // One timer for the oldest held outcome, set again only when that
    // changes (not made anew at every turn of the loop).
    let expiry = tokio::time::sleep(std::time::Duration::ZERO);
    tokio::pin!(expiry);
    let mut armed = None;
    // Tasks other than apps run on this loop (inline): the budget is
    // watched beside the whole loop, so it is looked at while they run.
    let serving = async {
        while open || in_flight > 0 {
            tokio::select! {
                e = &mut node_lost, if !cfg.has_left() => {
                    cfg.left.store(true, std::sync::atomic::Ordering::Release);
                    let node = cfg.layout.node_of(me);
                    let reason = format!("its file-system daemon stopped answering ({e})");
                    tracing::warn!(
                        "worker rank {me} leaves the run: node {} was lost: {reason}",
                        cfg.layout.node_name(me)
                    );
                    held.report(&out);
                    let _ = out.send(RankMsg::Leave { node, reason });
                }
                msg = queue.recv(), if open => match msg.transpose().map_err(lost)? {
                    Some(Some(RankMsg::Par { msg, .. })) => cfg.jobs.deliver(msg),
                    Some(Some(RankMsg::Run(_))) if cfg.has_left() => {}
                    Some(Some(RankMsg::Run(task))) => {
                        last = Some((task.func.clone(), task.at.clone()));
                        if in_flight > 0 || matches!(task.work, Work::App { .. }) {
                            in_flight += 1;
                            let (cfg, ended) = (cfg.clone(), ended.clone());
                            tokio::spawn(async move {
                                let _ = ended.send(execute(&cfg, task).await);
                            });
                        } else if let Some((outcome, record)) = execute(&cfg, task).await {
                            records.write(&record).map_err(records_err)?;
                            if !cfg.has_left() {
                                let _ = out.send(RankMsg::Done(outcome));
                            }
                        }
                    }
                    _ => {
                        open = false;
                        cfg.jobs.close();
                    }
                },
                Some(ended) = outcomes.recv(), if in_flight > 0 => {
                    in_flight -= 1;
                    if let Some((outcome, record)) = ended {
                        records.write(&record).map_err(records_err)?;
                        // After leaving, the server has put it again elsewhere.
                        if !cfg.has_left() {
                            held.push(outcome, Instant::now());
                        }
                    }
                }
                () = &mut expiry, if armed.is_some() => {}
                () = &mut stop, if !cfg.is_stopping() => {
                    // Stopped from outside with the rest of the run: it takes no
                    // more work, and the tasks in flight end as stopped and are
                    // recorded so (by the branch above) for at most `STOP_DRAIN`.
                    cfg.stopping.store(true, std::sync::atomic::Ordering::Release);
                    cfg.stop.notify_waiters();
                    cfg.jobs.close();
                    open = false;
                    drain.as_mut().reset((Instant::now() + STOP_DRAIN).into());
                }
                () = &mut drain, if cfg.is_stopping() => break,
            }
            let behind = in_flight.saturating_sub(1) + queue.len();
            if !open || held.due(behind, Instant::now()) {
                held.report(&out);
            }
            if held.deadline() != armed {
                armed = held.deadline();
                if let Some(at) = armed {
                    expiry.as_mut().reset(at.into());
                }
            }
            // Records reach the file before the worker may wait (or be killed
            // with its run); short tasks share a write.
            if (in_flight == 0 && queue.is_empty()) || flushed.elapsed() > RECORD_FLUSH {
                records.flush().map_err(records_err)?;
                flushed = Instant::now();
            }
        }
        Ok::<(), RunError>(())
    };
    let over = tokio::select! {
        served = serving => {
            served?;
            None
        }
        past = &mut over_budget => Some(past),
    };
    if let Some((rss, budget)) = over {
        let mib = crate::engine::memory::mib;
        let running = last.as_ref().map_or(String::new(), |(func, at)| {
            format!(", running '{func}' ({at})")
        });
        let reason = RunError::new(
            ErrorKind::Memory,
            format!(
                "worker rank {me} uses {} of memory, over its budget of {} (--max-memory){running}",
                mib(rss),
                mib(budget)
            ),
        );
        // Told to its server, the run's leader reports it, once; the task
        // that grew was dropped with its process. The worker stays until
        // the run ends, so that it is not taken for lost meanwhile.
        if out
            .send(RankMsg::Abort {
                reason: reason.clone(),
            })
            .is_ok()
        {
            let ended = async { while let Some(Ok(Some(RankMsg::Run(_)))) = queue.recv().await {} };
            if tokio::time::timeout(ABORT_HEARD, ended).await.is_ok() {
                return Ok(());
            }
        }
        return Err(reason);
    }

    let stopped = cfg.is_stopping();
    if stopped {
        // Its server hears that this is no loss.
        held.report(&out);
        let _ = out.send(RankMsg::Stopping);
    }
    drop(out);
    let _ = writer.await;
    records.flush().map_err(records_err)?;
    match stopped {
        true => Err(RunError::new(
            ErrorKind::Interrupted,
            format!("worker rank {me} was told to stop (SIGTERM or SIGINT)"),
        )),
        false => Ok(()),
    }
}

/// Outcomes a worker has not reported yet. Each report wakes the server,
/// which for apps of a millisecond cost as much as a fifth of the work
/// beside them: a worker with tasks queued behind the one it runs reports
/// several at once, at most `HOLD_MOST` and none held past `HOLD_FOR`, and
/// reports at once when it is down to its last task (the server then has
/// to send more). A task waiting on a held outcome waits little longer
/// than it would behind the tasks queued there.
#[derive(Default)]
struct Held {
    outcomes: Vec<Outcome>,
    since: Option<Instant>,
}

const HOLD_MOST: usize = 16;
const HOLD_FOR: std::time::Duration = std::time::Duration::from_millis(5);

impl Held {
    fn push(&mut self, o: Outcome, now: Instant) {
        self.outcomes.push(o);
        self.since.get_or_insert(now);
    }

    /// Whether to report now, with `behind` tasks queued behind the one
    /// running.
    fn due(&self, behind: usize, now: Instant) -> bool {
        self.since
            .is_some_and(|t| behind == 0 || self.outcomes.len() >= HOLD_MOST || now >= t + HOLD_FOR)
    }

    /// When the oldest outcome will have been held `HOLD_FOR`.
    fn deadline(&self) -> Option<Instant> {
        self.since.map(|t| t + HOLD_FOR)
    }

    fn take(&mut self) -> Vec<Outcome> {
        self.since = None;
        std::mem::take(&mut self.outcomes)
    }

    /// Sends every held outcome to the server, in order.
    fn report(&mut self, out: &mpsc::UnboundedSender<RankMsg>) {
        for o in self.take() {
            let _ = out.send(RankMsg::Done(o));
        }
    }
}

/// A task's file I/O outside its process: input bytes already on this
/// node and fetched, output bytes registered, and the time each part took.
#[derive(Default)]
struct Io {
    local: u64,
    remote: u64,
    written: u64,
    stage_us: u64,
    commit_us: u64,
    usage: Usage,
    argv: Vec<String>,
    kept: [Option<String>; 2],
    inputs: Vec<Seen>,
    outputs: Vec<Seen>,
    programs: Vec<Seen>,
    /// Locus inputs found lost.
    lost: Vec<String>,
    /// Locus outputs published, with their records.
    made: Vec<(String, locus_proto::fs::Record)>,
    /// With a mount: the Locus inputs as staged (by `/`-rooted path), the
    /// versions the program reads there.
    staged: Vec<(String, locus_proto::fs::Record)>,
    /// Locus files its programs opened through the mount besides its
    /// declared inputs (`/locus/…`).
    read_through_mount: Vec<String>,
    /// A parallel task a worker of whose job was lost: its server runs it
    /// again.
    job_lost_a_worker: bool,
}

/// Runs `task` when this worker's turn comes; `None` if the worker was
/// told to stop before it did: the task never started, has no record, and
/// its server lists it among those it held.
async fn execute(cfg: &WorkerConfig, task: Task) -> Option<(Outcome, TaskRecord)> {
    let running = tokio::select! {
        permit = cfg.running.acquire() => permit.expect("never closed"),
        () = cfg.stopped() => return None,
    };
    if cfg.is_stopping() {
        return None;
    }
    let start_us = now_us();
    let mut io = Io::default();
    let mut exit = None;
    let mut attempts = 1;
    let mut value = None;
    let mut declared = Vec::new();
    let mut job = Vec::new();
    let result = match &task.work {
        Work::Sleep { secs } => {
            if *secs > 0.0 {
                tokio::time::sleep(std::time::Duration::from_secs_f64(*secs)).await;
            }
            Ok(())
        }
        Work::Python { code, expr } => eval(&cfg.python, Lang::Python, code, expr)
            .await
            .map(|v| value = Some(v))
            .map_err(|e| RunError::task(e.to_string())),
        Work::R { code, expr } => eval(&cfg.r, Lang::R, code, expr)
            .await
            .map(|v| value = Some(v))
            .map_err(|e| RunError::task(e.to_string())),
        Work::System { argv } => system(argv, cfg.task_timeout).await.map(|(out, code)| {
            value = Some(out);
            exit = Some(code);
        }),
        Work::App {
            argv,
            stdin,
            stdout,
            stderr,
            outputs,
            unmapped,
            timeout,
        } => {
            let app = App {
                cfg,
                func: &task.func,
                at: &task.at,
                id: task.id,
                unmapped,
                was_lost: task.was_lost,
                known: fresh(task.stats.as_ref()),
                timeout: timeout
                    .map(std::time::Duration::from_secs_f64)
                    .or(cfg.task_timeout),
            };
            declared.clone_from(outputs);
            match &task.par {
                // Another worker reports the task: no outcome, no record.
                Some(par) if par.index > 0 => {
                    Box::pin(app.run_part(par, argv, &mut io)).await;
                    return None;
                }
                Some(par) => {
                    let run = app.run_head(
                        par,
                        argv,
                        outputs,
                        [stdin, stdout, stderr],
                        (&mut io, &mut exit, &mut attempts),
                    );
                    let (parts, result) = Box::pin(run).await;
                    drop(running);
                    job = parts;
                    result
                }
                None => {
                    // Boxed: an app's future is large, and this one is moved
                    // into every task the worker spawns (two copies of it
                    // per task).
                    let run = app.run(
                        argv,
                        outputs,
                        [stdin, stdout, stderr],
                        (&mut io, &mut exit, &mut attempts),
                        running,
                    );
                    Box::pin(run).await
                }
            }
        }
    };
    let error = result.err();
    let abandoned = error.is_some() && (cfg.has_left() || io.job_lost_a_worker);
    let [stdout, stderr] = io.kept;
    let record = TaskRecord {
        id: task.id,
        func: task.func.clone(),
        rank: cfg.me,
        node: cfg.layout.node_name(cfg.me).to_string(),
        target: task.target,
        placed: task.placed,
        spill: task.spill,
        start_us,
        end_us: now_us(),
        local_bytes: io.local,
        remote_bytes: io.remote,
        written_bytes: io.written,
        stage_us: io.stage_us,
        commit_us: io.commit_us,
        exit,
        attempts,
        error: error.as_ref().map(|e| e.message.clone()),
        error_kind: error.as_ref().map(|e| e.kind),
        at: task.at,
        argv: io.argv,
        inputs: io.inputs,
        outputs: io.outputs,
        programs: io.programs,
        key: task.key,
        declared,
        resumed: false,
        remade: task.remade,
        lost: io.lost.clone(),
        abandoned,
        cpu_us: io.usage.cpu_us,
        max_rss_kib: io.usage.max_rss_kib,
        stdout,
        stderr,
        job: job_parts(cfg, job),
    };
    let outcome = Outcome {
        id: task.id,
        rank: cfg.me,
        micros: record.end_us.saturating_sub(start_us),
        error,
        value,
        exit: if matches!(task.work, Work::System { .. }) {
            record.exit
        } else {
            None
        },
        fetched: (record.remote_bytes > 0).then_some(Fetched {
            bytes: record.remote_bytes,
            micros: record.stage_us,
        }),
        lost: io.lost,
        made: io.made,
        read: io.read_through_mount,
    };
    Some((outcome, record))
}

/// `code` then `expr` in this worker's interpreter of `lang`, started by
/// its first call, and again by the call after one it did not survive.
async fn eval(
    interp: &tokio::sync::Mutex<Option<Interpreter>>,
    lang: Lang,
    code: &str,
    expr: &str,
) -> Result<String, InterpError> {
    let mut held = interp.lock().await;
    let interp = match held.as_mut() {
        Some(i) => i,
        None => held.insert(Interpreter::start(lang)?),
    };
    let answer = interp.eval(code, expr).await;
    if answer.as_ref().is_err_and(|e| !e.leaves_it_usable()) {
        *held = None;
    }
    answer
}

/// Swift/T's `system(argv)`: the command's stdout (one trailing newline
/// dropped, as Tcl's `exec` does) and exit code; its stderr passes through.
/// A command that cannot start or is killed by a signal (or the timeout)
/// fails the task; a non-zero exit does not.
async fn system(
    argv: &[String],
    timeout: Option<std::time::Duration>,
) -> Result<(String, i32), RunError> {
    let shown = argv.join(" ");
    let failed = |why: String| RunError::task(format!("system: {why}"));
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| failed("the command is empty".into()))?;
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("cannot run '{shown}': {e}")))?;
    let run = child.wait_with_output();
    let out = match timeout {
        Some(t) => tokio::time::timeout(t, run)
            .await
            .map_err(|_| failed(format!("'{shown}' ran past the task timeout ({t:?})")))?,
        None => run.await,
    }
    .map_err(|e| failed(format!("'{shown}': {e}")))?;
    let code = out.status.code().ok_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        failed(format!(
            "'{shown}' was killed by signal {}",
            out.status.signal().unwrap_or(0)
        ))
    })?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.ends_with('\n') {
        text.pop();
    }
    Ok((text, code))
}

struct App<'a> {
    cfg: &'a WorkerConfig,
    func: &'a str,
    /// Where the script calls it.
    at: &'a str,
    id: u64,
    /// `@timeout`, else the run's `--task-timeout`.
    timeout: Option<std::time::Duration>,
    /// Its inputs' records as its placement read them, while fresh.
    known: &'a [(String, Record)],
    /// Its outputs the script did not map.
    unmapped: &'a [String],
    /// Put again after the worker it was sent to was lost.
    was_lost: bool,
}

/// How long the records a task's placement read of its inputs are used for
/// staging them (as long as the mount caches attributes): a version
/// published within it may be missed, as by any client's cache, and copies
/// moved meanwhile are found by asking again.
const STATS_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

fn fresh(stats: Option<&Stats>) -> &[(String, Record)] {
    let age_ns = |s: &Stats| locus_fs::now_ns().saturating_sub(s.at_ns);
    match stats {
        Some(s) if (0..STATS_FRESH.as_nanos() as i64).contains(&age_ns(s)) => &s.records,
        _ => &[],
    }
}

impl<'a> App<'a> {
    fn fs(&self, path: &str) -> Result<&Client, RunError> {
        self.cfg.fs.as_ref().ok_or_else(|| {
            RunError::fs(format!(
                "app '{}' uses {path}, but this run has no Locus file system",
                self.func
            ))
        })
    }

    /// The host path a process uses for `arg`, staging Locus inputs and
    /// giving Locus outputs a private place. An input found lost is named
    /// in `io.lost`, and its error is `Lost`.
    async fn stage(
        &self,
        arg: &Arg,
        by_program: bool,
        io: &mut Io,
        outputs: &mut Vec<Output>,
    ) -> Result<String, RunError> {
        let why = |p: &str, e: &dyn std::fmt::Display| format!("app '{}': {p}: {e}", self.func);
        let fail = |p: &str, e: &dyn std::fmt::Display| RunError::fs(why(p, e));
        let lost = |io: &mut Io, p: &String, e: &dyn std::fmt::Display| {
            io.lost.push(p.clone());
            RunError::lost(why(p, e))
        };
        match arg {
            Arg::Lit(s) => Ok(s.clone()),
            Arg::In(p) => match fs_path(p) {
                None => {
                    if let Some(seen) = Seen::host(p) {
                        let hash = self.hash(std::path::Path::new(p)).await;
                        io.inputs.push(Seen { hash, ..seen });
                    }
                    Ok(p.clone())
                }
                Some(fp) => {
                    let known = self.known.iter().find(|(k, _)| k == fp).map(|(_, r)| r);
                    // The file system's futures are boxed where awaited:
                    // large, they would make every task's future large.
                    let fetch = self.fs(p)?.local_copy_from(fp, known);
                    let copy = match Box::pin(fetch).await {
                        Ok(copy) => copy,
                        Err(e) => {
                            // Also lost: every copy found bad (lineage may
                            // make it again).
                            let gone = e.code == Errno::ENOENT
                                || e.is_unreachable()
                                || e.cause == Some(Cause::NoGoodCopy);
                            return Err(match gone {
                                true => lost(io, p, &e),
                                false => fail(p, &e),
                            });
                        }
                    };
                    // An input is a closed file: one never closed is being
                    // made again (its first copy lost) — lost for now, so
                    // the task waits for its producer and runs again.
                    if copy.never_closed {
                        return Err(lost(io, p, &"being made again: it was never closed"));
                    }
                    let hash = match (copy.sum, self.cfg.record_hashes) {
                        (Some(sum), true) => Some(locus_fs::sums::hex(&sum)),
                        _ => self.hash(&copy.path).await,
                    };
                    io.inputs.push(Seen {
                        hash,
                        ..Seen::locus(p, copy.stamp)
                    });
                    if copy.fetched {
                        io.remote += copy.size;
                    } else {
                        io.local += copy.size;
                    }
                    // Through the mount, the program opens the copy just made
                    // local under the name the script gave.
                    match (&self.cfg.mounted, by_program) {
                        (Some(_), true) => {
                            io.staged.push((fp.to_string(), copy.record));
                            Ok(p.clone())
                        }
                        _ => Ok(copy.path.display().to_string()),
                    }
                }
            },
            Arg::Out(p) => match fs_path(p) {
                None => {
                    if let Some(dir) = std::path::Path::new(p).parent() {
                        std::fs::create_dir_all(dir).map_err(|e| fail(p, &e))?;
                    }
                    Ok(p.clone())
                }
                Some(fp) => {
                    // A path named twice is one output.
                    if let Some(out) = outputs.iter().find(|o| o.path == fp) {
                        return Ok(out.local.display().to_string());
                    }
                    let out = self.fs(p)?.output(fp).map_err(|e| fail(p, &e))?;
                    let local = out.local.display().to_string();
                    outputs.push(out);
                    Ok(local)
                }
            },
        }
    }

    /// Makes each output the script did not map an empty file where the
    /// program will find it (`staged`: its Locus outputs' private files), as
    /// Swift/T makes them before an app runs; returns those it made. A Locus
    /// one not on its command line is staged too, to be published empty
    /// (unless the program writes it through the mount).
    fn make_unmapped(&self, staged: &mut Vec<Output>) -> Result<Vec<&'a str>, RunError> {
        let fail = |p: &str, e: &dyn std::fmt::Display| {
            RunError::fs(format!("app '{}': making {p}: {e}", self.func))
        };
        let mut made = Vec::new();
        for p in self.unmapped {
            let local = match fs_path(p) {
                Some(fp) => match staged.iter().find(|o| o.path == fp) {
                    Some(out) => out.local.clone(),
                    None => {
                        let out = self.fs(p)?.output(fp).map_err(|e| fail(p, &e))?;
                        let local = out.local.clone();
                        staged.push(out);
                        local
                    }
                },
                None => PathBuf::from(p),
            };
            let created = local
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .write(true)
                        .open(&local)
                });
            created.map_err(|e| fail(p, &e))?;
            made.push(p.as_str());
        }
        Ok(made)
    }

    /// Whether the running attempt wrote Locus file `path` through the
    /// mount (not at a place it was given).
    fn wrote_through_mount(&self, path: &str) -> bool {
        match (&self.cfg.mounted, fs_path(path)) {
            (Some(hold), Some(fp)) => hold.holds(fp),
            _ => false,
        }
    }

    /// The hash of the bytes at `local`, when the run records hashes.
    async fn hash(&self, local: &std::path::Path) -> Option<String> {
        match self.cfg.record_hashes {
            true => hash_of(local.to_path_buf()).await,
            false => None,
        }
    }

    /// Ends the mount's hold on what this attempt wrote through it: what
    /// it read there besides its declared inputs is counted (local or
    /// fetched) and recorded as its inputs, and what it wrote, published if
    /// it succeeded, as its outputs (a resume sees both).
    async fn end_hold(&self, succeeded: bool, io: &mut Io) -> Result<(), RunError> {
        let Some(hold) = &self.cfg.mounted else {
            return Ok(());
        };
        let hash = |sum: Option<locus_proto::fs::Sum>| {
            sum.filter(|_| self.cfg.record_hashes)
                .as_ref()
                .map(locus_fs::sums::hex)
        };
        for read in hold.take_reads() {
            let path = format!("{LOCUS_PREFIX}{}", read.path);
            if io.inputs.iter().any(|s| s.path == path) {
                continue;
            }
            match read.fetched {
                true => io.remote += read.size,
                false => io.local += read.size,
            }
            io.read_through_mount.push(path.clone());
            io.inputs.push(Seen {
                hash: hash(read.sum),
                ..Seen::locus(&path, read.stamp)
            });
        }
        let published = Box::pin(hold.end(succeeded)).await.map_err(|e| {
            RunError::fs(format!("app '{}': publishing {LOCUS_PREFIX}{e}", self.func))
        })?;
        for (path, record) in published {
            let path = format!("{LOCUS_PREFIX}{path}");
            io.written += record.size;
            io.outputs.push(Seen {
                hash: hash(record.sum),
                ..Seen::locus(&path, record.stamp)
            });
            io.made.push((path, record));
        }
        Ok(())
    }

    /// Makes a command line ready to run: its Locus inputs local, its
    /// outputs given private places (`streams` too, if given), the
    /// programs it runs recorded.
    async fn prepare(
        &self,
        argv: &[Arg],
        streams: [&Option<Arg>; 3],
        io: &mut Io,
        how: Staging,
    ) -> Result<Prepared<'a>, RunError> {
        let staging = Instant::now();
        let mut outputs = Outputs {
            fs: self.cfg.fs.as_ref(),
            pending: Vec::new(),
        };
        // Every input is staged, even after one is found lost, so the
        // task names all of them (the run may make them again).
        let mut failure = None;
        let mut staged = Vec::with_capacity(argv.len() + 3);
        // A word is opened by the program; a stream by this worker, and the
        // program itself is started by it: this worker must never wait on
        // its own mount (whose requests this thread's runtime carries), so
        // those are given by their store paths.
        let words = (argv.iter().enumerate()).map(|(i, a)| (Some(a), how.through_mount && i > 0));
        let streams_opened = streams.iter().map(|s| (s.as_ref(), false));
        for (a, by_program) in words.chain(streams_opened) {
            let Some(a) = a else {
                staged.push(None);
                continue;
            };
            match self.stage(a, by_program, io, &mut outputs.pending).await {
                Ok(w) => staged.push(Some(w)),
                Err(e) if e.kind == ErrorKind::Lost => {
                    failure.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let made_empty = match how.make_unmapped {
            true => self.make_unmapped(&mut outputs.pending)?,
            false => Vec::new(),
        };
        let files = staged.split_off(argv.len());
        let words: Vec<String> = staged.into_iter().flatten().collect();
        io.stage_us = staging.elapsed().as_micros() as u64;
        // Messages and records name Locus files by their Locus paths, as
        // the script does: the store paths the program got are private to
        // this attempt (outputs) or to this node.
        io.argv = argv.iter().map(|a| a.text().to_string()).collect();
        let programs = match self.cfg.mounted {
            // Off this thread: a word naming a file through the mount is
            // looked at through it.
            Some(_) => {
                let argv = argv.to_vec();
                let found = tokio::task::spawn_blocking(move || programs_seen(&argv));
                found.await.unwrap_or_default()
            }
            None => programs_seen(argv),
        };
        for (seen, program) in programs {
            let hash = self.hash(&program).await;
            io.programs.push(Seen { hash, ..seen });
        }
        Ok(Prepared {
            outputs,
            words,
            files,
            made_empty,
        })
    }

    /// Stages, runs (with the worker's `running` permit) and publishes.
    async fn run(
        &self,
        argv: &[Arg],
        declared: &[String],
        streams: [&Option<Arg>; 3],
        (io, exit, attempts): (&mut Io, &mut Option<i32>, &mut u32),
        running: tokio::sync::SemaphorePermit<'_>,
    ) -> Result<(), RunError> {
        let Prepared {
            mut outputs,
            words,
            files,
            made_empty,
        } = self.prepare(argv, streams, io, Staging::APP).await?;
        let command = io.argv.join(" ");
        let cfg = self.cfg;
        let node = cfg.layout.node_name(cfg.me);
        loop {
            let started = std::time::SystemTime::now();
            let before: Vec<_> = declared.iter().map(|p| outputs.state(p)).collect();
            if let Some(hold) = &cfg.mounted {
                hold.begin(io.staged.iter().cloned());
            }
            let stopped = || {
                RunError::new(
                    ErrorKind::Interrupted,
                    format!(
                        "app '{}' on {node} (rank {}) was stopped with the run while it ran",
                        self.func, cfg.me
                    ),
                )
            };
            let spawned = tokio::select! {
                spawned = spawn(cfg, self.id, &words, &files, self.timeout) => spawned,
                () = cfg.stopped() => {
                    self.end_hold(false, io).await?;
                    return Err(stopped());
                }
            };
            let ended = match spawned {
                Ok(e) => e,
                Err(e) => {
                    self.end_hold(false, io).await?;
                    return Err(RunError::task(format!(
                        "app '{}': cannot run `{command}` on {node} (rank {}): {e}",
                        self.func, cfg.me
                    )));
                }
            };
            let code = ended.code;
            // A job's end signals the app and its worker at once: an app
            // killed so, whose worker is told to stop just after, was
            // stopped with the run, not failed.
            if cfg.stop_on_signal
                && matches!(code, Some(c) if c == 128 + libc::SIGTERM || c == 128 + libc::SIGINT)
                && tokio::time::timeout(SIGNALLED_TOGETHER, cfg.stopped())
                    .await
                    .is_ok()
            {
                self.end_hold(false, io).await?;
                *exit = code;
                return Err(stopped());
            }
            *exit = code;
            io.usage.cpu_us += ended.usage.cpu_us;
            io.usage.max_rss_kib = io.usage.max_rss_kib.max(ended.usage.max_rss_kib);
            let rel = |p: &Option<PathBuf>| -> Option<String> {
                let p = p.as_ref()?;
                Some(
                    p.strip_prefix(&cfg.run_dir)
                        .unwrap_or(p)
                        .display()
                        .to_string(),
                )
            };
            io.kept = [rel(&ended.kept[0]), rel(&ended.kept[1])];
            let failure = match code {
                Some(0) => declared
                    .iter()
                    .zip(&before)
                    .filter(|(p, _)| !made_empty.contains(&p.as_str()))
                    .find(|(p, was)| {
                        !outputs.written(p, was, started) && !self.wrote_through_mount(p)
                    })
                    // Nextflow's rule: a program that says it succeeded but
                    // did not write what it must have written failed.
                    .map(|(path, _)| {
                        format!("exited 0 without writing its output {path} (missing output)")
                    }),
                Some(code) => Some(format!("exited with code {code}")),
                None => Some(format!(
                    "ran longer than the task timeout ({:?}) and was killed",
                    self.timeout.unwrap_or_default()
                )),
            };
            // What it wrote through the mount: published only if it succeeded.
            self.end_hold(failure.is_none(), io).await?;
            let Some(failure) = failure else { break };
            if *attempts > cfg.retries {
                return Err(RunError::task(format!(
                    "app '{}' failed on {node} (rank {}): `{command}` {failure}{}",
                    self.func,
                    cfg.me,
                    if *attempts > 1 {
                        format!(" ({attempts} attempts)")
                    } else {
                        String::new()
                    }
                )));
            }
            *attempts += 1;
            // The next attempt's streams replace this one's.
            for kept in io.kept.iter_mut().filter_map(Option::take) {
                let _ = std::fs::remove_file(cfg.run_dir.join(kept));
            }
        }
        // Publish the Locus outputs the process wrote; the next task may
        // work meanwhile.
        drop(running);
        self.publish(&mut outputs, io).await?;
        // The host files it wrote, as they are now.
        let host_outputs = (argv.iter().chain(streams.into_iter().flatten()))
            .filter_map(|a| match a {
                Arg::Out(p) => Some(p),
                _ => None,
            })
            .chain(declared)
            .filter(|p| fs_path(p).is_none());
        for p in host_outputs {
            if !io.outputs.iter().any(|s| &s.path == p) {
                if let Some(seen) = Seen::host(p) {
                    let hash = self.hash(std::path::Path::new(p)).await;
                    io.outputs.push(Seen { hash, ..seen });
                }
            }
        }
        Ok(())
    }

    /// Registers the Locus outputs in `outputs` on this node (not on a lost
    /// node: they would be lost with it), counted and named in `io`.
    async fn publish(&self, outputs: &mut Outputs<'_>, io: &mut Io) -> Result<(), RunError> {
        let cfg = self.cfg;
        let node = cfg.layout.node_name(cfg.me);
        let _registering = Registering::new(&cfg.registering);
        if cfg.has_left() {
            return Err(RunError::lost(format!(
                "app '{}' on {node} (rank {}) was not published: its node was lost",
                self.func, cfg.me
            )));
        }
        let committing = Instant::now();
        let made_by = format!(
            "app '{}' at {} in run {}",
            self.func,
            self.at,
            cfg.run_dir.display()
        );
        outputs.drop_published(&io.made);
        for out in &mut outputs.pending {
            out.made_by(made_by.clone());
        }
        let records = match (self.cfg.fs.as_ref(), outputs.pending.is_empty()) {
            (Some(fs), false) => {
                let mut records = Box::pin(fs.commit_all(&outputs.pending)).await;
                if self.was_lost {
                    self.take_back(fs, &outputs.pending, &mut records).await;
                }
                records
            }
            _ => Vec::new(),
        };
        for (out, record) in outputs.pending.iter().zip(records) {
            let record = record.map_err(|e| {
                RunError::fs(format!(
                    "app '{}': registering {LOCUS_PREFIX}{}: {e}",
                    self.func, out.path
                ))
            })?;
            io.written += record.size;
            let path = format!("{LOCUS_PREFIX}{}", out.path);
            // Hashed as it was committed.
            let hash = record.sum.filter(|_| self.cfg.record_hashes);
            io.outputs.push(Seen {
                hash: hash.as_ref().map(locus_fs::sums::hex),
                ..Seen::locus(&path, record.stamp)
            });
            io.made.push((path, record));
        }
        io.commit_us = committing.elapsed().as_micros() as u64;
        Ok(())
    }

    /// Commits again the outputs a lost worker's attempt of this task left
    /// in the way: a write lock it holds (`EBUSY`) is broken, a name it
    /// made without its record (killed between the two steps of a create,
    /// `ENOENT`) removed. A run's file is written by its one task only, and
    /// that attempt will publish nothing (were its worker only stalled, its
    /// commit would fail: its lock is lost).
    async fn take_back(&self, fs: &Client, pending: &[Output], records: &mut [FsResult<Record>]) {
        for (out, record) in pending.iter().zip(records) {
            let Err(left) = record else { continue };
            let cleared = match left.code {
                Errno::EBUSY => fs.break_lock(&out.path).await,
                Errno::ENOENT => match fs.unlink(&out.path).await {
                    Err(e) if e.code == Errno::ENOENT => Ok(()),
                    unlinked => unlinked,
                },
                _ => continue,
            };
            tracing::info!(
                "app '{}': {LOCUS_PREFIX}{} was left by the attempt of a lost worker: {left}",
                self.func,
                out.path
            );
            *record = match cleared {
                Ok(()) => fs.commit(out).await,
                Err(e) => Err(e),
            };
        }
    }
}

/// A parallel task's workers as its record names them. (Most tasks have
/// none: collecting an empty list costs each ~100 instructions.)
fn job_parts(cfg: &WorkerConfig, job: Vec<ParPart>) -> Vec<JobPart> {
    if job.is_empty() {
        return Vec::new();
    }
    (job.into_iter())
        .map(|p| JobPart {
            node: cfg.layout.node_name(p.rank).to_string(),
            rank: p.rank,
            local_bytes: p.local_bytes,
            remote_bytes: p.remote_bytes,
            written_bytes: p.written_bytes,
        })
        .collect()
}

/// The programs an app's command line runs (`programs::run_by`), as they
/// are now.
fn programs_seen(argv: &[Arg]) -> Vec<(Seen, PathBuf)> {
    let found = crate::exec::programs::run_by(argv);
    (found.into_iter())
        .filter_map(|p| Some((Seen::host(&p.display().to_string())?, p)))
        .collect()
}

/// Counts a task among those registering their outputs while it lives.
struct Registering<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Registering<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Registering<'a> {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Registering(count)
    }
}

impl Drop for Registering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What a file is, to tell whether a program wrote it: which file, its
/// size and modification time.
#[derive(PartialEq)]
struct FileState {
    id: (u64, u64),
    len: u64,
    modified: std::time::SystemTime,
}

fn file_state(path: impl AsRef<std::path::Path>) -> Option<FileState> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(FileState {
        id: (m.dev(), m.ino()),
        len: m.len(),
        modified: m.modified().ok()?,
    })
}

/// Whether file `path`, which was `before` when a program started at
/// `since`, is its output: it is there and is new, changed or written
/// since (a file left from before the program ran is not its output).
fn written_since(
    path: impl AsRef<std::path::Path>,
    before: &Option<FileState>,
    since: std::time::SystemTime,
) -> bool {
    let Some(now) = file_state(path) else {
        return false;
    };
    // File systems store coarser times than the clock reads (and a busy
    // VM's coarse clock lags more): a time alone cannot tell a new file.
    let since = since - std::time::Duration::from_millis(10);
    before.as_ref() != Some(&now) || now.modified >= since
}

/// How `App::prepare` readies a command line.
#[derive(Clone, Copy)]
struct Staging {
    /// Its program opens Locus inputs through this worker's mount (else by
    /// their store paths: a job's ranks start outside its namespace).
    through_mount: bool,
    /// The outputs the script did not map are made empty here.
    make_unmapped: bool,
}

impl Staging {
    const APP: Staging = Staging {
        through_mount: true,
        make_unmapped: true,
    };
    /// A parallel task's first worker: its job's ranks start outside this
    /// worker's mount namespace (under a site's launcher).
    pub(super) const JOB_HEAD: Staging = Staging {
        through_mount: false,
        make_unmapped: true,
    };
    /// Another worker of a job: unmapped outputs are made by the first
    /// alone (one place each).
    pub(super) const JOB_PART: Staging = Staging {
        through_mount: false,
        make_unmapped: false,
    };
}

/// A command line ready to run (`App::prepare`).
struct Prepared<'a> {
    outputs: Outputs<'a>,
    /// Its words as the program gets them.
    words: Vec<String>,
    /// Its stdin, stdout and stderr files, if redirected.
    files: Vec<Option<String>>,
    /// The outputs the script did not map, made empty before it runs.
    made_empty: Vec<&'a str>,
}

/// A task's Locus outputs, in private places until published; whatever was
/// not published when the task ends (it failed) is discarded.
struct Outputs<'a> {
    fs: Option<&'a Client>,
    pending: Vec<Output>,
}

impl<'a> Outputs<'a> {
    /// Where output file `path` (a Locus path or a host path) is written: a
    /// Locus output only has a place if the program was given one.
    fn file(&self, path: &str) -> Option<std::path::PathBuf> {
        match fs_path(path) {
            Some(fp) => self
                .pending
                .iter()
                .find(|o| o.path == fp)
                .map(|o| o.local.clone()),
            None => Some(path.into()),
        }
    }

    /// What output file `path` is before a program runs.
    fn state(&self, path: &str) -> Option<FileState> {
        file_state(self.file(path)?)
    }

    /// Whether a program started at `since` wrote output file `path`,
    /// which was `before` then.
    fn written(
        &self,
        path: &str,
        before: &Option<FileState>,
        since: std::time::SystemTime,
    ) -> bool {
        self.file(path)
            .is_some_and(|f| written_since(f, before, since))
    }

    /// Moves the outputs `take` says into outputs of their own.
    fn split(&mut self, take: impl Fn(&Output) -> bool) -> Outputs<'a> {
        let (taken, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|o| take(o));
        self.pending = kept;
        Outputs {
            fs: self.fs,
            pending: taken,
        }
    }

    /// Keeps only the outputs `keep` says; the others' private files go.
    fn retain(&mut self, keep: impl Fn(&Output) -> bool) {
        let (kept, dropped) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|o| keep(o));
        self.pending = kept;
        if let Some(fs) = self.fs {
            for out in &dropped {
                fs.discard(out);
            }
        }
    }

    /// Drops the private files of outputs the program wrote through the
    /// mount instead (published with what it wrote there: `made`).
    fn drop_published(&mut self, made: &[(String, Record)]) {
        let published = |o: &Output| {
            made.iter()
                .any(|(p, _)| fs_path(p) == Some(o.path.as_str()))
        };
        let (dropped, kept) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(published);
        self.pending = kept;
        if let Some(fs) = self.fs {
            for out in &dropped {
                fs.discard(out);
            }
        }
    }
}

impl Drop for Outputs<'_> {
    fn drop(&mut self) {
        if let Some(fs) = self.fs {
            for out in &self.pending {
                fs.discard(out);
            }
        }
    }
}

/// Runs one process of task `id` with the rank's environment; the streams
/// the script does not redirect are kept in `RUN/tasks/<id>.out|.err`.
async fn spawn(
    cfg: &WorkerConfig,
    id: u64,
    words: &[String],
    files: &[Option<String>],
    timeout: Option<std::time::Duration>,
) -> std::io::Result<Ended> {
    let stdin = match &files[0] {
        Some(p) => Stream::File(std::fs::File::open(p)?),
        None => Stream::Null,
    };
    let output = |file: &Option<String>, ext: &str| -> std::io::Result<Stream> {
        Ok(match file {
            Some(p) => Stream::File(std::fs::File::create(p)?),
            None => Stream::Capture(Capture {
                path: cfg.run_dir.join(task_stream(id, ext)),
                echo: cfg.echo_apps,
            }),
        })
    };
    let streams = [stdin, output(&files[1], "out")?, output(&files[2], "err")?];
    // Not with a mount: it answers the app through connections this
    // thread's runtime reads.
    let alone =
        cfg.mounted.is_none() && cfg.registering.load(std::sync::atomic::Ordering::Relaxed) == 0;
    cfg.apps.run(words, streams, timeout, alone).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[tokio::test]
    async fn a_python_call_after_one_its_interpreter_did_not_survive_gets_a_new_one() {
        let held = tokio::sync::Mutex::new(None);
        let py = |code: &'static str, expr: &'static str| eval(&held, Lang::Python, code, expr);
        assert_eq!(py("x = 1", "x").await.unwrap(), "1");
        let err = py("raise ValueError('no')", "").await.unwrap_err();
        assert!(matches!(err, InterpError::Raised { .. }), "{err}");
        assert_eq!(py("", "x").await.unwrap(), "1", "state kept past an error");
        let err = py("import os; os._exit(1)", "").await.unwrap_err();
        assert!(matches!(err, InterpError::Stopped { .. }), "{err}");
        // A new interpreter: the old one's state is gone with it.
        assert_eq!(py("", "'x' in globals()").await.unwrap(), "False");
    }

    #[test]
    fn outcomes_are_held_while_tasks_wait_behind_and_never_long() {
        let done = |id| Outcome {
            id,
            ..Outcome::default()
        };
        let t0 = Instant::now();
        let mut held = Held::default();
        assert!(!held.due(0, t0), "nothing to report");
        held.push(done(1), t0);
        assert!(held.due(0, t0), "the last task: the server must send more");
        assert!(!held.due(3, t0 + Duration::from_millis(1)));
        assert!(held.due(3, t0 + HOLD_FOR), "held too long");
        for id in 2..HOLD_MOST as u64 {
            held.push(done(id), t0 + Duration::from_millis(1));
            assert!(!held.due(5, t0 + Duration::from_millis(1)));
        }
        held.push(done(99), t0 + Duration::from_millis(1));
        assert!(
            held.due(5, t0 + Duration::from_millis(1)),
            "enough for one report"
        );
        let ids: Vec<u64> = held.take().iter().map(|o| o.id).collect();
        assert_eq!(ids.len(), HOLD_MOST);
        assert_eq!((ids[0], ids[HOLD_MOST - 1]), (1, 99));
        // The clock starts again with the next outcome held.
        held.push(done(100), t0 + Duration::from_secs(1));
        assert!(!held.due(5, t0 + Duration::from_secs(1)));
    }

    #[test]
    fn an_output_is_told_by_what_changed_not_only_by_its_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.txt");
        // A clock far ahead of the file system's times, as a busy VM's
        // coarse clock can lag behind the one a program's start reads.
        let since = SystemTime::now() + Duration::from_secs(3600);
        assert!(!written_since(&path, &None, since), "not there");
        std::fs::write(&path, "made").unwrap();
        assert!(written_since(&path, &None, since), "made by the program");
        let before = file_state(&path);
        assert!(!written_since(&path, &before, since), "left from before");
        std::fs::write(&path, "rewritten").unwrap();
        assert!(written_since(&path, &before, since), "rewritten");
        let before = file_state(&path);
        assert!(written_since(&path, &before, SystemTime::now()), "recent");
    }
}
