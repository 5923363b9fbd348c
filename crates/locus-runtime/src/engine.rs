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

use crate::builtins::{self, Context};
use crate::cost;
use crate::ids::IdMap;
use crate::plan::{Block, Plans};
use crate::remote::{self, ControlStats, Items, Msg, Remote, Status};
use crate::server::Dispatch;
use crate::storage::Storage;
use crate::store::{FutureId, Store};
use crate::value::{Key, Value};
use locus_lang::builtins::{Builtin, Run, Task as TaskFn};
use locus_lang::ir::{self, Const, FnKind, Function, Program, Stmt, VarId, Word};
use locus_lang::types::Type;
use locus_proto::run::{Arg, Held, Outcome, Placed, Target, Task, Work};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

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

/// Shows a run's leaf tasks done out of those put, as they change (the
/// embedder's progress display; the leader's only).
pub trait Progress: Send + Sync {
    fn show(&self, done: u64, put: u64);
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
    /// Script arguments (`--name=value` and positional).
    pub args: Vec<String>,
    /// Where unmapped files go when the run has no Locus file system.
    pub run_dir: PathBuf,
    /// Where `trace`/`printf` output goes.
    pub out: Arc<Mutex<dyn Write + Send>>,
    /// How long without progress (and nothing running) means stuck.
    pub stall: Duration,
    /// Leaf tasks done / put, shown while the run goes (a terminal only).
    pub progress: Option<Arc<dyn Progress>>,
    /// Task keys, and what earlier runs did (`--resume`).
    pub resume: crate::resume::Resume,
}

pub struct Engine {
    /// The script, then its modules: where calls are, for errors.
    files: Vec<String>,
    funcs: HashMap<String, Arc<Function>>,
    /// Each function's body and every block, prepared once.
    plans: Plans,
    store: Store,
    remote: Remote,
    /// Work sent to other servers and not finished, holding its caller's guard.
    shipped: Mutex<IdMap<Arc<Done>>>,
    opts: RunOptions,
    failure: Mutex<Option<String>>,
    failed: Notify,
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
}

/// The value of a `void` future: set when what it signals is done.
const SIGNAL: Value = Value::Bool(true);

