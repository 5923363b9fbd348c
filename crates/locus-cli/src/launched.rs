//! How this binary is started as a process Locus launches (`locus launched
//! FILE`, hidden): the role file says what to be.

use anyhow::{bail, Result};
use locus_launch::{Launched, LocusBinary, Program, Role};
use std::path::PathBuf;
use std::sync::Arc;

/// The program every process Locus starts runs.
pub(crate) fn program() -> Result<Arc<dyn Program>> {
    use anyhow::Context;
    let exe = std::env::current_exe().context("locating the locus binary")?;
    Ok(Arc::new(LocusBinary(exe)))
}

#[derive(clap::Args)]
pub(crate) struct LaunchedArgs {
    /// The role file Locus wrote for this process.
    file: PathBuf,
}

pub(crate) fn run(a: LaunchedArgs) -> Result<()> {
    // A daemon or rank lives on when another process of its launch dies.
    locus_launch::ignore_failure_notices();
    if let Some(code) = locus_launch::supervise()? {
        std::process::exit(code);
    }
    let l = Launched::load(&a.file)?;
    match l.role.as_str() {
        locus_fs::ServeConfig::NAME => crate::mount::serve_daemon(l.config()?),
        locus_runtime::RankOptions::NAME => crate::run::as_rank(l.config()?),
        locus_launch::PurgeStores::NAME => locus_launch::purge_here(l.config()?),
        locus_bench::meta_cluster::ClientArgs::NAME => {
            locus_bench::meta_cluster::client_main(l.config()?)
        }
        other => bail!("{}: unknown role '{other}'", a.file.display()),
    }
}
