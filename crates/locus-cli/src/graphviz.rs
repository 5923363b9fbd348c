//! Graphs as users ask for them: Graphviz's dot text, or a picture `dot`
//! draws from it.

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use std::io::Write;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum GraphFormat {
    /// Graphviz's dot language.
    Dot,
    /// A picture, drawn by Graphviz's `dot`.
    Svg,
}

impl GraphFormat {
    /// `dot` (a graph in Graphviz's language) as this format.
    pub(crate) fn drawn(self, dot: String) -> Result<Vec<u8>> {
        match self {
            GraphFormat::Dot => Ok(dot.into_bytes()),
            GraphFormat::Svg => svg(&dot),
        }
    }
}

/// `dot` drawn by Graphviz.
fn svg(dot: &str) -> Result<Vec<u8>> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!("--graph svg is drawn by Graphviz's `dot` ({e}); install graphviz, or print --graph dot")
        })?;
    let mut stdin = child.stdin.take().context("dot's input")?;
    let text = dot.to_string();
    // Written from another thread: dot may fill its output pipe first.
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let drawn = child.wait_with_output()?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("writing to dot"))??;
    if !drawn.status.success() {
        bail!("dot: {}", String::from_utf8_lossy(&drawn.stderr).trim());
    }
    Ok(drawn.stdout)
}
