//! `--resume`: which app tasks earlier runs of the same run directory did.
//! A task is known across runs by its key: its function and command line as
//! the script wrote it, with each unmapped file named by the task that made
//! it (and which of its outputs) rather than by its run-specific path
//! under `/locus/tmp/`. A task whose key an earlier run recorded as
//! succeeded is not run again when every file it read is the version it
//! read then and every file it wrote is still the version it wrote; its
//! outputs are taken as they are (unmapped ones at their earlier paths).
//! By content (`--resume=content`), a file that is another version with
//! the bytes an earlier run recorded the hash of counts as unchanged. The
//! programs a task ran (its executable, the scripts its command line
//! names) count as files it read.

use crate::builtins::storage::Storage;
use crate::exec::files::LOCUS_PREFIX;
use crate::records::plan::{PlanWriter, Planned, Rerun};
use crate::records::record::{self, Recorder, Seen, TaskRecord};
use locus_proto::run::{Arg, Placed, Rank, RunError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// What `--resume` compares of the files a task read and wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeBy {
    /// Their versions (Locus stamps; host files' size and mtime).
    Versions,
    /// Their versions, else the hashes of their bytes (where the earlier
    /// run recorded them: `--record-hashes`).
    Content,
}

impl std::str::FromStr for ResumeBy {
    type Err = String;
    fn from_str(s: &str) -> Result<ResumeBy, String> {
        match s {
            "versions" => Ok(ResumeBy::Versions),
            "content" => Ok(ResumeBy::Content),
            _ => Err(format!("'{s}': expected versions or content")),
        }
    }
}

pub struct Resume {
    /// Earlier runs' successful records, by key: the last success of each
    /// (a later failure of the same task forgets it; empty without
    /// `--resume`).
    done: HashMap<String, TaskRecord>,
    /// The error of each task whose last earlier run failed.
    failed: HashMap<String, String>,
    /// Each call site's last command (key and command line), by the
    /// mapped files it wrote: a call writing them now with another key ran
    /// another command (kept for a dry run only, which says so).
    sites: HashMap<(String, Vec<String>), (String, Vec<String>)>,
    by: ResumeBy,
    resuming: bool,
    /// Unmapped files → the key of the task that wrote them and which of
    /// its outputs each is.
    made_by: Mutex<HashMap<String, String>>,
    /// Where this run's unmapped host files go (runs without a file system).
    host_temp: String,
    /// The records of tasks not run again (this server's).
    recorder: Mutex<Recorder>,
    /// The outputs of the calls a dry run would run: a call reading one
    /// would run too.
    remade: Mutex<std::collections::HashSet<String>>,
    /// A dry run's decisions (this server's).
    plan: Mutex<PlanWriter>,
}

impl Resume {
    /// For the server `rank` of the run in `run_dir`; reads the earlier
    /// runs' records when `resume` (and, for a `dry_run`, what each call
    /// site ran).
    pub fn new(
        run_dir: &Path,
        rank: Rank,
        resume: Option<ResumeBy>,
        dry_run: bool,
    ) -> Result<Resume, RunError> {
        let earlier = match resume {
            Some(_) => record::load_resume(run_dir).map_err(|e| {
                RunError::fs(format!("{}: {e}", record::resume_dir(run_dir).display()))
            })?,
            None => Vec::new(),
        };
        let mut r = Resume {
            done: HashMap::new(),
            failed: HashMap::new(),
            sites: HashMap::new(),
            by: resume.unwrap_or(ResumeBy::Versions),
            resuming: resume.is_some(),
            made_by: Mutex::default(),
            host_temp: format!("{}/", run_dir.join("tmp").display()),
            recorder: Mutex::new(Recorder::new(run_dir, rank)),
            remade: Mutex::default(),
            plan: Mutex::new(PlanWriter::new(run_dir, rank)),
        };
        for t in earlier {
            let mapped = dry_run.then(|| r.mapped(&t.declared));
            if let Some(mapped) = mapped.filter(|m| !m.is_empty()) {
                r.sites
                    .insert((t.at.clone(), mapped), (t.key.clone(), t.argv.clone()));
            }
            match &t.error {
                None => {
                    r.failed.remove(&t.key);
                    r.done.insert(t.key.clone(), t);
                }
                Some(e) => {
                    r.done.remove(&t.key);
                    r.failed.insert(t.key.clone(), e.clone());
                }
            }
        }
        Ok(r)
    }

    /// Why the call at `at` of key `key`, writing `declared`, would run
    /// when no earlier success of it is kept.
    pub(crate) fn why_not_done(&self, key: &str, at: &str, declared: &[String]) -> Rerun {
        if let Some(error) = self.failed.get(key) {
            return Rerun::Failed {
                error: error.clone(),
            };
        }
        match self.sites.get(&(at.to_string(), self.mapped(declared))) {
            Some((earlier, was)) if earlier != key => Rerun::CommandChanged { was: was.clone() },
            _ => Rerun::NeverRun,
        }
    }

    /// The files of `declared` the script named (not unmapped ones).
    fn mapped(&self, declared: &[String]) -> Vec<String> {
        let named = declared.iter().filter(|p| !self.is_temp(p));
        named.cloned().collect()
    }

    /// The first of `inputs` a call the dry run would run makes.
    pub(crate) fn remade_input(&self, inputs: &[&str]) -> Option<String> {
        let remade = self
            .remade
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inputs
            .iter()
            .find(|p| remade.contains(**p))
            .map(ToString::to_string)
    }

    /// Notes the outputs of a call the dry run would run.
    pub(crate) fn remake(&self, outputs: &[String]) {
        let mut remade = self
            .remade
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        remade.extend(outputs.iter().cloned());
    }

