//! `locus fs up --launcher srun|mpiexec`: one daemon per host of a job,
//! started by the site's launcher (`locus fs serve --join`), returning once
//! they formed the cluster. The launcher keeps running with the daemons;
//! `locus fs down` stops them, and with them the launcher.

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use locus_fs::cluster::CLUSTER_FILE;
use locus_fs::ClusterSpec;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the daemons get to start and find each other.
const FORM_TIMEOUT: Duration = Duration::from_secs(120);
const LOG_FILE: &str = "launcher.log";

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SiteLauncher {
    /// Slurm's `srun`, one task per node of the allocation.
    Srun,
    /// An MPI launcher (`mpiexec`, e.g. MPICH's Hydra), one process per host.
    Mpiexec,
}

/// What `locus fs up --launcher` was asked for.
pub struct Deploy<'a> {
    pub dir: &'a Path,
    pub launcher: SiteLauncher,
    /// The launcher program, if not `srun`/`mpiexec` on the PATH.
    pub program: Option<PathBuf>,
    /// Hosts (daemons) to start: required for mpiexec; srun defaults to the
    /// allocation's node count.
    pub hosts: Option<u32>,
    /// Node-local storage on every host.
    pub store: Option<PathBuf>,
    /// Passed to the launcher before the command (e.g. `-hosts a,b`).
    pub launcher_args: &'a [String],
}

/// Starts the daemons through the launcher and waits until they formed
/// the cluster in `dir`.
pub fn up(d: Deploy) -> Result<ClusterSpec> {
    if d.dir.join(CLUSTER_FILE).exists() {
        bail!("{}: a cluster already exists there", d.dir.display());
    }
    locus_fs::private_dir::create(d.dir)?;
    let hosts = match (d.launcher, d.hosts) {
        (_, Some(n)) => n,
        (SiteLauncher::Srun, None) => locus_fs::join::expected_from_env()
            .context("srun outside an allocation: give --nodes N (or run inside salloc/sbatch)")?,
        (SiteLauncher::Mpiexec, None) => bail!("with --launcher mpiexec, give --nodes N"),
    };
    let exe = std::env::current_exe().context("locating the locus binary")?;
    let (default_program, per_host): (&str, Vec<String>) = match d.launcher {
        SiteLauncher::Srun => (
            "srun",
            // --overlap: the job's own steps (its ranks) share the CPUs.
            vec![
                format!("--nodes={hosts}"),
                "--ntasks-per-node=1".into(),
                "--overlap".into(),
            ],
        ),
        SiteLauncher::Mpiexec => (
            "mpiexec",
            vec!["-ppn".into(), "1".into(), "-n".into(), hosts.to_string()],
        ),
    };
    let program = d.program.clone().unwrap_or_else(|| default_program.into());
    let log = std::fs::File::create(d.dir.join(LOG_FILE))?;
    let mut cmd = Command::new(&program);
    cmd.args(&per_host)
        .args(d.launcher_args)
        .arg(&exe)
        .args(["fs", "serve", "--join"])
        .arg(d.dir)
        .args(["--expect", &hosts.to_string()]);
    if let Some(store) = &d.store {
        cmd.arg("--store").arg(store);
    }
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // A process group of its own: a Ctrl-C meant for this command does
        // not reach the daemons, which outlive it.
        .process_group(0);
    let mut launcher = cmd
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let started = Instant::now();
    loop {
        if let Ok(spec) = ClusterSpec::load(d.dir) {
            return Ok(spec);
        }
        if let Some(status) = launcher.try_wait()? {
            let log = std::fs::read_to_string(d.dir.join(LOG_FILE)).unwrap_or_default();
            let last = log.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
            bail!(
                "{} exited ({status}) before the cluster formed: {last}",
                program.display()
            );
        }
        if started.elapsed() > FORM_TIMEOUT {
            let _ = launcher.kill();
            bail!(
                "the daemons did not form a cluster in {} within {FORM_TIMEOUT:?} (see {})",
                d.dir.display(),
                d.dir.join(LOG_FILE).display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
