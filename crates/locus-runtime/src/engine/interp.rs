//! The interpreter: each statement of a block as a control task that waits
//! for what it reads, loops and their iterations, reads of elements, and
//! calls of composite functions.

use super::*;

impl Engine {
    /// Declares the block's variables, then starts each other statement as
    /// its own task. Containers close when the statements writing them are
    /// done; a file nobody writes is an input, closed with its path.
    pub(super) fn exec_block(
        self: &Arc<Self>,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        done: &Arc<Done>,
    ) {
        self.made.add(block);
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
    pub(super) fn temp_path(&self) -> String {
        let n = self.temp_files.fetch_add(1, Ordering::Relaxed);
        let name = format!("s{}-f{n}", self.remote.me);
        if self.opts.storage.fs.is_some() {
            return format!(
                "{}/tmp/{}/{name}",
                crate::exec::files::LOCUS_PREFIX,
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
    pub(super) async fn run_block(
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

    pub(super) fn key(&self, v: &Value) -> Option<Key> {
        let k = v.key();
        if k.is_none() {
            self.fail(RunError::script(format!(
                "{} cannot be an array key",
                v.render()
            )));
        }
        k
    }

    /// The keys of `path` (`[i].f…`), once its indices are set; `None` (the
    /// run failed) if one cannot be a key.
    async fn keys(&self, func: &Function, frame: &Frame, path: &[ir::Member]) -> Option<Vec<Key>> {
        let mut keys = Vec::with_capacity(path.len() + 1);
        for m in path {
            keys.push(match m {
                ir::Member::Field(f) => Key::Str(f.clone()),
                ir::Member::Index(i) => self.key(&self.get(func, frame, *i).await)?,
            });
        }
        Some(keys)
    }

    pub(super) async fn exec(
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
                    Err(e) => self.fail(e.within(self.place(at))),
                }
            }
            Stmt::Builtin { outs, op, args, at } => {
                let a = self.get_all(func, frame, args).await;
                // Boxed: a statement's future is as large as its largest
                // arm, and every statement waiting holds one (this arm's
                // made them 4.4 KiB, 0.9 without).
                match Box::pin(self.builtin(frame, (*op, at), &a, outs)).await {
                    Ok(values) => {
                        // Outputs without a value are `void` signals.
                        let mut values = values.into_iter();
                        for o in outs {
                            self.set(frame.get(*o), values.next().unwrap_or(SIGNAL), done);
                        }
                    }
                    Err(e) => self.task_failed(e.within(self.place(at)), done),
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
                    self.task_failed(e.within(at), done);
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
                    return self.fail(RunError::internal("switch on a non-int"));
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
                    return self.fail(RunError::internal("a range needs ints"));
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
                    return self.fail(RunError::internal("foreach over a non-array"));
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
            Stmt::Update { var, op, value, at } => {
                let v = self.get(func, frame, *value).await;
                self.update(at, frame.get(*var), *op, v, done);
            }
            Stmt::ArrayAppend {
                array,
                path,
                value,
                at,
            } => {
                let Some(mut keys) = self.keys(func, frame, path).await else {
                    return;
                };
                let v = self.get(func, frame, *value).await;
                // Keys unique over all servers: this server's, then a count.
                let n = self.appended.fetch_add(1, Ordering::Relaxed) as i64;
                keys.push(Key::Int((i64::from(self.remote.me) << 40) | n));
                self.insert(at, frame.get(*array), keys, v, done);
            }
            Stmt::ArrayInsert {
                array,
                index,
                value,
                at,
            } => {
                let k = self.get(func, frame, *index).await;
                let v = self.get(func, frame, *value).await;
                let Some(k) = self.key(&k) else { return };
                self.insert(at, frame.get(*array), vec![k], v, done);
            }
            Stmt::StructSet {
                target,
                field,
                value,
                at,
            } => {
                let v = self.get(func, frame, *value).await;
                let k = vec![Key::Str(field.clone())];
                self.insert(at, frame.get(*target), k, v, done);
            }
            Stmt::InsertPath {
                target,
                path,
                value,
                at,
            } => {
                let Some(keys) = self.keys(func, frame, path).await else {
                    return;
                };
                let v = self.get(func, frame, *value).await;
                self.insert(at, frame.get(*target), keys, v, done);
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

    /// Starts the body of `foreach` statement `i` of `block` for each item.
    pub(super) async fn iterate(
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
            return self.fail(RunError::internal(format!(
                "statement {i} of block {} is no foreach",
                block.id
            )));
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
                    self.between_slices((n - from) as usize).await;
                    start(
                        Value::Int(builtins::range_value(lo, step, n)),
                        Value::Int(n as i64),
                    );
                }
            }
            Items::Members(members) => {
                for (n, (k, v)) in members.into_iter().enumerate() {
                    self.between_slices(n).await;
                    start(v, k.to_value());
                }
            }
        }
    }

    /// `for` loops: each iteration's condition, body and updates see the
    /// previous iteration's values.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_loop(
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
    pub(super) async fn element(
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
                outer.and_then(|v| crate::engine::store::walk(&v, rest))
            }
        };
        if v.is_none() {
            let steps: String = keys.iter().map(|k| format!("[{k}]")).collect();
            let name = &func.vars[c as usize].name;
            self.fail(RunError::script(format!(
                "{}: {name}{steps} is read but never assigned",
                self.place(at)
            )));
        }
        v
    }

    pub(super) fn bind_value(&self, frame: &Frame, var: VarId, v: Value) {
        let f = self.store.create(matches!(v, Value::Container(_)));
        frame.bind(var, f);
        if let Err(e) = self.store.assign(f, v) {
            self.fail(e);
        }
        self.step();
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call(
        self: &Arc<Self>,
        caller: &Arc<Function>,
        frame: &Arc<Frame>,
        name: &str,
        outs: &[VarId],
        args: &[VarId],
        opts: &ir::CallOpts,
        at: &str,
        done: &Arc<Done>,
    ) -> Result<(), RunError> {
        let Some(callee) = self.funcs.get(name).cloned() else {
            return Err(RunError::internal(format!("no function '{name}'")));
        };
        // The callee's parameters are the caller's futures.
        let binds: Vec<(VarId, FutureId)> = (callee.inputs.iter().zip(args))
            .chain(callee.outputs.iter().zip(outs))
            .map(|(p, a)| (*p, frame.get(*a)))
            .collect();
        match &callee.kind {
            FnKind::Composite => {
                let chain = frame.chain.deeper(name, at, self.opts.max_depth)?;
                let server = self.remote.next_server();
                if server == self.remote.me {
                    self.start_call(&callee, &binds, Arc::new(chain), done);
                } else {
                    let func = name.to_string();
                    self.ship(server, done, |id| Msg::Call {
                        id,
                        func,
                        binds,
                        chain,
                    });
                }
            }
            FnKind::App(t) => {
                let inner = self.callee_frame(&callee, &binds, frame.chain.clone());
                let placed = self.call_target(caller, frame, name, opts).await?;
                return self.run_app(&callee, &inner, t, placed, at, done).await;
            }
            FnKind::Leaf {
                package, target, ..
            } => {
                return Err(RunError::script(format!("'{name}' is implemented by {package} '{target}', which this runtime does not provide")));
            }
        }
        Ok(())
    }

    /// The frame of a call of `callee`: its parameters bound to the caller's
    /// futures, outputs the caller left out bound to new ones.
    pub(super) fn callee_frame(
        &self,
        callee: &Function,
        binds: &[(VarId, FutureId)],
        chain: Arc<Chain>,
    ) -> Arc<Frame> {
        let inner = Frame::with_bindings(binds, chain);
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
    pub(super) fn start_call(
        self: &Arc<Self>,
        callee: &Arc<Function>,
        binds: &[(VarId, FutureId)],
        chain: Arc<Chain>,
        done: &Arc<Done>,
    ) {
        let inner = self.callee_frame(callee, binds, chain);
        let body = self.plans.body(&callee.name);
        // A `void` output the body does not write is a signal that the
        // call is done.
        let signals: Vec<FutureId> = callee
            .outputs
            .iter()
            .filter(|o| callee.vars[**o as usize].ty == Type::Void)
            .filter(|o| !body.writes_outer.contains(*o))
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
const FOREACH_SLICE: usize = 64;

impl Engine {
    /// A large `foreach` is started in slices: between two, the leader's
    /// other work (routing the tasks already released, taking outcomes)
    /// goes on, so workers start on the first iterations while later ones
    /// are created; and no more are started while the engine has as many
    /// tasks released as it keeps at once (their memory is bounded, not
    /// the loop's length).
    async fn between_slices(&self, n: usize) {
        if n > 0 && n.is_multiple_of(FOREACH_SLICE) {
            tokio::task::yield_now().await;
            self.opts.dispatch.room().await;
        }
    }
}
