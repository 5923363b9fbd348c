//! The dataflow engine: executes the IR of a checked program. Every variable
//! is a future in the store; every statement is a control task that waits
//! for the futures it reads, then runs. A statement is *done* when it and
//! all the work it started are done (tracked by dropping shared guards); a
//! container closes when every statement of its scope that writes it is done.
//! Leaf tasks (`app` calls, `sleep`) are put on the servers' queues through
//! the `Dispatch` and run by workers; the engine places them (explicit
//! locations, or `--locality auto`) and awaits their outcomes.
//!
//! Every server runs an engine. The leader's runs `main`; composite calls
//! and shares of large `foreach` loops go to the servers in turn
//! (`remote`), each keeping the futures it creates.

use crate::builtins::storage::Storage;
use crate::builtins::{self, Context};
use crate::engine::ids::IdMap;
use crate::engine::plan::{Block, Plans};
use crate::engine::store::{FutureId, Store};
use crate::engine::value::{Key, Value};
use crate::ranks::cost;
use crate::ranks::server::Dispatch;
use depth::Chain;
use locus_lang::builtins::{Builtin, Run, Task as TaskFn};
use locus_lang::ir::{self, Const, FnKind, Function, Program, Stmt, VarId, Word};
use locus_lang::types::Type;
use locus_proto::run::{Arg, ErrorKind, Held, Outcome, Placed, RunError, Target, Task, Work};
use remote::{ControlStats, Items, Msg, Remote, Status};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

pub(crate) mod depth;
mod distribution;
pub(crate) mod ids;
mod interp;
mod leaf;
mod lineage;
pub(crate) mod memory;
mod mount_reads;
pub(crate) mod plan;
pub(crate) mod remote;
mod stall;
pub(crate) mod store;
pub(crate) mod value;

/// Whether leaf tasks without a location are placed by their input data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locality {
    /// SOFT NODE at the node holding most of the task's Locus input bytes.
    Auto,
    /// Anywhere (the locality-agnostic baseline).
    Off,
}

impl std::str::FromStr for Locality {
    type Err = String;
    fn from_str(s: &str) -> Result<Locality, String> {
        match s {
            "auto" => Ok(Locality::Auto),
            "off" => Ok(Locality::Off),
            _ => Err(format!("'{s}': expected auto or off")),
        }
    }
}

/// Where a run's leaf tasks stand, every server's added up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Released to the workers so far.
    pub put: u64,
    pub done: u64,
    /// Released and not done: waiting for a worker or running.
    pub running: u64,
    /// Done, and failed (after any retries).
    pub failed: u64,
}

/// Shows a run's leaf tasks done out of those put, as they change (the
/// embedder's progress display; the leader's only).
pub trait Progress: Send + Sync {
    fn show(&self, counts: Counts);
}

pub struct RunOptions {
    /// Where leaf tasks and messages to other engines go.
    pub dispatch: Arc<Dispatch>,
    /// This server's index and the number of servers.
    pub server: u32,
    pub servers: u32,
    /// The rank of the first server (the leader).
    pub first_server: locus_proto::run::Rank,
    /// The run's layout and file system, for placement and storage builtins.
    pub storage: Storage,
    pub locality: Locality,
    /// Names the run's directory of unmapped Locus files, `/locus/tmp/<run>/`.
    pub run_id: String,
    /// The script's command line (flags and positional arguments).
    pub args: crate::CommandLine,
    /// Where unmapped files go when the run has no Locus file system.
    pub run_dir: PathBuf,
    /// Where `trace`/`printf` output goes.
    pub out: Arc<Mutex<dyn Write + Send>>,
    /// How long without progress (and nothing running) means stuck.
    pub stall: Duration,
    /// Leaf tasks done / put, shown while the run goes (a terminal only).
    pub progress: Option<Arc<dyn Progress>>,
    /// Apps are not started: each call's decision is written to the plan
    /// and its outputs taken as made (`--dry-run`).
    pub dry_run: bool,
    /// Task keys, and what earlier runs did (`--resume`).
    pub resume: crate::records::resume::Resume,
    /// The most resident memory this server may use (`memory`).
    pub memory_budget: Option<u64>,
    /// How deep calls of composite functions may nest (`depth`).
    pub max_depth: u32,
    /// A task's failure does not end the run: what does not depend on it
    /// still runs (`--keep-going`).
    pub keep_going: bool,
}

