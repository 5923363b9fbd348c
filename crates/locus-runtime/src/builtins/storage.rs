//! Builtins that need the run's layout or its file system, evaluated by the
//! engine: the storage-aware builtins of the seeds (`lookup`, `ip2rank`,
//! `get_rank`, `set_rank`), Swift/T's hostmap builtins, and the file
//! builtins (`read`, `write`, …) when their path is a Locus file.

use crate::builtins::json;
use crate::builtins::text_files;
use crate::builtins::{array, named, string, wildcard};
use crate::engine::value::{Location, Value};
use crate::exec::files::{fs_path, LOCUS_PREFIX};
use crate::ranks::layout::Layout;
use crate::records::record::Seen;
use locus_fs::Client;
use locus_lang::builtins::Run;
use locus_proto::fs::{Kind, NodeId};
use locus_proto::run::{Held, Rank, RunError, Stats};
use locus_proto::{Errno, FsError};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub struct Storage {
    pub layout: Arc<Layout>,
    /// This server's node's file-system client, and the file system's node
    /// names by id, when the run has one.
    pub fs: Option<(Client, Vec<String>)>,
    /// The files `mktemp` made, removed when the run ends (as Turbine
    /// removes them, unless `SWIFT_TMP_AUTODELETE=0`).
    temps: Mutex<Vec<PathBuf>>,
    /// A dry run: builtins write no file (`write` and the like take their
    /// output as made, as apps' are).
    dry_run: bool,
}

impl Storage {
    pub fn new(layout: Arc<Layout>, fs: Option<(Client, Vec<String>)>) -> Storage {
        Storage {
            layout,
            fs,
            temps: Mutex::default(),
            dry_run: false,
        }
    }

    /// The same, for a dry run when `dry`.
    pub(crate) fn dry_run(mut self, dry: bool) -> Storage {
        self.dry_run = dry;
        self
    }

