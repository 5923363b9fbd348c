//! The stall watch: what the run waits on, and the report when nothing
//! can progress.

use super::*;

impl Engine {
    pub(super) fn progress_now(&self) -> remote::Progress {
        // Done first: a task finishing between the two loads must not make
        // done exceed put.
        let done = self.tasks_done.load(Ordering::Acquire);
        let put = self.tasks_put.load(Ordering::Acquire);
        remote::Progress {
            steps: self.progress.load(Ordering::Acquire),
            external: put - done,
            put,
            done,
            failed: self.tasks_failed.load(Ordering::Acquire),
            outside: self.outside.load(Ordering::Acquire),
        }
    }

    /// Awaits `io`, a file-system call made for the script between its
    /// steps (a builtin's, an app's inputs looked at before it is put):
    /// however long it takes (a node lost, a loaded machine), the run is
    /// not taken for stalled meanwhile.
    pub(super) async fn outside<T>(&self, io: impl std::future::Future<Output = T>) -> T {
        struct Counted<'a>(&'a AtomicU64);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.outside.fetch_add(1, Ordering::AcqRel);
        let _counted = Counted(&self.outside);
        io.await
    }

    /// Every server's control work, the leader's first (on the leader, at
    /// the end of the run).
    pub async fn control_stats(&self) -> Vec<ControlStats> {
        let mut all = vec![self.status().control];
        all.extend(self.remote.statuses().await.into_iter().map(|s| s.control));
        all
    }

    pub(super) fn status(&self) -> Status {
        Status {
            waiting: self.waiting_names(),
            failed: self.kept_failures(),
            control: ControlStats {
                rank: self.remote.rank_of(self.remote.me),
                statements: self.statements.load(Ordering::Relaxed),
                received: self.received.load(Ordering::Relaxed),
                sent: self.sent.load(Ordering::Relaxed),
                most_released: self.opts.dispatch.most_released() as u64,
            },
        }
    }

    /// Variables some task here waits on and that are still open.
    pub(super) fn waiting_names(&self) -> Vec<(String, usize)> {
        let waiting = self.waiting.lock().expect("waiting");
        waiting
            .iter()
            // Compiler temporaries (`t`, no place in the script) say nothing
            // to the user.
            .filter(|(f, (name, n))| *n > 0 && !self.is_closed(**f) && !name.ends_with(":t"))
            .map(|(_, w)| w.clone())
            .collect()
    }

    pub(super) fn is_closed(&self, f: FutureId) -> bool {
        if self.store.is_local(f) {
            self.store.is_closed(f)
        } else {
            self.remote.known_closed(f)
        }
    }

    fn kept_failures(&self) -> Vec<RunError> {
        let kept = self.kept.lock().expect("kept");
        kept.iter().map(|(e, _)| e.clone()).collect()
    }

    /// Why the run ends with nothing left to do: the tasks that failed
    /// while it went on (`--keep-going`), or the variables it waits on.
    pub(super) async fn stall_report(&self) -> RunError {
        let (mut waiting, mut failed) = (self.waiting_names(), self.kept_failures());
        for s in self.remote.statuses().await {
            waiting.extend(s.waiting);
            failed.extend(s.failed);
        }
        let mut names: Vec<String> = waiting
            .into_iter()
            .map(|(name, n)| format!("{name} ({n} waiting)"))
            .collect();
        names.sort();
        names.dedup();
        if !failed.is_empty() {
            let each: Vec<String> = failed.into_iter().map(|e| e.message).collect();
            let waited = match names.is_empty() {
                true => String::new(),
                false => format!("; waiting on them: {}", names.join(", ")),
            };
            return RunError::new(
                ErrorKind::Task,
                format!(
                    "{} task(s) failed; everything that did not depend on them ran (--keep-going): {}{waited}",
                    each.len(),
                    each.join("; ")
                ),
            );
        }
        RunError::script(format!(
            "the run cannot progress: tasks wait on variables that are never assigned: {}",
            if names.is_empty() {
                "(none found)".to_string()
            } else {
                names.join(", ")
            }
        ))
    }
}