/// Runs a statement's completion callback once the statement and all the
/// work it started have dropped their clones.
struct Done {
    _parent: Option<Arc<Done>>,
    on_done: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Done {
    fn new(parent: Option<Arc<Done>>, f: impl FnOnce() + Send + 'static) -> Arc<Done> {
        Arc::new(Done {
            _parent: parent,
            on_done: Mutex::new(Some(Box::new(f))),
        })
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(f) = self.on_done.lock().expect("done").take() {
            f();
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
}

impl Frame {
    fn new(parent: Option<Arc<Frame>>) -> Arc<Frame> {
        Arc::new(Frame {
            vars: Mutex::new(Vec::new()),
            parent,
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

    fn with_bindings(binds: &[(VarId, FutureId)]) -> Arc<Frame> {
        let mut vars = binds.to_vec();
        vars.sort_unstable_by_key(|(v, _)| *v);
        Arc::new(Frame {
            vars: Mutex::new(vars),
            parent: None,
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
    matches!(t, Type::Array { .. } | Type::Struct(_))
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
            plans,
            store: Store::new(opts.server),
            remote,
            shipped: Mutex::default(),
            opts,
            failure: Mutex::new(None),
            failed: Notify::new(),
            progress: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
            temp_files: AtomicU64::new(0),
            appended: AtomicU64::new(0),
            statements: AtomicU64::new(0),
            received: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            tasks_put: AtomicU64::new(0),
            tasks_done: AtomicU64::new(0),
        })
    }

    /// Starts taking messages from the other servers' engines; on a server
    /// other than the leader, also reports progress to the leader.
    pub fn start(self: &Arc<Self>) {
        let Some(mut inbox) = self.opts.dispatch.inbox() else {
            return;
        };
        let e = self.clone();
        tokio::spawn(async move {
            while let Some((from, bytes)) = inbox.recv().await {
                match postcard::from_bytes::<Msg>(&bytes) {
                    Ok(msg) => e.received_msg(e.remote.index_of(from), msg),
                    Err(err) => e.fail(format!("a message from rank {from}: {err}")),
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

    fn progress_now(&self) -> remote::Progress {
        // Done first: a task finishing between the two loads must not make
        // done exceed put.
        let done = self.tasks_done.load(Ordering::Acquire);
        let put = self.tasks_put.load(Ordering::Acquire);
        remote::Progress {
            steps: self.progress.load(Ordering::Acquire),
            external: put - done,
            put,
            done,
        }
    }

    /// Runs `main` to the end: `Ok` when every statement is done, `Err`
    /// with the first failure, or with a report when the run cannot progress.
    /// No progress on any server while no leaf task runs means stuck.
    pub async fn run(self: &Arc<Self>) -> Result<(), String> {
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
                if now == last && mine.external + others.external == 0 {
                    return;
                }
                last = now;
            }
        };
        tokio::select! {
            _ = rx => {}
            _ = self.failed.notified() => {}
            reason = self.opts.dispatch.aborted() => return Err(reason),
            _ = stalled => return Err(self.stall_report().await),
        }
        match self.failure.lock().expect("failure").clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every server's control work, the leader's first (on the leader, at
    /// the end of the run).
    pub async fn control_stats(&self) -> Vec<ControlStats> {
        let mut all = vec![self.status().control];
        all.extend(self.remote.statuses().await.into_iter().map(|s| s.control));
        all
    }

    fn status(&self) -> Status {
        Status {
            waiting: self.waiting_names(),
            control: ControlStats {
                rank: self.remote.rank_of(self.remote.me),
                statements: self.statements.load(Ordering::Relaxed),
                received: self.received.load(Ordering::Relaxed),
                sent: self.sent.load(Ordering::Relaxed),
            },
        }
    }

    /// Variables some task here waits on and that are still open.
    fn waiting_names(&self) -> Vec<(String, usize)> {
        let waiting = self.waiting.lock().expect("waiting");
        waiting
            .iter()
            // Compiler temporaries (`t`) say nothing to the user.
            .filter(|(f, (name, n))| *n > 0 && !self.is_closed(**f) && !name.ends_with(":t"))
            .map(|(_, w)| w.clone())
            .collect()
    }

    fn is_closed(&self, f: FutureId) -> bool {
        if self.store.is_local(f) {
            self.store.is_closed(f)
        } else {
            self.remote.known_closed(f)
        }
    }

    async fn stall_report(&self) -> String {
        let mut waiting = self.waiting_names();
        for s in self.remote.statuses().await {
            waiting.extend(s.waiting);
        }
        let mut names: Vec<String> = waiting
            .into_iter()
            .map(|(name, n)| format!("{name} ({n} waiting)"))
            .collect();
        names.sort();
        names.dedup();
        format!(
            "the run cannot progress: tasks wait on variables that are never assigned: {}",
            if names.is_empty() {
                "(none found)".to_string()
            } else {
                names.join(", ")
            }
        )
    }

    /// Fails the run: on the leader, it ends; another server tells the
    /// leader.
    fn fail(&self, msg: String) {
        let mut f = self.failure.lock().expect("failure");
        if f.is_none() {
            if self.remote.me != 0 {
                self.opts.dispatch.report_abort(msg.clone());
            }
            *f = Some(msg);
        }
        self.failed.notify_one();
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
        let name = func
            .vars
            .get(var as usize)
            .map_or("?".into(), |v| format!("{}:{}", func.name, v.name));
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

    /// Adds member `k` to container `f` (`func` names the writer in errors).
    fn insert(
        self: &Arc<Self>,
        func: &Arc<Function>,
        f: FutureId,
        path: Vec<Key>,
        v: Value,
        done: &Arc<Done>,
    ) {
        if self.store.is_local(f) {
            if let Err(e) = self.store.insert(f, &path, v) {
                self.fail(format!("{}: {e}", func.name));
            }
            self.step();
        } else {
            let what = remote::Write::Insert(path, v);
            self.write_remote(f, what, Some(func.clone()), done);
        }
    }

    fn write_remote(
        self: &Arc<Self>,
        f: FutureId,
        what: remote::Write,
        writer: Option<Arc<Function>>,
        done: &Arc<Done>,
    ) {
        let (e, done) = (self.clone(), done.clone());
        tokio::spawn(async move {
            if let Err(err) = e.remote.write(f, what).await {
                e.fail(match writer {
                    Some(func) => format!("{}: {err}", func.name),
                    None => err,
                });
            }
            e.step();
            drop(done);
        });
    }

    /// Declares the block's variables, then starts each other statement as
    /// its own task. Containers close when the statements writing them are
    /// done; a file nobody writes is an input, closed with its path.
    fn exec_block(
        self: &Arc<Self>,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        done: &Arc<Done>,
    ) {
        let mut counts: HashMap<VarId, (FutureId, usize)> = HashMap::new();
        for s in &block.stmts {
            let Stmt::Decl { var, mapping } = s else {
                continue;
            };
            let ty = &func.vars[*var as usize].ty;
            let f = self.store.create(is_container(ty));
            frame.bind(*var, f);
            if *ty == Type::File {
                match mapping {
                    Some(m) => {
                        let (e, func2, frame2, m) = (self.clone(), func.clone(), frame.clone(), *m);
                        tokio::spawn(async move {
                            let path = e.get(&func2, &frame2, m).await.render();
                            e.store.set_path(f, path);
                        });
                    }
                    None => self.store.set_path(f, self.temp_path()),
                }
            }
            match block.writers[var] {
                0 if is_container(ty) => self.store.close(f),
                0 if *ty == Type::File => {
                    let e = self.clone();
                    tokio::spawn(async move {
                        let path = e.store.path(f).await;
                        let _ = e.store.set(f, Value::File(path));
                        e.step();
                    });
                }
                n if is_container(ty) => {
                    counts.insert(*var, (f, n));
                }
                _ => {}
            }
        }
        let counts = Arc::new(Mutex::new(counts));
        for (i, s) in block.stmts.iter().enumerate() {
            match s {
                Stmt::Decl { .. } => continue,
                // Nothing to wait for: set now rather than as a task.
                Stmt::Const { dst, value } => {
                    self.set(frame.get(*dst), constant(value), done);
                    continue;
                }
                _ => {}
            }
            let (e, counts, block2) = (self.clone(), counts.clone(), block.clone());
            let stmt_done = Done::new(Some(done.clone()), move || {
                let mut c = counts.lock().expect("counts");
                for v in &block2.written[i] {
                    if let Some((f, n)) = c.get_mut(v) {
                        *n -= 1;
                        if *n == 0 {
                            e.store.close(*f);
                            e.step();
                        }
                    }
                }
            });
            let (e, func, frame, block) =
                (self.clone(), func.clone(), frame.clone(), block.clone());
            let task = async move {
                if !e.is_failed() {
                    e.statements.fetch_add(1, Ordering::Relaxed);
                    e.exec(&func, &frame, &block, i, &stmt_done).await;
                }
                e.step();
            };
            tokio::spawn(task);
        }
    }

    /// A fresh path for an unmapped file: a Locus file when the run has a
    /// file system, else one in the run directory.
    fn temp_path(&self) -> String {
        let n = self.temp_files.fetch_add(1, Ordering::Relaxed);
        let name = format!("s{}-f{n}", self.remote.me);
        if self.opts.storage.fs.is_some() {
            return format!(
                "{}/tmp/{}/{name}",
                crate::files::LOCUS_PREFIX,
                self.opts.run_id
            );
        }
        self.opts
            .run_dir
            .join("tmp")
            .join(name)
            .display()
            .to_string()
    }

    /// Runs `block` in `frame` and waits until it and its work are done.
    async fn run_block(
        self: &Arc<Self>,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        parent: &Arc<Done>,
    ) {
        let (tx, rx) = oneshot::channel();
        {
            let d = Done::new(Some(parent.clone()), move || {
                let _ = tx.send(());
            });
            self.exec_block(func, frame, block, &d);
        }
        let _ = rx.await;
    }

    fn key(&self, v: &Value) -> Option<Key> {
        let k = v.key();
        if k.is_none() {
            self.fail(format!("{} cannot be an array key", v.render()));
        }
        k
    }

    async fn exec(
        self: &Arc<Self>,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        i: usize,
        done: &Arc<Done>,
    ) {
        let nested = &block.nested[i];
        match &block.stmts[i] {
            Stmt::Decl { .. } => {}
            Stmt::Const { dst, value } => self.set(frame.get(*dst), constant(value), done),
            Stmt::Op { dst, op, args, at } => {
                let a = self.get_all(func, frame, args).await;
                let r = match op {
                    ir::Op::Bin(b) => builtins::binary(*b, &a[0], &a[1]),
                    ir::Op::Un(u) => builtins::unary(*u, &a[0]),
                };
                match r {
                    Ok(v) => self.set(frame.get(*dst), v, done),
                    Err(e) => self.fail(format!("{}: {e}", self.place(at))),
                }
            }
            Stmt::Builtin { outs, op, args, at } => {
                let a = self.get_all(func, frame, args).await;
                match Box::pin(self.builtin(frame, *op, &a, outs)).await {
                    Ok(values) => {
                        // Outputs without a value are `void` signals.
                        let mut values = values.into_iter();
                        for o in outs {
                            self.set(frame.get(*o), values.next().unwrap_or(SIGNAL), done);
                        }
                    }
                    Err(e) => self.fail(format!("{}: {e}", self.place(at))),
                }
            }
            Stmt::Copy { dst, src } => {
                let v = self.get(func, frame, *src).await;
                self.set(frame.get(*dst), v, done);
            }
            Stmt::Call {
                func: name,
                outs,
                args,
                opts,
                at,
            } => {
                let at = self.place(at);
                let call = self.call(func, frame, name, outs, args, opts, &at, done);
                if let Err(e) = Box::pin(call).await {
                    self.fail(format!("{at}: {e}"));
                }
            }
            Stmt::If { cond, .. } => {
                let branch = match self.get(func, frame, *cond).await {
                    Value::Bool(true) => 0,
                    _ => 1,
                };
                self.exec_block(
                    func,
                    &Frame::new(Some(frame.clone())),
                    &nested[branch],
                    done,
                );
            }
            Stmt::Switch { on, cases, .. } => {
                let v = self.get(func, frame, *on).await;
                let Value::Int(i) = v else {
                    return self.fail("switch on a non-int".into());
                };
                // The default block follows the cases.
                let which = cases
                    .iter()
                    .position(|(l, _)| l.contains(&i))
                    .unwrap_or(cases.len());
                self.exec_block(func, &Frame::new(Some(frame.clone())), &nested[which], done);
            }
            Stmt::ForeachRange { lo, hi, step, .. } => {
                let lo = self.get(func, frame, *lo).await;
                let hi = self.get(func, frame, *hi).await;
                let step = match step {
                    Some(s) => self.get(func, frame, *s).await,
                    None => Value::Int(1),
                };
                let (Value::Int(lo), Value::Int(hi), Value::Int(step)) = (lo, hi, step) else {
                    return self.fail("a range needs ints".into());
                };
                let count = match builtins::range_len(lo, hi, step) {
                    Ok(n) => n,
                    Err(e) => return self.fail(e),
                };
                for (server, from, to) in self.shares(count) {
                    let items = Items::Range { lo, step, from, to };
                    Box::pin(self.run_share(server, func, frame, block, i, items, done)).await;
                }
            }
            Stmt::ForeachArray { array, .. } => {
                let Value::Container(m) = self.get(func, frame, *array).await else {
                    return self.fail("foreach over a non-array".into());
                };
                let mut members = m.into_iter();
                for (server, from, to) in self.shares(members.len() as u64) {
                    let share = members.by_ref().take((to - from) as usize).collect();
                    let items = Items::Members(share);
                    Box::pin(self.run_share(server, func, frame, block, i, items, done)).await;
                }
            }
            Stmt::Loop {
                vars,
                test,
                updates,
                ..
            } => Box::pin(self.run_loop(func, frame, nested, vars, *test, updates, done)).await,
            Stmt::Wait { vars, .. } => {
                self.get_all(func, frame, vars).await;
                self.exec_block(func, &Frame::new(Some(frame.clone())), &nested[0], done);
            }
            Stmt::Seq(_) => {
                for part in nested {
                    self.run_block(func, &Frame::new(Some(frame.clone())), part, done)
                        .await;
                }
            }
            Stmt::ArrayAppend { array, value } => {
                let v = self.get(func, frame, *value).await;
                // Keys unique over all servers: this server's, then a count.
                let n = self.appended.fetch_add(1, Ordering::Relaxed) as i64;
                let k = Key::Int(((self.remote.me as i64) << 40) | n);
                self.insert(func, frame.get(*array), vec![k], v, done);
            }
            Stmt::ArrayInsert {
                array,
                index,
                value,
            } => {
                let k = self.get(func, frame, *index).await;
                let v = self.get(func, frame, *value).await;
                let Some(k) = self.key(&k) else { return };
                self.insert(func, frame.get(*array), vec![k], v, done);
            }
            Stmt::StructSet {
                target,
                field,
                value,
            } => {
                let v = self.get(func, frame, *value).await;
                self.insert(
                    func,
                    frame.get(*target),
                    vec![Key::Str(field.clone())],
                    v,
                    done,
                );
            }
            Stmt::InsertPath {
                target,
                path,
                value,
            } => {
                let mut keys = Vec::with_capacity(path.len());
                for m in path {
                    keys.push(match m {
                        ir::Member::Field(f) => Key::Str(f.clone()),
                        ir::Member::Index(i) => {
                            let k = self.get(func, frame, *i).await;
                            let Some(k) = self.key(&k) else { return };
                            k
                        }
                    });
                }
                let v = self.get(func, frame, *value).await;
                self.insert(func, frame.get(*target), keys, v, done);
            }
            Stmt::ArrayGet {
                dst,
                array,
                index,
                at,
            } => {
                let k = self.get(func, frame, *index).await;
                let Some(k) = self.key(&k) else { return };
                if let Some(v) = self.element(func, frame, *array, vec![k], at).await {
                    self.set(frame.get(*dst), v, done);
                }
            }
            Stmt::StructGet {
                dst,
                src,
                field,
                at,
            } => {
                let k = Key::Str(field.clone());
                if let Some(v) = self.element(func, frame, *src, vec![k], at).await {
                    self.set(frame.get(*dst), v, done);
                }
            }
            Stmt::GetPath {
                dst,
                target,
                path,
                at,
            } => {
                let mut keys = Vec::with_capacity(path.len());
                for m in path {
                    keys.push(match m {
                        ir::Member::Index(i) => {
                            let k = self.get(func, frame, *i).await;
                            let Some(k) = self.key(&k) else { return };
                            k
                        }
                        ir::Member::Field(f) => Key::Str(f.clone()),
                    });
                }
                if let Some(v) = self.element(func, frame, *target, keys, at).await {
                    self.set(frame.get(*dst), v, done);
                }
            }
        }
    }

    /// How a `foreach` of `count` iterations is shared out: contiguous parts,
    /// one per server, when there are enough to be worth a message;
    /// otherwise all here. This server's part comes last, so the others
    /// start while it starts its own.
    fn shares(&self, count: u64) -> Vec<(u32, u64, u64)> {
        let servers = u64::from(self.remote.servers);
        if servers == 1 || count < SHARE_MIN * servers {
            return vec![(self.remote.me, 0, count)];
        }
        (1..=servers)
            .map(|k| {
                let server = (u64::from(self.remote.me) + k) % servers;
                let part = k % servers;
                let (from, to) = (count * part / servers, count * (part + 1) / servers);
                (server as u32, from, to)
            })
            .collect()
    }

    /// Runs a share of the `foreach` statement `i` of `block` on `server`.
    #[allow(clippy::too_many_arguments)]
    async fn run_share(
        self: &Arc<Self>,
        server: u32,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        i: usize,
        items: Items,
        done: &Arc<Done>,
    ) {
        if server == self.remote.me {
            return self.iterate(func, frame, block, i, items, done).await;
        }
        let (func, block, binds) = (func.name.clone(), block.id, frame.flatten());
        self.ship(server, done, |id| Msg::Iterations {
            id,
            func,
            block,
            stmt: i as u32,
            binds,
            items,
        });
    }

    /// Starts the body of `foreach` statement `i` of `block` for each item.
    async fn iterate(
        self: &Arc<Self>,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        i: usize,
        items: Items,
        done: &Arc<Done>,
    ) {
        let (Stmt::ForeachRange { value, index, .. } | Stmt::ForeachArray { value, index, .. }) =
            &block.stmts[i]
        else {
            return self.fail(format!("statement {i} of block {} is no foreach", block.id));
        };
        let body = &block.nested[i][0];
        let start = |v: Value, ix: Value| {
            let iter = Frame::new(Some(frame.clone()));
            self.bind_value(&iter, *value, v);
            if let Some(index) = index {
                self.bind_value(&iter, *index, ix);
            }
            self.exec_block(func, &iter, body, done);
        };
        match items {
            Items::Range { lo, step, from, to } => {
                for n in from..to {
                    yield_between_slices((n - from) as usize).await;
                    start(
                        Value::Int(builtins::range_value(lo, step, n)),
                        Value::Int(n as i64),
                    );
                }
            }
            Items::Members(members) => {
                for (n, (k, v)) in members.into_iter().enumerate() {
                    yield_between_slices(n).await;
                    start(v, k.to_value());
                }
            }
        }
    }

    /// `for` loops: each iteration's condition, body and updates see the
    /// previous iteration's values.
    #[allow(clippy::too_many_arguments)]
    async fn run_loop(
        self: &Arc<Self>,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        nested: &[Arc<Block>],
        vars: &[(VarId, VarId)],
        test: VarId,
        updates: &[(VarId, VarId)],
        done: &Arc<Done>,
    ) {
        let mut current: Vec<Value> = Vec::new();
        for (_, init) in vars {
            current.push(self.get(func, frame, *init).await);
        }
        let (cond, body, next) = (&nested[0], &nested[1], &nested[2]);
        loop {
            let iter = Frame::new(Some(frame.clone()));
            for ((var, _), v) in vars.iter().zip(&current) {
                self.bind_value(&iter, *var, v.clone());
            }
            self.exec_block(func, &iter, cond, done);
            if self.get(func, &iter, test).await != Value::Bool(true) || self.is_failed() {
                break;
            }
            self.exec_block(func, &iter, body, done);
            self.exec_block(func, &iter, next, done);
            let mut updated = current.clone();
            for (var, val) in updates {
                let pos = vars
                    .iter()
                    .position(|(v, _)| v == var)
                    .expect("a loop variable");
                updated[pos] = self.get(func, &iter, *val).await;
            }
            current = updated;
        }
    }

    /// The element at `keys` in container variable `c`, as soon as it is
    /// set; `None` (and the run fails, naming where the script reads it)
    /// when the container is closed without it.
    async fn element(
        &self,
        func: &Function,
        frame: &Frame,
        c: VarId,
        keys: Vec<Key>,
        at: &ir::Pos,
    ) -> Option<Value> {
        let f = frame.get(c);
        let (first, rest) = keys.split_first().expect("a read has a step");
        let v = match (self.store.is_local(f), rest.is_empty()) {
            // One step waits for the whole member (an inner array closed).
            (true, true) => self.store.member(f, first).await,
            (true, false) => self.store.member_path(f, &keys).await,
            // The owner answers for the outer container once the element
            // is there, the rest is within its value.
            (false, _) => {
                let outer = self.remote.member(f, first.clone()).await;
                outer.and_then(|v| crate::store::walk(&v, rest))
            }
        };
        if v.is_none() {
            let steps: String = keys.iter().map(|k| format!("[{k}]")).collect();
            let name = &func.vars[c as usize].name;
            self.fail(format!(
                "{}: {name}{steps} is read but never assigned",
                self.place(at)
            ));
        }
        v
    }

    fn bind_value(&self, frame: &Frame, var: VarId, v: Value) {
        let f = self.store.create(matches!(v, Value::Container(_)));
        frame.bind(var, f);
        if let Err(e) = self.store.assign(f, v) {
            self.fail(e);
        }
        self.step();
    }

    /// What a call's annotations ask of its task, evaluated in the
    /// caller's frame: the placement (checked against the run's ranks),
    /// the priority and the timeout.
    async fn call_target(
        &self,
        caller: &Function,
        frame: &Frame,
        name: &str,
        opts: &ir::CallOpts,
    ) -> Result<(Option<Target>, i64, Option<f64>), String> {
        let timeout = match opts.timeout {
            None => None,
            Some(t) => match self.get(caller, frame, t).await {
                Value::Int(i) if i > 0 => Some(i as f64),
                Value::Float(x) if x > 0.0 && x.is_finite() => Some(x),
                other => {
                    return Err(format!(
                        "call of '{name}': @timeout must be a positive number of seconds, not {}",
                        other.render()
                    ))
                }
            },
        };
        let prio = match opts.prio {
            Some(p) => match self.get(caller, frame, p).await {
                Value::Int(i) => i,
                other => {
                    return Err(format!(
                        "call of '{name}': @prio must be an int, not {}",
                        other.render()
                    ))
                }
            },
            None => 0,
        };
        let Some(loc) = opts.location else {
            return Ok((None, prio, timeout));
        };
        let Value::Location(l) = self.get(caller, frame, loc).await else {
            return Err(format!("call of '{name}': @location needs a location"));
        };
        let rank = self.opts.storage.layout.check_target(l.rank).map_err(|e| {
            format!(
                "call of '{name}': location({}, {}, {}): {e}",
                l.rank,
                if l.hard && !opts.soft { "HARD" } else { "SOFT" },
                if l.node { "NODE" } else { "RANK" }
            )
        })?;
        let target = Target {
            rank,
            hard: l.hard && !opts.soft,
            node: l.node,
        };
        Ok((Some(target), prio, timeout))
    }

    #[allow(clippy::too_many_arguments)]
    async fn call(
        self: &Arc<Self>,
        caller: &Arc<Function>,
        frame: &Arc<Frame>,
        name: &str,
        outs: &[VarId],
        args: &[VarId],
        opts: &ir::CallOpts,
        at: &str,
        done: &Arc<Done>,
    ) -> Result<(), String> {
        let Some(callee) = self.funcs.get(name).cloned() else {
            return Err(format!("no function '{name}'"));
        };
        // The callee's parameters are the caller's futures.
        let binds: Vec<(VarId, FutureId)> = (callee.inputs.iter().zip(args))
            .chain(callee.outputs.iter().zip(outs))
            .map(|(p, a)| (*p, frame.get(*a)))
            .collect();
        match &callee.kind {
            FnKind::Composite => {
                let server = self.remote.next_server();
                if server == self.remote.me {
                    self.start_call(&callee, &binds, done);
                } else {
                    let func = name.to_string();
                    self.ship(server, done, |id| Msg::Call { id, func, binds });
                }
            }
            FnKind::App(t) => {
                let inner = self.callee_frame(&callee, &binds);
                let placed = self.call_target(caller, frame, name, opts).await?;
                return self.run_app(&callee, &inner, t, placed, at, done).await;
            }
            FnKind::Leaf {
                package, target, ..
            } => {
                return Err(format!("'{name}' is implemented by {package} '{target}', which this runtime does not provide"));
            }
        }
        Ok(())
    }

    /// The frame of a call of `callee`: its parameters bound to the caller's
    /// futures, outputs the caller left out bound to new ones.
    fn callee_frame(&self, callee: &Function, binds: &[(VarId, FutureId)]) -> Arc<Frame> {
        let inner = Frame::with_bindings(binds);
        for p in &callee.outputs {
            if binds.iter().any(|(v, _)| v == p) {
                continue;
            }
            let ty = &callee.vars[*p as usize].ty;
            let f = self.store.create(is_container(ty));
            if *ty == Type::File {
                self.store.set_path(f, self.temp_path());
            }
            inner.bind(*p, f);
        }
        inner
    }

    /// Runs composite `callee` here.
    fn start_call(
        self: &Arc<Self>,
        callee: &Arc<Function>,
        binds: &[(VarId, FutureId)],
        done: &Arc<Done>,
    ) {
        let inner = self.callee_frame(callee, binds);
        let body = self.plans.body(&callee.name);
        // A `void` output the body does not write is a signal that the
        // call is done.
        let signals: Vec<FutureId> = callee
            .outputs
            .iter()
            .filter(|o| callee.vars[**o as usize].ty == Type::Void)
            .filter(|o| !body.stmts.iter().any(|s| crate::plan::writes(s, **o)))
            .map(|o| inner.get(*o))
            .collect();
        if signals.is_empty() {
            return self.exec_block(callee, &inner, body, done);
        }
        let (engine, parent) = (self.clone(), done.clone());
        let done = Done::new(Some(done.clone()), move || {
            for f in signals {
                engine.set(f, SIGNAL, &parent);
            }
        });
        self.exec_block(callee, &inner, body, &done);
    }

    /// Sends control work to another server; `done` is held until it
    /// reports the work finished.
    fn ship(&self, server: u32, done: &Arc<Done>, msg: impl FnOnce(u64) -> Msg) {
        let id = self.remote.new_id();
        self.shipped
            .lock()
            .expect("shipped")
            .insert(id, done.clone());
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.remote.send(server, &msg(id));
    }

    /// A message from the engine of server `from`.
    fn received_msg(self: &Arc<Self>, from: u32, msg: Msg) {
        match msg {
            Msg::Call { id, func, binds } => {
                let Some(callee) = self.funcs.get(&func).cloned() else {
                    return self.fail(format!("no function '{func}'"));
                };
                let done = self.finished_guard(from, id);
                self.start_call(&callee, &binds, &done);
            }
            Msg::Iterations {
                id,
                func,
                block,
                stmt,
                binds,
                items,
            } => {
                let (Some(f), Some(b)) = (self.funcs.get(&func).cloned(), self.plans.block(block))
                else {
                    return self.fail(format!("no block {block} in '{func}'"));
                };
                let (e, b, done) = (self.clone(), b.clone(), self.finished_guard(from, id));
                tokio::spawn(async move {
                    let frame = Frame::with_bindings(&binds);
                    e.iterate(&f, &frame, &b, stmt as usize, items, &done).await;
                });
            }
            Msg::Finished { id } => {
                // Dropping the guard lets the caller's statement finish.
                self.shipped.lock().expect("shipped").remove(&id);
            }
            Msg::Read { req, id, what } => {
                let e = self.clone();
                tokio::spawn(async move {
                    let answer = match what {
                        remote::Read::Value => remote::Answer::Value(e.store.get(id).await),
                        remote::Read::Member(k) => {
                            remote::Answer::Member(e.store.member(id, &k).await)
                        }
                        remote::Read::Path => {
                            remote::Answer::Value(Value::Str(e.store.path(id).await))
                        }
                    };
                    e.remote.send(from, &Msg::Reply { req, answer });
                });
            }
            Msg::Write { req, id, what } => {
                let r = match what {
                    remote::Write::Assign(v) => self.store.assign(id, v),
                    remote::Write::Insert(path, v) => self.store.insert(id, &path, v),
                };
                self.step();
                let answer = remote::Answer::Written(r);
                self.remote.send(from, &Msg::Reply { req, answer });
            }
            Msg::Status { req } => {
                let answer = remote::Answer::Status(self.status());
                self.remote.send(from, &Msg::Reply { req, answer });
            }
            Msg::Reply { req, answer } => self.remote.answered(req, answer),
            Msg::Progress(p) => {
                self.remote.progressed(from, p);
                self.show_progress();
            }
        }
    }

    /// The guard of work received from server `from`: when it and all it
    /// started are done, `from` is told.
    fn finished_guard(self: &Arc<Self>, from: u32, id: u64) -> Arc<Done> {
        self.received.fetch_add(1, Ordering::Relaxed);
        let e = self.clone();
        Done::new(None, move || e.remote.send(from, &Msg::Finished { id }))
    }

    fn task(
        &self,
        func: &str,
        target: Option<Target>,
        placed: Placed,
        prio: i64,
        work: Work,
    ) -> Task {
        Task {
            id: self.opts.dispatch.task_id(),
            func: func.to_string(),
            target,
            placed,
            prio,
            work,
            at: String::new(),
            key: String::new(),
            inputs: Vec::new(),
            spill: None,
        }
    }

    /// Evaluates builtin `op` on its arguments: the values of its outputs
    /// (none for outputs that are `void` signals).
    async fn builtin(
        &self,
        frame: &Frame,
        op: Builtin,
        a: &[Value],
        outs: &[VarId],
    ) -> Result<Vec<Value>, String> {
        let cx = Context {
            args: &self.opts.args,
        };
        match op {
            Builtin::Pure(p) => builtins::pure(p, a, &cx),
            Builtin::Run(r) => {
                let dst = match (r, outs.first()) {
                    (Run::Write, Some(o)) => Some(self.path(frame.get(*o)).await),
                    _ => None,
                };
                let v = self.opts.storage.call(r, a, dst.as_deref()).await?;
                Ok(v.into_iter().collect())
            }
            Builtin::Effect(e) => {
                if let Some(line) = builtins::effect(e, a, &cx)? {
                    self.print(&line);
                }
                Ok(Vec::new())
            }
            Builtin::Task(t) => self.task_builtin(t, a).await,
        }
    }

    /// A builtin that runs on a worker, as a leaf task named after it.
    async fn task_builtin(&self, op: TaskFn, a: &[Value]) -> Result<Vec<Value>, String> {
        let text = |i: usize| a.get(i).map(Value::render).unwrap_or_default();
        let work = match op {
            TaskFn::Sleep | TaskFn::SleepTrace => Work::Sleep {
                secs: match a.first() {
                    Some(Value::Float(x)) => *x,
                    Some(Value::Int(i)) => *i as f64,
                    _ => 0.0,
                },
            },
            TaskFn::Python | TaskFn::PythonPersist => Work::Python {
                code: text(0),
                expr: text(1),
            },
            TaskFn::R | TaskFn::RPersist => Work::R {
                code: text(0),
                expr: text(1),
            },
            TaskFn::System => Work::System {
                argv: match a.first() {
                    Some(Value::Container(words)) => words.values().map(Value::render).collect(),
                    _ => Vec::new(),
                },
            },
            TaskFn::System1 => Work::System {
                argv: vec!["/bin/sh".into(), "-c".into(), text(0)],
            },
        };
        let task = self.task(op.name(), None, Placed::Anywhere, 0, work);
        let outcome = Box::pin(self.leaf_outcome(task)).await?;
        let value = Value::Str(outcome.value.unwrap_or_default());
        Ok(match op {
            TaskFn::Sleep => Vec::new(),
            TaskFn::SleepTrace => {
                self.print(&builtins::trace(&a[1..]));
                Vec::new()
            }
            TaskFn::Python | TaskFn::PythonPersist | TaskFn::R | TaskFn::RPersist => vec![value],
            TaskFn::System | TaskFn::System1 => {
                vec![value, Value::Int(outcome.exit.unwrap_or_default().into())]
            }
        })
    }

    /// Prints a line of the script's output.
    fn print(&self, line: &str) {
        let mut out = self.opts.out.lock().expect("output");
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// `file:line:col` of a position in the script.
    fn place(&self, at: &ir::Pos) -> String {
        let file = self.files.get(at.file as usize).map_or("?", String::as_str);
        format!("{file}:{}:{}", at.line, at.col)
    }

    /// Runs a leaf task on a worker and waits for it.
    async fn leaf(&self, task: Task) -> Result<(), String> {
        self.leaf_outcome(task).await.map(drop)
    }

    /// Runs a leaf task on a worker; returns what became of it.
    async fn leaf_outcome(&self, task: Task) -> Result<Outcome, String> {
        self.tasks_put.fetch_add(1, Ordering::AcqRel);
        self.show_progress();
        let outcome = self.opts.dispatch.run(task).await;
        self.tasks_done.fetch_add(1, Ordering::AcqRel);
        self.show_progress();
        self.step();
        match outcome.error {
            Some(e) => Err(e),
            None => Ok(outcome),
        }
    }

    /// Leaf tasks done and put on every server, on the progress bar.
    fn show_progress(&self) {
        if let Some(shown) = &self.opts.progress {
            let (mine, others) = (self.progress_now(), self.remote.others());
            shown.show(mine.done + others.done, mine.put + others.put);
        }
    }

    /// Where an app's output file goes: its path, known before it is written.
    async fn output_path(&self, frame: &Frame, v: VarId) -> String {
        self.path(frame.get(v)).await
    }

    /// A command-line word or redirection for a value: files are inputs.
    fn input_arg(v: &Value) -> Arg {
        match v {
            Value::File(p) => Arg::In(p.clone()),
            other => Arg::Lit(other.render()),
        }
    }

    /// The file a redirection names: an output's path, or an input's value.
    async fn stream(
        &self,
        app: &Function,
        frame: &Frame,
        outputs: &HashSet<VarId>,
        v: Option<VarId>,
    ) -> Option<Arg> {
        match v {
            None => None,
            Some(v) if outputs.contains(&v) => Some(Arg::Out(self.output_path(frame, v).await)),
            Some(v) => Some(Self::input_arg(&self.get(app, frame, v).await)),
        }
    }

    /// Waits for an app's inputs, builds its command line, places it and
    /// runs it as a leaf task; closes its output files when it succeeds.
    async fn run_app(
        self: &Arc<Self>,
        app: &Arc<Function>,
        frame: &Arc<Frame>,
        t: &ir::AppTemplate,
        (target, prio, timeout): (Option<Target>, i64, Option<f64>),
        at: &str,
        done: &Arc<Done>,
    ) -> Result<(), String> {
        self.run_block(app, frame, self.plans.body(&app.name), done)
            .await;
        let outputs: HashSet<VarId> = app.outputs.iter().copied().collect();
        let mut argv: Vec<Arg> = Vec::new();
        for w in &t.words {
            match w {
                Word::Lit(s) => argv.push(Arg::Lit(s.clone())),
                Word::Var(v) if outputs.contains(v) => {
                    argv.push(Arg::Out(self.output_path(frame, *v).await))
                }
                Word::Var(v) => match self.get(app, frame, *v).await {
                    Value::Container(m) => argv.extend(m.values().map(Self::input_arg)),
                    other => argv.push(Self::input_arg(&other)),
                },
            }
        }
        let stdin = self.stream(app, frame, &outputs, t.stdin).await;
        let stdout = self.stream(app, frame, &outputs, t.stdout).await;
        let stderr = self.stream(app, frame, &outputs, t.stderr).await;
        if argv.is_empty() {
            return Err(format!("app '{}' has an empty command line", app.name));
        }
        let mut out_files = Vec::new();
        for o in &app.outputs {
            if app.vars[*o as usize].ty == Type::File {
                out_files.push((frame.get(*o), self.output_path(frame, *o).await));
            }
        }
        let resume = &self.opts.resume;
        let words = || {
            argv.iter()
                .chain([&stdin, &stdout, &stderr].into_iter().flatten())
        };
        let key = resume.key(&app.name, words());
        let inputs: Vec<&str> = words()
            .filter_map(|a| match a {
                Arg::In(p) => Some(p.as_str()),
                _ => None,
            })
            .collect();
        let earlier = resume.unchanged(&key, &inputs, &self.opts.storage).await;
        if let Some(earlier) = earlier.filter(|e| e.declared.len() == out_files.len()) {
            let rank = self.opts.first_server + self.opts.server;
            let node = self.opts.storage.layout.node_name(rank);
            let id = self.opts.dispatch.task_id();
            resume.record(id, (&app.name, at, rank, node), earlier);
            resume.made(&key, &earlier.declared);
            for ((f, _), p) in out_files.iter().zip(&earlier.declared) {
                self.set(*f, Value::File(p.clone()), done);
            }
            self.void_outputs(app, frame, done);
            return Ok(());
        }
        let held = self
            .inputs_of(target, &argv.iter().chain(&stdin).collect::<Vec<_>>())
            .await;
        let (target, placed) = match target {
            Some(t) => (Some(t), Placed::Explicit),
            None if self.opts.locality == Locality::Auto => self.auto_target(&held),
            None => (None, Placed::Anywhere),
        };
        let work = Work::App {
            argv,
            stdin,
            stdout,
            stderr,
            outputs: out_files.iter().map(|(_, p)| p.clone()).collect(),
            timeout,
        };
        let declared: Vec<String> = out_files.iter().map(|(_, p)| p.clone()).collect();
        let task = Task {
            at: at.to_string(),
            key: key.clone(),
            inputs: held,
            ..self.task(&app.name, target, placed, prio, work)
        };
        self.leaf(task).await?;
        resume.made(&key, &declared);
        for (f, p) in out_files {
            self.set(f, Value::File(p), done);
        }
        self.void_outputs(app, frame, done);
        Ok(())
    }

    /// Signals an app's `void` outputs: it is done.
    fn void_outputs(self: &Arc<Self>, app: &Function, frame: &Frame, done: &Arc<Done>) {
        for o in &app.outputs {
            if app.vars[*o as usize].ty == Type::Void {
                self.set(frame.get(*o), SIGNAL, done);
            }
        }
    }

    /// Where a task's Locus inputs are, when its placement may use it: a
    /// SOFT target (to weigh leaving it) or none under `--locality auto`
    /// (to choose one). HARD tasks go where they are told.
    async fn inputs_of(&self, target: Option<Target>, words: &[&Arg]) -> Vec<Held> {
        let weighed = match target {
            Some(t) => !t.hard,
            None => self.opts.locality == Locality::Auto,
        };
        if !weighed {
            return Vec::new();
        }
        let paths: Vec<&str> = words
            .iter()
            .filter_map(|a| match a {
                Arg::In(p) => Some(p.as_str()),
                _ => None,
            })
            .collect();
        self.opts.storage.held(&paths).await
    }

    /// `--locality auto`: SOFT NODE at the node holding most input bytes
    /// (the server breaks ties by load).
    fn auto_target(&self, inputs: &[Held]) -> (Option<Target>, Placed) {
        let node = cost::heaviest(inputs).first().copied();
        match node.and_then(|n| self.opts.storage.layout.workers_on(n).next()) {
            Some(rank) => (
                Some(Target {
                    rank,
                    hard: false,
                    node: true,
                }),
                Placed::Auto,
            ),
            None => (None, Placed::Anywhere),
        }
    }
}

fn constant(c: &Const) -> Value {
    match c {
        Const::Int(i) => Value::Int(*i),
        Const::Float(x) => Value::Float(*x),
        Const::Str(s) => Value::Str(s.clone()),
        Const::Bool(b) => Value::Bool(*b),
        Const::Hard => Value::Strictness(true),
        Const::Soft => Value::Strictness(false),
        Const::Rank => Value::Accuracy(false),
        Const::Node => Value::Accuracy(true),
    }
}

/// Iterations a `foreach` starts before letting the rest of the server run.
const FOREACH_SLICE: usize = 4096;
/// Iterations per server below which a `foreach` is not shared out.
const SHARE_MIN: u64 = 64;

/// A large `foreach` is started in slices: between two, the leader's other
/// work (routing the tasks already released, taking outcomes) goes on, so
/// workers start on the first iterations while later ones are created.
async fn yield_between_slices(n: usize) {
    if n > 0 && n.is_multiple_of(FOREACH_SLICE) {
        tokio::task::yield_now().await;
    }
}
