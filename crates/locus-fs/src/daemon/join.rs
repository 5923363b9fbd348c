//! Forming a cluster from its daemons as they start, one per host of a job
//! (`locus fs serve --join DIR`, run by `srun --ntasks-per-node=1` or
//! `mpiexec -ppn 1`), as ad-hoc HPC file systems are deployed, or one per
//! node Locus emulates. Each daemon registers `{name, address, node
//! directory}` in `DIR/join/` (DIR is on the shared file system); when the
//! expected number have, the cluster file is written once, with the names
//! in natural order (`node2` before `node10`) as nodes 0..N-1, and every
//! daemon takes its node id from it. The secret is made once the same way.

use crate::cluster::{ClusterSpec, NodeInfo, CLUSTER_FILE, SECRET_FILE};
use crate::placement::Placement;
use crate::ring::DEFAULT_VNODES;
use crate::scope::Scope;
use locus_proto::auth::Secret;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const JOIN_DIR: &str = "join";

/// One daemon's registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Member {
    pub name: String,
    pub addr: SocketAddr,
    /// Its node directory, on the host's local storage.
    pub dir: PathBuf,
    pub pid: u32,
    /// The network namespace and cgroup of an emulated host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<PathBuf>,
}

/// The cluster the daemons form.
pub(crate) struct Form {
    /// How many daemons.
    pub expect: u32,
    pub placement: Placement,
    /// The nodes are hosts (not names emulated by one machine).
    pub hosts: bool,
    /// Copies of data and metadata (`ClusterSpec::replicas`).
    pub replicas: u32,
    /// Whose its stores are (`ClusterSpec::scope`).
    pub scope: Scope,
}

/// Names in natural order: runs of digits compare as numbers, so `node2`
/// comes before `node10` (and an emulated `nodeK` is node K).
pub(crate) fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    // Runs of text and numbers; a number by its length without leading
    // zeros, then its digits.
    fn key(s: &str) -> Vec<(bool, usize, &str)> {
        s.as_bytes()
            .chunk_by(|x, y| x.is_ascii_digit() == y.is_ascii_digit())
            .map(|r| {
                let run = std::str::from_utf8(r).expect("split next to ASCII digits");
                if r[0].is_ascii_digit() {
                    let n = run.trim_start_matches('0');
                    (false, n.len(), n)
                } else {
                    (true, 0, run)
                }
            })
            .collect()
    }
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

fn fail(msg: String) -> io::Error {
    io::Error::other(msg)
}

/// This host's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// How many daemons a launcher started, from its environment: Slurm's node
/// count, else the size of an MPI-style job (one daemon per host).
pub fn expected_from_env() -> Option<u32> {
    ["SLURM_NNODES", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.trim().parse().ok())
}

/// The address other hosts reach this one at: its first non-loopback IPv4
/// address (loopback on a host that has no other).
pub fn advertised_ip() -> IpAddr {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return IpAddr::V4(Ipv4Addr::LOCALHOST);
    }
    let mut found = None;
    let mut at = list;
    while !at.is_null() && found.is_none() {
        // SAFETY: `at` is a node of the list getifaddrs returned.
        let ifa = unsafe { &*at };
        let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
        let lo = ifa.ifa_flags & libc::IFF_LOOPBACK as u32 != 0;
        // SAFETY: a non-null address of family AF_INET is a sockaddr_in.
        let inet = !ifa.ifa_addr.is_null()
            && unsafe { (*ifa.ifa_addr).sa_family } == libc::AF_INET as libc::sa_family_t;
        if up && !lo && inet {
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            found = Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
        }
        at = ifa.ifa_next;
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    IpAddr::V4(found.unwrap_or(Ipv4Addr::LOCALHOST))
}

/// The node directory of host `name` in the cluster joined at `dir`, under
/// `store_root`: one per user, cluster and host (so hosts sharing a store
/// root, as emulated ones do, keep apart).
pub(crate) fn node_dir(store_root: &Path, dir: &Path, name: &str) -> PathBuf {
    let id = blake3::hash(dir.as_os_str().as_encoded_bytes()).to_hex();
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    store_root.join(format!("locus-{uid}-{}-{name}", &id[..12]))
}

/// Publishes `bytes` at `path` unless something already is there: a hard
/// link makes a complete file appear at once or fails if another won.
/// Returns whether this call made it.
pub fn write_once(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    write_once_with(path, |tmp| std::fs::write(tmp, bytes))
}