    /// A new empty host file, as Turbine's `mktemp` makes it: in
    /// `$SWIFT_TMP`, else `$TMP`, else `/tmp`.
    fn mktemp(&self, name: &str) -> Result<String, RunError> {
        let dir = ["SWIFT_TMP", "TMP"]
            .iter()
            .find_map(std::env::var_os)
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        let file = tempfile::Builder::new()
            .prefix(".turbine")
            .tempfile_in(&dir)
            .and_then(|f| f.keep().map_err(|e| e.error))
            .map_err(|e| {
                RunError::fs(format!(
                    "{name}: making a temporary file in {}: {e}",
                    dir.display()
                ))
            })?;
        let path = file.1;
        self.temps.lock().expect("temps").push(path.clone());
        Ok(path.display().to_string())
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if std::env::var("SWIFT_TMP_AUTODELETE").is_ok_and(|v| v.trim() == "0") {
            return;
        }
        for f in self.temps.get_mut().expect("temps").drain(..) {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Argument `i` as text, or `default` where the call leaves it out.
fn text_or(a: &[Value], i: usize, name: &str, default: &str) -> Result<String, RunError> {
    match a.get(i) {
        Some(_) => text(a, i, name),
        None => Ok(default.to_string()),
    }
}

/// A file-system error naming its file as the script does (`/locus/a`,
/// not the file system's `/a`).
fn as_written(mut e: FsError) -> FsError {
    if e.subject.starts_with('/') {
        e.subject = format!("{LOCUS_PREFIX}{}", e.subject);
    }
    e
}

/// Argument `i` as text (a string or a file's path).
fn text(a: &[Value], i: usize, name: &str) -> Result<String, RunError> {
    let v = a
        .get(i)
        .ok_or_else(|| RunError::script(format!("{name}: missing argument {}", i + 1)))?;
    string(v)
        .map(str::to_string)
        .map_err(|e| RunError::script(format!("{name}: {e}")))
}

impl Storage {
    fn fs(&self, name: &str, path: &str) -> Result<&(Client, Vec<String>), RunError> {
        self.fs.as_ref().ok_or_else(|| {
            RunError::fs(format!("{name}({path}): this run has no Locus file system"))
        })
    }

    fn client(&self, name: &str, path: &str) -> Result<&Client, RunError> {
        self.fs(name, path).map(|(c, _)| c)
    }

    /// A Locus path's file-system path, or an error naming the builtin.
    fn locus<'p>(&self, name: &str, path: &'p str) -> Result<&'p str, RunError> {
        fs_path(path).ok_or_else(|| {
            RunError::script(format!(
                "{name}({path}): not a Locus file (paths start /locus/)"
            ))
        })
    }

    /// The first worker on the node called `host`.
    fn worker_on(&self, name: &str, host: &str) -> Result<Rank, RunError> {
        self.layout
            .node_index(host)
            .and_then(|n| self.layout.workers_on(n).next())
            .ok_or_else(|| {
                RunError::script(format!(
                    "{name}({host}): no worker runs on {host} (nodes: {})",
                    self.layout.nodes.join(", ")
                ))
            })
    }

    /// The name of the node holding a Locus file's data.
    async fn holder(&self, name: &str, path: &str) -> Result<String, RunError> {
        let fp = self.locus(name, path)?;
        let (client, names) = self.fs(name, path)?;
        let holders = client
            .locate(fp)
            .await
            .map_err(|e| RunError::fs(format!("{name}({path}): {}", as_written(e))))?;
        let first = holders
            .first()
            .ok_or_else(|| RunError::fs(format!("{name}({path}): the file has no data yet")))?;
        Ok(names[*first as usize].clone())
    }

    /// The file-system node of the layout node called `host`.
    pub fn fs_node(&self, host: &str) -> Option<NodeId> {
        let (_, names) = self.fs.as_ref()?;
        names.iter().position(|n| n == host).map(|i| i as NodeId)
    }

    /// Evaluates a builtin that reads the run; `dst` is where `write`
    /// writes (its output file's path).
    pub async fn call(
        &self,
        op: Run,
        a: &[Value],
        dst: Option<&str>,
    ) -> Result<Option<Value>, RunError> {
        let name = op.name();
        Ok(Some(match op {
            Run::Lookup => {
                let path = text(a, 0, name)?;
                Value::Str(self.holder(name, &path).await?)
            }
            Run::Ip2rank => Value::Location(Location {
                rank: i64::from(self.worker_on(name, &text(a, 0, name)?)?),
                hard: true,
                node: true,
            }),
            Run::GetRank => self.get_rank(a).await?,
            Run::SetRank => {
                self.set_rank(a).await?;
                return Ok(None);
            }
            // A host's ranks that run tasks are its workers.
            Run::HostmapOneWorkerRank | Run::HostmapOneRank => {
                Value::Int(i64::from(self.worker_on(name, &text(a, 0, name)?)?))
            }
            Run::HostmapOneWorker | Run::HostmapOne => Value::Location(Location {
                rank: i64::from(self.worker_on(name, &text(a, 0, name)?)?),
                hard: true,
                node: false,
            }),
            Run::TurbineWorkers => Value::Int(i64::from(self.layout.workers())),
            // Every server runs an engine here.
            Run::AdlbServers => Value::Int(i64::from(self.layout.servers)),
            Run::HostmapList => array(
                (0..self.layout.nodes.len() as u32)
                    .filter(|n| self.layout.workers_on(*n).next().is_some())
                    .map(|n| Value::Str(self.layout.nodes[n as usize].clone())),
            ),
            Run::RandomWorker => Value::Location(Location {
                rank: self.random_worker(),
                hard: true,
                node: false,
            }),
            Run::RandomWorkerRank => Value::Int(self.random_worker()),
            Run::Write => {
                let path =
                    dst.ok_or_else(|| RunError::internal("write: its output has no path"))?;
                let data = a.first().map(Value::render).unwrap_or_default();
                self.write_file(path, &data).await?;
                Value::File(path.to_string())
            }
            Run::Read => Value::Str(self.read_text(name, a).await?),
            Run::BlobRead => Value::Blob(self.read(name, a).await?),
            Run::FileLines => {
                let comment = text_or(a, 1, name, "#")?;
                let text = self.read_text(name, a).await?;
                Value::Container(text_files::lines(&text, &comment).map_err(|e| named(name, e))?)
            }
            Run::FileChunks => {
                let delimiter = text_or(a, 1, name, "----")?;
                let comment = text_or(a, 2, name, "#")?;
                let text = self.read_text(name, a).await?;
                let chunks =
                    text_files::chunks(&text, &delimiter, &comment).map_err(|e| named(name, e))?;
                array(chunks.into_iter().map(Value::Str))
            }
            Run::MktempString => Value::Str(self.mktemp(name)?),
            Run::Mktemp => Value::File(self.mktemp(name)?),
            Run::WriteArrayString | Run::WriteArrayStringOrdered => {
                let path = dst
                    .ok_or_else(|| RunError::internal(format!("{name}: its output has no path")))?;
                let members = match a.first() {
                    Some(Value::Container(m)) => m,
                    _ => {
                        return Err(RunError::script(format!(
                            "{name}: its first argument is not an array"
                        )))
                    }
                };
                let data = match op {
                    Run::WriteArrayString => text_files::key_value_lines(members),
                    _ => text_files::ordered_lines(members).map_err(|e| named(name, e))?,
                };
                self.write_file(path, &data).await?;
                Value::File(path.to_string())
            }
            Run::FileExists => {
                let path = text(a, 0, name)?;
                Value::Bool(match fs_path(&path) {
                    Some(fp) => self.client(name, &path)?.stat(fp).await.is_ok(),
                    None => on_host(move || std::path::Path::new(&path).exists()).await?,
                })
            }
            Run::FileSize | Run::FileType | Run::FileTypeString | Run::FileMtime => {
                let path = text(a, 0, name)?;
                let (size, mtime, kind) = self.stat(name, &path).await?;
                match op {
                    Run::FileSize => Value::Int(size as i64),
                    Run::FileMtime => Value::Int(mtime),
                    _ => Value::Str(kind.into()),
                }
            }
            Run::Glob => {
                let pattern = text(a, 0, name)?;
                array(self.glob(&pattern).await?.into_iter().map(Value::File))
            }
            Run::JsonListLength | Run::JsonDictEntries => {
                let doc = self.read_text(name, a).await?;
                let path = text(a, 1, name)?;
                Value::Str(match op {
                    Run::JsonListLength => json::list_length(&doc, &path),
                    _ => json::dict_entries(&doc, &path),
                }?)
            }
        }))
    }

    /// A worker's rank, drawn at random.
    fn random_worker(&self) -> i64 {
        i64::from(rand::random::<u32>()) % i64::from(self.layout.workers())
    }

    /// The bytes of the file named by argument 0: a Locus or a host file.
    async fn read(&self, name: &str, a: &[Value]) -> Result<Vec<u8>, RunError> {
        let path = text(a, 0, name)?;
        let bytes = match fs_path(&path) {
            Some(fp) => self
                .client(name, &path)?
                .get(fp)
                .await
                .map_err(|e| RunError::fs(format!("{name}({path}): {}", as_written(e))))?,
            None => {
                let read = on_host({
                    let path = path.clone();
                    move || std::fs::read(path)
                });
                read.await?
                    .map_err(|e| RunError::fs(format!("{name}({path}): {e}")))?
            }
        };
        Ok(bytes)
    }

    /// `read`, as text.
    async fn read_text(&self, name: &str, a: &[Value]) -> Result<String, RunError> {
        Ok(String::from_utf8_lossy(&self.read(name, a).await?).into_owned())
    }

    /// A file's size, mtime (seconds) and type, in Tcl's words (`file`,
    /// `directory`, `link`, …, as Swift/T's `file_type` gives them).
    async fn stat(&self, name: &str, path: &str) -> Result<(u64, i64, &'static str), RunError> {
        let err = |e: &dyn std::fmt::Display| RunError::fs(format!("{name}({path}): {e}"));
        if let Some(fp) = fs_path(path) {
            let rec = self
                .client(name, path)?
                .stat(fp)
                .await
                .map_err(|e| err(&as_written(e)))?;
            let kind = if rec.kind == Kind::Dir {
                "directory"
            } else {
                "file"
            };
            return Ok((rec.size, (rec.mtime_ns / 1_000_000_000) as i64, kind));
        }
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let host = path.to_string();
        let (m, followed) = on_host(move || {
            let m = std::fs::symlink_metadata(&host)?;
            // Size and mtime follow a link, as Tcl's `file size`/`file mtime`.
            let followed = match m.file_type().is_symlink() {
                true => Some(std::fs::metadata(&host)?),
                false => None,
            };
            Ok::<_, std::io::Error>((m, followed))
        })
        .await?
        .map_err(|e| err(&e))?;
        let t = m.file_type();
        let kinds = [
            (t.is_file(), "file"),
            (t.is_dir(), "directory"),
            (t.is_symlink(), "link"),
            (t.is_fifo(), "fifo"),
            (t.is_socket(), "socket"),
            (t.is_char_device(), "characterSpecial"),
            (t.is_block_device(), "blockSpecial"),
        ];
        let kind = kinds.iter().find(|k| k.0).map_or("file", |k| k.1);
        let m = followed.unwrap_or(m);
        Ok((m.len(), m.mtime(), kind))
    }

    /// Files matching a pattern with `*` and `?` in its last component,
    /// sorted: Locus files by their Locus paths, host files by theirs.
    async fn glob(&self, pattern: &str) -> Result<Vec<String>, RunError> {
        let (dir, last) = match pattern.rsplit_once('/') {
            Some((d, l)) => (Some(if d.is_empty() { "/" } else { d }), l),
            None => (None, pattern),
        };
        let join = |name: &str| match dir {
            Some("/") => format!("/{name}"),
            Some(d) => format!("{d}/{name}"),
            None => name.to_string(),
        };
        let mut out: Vec<String> = match fs_path(pattern) {
            Some(fp) => {
                let fs_dir = match fp.rsplit_once('/') {
                    Some(("", _)) | None => "/",
                    Some((d, _)) => d,
                };
                // As Tcl's `glob -nocomplain`: no directory, no match.
                let entries = match self.client("glob", pattern)?.readdir(fs_dir).await {
                    Err(e) if matches!(e.code, Errno::ENOENT | Errno::ENOTDIR) => Vec::new(),
                    listed => listed
                        .map_err(|e| RunError::fs(format!("glob({pattern}): {}", as_written(e))))?,
                };
                entries
                    .into_iter()
                    .filter(|e| {
                        e.kind == Kind::File && wildcard(last.as_bytes(), e.name.as_bytes())
                    })
                    .map(|e| join(&e.name))
                    .collect()
            }
            None => {
                let dir = dir.unwrap_or(".").to_string();
                let names = on_host(move || match std::fs::read_dir(dir) {
                    Ok(rd) => rd
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect(),
                    Err(_) => Vec::new(),
                });
                (names.await?.into_iter())
                    .filter(|n| wildcard(last.as_bytes(), n.as_bytes()))
                    .map(|n| join(&n))
                    .collect()
            }
        };
        out.sort();
        Ok(out)
    }

    /// The first worker on the node holding a file, or for a file not
    /// written yet, on the node `set_rank` chose (kept by the file system,
    /// so every server sees it).
    async fn get_rank(&self, a: &[Value]) -> Result<Value, RunError> {
        let path = text(a, 0, "get_rank")?;
        let host = match self.holder("get_rank", &path).await {
            Ok(host) => host,
            Err(e) => {
                let (client, names) = self.fs("get_rank", &path)?;
                match client.hint(self.locus("get_rank", &path)?).await {
                    Ok(Some(node)) => names[node as usize].clone(),
                    _ => return Err(e),
                }
            }
        };
        Ok(Value::Int(i64::from(self.worker_on("get_rank", &host)?)))
    }

    /// `set_rank(path, rank)`: new data of `path` goes to `rank`'s node.
    async fn set_rank(&self, a: &[Value]) -> Result<(), RunError> {
        let path = text(a, 0, "set_rank")?;
        let Some(Value::Int(rank)) = a.get(1) else {
            return Err(RunError::script("set_rank: the rank must be an int"));
        };
        let rank = self
            .layout
            .check_target(*rank)
            .map_err(|e| RunError::script(format!("set_rank({path}, {rank}): {e}")))?;
        let fp = self.locus("set_rank", &path)?;
        let host = self.layout.node_name(rank);
        let node = self.fs_node(host).ok_or_else(|| {
            RunError::fs(format!(
                "set_rank({path}, {rank}): {host} has no file-system daemon"
            ))
        })?;
        let client = self.client("set_rank", &path)?;
        client
            .place(fp, node)
            .await
            .map_err(|e| RunError::fs(format!("set_rank({path}, {rank}): {e}")))?;
        Ok(())
    }

    /// `write(s)` into the file at `path`: a Locus file through the file
    /// system, a host file directly.
    async fn write_file(&self, path: &str, data: &str) -> Result<(), RunError> {
        if self.dry_run {
            return Ok(());
        }
        let fail = |e: &dyn std::fmt::Display| RunError::fs(format!("write({path}): {e}"));
        match fs_path(path) {
            Some(fp) => {
                self.client("write", path)?
                    .put(fp, data.as_bytes())
                    .await
                    .map_err(|e| fail(&as_written(e)))?;
            }
            None => {
                let (host, data) = (std::path::PathBuf::from(path), data.to_string());
                let written = on_host(move || {
                    if let Some(dir) = host.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    std::fs::write(host, data)
                });
                written.await?.map_err(|e| fail(&e))?;
            }
        }
        Ok(())
    }

    /// The client and file-system path of a Locus file, if the run has a
    /// file system.
    fn on_fs<'p>(&self, path: &'p str) -> Option<(&Client, &'p str)> {
        Some((&self.fs.as_ref()?.0, fs_path(path)?))
    }

