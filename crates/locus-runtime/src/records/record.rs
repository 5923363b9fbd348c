//! One record per leaf task, written by the worker that ran it to
//! `RUN_DIR/records/rank-R.jsonl`: what ran, where, how it was placed, when,
//! and how many input bytes were local or fetched.

use locus_proto::run::{ErrorKind, Placed, Rank, Spill, Target};
use serde::de::DeserializeOwned;
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
    /// Moved off its preferred node by the server, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<Spill>,
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
    /// What kind of failure `error` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// Where the script calls it (`file:line:col`).
    #[serde(default)]
    pub at: String,
    /// An app's command line as run, Locus files named by their Locus
    /// paths (`/locus/…`) as the script names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The files it read and wrote (Locus files as `/locus/…`), each with
    /// the version it saw: what `--resume` compares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<Seen>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<Seen>,
    /// The programs it ran (`exec::programs`), each with the version it
    /// ran: one changed since means the task is run again on `--resume`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<Seen>,
    /// What an app task is (its function and command line as the script
    /// wrote it), hashed: the same task in a resumed run has the same key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// An app's declared output files as they were named (unmapped ones
    /// under `/locus/tmp/`): what a resumed run takes as that call's
    /// outputs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared: Vec<String>,
    /// Not run: an earlier run of this directory did it, and its inputs
    /// and outputs are as they were then (`--resume`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// Run again because a file it made was lost with a node (lineage).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remade: bool,
    /// Its Locus inputs found lost (gone, or held only by nodes that cannot
    /// be reached): it did not run, and runs again once they are made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<String>,
    /// Stopped unfinished because its worker's node was lost (or, for a
    /// parallel task, a worker of its job); run again elsewhere.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandoned: bool,
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
    /// A parallel task's workers, the one that launched its job first
    /// (`rank` and `node` above), with each one's file I/O on its node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job: Vec<JobPart>,
}

/// One worker of a parallel task's job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobPart {
    pub rank: Rank,
    pub node: String,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    pub written_bytes: u64,
}

impl TaskRecord {
    /// The workers it kept busy: its own, or its job's.
    pub fn workers(&self) -> impl Iterator<Item = Rank> + '_ {
        let own = self.job.is_empty().then_some(self.rank);
        own.into_iter().chain(self.job.iter().map(|p| p.rank))
    }

    /// What its record's flags say of how it ended.
    pub fn ended_as(&self) -> EndedAs {
        EndedAs {
            errored: self.error.is_some(),
            abandoned: self.abandoned,
            lost_inputs: !self.lost.is_empty(),
            kind: self.error_kind,
        }
    }

    pub fn stopped(&self) -> bool {
        self.ended_as().stopped()
    }

    /// Run again to make files lost with a node, and made them (an
    /// attempt stopped by a loss in turn made nothing: it is `stopped`).
    pub fn made_again(&self) -> bool {
        self.remade && self.error.is_none()
    }

    pub fn interrupted(&self) -> bool {
        self.ended_as().interrupted()
    }

    pub fn failed(&self) -> bool {
        self.ended_as().failed()
    }
}

/// How a task ended, from the flags of its record (for a reader that reads
/// only those, as a live page does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndedAs {
    pub errored: bool,
    pub abandoned: bool,
    pub lost_inputs: bool,
    pub kind: Option<ErrorKind>,
}

impl EndedAs {
    /// Stopped by a lost node (its worker's, or one its inputs were on)
    /// and run again: not a failure of the run's.
    pub fn stopped(self) -> bool {
        self.abandoned || self.lost_inputs
    }

    /// Stopped while it ran because the run was stopped from outside.
    pub fn interrupted(self) -> bool {
        self.kind == Some(ErrorKind::Interrupted)
    }

    /// Failed on its own account (after any retries).
    pub fn failed(self) -> bool {
        self.errored && !self.stopped() && !self.interrupted()
    }
}

/// A file as a task saw it: a Locus file's version is the stamp of the
/// write that made it (`s<stamp>`), a host file's its size and
/// modification time (`h<size>-<mtime ns>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub path: String,
    pub version: String,
    /// The BLAKE3 hash of its bytes, in runs resumed by content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

impl Seen {
    pub fn locus(path: &str, stamp: u64) -> Seen {
        Seen {
            path: path.to_string(),
            version: format!("s{stamp}"),
            hash: None,
        }
    }

