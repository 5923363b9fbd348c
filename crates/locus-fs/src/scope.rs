//! Whose a node's store is. A file system deployed through a site launcher
//! belongs to the batch job that deployed it (unless kept): its stores go
//! when the job ends, however it ends — each daemon removes its own when
//! told to stop or terminated (`scancel`, a time limit), a daemon starting
//! on a host removes those whose daemons and jobs are gone, and an epilog's
//! `locus fs purge --job ID` those a SIGKILL left. Every store says whose
//! it is in its owner file, written by its daemon once it serves.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const OWNER_FILE: &str = "owner.json";
/// In a cluster's directory: a note per host whose store was removed
/// while its daemon was gone (or why it could not be).
const REMOVED_DIR: &str = "removed";
/// How long Slurm gets to say whether a job runs before a sweep keeps its
/// stores (a daemon's start must not wait on a slow controller).
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// Whose a cluster's stores are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Kept until removed (`locus fs down --purge`).
    #[default]
    Kept,
    /// The job that deployed it: a Slurm job by id, else the launch itself
    /// (its daemons' lifetime).
    Job {
        /// `SLURM_JOB_ID` of the job.
        slurm: Option<String>,
    },
}

impl Scope {
    /// The scope of a file system a site launcher deploys from this
    /// process: the Slurm job it runs in, or the launch; `Kept` if asked.
    pub fn deployed(keep: bool) -> Scope {
        if keep {
            return Scope::Kept;
        }
        Scope::Job {
            slurm: std::env::var("SLURM_JOB_ID")
                .ok()
                .filter(|id| !id.trim().is_empty()),
        }
    }

    /// Its stores go with its job.
    pub fn is_job(&self) -> bool {
        matches!(self, Scope::Job { .. })
    }

    /// The Slurm job it belongs to, if any.
    pub fn slurm_job(&self) -> Option<&str> {
        match self {
            Scope::Job { slurm } => slurm.as_deref(),
            Scope::Kept => None,
        }
    }
}

/// What a store says of its daemon and cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owner {
    scope: Scope,
    pid: u32,
    /// The daemon process's start time (`/proc/PID/stat`), so a reused pid
    /// is not taken for it.
    started: u64,
    cluster: PathBuf,
    /// The node's name in it.
    host: String,
}

/// Records in `node_dir` (made if need be) that this process serves it as
/// node `host` of the cluster in `cluster`, scoped `scope`; refused while
/// another daemon serves it.
pub(crate) fn claim(node_dir: &Path, cluster: &Path, host: &str, scope: &Scope) -> io::Result<()> {
    let pid = std::process::id();
    if let Some(other) = Owner::load(node_dir).filter(|o| o.pid != pid && o.serving()) {
        return Err(io::Error::other(format!(
            "{host}'s store {} is served by another daemon (pid {}); one daemon per host",
            node_dir.display(),
            other.pid
        )));
    }
    let owner = Owner {
        scope: scope.clone(),
        pid,
        started: started(pid).unwrap_or(0),
        cluster: cluster.to_path_buf(),
        host: host.to_string(),
    };
    crate::private_dir::create(node_dir)?;
    crate::whole::write_json(&node_dir.join(OWNER_FILE), &owner)
}

/// When process `pid` started (clock ticks after boot), if it runs.
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name: state is field 3, start time 22.
    let mut after = stat.rsplit_once(')')?.1.split_whitespace();
    if after.next()? == "Z" {
        return None;
    }
    after.nth(18)?.parse().ok()
}

impl Owner {
    fn load(node_dir: &Path) -> Option<Owner> {
        serde_json::from_slice(&std::fs::read(node_dir.join(OWNER_FILE)).ok()?).ok()
    }

    /// Its daemon still runs (the same process, not a reused pid).
    fn serving(&self) -> bool {
        started(self.pid).is_some_and(|s| s == self.started)
    }
}

/// Whether the store in `node_dir` is still served by its daemon (one
/// that does not say whose it is has none).
pub fn store_served(node_dir: &Path) -> bool {
    Owner::load(node_dir).is_some_and(|o| o.serving())
}

