//! Messages between the ranks of a workflow run: workers ask their server for
//! work and report outcomes, the leader puts leaf tasks on servers, servers
//! steal from each other.

use serde::{Deserialize, Serialize};

pub type Rank = u32;

/// What kind of failure ended a task or a run, for a caller that decides
/// by it (the message is for people).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorKind {
    /// The script itself: an assertion, a value its operation refuses, a
    /// variable written twice, a wait nothing will end.
    Script,
    /// A task's program: it exited non-zero, was killed, ran past its
    /// timeout, raised, or left an output unwritten.
    Task,
    /// Work or files lost with a node or a rank, and not made again.
    Lost,
    /// The file system refused or failed a read or a write.
    Fs,
    /// The ranks of the run could not start or meet.
    Launch,
    /// A server's state passed its memory budget (`--max-memory`).
    Memory,
    /// Calls of composite functions nested past their bound (`--max-depth`).
    Depth,
    /// The run was stopped from outside (SIGINT, SIGTERM: Ctrl-C, `scancel`,
    /// a job's time limit) before it ended.
    Interrupted,
    /// A bug in Locus.
    Internal,
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ErrorKind::Script => "script",
            ErrorKind::Task => "task",
            ErrorKind::Lost => "lost",
            ErrorKind::Fs => "file system",
            ErrorKind::Launch => "launch",
            ErrorKind::Memory => "memory",
            ErrorKind::Depth => "depth",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Internal => "internal",
        })
    }
}

/// A task's or a run's failure: its kind, and its one-line message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct RunError {
    pub kind: ErrorKind,
    pub message: String,
}

impl RunError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RunError {
        RunError {
            kind,
            message: message.into(),
        }
    }

    pub fn script(message: impl Into<String>) -> RunError {
        RunError::new(ErrorKind::Script, message)
    }

    pub fn task(message: impl Into<String>) -> RunError {
        RunError::new(ErrorKind::Task, message)
    }

    pub fn lost(message: impl Into<String>) -> RunError {
        RunError::new(ErrorKind::Lost, message)
    }

    pub fn fs(message: impl Into<String>) -> RunError {
        RunError::new(ErrorKind::Fs, message)
    }

    pub fn launch(message: impl Into<String>) -> RunError {
        RunError::new(ErrorKind::Launch, message)
    }

    pub fn internal(message: impl Into<String>) -> RunError {
        RunError::new(ErrorKind::Internal, message)
    }

    /// The same failure, its message led by `context` (`file:line:col`,
    /// a function's name).
    pub fn within(self, context: impl std::fmt::Display) -> RunError {
        RunError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

/// Where a task must or should run (`location(rank, HARD|SOFT, RANK|NODE)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub rank: Rank,
    /// HARD: never elsewhere. SOFT: preferred, may spill.
    pub hard: bool,
    /// NODE: any worker of `rank`'s node. RANK: that worker.
    pub node: bool,
}

/// How a task's target was chosen, for the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placed {
    /// No target: any worker.
    Anywhere,
    /// `@location`, `@soft_location` or a `location` argument.
    Explicit,
    /// `--locality auto`: the node holding most of the input bytes.
    Auto,
}

/// A task's input file as placement saw it: its size and the nodes (the
/// run's node indices) holding a copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Held {
    pub bytes: u64,
    pub nodes: Vec<u32>,
}

/// A task's Locus inputs' records (by file-system path) as its placement
/// read them, and when (Unix time, ns): its worker reads them from these
/// while they are fresh instead of asking again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub at_ns: i64,
    pub records: Vec<(String, crate::fs::Record)>,
}

/// Why a SOFT task left its preferred node: the estimated time to fetch its
/// missing input bytes to where it ran, against its expected wait there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spill {
    /// The node it was placed at (its target's).
    pub from: u32,
    pub fetch_us: u64,
    pub wait_us: u64,
}

/// Input bytes a worker fetched for a task, and how long making its inputs
/// local took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    pub bytes: u64,
    pub micros: u64,
}

/// One word of a command line or a redirection: text, or a file the worker
/// makes local first (`In`) or registers after success (`Out`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Arg {
    Lit(String),
    In(String),
    Out(String),
}

