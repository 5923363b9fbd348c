//! Scripts and runs: checking a script, starting a run through the launch
//! layer (as `locus run` does, typed configuration to every process), and
//! what a run leaves in its directory (records, summary, report).

use locus_launch::{launch_ranks, LocusBinary, On, RankLaunch};
use locus_proto::run::{Placed, Spill, Target};
use locus_runtime::report::Report;
use locus_runtime::{MountMode, RankOptions, ResumeBy, RunSummary};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One diagnostic: file, line, column (1-based), message.
type Diagnostic = (String, usize, usize, String);

/// The script's errors (none: it compiles), as `locus check` finds them.
#[pyfunction]
#[pyo3(signature = (script, include=Vec::new()))]
pub(crate) fn check(
    py: Python<'_>,
    script: PathBuf,
    include: Vec<PathBuf>,
) -> PyResult<Vec<Diagnostic>> {
    let src = locus_lang::Source::read(&script, include)?;
    let diags = py.detach(|| locus_lang::compile(&src).err().unwrap_or_default());
    Ok(diags
        .iter()
        .map(|d| {
            let p = src.position(d.span.start);
            (p.file, p.line, p.col, d.message.clone())
        })
        .collect())
}

/// A run started by `start_run`, ending in a thread of this process.
#[pyclass(frozen, module = "locus._locus")]
pub(crate) struct RunHandle {
    #[pyo3(get)]
    run_dir: PathBuf,
    /// Why workers will not mount `/locus` although asked to where they
    /// can (said once by the caller), if so.
    #[pyo3(get)]
    note: Option<String>,
    stop: Arc<AtomicBool>,
    launch: Mutex<Option<JoinHandle<Result<i32, String>>>>,
    /// The launch's outcome once it ended: the run's exit code, or why
    /// it could not run.
    ended: Mutex<Option<Result<i32, String>>>,
}

/// What `locus.run` asks for.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct RunRequest {
    locus: PathBuf,
    script: PathBuf,
    args: Vec<String>,
    include: Vec<PathBuf>,
    workers: Option<u32>,
    nodes: u32,
    servers: u32,
    run_dir: Option<PathBuf>,
    fs: Option<PathBuf>,
    resume: Option<String>,
    fresh: bool,
    keep_going: bool,
    retries: u32,
    mount: bool,
    log: Option<PathBuf>,
}

/// Starts a run as `locus run` does; it goes on in a thread of this
/// process until `RunHandle.wait` sees it end.
#[pyfunction]
pub(crate) fn start_run(py: Python<'_>, req: RunRequest) -> PyResult<RunHandle> {
    let resume = req
        .resume
        .as_deref()
        .map(str::parse::<ResumeBy>)
        .transpose()
        .map_err(PyValueError::new_err)?;
    if resume.is_some() && req.run_dir.is_none() {
        return Err(PyValueError::new_err(
            "resume needs the run_dir of the run to resume",
        ));
    }
    let run_dir = match req.run_dir {
        Some(d) => d,
        None => locus_launch::new_run_dir()?,
    };
    let wanted = match req.mount {
        true => MountMode::Auto,
        false => MountMode::Off,
    };
    let (mount, note) = py
        .detach(|| wanted.settled())
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let rank = RankOptions {
        servers: req.servers,
        fs_dir: req.fs,
        keep_going: req.keep_going,
        retries: req.retries,
        resume,
        record_hashes: resume == Some(ResumeBy::Content),
        mount,
        args: req.args,
        include: req.include,
        ..RankOptions::new(req.script, run_dir.clone())
    };
    let workers = req
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u32));
    let stop = Arc::new(AtomicBool::new(false));
    let on = On::This { nodes: req.nodes };
    let launch = RankLaunch {
        log: req.log,
        fresh: req.fresh,
        stop: Some(stop.clone()),
        ..RankLaunch::new(
            Arc::new(LocusBinary(req.locus)),
            workers + req.servers,
            on,
            rank,
        )
    };
    let thread = std::thread::Builder::new()
        .name("locus-run".into())
        .spawn(move || launch_ranks(&launch, |_| Ok(()), |_| Ok(())).map_err(|e| e.to_string()))?;
    Ok(RunHandle {
        run_dir,
        note: note.map(|e| e.to_string()),
        stop,
        launch: Mutex::new(Some(thread)),
        ended: Mutex::new(None),
    })
}

fn poisoned<T>(_: T) -> PyErr {
    PyRuntimeError::new_err("run handle poisoned")
}

impl RunHandle {
    /// The outcome, if the run ended (joined here the first time).
    fn outcome(&self) -> PyResult<Option<Result<i32, String>>> {
        let mut ended = self.ended.lock().map_err(poisoned)?;
        if ended.is_none() {
            let mut launch = self.launch.lock().map_err(poisoned)?;
            if launch.as_ref().is_some_and(JoinHandle::is_finished) {
                let joined = launch.take().map(JoinHandle::join);
                *ended = Some(match joined {
                    Some(Ok(r)) => r,
                    _ => Err("the run's launch ended abnormally".into()),
                });
            }
        }
        Ok(ended.clone())
    }
}

#[pymethods]
impl RunHandle {
    /// The run's exit code once it ended (`None` while it runs); 1 when it
    /// could not run at all (`launch_error` says why), as `locus run` ends.
    fn poll(&self) -> PyResult<Option<i32>> {
        Ok(self.outcome()?.map(|r| r.unwrap_or(1)))
    }

    /// Why the run could not run at all (its directory refused, its file
    /// system not started, a rank not started), once it ended so.
    #[getter]
    fn launch_error(&self) -> PyResult<Option<String>> {
        Ok(self.outcome()?.and_then(Result::err))
    }

