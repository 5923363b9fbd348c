//! Scripts and runs: checking a script, starting a run through the launch
//! layer (as `locus run` does, typed configuration to every process), and
//! what a run leaves in its directory (records, summary, report).

use locus_launch::{launch_ranks, LocusBinary, On, RankLaunch};
use locus_runtime::record::TaskRecord;
use locus_runtime::report::Report;
use locus_runtime::{MountMode, RankOptions, ResumeBy, RunSummary};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
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
    let launch = RankLaunch {
        program: Arc::new(LocusBinary(req.locus)),
        size: workers + req.servers,
        on: On::This { nodes: req.nodes },
        rank,
        keep_fs: false,
        replicas: 1,
        log: req.log,
        fresh: req.fresh,
        stop: Some(stop.clone()),
    };
    let thread = std::thread::Builder::new()
        .name("locus-run".into())
        .spawn(move || launch_ranks(&launch, |_| Ok(()), |_| Ok(())))?;
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
    /// The run's exit code once it ended (`None` while it runs). Raises
    /// `RuntimeError` when it could not run at all.
    fn poll(&self) -> PyResult<Option<i32>> {
        match self.outcome()? {
            None => Ok(None),
            Some(Ok(code)) => Ok(Some(code)),
            Some(Err(e)) => Err(PyRuntimeError::new_err(e)),
        }
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

/// Every task record of the run in `run_dir` so far, as a JSON array (read
/// while the run writes them too).
#[pyfunction]
pub(crate) fn records_json(py: Python<'_>, run_dir: PathBuf) -> PyResult<String> {
    let records: Vec<TaskRecord> = py.detach(|| locus_runtime::record::load(&run_dir))?;
    serde_json::to_string(&records).map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
