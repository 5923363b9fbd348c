//! The file-system client: every call releases the GIL while it waits on
//! the network or the disk.

use crate::{os_error, runtime};
use locus_fs::{ClientOptions, Via};
use locus_proto::fs::{Kind, NodeId, Record};
use locus_proto::{Errno, FsError, FsResult};
use locus_runtime::namespace_path;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::future::Future;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A client of one cluster, acting on one node.
#[pyclass(frozen, module = "locus._locus")]
pub(crate) struct Client {
    pub(crate) inner: locus_fs::Client,
    dir: PathBuf,
    /// Where a client on a host of no node stages bytes; removed with it.
    scratch: PathBuf,
}

/// `locus.connect`: the cluster in `dir` (default `$LOCUS_DIR`, else the
/// user's default cluster), as this host's node unless `node` is given.
#[pyfunction]
#[pyo3(signature = (dir=None, node=None))]
pub(crate) fn connect(
    py: Python<'_>,
    dir: Option<PathBuf>,
    node: Option<NodeId>,
) -> PyResult<Client> {
    static CLIENTS: AtomicU64 = AtomicU64::new(0);
    let dir = dir.unwrap_or_else(locus_fs::default_dir);
    let scratch = std::env::temp_dir().join(format!(
        "locus-client-{}-{}",
        std::process::id(),
        CLIENTS.fetch_add(1, Ordering::Relaxed)
    ));
    let rt = runtime()?;
    let inner = py
        .detach(|| {
            let _in = rt.enter();
            locus_fs::Client::on_this_host(&dir, node, scratch.clone(), ClientOptions::default())
        })
        .map_err(os_error)?;
    Ok(Client {
        inner,
        dir,
        scratch,
    })
}

/// The cluster `connect` uses when none is named: `$LOCUS_DIR`, else the
/// user's default.
#[pyfunction]
pub(crate) fn default_dir() -> PathBuf {
    locus_fs::default_dir()
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Runs `f` on the runtime with the GIL released.
pub(crate) fn block<T: Send>(
    py: Python<'_>,
    f: impl Future<Output = FsResult<T>> + Send,
) -> PyResult<T> {
    let rt = runtime()?;
    py.detach(|| rt.block_on(f)).map_err(os_error)
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::File => "file",
        Kind::Dir => "directory",
    }
}

/// `path` in the file system's namespace, its last `/` dropped.
fn full(path: &str) -> String {
    let p = namespace_path(path);
    match p.strip_suffix('/') {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => p.to_string(),
    }
}

impl Client {
    /// What `stat` says of `path`, with fsspec's keys (`name`, `size`, `type`).
    fn info<'py>(&self, py: Python<'py>, path: &str, r: &Record) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", path)?;
        d.set_item("type", kind_name(r.kind))?;
        d.set_item("size", r.size)?;
        d.set_item("mode", r.mode)?;
        d.set_item("mtime", r.mtime_ns as f64 / 1e9)?;
        d.set_item("version", r.version)?;
        d.set_item("holders", r.holders.clone())?;
        d.set_item("copies", self.inner.copies(r))?;
        d.set_item("locked", r.lock.is_some())?;
        Ok(d)
    }

    fn via(&self, host: &std::path::Path) -> PyResult<Via> {
        let spec = locus_fs::ClusterSpec::load(&self.dir)?;
        Ok(Via::for_path(&spec, &self.dir, host))
    }
}

#[pymethods]
impl Client {
    /// The node this client acts on.
    #[getter]
    fn node(&self) -> NodeId {
        self.inner.node()
    }

    /// The cluster's directory.
    #[getter]
    fn dir(&self) -> PathBuf {
        self.dir.clone()
    }

    /// Whether this client has no store of its own (all bytes cross the
    /// network).
    #[getter]
    fn diskless(&self) -> bool {
        self.inner.is_diskless()
    }

