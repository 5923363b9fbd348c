//! `locus check`: the front end alone.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use locus_lang::{compile, graph, Source};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Emit {
    /// The intermediate form the runtime executes, readably.
    Ir,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// Swift scripts to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print a lowered form of each script that checks.
    #[arg(long)]
    pub emit: Option<Emit>,
    /// Print each script's dataflow: its functions, the calls in them
    /// (apps filled, builtins dashed), the variables they pass, loops as
    /// clusters.
    #[arg(long, value_name = "dot|svg", conflicts_with = "emit")]
    pub graph: Option<crate::graphviz::GraphFormat>,
    #[command(flatten)]
    pub modules: ModuleArgs,
}

/// Where user modules are found.
#[derive(Args, Clone)]
pub(crate) struct ModuleArgs {
    /// Look for imported modules (`import a.b;` is `a/b.swift`) in DIR too,
    /// after the script's directory; SWIFT_PATH (DIR:DIR…) is searched last.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
}

impl ModuleArgs {
    /// `-I` directories, then SWIFT_PATH's.
    pub(crate) fn search(&self) -> Vec<PathBuf> {
        let mut dirs = self.include.clone();
        if let Some(path) = std::env::var_os("SWIFT_PATH") {
            dirs.extend(std::env::split_paths(&path).filter(|d| !d.as_os_str().is_empty()));
        }
        dirs
    }
}

/// The script at `path`, its modules searched for in `search`.
pub(crate) fn source(path: &Path, search: Vec<PathBuf>) -> Result<Source, String> {
    Source::read(path, search).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

pub(crate) fn run(a: CheckArgs) -> Result<()> {
    let mut failed = 0;
    let mut out = std::io::stdout().lock();
    for path in &a.files {
        let src = source(path, a.modules.search()).map_err(anyhow::Error::msg)?;
        match compile(&src) {
            Ok(program) => {
                if let Some(Emit::Ir) = a.emit {
                    writeln!(out, "{program}")?;
                }
                if let Some(format) = a.graph {
                    out.write_all(&format.drawn(graph::dot(&program))?)?;
                }
            }
            Err(diags) => {
                failed += 1;
                eprintln!("{}", locus_lang::diag::report(&diags, &src));
            }
        }
    }
    if failed > 0 {
        // The diagnostics above say what; exit non-zero without more text.
        std::process::exit(1);
    }
    if a.files.is_empty() {
        bail!("no script given");
    }
    Ok(())
}
