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
    /// Earlier runs' successful records, by key (empty without `--resume`).
    done: HashMap<String, TaskRecord>,
    by: ResumeBy,
    /// Unmapped files → the key of the task that wrote them and which of
    /// its outputs each is.
    made_by: Mutex<HashMap<String, String>>,
    /// Where this run's unmapped host files go (runs without a file system).
    host_temp: String,
    /// The records of tasks not run again (this server's).
    recorder: Mutex<Recorder>,
}

impl Resume {
    /// For the server `rank` of the run in `run_dir`; reads the earlier
    /// runs' records when `resume`.
    pub fn new(run_dir: &Path, rank: Rank, resume: Option<ResumeBy>) -> Result<Resume, RunError> {
        let done = match resume {
            Some(_) => record::load_resume(run_dir).map_err(|e| {
                RunError::fs(format!("{}: {e}", record::resume_dir(run_dir).display()))
            })?,
            None => HashMap::new(),
        };
        Ok(Resume {
            done,
            by: resume.unwrap_or(ResumeBy::Versions),
            made_by: Mutex::default(),
            host_temp: format!("{}/", run_dir.join("tmp").display()),
            recorder: Mutex::new(Recorder::new(run_dir, rank)),
        })
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
    /// the order they are staged) at the versions they are now, and its
    /// outputs are still what it wrote.
    pub async fn unchanged(&self, done: &TaskRecord, inputs: &[&str], storage: &Storage) -> bool {
        let mut now = Vec::with_capacity(inputs.len());
        for p in inputs {
            // A host input that is not there was not recorded either.
            now.extend(storage.seen(p).await);
        }
        // Its command line's inputs come first; what it read through the
        // mount after them.
        if now.len() > done.inputs.len() {
            return false;
        }
        let (named, read) = done.inputs.split_at(now.len());
        for (now, then) in now.iter().zip(named) {
            if !self.same(storage, now, then).await {
                return false;
            }
        }
        // What it read through the mount is still what it read, its outputs
        // what it wrote, and its programs what ran.
        for then in read.iter().chain(&done.outputs).chain(&done.programs) {
            let Some(now) = storage.seen(&then.path).await else {
                return false;
            };
            if !self.same(storage, &now, then).await {
                return false;
            }
        }
        true
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