pub struct Engine {
    /// The script, then its modules: where calls are, for errors.
    files: Vec<String>,
    funcs: HashMap<String, Arc<Function>>,
    /// Each function's body and every block, prepared once.
    plans: Plans,
    /// Futures made by each block's runs, for a run out of memory.
    made: memory::Made,
    store: Store,
    remote: Remote,
    /// Work sent to other servers and not finished, holding its caller's guard.
    shipped: Mutex<IdMap<Arc<Done>>>,
    opts: RunOptions,
    failure: Mutex<Option<RunError>>,
    failed: Notify,
    /// With `keep_going`: the tasks that failed, and the work of their
    /// statements, held so that it never ends.
    kept: Mutex<Vec<(RunError, Arc<Done>)>>,
    /// Bumped by every completed step; the stall detector watches it.
    progress: AtomicU64,
    /// Names of futures some task waits on, for the stall report.
    waiting: Mutex<HashMap<FutureId, (String, usize)>>,
    temp_files: AtomicU64,
    /// Members added by `+=` here, for their keys.
    appended: AtomicU64,
    /// Statements run, calls and `foreach` shares received and sent.
    statements: AtomicU64,
    received: AtomicU64,
    sent: AtomicU64,
    /// Leaf tasks put and done by this engine; those between are running
    /// (processes, timers), and no progress is expected meanwhile.
    tasks_put: AtomicU64,
    tasks_done: AtomicU64,
    tasks_failed: AtomicU64,
    /// File-system calls made for the script between its steps (`outside`)
    /// under way: no progress is expected meanwhile either.
    outside: AtomicU64,
    /// What made each Locus file of the run this engine put a task for.
    lineage: lineage::Lineage,
    /// What each function's tasks read through the mount.
    mount_reads: mount_reads::MountReads,
}

/// The value of a `void` future: set when what it signals is done.
const SIGNAL: Value = Value::Bool(true);

/// Runs a statement's completion callback once the statement and all the
/// work it started have dropped their clones.
struct Done {
    /// Held so the parent is done only after this; let go of in `drop`.
    parent: Option<Arc<Done>>,
    on_done: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Done {
    fn new(parent: Option<Arc<Done>>, f: impl FnOnce() + Send + 'static) -> Arc<Done> {
        Arc::new(Done {
            parent,
            on_done: Mutex::new(Some(Box::new(f))),
        })
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(f) = self.on_done.lock().expect("done").take() {
            f();
        }
        // Parents this was the last holder of are done too, one after the
        // other here: dropped recursively, the chain of a recursion a
        // million calls deep overflowed the stack.
        let mut parent = self.parent.take();
        while let Some(mut done) = parent.and_then(Arc::into_inner) {
            if let Some(f) = done.on_done.get_mut().expect("done").take() {
                f();
            }
            // `done` goes with neither callback nor parent: no recursion.
            parent = done.parent.take();
        }
    }
}

/// Variable bindings of one function activation, or of one iteration or
/// branch inside it (which sees its parent's).
/// Bindings sorted by variable id: cheaper than a map for the few
/// variables most frames bind.
struct Frame {
    vars: Mutex<Vec<(VarId, FutureId)>>,
    parent: Option<Arc<Frame>>,
    /// The calls that led to this activation.
    chain: Arc<Chain>,
}

impl Frame {
    fn new(parent: Option<Arc<Frame>>) -> Arc<Frame> {
        let chain = parent.as_ref().map(|p| p.chain.clone()).unwrap_or_default();
        Arc::new(Frame {
            vars: Mutex::new(Vec::new()),
            parent,
            chain,
        })
    }