    fn stat<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
        let p = full(path);
        let r = block(py, self.inner.stat(&p))?;
        self.info(py, &p, &r)
    }

    /// The entries of directory `path` (full paths), or the file itself;
    /// with `detail`, each one's `stat`.
    #[pyo3(signature = (path, detail=false))]
    fn ls<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        detail: bool,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let p = full(path);
        let c = &self.inner;
        let rec = block(py, c.stat(&p))?;
        let mut found = Vec::new();
        if rec.kind == Kind::File {
            found.push((p, rec));
        } else {
            let entries = block(py, c.readdir(&p))?;
            let named: Vec<String> = entries
                .iter()
                .map(|e| locus_fs::path::join(&p, &e.name))
                .collect();
            if !detail {
                return Ok(named
                    .iter()
                    .map(|n| PyString::new(py, n).into_any())
                    .collect());
            }
            for name in named {
                // One gone since the listing is left out, as `ls -l` does.
                match block(py, c.stat(&name)) {
                    Ok(r) => found.push((name, r)),
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyFileNotFoundError>(py) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        found
            .iter()
            .map(|(name, r)| match detail {
                true => self.info(py, name, r).map(Bound::into_any),
                false => Ok(PyString::new(py, name).into_any()),
            })
            .collect()
    }

    #[pyo3(signature = (path, parents=false))]
    fn mkdir(&self, py: Python<'_>, path: &str, parents: bool) -> PyResult<()> {
        let p = full(path);
        match parents {
            true => block(py, self.inner.mkdir_all(&p)),
            false => block(py, self.inner.mkdir(&p)),
        }
    }

    /// Removes file `path`; a directory only if `recursive` (with all it
    /// holds).
    #[pyo3(signature = (path, recursive=false))]
    fn rm(&self, py: Python<'_>, path: &str, recursive: bool) -> PyResult<()> {
        let p = full(path);
        match recursive {
            true => block(py, self.inner.remove_all(&p)),
            false => block(py, self.inner.unlink(&p)),
        }
    }

    /// Removes empty directory `path`.
    fn rmdir(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        block(py, self.inner.rmdir(&full(path)))
    }

    /// Renames `src` to `dst` (replacing a file there).
    fn mv(&self, py: Python<'_>, src: &str, dst: &str) -> PyResult<()> {
        block(py, self.inner.rename(&full(src), &full(dst)))
    }

    /// The nodes holding file `path`'s data.
    fn locate(&self, py: Python<'_>, path: &str) -> PyResult<Vec<NodeId>> {
        block(py, self.inner.locate(&full(path)))
    }

    /// Has file `path`, not made yet, stored on `node` whoever writes it.
    fn place(&self, py: Python<'_>, path: &str, node: NodeId) -> PyResult<()> {
        block(py, self.inner.place(&full(path), node))
    }

    /// Each node's name, files, bytes stored and free; `up` false (and
    /// `error` why) for a node whose daemon does not answer.
    fn df<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for id in 0..self.inner.node_count() as NodeId {
            let d = PyDict::new(py);
            d.set_item("node", id)?;
            d.set_item("name", &self.inner.endpoint(id).map_err(os_error)?.name)?;
            match block(py, self.inner.status(id)) {
                Ok(s) => {
                    d.set_item("up", true)?;
                    d.set_item("files", s.stored_files)?;
                    d.set_item("stored", s.stored_bytes)?;
                    d.set_item("free", s.free_bytes)?;
                }
                Err(e) => {
                    d.set_item("up", false)?;
                    d.set_item("error", e.value(py).str()?)?;
                }
            }
            out.push(d);
        }
        Ok(out)
    }

    /// Copies host file (or tree, with `recursive`) `local` in as `path`;
    /// returns (files, bytes).
    #[pyo3(signature = (local, path, recursive=false))]
    fn put(
        &self,
        py: Python<'_>,
        local: PathBuf,
        path: &str,
        recursive: bool,
    ) -> PyResult<(u64, u64)> {
        if local.is_dir() && !recursive {
            return Err(os_error(
                FsError::new(Errno::EISDIR, local.display().to_string())
                    .with_detail("put(recursive=True) copies trees"),
            ));
        }
        let via = match recursive {
            true => self.via(&local)?,
            false => Via::Client,
        };
        let c = &self.inner;
        let p = full(path);
        block(py, async {
            let moved = locus_fs::put_tree(c, &local, &p, via).await?;
            c.settled().await;
            Ok((moved.files, moved.bytes))
        })
    }

    /// Copies file (or tree, with `recursive`) `path` out to host path
    /// `local`; returns (files, bytes).
    #[pyo3(signature = (path, local, recursive=false))]
    fn get(
        &self,
        py: Python<'_>,
        path: &str,
        local: PathBuf,
        recursive: bool,
    ) -> PyResult<(u64, u64)> {
        let c = &self.inner;
        let p = full(path);
        let via = match recursive {
            true => self.via(&local)?,
            false => Via::Client,
        };
        block(py, async {
            if !recursive && c.stat(&p).await?.kind == Kind::Dir {
                return Err(FsError::new(Errno::EISDIR, p.clone())
                    .with_detail("get(recursive=True) copies trees"));
            }
            let moved = locus_fs::get_tree(c, &p, &local, via).await?;
            Ok((moved.files, moved.bytes))
        })
    }

    /// Bytes `start` to `end` (exclusive; `None`: to the end) of file `path`.
    #[pyo3(signature = (path, start=0, end=None))]
    fn cat(&self, py: Python<'_>, path: &str, start: u64, end: Option<u64>) -> PyResult<Vec<u8>> {
        let length = end.map_or(u64::MAX, |e| e.saturating_sub(start));
        block(py, self.inner.read_range(&full(path), start, length))
    }

    /// A descriptor of file `path`'s current version opened for reading
    /// (fetched to this node first if none is here); the caller owns it.
    fn read_fd(&self, py: Python<'_>, path: &str) -> PyResult<i32> {
        let f = block(py, self.inner.open_read(&full(path)))?;
        Ok(f.into_raw_fd())
    }

    /// A writer of `path`, as `open` mode `how` says: `w` from empty
    /// (created if missing), `a` from its current end (created if
    /// missing), `x` a new file (`FileExistsError` if it exists). Nothing
    /// is seen by others until it is closed.
    fn open_writer(&self, py: Python<'_>, path: &str, how: &str) -> PyResult<Writer> {
        let c = &self.inner;
        let p = full(path);
        let w = block(py, async {
            match how {
                "w" => c.create_or_truncate(&p).await,
                "x" => c.create(&p).await,
                _ => match c.open_write(&p, false).await {
                    Err(e) if e.code == Errno::ENOENT => c.create(&p).await,
                    other => other,
                },
            }
        })?;
        Ok(Writer(Mutex::new(Some(w))))
    }
}