    /// Whether earlier runs are resumed.
    pub(crate) fn resuming(&self) -> bool {
        self.resuming
    }

    /// Notes a dry run's decision on an app call.
    pub(crate) fn plan(&self, planned: &Planned) {
        let mut w = self
            .plan
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = w.write(planned) {
            tracing::warn!("dry run's plan: {e}");
        }
    }

    /// Whether `path` is a name the run gave a file the script did not map.
    pub fn is_temp(&self, path: &str) -> bool {
        path.starts_with(&format!("{LOCUS_PREFIX}/tmp/")) || path.starts_with(&self.host_temp)
    }

    /// The key of an app task: `func` with `words` (its command line, then
    /// its redirections).
    pub fn key<'a>(&self, func: &str, words: impl Iterator<Item = &'a Arg>) -> String {
        let made_by = self
            .made_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let canonical: Vec<String> = words
            .map(|w| match w {
                Arg::Lit(s) => format!("L{s}"),
                Arg::In(p) => match made_by.get(p) {
                    Some(by) => format!("M{by}"),
                    None => format!("I{p}"),
                },
                Arg::Out(p) if self.is_temp(p) => "T".to_string(),
                Arg::Out(p) => format!("O{p}"),
            })
            .collect();
        let bytes = serde_json::to_vec(&(func, canonical)).expect("strings serialise");
        blake3::hash(&bytes).to_hex().to_string()
    }

    /// Notes that the task `key` wrote `outputs` (its declared outputs, in
    /// order), so that the keys of the tasks reading them name it.
    pub fn made(&self, key: &str, outputs: &[String]) {
        let mut made_by = self
            .made_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (i, p) in outputs.iter().enumerate() {
            if self.is_temp(p) {
                made_by.insert(p.clone(), format!("{key}#{i}"));
            }
        }
    }

    /// An earlier run's record of the task `key`, if it succeeded: the
    /// task is not run again if it is `unchanged`.
    pub fn done(&self, key: &str) -> Option<&TaskRecord> {
        self.done.get(key)
    }

    /// Whether the task `done` did read the files `inputs` read now (in
    /// the order they are staged) at the versions they are now, its
    /// outputs are still what it wrote and its programs what ran; if not,
    /// the first difference.
    pub async fn unchanged(
        &self,
        done: &TaskRecord,
        inputs: &[&str],
        storage: &Storage,
    ) -> Result<(), Rerun> {
        let mut now = Vec::with_capacity(inputs.len());
        for p in inputs {
            // A host input that is not there was not recorded either.
            now.extend(storage.seen(p).await);
        }
        // Its command line's inputs come first; what it read through the
        // mount after them.
        let changed = |path: &str| Rerun::InputChanged {
            path: path.to_string(),
        };
        if now.len() > done.inputs.len() {
            return Err(changed(&now[done.inputs.len()].path));
        }
        let (named, read) = done.inputs.split_at(now.len());
        for (now, then) in now.iter().zip(named) {
            if !self.same(storage, now, then).await {
                return Err(changed(&then.path));
            }
        }
        for then in read {
            match storage.seen(&then.path).await {
                Some(now) if self.same(storage, &now, then).await => {}
                _ => return Err(changed(&then.path)),
            }
        }
        for then in &done.outputs {
            let path = then.path.clone();
            match storage.seen(&then.path).await {
                None => return Err(Rerun::OutputMissing { path }),
                Some(now) if !self.same(storage, &now, then).await => {
                    return Err(Rerun::OutputChanged { path })
                }
                Some(_) => {}
            }
        }
        for then in &done.programs {
            match storage.seen(&then.path).await {
                Some(now) if self.same(storage, &now, then).await => {}
                _ => {
                    return Err(Rerun::ProgramChanged {
                        path: then.path.clone(),
                    })
                }
            }
        }
        Ok(())
    }

    /// Whether a file seen `now` is as a task saw it `then`: the same
    /// version, or by content the bytes it recorded the hash of.
    async fn same(&self, storage: &Storage, now: &Seen, then: &Seen) -> bool {
        now.version == then.version
            || (self.by == ResumeBy::Content
                && then.hash.is_some()
                && storage.content_hash(&then.path).await == then.hash)
    }

    /// Records that task `id` (a call of `func` at `at`, seen by server
    /// `rank` on `node`) was not run again: `done` had done it.
    pub fn record(
        &self,
        id: u64,
        (func, at, rank, node): (&str, &str, Rank, &str),
        done: &TaskRecord,
    ) {
        let now = record::now_us();
        let task = TaskRecord {
            id,
            func: func.to_string(),
            rank,
            node: node.to_string(),
            target: None,
            placed: Placed::Anywhere,
            spill: None,
            start_us: now,
            end_us: now,
            local_bytes: 0,
            remote_bytes: 0,
            written_bytes: 0,
            stage_us: 0,
            commit_us: 0,
            exit: Some(0),
            attempts: 0,
            error: None,
            error_kind: None,
            at: at.to_string(),
            argv: done.argv.clone(),
            inputs: done.inputs.clone(),
            outputs: done.outputs.clone(),
            programs: done.programs.clone(),
            key: done.key.clone(),
            declared: done.declared.clone(),
            resumed: true,
            remade: false,
            lost: Vec::new(),
            abandoned: false,
            cpu_us: 0,
            max_rss_kib: 0,
            stdout: done.stdout.clone(),
            stderr: done.stderr.clone(),
            job: done.job.clone(),
        };
        let mut r = self
            .recorder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(e) = r.write(&task).and_then(|()| r.flush()) {
            tracing::warn!("record of resumed task {}: {e}", task.id);
        }
    }
}
