//! One seed's simulated run: a generated Swift script (stages of `foreach`
//! loops whose tasks read the stage before, through composite functions and
//! branches), run by the real engine, servers and workers in this process
//! (`locus_runtime::InProcess`), its apps answered by closures that compute
//! what a task's output must hold. The seed also draws the layout, apps
//! that fail some attempts (within the retries or beyond them), a variable
//! the script never assigns, and a rank cut as a kill ends its process
//! while tasks run. Half the seeds keep the run's files on a Locus file
//! system in the same process (2 or 3 nodes, with or without a second
//! copy), whose daemon on a node other than the servers' may be killed
//! while tasks run: its files are read from their copies, or made again.
//! The run must end with every output right, or fail naming the cause the
//! seed put in; a run still going at the deadline is a silent wait.

use crate::cluster::{InProcess as FsCluster, Shape};
use locus_fs::{ClientOptions, Durability};
use locus_lang::Source;
use locus_proto::run::{ErrorKind, RunError};
use locus_runtime::{Cut, FakeApps, Finished, InProcess};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one seed's run is given.
#[derive(Debug, Clone)]
pub struct WorkflowConfig {
    /// How long a run may take before it is a silent wait.
    pub deadline: Duration,
    /// A bug put in on purpose, to show the simulation finds its class.
    pub inject: Option<WorkflowInject>,
}

impl Default for WorkflowConfig {
    fn default() -> Self {
        WorkflowConfig {
            deadline: Duration::from_secs(90),
            inject: None,
        }
    }
}

/// Bugs a simulated run can be given on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowInject {
    /// One task's end is never told (its app never returns, as a task a
    /// server lost would be): the run can only wait.
    TaskNeverEnds,
}

/// What a seed's run did, when it ended as it had to.
#[derive(Debug, Clone)]
pub struct WorkflowSummary {
    /// The seed.
    pub seed: u64,
    /// Its app tasks.
    pub tasks: usize,
    /// Workers and servers.
    pub shape: (u32, u32),
    /// How it ended.
    pub ended: Expected,
    /// Whether a file-system node was killed while it ran.
    pub node_lost: bool,
}

/// How a drawn run must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Every output right.
    Done,
    /// A task failed past its retries, naming its app.
    TaskFailed,
    /// Cannot progress, naming the variable never assigned.
    Stalled,
    /// A server was cut: the run is lost, saying so.
    ServerLost,
    /// A rank was cut before it joined the others: the run fails naming it
    /// (at once, from the note the cut rank left; else once the join's time
    /// is out).
    NeverJoined,
}

/// A run that did not end as its seed says it must.
#[derive(Debug, Clone)]
pub struct WorkflowFailure {
    /// The seed that replays it.
    pub seed: u64,
    /// What went wrong.
    pub kind: WorkflowFailureKind,
    /// The draw: script, layout, faults.
    pub drawn: String,
}

/// What a seed's run did wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkflowFailureKind {
    /// It ended, but not in a way the seed allows.
    Wrong(String),
    /// It did not end by the deadline: a silent wait.
    NeverEnded(String),
}

impl fmt::Display for WorkflowFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            WorkflowFailureKind::Wrong(why) => writeln!(f, "seed {}: {why}", self.seed)?,
            WorkflowFailureKind::NeverEnded(why) => {
                writeln!(f, "seed {}: a silent wait: {why}", self.seed)?;
            }
        }
        writeln!(f, "{}", self.drawn)?;
        write!(f, "replay: make simulate-runs SEED={}", self.seed)
    }
}

/// How a stage's task makes its output from the stage before.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `mix(prev[i], prev[(i + k) % w])`.
    Neighbour(u32),
    /// `mix(prev[i], prev[0])`, every task waiting on one file.
    WithFirst,
    /// A composite: `mix(mix(a, b), a)` through an unmapped file.
    Twice(u32),
    /// `mix(a, b)` or `mix(b, a)` by `i`'s parity, in an `if`.
    ByParity(u32),
}