    /// A Locus or host file as it is now, if it exists.
    pub async fn seen(&self, path: &str) -> Option<Seen> {
        if fs_path(path).is_none() {
            return Seen::host(path);
        }
        let (client, fp) = self.on_fs(path)?;
        let rec = client.stat(fp).await.ok()?;
        Some(Seen::locus(path, rec.stamp))
    }

    /// The hash of the bytes of `path` now: a Locus file's from its record
    /// (made where it was written), else read (a Locus file written
    /// without one is made local to this node first); `None` if it cannot
    /// be read.
    pub async fn content_hash(&self, path: &str) -> Option<String> {
        let local = match fs_path(path) {
            None => std::path::PathBuf::from(path),
            Some(_) => {
                let (client, fp) = self.on_fs(path)?;
                let rec = client.stat(fp).await.ok()?;
                if let Some(sum) = rec.sum {
                    return Some(locus_fs::sums::hex(&sum));
                }
                client.local_copy_from(fp, Some(&rec)).await.ok()?.path
            }
        };
        crate::records::record::hash_of(local).await
    }

    /// Whether Locus file `path` is lost with a node (`Client::lost`); a
    /// host file never is.
    pub async fn lost(&self, path: &str) -> Result<bool, RunError> {
        match self.on_fs(path) {
            Some((client, fp)) => client
                .lost(fp)
                .await
                .map_err(|e| RunError::fs(e.to_string())),
            None => Ok(false),
        }
    }