/// [`write_once`] of the file `write` makes at the temporary path it is given.
fn write_once_with(path: &Path, write: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<bool> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{:x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    if let Err(e) = write(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The secret in `dir`: made by whichever process comes first, read by the rest.
pub fn shared_secret(dir: &Path) -> io::Result<Secret> {
    let path = dir.join(SECRET_FILE);
    if let Ok(s) = Secret::load(&path) {
        return Ok(s);
    }
    write_once_with(&path, |tmp| Secret::generate().save(tmp))?;
    Secret::load(&path)
}

/// Registers `me` in the cluster directory `dir`. A host that joined
/// already, or one that comes after the cluster was formed, is an error; a
/// node of the formed cluster coming back after its daemon ended (a
/// restart) is not.
pub(crate) fn register(dir: &Path, me: &Member) -> io::Result<()> {
    crate::private_dir::create(&dir.join(JOIN_DIR))?;
    let path = dir.join(JOIN_DIR).join(format!("{}.json", me.name));
    let bytes = serde_json::to_vec_pretty(me).map_err(io::Error::other)?;
    let before = || -> Option<Member> { serde_json::from_slice(&std::fs::read(&path).ok()?).ok() };
    let twice = |other: Option<Member>| {
        fail(format!(
            "host {} already joined the cluster in {} (as {}); one daemon per host",
            me.name,
            dir.display(),
            other.map_or("another daemon".into(), |o| format!(
                "pid {} at {}",
                o.pid, o.addr
            ))
        ))
    };
    if let Ok(spec) = ClusterSpec::load(dir) {
        if spec.node_named(&me.name).is_none() {
            return Err(late(dir, &spec, &me.name));
        }
        let other = before();
        if other
            .as_ref()
            .is_some_and(|o| o.pid != me.pid && still_serving(o.pid))
        {
            return Err(twice(other));
        }
        let tmp = path.with_extension(format!("{}.tmp", me.pid));
        std::fs::write(&tmp, &bytes)?;
        return std::fs::rename(tmp, &path);
    }
    if !write_once(&path, &bytes)? {
        return Err(twice(before()));
    }
    Ok(())
}

/// Whether process `pid` here is still running this program (a daemon
/// that registered, not a process that reused its number).
fn still_serving(pid: u32) -> bool {
    let exe = |p: &str| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    exe(&pid.to_string()).is_some_and(|e| Some(e) == exe("self"))
}

fn late(dir: &Path, spec: &ClusterSpec, name: &str) -> io::Error {
    let names: Vec<&str> = spec.nodes.iter().map(|n| n.name.as_str()).collect();
    fail(format!(
        "the cluster in {} was formed with {} host(s) ({}); {name} is not one of them",
        dir.display(),
        names.len(),
        names.join(", ")
    ))
}

/// The names registered in `dir`, in natural order: one directory listing.
fn joined_names(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir.join(JOIN_DIR))? {
        let file = entry?.file_name();
        let file = file.to_string_lossy();
        if let Some(name) = file.strip_suffix(".json") {
            if !name.starts_with('.') {
                names.push(name.to_string());
            }
        }
    }
    names.sort_by(|a, b| natural_cmp(a, b));
    Ok(names)
}

fn member(dir: &Path, name: &str) -> io::Result<Member> {
    let path = dir.join(JOIN_DIR).join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path)?)
        .map_err(|e| fail(format!("{}: {e}", path.display())))
}

