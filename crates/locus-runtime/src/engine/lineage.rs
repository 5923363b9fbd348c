//! Files lost with a node, made again (lineage, as Ray does for its
//! objects): each engine keeps the app task that made every Locus file of
//! the run it put; a task that finds an input lost has its producer run
//! again first, and a run that lost a node checks every file its tasks made
//! as soon as it is known lost and before it ends. (A task whose worker
//! left is queued again by its server.)

use super::*;
use locus_proto::fs::Record;

/// Rounds of making lost inputs again one task may go through.
const REMAKES: u32 = 3;
/// Files checked at once at the end of a run that lost a node.
const CHECKS_IN_FLIGHT: usize = 64;

/// The one run of a producer making its lost files again, shared by the
/// tasks that wait for them.
type Remaking = Arc<tokio::sync::OnceCell<Result<(), RunError>>>;

/// A Locus file of the run: the task that made it, and its record then.
#[derive(Clone)]
struct Made {
    task: Arc<Task>,
    record: Record,
}

#[derive(Default)]
pub(super) struct Lineage {
    /// Locus path (as the script names it) → what made it.
    made_by: Mutex<HashMap<String, Made>>,
    /// Lost names given back from copies that survived (`reinstate`).
    reinstated: AtomicU64,
    /// Producer task id → its latest run to make its files again.
    remaking: Mutex<HashMap<u64, Remaking>>,
}

impl Engine {
    /// Runs app task `task` until it ends for good: once the inputs it
    /// found lost are made again, it runs again. A task that succeeds is
    /// noted as the maker of its Locus outputs. (Boxed with its type named:
    /// making inputs again runs tasks, so this future contains itself.)
    pub(super) fn run_app_task(
        self: &Arc<Self>,
        mut task: Task,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send + '_>> {
        Box::pin(async move {
            let mut remakes = 0;
            loop {
                let again = task.clone();
                let mut outcome = self.opts.dispatch.run(task).await;
                if !outcome.lost.is_empty() && remakes < REMAKES {
                    // Boxed: rare, and its state would otherwise make every
                    // waiting task's larger.
                    let remade = Box::pin(self.remake_round(&outcome.lost, remakes)).await;
                    remakes += 1;
                    match remade {
                        Ok(true) => {
                            // Its inputs' records are stale: they moved.
                            task = Task {
                                id: self.opts.dispatch.task_id(),
                                stats: None,
                                ..again
                            };
                            continue;
                        }
                        Ok(false) => {}
                        Err(e) => {
                            return Outcome {
                                error: Some(e),
                                ..outcome
                            }
                        }
                    }
                }
                if outcome.error.is_none() {
                    self.made(again, std::mem::take(&mut outcome.made));
                }
                return outcome;
            }
        })
    }

    /// Runs the builtin `call` on its arguments `a` until it ends for good:
    /// once the Locus files among `a` it failed on, lost with a node, are
    /// made again, it runs again (a builtin reads them on its server).
    pub(super) async fn call_remaking<F, Fut>(
        self: &Arc<Self>,
        a: &[Value],
        call: F,
    ) -> Result<Option<Value>, RunError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<Value>, RunError>>,
    {
        let mut remakes = 0;
        loop {
            let failed = match call().await {
                Err(e) if e.kind == ErrorKind::Fs && remakes < REMAKES => e,
                done => return done,
            };
            let mut lost = Vec::new();
            for v in a {
                if let Value::File(p) = v {
                    if self.opts.storage.lost(p).await? {
                        lost.push(p.clone());
                    }
                }
            }
            if lost.is_empty() || !Box::pin(self.remake_round(&lost, remakes)).await? {
                return Err(failed);
            }
            remakes += 1;
        }
    }

    /// Notes `task` as the maker of the Locus files `made`.
    fn made(&self, task: Task, made: Vec<(String, Record)>) {
        if made.is_empty() {
            return;
        }
        let task = Arc::new(task);
        let mut made_by = self.lineage.made_by.lock().expect("lineage");
        for (path, record) in made {
            let task = task.clone();
            made_by.insert(path, Made { task, record });
        }
    }

    /// `remake` for the `round`-th time for one reader. Files lost again
    /// once made were made, maybe, by a worker of a node whose loss it had
    /// not seen yet: made again once it has (and left the run).
    async fn remake_round(
        self: &Arc<Self>,
        paths: &[String],
        round: u32,
    ) -> Result<bool, RunError> {
        if round > 0 {
            tokio::time::sleep(crate::ranks::worker::NODE_LOSS_SEEN).await;
        }
        self.remake(paths).await
    }

    /// Makes the lost files `paths` again, through the engines whose tasks
    /// made them. `Ok(false)`: no task of this run made any of them and
    /// none is lost (a file that never existed: the task's own error
    /// stands); an error names every lost file nothing can make again.
    pub(super) async fn remake(self: &Arc<Self>, paths: &[String]) -> Result<bool, RunError> {
        let mut unknown = self.remake_here(paths).await?;
        for s in (0..self.remote.servers).filter(|s| *s != self.remote.me) {
            if unknown.is_empty() {
                break;
            }
            let asked = unknown.clone();
            match self.remote.ask_remake(s, asked).await {
                Some(Ok(left)) => unknown = left,
                Some(Err(e)) => return Err(e),
                None => return Err(RunError::internal("the run was stopped")),
            }
        }
        let known = unknown.len() < paths.len();
        let mut lost = Vec::new();
        for p in unknown {
            if self.opts.storage.lost(&p).await? {
                lost.push(p);
            }
        }
        if !lost.is_empty() {
            return Err(RunError::lost(format!(
                "lost (their node gone, or every copy found bad), and made by no task of this run: {}",
                lost.join(", ")
            )));
        }
        Ok(known)
    }