    /// Host file `path` as it is now, if it exists.
    pub fn host(path: &str) -> Option<Seen> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Seen {
            path: path.to_string(),
            version: format!(
                "h{}-{}",
                m.len(),
                m.mtime() * 1_000_000_000 + m.mtime_nsec()
            ),
            hash: None,
        })
    }
}

/// The hash of the bytes of host file `path` (as a Locus file's record
/// vouches for its bytes), in hex, read off the async threads; `None` if it
/// cannot be read.
pub async fn hash_of(path: PathBuf) -> Option<String> {
    let hash = move || -> io::Result<String> {
        let content = locus_fs::sums::of_file(&std::fs::File::open(&path)?)?.content();
        Ok(locus_fs::sums::hex(&content.sum))
    };
    tokio::task::spawn_blocking(hash).await.ok()?.ok()
}

pub fn records_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("records")
}

/// A task a server held (queued, or sent to a worker) when the run was
/// stopped from outside; one without a record of its own never started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldTask {
    pub id: u64,
    pub func: String,
    /// Where the script calls it.
    pub at: String,
}

fn held_file(run_dir: &Path, rank: Rank) -> PathBuf {
    records_dir(run_dir).join(format!("held-{rank}.json"))
}

/// Writes what server `rank` held as the run was stopped.
pub fn write_held(run_dir: &Path, rank: Rank, held: &[HeldTask]) -> io::Result<()> {
    std::fs::create_dir_all(records_dir(run_dir))?;
    let bytes = serde_json::to_vec(held).map_err(io::Error::other)?;
    locus_fs::write_whole(&held_file(run_dir, rank), &bytes)
}

/// The tasks of the run in `run_dir` that never started: held by a server
/// when the run was stopped, with no record of their own in `records`.
pub fn never_started(run_dir: &Path, records: &[TaskRecord]) -> io::Result<Vec<HeldTask>> {
    let ran: std::collections::HashSet<u64> = records.iter().map(|r| r.id).collect();
    let mut held = Vec::new();
    let rd = match std::fs::read_dir(records_dir(run_dir)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(held),
        rd => rd?,
    };
    for entry in rd {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("held-") && name.ends_with(".json") {
            let bytes = std::fs::read(&path)?;
            let list: Vec<HeldTask> = serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            })?;
            held.extend(list.into_iter().filter(|h| !ran.contains(&h.id)));
        }
    }
    held.sort_by_key(|h| h.id);
    held.dedup_by_key(|h| h.id);
    Ok(held)
}

/// Earlier runs' records, kept for `--resume`.
pub fn resume_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("resume")
}

/// Before a resumed run: moves the last run's records to `resume/` as the
/// next generation (a resume of a resume still knows what the first run
/// did and the second did not get to).
pub fn keep_for_resume(run_dir: &Path) -> io::Result<()> {
    let (from, to) = (records_dir(run_dir), resume_dir(run_dir));
    std::fs::create_dir_all(&to)?;
    let generation = std::fs::read_dir(&to)?.count();
    let rd = match std::fs::read_dir(&from) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        rd => rd?,
    };
    for entry in rd {
        let entry = entry?;
        let name = format!("g{generation:06}-{}", entry.file_name().to_string_lossy());
        std::fs::rename(entry.path(), to.join(name))?;
    }
    std::fs::remove_dir(&from)
}

/// The records of earlier runs' app tasks (those with a key), the earliest
/// run's first.
pub(crate) fn load_resume(run_dir: &Path) -> io::Result<Vec<TaskRecord>> {
    let mut all = read_dir_records(&resume_dir(run_dir), true)?;
    all.retain(|r| !r.key.is_empty());
    Ok(all)
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
        self.out.as_mut().map_or(Ok(()), std::io::Write::flush)
    }
}

/// Every record of a run, ordered by start time.
pub fn load(run_dir: &Path) -> io::Result<Vec<TaskRecord>> {
    let mut out = read_dir_records(&records_dir(run_dir), false)?;
    out.sort_by_key(|r: &TaskRecord| (r.start_us, r.id));
    Ok(out)
}

