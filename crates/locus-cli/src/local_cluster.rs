//! Starting, stopping and inspecting daemons: `locus fs serve|up|down|status`.

use crate::fs_ops::{ClientArgs, ClusterArgs};
use anyhow::{bail, Context, Result};
use clap::Args;

use locus_fs::{
    made_by_note, sweep, Client, ClientOptions, ClusterSpec, Durability, Jobs, JoinConfig,
    NodeInfo, Placement, Scope, ServeConfig, Slurm, Sweep, Upkeep, CLUSTER_FILE,
};
use locus_launch::site::{self, Deploy, Site, SiteLauncher};
use locus_launch::{daemons, running_pid, Daemons};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Join the cluster being formed in DIR (on the shared file system),
    /// one daemon per host as a site launcher starts them; the cluster forms
    /// when --expect daemons (or the launcher's node count) have joined.
    #[arg(long, value_name = "DIR")]
    pub join: PathBuf,
    /// How many daemons form the cluster (default: the launcher's
    /// SLURM_NNODES, PMI_SIZE or OMPI_COMM_WORLD_SIZE).
    #[arg(long)]
    pub expect: Option<u32>,
    /// Node-local storage for this host's store and metadata (default:
    /// $TMPDIR, else /tmp).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// This host's name in the cluster (default: its hostname).
    #[arg(long)]
    pub name: Option<String>,
    /// The address other hosts reach this one at (default: its first
    /// non-loopback IPv4 address).
    #[arg(long)]
    pub advertise: Option<std::net::IpAddr>,
    /// Mount the cluster here once it is formed, until this daemon stops
    /// (FUSE).
    #[arg(long)]
    pub mount: Option<PathBuf>,
    /// Default placement of new files in the cluster: local, hash or
    /// round-robin.
    #[arg(long, default_value = "local")]
    pub placement: Placement,
    /// Address to listen on (port 0 picks a free port; default: every
    /// interface).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// group: every acknowledged metadata change is on disk; none: not flushed.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
    #[command(flatten)]
    pub replicas: Replicas,
    #[command(flatten)]
    pub upkeep: UpkeepArgs,
    /// Write the bound address here once serving.
    #[arg(long)]
    pub addr_file: Option<PathBuf>,
    /// Started by a launcher (in a batch job): keep the cluster's stores
    /// past the job instead of removing them when it ends.
    #[arg(long)]
    pub keep: bool,
}

/// How many copies a cluster keeps.
#[derive(Args, Clone, Copy)]
pub(crate) struct Replicas {
    /// Copies of every file's data and metadata, each on another node:
    /// losing up to R-1 nodes' daemons loses nothing. Fixed when the
    /// cluster forms (the same on every host).
    #[arg(id = "replicas", long = "replicas", value_name = "R", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=16))]
    pub count: u32,
}

pub(crate) fn serve(a: ServeArgs) -> Result<()> {
    crate::mount::serve_daemon(ServeConfig {
        join: JoinConfig {
            expect: a.expect,
            store: a.store,
            name: a.name,
            advertise: a.advertise,
            mount: a.mount,
            placement: a.placement,
            replicas: a.replicas.count,
            scope: match locus_fs::expected_from_env() {
                Some(_) => Scope::deployed(a.keep),
                None => Scope::Kept,
            },
            ..JoinConfig::new(a.join)
        },
        listen: a.listen,
        durability: a.durability,
        addr_file: a.addr_file,
        upkeep: a.upkeep.upkeep(),
    })
}

/// How each daemon looks after its store in the background.
#[derive(Args, Clone, Copy)]
pub(crate) struct UpkeepArgs {
    /// Seconds between a daemon's looks for copies in its store that no
    /// record names (they are dropped); 0: never.
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub scan_orphans_every: u64,
    /// Only copies put in place at least this many seconds ago are dropped
    /// by those looks.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub orphans_older_than: u64,
    /// Seconds between a daemon's scrubs of its store (every copy read and
    /// checked, bad ones made again from a good one); 0: never.
    #[arg(long, value_name = "SECS", default_value_t = 86_400)]
    pub scrub_every: u64,
    /// MB a second a daemon's scrub reads at most (0: unbounded).
    #[arg(long, value_name = "MB/s", default_value_t = 100)]
    pub scrub_rate: u64,
}