/// A file being written: bytes go to its descriptor (`fileno`), and
/// `close` publishes them as the file's new version.
#[pyclass(frozen, module = "locus._locus")]
pub(crate) struct Writer(Mutex<Option<locus_fs::Writer>>);

impl Writer {
    fn take(&self) -> Option<locus_fs::Writer> {
        self.0.lock().ok().and_then(|mut w| w.take())
    }
}

impl Drop for Writer {
    /// One dropped unclosed (its Python object gone without `close`):
    /// what was written is dropped and its lock released now, not when
    /// its lease ends.
    fn drop(&mut self) {
        if let (Some(w), Ok(rt)) = (self.take(), runtime()) {
            rt.spawn(w.abort());
        }
    }
}

#[pymethods]
impl Writer {
    /// The descriptor of the private file being written (owned by the writer).
    fn fileno(&self) -> PyResult<i32> {
        let mut w = self
            .0
            .lock()
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("writer poisoned"))?;
        match w.as_mut() {
            Some(w) => Ok(w.file().as_raw_fd()),
            None => Err(pyo3::exceptions::PyValueError::new_err(
                "I/O operation on closed file",
            )),
        }
    }

    /// Publishes what was written; an error means the file kept its
    /// earlier version (or, if new, was not made).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        match self.take() {
            Some(w) => block(py, w.close()).map(drop),
            None => Ok(()),
        }
    }

    /// Drops what was written: the file keeps its earlier version.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(w) = self.take() {
            let rt = runtime()?;
            py.detach(|| rt.block_on(w.abort()));
        }
        Ok(())
    }
}
