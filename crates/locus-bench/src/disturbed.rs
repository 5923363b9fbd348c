//! What the benchmarks that run workflows share: a run launched on local
//! nodes as a user's run is (`tasks`, `node-loss`, `frozen`), and for the
//! benchmarks that disturb a run, that run undisturbed and disturbed in
//! turn.

use anyhow::{bail, Result};
use locus_launch::{launch_ranks, On, Program, RankLaunch};
use locus_runtime::RankOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A disturbed-run benchmark's options (`node-loss`, `frozen`).
pub struct DisturbedOpts {
    pub program: Arc<dyn Program>,
    /// Tasks (or iterations of the workflow) per run.
    pub tasks: u32,
    /// Undisturbed and disturbed runs made, each.
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
}

/// A run's shape: its script and where its ranks go.
pub(crate) struct Shape<'a> {
    pub file: &'a str,
    pub script: &'a str,
    pub ranks: u32,
    pub nodes: u32,
    pub servers: u32,
}

/// Runs `shape` in `dir/name` (its log beside it), replacing an earlier
/// one of that name; fails with its log if the run fails. Its run
/// directory.
pub(crate) fn launch(
    program: &Arc<dyn Program>,
    dir: &Path,
    name: &str,
    shape: &Shape<'_>,
) -> Result<PathBuf> {
    let file = dir.join(shape.file);
    std::fs::write(&file, shape.script)?;
    let run_dir = dir.join(name);
    let log = dir.join(format!("{name}.log"));
    let rank = RankOptions {
        servers: shape.servers,
        ..RankOptions::new(file, run_dir.clone())
    };
    let run = RankLaunch {
        log: Some(log.clone()),
        fresh: true,
        ..RankLaunch::new(
            program.clone(),
            shape.ranks,
            On::This { nodes: shape.nodes },
            rank,
        )
    };
    let code = launch_ranks(&run, |_| Ok(()), |_| Ok(()))?;
    if code != 0 {
        bail!(
            "{name}: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    Ok(run_dir)
}

/// `once(name, disturbed)` for `rounds` rounds, undisturbed and disturbed
/// in turn (which comes first alternating, so that a drift of the machine
/// falls on both); what the undisturbed and the disturbed runs gave.
pub(crate) fn in_turn<T>(
    rounds: u32,
    mut once: impl FnMut(&str, bool) -> Result<T>,
) -> Result<(Vec<T>, Vec<T>)> {
    let (mut calm, mut disturbed) = (Vec::new(), Vec::new());
    for round in 0..rounds.max(1) {
        let order = match round % 2 {
            0 => [false, true],
            _ => [true, false],
        };
        for disturb in order {
            let name = format!("r{round}-{}", if disturb { "disturbed" } else { "base" });
            let got = once(&name, disturb)?;
            match disturb {
                true => disturbed.push(got),
                false => calm.push(got),
            }
        }
    }
    Ok((calm, disturbed))
}