    /// Names Locus file `path` again from `rec` if only its name was lost
    /// (`Client::reinstate`).
    pub async fn reinstate(
        &self,
        path: &str,
        rec: &locus_proto::fs::Record,
    ) -> Result<bool, RunError> {
        match self.on_fs(path) {
            Some((client, fp)) => {
                (client.reinstate(fp, rec).await).map_err(|e| RunError::fs(e.to_string()))
            }
            None => Ok(false),
        }
    }

    /// The records of the Locus files among `paths`, stat'ed concurrently
    /// (host files and files that cannot be stat'ed are left out).
    pub async fn stat_all(&self, paths: &[&str]) -> Stats {
        let at_ns = locus_fs::now_ns();
        let Some((client, _)) = &self.fs else {
            return no_records();
        };
        let mut stats = tokio::task::JoinSet::new();
        for p in paths {
            if let Some(fp) = fs_path(p) {
                let (client, fp) = (client.clone(), fp.to_string());
                stats.spawn(async move { client.stat(&fp).await.map(|rec| (fp, rec)) });
            }
        }
        let mut records = Vec::new();
        while let Some(stat) = stats.join_next().await {
            if let Ok(Ok(found)) = stat {
                records.push(found);
            }
        }
        Stats { at_ns, records }
    }

    /// Where the files of `stats` are, as the run's node indices; files no
    /// node of the run holds are left out.
    pub fn held(&self, stats: &Stats) -> Vec<Held> {
        let Some((_, names)) = &self.fs else {
            return Vec::new();
        };
        stats
            .records
            .iter()
            .filter_map(|(_, rec)| {
                let nodes: Vec<u32> = rec
                    .holders
                    .iter()
                    .filter_map(|h| self.layout.node_index(names.get(*h as usize)?))
                    .collect();
                (!nodes.is_empty()).then_some(Held {
                    bytes: rec.size,
                    nodes,
                })
            })
            .collect()
    }
}