impl UpkeepArgs {
    fn upkeep(&self) -> Upkeep {
        Upkeep {
            orphans_every: Duration::from_secs(self.scan_orphans_every),
            orphans_older_than: Duration::from_secs(self.orphans_older_than),
            scrub_every: Duration::from_secs(self.scrub_every),
            scrub_rate: self.scrub_rate * 1_000_000,
        }
    }
}

/// A site launcher to start processes on the hosts of a job.
#[derive(Args)]
pub(crate) struct LauncherArgs {
    /// The site's launcher: srun (Slurm) or mpiexec (MPI).
    #[arg(long, value_name = "srun|mpiexec")]
    pub launcher: Option<SiteLauncher>,
    /// With --launcher: the launcher program (default: srun or mpiexec).
    #[arg(long, requires = "launcher")]
    pub launcher_program: Option<PathBuf>,
    /// With --launcher: one more argument for the launcher, before the
    /// command (repeat it: `--launcher-arg=-hosts --launcher-arg=a,b`).
    #[arg(long, requires = "launcher", allow_hyphen_values = true)]
    pub launcher_arg: Vec<String>,
}

impl LauncherArgs {
    pub(crate) fn site(&self) -> Option<Site> {
        Some(Site {
            launcher: self.launcher?,
            program: self.launcher_program.clone(),
            args: self.launcher_arg.clone(),
        })
    }
}

#[derive(Args)]
pub(crate) struct UpArgs {
    /// Number of nodes to emulate (for a new cluster); with --launcher, the
    /// number of hosts (default for srun: the allocation's nodes).
    #[arg(long)]
    pub nodes: Option<u32>,
    /// Start one daemon per host of a job through the site's launcher
    /// (instead of emulating nodes on this machine).
    #[command(flatten)]
    pub site: LauncherArgs,
    /// With --launcher: node-local storage on every host (default: its
    /// $TMPDIR, else /tmp).
    #[arg(long, requires = "launcher")]
    pub store: Option<PathBuf>,
    /// With --launcher: every host mounts the cluster here while its daemon
    /// runs (the same path on every host; FUSE).
    #[arg(long, requires = "launcher")]
    pub mount: Option<PathBuf>,
    /// With --launcher: keep the stores past the job. Without it they are
    /// the job's: removed when the daemons stop, however the job ends.
    #[arg(long, requires = "launcher")]
    pub keep: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Default placement of new files: local, hash or round-robin.
    #[arg(long, default_value = "local")]
    pub placement: Placement,
    /// Metadata durability: group (fsync per group commit) or none.
    #[arg(long, default_value = "group")]
    pub durability: Durability,
    #[command(flatten)]
    pub replicas: Replicas,
    /// For the daemons it starts.
    #[command(flatten)]
    pub upkeep: UpkeepArgs,
}

pub(crate) fn up(a: UpArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    let daemons = Daemons {
        program: crate::launched::program()?,
        durability: a.durability,
        replicas: a.replicas.count,
        with_launcher: false,
        upkeep: a.upkeep.upkeep(),
    };
    if dir.join(CLUSTER_FILE).exists() {
        let spec = ClusterSpec::load(dir)?;
        if let Some(job) = spec.scope.slurm_job() {
            if Slurm.running(job) == Some(false) {
                bail!(
                    "the file system in {} belonged to Slurm job {job}, which has ended, and its \
                     stores went with it: remove it (`locus fs down --dir {0} --purge`) and start \
                     a new one (with --keep to keep one past its job)",
                    dir.display()
                );
            }
        }
        if spec.joined {
            return redeploy(dir, &spec, a.site.site(), daemons.program.as_ref());
        }
        let (spec, restarted) = daemons.restart_stopped(dir)?;
        println!(
            "cluster at {}: {} nodes, {restarted} daemon(s) restarted",
            dir.display(),
            spec.nodes.len()
        );
        return Ok(());
    }
    let spec = match a.site.site() {
        // The launcher runs on with the daemons; `fs down` stops both.
        Some(site) => {
            site::deploy(
                daemons.program.as_ref(),
                Deploy {
                    dir,
                    site,
                    hosts: a.nodes,
                    store: a.store.clone(),
                    durability: a.durability,
                    mount: a.mount.clone(),
                    placement: a.placement,
                    replicas: a.replicas.count,
                    upkeep: a.upkeep.upkeep(),
                    scope: Scope::deployed(a.keep),
                },
            )?
            .0
        }
        None => daemons.create(dir, a.nodes.unwrap_or(4), a.placement)?,
    };
    println!(
        "cluster at {}: {} nodes up",
        dir.display(),
        spec.nodes.len()
    );
    for n in &spec.nodes {
        println!("  node {} {} {}", n.id, n.name, n.addr);
    }
    Ok(())
}

