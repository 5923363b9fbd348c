//! The emulated cluster: N nodes as network namespaces joined by a bridge in
//! a namespace of its own, each behind a `tc tbf`-shaped link, plus a storage
//! namespace standing in for a shared parallel file system. Two file systems
//! run on it: Locus over the nodes' daemons (`DIR/fs`) and a central one on
//! the storage namespace (`DIR/central`), so a benchmark compares both on
//! the same links.
//!
//! Everything it creates is named after the cluster's id and listed in
//! `DIR/emulation.json` before it is created, so `down` removes exactly
//! that, even after a failed `up`.

use crate::daemons::{self, Daemons};
use anyhow::{bail, Context, Result};
use locus_fs::{ClusterSpec, NodeInfo, Placement};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

/// The description of an emulated cluster, in its directory.
pub const EMULATION_FILE: &str = "emulation.json";
/// Most nodes one /24 holds beside the storage host.
const MAX_NODES: u32 = 250;
const STORAGE_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);

/// A link rate in bits per second, written as `tc` writes rates
/// (`100mbit`, `1gbit`, `50mbps` for bytes per second).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate(pub u64);

impl Rate {
    /// The rate in bytes per second.
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let bad = || format!("bad rate '{s}': expected a number and a unit, like 100mbit or 1gbit");
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, unit) = s.split_at(split);
        let num: f64 = num.parse().map_err(|_| bad())?;
        let mult = match unit.to_ascii_lowercase().as_str() {
            "bit" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            "bps" => 8.0,
            "kbps" => 8e3,
            "mbps" => 8e6,
            "gbps" => 8e9,
            _ => return Err(bad()),
        };
        let bits = (num * mult).round();
        if !(8_000.0..=100e9).contains(&bits) {
            return Err(format!("rate '{s}' is outside 8kbit..100gbit"));
        }
        Ok(Rate(bits as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.0 {
            b if b % 1_000_000_000 == 0 => write!(f, "{}gbit", b / 1_000_000_000),
            b if b % 1_000_000 == 0 => write!(f, "{}mbit", b / 1_000_000),
            b if b % 1_000 == 0 => write!(f, "{}kbit", b / 1_000),
            b => write!(f, "{b}bit"),
        }
    }
}

/// One emulated machine: its network namespace, address and, when the
/// cluster limits CPU, its cgroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// The host's name.
    pub name: String,
    /// Its network namespace.
    pub netns: String,
    /// Its address on the bridge.
    pub addr: Ipv4Addr,
    /// The cgroup limiting its CPU time, if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<PathBuf>,
}

/// `DIR/emulation.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Emulation {
    /// In every namespace name this cluster made: `locus-<id>-…`.
    pub id: String,
    /// The namespace holding the bridge every host is linked to.
    pub bridge_netns: String,
    /// The compute nodes.
    pub nodes: Vec<Host>,
    /// The storage host (a central store's daemon).
    pub storage: Host,
    /// Each node's link rate.
    pub link: Rate,
    /// The storage host's link rate.
    pub storage_link: Rate,
    /// CPUs' worth of time each host may use, if limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<f64>,
}

impl Host {
    /// Makes `cmd` start on this host: in its network namespace and cgroup.
    pub fn enter(&self, cmd: &mut Command) -> std::io::Result<()> {
        crate::netns::enter(cmd, &self.netns)?;
        match &self.cgroup {
            Some(cg) => crate::cgroup::join(cmd, cg),
            None => Ok(()),
        }
    }
}

/// Which file system a run on the emulation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsMode {
    /// Locus: a daemon on every node, data where it was written.
    Local,
    /// Every byte and all metadata on the storage host, across its link.
    Central,
}

impl std::str::FromStr for FsMode {
    type Err = String;
    fn from_str(s: &str) -> Result<FsMode, String> {
        match s {
            "local" => Ok(FsMode::Local),
            "central" => Ok(FsMode::Central),
            _ => Err(format!("'{s}': expected local or central")),
        }
    }
}

/// An emulated cluster to make.
pub struct UpOptions {
    /// Compute nodes (one namespace each).
    pub nodes: u32,
    /// Each node's link to the bridge.
    pub link: Rate,
    /// The storage host's link to the bridge.
    pub storage_link: Rate,
    /// Limit each host (node or storage) to this many CPUs' worth of time,
    /// so idle hosts do not lend their cores to busy ones.
    pub host_cpus: Option<f64>,
    /// How the file system's daemons are started in the nodes.
    pub daemons: Daemons,
}

