//! A parallel task's program as one MPI job: the launcher that fits the
//! run starts each rank on its worker's host with that worker's command
//! line (its outputs' private places on its node), as an MPMD job.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What starts a parallel task's MPI job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobLauncher {
    /// MPICH's `mpiexec` (Hydra) on this machine: every rank of the run is
    /// here (emulated nodes).
    #[default]
    Local,
    /// MPICH's Hydra over the run's hosts, with the arguments the run was
    /// launched with (how Hydra reaches the hosts: `-launcher-exec`, …)
    /// but those naming hosts: a job names its own.
    Hydra { program: PathBuf, args: Vec<String> },
    /// Slurm's `srun`, as a step of the allocation the run is in.
    Srun { program: PathBuf, args: Vec<String> },
}

/// One rank of a job: where it runs, its command line, and what its
/// environment says besides the launcher's (the worker it stands for:
/// `LOCUS_NODE`, `LOCUS_RANK`, as an app of that worker has them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobRank {
    pub host: String,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Why a job cannot be launched.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobError {
    #[error("no `mpiexec` on this machine's PATH: a @par task runs as an MPI job (install MPICH)")]
    NoMpiexec,
    #[error("writing the job's files in {dir}: {source}")]
    Files {
        dir: PathBuf,
        source: std::io::Error,
    },
}

impl JobLauncher {
    /// The command that runs `ranks` as one job; srun's files go in `dir`.
    pub(crate) fn command(&self, ranks: &[JobRank], dir: &Path) -> Result<Vec<String>, JobError> {
        match self {
            JobLauncher::Local => {
                let program =
                    crate::exec::process::find_in_path("mpiexec").ok_or(JobError::NoMpiexec)?;
                let mut cmd = vec![program.display().to_string()];
                mpmd(&mut cmd, ranks, false);
                Ok(cmd)
            }
            JobLauncher::Hydra { program, args } => {
                let mut cmd = vec![program.display().to_string()];
                cmd.extend(args.iter().cloned());
                mpmd(&mut cmd, ranks, true);
                Ok(cmd)
            }
            JobLauncher::Srun { program, args } => {
                let files = |source| JobError::Files {
                    dir: dir.to_path_buf(),
                    source,
                };
                std::fs::create_dir_all(dir).map_err(files)?;
                let (progs, hostfile) = (dir.join("multi-prog.conf"), dir.join("hosts"));
                // Each line sets its rank's own variables through `env`.
                let lines: Vec<String> = (ranks.iter().enumerate())
                    .map(|(i, r)| {
                        let set = r.env.iter().map(|(k, v)| format!("{k}={v}"));
                        let words: Vec<String> = std::iter::once("env".to_string())
                            .chain(set)
                            .chain(r.argv.iter().cloned())
                            .collect();
                        format!("{i} {}", quoted(&words))
                    })
                    .collect();
                std::fs::write(&progs, lines.join("\n") + "\n").map_err(files)?;
                let hosts: Vec<&str> = ranks.iter().map(|r| r.host.as_str()).collect();
                std::fs::write(&hostfile, hosts.join("\n") + "\n").map_err(files)?;
                // srun reads each task's host for --distribution=arbitrary
                // from its own environment.
                let mut cmd = vec![
                    "env".to_string(),
                    format!("SLURM_HOSTFILE={}", hostfile.display()),
                    program.display().to_string(),
                ];
                cmd.extend(args.iter().cloned());
                cmd.extend([
                    "--overlap".to_string(),
                    format!("--ntasks={}", ranks.len()),
                    // The hosts are the host file's (a --nodelist too would
                    // be taken as one task per node).
                    "--distribution=arbitrary".to_string(),
                    "--multi-prog".to_string(),
                    progs.display().to_string(),
                ]);
                Ok(cmd)
            }
        }
    }
}

/// Hydra's MPMD form: consecutive ranks alike (command line, environment)
/// as one `-n K [-env K V]… ARGV` section, sections joined by `:`. With
/// `hosts`, the ranks' hosts in order (`-hosts a:2,b:1`: Hydra fills each
/// host's slots in turn; a section names no host of its own).
fn mpmd(cmd: &mut Vec<String>, ranks: &[JobRank], hosts: bool) {
    if hosts {
        let mut slots: Vec<(&str, usize)> = Vec::new();
        for r in ranks {
            match slots.last_mut() {
                Some((h, n)) if *h == r.host => *n += 1,
                _ => slots.push((&r.host, 1)),
            }
        }
        let list: Vec<String> = slots.iter().map(|(h, n)| format!("{h}:{n}")).collect();
        cmd.extend(["-hosts".to_string(), list.join(",")]);
    }
    let mut i = 0;
    while i < ranks.len() {
        let first = &ranks[i];
        let same = ranks[i..]
            .iter()
            .take_while(|r| r.argv == first.argv && r.env == first.env)
            .count();
        if i > 0 {
            cmd.push(":".into());
        }
        cmd.extend(["-n".to_string(), same.to_string()]);
        for (k, v) in &first.env {
            cmd.extend(["-env".to_string(), k.clone(), v.clone()]);
        }
        cmd.extend(first.argv.iter().cloned());
        i += same;
    }
}

/// A command line for srun's `--multi-prog` file: each word in double
/// quotes when it needs them.
fn quoted(argv: &[String]) -> String {
    let word = |w: &String| {
        if !w.is_empty() && !w.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            w.clone()
        } else {
            format!("\"{}\"", w.replace('"', "\\\""))
        }
    };
    argv.iter().map(word).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(host: &str, argv: &[&str]) -> JobRank {
        JobRank {
            host: host.into(),
            argv: argv.iter().map(ToString::to_string).collect(),
            env: vec![("LOCUS_NODE".into(), host.into())],
        }
    }

    #[test]
    fn hydra_gets_one_section_per_host_and_command_line() {
        let ranks = [
            rank("h1", &["sim", "/s1/o"]),
            rank("h1", &["sim", "/s1/o"]),
            rank("h2", &["sim", "/s2/o"]),
        ];
        let hydra = JobLauncher::Hydra {
            program: "mpiexec.mpich".into(),
            args: vec!["-launcher-exec".into(), "/x/ssh".into()],
        };
        let cmd = hydra.command(&ranks, Path::new("/tmp")).unwrap();
        assert_eq!(
            cmd.join(" "),
            "mpiexec.mpich -launcher-exec /x/ssh -hosts h1:2,h2:1 -n 2 -env LOCUS_NODE h1 sim /s1/o : \
             -n 1 -env LOCUS_NODE h2 sim /s2/o"
        );
    }

    #[test]
    fn srun_gets_a_multi_prog_file_and_each_ranks_host() {
        let dir = tempfile::tempdir().unwrap();
        let ranks = [rank("h1", &["sim", "a b"]), rank("h2", &["sim", "c"])];
        let srun = JobLauncher::Srun {
            program: "srun".into(),
            args: Vec::new(),
        };
        let cmd = srun.command(&ranks, dir.path()).unwrap();
        assert!(
            cmd.contains(&"--distribution=arbitrary".to_string()),
            "{cmd:?}"
        );
        assert!(cmd[1].starts_with("SLURM_HOSTFILE="), "{cmd:?}");
        let progs = std::fs::read_to_string(dir.path().join("multi-prog.conf")).unwrap();
        assert_eq!(
            progs,
            "0 env LOCUS_NODE=h1 sim \"a b\"\n1 env LOCUS_NODE=h2 sim c\n"
        );
        let hosts = std::fs::read_to_string(dir.path().join("hosts")).unwrap();
        assert_eq!(hosts, "h1\nh2\n");
    }
}