    /// Waits until the run ends (at most `timeout` seconds) and returns
    /// `poll()`. Ctrl-C while waiting stops the run and raises.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<i32>> {
        let until = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.max(0.0)));
        loop {
            if let Some(code) = self.poll()? {
                return Ok(Some(code));
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                return Ok(None);
            }
            py.detach(|| std::thread::sleep(Duration::from_millis(20)));
            if let Err(e) = py.check_signals() {
                self.stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }

    /// Stops the run (its ranks and the file system it started); `wait`
    /// then returns its code.
    fn cancel(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What of a task's record its row shows.
#[derive(Deserialize)]
struct Row {
    id: u64,
    func: String,
    rank: u32,
    node: String,
    target: Option<Target>,
    placed: Placed,
    spill: Option<Spill>,
    start_us: u64,
    end_us: u64,
    local_bytes: u64,
    remote_bytes: u64,
    #[serde(default)]
    written_bytes: u64,
    exit: Option<i32>,
    attempts: u32,
    error: Option<String>,
    #[serde(default)]
    at: String,
}

/// Every task record of the run in `run_dir` so far (read while the run
/// writes them too), by column, as pandas builds a frame without a Python
/// object per cell: `(kind, …)` with kind `int` (native-endian `i64`
/// bytes), `maybe_int` (values and a mask of the missing), or `text`
/// (`i32` codes, -1 for none, and the distinct texts).
#[pyfunction]
pub(crate) fn records_columns<'py>(
    py: Python<'py>,
    run_dir: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let records = py.detach(|| {
        let mut rows = locus_runtime::record::load_as::<Row>(&run_dir)?;
        rows.sort_unstable_by_key(|r| (r.start_us, r.id));
        std::io::Result::Ok(rows)
    })?;
    let ints = |f: &dyn Fn(&Row) -> u64| -> Vec<u8> {
        records.iter().flat_map(|r| f(r).to_ne_bytes()).collect()
    };
    let maybe_ints = |f: &dyn Fn(&Row) -> Option<i64>| -> (Vec<u8>, Vec<u8>) {
        let values = records
            .iter()
            .flat_map(|r| f(r).unwrap_or(0).to_ne_bytes())
            .collect();
        let missing = records.iter().map(|r| u8::from(f(r).is_none())).collect();
        (values, missing)
    };
    let texts = |f: &dyn Fn(&Row) -> Option<String>| -> (Vec<u8>, Vec<String>) {
        let mut index: HashMap<String, i32> = HashMap::new();
        let mut names = Vec::new();
        let mut codes = Vec::with_capacity(records.len() * 4);
        for r in &records {
            let code = f(r).map_or(-1, |t| {
                *index.entry(t).or_insert_with_key(|t| {
                    names.push(t.clone());
                    names.len() as i32 - 1
                })
            });
            codes.extend(code.to_ne_bytes());
        }
        (codes, names)
    };
    let d = PyDict::new(py);
    let int =
        |name: &str, f: &dyn Fn(&Row) -> u64| d.set_item(name, ("int", PyBytes::new(py, &ints(f))));
    int("id", &|r| r.id)?;
    int("rank", &|r| u64::from(r.rank))?;
    int("start", &|r| r.start_us)?;
    int("end", &|r| r.end_us)?;
    int("bytes_local", &|r| r.local_bytes)?;
    int("bytes_fetched", &|r| r.remote_bytes)?;
    int("bytes_written", &|r| r.written_bytes)?;
    int("attempts", &|r| u64::from(r.attempts))?;
    let maybe = |name: &str, f: &dyn Fn(&Row) -> Option<i64>| {
        let (values, missing) = maybe_ints(f);
        d.set_item(
            name,
            (
                "maybe_int",
                PyBytes::new(py, &values),
                PyBytes::new(py, &missing),
            ),
        )
    };
    maybe("exit", &|r| r.exit.map(i64::from))?;
    maybe("spilled_from", &|r| r.spill.map(|s| i64::from(s.from)))?;
    let text = |name: &str, f: &dyn Fn(&Row) -> Option<String>| {
        let (codes, names) = texts(f);
        d.set_item(name, ("text", PyBytes::new(py, &codes), names))
    };
    text("function", &|r| Some(r.func.clone()))?;
    text("at", &|r| Some(r.at.clone()))?;
    text("node", &|r| Some(r.node.clone()))?;
    text("placement", &|r| Some(format!("{:?}", r.placed)))?;
    text("target", &|r| {
        r.target.map(|t| {
            let how = if t.hard { "hard" } else { "soft" };
            let what = if t.node { "node of rank" } else { "rank" };
            format!("{how} {what} {}", t.rank)
        })
    })?;
    text("error", &|r| r.error.clone())?;
    Ok(d)
}

/// `locus report RUN_DIR`'s text.
#[pyfunction]
pub(crate) fn report_text(py: Python<'_>, run_dir: PathBuf) -> PyResult<String> {
    py.detach(|| Report::load(&run_dir).map(|r| r.text()))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// `locus report RUN_DIR --html`'s page.
#[pyfunction]
pub(crate) fn report_html(py: Python<'_>, run_dir: PathBuf) -> PyResult<String> {
    py.detach(|| {
        Report::load(&run_dir)
            .map(|r| locus_runtime::report::html::run(&run_dir.display().to_string(), &r))
    })
    .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The error the run in `run_dir` ended with and its kind (`None` if it
/// succeeded or wrote no summary).
#[pyfunction]
pub(crate) fn failure(run_dir: PathBuf) -> Option<(String, String)> {
    let s = RunSummary::load(&run_dir).ok()?;
    let kind = s.error_kind.map(|k| format!("{k:?}")).unwrap_or_default();
    s.error.map(|e| (e, kind))
}
