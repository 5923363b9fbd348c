//! A site's launcher (`srun`, `mpiexec`) starting Locus's processes on the
//! hosts of a job: one file-system daemon per host (`deploy`, returning
//! once they formed the cluster), a run's ranks, or a purge of the stores
//! whose daemons are gone (`purge_stores`). The launcher keeps running with
//! what it started; `locus fs down` stops the daemons, and with them their
//! launcher.

use crate::role::{self, Program};
use crate::supervise;
use anyhow::{bail, Context, Result};
use locus_fs::{
    ClusterSpec, Durability, JoinConfig, NodeInfo, Placement, Scope, ServeConfig, CLUSTER_FILE,
};
use locus_runtime::JobLauncher;
use serde::{Deserialize, Serialize};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the daemons get to start and find each other.
const FORM_TIMEOUT: Duration = Duration::from_secs(120);
const LOG_FILE: &str = "launcher.log";
/// The daemons' role file, in the cluster's (shared) directory.
const ROLE_FILE: &str = "serve.json";
/// The launcher a cluster was deployed with, in its directory: what
/// reaches its hosts again when their daemons are gone.
const SITE_FILE: &str = "launcher.json";
const PURGE_ROLE_FILE: &str = "purge.json";
const PURGE_LOG_FILE: &str = "purge.log";
/// How long a purge step may take, its launcher's start included.
const PURGE_TIMEOUT: Duration = Duration::from_secs(60);

/// A site's job launcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteLauncher {
    /// Slurm's `srun`.
    Srun,
    /// An MPI launcher (`mpiexec`, e.g. MPICH's Hydra).
    Mpiexec,
}

impl std::str::FromStr for SiteLauncher {
    type Err = String;
    fn from_str(s: &str) -> Result<SiteLauncher, String> {
        match s {
            "srun" => Ok(SiteLauncher::Srun),
            "mpiexec" => Ok(SiteLauncher::Mpiexec),
            _ => Err(format!("'{s}': expected srun or mpiexec")),
        }
    }
}

/// A launcher as a user would call it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Site {
    /// Which launcher.
    pub launcher: SiteLauncher,
    /// The launcher program, if not `srun`/`mpiexec` on the PATH.
    pub program: Option<PathBuf>,
    /// Passed to the launcher before the command (e.g. `-hosts a,b`).
    pub args: Vec<String>,
}

/// How many processes where.
#[derive(Clone, Debug)]
pub enum Shape {
    /// One on each of this many hosts.
    PerHost(u32),
    /// One on each of these hosts.
    OnHosts(Vec<String>),
    /// This many in all, over this many hosts if given (else the
    /// launcher's choice: the allocation's, the host list's).
    Tasks(u32, Option<u32>),
}

impl Site {
    /// The launcher program to run.
    pub fn program(&self) -> PathBuf {
        self.program.clone().unwrap_or_else(|| {
            match self.launcher {
                SiteLauncher::Srun => "srun",
                SiteLauncher::Mpiexec => "mpiexec",
            }
            .into()
        })
    }