/// Why a node's store was not removed (kept in the cluster's directory as
/// a note, for the host that asked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum StoreKept {
    /// Its daemon still serves it.
    #[error("its daemon still serves {}", dir.display())]
    Served {
        /// The node's directory.
        dir: PathBuf,
    },
    /// The host asked to remove it holds no node of the cluster.
    #[error("{host} is not a host of the cluster")]
    NotAHost {
        /// That host's name.
        host: String,
    },
    /// Removing it failed.
    #[error("{}: {error}", dir.display())]
    Removing {
        /// The node's directory.
        dir: PathBuf,
        /// The error's text (a note outlives the error).
        error: String,
    },
}

/// Removes the store in `node_dir` unless its daemon still serves it (one
/// already gone counts as removed); why not, if it could not.
pub fn remove_store(node_dir: &Path) -> Result<(), StoreKept> {
    if store_served(node_dir) {
        let dir = node_dir.to_path_buf();
        return Err(StoreKept::Served { dir });
    }
    match std::fs::remove_dir_all(node_dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(StoreKept::Removing {
            dir: node_dir.to_path_buf(),
            error: e.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Whether a batch job is still running, as far as its scheduler says:
/// `None` when it cannot say.
pub trait Jobs {
    /// Asks about job `id`.
    fn running(&self, id: &str) -> Option<bool>;
}

/// Slurm, asked with `squeue` (the job this process runs in is running).
pub struct Slurm;

impl Jobs for Slurm {
    fn running(&self, id: &str) -> Option<bool> {
        if std::env::var("SLURM_JOB_ID").is_ok_and(|mine| mine == id) {
            return Some(true);
        }
        let mut child = Command::new("squeue")
            .args(["--noheader", "--format=%T", "--jobs", id])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + ASK_TIMEOUT;
        while child.try_wait().ok()?.is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().ok()?;
        let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).to_lowercase();
        if !out.status.success() {
            // A job the controller no longer knows ended long ago.
            return said(&out.stderr)
                .contains("invalid job id")
                .then_some(false);
        }
        let states = said(&out.stdout);
        // Listed while pending, running or suspended, and for a while after
        // it ends. Completing is ended here: its processes are being
        // killed, and a sweep looks only at stores whose daemons are gone.
        const ENDED: [&str; 10] = [
            "completing",
            "completed",
            "cancelled",
            "failed",
            "timeout",
            "node_fail",
            "preempted",
            "boot_fail",
            "deadline",
            "out_of_memory",
        ];
        Some(
            states
                .split_whitespace()
                .any(|s| !ENDED.contains(&s.trim_end_matches('+'))),
        )
    }
}

/// Which stores a sweep removes.
pub enum Sweep<'a> {
    /// This user's stores of job-scoped clusters whose daemons and jobs
    /// are gone (what a daemon starting on a host removes).
    Dead(&'a dyn Jobs),
    /// Every store of Slurm job `id` whose daemon is gone, whoever's (an
    /// epilog's `locus fs purge --job ID`).
    Job(&'a str),
}

/// A store a sweep found to remove.
#[derive(Debug)]
pub struct Swept {
    /// The store (a node directory).
    pub dir: PathBuf,
    /// The cluster directory it belonged to.
    pub cluster: PathBuf,
    /// Its bytes, counted before removing it.
    pub bytes: u64,
    /// Why it could not be removed.
    pub error: Option<io::Error>,
}

/// Removes the stores under `root` (node-local storage: `$TMPDIR`, `/tmp`,
/// a `--store`) that `which` names; never `except` (the caller's own).
pub fn sweep(root: &Path, which: Sweep, except: Option<&Path>) -> Vec<Swept> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let mine = format!("locus-{}-", unsafe { libc::getuid() });
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut asked: HashMap<String, Option<bool>> = HashMap::new();
    let mut swept = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let dir = entry.path();
        let ours = match &which {
            Sweep::Dead(_) => name.starts_with(&mine),
            Sweep::Job(_) => is_store_name(name),
        };
        if !ours || except == Some(dir.as_path()) || !owned_as_named(&dir, name) {
            continue;
        }
        let Some(owner) = Owner::load(&dir) else {
            continue;
        };
        if owner.serving() {
            continue;
        }
        let gone = match (&which, &owner.scope) {
            (_, Scope::Kept) => false,
            (Sweep::Job(id), scope) => scope.slurm_job() == Some(*id),
            (Sweep::Dead(_), Scope::Job { slurm: None }) => true,
            (Sweep::Dead(jobs), Scope::Job { slurm: Some(id) }) => {
                *asked.entry(id.clone()).or_insert_with(|| jobs.running(id)) == Some(false)
            }
        };
        if gone {
            let bytes = bytes_under(&dir);
            let error = std::fs::remove_dir_all(&dir).err();
            if error.is_none() {
                // Best effort: its cluster's directory may be gone too.
                let _ = note_removed(&owner.cluster, &owner.host, &Ok(()));
            }
            swept.push(Swept {
                dir,
                cluster: owner.cluster,
                bytes,
                error,
            });
        }
    }
    swept
}

/// Notes in the directory of the cluster in `cluster` (if it is still
/// there) that its store on `host` was removed, or why not: what `locus fs
/// down --purge` reads of stores on hosts it cannot reach itself.
pub fn note_removed(cluster: &Path, host: &str, done: &Result<(), StoreKept>) -> io::Result<()> {
    if !cluster.join(crate::cluster::CLUSTER_FILE).exists() {
        return Ok(());
    }
    let notes = cluster.join(REMOVED_DIR);
    crate::private_dir::create(&notes)?;
    crate::whole::write_json(&notes.join(format!("{host}.json")), done)
}

/// What was noted of the store on `host` of the cluster in `cluster`.
pub fn noted_removed(cluster: &Path, host: &str) -> Option<Result<(), StoreKept>> {
    let path = cluster.join(REMOVED_DIR).join(format!("{host}.json"));
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Forgets what was noted of the store on `host` (before asking again).
pub fn forget_removed(cluster: &Path, host: &str) {
    let _ = std::fs::remove_file(cluster.join(REMOVED_DIR).join(format!("{host}.json")));
}

/// A node directory's name as `join::node_dir` makes it:
/// `locus-UID-CLUSTER-HOST`.
fn is_store_name(name: &str) -> bool {
    let mut parts = name.splitn(4, '-');
    parts.next() == Some("locus")
        && parts
            .next()
            .is_some_and(|uid| !uid.is_empty() && uid.bytes().all(|b| b.is_ascii_digit()))
        && parts
            .next()
            .is_some_and(|id| id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        && parts.next().is_some_and(|host| !host.is_empty())
}

/// A real directory (not a link) owned by the user its name says: what
/// another user planted under that name is not looked into.
fn owned_as_named(dir: &Path, name: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let uid = name.split('-').nth(1).and_then(|u| u.parse::<u32>().ok());
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && Some(m.uid()) == uid)
}

fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scheduler that knows these jobs.
    struct Known(&'static [(&'static str, bool)]);

    impl Jobs for Known {
        fn running(&self, id: &str) -> Option<bool> {
            self.0.iter().find(|(j, _)| *j == id).map(|(_, r)| *r)
        }
    }

    /// A store under `root` for host `host`, owned by a process of `pid`
    /// (started when it says) in `scope`.
    fn store(root: &Path, host: &str, scope: Scope, pid: u32, started: u64) -> PathBuf {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let dir = root.join(format!("locus-{uid}-0123456789ab-{host}"));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(dir.join("data/f"), b"12345").unwrap();
        let owner = Owner {
            scope,
            pid,
            started,
            cluster: root.join(host),
            host: host.into(),
        };
        std::fs::write(dir.join(OWNER_FILE), serde_json::to_vec(&owner).unwrap()).unwrap();
        dir
    }

    fn job(id: &str) -> Scope {
        Scope::Job {
            slurm: Some(id.into()),
        }
    }

    #[test]
    fn a_sweep_removes_the_stores_whose_daemons_and_jobs_are_gone() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let me = std::process::id();
        let now = started(me).unwrap();
        // A dead daemon: a pid no process has (pid_max is below 2^22).
        let dead = 1 << 23;
        let ended = store(r, "ended", job("7"), dead, 1);
        let running = store(r, "running", job("8"), dead, 1);
        let unknown = store(r, "unknown", job("9"), dead, 1);
        let launch = store(r, "launch", Scope::Job { slurm: None }, dead, 1);
        let kept = store(r, "kept", Scope::Kept, dead, 1);
        let served = store(r, "served", job("7"), me, now);
        // This process's pid, but another process's start: pid reused.
        let reused = store(r, "reused", job("7"), me, now + 1);
        let own = store(r, "own", job("7"), dead, 1);
        // The ended store's cluster directory is still there: it is told.
        std::fs::create_dir(r.join("ended")).unwrap();
        std::fs::write(r.join("ended").join(crate::cluster::CLUSTER_FILE), b"{}").unwrap();
        let jobs = Known(&[("7", false), ("8", true)]);
        let swept = sweep(r, Sweep::Dead(&jobs), Some(&own));
        assert_eq!(noted_removed(&r.join("ended"), "ended"), Some(Ok(())));
        assert_eq!(noted_removed(&r.join("launch"), "launch"), None);
        let mut gone: Vec<&Path> = swept.iter().map(|s| s.dir.as_path()).collect();
        gone.sort();
        let mut want = [ended.as_path(), launch.as_path(), reused.as_path()];
        want.sort();
        assert_eq!(gone, want);
        assert!(swept.iter().all(|s| s.error.is_none() && s.bytes > 5));
        for d in want {
            assert!(!d.exists(), "{}", d.display());
        }
        for d in [&running, &unknown, &kept, &served, &own] {
            assert!(d.exists(), "{}", d.display());
        }
        assert!(store_served(&served) && !store_served(&running) && !store_served(r));

        // An epilog's purge of job 8: its stores whose daemons are gone.
        let other = store(r, "other", job("8"), me, now);
        let swept = sweep(r, Sweep::Job("8"), None);
        assert_eq!(swept.len(), 1);
        assert_eq!(swept[0].dir, running);
        assert!(!running.exists() && other.exists() && unknown.exists());
    }

    #[test]
    fn a_link_named_as_a_store_is_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let target = store(root.path(), "target", job("5"), 1 << 23, 1);
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let link = root.path().join(format!("locus-{uid}-abcdefabcdef-link"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let moved = elsewhere.path().join("t");
        std::fs::rename(&target, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &target).unwrap();
        assert!(sweep(root.path(), Sweep::Job("5"), None).is_empty());
        assert!(moved.join(OWNER_FILE).exists() && link.exists());
    }

    #[test]
    fn a_served_store_is_kept_saying_so_and_the_note_keeps_why() {
        let root = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let served = store(root.path(), "a", Scope::Kept, me, started(me).unwrap());
        let kept = remove_store(&served);
        assert_eq!(
            kept,
            Err(StoreKept::Served {
                dir: served.clone()
            })
        );
        let gone = store(root.path(), "b", Scope::Kept, 1 << 23, 1);
        assert_eq!(remove_store(&gone), Ok(()));
        assert!(!gone.exists());
        assert_eq!(
            remove_store(&gone),
            Ok(()),
            "one already gone counts as removed"
        );
        // Noted in the cluster's directory, read back as it was.
        let cluster = root.path().join("cluster");
        std::fs::create_dir(&cluster).unwrap();
        std::fs::write(cluster.join(crate::cluster::CLUSTER_FILE), "{}").unwrap();
        note_removed(&cluster, "a", &kept).unwrap();
        assert_eq!(noted_removed(&cluster, "a"), Some(kept));
        assert_eq!(noted_removed(&cluster, "b"), None);
    }

    #[test]
    fn only_store_names_are_looked_at() {
        assert!(is_store_name("locus-0-0123456789ab-node1"));
        assert!(is_store_name("locus-1000-abcdefabcdef-nid0-7"));
        for name in [
            "locus-run-42",
            "locus-0-xyz-node1",
            "locus-0-0123456789ab-",
            "locus",
        ] {
            assert!(!is_store_name(name), "{name}");
        }
    }

    #[test]
    fn a_deployment_belongs_to_the_job_it_is_made_in_unless_kept() {
        assert_eq!(Scope::deployed(true), Scope::Kept);
        assert!(Scope::deployed(false).is_job());
        let json = serde_json::to_string(&job("12")).unwrap();
        assert_eq!(json, r#"{"job":{"slurm":"12"}}"#);
        assert_eq!(
            serde_json::from_str::<Scope>(r#""kept""#).unwrap(),
            Scope::Kept
        );
    }
}
