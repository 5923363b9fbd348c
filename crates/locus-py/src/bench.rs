//! What `python -m locus.bench` sets Python's calls beside: the same
//! client's calls made from Rust, in the same process and cluster.

use crate::client::{block, Client};
use pyo3::prelude::*;
use std::time::Instant;

/// Seconds the Rust client takes to `stat` each of `paths`, `rounds` times.
#[pyfunction]
pub(crate) fn stats_from_rust(
    py: Python<'_>,
    client: &Client,
    paths: Vec<String>,
    rounds: u32,
) -> PyResult<f64> {
    let c = &client.inner;
    block(py, async {
        let start = Instant::now();
        for _ in 0..rounds {
            for p in &paths {
                c.stat(p).await?;
            }
        }
        Ok(start.elapsed().as_secs_f64())
    })
}