/// `fs up` on a file system deployed on a job's hosts: its stopped daemons
/// started again through the launcher (given, or the one it was deployed
/// with), each on its own host.
fn redeploy(
    dir: &Path,
    spec: &ClusterSpec,
    given: Option<Site>,
    program: &dyn locus_launch::Program,
) -> Result<()> {
    let serving = locus_launch::serving(dir)?;
    let stopped: Vec<NodeInfo> = (spec.nodes.iter())
        .filter(|n| !serving.contains(&n.id))
        .cloned()
        .collect();
    if !stopped.is_empty() {
        let site = given.or_else(|| site::recorded(dir)).with_context(|| {
            format!(
                "the file system in {} runs on a job's hosts: give the launcher that reaches \
                 them (--launcher srun|mpiexec)",
                dir.display()
            )
        })?;
        // The launcher runs on with the daemons; `fs down` stops both.
        drop(site::redeploy(program, dir, &site, &stopped)?);
    }
    println!(
        "cluster at {}: {} nodes, {} daemon(s) restarted on their hosts",
        dir.display(),
        spec.nodes.len(),
        stopped.len()
    );
    Ok(())
}

#[derive(Args)]
pub(crate) struct DownArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Also remove the stores and the cluster's directory (all its data;
    /// a file system deployed for a job without --keep is always removed).
    #[arg(long)]
    pub purge: bool,
}

pub(crate) fn down(a: DownArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    let job = ClusterSpec::load(dir)?.scope.is_job();
    if !(a.purge || job) {
        let stopped = daemons::stop(dir, false)?;
        println!(
            "cluster at {}: {} daemon(s) stopped",
            dir.display(),
            stopped.daemons
        );
        return Ok(());
    }
    let (stopped, left) = site::take_down(crate::launched::program()?.as_ref(), dir)?;
    println!("cluster at {}: {stopped} daemon(s) stopped", dir.display());
    if !left.is_empty() {
        let each: Vec<String> = left
            .iter()
            .map(|(n, why)| format!("{} on {} ({why})", n.dir.display(), n.name))
            .collect();
        bail!(
            "{} store(s) not removed, so {} is kept: {}; `locus fs purge --job ID` on a host \
             removes a job's stores there (e.g. in the job's epilog)",
            left.len(),
            dir.display(),
            each.join("; ")
        );
    }
    std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    println!(
        "stores removed{}",
        if a.purge {
            ""
        } else {
            " (the file system was its job's: deploy with --keep to keep one)"
        }
    );
    Ok(())
}

#[derive(Args)]
pub(crate) struct PurgeArgs {
    /// The stores of this Slurm job, whoever's (for a job's epilog);
    /// without it, this user's stores whose daemons and jobs are gone.
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    /// The node-local storage holding the stores (default: $TMPDIR, else
    /// /tmp).
    #[arg(long)]
    pub store: Option<PathBuf>,
}

/// Removes this host's stores a job left: `locus fs purge`.
pub(crate) fn purge(a: PurgeArgs) -> Result<()> {
    let root = a.store.unwrap_or_else(std::env::temp_dir);
    let which = match &a.job {
        Some(id) => Sweep::Job(id),
        None => Sweep::Dead(&Slurm),
    };
    let swept = sweep(&root, which, None);
    let mut failed = Vec::new();
    for s in &swept {
        match &s.error {
            None => println!(
                "removed {} ({} bytes, of {})",
                s.dir.display(),
                s.bytes,
                s.cluster.display()
            ),
            Some(e) => failed.push(format!("{}: {e}", s.dir.display())),
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} store(s) not removed: {}",
            failed.len(),
            failed.join("; ")
        );
    }
    println!("{} store(s) removed from {}", swept.len(), root.display());
    Ok(())
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).multiple(true)))]
pub(crate) struct RepairArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// The node whose metadata store is damaged or lost (its daemon stopped).
    #[arg(long, group = "what")]
    pub node: Option<u32>,
    /// Drop the copies no record names (left by writes that failed half
    /// way, or versions replaced while a daemon was down).
    #[arg(long, group = "what")]
    pub orphans: bool,
    /// With --orphans: only copies stored at least this many seconds ago
    /// (a write in progress names its copy within its lease).
    #[arg(long, default_value_t = 600, requires = "orphans")]
    pub older_than: u64,
}

