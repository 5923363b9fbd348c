//! The dataflow engine: executes the IR of a checked program. Every variable
//! is a future in the store; every statement is a control task that waits
//! for the futures it reads, then runs. A statement is *done* when it and
//! all the work it started are done (tracked by dropping shared guards); a
//! container closes when every statement of its scope that writes it is done.
//! `app` calls run as processes, at most `workers` at a time.

use crate::builtins::{self, Context};
use crate::plan::{plan, Block};
use crate::store::{FutureId, Store};
use crate::value::{Key, Value};
use locus_lang::ir::{self, Const, FnKind, Function, Program, Stmt, VarId, Word};
use locus_lang::types::Type;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, Notify, Semaphore};

pub struct RunOptions {
    /// Leaf tasks (`app` processes) running at once.
    pub workers: usize,
    /// Script arguments (`--name=value` and positional).
    pub args: Vec<String>,
    /// Where unmapped files go.
    pub run_dir: PathBuf,
    /// Where `trace`/`printf` output goes.
    pub out: Arc<Mutex<dyn Write + Send>>,
    /// How long without progress (and nothing running) means stuck.
    pub stall: Duration,
}

pub struct Engine {
    funcs: HashMap<String, Arc<Function>>,
    /// Each function's body, prepared once.
    plans: HashMap<String, Arc<Block>>,
    store: Store,
    opts: RunOptions,
    failure: Mutex<Option<String>>,
    failed: Notify,
    workers: Semaphore,
    /// Bumped by every completed step; the stall detector watches it.
    progress: AtomicU64,
    /// Processes and timers running: no progress is expected meanwhile.
    external: AtomicUsize,
    /// Names of futures some task waits on, for the stall report.
    waiting: Mutex<HashMap<FutureId, (String, usize)>>,
    temp_files: AtomicU64,
}

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
struct Frame {
    vars: Mutex<HashMap<VarId, FutureId>>,
    parent: Option<Arc<Frame>>,
}

impl Frame {
    fn new(parent: Option<Arc<Frame>>) -> Arc<Frame> {
        Arc::new(Frame {
            vars: Mutex::new(HashMap::new()),
            parent,
        })
    }

    fn bind(&self, var: VarId, f: FutureId) {
        self.vars.lock().expect("frame").insert(var, f);
    }

    fn get(&self, var: VarId) -> FutureId {
        if let Some(f) = self.vars.lock().expect("frame").get(&var) {
            return *f;
        }
        match &self.parent {
            Some(p) => p.get(var),
            None => panic!("variable %{var} used before its declaration"),
        }
    }
}