    /// The launcher starting `inner` in `shape`.
    pub fn command(&self, shape: Shape, inner: &Command) -> Command {
        let named_hosts = matches!(shape, Shape::OnHosts(_));
        let shape: Vec<String> = match (self.launcher, shape) {
            // --overlap: the job's later steps (its ranks) share the CPUs
            // with the daemons.
            // --ntasks too: inside a batch job srun would take the job's
            // task count over --ntasks-per-node and start several per host.
            (SiteLauncher::Srun, Shape::PerHost(h)) => vec![
                format!("--nodes={h}"),
                format!("--ntasks={h}"),
                "--ntasks-per-node=1".into(),
                "--overlap".into(),
            ],
            // Cyclic: ranks go round the hosts, so every host has workers
            // (the low ranks) before any gets a second, and the servers
            // (the highest ranks) share hosts with workers. Slurm's block
            // default left a host with only a server on it.
            (SiteLauncher::Srun, Shape::Tasks(n, hosts)) => {
                let mut v = vec![
                    format!("--ntasks={n}"),
                    "--overlap".into(),
                    "--distribution=cyclic".into(),
                ];
                v.extend(hosts.map(|h| format!("--nodes={h}")));
                v.extend(self.srun_pmi());
                v
            }
            (SiteLauncher::Srun, Shape::OnHosts(names)) => vec![
                format!("--nodes={}", names.len()),
                format!("--ntasks={}", names.len()),
                "--ntasks-per-node=1".into(),
                "--overlap".into(),
                format!("--nodelist={}", names.join(",")),
            ],
            (SiteLauncher::Mpiexec, Shape::PerHost(h)) => {
                vec!["-ppn".into(), "1".into(), "-n".into(), h.to_string()]
            }
            (SiteLauncher::Mpiexec, Shape::OnHosts(names)) => vec![
                "-hosts".into(),
                names.join(","),
                "-ppn".into(),
                "1".into(),
                "-n".into(),
                names.len().to_string(),
            ],
            (SiteLauncher::Mpiexec, Shape::Tasks(n, hosts)) => {
                let mut v = vec!["-n".into(), n.to_string()];
                if let Some(h) = hosts {
                    v.extend(["-ppn".into(), n.div_ceil(h.max(1)).to_string()]);
                }
                v
            }
        };
        let mut cmd = Command::new(self.program());
        cmd.args(shape)
            .args(self.survive_lost_processes())
            .args(self.user_args(named_hosts))
            .arg(inner.get_program())
            .args(inner.get_args());
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        supervise::mark(&mut cmd);
        cmd
    }

    /// What starts a parallel task's MPI job in a run this launcher
    /// started: the same launcher, reaching the hosts as the run's did.
    pub fn job_launcher(&self) -> JobLauncher {
        let program = self.program();
        match self.launcher {
            SiteLauncher::Mpiexec => JobLauncher::Hydra {
                program,
                args: self.split_hosts().1,
            },
            SiteLauncher::Srun => {
                let args = self.args.iter().cloned().chain(self.srun_pmi()).collect();
                JobLauncher::Srun { program, args }
            }
        }
    }

    /// The user's arguments, but where the shape names its hosts, not the
    /// ones naming hosts (mpiexec's `-hosts a,b`, `-f FILE`).
    fn user_args(&self, named_hosts: bool) -> Vec<String> {
        match self.launcher {
            SiteLauncher::Mpiexec if named_hosts => self.split_hosts().1,
            _ => self.args.clone(),
        }
    }

