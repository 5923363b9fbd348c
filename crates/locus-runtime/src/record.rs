//! One record per leaf task, written by the worker that ran it to
//! `RUN_DIR/records/rank-R.jsonl`: what ran, where, how it was placed, when,
//! and how many input bytes were local or fetched.

use locus_proto::run::{Placed, Rank, Target};
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: u64,
    pub func: String,
    pub rank: Rank,
    pub node: String,
    pub target: Option<Target>,
    pub placed: Placed,
    /// Microseconds since the Unix epoch.
    pub start_us: u64,
    pub end_us: u64,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    /// Bytes of the Locus files it wrote.
    #[serde(default)]
    pub written_bytes: u64,
    /// Microseconds spent making inputs local (fetching remote ones) and
    /// registering outputs (pushing them, for a diskless node).
    #[serde(default)]
    pub stage_us: u64,
    #[serde(default)]
    pub commit_us: u64,
    /// The process's exit code (`None` for builtin tasks or no process).
    pub exit: Option<i32>,
    pub attempts: u32,
    pub error: Option<String>,
    /// Where the script calls it (`file:line:col`).
    #[serde(default)]
    pub at: String,
    /// An app's command line as run (Locus files as their host paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The Locus files it read and wrote (`/locus/…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// An app's CPU time (user + system, all attempts) and peak resident
    /// memory, from `wait4`.
    #[serde(default)]
    pub cpu_us: u64,
    #[serde(default)]
    pub max_rss_kib: u64,
    /// Where its stdout and stderr were kept, relative to the run
    /// directory (`tasks/<id>.out|.err`), if it wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
}

pub fn records_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("records")
}

/// Where task `id`'s stream `ext` (`out` or `err`) is kept, relative to
/// the run directory.
pub fn task_stream(id: u64, ext: &str) -> String {
    format!("tasks/{id}.{ext}")
}

pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Appends one worker's records.
pub struct Recorder {
    path: std::path::PathBuf,
    /// Opened with the first record: a rank that runs no task makes no
    /// file (thousands of ranks creating files in one directory at once
    /// contend on it).
    out: Option<BufWriter<std::fs::File>>,
}

impl Recorder {
    pub fn new(run_dir: &Path, rank: Rank) -> Recorder {
        Recorder {
            path: records_dir(run_dir).join(format!("rank-{rank}.jsonl")),
            out: None,
        }
    }

    pub fn write(&mut self, r: &TaskRecord) -> io::Result<()> {
        let out = match &mut self.out {
            Some(out) => out,
            None => {
                std::fs::create_dir_all(self.path.parent().expect("in the records directory"))?;
                let file = std::fs::File::create(&self.path)?;
                self.out.insert(BufWriter::with_capacity(256 << 10, file))
            }
        };
        serde_json::to_writer(&mut *out, r)?;
        out.write_all(b"\n")
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().map_or(Ok(()), |out| out.flush())
    }
}

/// Every record of a run, ordered by start time.
pub fn load(run_dir: &Path) -> io::Result<Vec<TaskRecord>> {
    let dir = records_dir(run_dir);
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(&dir) {
        // No task ran.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        rd => rd.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?,
    };
    for entry in rd {
        let path = entry?.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let f = io::BufReader::new(std::fs::File::open(&path)?);
        for (i, line) in f.lines().enumerate() {
            let line = line?;
            let r = serde_json::from_str(&line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{}: {e}", path.display(), i + 1),
                )
            })?;
            out.push(r);
        }
    }
    out.sort_by_key(|r: &TaskRecord| (r.start_us, r.id));
    Ok(out)
}
