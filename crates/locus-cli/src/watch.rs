//! `locus watch RUN_DIR`: the live page of a run started elsewhere (by
//! `sbatch`, another terminal) whose directory this host sees; of an ended
//! run, its last state and full report.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct WatchArgs {
    /// The run's directory (`locus run --run-dir`, or the one it printed).
    run_dir: PathBuf,
    /// Where to serve the page (default a free loopback port). An address
    /// beyond loopback is served only to a URL holding the run's token
    /// (printed with it).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
}

pub(crate) fn run(a: WatchArgs) -> Result<()> {
    let empty = std::fs::read_dir(&a.run_dir).map_or(true, |mut d| d.next().is_none());
    match locus_launch::hold_run_dir(&a.run_dir) {
        // A run not started yet (a batch job waiting in its queue).
        Ok(locus_launch::RunHold::NotARun) if empty => eprintln!(
            "locus: no run in {} yet: the page shows it once it starts",
            a.run_dir.display()
        ),
        Ok(locus_launch::RunHold::NotARun) => {
            bail!("{}: not a run directory", a.run_dir.display())
        }
        Err(e) => bail!("{}: {e}", a.run_dir.display()),
        Ok(_) => {}
    }
    let w = locus_watch::watch(locus_watch::WatchOptions {
        run_dir: a.run_dir,
        listen: a.listen,
    })?;
    eprintln!("locus: watch the run at {} (Ctrl-C stops)", w.url);
    w.wait();
    Ok(())
}