    /// Makes again those of `paths` that tasks of this engine made and that
    /// are lost (each producer once, however many of its files and waiting
    /// tasks) — unless only the name was lost and a copy of the bytes
    /// survives: the name is given back; returns the paths no task of this
    /// engine made.
    pub(super) async fn remake_here(
        self: &Arc<Self>,
        paths: &[String],
    ) -> Result<Vec<String>, RunError> {
        let mut unknown = Vec::new();
        // Each producer with the run that made its files last as it was
        // before they were found lost.
        let mut producers: Vec<(Arc<Task>, Option<Remaking>)> = Vec::new();
        for p in paths {
            let made = self
                .lineage
                .made_by
                .lock()
                .expect("lineage")
                .get(p)
                .cloned();
            let Some(Made { task, record }) = made else {
                unknown.push(p.clone());
                continue;
            };
            if producers.iter().any(|(t, _)| t.id == task.id) {
                continue;
            }
            let before = self.last_remake(task.id);
            // A run making its files again is under way: its files are
            // there, unwritten, until it ends; waited for, not looked at.
            if !self.remaking_now(task.id) {
                if !self.opts.storage.lost(p).await? {
                    continue;
                }
                if self.opts.storage.reinstate(p, &record).await? {
                    self.lineage.reinstated.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
            producers.push((task, before));
        }
        let mut runs = tokio::task::JoinSet::new();
        for (producer, before) in producers {
            let cell = {
                let mut remaking = self.lineage.remaking.lock().expect("remaking");
                let cell = remaking.entry(producer.id).or_default();
                if cell.initialized() {
                    // Lost again after that run had made it: once more. A
                    // run that ended while this looked is what it found
                    // lost, made already: nothing to do.
                    match &before {
                        Some(b) if Arc::ptr_eq(b, cell) => *cell = Remaking::default(),
                        _ => continue,
                    }
                }
                cell.clone()
            };
            let e = self.clone();
            runs.spawn(async move { cell.get_or_init(|| e.remake_by(&producer)).await.clone() });
        }
        while let Some(run) = runs.join_next().await {
            run.map_err(|e| RunError::internal(format!("making a lost file again: {e}")))??;
        }
        Ok(unknown)
    }

    /// Whether a run making `producer`'s files again is under way.
    fn remaking_now(&self, producer: u64) -> bool {
        let remaking = self.lineage.remaking.lock().expect("remaking");
        remaking.get(&producer).is_some_and(|c| !c.initialized())
    }

    /// The last run making `producer`'s files again, if it has ended.
    fn last_remake(&self, producer: u64) -> Option<Remaking> {
        let remaking = self.lineage.remaking.lock().expect("remaking");
        remaking.get(&producer).filter(|c| c.initialized()).cloned()
    }

    /// Runs `producer` again (a new task, marked as such in the records).
    async fn remake_by(self: &Arc<Self>, producer: &Task) -> Result<(), RunError> {
        // First in its queue: tasks are waiting for what it makes.
        let task = Task {
            id: self.opts.dispatch.task_id(),
            remade: true,
            prio: i64::MAX,
            stats: None,
            ..producer.clone()
        };
        self.tasks_put.fetch_add(1, Ordering::AcqRel);
        let outcome = self.run_app_task(task).await;
        self.tasks_done.fetch_add(1, Ordering::AcqRel);
        self.step();
        match outcome.error {
            Some(e) => {
                let e = e.within("making lost files again");
                // The run fails at the call that failed: the producer's,
                // not that of the task waiting for its files (whose own
                // failure comes after, and is not the run's).
                self.fail(e.clone().within(&producer.at));
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// In a run that lost a node: every file this engine's tasks made that
    /// is lost now is made again (or named again); returns how many were.
    pub(super) async fn repair_here(self: &Arc<Self>) -> Result<usize, RunError> {
        let paths: Vec<String> = (self.lineage.made_by.lock().expect("lineage").keys())
            .cloned()
            .collect();
        let mut lost = Vec::new();
        let mut checks = tokio::task::JoinSet::new();
        for p in paths {
            if checks.len() >= CHECKS_IN_FLIGHT {
                if let Some(Ok(found)) = checks.join_next().await {
                    lost.extend(found?);
                }
            }
            let e = self.clone();
            checks.spawn(async move { e.opts.storage.lost(&p).await.map(|l| l.then_some(p)) });
        }
        while let Some(Ok(found)) = checks.join_next().await {
            lost.extend(found?);
        }
        self.remake_here(&lost).await?;
        Ok(lost.len())
    }

    /// On the leader, in a run that lost nodes: every engine makes its lost
    /// files again; returns how many were.
    pub(super) async fn repair(self: &Arc<Self>) -> Result<usize, RunError> {
        let mut count = self.repair_here().await?;
        for s in 1..self.remote.servers {
            match self.remote.ask_repair(s).await {
                Some(r) => count += r?,
                None => return Err(RunError::internal("the run was stopped")),
            }
        }
        Ok(count)
    }

    /// Lost names this engine gave back from surviving copies.
    pub(super) fn reinstated(&self) -> u64 {
        self.lineage.reinstated.load(Ordering::Relaxed)
    }
}