impl Arg {
    pub fn text(&self) -> &str {
        match self {
            Arg::Lit(s) | Arg::In(s) | Arg::Out(s) => s,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Work {
    /// An `app` call: a process.
    App {
        argv: Vec<Arg>,
        stdin: Option<Arg>,
        stdout: Option<Arg>,
        stderr: Option<Arg>,
        /// The app's output files: each must have been written when it
        /// exits 0, named on its command line or not (but `unmapped`).
        #[serde(default)]
        outputs: Vec<String>,
        /// Those of `outputs` the script did not map (named by the run):
        /// made empty before the program starts, as Swift/T makes them, so
        /// one it does not write is an empty file, not a missing output.
        #[serde(default)]
        unmapped: Vec<String>,
        /// `@timeout`, in seconds (else the run's `--task-timeout`).
        #[serde(default)]
        timeout: Option<f64>,
    },
    /// `sleep(secs)`, a builtin leaf task (Swift/T dispatches it to workers).
    Sleep { secs: f64 },
    /// `python(code, expr)`: in the worker's persistent interpreter.
    Python { code: String, expr: String },
    /// `R(code, expr)`: in the worker's persistent R interpreter.
    R { code: String, expr: String },
    /// `system(argv)`: a command whose stdout and exit code are the value.
    System { argv: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: u64,
    /// The Swift function called.
    pub func: String,
    pub target: Option<Target>,
    pub placed: Placed,
    /// `@prio`: higher runs first.
    pub prio: i64,
    pub work: Work,
    /// Where the script calls it (`file:line:col`), for the records.
    #[serde(default)]
    pub at: String,
    /// What the task is, across runs (`TaskRecord::key`).
    #[serde(default)]
    pub key: String,
    /// Its Locus inputs where placement found them (SOFT and automatically
    /// placed tasks): what leaving its node would cost.
    #[serde(default)]
    pub inputs: Vec<Held>,
    #[serde(default)]
    pub stats: Option<Stats>,
    /// Set by the server that moved it off its preferred node.
    #[serde(default)]
    pub spill: Option<Spill>,
    /// Run again because a file it made was lost with a node (lineage).
    #[serde(default)]
    pub remade: bool,
    /// Put again after the worker it was sent to was lost: that attempt
    /// may still hold its outputs' write locks (until their lease ends).
    #[serde(default)]
    pub was_lost: bool,
    /// `@par=N`: an MPI job over N workers the server reserves together
    /// (boxed: most tasks have none, and tasks are moved often).
    #[serde(default)]
    pub par: Option<Box<Par>>,
}

/// A parallel task's job: its size, and once its server reserved workers
/// for it, their ranks (the job's ranks, in order) and which of them this
/// copy of the task is sent to. The first (`index` 0) launches the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Par {
    pub size: u32,
    #[serde(default)]
    pub ranks: Vec<Rank>,
    #[serde(default)]
    pub index: u32,
    /// Which gathering of its workers this is (a job run again after one
    /// of them was lost is gathered anew, maybe with some of the same).
    #[serde(default)]
    pub gathered: u64,
}

/// One gathering of a parallel task's workers: what their messages are
/// about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobId {
    pub task: u64,
    pub gathered: u64,
}

impl Par {
    pub fn new(size: u32) -> Par {
        Par {
            size,
            ranks: Vec::new(),
            index: 0,
            gathered: 0,
        }
    }

    /// The job this is a part of, for task `task`.
    pub fn job(&self, task: u64) -> JobId {
        JobId {
            task,
            gathered: self.gathered,
        }
    }

    /// The worker that launches the job.
    pub fn head(&self) -> Option<Rank> {
        self.ranks.first().copied()
    }
}

/// Between the workers of a parallel task, through their server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ParMsg {
    /// A part → the head: its inputs are on its node and this is the
    /// command line its ranks run (its outputs' private places there), or
    /// why it cannot take part (with the Locus inputs it found lost).
    Staged {
        job: JobId,
        index: u32,
        argv: Result<Vec<String>, RunError>,
        lost: Vec<String>,
    },
    /// The head → every other part: the job ended, and succeeded or not;
    /// each registers what its ranks wrote only if it did.
    Ended { job: JobId, ok: bool },
    /// A part → the head: what its ranks wrote, registered on its node.
    Registered { job: JobId, part: ParPart },
    /// The server → the parts of a job: one of its workers is gone.
    Gone {
        job: JobId,
        rank: Rank,
        reason: String,
    },
}

impl ParMsg {
    pub fn job(&self) -> JobId {
        match self {
            ParMsg::Staged { job, .. }
            | ParMsg::Ended { job, .. }
            | ParMsg::Registered { job, .. }
            | ParMsg::Gone { job, .. } => *job,
        }
    }
}

/// What one worker of a parallel task did: its node's input bytes (local
/// and fetched) and the outputs its ranks wrote, registered there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParPart {
    pub rank: Rank,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    pub written_bytes: u64,
    pub made: Vec<(String, crate::fs::Record)>,
    /// Why registering failed, if it did.
    pub error: Option<RunError>,
}

