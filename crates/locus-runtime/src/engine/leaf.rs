//! Leaf tasks: `app` calls and builtins that run on workers, where they
//! are placed (locations, automatic locality), and what they give back.

use super::*;
use crate::records::plan::{Planned, Rerun};
use locus_proto::run::Par;

/// What a call's annotations ask of its task.
pub(super) struct Asked {
    pub target: Option<Target>,
    pub prio: i64,
    pub timeout: Option<f64>,
    /// `@par`: its job's size.
    pub par: Option<u32>,
}

impl Engine {
    /// What a call's annotations ask of its task, evaluated in the
    /// caller's frame: the placement (checked against the run's ranks),
    /// the priority, the timeout and the job size.
    pub(super) async fn call_target(
        &self,
        caller: &Function,
        frame: &Frame,
        name: &str,
        opts: &ir::CallOpts,
    ) -> Result<Asked, RunError> {
        let timeout = match opts.timeout {
            None => None,
            Some(t) => match self.get(caller, frame, t).await {
                Value::Int(i) if i > 0 => Some(i as f64),
                Value::Float(x) if x > 0.0 && x.is_finite() => Some(x),
                other => {
                    return Err(RunError::script(format!(
                        "call of '{name}': @timeout must be a positive number of seconds, not {}",
                        other.render()
                    )))
                }
            },
        };
        let prio = match opts.prio {
            Some(p) => match self.get(caller, frame, p).await {
                Value::Int(i) => i,
                other => {
                    return Err(RunError::script(format!(
                        "call of '{name}': @prio must be an int, not {}",
                        other.render()
                    )))
                }
            },
            None => 0,
        };
        let par = match opts.par {
            Some(p) => Some(self.job_size(name, self.get(caller, frame, p).await)?),
            None => None,
        };
        let asked = Asked {
            target: None,
            prio,
            timeout,
            par,
        };
        let Some(loc) = opts.location else {
            return Ok(asked);
        };
        let Value::Location(l) = self.get(caller, frame, loc).await else {
            return Err(RunError::script(format!(
                "call of '{name}': @location needs a location"
            )));
        };
        let rank = self.opts.storage.layout.check_target(l.rank).map_err(|e| {
            RunError::script(format!(
                "call of '{name}': location({}, {}, {}): {e}",
                l.rank,
                if l.hard && !opts.soft { "HARD" } else { "SOFT" },
                if l.node { "NODE" } else { "RANK" }
            ))
        })?;
        let target = Target {
            rank,
            hard: l.hard && !opts.soft,
            node: l.node,
        };
        Ok(Asked {
            target: Some(target),
            ..asked
        })
    }

    /// `@par=N`'s N, if the run can ever gather that many workers for one
    /// job: those of the leading server, which reserves them.
    fn job_size(&self, name: &str, v: Value) -> Result<u32, RunError> {
        let layout = &self.opts.storage.layout;
        let most = layout.workers_of(layout.leader()).count();
        let n = match v {
            Value::Int(n) if n >= 1 => n,
            other => {
                return Err(RunError::script(format!(
                    "call of '{name}': @par must be a positive int, not {}",
                    other.render()
                )))
            }
        };
        if n > most as i64 {
            let why = match layout.servers {
                1 => format!("this run has {most} workers"),
                s => format!(
                    "a job's workers are those of one server, and with {s} servers the \
                     first has {most} (fewer --servers gives it more)"
                ),
            };
            return Err(RunError::script(format!(
                "call of '{name}': @par={n} can never run: {why}"
            )));
        }
        Ok(n as u32)
    }