    fn bind(&self, var: VarId, f: FutureId) {
        let mut vars = self.vars.lock().expect("frame");
        // Variables are mostly bound in id order: usually an append.
        match vars.binary_search_by_key(&var, |(v, _)| *v) {
            Ok(i) => vars[i].1 = f,
            Err(i) => vars.insert(i, (var, f)),
        }
    }

    /// Every variable this frame sees, for work run on another server.
    fn flatten(&self) -> Vec<(VarId, FutureId)> {
        let mut all = BTreeMap::new();
        let mut frame = Some(self);
        while let Some(f) = frame {
            for (v, id) in f.vars.lock().expect("frame").iter() {
                // The innermost binding of a name wins.
                all.entry(*v).or_insert(*id);
            }
            frame = f.parent.as_deref();
        }
        all.into_iter().collect()
    }

    /// The frame of an activation whose variables are `binds`.
    fn with_bindings(binds: &[(VarId, FutureId)], chain: Arc<Chain>) -> Arc<Frame> {
        let mut vars = binds.to_vec();
        vars.sort_unstable_by_key(|(v, _)| *v);
        Arc::new(Frame {
            vars: Mutex::new(vars),
            parent: None,
            chain,
        })
    }

    fn get(&self, var: VarId) -> FutureId {
        let found = {
            let vars = self.vars.lock().expect("frame");
            vars.binary_search_by_key(&var, |(v, _)| *v)
                .ok()
                .map(|i| vars[i].1)
        };
        if let Some(f) = found {
            return f;
        }
        match &self.parent {
            Some(p) => p.get(var),
            None => panic!("variable %{var} used before its declaration"),
        }
    }
}

fn is_container(t: &Type) -> bool {
    matches!(t, Type::Array { .. } | Type::Struct(_) | Type::Updateable)
}

impl Engine {
    pub fn new(program: Program, opts: RunOptions) -> Arc<Engine> {
        let mut funcs: HashMap<String, Arc<Function>> = program
            .functions
            .into_iter()
            .map(|f| (f.name.clone(), Arc::new(f)))
            .collect();
        funcs.insert("main".into(), Arc::new(program.main));
        let plans = Plans::new(funcs.values().map(|f| &**f));
        let remote = Remote::new(
            opts.server,
            opts.servers,
            opts.first_server,
            opts.dispatch.clone(),
        );
        Arc::new(Engine {
            files: program.files,
            funcs,
            made: memory::Made::new(plans.len()),
            plans,
            store: Store::new(opts.server),
            remote,
            shipped: Mutex::default(),
            opts,
            failure: Mutex::new(None),
            failed: Notify::new(),
            kept: Mutex::new(Vec::new()),
            progress: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
            temp_files: AtomicU64::new(0),
            appended: AtomicU64::new(0),
            statements: AtomicU64::new(0),
            received: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            tasks_put: AtomicU64::new(0),
            tasks_done: AtomicU64::new(0),
            tasks_failed: AtomicU64::new(0),
            outside: AtomicU64::new(0),
            lineage: Default::default(),
            mount_reads: Default::default(),
        })
    }