/// The Locus file system a drawn run keeps its files on.
#[derive(Debug, Clone, Copy)]
struct FsDraw {
    /// Its daemons; the servers are on the first node, the workers spread
    /// over all of them in turn.
    nodes: u32,
    /// Copies of each file and record.
    replicas: u32,
    /// A node (never the servers') whose daemon is killed as this many
    /// apps have started.
    lost: Option<(u32, usize)>,
}

/// Drawn apart from the rest, so that a seed's run stays what it was
/// before runs had a file system under them.
const FS_SEED: u64 = 0x10c5_f5f5_10c5_f5f5;

/// Where a run on Locus writes its files (its `--out`).
const LOCUS_OUT: &str = "/locus/out";

/// A seed's draw.
struct Draw {
    width: u32,
    steps: Vec<Step>,
    shape: (u32, u32),
    retries: u32,
    /// The task (by output) whose app fails, and how many attempts.
    failing: Option<(String, u32)>,
    never_assigned: bool,
    cut: Option<Cut>,
    /// The task whose app never ends (`TaskNeverEnds`).
    hanging: Option<String>,
    /// The run's files on Locus; on this machine's file system when `None`.
    fs: Option<FsDraw>,
}

impl Draw {
    fn new(seed: u64, inject: Option<WorkflowInject>) -> Draw {
        let mut rng = StdRng::seed_from_u64(seed);
        let width = rng.gen_range(1..=10);
        let steps = (0..rng.gen_range(1..=4))
            .map(|_| match rng.gen_range(0..4) {
                0 => Step::Neighbour(rng.gen_range(0..width)),
                1 => Step::WithFirst,
                2 => Step::Twice(rng.gen_range(0..width)),
                _ => Step::ByParity(rng.gen_range(0..width)),
            })
            .collect::<Vec<_>>();
        let shape = (rng.gen_range(1..=3), rng.gen_range(1..=2));
        let retries = rng.gen_range(0..=2);
        let stage = rng.gen_range(0..=steps.len());
        let output = output_name(stage, rng.gen_range(0..width));
        let failing = rng.gen_bool(0.3).then(|| (output, rng.gen_range(1..=3)));
        let never_assigned = rng.gen_bool(0.1);
        let tasks = tasks(width, &steps);
        let cut = match rng.gen_range(0..10) {
            // A worker, while there are others to take its tasks.
            0..=2 if shape.0 > 1 => Some(Cut {
                rank: rng.gen_range(0..shape.0),
                after_runs: rng.gen_range(1..=tasks),
            }),
            3 => Some(Cut {
                rank: shape.0 + rng.gen_range(0..shape.1),
                after_runs: rng.gen_range(1..=tasks),
            }),
            _ => None,
        };
        let hanging = (inject == Some(WorkflowInject::TaskNeverEnds)).then(|| {
            let stage = rng.gen_range(0..=steps.len());
            output_name(stage, rng.gen_range(0..width))
        });
        let mut on_fs = StdRng::seed_from_u64(seed ^ FS_SEED);
        let fs = on_fs.gen_bool(0.5).then(|| {
            let nodes = on_fs.gen_range(2..=3);
            FsDraw {
                nodes,
                replicas: on_fs.gen_range(1..=2),
                lost: on_fs
                    .gen_bool(0.5)
                    .then(|| (on_fs.gen_range(1..nodes), on_fs.gen_range(1..=tasks))),
            }
        });
        // A node lost and a rank cut are not drawn together: whether the
        // workers left suffice would depend on which the cut took.
        let cut = match fs {
            Some(FsDraw { lost: Some(_), .. }) => None,
            _ => cut,
        };
        Draw {
            width,
            steps,
            shape,
            retries,
            failing,
            never_assigned,
            cut,
            hanging,
            fs,
        }
    }

    /// The node whose daemon is killed, and after how many app starts.
    fn lost(&self) -> Option<(u32, usize)> {
        self.fs.and_then(|f| f.lost)
    }