    pub(super) fn task(
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
            stats: None,
            spill: None,
            remade: false,
            was_lost: false,
            par: None,
        }
    }

    /// Evaluates builtin `op`, called at `at`, on its arguments: the values
    /// of its outputs (none for outputs that are `void` signals).
    pub(super) async fn builtin(
        self: &Arc<Self>,
        frame: &Frame,
        (op, at): (Builtin, &ir::Pos),
        a: &[Value],
        outs: &[VarId],
    ) -> Result<Vec<Value>, RunError> {
        let cx = Context {
            args: &self.opts.args,
        };
        match op {
            Builtin::Pure(p) => builtins::pure(p, a, &cx),
            Builtin::Run(r) => {
                let dst = match (r, outs.first()) {
                    (
                        Run::Write | Run::WriteArrayString | Run::WriteArrayStringOrdered,
                        Some(o),
                    ) => Some(self.path(frame.get(*o)).await),
                    _ => None,
                };
                // Boxed, as the task builtins: every statement's future
                // would otherwise be as large as the largest of these.
                let call = || Box::pin(self.outside(self.opts.storage.call(r, a, dst.as_deref())));
                let v = Box::pin(self.call_remaking(a, call)).await?;
                Ok(v.into_iter().collect())
            }
            Builtin::Effect(e) => {
                if let Some(line) = builtins::effect(e, a, &cx)? {
                    self.print(&line);
                }
                Ok(Vec::new())
            }
            Builtin::Task(t) => Box::pin(self.task_builtin(t, at, a)).await,
        }
    }

    /// A builtin that runs on a worker, as a leaf task named after it.
    pub(super) async fn task_builtin(
        self: &Arc<Self>,
        op: TaskFn,
        at: &ir::Pos,
        a: &[Value],
    ) -> Result<Vec<Value>, RunError> {
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
        let task = Task {
            at: self.place(at),
            ..self.task(op.name(), None, Placed::Anywhere, 0, work)
        };
        let outcome = self.leaf_outcome(task).await?;
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
    pub(super) fn print(&self, line: &str) {
        let mut out = self.opts.out.lock().expect("output");
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// Runs a leaf task on a worker; returns what became of it.
    pub(super) async fn leaf_outcome(self: &Arc<Self>, task: Task) -> Result<Outcome, RunError> {
        self.tasks_put.fetch_add(1, Ordering::AcqRel);
        self.show_progress();
        // Only an app reads and writes Locus files (lineage).
        let outcome = match task.work {
            Work::App { .. } => self.run_app_task(task).await,
            _ => self.opts.dispatch.run(task).await,
        };
        if outcome.error.is_some() {
            self.tasks_failed.fetch_add(1, Ordering::AcqRel);
        }
        self.tasks_done.fetch_add(1, Ordering::AcqRel);
        self.show_progress();
        self.step();
        match outcome.error {
            Some(e) => Err(e),
            None => Ok(outcome),
        }
    }

    /// Leaf tasks done and put on every server, on the progress bar.
    pub(super) fn show_progress(&self) {
        if let Some(shown) = &self.opts.progress {
            let (mine, others) = (self.progress_now(), self.remote.others());
            shown.show(Counts {
                put: mine.put + others.put,
                done: mine.done + others.done,
                running: mine.external + others.external,
                failed: mine.failed + others.failed,
            });
        }
    }

    /// Where an app's output file goes: its path, known before it is written.
    pub(super) async fn output_path(&self, frame: &Frame, v: VarId) -> String {
        self.path(frame.get(v)).await
    }

    /// A command-line word or redirection for a value: files are inputs.
    pub(super) fn input_arg(v: &Value) -> Arg {
        match v {
            Value::File(p) => Arg::In(p.clone()),
            other => Arg::Lit(other.render()),
        }
    }

    /// The file a redirection names: an output's path, or an input's value.
    pub(super) async fn stream(
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
    pub(super) async fn run_app(
        self: &Arc<Self>,
        app: &Arc<Function>,
        frame: &Arc<Frame>,
        t: &ir::AppTemplate,
        asked: Asked,
        at: &str,
        done: &Arc<Done>,
    ) -> Result<(), RunError> {
        let Asked {
            target,
            prio,
            timeout,
            par,
        } = asked;
        self.run_block(app, frame, self.plans.body(&app.name), done)
            .await;
        let outputs: HashSet<VarId> = app.outputs.iter().copied().collect();
        // As in Swift/T, an app runs once all its inputs are closed, those
        // its command line does not name too (a file passed to order it
        // after the task that writes it).
        let named: HashSet<VarId> = t
            .words
            .iter()
            .filter_map(|w| match w {
                Word::Var(v) => Some(*v),
                Word::Lit(_) => None,
            })
            .chain([t.stdin, t.stdout, t.stderr].into_iter().flatten())
            .collect();
        for v in app.inputs.iter().filter(|v| !named.contains(v)) {
            self.get(app, frame, *v).await;
        }
        let mut argv: Vec<Arg> = Vec::new();
        for w in &t.words {
            match w {
                Word::Lit(s) => argv.push(Arg::Lit(s.clone())),
                Word::Var(v) if outputs.contains(v) => {
                    argv.push(Arg::Out(self.output_path(frame, *v).await));
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
            return Err(RunError::script(format!(
                "app '{}' has an empty command line",
                app.name
            )));
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
        // The awaits below are boxed, and made only when there is something
        // to look at: this call's state is kept while its task waits for a
        // worker, for every task released at once.
        // A dry run's call reading what another would make again.
        let remade = self
            .opts
            .dry_run
            .then(|| resume.remade_input(&inputs))
            .flatten();
        let earlier = match (remade, resume.done(&key)) {
            (Some(path), _) => Err(Rerun::InputRemade { path }),
            (None, Some(done)) if done.declared.len() == out_files.len() => {
                let unchanged = resume.unchanged(done, &inputs, &self.opts.storage);
                Box::pin(self.outside(unchanged)).await.map(|()| done)
            }
            (None, _) => Err(Rerun::NeverRun),
        };
        if self.opts.dry_run {
            let declared: Vec<String> = out_files.iter().map(|(_, p)| p.clone()).collect();
            let rerun = match &earlier {
                Ok(_) => None,
                Err(Rerun::NeverRun) => Some(resume.why_not_done(&key, at, &declared)),
                Err(why) => Some(why.clone()),
            };
            resume.plan(&Planned {
                func: app.name.clone(),
                at: at.to_string(),
                argv: command_line(&argv, [&stdin, &stdout, &stderr]),
                kept: earlier.is_ok(),
                rerun: rerun.filter(|_| resume.resuming()),
            });
            if earlier.is_err() {
                resume.remake(&declared);
            }
            let made = earlier.map_or(declared, |e| e.declared.clone());
            resume.made(&key, &made);
            for ((f, _), p) in out_files.iter().zip(made) {
                self.set(*f, Value::File(p), done);
            }
            self.void_outputs(app, frame, done);
            return Ok(());
        }
        if let Ok(earlier) = earlier {
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
        let read: Vec<&Arg> = argv.iter().chain(&stdin).collect();
        let learned = self.mount_reads.of(&app.name);
        let weighed = self.weighed_inputs(target, &read).map(|mut paths| {
            paths.extend(learned.iter().map(String::as_str));
            paths
        });
        let stats = match weighed {
            Some(paths) if paths.is_empty() => Some(crate::builtins::storage::no_records()),
            Some(paths) => Some(Box::pin(self.outside(self.opts.storage.stat_all(&paths))).await),
            None => None,
        };
        let held = stats
            .as_ref()
            .map_or_else(Vec::new, |s| self.opts.storage.held(s));
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
            unmapped: out_files
                .iter()
                .map(|(_, p)| p)
                .filter(|p| resume.is_temp(p))
                .cloned()
                .collect(),
            timeout,
        };
        let declared: Vec<String> = out_files.iter().map(|(_, p)| p.clone()).collect();
        let task = Task {
            at: at.to_string(),
            key: key.clone(),
            inputs: held,
            stats,
            par: par.map(|n| Box::new(Par::new(n))),
            ..self.task(&app.name, target, placed, prio, work)
        };
        let outcome = Box::pin(self.leaf_outcome(task)).await?;
        self.mount_reads.learn(&app.name, &outcome.read);
        resume.made(&key, &declared);
        for (f, p) in out_files {
            self.set(f, Value::File(p), done);
        }
        self.void_outputs(app, frame, done);
        Ok(())
    }

    /// Signals an app's `void` outputs: it is done.
    pub(super) fn void_outputs(self: &Arc<Self>, app: &Function, frame: &Frame, done: &Arc<Done>) {
        for o in &app.outputs {
            if app.vars[*o as usize].ty == Type::Void {
                self.set(frame.get(*o), SIGNAL, done);
            }
        }
    }

    /// A task's Locus inputs, whose records are wanted when its placement
    /// may use where they are: a SOFT target (to weigh leaving it) or none
    /// under `--locality auto` (to choose one). HARD tasks go where they
    /// are told.
    fn weighed_inputs<'a>(
        &self,
        target: Option<Target>,
        words: &[&'a Arg],
    ) -> Option<Vec<&'a str>> {
        let weighed = match target {
            Some(t) => !t.hard,
            None => self.opts.locality == Locality::Auto,
        };
        weighed.then(|| {
            words
                .iter()
                .filter_map(|a| match a {
                    Arg::In(p) if crate::exec::files::fs_path(p).is_some() => Some(p.as_str()),
                    _ => None,
                })
                .collect()
        })
    }

    /// `--locality auto`: SOFT NODE at the node holding most input bytes
    /// (the server breaks ties by load).
    pub(super) fn auto_target(&self, inputs: &[Held]) -> (Option<Target>, Placed) {
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

/// An app's command line as a plan shows it: its words, then its
/// redirections.
fn command_line(argv: &[Arg], streams: [&Option<Arg>; 3]) -> Vec<String> {
    let word = |w: &Arg| w.text().to_string();
    let mut line: Vec<String> = argv.iter().map(word).collect();
    for (sign, stream) in ["<", ">", "2>"].into_iter().zip(streams) {
        line.extend(stream.as_ref().map(|w| format!("{sign}{}", word(w))));
    }
    line
}