/// What became of a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub id: u64,
    pub rank: Rank,
    /// How long the task ran, in microseconds.
    pub micros: u64,
    /// The failure, or `None` on success.
    pub error: Option<RunError>,
    /// What a task that computes a value (`python`) gave.
    #[serde(default)]
    pub value: Option<String>,
    /// The exit code of the command a `system` task ran.
    #[serde(default)]
    pub exit: Option<i32>,
    /// What it fetched from other nodes: how the run learns its links.
    #[serde(default)]
    pub fetched: Option<Fetched>,
    /// Its Locus inputs that could not be read: gone (no name) or held
    /// only by nodes that cannot be reached. The run may make them again.
    #[serde(default)]
    pub lost: Vec<String>,
    /// The Locus files it wrote (as the script names them) and their
    /// records: what names them again if their names are lost.
    #[serde(default)]
    pub made: Vec<(String, crate::fs::Record)>,
    /// Locus files its programs opened through the mount that its command
    /// line does not name (as the script names them): where the run places
    /// the function's next tasks.
    #[serde(default)]
    pub read: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RankMsg {
    /// First message on every connection: who is calling.
    Hello { rank: Rank },
    /// Worker → its server: ready for a task.
    Want,
    /// Server → worker; a worker may be sent several short tasks ahead and
    /// runs them in order.
    Run(Task),
    /// Worker → server, and server → leader.
    Done(Outcome),
    /// Leader → server: queue this task.
    Put(Task),
    /// Server → server: these workers (rank, node index) are idle; send work
    /// they may run.
    Steal { idle: Vec<(Rank, u32)> },
    /// Answer to `Steal` (possibly empty).
    Gift { tasks: Vec<Task> },
    /// Server → leader: the run cannot go on (a worker went away, a
    /// failure in a server's engine).
    Abort { reason: RunError },
    /// Server → server: a message between their dataflow engines (the
    /// runtime's own encoding).
    Engine(Vec<u8>),
    /// Worker → its server: this worker's node was lost (its file-system
    /// daemon cannot be reached); it takes no more work and reports no more
    /// outcomes (its server queues what it had again). Server → every other
    /// server: a worker of node `node` left; each takes the node for lost
    /// (its SOFT work there runs elsewhere, its HARD work fails), the leader
    /// counts it.
    Leave { node: u32, reason: String },
    /// The run is over.
    Shutdown,
    /// Sent on every rank connection, both ways, every few seconds: the
    /// sender's process is running. A connection silent for longer than the
    /// runtime's bound is taken as broken (its peer frozen or cut off).
    Alive,
    /// Worker → its server: this worker was told to stop from outside (its
    /// launcher passing on SIGTERM or SIGINT: `scancel`, a job's time limit,
    /// Ctrl-C): the run is being stopped, and its end is not a loss.
    Stopping,
    /// Server → every other server: worker `rank`'s process is gone
    /// (killed, or its connection broke; `reason` names it); its server
    /// queued what it had again. Each server notes it (a node all of whose
    /// workers are gone takes no work: its SOFT work runs elsewhere, its
    /// HARD work fails); the leader counts it.
    Gone { rank: Rank, reason: String },
    /// Server → leader: worker `rank` left before it asked for work (its
    /// node lost, its process gone, or it failed before it connected):
    /// it did not start, and the leader judges whether the run goes on.
    NotStarted { rank: Rank, reason: String },
    /// Worker → its server → worker `to`: between the parts of a parallel
    /// task.
    Par { to: Rank, msg: ParMsg },
}