    fn node_lost(&self) -> bool {
        self.lost().is_some()
    }

    /// The node of each rank (workers, then servers): none without a file
    /// system.
    fn nodes(&self) -> Vec<String> {
        let Some(fs) = self.fs else {
            return Vec::new();
        };
        let (workers, servers) = self.shape;
        let worker_nodes = (0..workers).map(|w| w % fs.nodes);
        let server_nodes = (0..servers).map(|_| 0);
        worker_nodes.chain(server_nodes).map(node_name).collect()
    }

    /// Ends the run may have: the first a fault would cause, or any of
    /// them when faults race.
    fn allowed(&self) -> Vec<Expected> {
        let worker_cut = matches!(&self.cut, Some(c) if c.rank < self.shape.0);
        let fails = self.failing.as_ref().map_or(0, |(_, n)| *n);
        // Failed attempts on a cut worker, or one whose node was lost (the
        // one it ran as it was cut, and any it started before its end took
        // hold), are lost with it, not counted: the task runs again
        // elsewhere.
        let may_fail = fails > self.retries;
        let must_fail = may_fail && !worker_cut && !self.node_lost();
        let finish = match self.never_assigned {
            true => Expected::Stalled,
            false => Expected::Done,
        };
        let mut ends = match (must_fail, may_fail) {
            (true, _) => vec![Expected::TaskFailed],
            (false, true) => vec![Expected::TaskFailed, finish],
            (false, false) => vec![finish],
        };
        // A server cut after the run's last app started may find it ended
        // as it would have anyway.
        if matches!(&self.cut, Some(c) if c.rank >= self.shape.0) {
            ends.push(Expected::ServerLost);
        }
        // A node lost while its workers start (apps run on the first
        // workers joined) fails the run at start, naming them.
        let lost_workers = self.lost().is_some_and(|(n, _)| n < self.shape.0);
        if self.cut.is_some() || lost_workers {
            ends.push(Expected::NeverJoined);
        }
        ends
    }

    fn script(&self) -> String {
        let mut s = String::from(
            "import files;\nimport string;\nimport sys;\n\n\
             app (file o) gen(int i) { \"gen\" o i }\n\
             app (file o) mix(file a, file b) { \"mix\" o a b }\n\
             (file o) twice(file a, file b) {\n  file t = mix(a, b);\n  o = mix(t, a);\n}\n\n\
             string dir = argv(\"out\");\n",
        );
        let w = self.width;
        let _ = writeln!(s, "file s0[];\nforeach i in [0:{}] {{", w - 1);
        let _ = writeln!(s, "  file o<sprintf(\"%s/s0_%i.txt\", dir, i)> = gen(i);");
        s.push_str("  s0[i] = o;\n}\n");
        for (n, step) in self.steps.iter().enumerate() {
            let (prev, this) = (n, n + 1);
            let _ = writeln!(s, "file s{this}[];\nforeach i in [0:{}] {{", w - 1);
            let _ = writeln!(s, "  file o<sprintf(\"%s/s{this}_%i.txt\", dir, i)>;");
            let line = match step {
                Step::Neighbour(k) => format!("  o = mix(s{prev}[i], s{prev}[(i + {k}) %% {w}]);"),
                Step::WithFirst => format!("  o = mix(s{prev}[i], s{prev}[0]);"),
                Step::Twice(k) => format!("  o = twice(s{prev}[i], s{prev}[(i + {k}) %% {w}]);"),
                Step::ByParity(k) => format!(
                    "  if (i %% 2 == 0) {{\n    o = mix(s{prev}[i], s{prev}[(i + {k}) %% {w}]);\n  }} \
                     else {{\n    o = mix(s{prev}[(i + {k}) %% {w}], s{prev}[i]);\n  }}"
                ),
            };
            let _ = writeln!(s, "{line}\n  s{this}[i] = o;\n}}");
        }
        let last = self.steps.len();
        let _ = writeln!(
            s,
            "foreach i in [0:{}] {{\n  trace(\"r\", i, read(s{last}[i]));\n}}",
            w - 1
        );
        if self.never_assigned {
            let _ = writeln!(
                s,
                "int never;\nif (size(s0) < 0) {{\n  never = 1;\n}}\ntrace(\"never\", never);"
            );
        }
        s
    }