    /// mpiexec's arguments apart: the hosts `-hosts`/`-host` name (if
    /// any), and the arguments that name no hosts (nor `-f FILE`).
    fn split_hosts(&self) -> (Option<Vec<String>>, Vec<String>) {
        const HOST_FLAGS: [&str; 5] = ["-hosts", "-host", "-f", "-hostfile", "-machinefile"];
        let (mut hosts, mut rest) = (None, Vec::new());
        let mut words = self.args.iter();
        while let Some(a) = words.next() {
            let (flag, value) = match a.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (a.as_str(), None),
            };
            if !HOST_FLAGS.contains(&flag) {
                rest.push(a.clone());
                continue;
            }
            let value = value.or_else(|| words.next().cloned());
            if matches!(flag, "-hosts" | "-host") {
                hosts = value.map(|v| v.split(',').map(str::to_string).collect());
            }
        }
        (hosts, rest)
    }

    /// The flag that keeps the launcher's other processes running when one
    /// dies (a lost worker's tasks run elsewhere; a lost daemon's files are
    /// made again), unless the user's arguments already say: Hydra kills
    /// them all by default; srun does where the site sets `KillOnBadExit`.
    /// Without auto-cleanup Hydra tells the others with SIGUSR1
    /// (`supervise::ignore_failure_notices`); a process dying of a signal
    /// it takes for the job's failure all the same (`supervise`). Another
    /// `mpiexec` (Open MPI's) gets nothing: the flag is Hydra's.
    fn survive_lost_processes(&self) -> Option<&'static str> {
        let (flag, given): (_, &[&str]) = match self.launcher {
            SiteLauncher::Srun => ("--kill-on-bad-exit=0", &["--kill-on-bad-exit", "-K"]),
            SiteLauncher::Mpiexec => ("-disable-auto-cleanup", &["-disable-auto-cleanup"]),
        };
        let chosen = self
            .args
            .iter()
            .any(|a| given.iter().any(|g| a.starts_with(g)));
        // No `mpiexec --version` to ask when the user chose.
        (!chosen && (self.launcher == SiteLauncher::Srun || self.is_hydra())).then_some(flag)
    }

    /// Whether the launcher is MPICH's Hydra (`mpiexec --version` says).
    fn is_hydra(&self) -> bool {
        Command::new(self.program())
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("HYDRA"))
    }

    /// srun's flag giving the ranks Slurm's PMI (its `pmi2` plugin serves
    /// the PMI-1 wire protocol the ranks meet through), unless the user or
    /// the site chose a plugin (`--mpi`, `SLURM_MPI_TYPE`) or this Slurm
    /// has no `pmi2` (`srun --mpi=list`): then the ranks meet in the run
    /// directory.
    fn srun_pmi(&self) -> Option<String> {
        let chosen = self.args.iter().any(|a| a.starts_with("--mpi"))
            || std::env::var_os("SLURM_MPI_TYPE").is_some();
        if chosen {
            return None;
        }
        let list = Command::new(self.program())
            .arg("--mpi=list")
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = [list.stdout, list.stderr].concat();
        String::from_utf8_lossy(&text)
            .lines()
            .any(|l| l.trim() == "pmi2")
            .then(|| "--mpi=pmi2".to_string())
    }

    /// How many hosts the job has, when the launcher's environment says.
    fn hosts_from_env(&self) -> Option<u32> {
        match self.launcher {
            SiteLauncher::Srun => locus_fs::expected_from_env(),
            SiteLauncher::Mpiexec => None,
        }
    }
}

/// What `locus fs up --launcher` was asked for.
pub struct Deploy<'a> {
    /// The cluster directory (shared by every host).
    pub dir: &'a Path,
    /// The launcher that starts one daemon per host.
    pub site: Site,
    /// Hosts (daemons) to start: required for mpiexec; srun defaults to the
    /// allocation's node count.
    pub hosts: Option<u32>,
    /// Node-local storage on every host.
    pub store: Option<PathBuf>,
    /// When the daemons' metadata changes are on disk before they are answered.
    pub durability: Durability,
    /// Where every host mounts the cluster while its daemon runs.
    pub mount: Option<PathBuf>,
    /// How the cluster places new files unless told otherwise.
    pub placement: Placement,
    /// Copies of data and metadata the cluster keeps.
    pub replicas: u32,
    /// Each daemon's background upkeep of its store.
    pub upkeep: locus_fs::Upkeep,
    /// Whose its stores are: the job's it is deployed in, or kept.
    pub scope: Scope,
}