pub(crate) fn repair(a: RepairArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    if let Some(node) = a.node {
        rebuild(dir, node)?;
    }
    if a.orphans {
        let client = ClientArgs::of(a.cluster.clone()).client()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let min_age = Duration::from_secs(a.older_than);
        let done = rt.block_on(client.reclaim_orphans(min_age))?;
        println!(
            "orphans: {} copies looked at, {} dropped ({} bytes); {} names without a record \
             removed; {} kept whose record could not be read",
            done.checked, done.dropped, done.bytes, done.names, done.unsure
        );
        if !done.unread.is_empty() {
            let nodes: Vec<String> = done
                .unread
                .iter()
                .map(std::string::ToString::to_string)
                .collect();
            println!("not looked at: the stores of node(s) {}", nodes.join(", "));
        }
    }
    Ok(())
}

#[derive(Args)]
pub(crate) struct ScrubArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Only this node's store (default: every node's store on this host).
    #[arg(long)]
    pub node: Option<u32>,
    /// Read at most this many MB a second per node (default: as fast as
    /// the disk goes).
    #[arg(long, value_name = "MB/s")]
    pub rate: Option<u64>,
}

pub(crate) fn scrub(a: ScrubArgs) -> Result<()> {
    let dir = &a.cluster.dir;
    let spec = ClusterSpec::load(dir)?;
    let nodes: Vec<u32> = match a.node {
        Some(n) if n as usize >= spec.nodes.len() => {
            bail!("no node {n} (the cluster has {})", spec.nodes.len())
        }
        Some(n) => vec![n],
        None => (0..spec.nodes.len() as u32).collect(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut lost = 0;
    for n in nodes {
        let node_dir = &spec.nodes[n as usize].dir;
        if !node_dir.exists() {
            println!(
                "node {n}: its store ({}) is not on this host: run `locus fs scrub --node {n}` on its host",
                node_dir.display()
            );
            continue;
        }
        let opts = ClientOptions {
            node: n,
            ..Default::default()
        };
        let client = Client::open_loaded(dir, &spec, opts)?;
        let done = rt.block_on(client.scrub(a.rate.map(|r| r * 1_000_000)))?;
        println!(
            "node {n}: {} copies checked ({} bytes), {} repaired, {} with no good copy left, {} not \
             checked (their record could not be read)",
            done.checked,
            done.bytes,
            done.repaired.len(),
            done.lost.len(),
            done.unsure
        );
        for (path, why) in &done.repaired {
            println!("  repaired {path}: {why}");
        }
        for l in &done.lost {
            println!(
                "  lost {}: {}, and no other node holds a good copy{}",
                l.path,
                l.why,
                made_by_note(l.made_by.as_deref())
            );
        }
        lost += done.lost.len();
    }
    if lost > 0 {
        bail!("{lost} file(s) with no good copy left (listed above)");
    }
    Ok(())
}

/// Sets node `n`'s damaged metadata store aside and starts its daemon
/// empty: with replicas it takes its keys back from them as it starts;
/// without, its records and names are made again from the stored copies.
fn rebuild(dir: &std::path::Path, n: u32) -> Result<()> {
    let spec = ClusterSpec::load(dir)?;
    let Some(node) = spec.nodes.get(n as usize) else {
        bail!("no node {n} (the cluster has {})", spec.nodes.len());
    };
    if let Some(pid) = running_pid(&node.dir) {
        bail!("node {n}'s daemon runs (pid {pid}): repair is for a node whose daemon cannot start");
    }
    let meta = node.dir.join(locus_fs::META_FILE);
    if meta.exists() {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let aside = node
            .dir
            .join(format!("{}.damaged-{secs}", locus_fs::META_FILE));
        std::fs::rename(&meta, &aside).with_context(|| meta.display().to_string())?;
        println!("node {}: its metadata store kept as {}", n, aside.display());
    }
    let marker = node.dir.join(locus_fs::META_REBUILD);
    std::fs::write(&marker, b"").with_context(|| marker.display().to_string())?;
    let daemons = Daemons {
        program: crate::launched::program()?,
        durability: Durability::Group,
        replicas: spec.replicas,
        with_launcher: false,
        upkeep: Default::default(),
    };
    daemons.restart_stopped(dir)?;
    if spec.replicas > 1 {
        std::fs::remove_file(&marker)?;
        println!("node {n}: its keys taken back from its replicas as it started");
        return Ok(());
    }
    let client = Client::open(dir, ClientOptions::default())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let done = rt.block_on(client.rebuild(n))?;
    std::fs::remove_file(&marker)?;
    println!(
        "node {}: made again from {} stored copies: {} file record(s), {} director(ies), {} name(s)",
        n, done.copies, done.files, done.dirs, done.names
    );
    if !done.unread.is_empty() {
        let nodes: Vec<String> = done
            .unread
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        println!(
            "not recovered: what only node(s) {} hold (their stores could not be read); \
             run `locus fs repair --node {}` again once they serve",
            nodes.join(", "),
            n
        );
    }
    println!(
        "not recovered: names of files whose bytes no node holds, and modes and times \
         set after writing (files come back 0644 with their copy's time)"
    );
    Ok(())
}

pub(crate) fn status(a: ClusterArgs) -> Result<()> {
    let spec = ClusterSpec::load(&a.dir)?;
    let client = ClientArgs::of(a.clone()).client()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:>4} {:<8} {:<21} {:>8} {:<5} {:>9} {:>9} {:>12} {:>9}",
        "node", "name", "address", "pid", "state", "records", "files", "bytes", "stats"
    )?;
    let (mut down, mut unanswered) = (0, 0);
    let mut scrubs = Vec::new();
    for n in &spec.nodes {
        let status = rt.block_on(client.status(n.id));
        if let Ok(Some(report)) = status.as_ref().map(|s| s.last_scrub.clone()) {
            scrubs.push((n.id, report));
        }
        // The daemon says its pid (it may run on another host).
        let pid = match &status {
            Ok(s) => s.pid.to_string(),
            Err(_) => running_pid(&n.dir).map_or("-".to_string(), |p| p.to_string()),
        };
        let head = format!(
            "{:>4} {:<8} {:<21} {:>8}",
            n.id,
            n.name,
            n.addr.to_string(),
            pid
        );
        match status {
            Ok(s) => match s.meta_error {
                Some(why) => {
                    down += 1;
                    writeln!(out, "{head} degraded  metadata store failing: {why}")?;
                }
                None => writeln!(
                    out,
                    "{head} {:<5} {:>9} {:>9} {:>12} {:>9}",
                    "up", s.records, s.stored_files, s.stored_bytes, s.stats_answered
                )?,
            },
            Err(e) => {
                down += 1;
                unanswered += 1;
                writeln!(out, "{head} down  {e}")?;
            }
        }
    }
    let now = locus_fs::now_ns();
    for (node, r) in scrubs {
        let ago = Duration::from_nanos(now.saturating_sub(r.at_ns).max(0) as u64);
        writeln!(
            out,
            "node {node}: last scrub {} ago: {} copies checked ({} bytes), {} repaired, {} with no \
             good copy left",
            spoken(ago),
            r.checked,
            r.bytes,
            r.repaired,
            r.lost.len()
        )?;
        for (path, made_by) in &r.lost {
            writeln!(out, "  lost {path}{}", made_by_note(made_by.as_deref()))?;
        }
    }
    if unanswered == spec.nodes.len() {
        bail!("{}", crate::fs_ops::stopped(&a.dir));
    }
    if down > 0 {
        bail!("{down} of {} daemons down or degraded", spec.nodes.len());
    }
    Ok(())
}

/// `d` as people say it: seconds, minutes, hours or days.
fn spoken(d: Duration) -> String {
    match d.as_secs() {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}
