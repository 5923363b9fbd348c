//! Reads the records the workers append (`RUN_DIR/records/rank-R.jsonl`)
//! as they grow: each whole line once, a line still being written left for
//! the next read, a bounded amount at a time.

use crate::ended::Ended;
use locus_runtime::record::records_dir;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bytes read from one file at a time: a watcher of a run already far along
/// catches up in steps of this, never holding its records whole.
const CHUNK: usize = 1 << 20;

#[derive(Debug)]
pub(crate) struct Tail {
    dir: PathBuf,
    /// How far each rank's file has been read, and which file it was (a
    /// resumed or fresh run in the directory starts new ones).
    read: BTreeMap<PathBuf, (u64, u64)>,
    buf: Vec<u8>,
}

impl Tail {
    pub(crate) fn new(run_dir: &Path) -> Tail {
        Tail {
            dir: records_dir(run_dir),
            read: BTreeMap::new(),
            buf: Vec::new(),
        }
    }

    /// Hands `each` the records written since the last call, at most about
    /// `CHUNK` bytes of them per file; whether some are left.
    pub(crate) fn next(&mut self, mut each: impl FnMut(Ended<'_>)) -> bool {
        let mut more = false;
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let path = e.path();
                if path.extension().is_some_and(|x| x == "jsonl") {
                    self.read.entry(path).or_insert((0, 0));
                }
            }
        }
        for (path, (ino, at)) in &mut self.read {
            let Ok(mut file) = std::fs::File::open(path) else {
                continue;
            };
            let Ok(meta) = file.metadata() else { continue };
            if meta.ino() != *ino || meta.len() < *at {
                (*ino, *at) = (meta.ino(), 0);
            }
            if file.seek(SeekFrom::Start(*at)).is_err() {
                continue;
            }
            self.buf.clear();
            let Ok(n) = (&mut file).take(CHUNK as u64).read_to_end(&mut self.buf) else {
                continue;
            };
            // Only whole lines: the last may still be being written.
            let Some(end) = self.buf.iter().rposition(|b| *b == b'\n') else {
                more |= n == CHUNK;
                continue;
            };
            for line in self.buf[..end].split(|b| *b == b'\n') {
                match serde_json::from_slice(line) {
                    Ok(r) => each(r),
                    Err(e) => tracing::debug!("{}: {e}", path.display()),
                }
            }
            *at += end as u64 + 1;
            more |= n == CHUNK;
        }
        more
    }
}

/// The end of a task's kept stderr (`RUN_DIR/tasks/<id>.err`).
pub(crate) fn stderr_tail(run_dir: &Path, r: &Ended<'_>) -> Option<String> {
    let mut file = std::fs::File::open(run_dir.join(r.stderr.as_ref()?)).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(
        len.saturating_sub(crate::live::STDERR_TAIL),
    ))
    .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_runtime::record::TaskRecord;
    use std::io::Write;

    #[test]
    fn each_whole_line_is_read_once_and_a_cut_one_later() {
        let run = tempfile::tempdir().unwrap();
        let mut tail = Tail::new(run.path());
        let mut ids = || {
            let mut read = Vec::new();
            assert!(!tail.next(|r| read.push(r.id)));
            read
        };
        assert!(ids().is_empty());
        std::fs::create_dir(records_dir(run.path())).unwrap();
        let line = |id: u64| {
            let mut r: TaskRecord = serde_json::from_str(RECORD).unwrap();
            r.id = id;
            serde_json::to_string(&r).unwrap() + "\n"
        };
        let path = records_dir(run.path()).join("rank-0.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        let (one, two) = (line(1), line(2));
        f.write_all(one.as_bytes()).unwrap();
        f.write_all(&two.as_bytes()[..10]).unwrap();
        assert_eq!(ids(), [1]);
        f.write_all(&two.as_bytes()[10..]).unwrap();
        assert_eq!(ids(), [2]);
        assert!(ids().is_empty());
        // A later run in the directory writes the rank's file anew.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, line(3)).unwrap();
        assert_eq!(ids(), [3]);
    }

    const RECORD: &str = r#"{"id":0,"func":"f","rank":0,"node":"n","target":null,"placed":"Anywhere","start_us":0,"end_us":1,"local_bytes":0,"remote_bytes":0,"exit":null,"attempts":1,"error":null}"#;
}