/// Runs `ip`/`tc` with `args`; a failure carries the command and its stderr.
fn sh(prog: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(prog)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {prog} (install iproute2)"))?;
    if !out.status.success() {
        bail!(
            "{prog} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!("an emulated cluster needs root (it creates network namespaces); run it as root or with sudo");
    }
    Ok(())
}

/// Shapes egress of `dev` in `netns` to `rate`. The bucket holds 10 ms of
/// traffic (at least 64 KiB, so full-size GSO packets pass whole).
fn shape(netns: &str, dev: &str, rate: Rate) -> Result<()> {
    let burst = ((rate.0 / 8 / 100).max(64 << 10)).to_string();
    let rate = format!("{}bit", rate.0);
    sh(
        "tc",
        &[
            "-n", netns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst", &burst,
            "latency", "100ms",
        ],
    )
}

/// Joins `host` to the bridge through a veth pair (`eth0` on its side,
/// `port` on the bridge's), shaped both ways to `rate`.
fn attach(e: &Emulation, host: &Host, port: &str, rate: Rate) -> Result<()> {
    let (ns, br) = (host.netns.as_str(), e.bridge_netns.as_str());
    sh("ip", &["netns", "add", ns])?;
    sh(
        "ip",
        &[
            "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", br,
        ],
    )?;
    sh("ip", &["-n", br, "link", "set", port, "master", "br0"])?;
    sh("ip", &["-n", br, "link", "set", port, "up"])?;
    let cidr = format!("{}/24", host.addr);
    sh("ip", &["-n", ns, "addr", "add", &cidr, "dev", "eth0"])?;
    sh("ip", &["-n", ns, "link", "set", "eth0", "up"])?;
    sh("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    shape(ns, "eth0", rate)?;
    shape(br, port, rate)
}

impl Emulation {
    /// Reads `DIR/emulation.json`; `at` may also name the file itself.
    pub fn load(at: &Path) -> Result<(PathBuf, Emulation)> {
        let (dir, file) = if at.is_dir() {
            (at.to_path_buf(), at.join(EMULATION_FILE))
        } else {
            let dir = at.parent().unwrap_or(Path::new(".")).to_path_buf();
            (dir, at.to_path_buf())
        };
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "no emulated cluster at {} (start one with `locus cluster up --emulate`)",
                file.display()
            )
        })?;
        let e = serde_json::from_str(&text).with_context(|| file.display().to_string())?;
        Ok((dir, e))
    }

    fn save(&self, dir: &Path) -> Result<()> {
        let tmp = dir.join(format!("{EMULATION_FILE}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, dir.join(EMULATION_FILE))?;
        Ok(())
    }

    /// The directory of the file system `mode` on the cluster in `dir`.
    pub fn fs_dir(dir: &Path, mode: FsMode) -> PathBuf {
        dir.join(match mode {
            FsMode::Local => "fs",
            FsMode::Central => "central",
        })
    }

    /// Where a run's ranks go on the cluster in `dir` using file system
    /// `mode`: on the node hosts; that file system's directory; and whether
    /// the workers use it over the network (the central store has no
    /// daemon on any node).
    pub fn run_on(&self, dir: &Path, mode: FsMode) -> (crate::ranks::On, PathBuf, bool) {
        (
            crate::ranks::On::Emulated(self.nodes.clone()),
            Emulation::fs_dir(dir, mode),
            mode == FsMode::Central,
        )
    }

    /// The nodes, then the storage host.
    pub fn hosts(&self) -> impl Iterator<Item = &Host> {
        self.nodes.iter().chain([&self.storage])
    }

    fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.hosts()
            .map(|h| h.netns.as_str())
            .chain([self.bridge_netns.as_str()])
    }
}