/// Starts one daemon per host through the launcher and waits until they
/// formed the cluster in `dir`; returns it and the launcher, which runs
/// until the daemons stop.
pub fn deploy(program: &dyn Program, d: Deploy) -> Result<(ClusterSpec, Child)> {
    if d.dir.join(CLUSTER_FILE).exists() {
        bail!("{}: a cluster already exists there", d.dir.display());
    }
    locus_fs::create_private_dir(d.dir)?;
    let hosts = match (d.hosts, d.site.launcher) {
        (Some(n), _) => n,
        (None, SiteLauncher::Srun) => d
            .site
            .hosts_from_env()
            .context("srun outside an allocation: give --nodes N (or run inside salloc/sbatch)")?,
        (None, SiteLauncher::Mpiexec) => bail!("with --launcher mpiexec, give --nodes N"),
    };
    // One role file for all: each daemon finds its own name and address.
    let role_file = d.dir.join(ROLE_FILE);
    let config = ServeConfig {
        join: JoinConfig {
            expect: Some(hosts),
            store: d.store.clone(),
            mount: d.mount.clone(),
            placement: d.placement,
            replicas: d.replicas,
            scope: d.scope,
            ..JoinConfig::new(d.dir.to_path_buf())
        },
        listen: None,
        durability: d.durability,
        addr_file: None,
        upkeep: d.upkeep,
    };
    role::write(&role_file, &config)?;
    locus_fs::write_json(&d.dir.join(SITE_FILE), &d.site)?;
    let log = std::fs::File::create(d.dir.join(LOG_FILE))?;
    let mut cmd = d
        .site
        .command(Shape::PerHost(hosts), &program.command(&role_file));
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // A process group of its own: a Ctrl-C meant for this command does
        // not reach the daemons, which outlive it.
        .process_group(0);
    let launcher_program = d.site.program();
    let mut launcher = cmd
        .spawn()
        .with_context(|| format!("starting {}", launcher_program.display()))?;
    let started = Instant::now();
    loop {
        if let Ok(spec) = ClusterSpec::load(d.dir) {
            return Ok((spec, launcher));
        }
        if let Some(status) = launcher.try_wait()? {
            bail!(
                "{} exited ({status}) before the cluster formed: {}",
                launcher_program.display(),
                last_logged(d.dir)
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

/// The last line the daemons' launcher logged in the cluster's `dir`.
fn last_logged(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
    let last = log.lines().rfind(|l| !l.trim().is_empty());
    last.unwrap_or_default().to_string()
}

/// The launcher the cluster in `dir` was deployed with, if it says.
pub fn recorded(dir: &Path) -> Option<Site> {
    serde_json::from_slice(&std::fs::read(dir.join(SITE_FILE)).ok()?).ok()
}

impl Site {
    /// The hosts this launcher can start processes on, where it says: the
    /// allocation's (srun, `scontrol show hostnames`), or the hosts its
    /// arguments name (mpiexec `-hosts`).
    fn hosts(&self) -> Result<Option<Vec<String>>> {
        match self.launcher {
            SiteLauncher::Srun => {
                let list = std::env::var("SLURM_JOB_NODELIST")
                    .context("outside an allocation: run inside salloc/sbatch on its hosts")?;
                let out = Command::new("scontrol")
                    .args(["show", "hostnames", &list])
                    .stdin(Stdio::null())
                    .output()
                    .context("scontrol show hostnames")?;
                if !out.status.success() {
                    bail!(
                        "scontrol show hostnames {list}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
                let text = String::from_utf8_lossy(&out.stdout);
                Ok(Some(text.split_whitespace().map(str::to_string).collect()))
            }
            SiteLauncher::Mpiexec => Ok(self.split_hosts().0),
        }
    }
}

/// Starts again, through `site`, the daemons of `nodes` (of the formed
/// cluster in `dir`, their daemons stopped), each on its own host, and waits
/// until they serve; returns the launcher, which runs on with them. Hosts
/// the launcher cannot reach are refused before anything starts: a node's
/// store is on its host and is never served from another.
pub fn redeploy(
    program: &dyn Program,
    dir: &Path,
    site: &Site,
    nodes: &[NodeInfo],
) -> Result<Child> {
    if let Some(hosts) = site.hosts()? {
        let missing: Vec<&str> = (nodes.iter())
            .filter(|n| !hosts.contains(&n.name))
            .map(|n| n.name.as_str())
            .collect();
        if !missing.is_empty() {
            bail!(
                "the file system in {} keeps stores on {}, which this launcher cannot reach \
                 (it has {}): node-local stores do not move; run where they are, or stage \
                 out and in again",
                dir.display(),
                missing.join(", "),
                hosts.join(", ")
            );
        }
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(LOG_FILE))?;
    let names = nodes.iter().map(|n| n.name.clone()).collect();
    let mut cmd = site.command(
        Shape::OnHosts(names),
        &program.command(&dir.join(ROLE_FILE)),
    );
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // As `deploy`: a Ctrl-C meant for this command does not reach them.
        .process_group(0);
    let mut launcher = cmd
        .spawn()
        .with_context(|| format!("starting {}", site.program().display()))?;
    let started = Instant::now();
    loop {
        let serving = crate::daemons::serving(dir)?;
        if nodes.iter().all(|n| serving.contains(&n.id)) {
            return Ok(launcher);
        }
        if let Some(status) = launcher.try_wait()? {
            bail!(
                "{} exited ({status}) before the daemons served again: {}",
                site.program().display(),
                last_logged(dir)
            );
        }
        if started.elapsed() > FORM_TIMEOUT {
            let _ = launcher.kill();
            bail!(
                "the daemons of {} did not serve again within {FORM_TIMEOUT:?} (see {})",
                dir.display(),
                dir.join(LOG_FILE).display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The role of a purge on one host: remove this host's store of the
/// cluster in `cluster` if its daemon is gone.
#[derive(Serialize, Deserialize)]
pub struct PurgeStores {
    /// The cluster's (shared) directory.
    pub cluster: PathBuf,
}

impl role::Role for PurgeStores {
    const NAME: &'static str = "fs-purge";
}

/// In the process a purge step started on a host: removes the host's
/// store and answers in the cluster's directory how it went.
pub fn purge_here(p: PurgeStores) -> Result<()> {
    let spec = ClusterSpec::load(&p.cluster)?;
    let host = locus_fs::hostname();
    let done = match spec.node_named(&host) {
        None => Err(locus_fs::StoreKept::NotAHost { host: host.clone() }),
        Some(n) => locus_fs::remove_store(&n.dir),
    };
    Ok(locus_fs::note_removed(&p.cluster, &host, &done)?)
}

/// Stops the cluster in `dir` and removes its stores — by their daemons,
/// here, or through the launcher it was deployed with on hosts whose
/// daemons are gone; returns how many daemons stopped and the stores left,
/// each with why.
pub fn take_down(
    program: &dyn Program,
    dir: &Path,
) -> std::io::Result<(usize, Vec<(NodeInfo, String)>)> {
    let stopped = crate::daemons::stop(dir, true)?;
    let left = purge_stores(program, dir, &stopped.stores_left);
    Ok((stopped.daemons, left))
}

/// Removes the stores of `nodes` (of the cluster in `dir`, their daemons
/// gone) through the launcher the cluster was deployed with: one step, a
/// purge on each of their hosts, but those a sweep on their host already
/// removed. Returns the nodes whose stores are still there, each with why.
fn purge_stores(program: &dyn Program, dir: &Path, nodes: &[NodeInfo]) -> Vec<(NodeInfo, String)> {
    let nodes: Vec<&NodeInfo> = nodes
        .iter()
        .filter(|n| locus_fs::noted_removed(dir, &n.name) != Some(Ok(())))
        .collect();
    let unreached = |why: &str| {
        (nodes.iter())
            .map(|n| ((*n).clone(), why.to_string()))
            .collect()
    };
    if nodes.is_empty() {
        return Vec::new();
    }
    let Some(site) = recorded(dir) else {
        return unreached("the cluster does not say how its hosts are reached");
    };
    if site.launcher == SiteLauncher::Srun && std::env::var_os("SLURM_JOB_ID").is_none() {
        return unreached("outside an allocation holding its host");
    }
    for n in &nodes {
        locus_fs::forget_removed(dir, &n.name);
    }
    let role_file = dir.join(PURGE_ROLE_FILE);
    let log_file = dir.join(PURGE_LOG_FILE);
    let started = role::write(
        &role_file,
        &PurgeStores {
            cluster: dir.to_path_buf(),
        },
    )
    .and_then(|()| std::fs::File::create(&log_file))
    .and_then(|log| {
        let names = nodes.iter().map(|n| n.name.clone()).collect();
        site.command(Shape::OnHosts(names), &program.command(&role_file))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
    });
    let mut step = match started {
        Ok(step) => step,
        Err(e) => return unreached(&format!("starting {}: {e}", site.program().display())),
    };
    let deadline = Instant::now() + PURGE_TIMEOUT;
    while step.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = step.kill();
    let _ = step.wait();
    (nodes.iter())
        .filter_map(|n| match locus_fs::noted_removed(dir, &n.name) {
            Some(Ok(())) => None,
            Some(Err(why)) => Some(((*n).clone(), why.to_string())),
            None => Some((
                (*n).clone(),
                format!("its host did not answer (see {})", log_file.display()),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn launchers_get_their_own_shape_flags_before_the_command() {
        let mut inner = Command::new("/bin/locus");
        inner.args(["launched", "/d/rank.json"]);
        let srun = Site {
            launcher: SiteLauncher::Srun,
            program: None,
            args: vec!["--mpi=none".into()],
        };
        assert_eq!(
            words(&srun.command(Shape::Tasks(8, Some(2)), &inner)),
            [
                "srun",
                "--ntasks=8",
                "--overlap",
                "--distribution=cyclic",
                "--nodes=2",
                "--kill-on-bad-exit=0",
                "--mpi=none",
                "/bin/locus",
                "launched",
                "/d/rank.json"
            ]
        );
        // Launchers that say who they are as MPICH's and Open MPI's do.
        let dir = tempfile::tempdir().unwrap();
        let fake = |name: &str, version: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            path
        };
        let hydra = fake("mpiexec.mpich", "HYDRA build details:");
        let mpi = Site {
            launcher: SiteLauncher::Mpiexec,
            program: Some(hydra.clone()),
            args: vec!["-hosts".into(), "a,b,c".into()],
        };
        assert_eq!(
            words(&mpi.command(Shape::PerHost(3), &inner))[..6],
            [
                hydra.to_str().unwrap(),
                "-ppn",
                "1",
                "-n",
                "3",
                "-disable-auto-cleanup"
            ]
        );
        assert_eq!(
            words(&mpi.command(Shape::Tasks(7, Some(3)), &inner))[..6],
            [
                hydra.to_str().unwrap(),
                "-n",
                "7",
                "-ppn",
                "3",
                "-disable-auto-cleanup"
            ]
        );
        // A parallel task's job names its hosts too.
        let JobLauncher::Hydra { args, .. } = mpi.job_launcher() else {
            panic!("Hydra for a run started by mpiexec");
        };
        assert!(args.is_empty(), "{args:?}");
        // A purge names its hosts: the user's host list gives way.
        let on = |site: &Site| words(&site.command(Shape::OnHosts(vec!["node1".into()]), &inner));
        assert_eq!(
            on(&mpi)[1..],
            [
                "-hosts",
                "node1",
                "-ppn",
                "1",
                "-n",
                "1",
                "-disable-auto-cleanup",
                "/bin/locus",
                "launched",
                "/d/rank.json"
            ]
        );
        assert_eq!(
            on(&srun)[1..7],
            [
                "--nodes=1",
                "--ntasks=1",
                "--ntasks-per-node=1",
                "--overlap",
                "--nodelist=node1",
                "--kill-on-bad-exit=0"
            ]
        );
        let open_mpi = Site {
            program: Some(fake("mpiexec.openmpi", "mpiexec (Open MPI) 4.1.4")),
            ..mpi
        };
        assert!(!words(&open_mpi.command(Shape::PerHost(3), &inner))
            .iter()
            .any(|w| w.contains("cleanup")));
        // The user's own choice stands.
        let kill = Site {
            args: vec!["-K".into()],
            ..srun
        };
        assert!(!words(&kill.command(Shape::PerHost(2), &inner))
            .iter()
            .any(|w| w.starts_with("--kill-on-bad-exit")));
    }
}