    /// Starts watching this server's memory (`memory`) and taking messages
    /// from the other servers' engines; on a server other than the leader,
    /// also reports progress to the leader.
    pub fn start(self: &Arc<Self>) {
        let e = self.clone();
        tokio::spawn(async move {
            let over = e.over_budget(e.opts.memory_budget).await;
            e.fail(over);
        });
        let Some(mut inbox) = self.opts.dispatch.inbox() else {
            return;
        };
        let e = self.clone();
        tokio::spawn(async move {
            while let Some((from, bytes)) = inbox.recv().await {
                match postcard::from_bytes::<Msg>(&bytes) {
                    Ok(msg) => e.received_msg(e.remote.index_of(from), msg),
                    Err(err) => e.fail(RunError::internal(format!(
                        "a message from rank {from}: {err}"
                    ))),
                }
            }
        });
        if self.remote.me == 0 {
            return;
        }
        let e = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(e.opts.stall / 4).await;
                e.remote.send(0, &Msg::Progress(e.progress_now()));
            }
        });
    }

    /// Runs `main` to the end: `Ok` when every statement is done, `Err`
    /// with the first failure, or with a report when the run cannot progress.
    /// No progress on any server while no leaf task runs means stuck.
    pub async fn run(self: &Arc<Self>) -> Result<(), RunError> {
        let (tx, rx) = oneshot::channel();
        let main = self.funcs["main"].clone();
        {
            let root = Done::new(None, move || {
                let _ = tx.send(());
            });
            let frame = Frame::new(None);
            self.exec_block(&main, &frame, self.plans.body("main"), &root);
        }
        let stalled = async {
            let mut last = u64::MAX;
            loop {
                tokio::time::sleep(self.opts.stall).await;
                let (mine, others) = (self.progress_now(), self.remote.others());
                let now = mine.steps + others.steps;
                let busy = mine.external + others.external + mine.outside + others.outside;
                if now == last && busy == 0 {
                    return;
                }
                last = now;
            }
        };
        // Files a lost node took are made again as soon as it is known
        // lost, beside the run's other work, not when a task needs them.
        let repairing = {
            let e = self.clone();
            tokio::spawn(async move {
                loop {
                    e.opts.dispatch.node_lost().await;
                    if let Err(err) = e.repair().await {
                        e.fail(err);
                    }
                }
            })
        };
        tokio::select! {
            _ = rx => {}
            _ = self.failed.notified() => {}
            reason = self.opts.dispatch.aborted() => return Err(reason),
            _ = stalled => return Err(self.stall_report().await),
        }
        // (A repair in flight goes on: the last one below waits for its
        // tasks rather than putting them again.)
        drop(repairing);
        if let Some(e) = self.failure.lock().expect("failure").clone() {
            return Err(e);
        }
        // A node lost during the run may have taken files made since the
        // last repair: they are made again before the run ends.
        let lost = self.opts.dispatch.lost_nodes();
        if !lost.is_empty() {
            let names: Vec<&str> = lost.iter().map(|(n, _)| n.as_str()).collect();
            let found = self.repair().await?;
            tracing::warn!(
                "lost during the run: {}; {found} files found lost at its end, made again; \
                 {} lost names given back here from copies that survived",
                names.join(", "),
                self.reinstated()
            );
        }
        Ok(())
    }

    /// Fails the run: on the leader, it ends; another server tells the
    /// leader.
    /// Makes a panic anywhere in this process a failure of the run, named
    /// as an internal error, rather than a control task gone silently and
    /// the run stalling. Only a panic on the calling thread counts: the rank's tasks all run
    /// on it (a current-thread runtime); one on a blocking thread ends in an
    /// error its awaiter handles, and one on another thread of a test
    /// running several ranks is another rank's.
    pub fn fail_on_panic(self: &Arc<Self>) {
        let engine = Arc::downgrade(self);
        let rank_thread = std::thread::current().id();
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            report(info);
            if std::thread::current().id() != rank_thread {
                return;
            }
            if let Some(e) = engine.upgrade() {
                e.fail(RunError::internal(format!(
                    "internal error (a bug in Locus): {info}"
                )));
            }
        }));
    }

    fn fail(&self, e: RunError) {
        let mut f = self.failure.lock().expect("failure");
        if f.is_none() {
            if self.remote.me != 0 {
                self.opts.dispatch.report_abort(e.clone());
            }
            *f = Some(e);
        }
        self.failed.notify_one();
    }

    /// A task that failed at a statement whose work is `done`: with
    /// `keep_going`, the statement never ends — what it writes stays open,
    /// so nothing depending on it runs and no container it writes closes
    /// short — and the run ends when nothing else can progress; else the
    /// run fails.
    fn task_failed(&self, e: RunError, done: &Arc<Done>) {
        if !(self.opts.keep_going && e.kind == ErrorKind::Task) {
            return self.fail(e);
        }
        tracing::error!("{e} (the run goes on: --keep-going)");
        self.kept.lock().expect("kept").push((e, done.clone()));
        self.step();
    }

    fn is_failed(&self) -> bool {
        self.failure.lock().expect("failure").is_some()
    }

    async fn get(&self, func: &Function, frame: &Frame, var: VarId) -> Value {
        let f = frame.get(var);
        match self
            .store
            .is_local(f)
            .then(|| self.store.try_get(f))
            .flatten()
        {
            Some(v) => v,
            // Boxed: a waiting read is rare next to a ready one, and would
            // otherwise size every statement's future.
            None => Box::pin(self.wait_for(func, var, f)).await,
        }
    }

    /// The value of future `f` once closed, wherever it is kept.
    async fn value(&self, f: FutureId) -> Value {
        if self.store.is_local(f) {
            self.store.get(f).await
        } else {
            self.remote.value(f, false).await
        }
    }

    /// The path of file future `f`, once known.
    async fn path(&self, f: FutureId) -> String {
        if self.store.is_local(f) {
            self.store.path(f).await
        } else {
            self.remote.value(f, true).await.render()
        }
    }

    /// Waits for future `f` (variable `var`), noted for the stall report.
    async fn wait_for(&self, func: &Function, var: VarId, f: FutureId) -> Value {
        let name = match func.vars.get(var as usize) {
            Some(ir::Var {
                name, at: Some(at), ..
            }) => format!("{}: {name}", self.place(at)),
            Some(v) => format!("{}:{}", func.name, v.name),
            None => "?".into(),
        };
        self.waiting
            .lock()
            .expect("waiting")
            .entry(f)
            .or_insert((name, 0))
            .1 += 1;
        let v = self.value(f).await;
        if let Some(w) = self.waiting.lock().expect("waiting").get_mut(&f) {
            w.1 -= 1;
        }
        v
    }

    async fn get_all(&self, func: &Function, frame: &Frame, vars: &[VarId]) -> Vec<Value> {
        let mut out = Vec::with_capacity(vars.len());
        for &v in vars {
            out.push(self.get(func, frame, v).await);
        }
        out
    }

    fn step(&self) {
        self.progress.fetch_add(1, Ordering::Release);
    }

    /// Closes future `f` with `v`. Another server's future is written by
    /// a task that holds `done` until the owner has it.
    fn set(self: &Arc<Self>, f: FutureId, v: Value, done: &Arc<Done>) {
        if self.store.is_local(f) {
            if let Err(e) = self.store.assign(f, v) {
                self.fail(e);
            }
            self.step();
        } else {
            self.write_remote(f, remote::Write::Assign(v), None, done);
        }
    }

    /// Adds the member at `path` to container `f`, as the script does at
    /// `at` (which errors name).
    fn insert(
        self: &Arc<Self>,
        at: &ir::Pos,
        f: FutureId,
        path: Vec<Key>,
        v: Value,
        done: &Arc<Done>,
    ) {
        if self.store.is_local(f) {
            if let Err(e) = self.store.insert(f, &path, v) {
                self.fail(e.within(self.place(at)));
            }
            self.step();
        } else {
            let what = remote::Write::Insert(path, v);
            self.write_remote(f, what, Some(*at), done);
        }
    }

    /// Changes updateable `f` by `op` with `v`, as the script does at `at`.
    fn update(
        self: &Arc<Self>,
        at: &ir::Pos,
        f: FutureId,
        op: ir::UpdateOp,
        v: Value,
        done: &Arc<Done>,
    ) {
        if self.store.is_local(f) {
            if let Err(e) = self.store.update(f, op, v) {
                self.fail(e.within(self.place(at)));
            }
            self.step();
        } else {
            self.write_remote(f, remote::Write::Update(op, v), Some(*at), done);
        }
    }

    /// `file:line:col` of a position in the script.
    fn place(&self, at: &ir::Pos) -> String {
        let file = self.files.get(at.file as usize).map_or("?", String::as_str);
        format!("{file}:{}:{}", at.line, at.col)
    }
}