/// Creates the emulated cluster in the new directory `dir` and starts both
/// file systems on it. On failure, whatever was made is removed again.
pub fn up(dir: &Path, o: &UpOptions) -> Result<Emulation> {
    require_root()?;
    if o.nodes == 0 || o.nodes > MAX_NODES {
        bail!("the number of nodes must be between 1 and {MAX_NODES}");
    }
    if dir.join(EMULATION_FILE).exists() {
        bail!(
            "{}: an emulated cluster already exists there",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let id = format!("{:08x}", rand::random::<u32>());
    let host = |name: String, addr| Host {
        netns: format!("locus-{id}-{name}"),
        cgroup: o
            .host_cpus
            .map(|_| crate::cgroup::path(&format!("locus-{id}-{name}"))),
        name,
        addr,
    };
    let e = Emulation {
        bridge_netns: format!("locus-{id}-bridge"),
        nodes: (0..o.nodes)
            .map(|k| host(format!("node{k}"), Ipv4Addr::new(10, 0, 0, k as u8 + 1)))
            .collect(),
        storage: host("storage".into(), STORAGE_ADDR),
        id,
        link: o.link,
        storage_link: o.storage_link,
        host_cpus: o.host_cpus,
    };
    e.save(dir)?;
    if let Err(err) = build(dir, &e, &o.daemons) {
        let _ = down(dir);
        return Err(err);
    }
    Ok(e)
}

fn build(dir: &Path, e: &Emulation, daemons: &Daemons) -> Result<()> {
    let br = e.bridge_netns.as_str();
    sh("ip", &["netns", "add", br])?;
    sh("ip", &["-n", br, "link", "add", "br0", "type", "bridge"])?;
    sh("ip", &["-n", br, "link", "set", "br0", "up"])?;
    for (k, h) in e.nodes.iter().enumerate() {
        attach(e, h, &format!("n{k}"), e.link)?;
    }
    attach(e, &e.storage, "storage", e.storage_link)?;
    if let Some(cpus) = e.host_cpus {
        for cg in e.hosts().filter_map(|h| h.cgroup.as_deref()) {
            crate::cgroup::create(cg, cpus).context("limiting a host's CPU")?;
        }
    }
    let node = |id: usize, h: &Host, fs: &Path| NodeInfo {
        id: id as u32,
        name: h.name.clone(),
        addr: SocketAddr::from((h.addr, 0)),
        dir: daemons::node_dir(fs, id as u32),
        netns: Some(h.netns.clone()),
        cgroup: h.cgroup.clone(),
    };
    let fs = Emulation::fs_dir(dir, FsMode::Local);
    let nodes = e.nodes.iter().enumerate().map(|(k, h)| node(k, h, &fs));
    daemons
        .create_nodes(&fs, nodes.collect(), Placement::Local)
        .context("starting the nodes' daemons")?;
    let central = Emulation::fs_dir(dir, FsMode::Central);
    daemons
        .create_nodes(
            &central,
            vec![node(0, &e.storage, &central)],
            Placement::Local,
        )
        .context("starting the storage daemon")?;
    Ok(())
}

/// What `down` removed.
pub struct Removed {
    /// File-system daemons stopped.
    pub daemons: usize,
    /// Other processes in the namespaces stopped.
    pub processes: usize,
    /// Network namespaces deleted.
    pub namespaces: usize,
}

/// Stops the daemons and every process left in the cluster's namespaces,
/// then deletes the namespaces (their links go with them).
pub fn down(dir: &Path) -> Result<Removed> {
    require_root()?;
    let (dir, e) = Emulation::load(dir)?;
    let mut removed = Removed {
        daemons: 0,
        processes: 0,
        namespaces: 0,
    };
    for mode in [FsMode::Local, FsMode::Central] {
        let fs = Emulation::fs_dir(&dir, mode);
        if ClusterSpec::load(&fs).is_ok() {
            removed.daemons += daemons::stop(&fs, false)?.daemons;
        }
    }
    for ns in e.namespaces() {
        if !crate::netns::path(ns).exists() {
            continue;
        }
        removed.processes += kill_all_in(ns);
        sh("ip", &["netns", "del", ns])?;
        removed.namespaces += 1;
    }
    for cg in e.hosts().filter_map(|h| h.cgroup.as_deref()) {
        crate::cgroup::remove(cg).with_context(|| format!("removing {}", cg.display()))?;
    }
    Ok(removed)
}

/// Kills the processes still inside namespace `ns` (ranks of an interrupted
/// run): they run there only because this cluster put them there.
fn kill_all_in(ns: &str) -> usize {
    let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() else {
        return 0;
    };
    let pids: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    for &pid in &pids {
        // SAFETY: a plain signal to a process inside this cluster's namespace.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_tc_writes_them() {
        assert_eq!("100mbit".parse(), Ok(Rate(100_000_000)));
        assert_eq!("1gbit".parse(), Ok(Rate(1_000_000_000)));
        assert_eq!("2.5Gbit".parse(), Ok(Rate(2_500_000_000)));
        assert_eq!("10mbps".parse(), Ok(Rate(80_000_000)));
        assert_eq!(Rate(100_000_000).to_string(), "100mbit");
        assert_eq!(Rate(2_500_000_000).to_string(), "2500mbit");
        for bad in ["", "100", "mbit", "1.2.3mbit", "5furlongs", "1bit"] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }
}
