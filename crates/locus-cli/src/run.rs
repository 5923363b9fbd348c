//! `locus run`: check a script and execute it on this machine.

use anyhow::{Context, Result};
use clap::Args;
use locus_lang::{compile, Source};
use locus_runtime::{Engine, RunOptions};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// Workers: leaf tasks (app processes) running at once.
    #[arg(short = 'n', long = "workers", default_value_t = default_workers())]
    pub workers: usize,
    /// Directory for the run's unmapped files (default: a new one under /tmp).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// The Swift script.
    pub script: PathBuf,
    /// Arguments for the script (`--name=value` for argv(), others for argp()).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

pub fn run(a: RunArgs) -> Result<()> {
    let text =
        std::fs::read(&a.script).with_context(|| format!("cannot read {}", a.script.display()))?;
    let src = Source::new(
        a.script.display().to_string(),
        String::from_utf8_lossy(&text),
    );
    let program = match compile(&src) {
        Ok(p) => p,
        Err(diags) => {
            for d in &diags {
                eprintln!("{}", d.render(&src));
            }
            std::process::exit(1);
        }
    };
    let run_dir = match a.run_dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("locus-run-{}", std::process::id())),
    };
    std::fs::create_dir_all(run_dir.join("tmp")).with_context(|| run_dir.display().to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let engine = Engine::new(
        program,
        RunOptions {
            workers: a.workers,
            args: a.args,
            run_dir,
            out: Arc::new(Mutex::new(std::io::stdout())),
            stall: Duration::from_millis(500),
        },
    );
    rt.block_on(engine.run()).map_err(anyhow::Error::msg)?;
    // Tasks left waiting on a failed run must not hold the process open.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(())
}