/// Paths under this prefix are Locus files (DESIGN.md); this runtime does
/// not yet stage them through the file system, and must not write them to
/// the host's root.
const LOCUS_PREFIX: &str = "/locus/";

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
        let plans = funcs
            .iter()
            .map(|(n, f)| (n.clone(), plan(&f.body)))
            .collect();
        Arc::new(Engine {
            funcs,
            plans,
            store: Store::default(),
            workers: Semaphore::new(opts.workers.max(1)),
            opts,
            failure: Mutex::new(None),
            failed: Notify::new(),
            progress: AtomicU64::new(0),
            external: AtomicUsize::new(0),
            waiting: Mutex::new(HashMap::new()),
            temp_files: AtomicU64::new(0),
        })
    }

    /// Runs `main` to the end: `Ok` when every statement is done, `Err`
    /// with the first failure, or with a report when the run cannot progress.
    pub async fn run(self: &Arc<Self>) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        let main = self.funcs["main"].clone();
        {
            let root = Done::new(None, move || {
                let _ = tx.send(());
            });
            let frame = Frame::new(None);
            self.exec_block(&main, &frame, &self.plans["main"], &root);
        }
        let stalled = async {
            let mut last = u64::MAX;
            loop {
                tokio::time::sleep(self.opts.stall).await;
                let now = self.progress.load(Ordering::Acquire);
                if now == last && self.external.load(Ordering::Acquire) == 0 {
                    return;
                }
                last = now;
            }
        };
        tokio::select! {
            _ = rx => {}
            _ = self.failed.notified() => {}
            _ = stalled => return Err(self.stall_report()),
        }
        match self.failure.lock().expect("failure").clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn stall_report(&self) -> String {
        let waiting = self.waiting.lock().expect("waiting");
        let mut names: Vec<String> = waiting
            .iter()
            // Compiler temporaries (`t`) say nothing to the user.
            .filter(|(f, (name, n))| *n > 0 && !self.store.is_closed(**f) && !name.ends_with(":t"))
            .map(|(_, (name, n))| format!("{name} ({n} waiting)"))
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

    fn fail(&self, msg: String) {
        let mut f = self.failure.lock().expect("failure");
        if f.is_none() {
            *f = Some(msg);
        }
        self.failed.notify_one();
    }

    fn is_failed(&self) -> bool {
        self.failure.lock().expect("failure").is_some()
    }

    async fn get(&self, func: &Function, frame: &Frame, var: VarId) -> Value {
        let f = frame.get(var);
        if !self.store.is_closed(f) {
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
            let v = self.store.get(f).await;
            if let Some(w) = self.waiting.lock().expect("waiting").get_mut(&f) {
                w.1 -= 1;
            }
            return v;
        }
        self.store.get(f).await
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

    fn set(&self, f: FutureId, v: Value) {
        if self.store.is_container(f) {
            match v {
                Value::Container(m) => {
                    for (k, v) in m {
                        if let Err(e) = self.store.insert(f, k, v) {
                            return self.fail(e);
                        }
                    }
                    self.store.close(f);
                }
                other => self.fail(format!("an array was given {}", other.render())),
            }
        } else if let Err(e) = self.store.set(f, v) {
            self.fail(e);
        }
        self.step();
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
            if matches!(s, Stmt::Decl { .. }) {
                continue;
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
            tokio::spawn(async move {
                if !e.is_failed() {
                    e.exec(&func, &frame, &block, i, &stmt_done).await;
                }
                e.step();
            });
        }
    }

    /// A fresh path in the run directory for an unmapped file.
    fn temp_path(&self) -> String {
        let n = self.temp_files.fetch_add(1, Ordering::Relaxed);
        self.opts
            .run_dir
            .join(format!("tmp/f{n}"))
            .display()
            .to_string()
    }

    /// Runs `body` in a child frame and waits until it and its work are done.
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
            self.exec_block(func, &Frame::new(Some(frame.clone())), block, &d);
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
            Stmt::Const { dst, value } => {
                let v = match value {
                    Const::Int(i) => Value::Int(*i),
                    Const::Float(x) => Value::Float(*x),
                    Const::Str(s) => Value::Str(s.clone()),
                    Const::Bool(b) => Value::Bool(*b),
                    Const::Hard => Value::Strictness(true),
                    Const::Soft => Value::Strictness(false),
                    Const::Rank => Value::Accuracy(false),
                    Const::Node => Value::Accuracy(true),
                };
                self.set(frame.get(*dst), v);
            }
            Stmt::Op { dst, op, args } => {
                let a = self.get_all(func, frame, args).await;
                let r = match op {
                    ir::Op::Bin(b) => builtins::binary(*b, &a[0], &a[1]),
                    ir::Op::Un(u) => builtins::unary(*u, &a[0]),
                    ir::Op::Builtin(name) => builtins::call(
                        name,
                        &a,
                        &Context {
                            args: &self.opts.args,
                        },
                    ),
                };
                match r {
                    Ok(v) => self.set(frame.get(*dst), v),
                    Err(e) => self.fail(format!("{}: {e}", func.name)),
                }
            }
            Stmt::Effect { op, args } => {
                let a = self.get_all(func, frame, args).await;
                match builtins::effect(op, &a) {
                    Ok(Some(line)) => {
                        let mut out = self.opts.out.lock().expect("output");
                        let _ = writeln!(out, "{line}");
                        let _ = out.flush();
                    }
                    Ok(None) => {}
                    Err(e) => self.fail(e),
                }
            }
            Stmt::Copy { dst, src } => {
                let v = self.get(func, frame, *src).await;
                self.set(frame.get(*dst), v);
            }
            Stmt::Call {
                func: name,
                outs,
                args,
                ..
            } => self.call(frame, name, outs, args, done).await,
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
            Stmt::ForeachRange {
                lo,
                hi,
                step,
                value,
                index,
                ..
            } => {
                let lo = self.get(func, frame, *lo).await;
                let hi = self.get(func, frame, *hi).await;
                let step = match step {
                    Some(s) => self.get(func, frame, *s).await,
                    None => Value::Int(1),
                };
                let (Value::Int(lo), Value::Int(hi), Value::Int(step)) = (lo, hi, step) else {
                    return self.fail("a range needs ints".into());
                };
                if step <= 0 {
                    return self.fail(format!("range step must be positive, not {step}"));
                }
                for (n, i) in (lo..=hi).step_by(step as usize).enumerate() {
                    let iter = Frame::new(Some(frame.clone()));
                    self.bind_value(&iter, *value, Value::Int(i));
                    if let Some(ix) = index {
                        self.bind_value(&iter, *ix, Value::Int(n as i64));
                    }
                    self.exec_block(func, &iter, &nested[0], done);
                }
            }
            Stmt::ForeachArray {
                array,
                value,
                index,
                ..
            } => {
                let Value::Container(m) = self.get(func, frame, *array).await else {
                    return self.fail("foreach over a non-array".into());
                };
                for (k, v) in m {
                    let iter = Frame::new(Some(frame.clone()));
                    self.bind_value(&iter, *value, v);
                    if let Some(ix) = index {
                        self.bind_value(&iter, *ix, k.to_value());
                    }
                    self.exec_block(func, &iter, &nested[0], done);
                }
            }
            Stmt::Loop {
                vars,
                test,
                updates,
                ..
            } => {
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
                    if self.get(func, &iter, *test).await != Value::Bool(true) || self.is_failed() {
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
            Stmt::Wait { vars, .. } => {
                self.get_all(func, frame, vars).await;
                self.exec_block(func, &Frame::new(Some(frame.clone())), &nested[0], done);
            }
            Stmt::Seq(_) => {
                for part in nested {
                    self.run_block(func, frame, part, done).await;
                }
            }
            Stmt::ArrayInsert {
                array,
                index,
                value,
            } => {
                let k = self.get(func, frame, *index).await;
                let v = self.get(func, frame, *value).await;
                let Some(k) = self.key(&k) else { return };
                if let Err(e) = self.store.insert(frame.get(*array), k, v) {
                    self.fail(format!("{}: {e}", func.name));
                }
                self.step();
            }
            Stmt::StructSet {
                target,
                field,
                value,
            } => {
                let v = self.get(func, frame, *value).await;
                if let Err(e) = self
                    .store
                    .insert(frame.get(*target), Key::Str(field.clone()), v)
                {
                    self.fail(format!("{}: {e}", func.name));
                }
                self.step();
            }
            Stmt::ArrayGet { dst, array, index } => {
                let k = self.get(func, frame, *index).await;
                let Some(k) = self.key(&k) else { return };
                self.member(func, frame, *dst, *array, k).await;
            }
            Stmt::StructGet { dst, src, field } => {
                self.member(func, frame, *dst, *src, Key::Str(field.clone()))
                    .await;
            }
        }
    }

    async fn member(&self, func: &Function, frame: &Frame, dst: VarId, container: VarId, k: Key) {
        let c = frame.get(container);
        match self.store.member(c, &k).await {
            Some(v) => self.set(frame.get(dst), v),
            None => {
                let name = &func.vars[container as usize].name;
                self.fail(format!(
                    "{}: {name}[{k}] is read but never assigned",
                    func.name
                ));
            }
        }
    }

    fn bind_value(&self, frame: &Frame, var: VarId, v: Value) {
        let f = self.store.create(matches!(v, Value::Container(_)));
        frame.bind(var, f);
        self.set(f, v);
    }

    async fn call(
        self: &Arc<Self>,
        frame: &Arc<Frame>,
        name: &str,
        outs: &[VarId],
        args: &[VarId],
        done: &Arc<Done>,
    ) {
        let Some(callee) = self.funcs.get(name).cloned() else {
            return self.fail(format!("no function '{name}'"));
        };
        // The callee's parameters are the caller's futures.
        let inner = Frame::new(None);
        for (p, a) in callee.inputs.iter().zip(args) {
            inner.bind(*p, frame.get(*a));
        }
        for (p, o) in callee.outputs.iter().zip(outs) {
            inner.bind(*p, frame.get(*o));
        }
        for p in callee.outputs.iter().skip(outs.len()) {
            let ty = &callee.vars[*p as usize].ty;
            let f = self.store.create(is_container(ty));
            if *ty == Type::File {
                self.store.set_path(f, self.temp_path());
            }
            inner.bind(*p, f);
        }
        match &callee.kind {
            FnKind::Composite => self.exec_block(&callee, &inner, &self.plans[name], done),
            FnKind::App(t) => {
                if let Err(e) = self.run_app(&callee, &inner, t, done).await {
                    self.fail(e);
                }
            }
            FnKind::Leaf { package, target, .. } => {
                self.fail(format!("'{name}' is implemented by {package} '{target}', which this runtime does not provide"))
            }
        }
    }

    /// Where an app's output file goes: its path, known before it is written.
    async fn output_path(&self, frame: &Frame, v: VarId) -> String {
        self.store.path(frame.get(v)).await
    }

    /// The file a redirection names: an output's path, or an input's value.
    async fn stream(
        &self,
        app: &Function,
        frame: &Frame,
        outputs: &HashSet<VarId>,
        v: Option<VarId>,
    ) -> Option<String> {
        match v {
            None => None,
            Some(v) if outputs.contains(&v) => Some(self.output_path(frame, v).await),
            Some(v) => Some(self.get(app, frame, v).await.render()),
        }
    }

    /// Waits for an app's inputs, builds its command line, runs it as a
    /// process, and closes its output files when it exits 0.
    async fn run_app(
        self: &Arc<Self>,
        app: &Arc<Function>,
        frame: &Arc<Frame>,
        t: &ir::AppTemplate,
        done: &Arc<Done>,
    ) -> Result<(), String> {
        self.run_block(app, frame, &self.plans[&app.name], done)
            .await;
        let outputs: HashSet<VarId> = app.outputs.iter().copied().collect();
        let mut argv: Vec<String> = Vec::new();
        for w in &t.words {
            match w {
                Word::Lit(s) => argv.push(s.clone()),
                Word::Var(v) if outputs.contains(v) => argv.push(self.output_path(frame, *v).await),
                Word::Var(v) => match self.get(app, frame, *v).await {
                    Value::Container(m) => argv.extend(m.values().map(Value::render)),
                    other => argv.push(other.render()),
                },
            }
        }
        let stdin = self.stream(app, frame, &outputs, t.stdin).await;
        let stdout = self.stream(app, frame, &outputs, t.stdout).await;
        let stderr = self.stream(app, frame, &outputs, t.stderr).await;
        if argv.is_empty() {
            return Err(format!("app '{}' has an empty command line", app.name));
        }
        let mut out_paths = Vec::new();
        for o in &app.outputs {
            if app.vars[*o as usize].ty == Type::File {
                out_paths.push((frame.get(*o), self.output_path(frame, *o).await));
            }
        }
        for (_, p) in &out_paths {
            if p.starts_with(LOCUS_PREFIX) {
                return Err(format!(
                    "app '{}' writes {p}: Locus file-system paths are not connected to this runtime yet",
                    app.name
                ));
            }
            if let Some(dir) = std::path::Path::new(p).parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("app '{}': {}: {e}", app.name, dir.display()))?;
            }
        }
        let permit = self.workers.acquire().await.map_err(|e| e.to_string())?;
        self.external.fetch_add(1, Ordering::AcqRel);
        let status = run_process(&argv, stdin, stdout, stderr).await;
        self.external.fetch_sub(1, Ordering::AcqRel);
        drop(permit);
        self.step();
        let code = status
            .map_err(|e| format!("app '{}': cannot run `{}`: {e}", app.name, argv.join(" ")))?;
        if code != 0 {
            return Err(format!(
                "app '{}' failed: `{}` exited with code {code}",
                app.name,
                argv.join(" ")
            ));
        }
        for (f, p) in out_paths {
            self.set(f, Value::File(p));
        }
        Ok(())
    }
}

async fn run_process(
    argv: &[String],
    stdin: Option<String>,
    stdout: Option<String>,
    stderr: Option<String>,
) -> std::io::Result<i32> {
    use std::process::Stdio;
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd.stdin(match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p)?),
        None => Stdio::null(),
    });
    if let Some(p) = stdout {
        cmd.stdout(Stdio::from(std::fs::File::create(p)?));
    }
    if let Some(p) = stderr {
        cmd.stderr(Stdio::from(std::fs::File::create(p)?));
    }
    let status = cmd.status().await?;
    Ok(status.code().unwrap_or(128 + 9))
}