    /// What each stage's outputs must hold.
    fn expected(&self) -> Vec<Vec<String>> {
        let w = self.width as usize;
        let mut stages = vec![(0..w).map(|i| gen_value(i as u64)).collect::<Vec<_>>()];
        for step in &self.steps {
            let prev = stages.last().expect("stage 0");
            let next = (0..w)
                .map(|i| {
                    let at = |k: u32| &prev[(i + k as usize) % w];
                    match step {
                        Step::Neighbour(k) => mix_value(&prev[i], at(*k)),
                        Step::WithFirst => mix_value(&prev[i], &prev[0]),
                        Step::Twice(k) => mix_value(&mix_value(&prev[i], at(*k)), &prev[i]),
                        Step::ByParity(k) if i % 2 == 0 => mix_value(&prev[i], at(*k)),
                        Step::ByParity(k) => mix_value(at(*k), &prev[i]),
                    }
                })
                .collect();
            stages.push(next);
        }
        stages
    }

    fn describe(&self, script: &str) -> String {
        format!(
            "workers {}, servers {}, retries {}, failing {:?}, cut {:?}, hanging {:?}, fs {:?}\n{script}",
            self.shape.0, self.shape.1, self.retries, self.failing, self.cut, self.hanging, self.fs
        )
    }
}

/// App tasks of a draw (`twice` is two).
fn tasks(width: u32, steps: &[Step]) -> usize {
    let per = |s: &Step| if matches!(s, Step::Twice(_)) { 2 } else { 1 };
    width as usize * (1 + steps.iter().map(per).sum::<usize>())
}

fn output_name(stage: usize, i: u32) -> String {
    format!("s{stage}_{i}.txt")
}

/// The name of a file-system node, as the in-process cluster names them.
fn node_name(k: u32) -> String {
    format!("node{k:03}")
}

/// What `gen i` writes.
fn gen_value(i: u64) -> String {
    format!("{:016x}", splitmix(i))
}

