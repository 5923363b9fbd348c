//! `locus cluster up|down|status`: the emulated cluster (network namespaces
//! with shaped links) that runs and benchmarks use.

use crate::fs_ops::ClusterArgs;
use crate::local_cluster::DownArgs;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use locus_fs::{ClusterSpec, Durability};
use locus_launch::emulate::{self, Emulation, FsMode, Rate, UpOptions};
use locus_launch::{running_pid, Daemons};

#[derive(Subcommand)]
pub(crate) enum ClusterCommand {
    /// Create an emulated cluster: N node namespaces and a storage namespace
    /// on a bridge, each link shaped with tc tbf, a Locus daemon on every node
    /// and a central file system on the storage host. Needs root.
    Up(UpArgs),
    /// Remove everything `up` created: daemons, processes left in the
    /// namespaces, the namespaces and their links.
    Down(DownArgs),
    /// Show the cluster's hosts, links and daemons.
    Status(ClusterArgs),
}

#[derive(Args)]
pub(crate) struct UpArgs {
    /// Emulate the cluster on this machine (the only kind `up` makes).
    #[arg(long)]
    pub emulate: bool,
    /// Hosts (network namespaces) of the emulated cluster.
    #[arg(long, default_value_t = 4)]
    pub nodes: u32,
    /// Each node's link, both ways (tc units: 100mbit, 1gbit, 50mbps).
    #[arg(long, default_value = "1gbit")]
    pub link: Rate,
    /// The storage host's link (default: the node link).
    #[arg(long)]
    pub storage_link: Option<Rate>,
    /// Limit each host (node or storage) to this many CPUs' worth of time
    /// with a cgroup, as separate machines (default: no limit).
    #[arg(long)]
    pub host_cpus: Option<f64>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Metadata durability of the daemons: group (durable) or none.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
    #[command(flatten)]
    pub replicas: crate::local_cluster::Replicas,
}

pub(crate) fn run(c: ClusterCommand) -> Result<()> {
    match c {
        ClusterCommand::Up(a) => up(a),
        ClusterCommand::Down(a) => down(a),
        ClusterCommand::Status(a) => status(a),
    }
}

fn up(a: UpArgs) -> Result<()> {
    if !a.emulate {
        bail!("`locus cluster up` builds an emulated cluster on this machine: pass --emulate (for daemons on loopback only, use `locus fs up`)");
    }
    let o = UpOptions {
        nodes: a.nodes,
        link: a.link,
        storage_link: a.storage_link.unwrap_or(a.link),
        host_cpus: a.host_cpus,
        daemons: Daemons {
            program: crate::launched::program()?,
            durability: a.durability,
            replicas: a.replicas.count,
            with_launcher: false,
            upkeep: Default::default(),
        },
    };
    let e = emulate::up(&a.cluster.dir, &o)?;
    println!(
        "emulated cluster at {}: {} nodes at {} each, storage at {}{}",
        a.cluster.dir.display(),
        e.nodes.len(),
        e.link,
        e.storage_link,
        cpu_limit(&e)
    );
    Ok(())
}

fn down(a: DownArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    let r = emulate::down(dir)?;
    if a.purge {
        std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    println!(
        "emulated cluster at {}: {} daemon(s) stopped, {} other process(es) killed, {} namespace(s) removed",
        dir.display(),
        r.daemons,
        r.processes,
        r.namespaces
    );
    Ok(())
}

fn cpu_limit(e: &Emulation) -> String {
    e.host_cpus
        .map_or(String::new(), |c| format!("; {c} CPU(s) per host"))
}

fn status(a: ClusterArgs) -> Result<()> {
    let (dir, e) = Emulation::load(&a.dir)?;
    println!("cluster {} at {}{}", e.id, dir.display(), cpu_limit(&e));
    println!(
        "{:<8} {:<15} {:<10} {:<28} daemon",
        "host", "address", "link", "namespace"
    );
    let local = ClusterSpec::load(&Emulation::fs_dir(&dir, FsMode::Local))?;
    let central = ClusterSpec::load(&Emulation::fs_dir(&dir, FsMode::Central))?;
    let hosts = e.nodes.iter().map(|h| (h, e.link, &local));
    for (h, link, fs) in hosts.chain([(&e.storage, e.storage_link, &central)]) {
        let daemon =
            fs.node_named(&h.name)
                .map_or("-".to_string(), |n| match running_pid(&n.dir) {
                    Some(pid) => format!("{} pid {pid}", n.addr),
                    None => format!("{} down", n.addr),
                });
        println!(
            "{:<8} {:<15} {:<10} {:<28} {daemon}",
            h.name,
            h.addr.to_string(),
            link.to_string(),
            h.netns
        );
    }
    Ok(())
}