/// The records of no file, taken now.
pub(crate) fn no_records() -> Stats {
    Stats {
        at_ns: locus_fs::now_ns(),
        records: Vec::new(),
    }
}

/// Runs host-file work `f` off the engine's thread: a slow or hung host
/// file system (an NFS server, a FIFO with no writer yet) holds this call
/// only, not the server's other work and its heartbeats.
async fn on_host<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, RunError> {
    (tokio::task::spawn_blocking(f).await)
        .map_err(|e| RunError::internal(format!("a host file operation failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use locus_proto::run::ErrorKind;

    /// What a builtin is given wrong is the script's error; what it finds
    /// wrong on disk is the file system's.
    #[tokio::test]
    async fn a_builtins_error_says_whose_it_is() {
        let names: Vec<String> = ["n0", "n0", "n0"].map(String::from).to_vec();
        let storage = Storage::new(Arc::new(Layout::from_names(1, &names).unwrap()), None);
        let kind = |r: Result<Option<Value>, RunError>| r.unwrap_err().kind;
        let missing = [Value::Str("/nonexistent/locus-test-file".into())];
        let size = storage.call(Run::FileSize, &missing, None);
        assert_eq!(kind(size.await), ErrorKind::Fs);
        let read = storage.call(Run::Read, &missing, None);
        assert_eq!(kind(read.await), ErrorKind::Fs);
        let no_rank = [Value::Str("/locus/x".into()), Value::Str("one".into())];
        assert_eq!(
            kind(storage.call(Run::SetRank, &no_rank, None).await),
            ErrorKind::Script
        );
        let server = [Value::Str("/locus/x".into()), Value::Int(2)];
        let e = storage.call(Run::SetRank, &server, None).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Script);
        assert!(e.message.contains("rank 2 is a server"), "{e}");
        let host = [Value::Str("elsewhere".into())];
        assert_eq!(
            kind(storage.call(Run::Ip2rank, &host, None).await),
            ErrorKind::Script
        );
        let lines = [Value::Str("/dev/null".into()), Value::Str("(".into())];
        assert_eq!(
            kind(storage.call(Run::FileLines, &lines, None).await),
            ErrorKind::Script
        );
        // A Locus path in a run with no Locus file system.
        let locus = [Value::Str("/locus/x".into())];
        assert_eq!(
            kind(storage.call(Run::FileSize, &locus, None).await),
            ErrorKind::Fs
        );
    }
}
