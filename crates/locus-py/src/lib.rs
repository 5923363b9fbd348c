//! Locus from Python: the extension module `locus._locus` under the `locus`
//! package (`python/locus`), which gives it Python's shapes (file objects,
//! fsspec, pandas). It holds the file-system client, checking scripts,
//! starting runs through the launch layer and reading their records.

mod bench;
mod client;
mod runs;

use locus_proto::FsError;
use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use std::sync::OnceLock;
use tokio::runtime::Runtime;

/// The runtime every client's calls run on (one per process, as a client
/// keeps connections and background publication on it).
fn runtime() -> PyResult<&'static Runtime> {
    static RT: OnceLock<Runtime> = OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // Another thread may have made one meanwhile: that one is kept.
    let _ = RT.set(rt);
    RT.get()
        .ok_or_else(|| PyRuntimeError::new_err("no async runtime"))
}

/// A file-system error as Python's `OSError` of its errno (Python picks the
/// subclass: `FileNotFoundError`, `IsADirectoryError`, …), carrying Locus's
/// one-line message.
fn os_error(e: FsError) -> PyErr {
    PyOSError::new_err((e.code.raw(), e.to_string()))
}

#[pymodule]
fn _locus(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::Client>()?;
    m.add_class::<client::Writer>()?;
    m.add_class::<runs::RunHandle>()?;
    m.add_function(wrap_pyfunction!(client::connect, m)?)?;
    m.add_function(wrap_pyfunction!(client::default_dir, m)?)?;
    m.add_function(wrap_pyfunction!(runs::check, m)?)?;
    m.add_function(wrap_pyfunction!(runs::start_run, m)?)?;
    m.add_function(wrap_pyfunction!(runs::records_columns, m)?)?;
    m.add_function(wrap_pyfunction!(runs::report_text, m)?)?;
    m.add_function(wrap_pyfunction!(runs::report_html, m)?)?;
    m.add_function(wrap_pyfunction!(runs::failure, m)?)?;
    m.add_function(wrap_pyfunction!(bench::stats_from_rust, m)?)?;
    Ok(())
}