/// Every record of the run in `run_dir` as a `T` (the fields a reader
/// needs; those it does not name are skipped unread), in no order: the
/// ranks' files are read in parallel.
pub fn load_as<T: DeserializeOwned + Send>(run_dir: &Path) -> io::Result<Vec<T>> {
    let paths = record_files(&records_dir(run_dir), false)?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let parts: Vec<io::Result<Vec<T>>> = std::thread::scope(|s| {
        let readers: Vec<_> = (0..threads.min(paths.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(path) = paths.get(i) else {
                            return Ok(out);
                        };
                        read_records(path, &mut out)?;
                    }
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| {
                r.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a reader panicked")))
            })
            .collect()
    });
    let mut all = Vec::new();
    for part in parts {
        all.extend(part?);
    }
    Ok(all)
}

/// How many tasks the run in `run_dir` recorded (lines counted, none read).
pub fn count(run_dir: &Path) -> io::Result<usize> {
    let mut n = 0;
    for path in record_files(&records_dir(run_dir), false)? {
        n += count_lines(std::fs::File::open(path)?)?;
    }
    Ok(n)
}

/// The `.jsonl` files in `dir` (none if it is missing: no task ran), in
/// name order when `in_order`.
fn record_files(dir: &Path, in_order: bool) -> io::Result<Vec<PathBuf>> {
    let rd = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        rd => rd.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?,
    };
    let mut paths: Vec<PathBuf> = rd.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
    paths.retain(|p| p.extension().is_some_and(|x| x == "jsonl"));
    if in_order {
        paths.sort();
    }
    Ok(paths)
}

/// The records of the files in `dir`, file after file in name order when
/// `in_order` (generations), else in any order.
fn read_dir_records(dir: &Path, in_order: bool) -> io::Result<Vec<TaskRecord>> {
    let paths = record_files(dir, in_order)?;
    // Counted first: a vector grown as it goes would hold up to twice the
    // records' room (a record takes 432 bytes; runs have millions).
    let mut lines = paths.len();
    for path in &paths {
        lines += count_lines(std::fs::File::open(path)?)?;
    }
    let mut out = Vec::with_capacity(lines);
    for path in paths {
        read_records(&path, &mut out)?;
    }
    Ok(out)
}

/// Appends the records of file `path` to `out`.
fn read_records<T: DeserializeOwned>(path: &Path, out: &mut Vec<T>) -> io::Result<()> {
    let mut f = io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut line = String::new();
    for i in 1.. {
        line.clear();
        if f.read_line(&mut line)? == 0 {
            break;
        }
        match serde_json::from_str(line.trim_end_matches('\n')) {
            Ok(r) => out.push(r),
            // The last line of a rank still writing, cut where a flush
            // cut it: read with the rest later.
            Err(_) if !line.ends_with('\n') => break,
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{i}: {e}", path.display()),
                ))
            }
        }
    }
    Ok(())
}

fn count_lines(mut f: impl io::Read) -> io::Result<usize> {
    let mut buf = vec![0u8; 256 << 10];
    let mut n = 0;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(n),
            Ok(k) => n += buf[..k].iter().filter(|&&b| b == b'\n').count(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: u64) -> String {
        format!(
            r#"{{"id":{id},"func":"f","rank":0,"node":"","target":null,"placed":"Auto","start_us":{id},"end_us":9,"local_bytes":0,"remote_bytes":0,"exit":0,"attempts":1,"error":null}}"#
        )
    }

    #[test]
    fn records_are_read_while_a_rank_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(records_dir(dir.path())).unwrap();
        let file = records_dir(dir.path()).join("rank-0.jsonl");
        // Two whole records and the start of a third, cut by a flush.
        let cut = &line(3)[..40];
        std::fs::write(&file, format!("{}\n{}\n{cut}", line(1), line(2))).unwrap();
        let ids: Vec<u64> = load(dir.path()).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(ids, [1, 2]);
        // A reader's view of the fields it needs, the same way.
        #[derive(Deserialize)]
        struct Id {
            id: u64,
        }
        let mut ids: Vec<u64> = load_as::<Id>(dir.path())
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2]);
        // Its last record whole but not yet ended by its newline.
        std::fs::write(&file, format!("{}\n{}", line(1), line(2))).unwrap();
        assert_eq!(load(dir.path()).unwrap().len(), 2);
        // A bad line that is not the last is an error, naming it.
        std::fs::write(&file, format!("{cut}\n{}\n", line(2))).unwrap();
        let e = load(dir.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("rank-0.jsonl:1:"), "{e}");
    }
}