/// What `mix a b` writes, given what `a` and `b` hold.
fn mix_value(a: &str, b: &str) -> String {
    let h = a
        .bytes()
        .chain([b'|'])
        .chain(b.bytes())
        .fold(0u64, |h, c| splitmix(h ^ u64::from(c)));
    format!("{h:016x}")
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The apps: `gen` and `mix` as the model computes them, failing or
/// hanging as drawn.
fn apps(draw: &Draw) -> FakeApps {
    let attempts: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let failing = draw.failing.clone();
    let hanging = draw.hanging.clone();
    // Whether this attempt of the task writing `out` fails, or never ends.
    let fate = move |out: &str| -> Option<i32> {
        let name = Path::new(out).file_name()?.to_str()?;
        if hanging.as_deref() == Some(name) {
            return None;
        }
        let mut attempts = attempts.lock().expect("attempts");
        let n = attempts.entry(name.to_string()).or_default();
        *n += 1;
        match &failing {
            Some((task, fails)) if task == name && *n <= *fails => Some(1),
            _ => Some(0),
        }
    };
    let fate = Arc::new(fate);
    let gen_fate = fate.clone();
    FakeApps::default()
        .with_hanging("gen", move |argv, _| {
            let code = gen_fate(&argv[1])?;
            if code == 0 {
                let i = argv[2].parse().expect("gen's index");
                std::fs::write(&argv[1], gen_value(i)).expect("gen's output");
            }
            Some(code)
        })
        .with_hanging("mix", move |argv, _| {
            let code = fate(&argv[1])?;
            if code == 0 {
                let read = |p: &str| std::fs::read_to_string(p).expect("mix's input");
                let value = mix_value(&read(&argv[2]), &read(&argv[3]));
                std::fs::write(&argv[1], value).expect("mix's output");
            }
            Some(code)
        })
}

/// Runs seed `seed`'s workflow and judges how it ended.
pub fn simulate_workflow(
    seed: u64,
    cfg: &WorkflowConfig,
) -> Result<WorkflowSummary, WorkflowFailure> {
    let draw = Draw::new(seed, cfg.inject);
    let script = draw.script();
    let fail = |kind| WorkflowFailure {
        seed,
        kind,
        drawn: draw.describe(&script),
    };
    let harness = |e: &dyn fmt::Display| fail(WorkflowFailureKind::Wrong(e.to_string()));
    let program = locus_lang::compile(&Source::new("test.swift", &script)).map_err(|d| {
        let why = locus_lang::diag::report(&d, &Source::new("test.swift", &script));
        harness(&format!("the script does not compile: {why}"))
    })?;
    // The outputs, or the file system's directory.
    let dir = tempfile::tempdir().map_err(|e| harness(&e))?;
    let cluster = match draw.fs {
        Some(fs) => {
            let shape = Shape {
                nodes: fs.nodes,
                replicas: fs.replicas,
                durability: Durability::Group,
            };
            let cluster = FsCluster::start(dir.path(), shape).map_err(|e| harness(&e))?;
            Some(Arc::new(Mutex::new(cluster)))
        }
        None => None,
    };
    let mut apps = apps(&draw);
    // Whether the drawn node was killed (the run may end before).
    let crashed = Arc::new(AtomicBool::new(false));
    if let (Some(cluster), Some((node, after))) = (&cluster, draw.lost()) {
        let (cluster, crashed) = (cluster.clone(), crashed.clone());
        // As a kill comes: the app that set it off runs on meanwhile.
        apps = apps.once_started(after, move || {
            crashed.store(true, Ordering::Relaxed);
            std::thread::spawn(move || cluster.lock().expect("cluster").crash(node));
        });
    }
    let run = InProcess {
        shape: draw.shape,
        deadline: cfg.deadline,
        cut: draw.cut,
        nodes: draw.nodes(),
    };
    let retries = draw.retries;
    let (out, fs_dir) = match &cluster {
        Some(c) => (
            LOCUS_OUT.into(),
            Some(c.lock().expect("cluster").dir().to_path_buf()),
        ),
        None => (dir.path().display().to_string(), None),
    };
    let finished = run
        .run(program, apps, |o| {
            o.retries = retries;
            o.args = vec![format!("--out={out}")];
            o.fs_dir = fs_dir;
        })
        .map_err(|e| fail(WorkflowFailureKind::NeverEnded(e.to_string())))?;
    let allowed = draw.allowed();
    let outputs = Outputs::of(dir.path(), cluster.as_deref()).map_err(|e| harness(&e))?;
    let ended = judge(&draw, &finished, &outputs, &allowed)
        .map_err(|why| fail(WorkflowFailureKind::Wrong(why)))?;
    Ok(WorkflowSummary {
        seed,
        tasks: tasks(draw.width, &draw.steps),
        shape: draw.shape,
        ended,
        node_lost: crashed.load(Ordering::Relaxed),
    })
}

/// Where a finished run's outputs are read: this machine's directory, or
/// the file system, its killed daemon started again (what it had written
/// kept, as a restarted node's disk keeps it).
enum Outputs<'a> {
    Here(&'a Path),
    Locus(locus_fs::Client, tokio::runtime::Runtime),
}

impl Outputs<'_> {
    fn of<'a>(dir: &'a Path, cluster: Option<&Mutex<FsCluster>>) -> Result<Outputs<'a>, String> {
        let Some(cluster) = cluster else {
            return Ok(Outputs::Here(dir));
        };
        let mut cluster = cluster.lock().expect("cluster");
        let nodes = cluster.spec().map_err(|e| e.to_string())?.nodes.len();
        for node in 0..nodes as u32 {
            cluster.restart(node).map_err(|e| e.to_string())?;
        }
        let client = cluster
            .client(ClientOptions::default())
            .map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Outputs::Locus(client, rt))
    }

    /// What output `name` holds, or why it cannot be read.
    fn read(&self, name: &str) -> String {
        match self {
            Outputs::Here(dir) => {
                std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| e.to_string())
            }
            Outputs::Locus(client, rt) => {
                let path = format!("{}/{name}", LOCUS_OUT.trim_start_matches("/locus"));
                match rt.block_on(client.get(&path)) {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(e) => e.to_string(),
                }
            }
        }
    }
}