/// Waits until the daemons `form` expects joined `dir` and returns the
/// cluster they form. The first name in natural order writes the cluster
/// file, reading each registration once; the others list the directory and
/// read that one file, so forming a cluster of N costs O(N) file reads, not
/// N per daemon per poll (on a parallel file system, a metadata storm).
/// Polls back off from 2 ms to 50 ms.
pub(crate) fn wait_formed(
    dir: &Path,
    me: &str,
    form: &Form,
    timeout: Duration,
) -> io::Result<ClusterSpec> {
    let expect = form.expect as usize;
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        if let Ok(spec) = ClusterSpec::load(dir) {
            if spec.node_named(me).is_none() {
                return Err(late(dir, &spec, me));
            }
            return Ok(spec);
        }
        let names = joined_names(dir)?;
        if names.len() > expect {
            return Err(fail(format!(
                "{} hosts joined {} ({}), more than the {expect} expected",
                names.len(),
                dir.display(),
                names.join(", ")
            )));
        }
        if names.len() == expect && names[0] == me {
            let nodes = names
                .iter()
                .enumerate()
                .map(|(id, name)| {
                    let m = member(dir, name)?;
                    Ok(NodeInfo {
                        id: id as u32,
                        name: m.name,
                        addr: m.addr,
                        dir: m.dir,
                        netns: m.netns,
                        cgroup: m.cgroup,
                    })
                })
                .collect::<io::Result<Vec<NodeInfo>>>()?;
            let spec = ClusterSpec {
                nodes,
                vnodes: DEFAULT_VNODES,
                placement: form.placement,
                joined: form.hosts,
                replicas: form.replicas.max(1),
                scope: form.scope.clone(),
            };
            let bytes = serde_json::to_vec_pretty(&spec).map_err(io::Error::other)?;
            write_once(&dir.join(CLUSTER_FILE), &bytes)?;
            continue;
        }
        if Instant::now() > deadline {
            return Err(fail(if names.len() == expect {
                format!(
                    "all {expect} hosts joined {} but {} did not form the cluster within \
                     {timeout:?} (has its daemon died?)",
                    dir.display(),
                    names[0]
                )
            } else {
                format!(
                    "only {} of {expect} hosts joined {} within {timeout:?}: {}",
                    names.len(),
                    dir.display(),
                    names.join(", ")
                )
            }));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, port: u16) -> Member {
        Member {
            name: name.into(),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir: PathBuf::from(format!("/local/{name}")),
            pid: 1,
            netns: None,
            cgroup: None,
        }
    }

    fn form(expect: u32) -> Form {
        Form {
            expect,
            placement: Placement::Local,
            hosts: true,
            replicas: 1,
            scope: Scope::Kept,
        }
    }

    #[test]
    fn hosts_join_once_and_form_one_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        register(d, &member("hostB", 2)).unwrap();
        let e = wait_formed(d, "hostB", &form(2), Duration::from_millis(50)).unwrap_err();
        assert!(e.to_string().contains("only 1 of 2 hosts joined"), "{e}");
        let dup = register(d, &member("hostB", 3)).unwrap_err();
        assert!(
            dup.to_string().contains("host hostB already joined"),
            "{dup}"
        );
        register(d, &member("hostA", 1)).unwrap();
        // The first name forms it; the others wait for its cluster file.
        let e = wait_formed(d, "hostB", &form(2), Duration::ZERO).unwrap_err();
        assert!(
            e.to_string().contains("hostA did not form the cluster"),
            "{e}"
        );
        let spec = wait_formed(d, "hostA", &form(2), Duration::ZERO).unwrap();
        let names: Vec<_> = spec.nodes.iter().map(|n| (n.id, n.name.as_str())).collect();
        assert_eq!(names, [(0, "hostA"), (1, "hostB")]);
        assert_eq!(
            wait_formed(d, "hostB", &form(2), Duration::ZERO).unwrap(),
            spec
        );
        let late = register(d, &member("hostC", 4)).unwrap_err();
        assert!(
            late.to_string().contains("hostC is not one of them"),
            "{late}"
        );
        // A member coming back (restarted) rejoins as the node it was, but
        // not while the daemon that registered it still serves.
        let back = Member {
            pid: std::process::id(),
            ..member("hostA", 5)
        };
        register(d, &back).unwrap();
        assert_eq!(
            wait_formed(d, "hostA", &form(2), Duration::ZERO).unwrap(),
            spec
        );
        let second = register(d, &member("hostA", 6)).unwrap_err();
        assert!(
            second.to_string().contains("host hostA already joined"),
            "{second}"
        );
        // One secret, whoever asks first.
        shared_secret(d).unwrap();
        let first = std::fs::read(d.join(SECRET_FILE)).unwrap();
        shared_secret(d).unwrap();
        assert_eq!(std::fs::read(d.join(SECRET_FILE)).unwrap(), first);
    }

    #[test]
    fn names_number_nodes_in_natural_order() {
        let mut names = ["node10", "node2", "node0", "nid007", "nid10", "a", "node1"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            ["a", "nid007", "nid10", "node0", "node1", "node2", "node10"]
        );
        assert_eq!(natural_cmp("n01", "n1"), "n01".cmp("n1"));
    }

    #[test]
    fn this_host_has_a_name_and_an_address() {
        assert!(!hostname().is_empty());
        let ip = advertised_ip();
        assert!(ip.is_ipv4());
    }
}