/// How the run ended, if `allowed` has it and it kept every promise.
fn judge(
    draw: &Draw,
    run: &Finished,
    outputs: &Outputs,
    allowed: &[Expected],
) -> Result<Expected, String> {
    let ended = match &run.result {
        Ok(()) => Expected::Done,
        Err(e) => classify(e)?,
    };
    if !allowed.contains(&ended) {
        let how = match &run.result {
            Ok(()) => "done".to_string(),
            Err(e) => format!("failed ({:?}): {e}", e.kind),
        };
        return Err(format!(
            "the run ended {how}; it had to end as one of {allowed:?}"
        ));
    }
    if ended != Expected::Done {
        return Ok(ended);
    }
    let expected = draw.expected();
    for (stage, values) in expected.iter().enumerate() {
        for (i, want) in values.iter().enumerate() {
            let name = output_name(stage, i as u32);
            let got = outputs.read(&name);
            if &got != want {
                return Err(format!("{name} holds {got:?}, not {want:?}"));
            }
        }
    }
    let last = expected.last().expect("a last stage");
    let mut traced: Vec<&str> = (run.out.lines())
        .filter(|l| l.starts_with("trace: r,"))
        .collect();
    traced.sort_unstable();
    let mut want: Vec<String> = (last.iter().enumerate())
        .map(|(i, v)| format!("trace: r,{i},{v}"))
        .collect();
    want.sort_unstable();
    if traced != want {
        return Err(format!("traced {traced:?}, not {want:?}"));
    }
    let records = run.records().map_err(|e| format!("records: {e}"))?;
    let done: Vec<_> = records.iter().filter(|r| r.error.is_none()).collect();
    let tasks = tasks(draw.width, &draw.steps);
    // A worker cut between its app's end and its answer has its task run
    // again elsewhere, and a lost node's files are made again; nothing
    // else runs a task twice.
    let worker_cut = matches!(&draw.cut, Some(c) if c.rank < draw.shape.0);
    let again = worker_cut || draw.node_lost();
    if done.len() < tasks || (!again && done.len() != tasks) {
        return Err(format!("{} tasks recorded done, of {tasks}", done.len()));
    }
    if let Some((task, fails)) = &draw.failing {
        let rec = done
            .iter()
            .find(|r| r.argv.get(1).is_some_and(|o| o.ends_with(task.as_str())));
        match rec {
            Some(r) if again || r.attempts == fails + 1 => {}
            other => {
                let attempts = other.map(|r| r.attempts);
                return Err(format!("{task}: attempts {attempts:?}, not {}", fails + 1));
            }
        }
    }
    Ok(Expected::Done)
}

/// Which drawn cause a failed run names.
fn classify(e: &RunError) -> Result<Expected, String> {
    let named = |what: &str| e.message.contains(what);
    match e.kind {
        ErrorKind::Task if named("app 'gen'") || named("app 'mix'") => Ok(Expected::TaskFailed),
        ErrorKind::Script if named("cannot progress") && named("never") => Ok(Expected::Stalled),
        ErrorKind::Lost => Ok(Expected::ServerLost),
        ErrorKind::Launch
            if named("did not connect") || named("cannot reach") || named("did not start") =>
        {
            Ok(Expected::NeverJoined)
        }
        _ => Err(format!(
            "the run failed ({:?}) naming no drawn cause: {e}",
            e.kind
        )),
    }
}
