//! `locus fs mount` and `locus fs umount`.

use crate::fs_ops::ClientArgs;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const MOUNT_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(clap::Args)]
pub(crate) struct MountArgs {
    #[command(flatten)]
    c: ClientArgs,
    /// An existing empty directory to mount the file system on.
    mountpoint: PathBuf,
    /// Serve the mount from this process until it is unmounted (else a
    /// background process serves it and this returns once it is mounted).
    #[arg(long)]
    foreground: bool,
}

#[derive(clap::Args)]
pub(crate) struct UmountArgs {
    /// Where the file system is mounted.
    mountpoint: PathBuf,
    /// Detach it now even if programs still use it; it goes when they are done.
    #[arg(short = 'l', long)]
    lazy: bool,
}

pub(crate) fn mount(a: MountArgs) -> Result<()> {
    let point = a
        .mountpoint
        .canonicalize()
        .with_context(|| format!("mount point {}", a.mountpoint.display()))?;
    if !point.is_dir() {
        bail!("mount point {}: not a directory", point.display());
    }
    if locus_mount::is_mounted(&point) {
        bail!(
            "{}: a Locus file system is mounted there already",
            point.display()
        );
    }
    if a.foreground {
        let client = a.c.client()?;
        let name = format!("locus:{}", a.c.cluster.dir.display());
        return locus_mount::serve(client, &point, &name)
            .with_context(|| format!("mounting on {}", point.display()));
    }
    background(&a, &point)
}

/// Starts `locus fs mount --foreground` detached, its log in the cluster
/// directory, and waits until the mount is there.
fn background(a: &MountArgs, point: &Path) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let log_path = a.c.cluster.dir.join(format!(
        "mount-{}-{}.log",
        locus_fs::hostname(),
        std::process::id()
    ));
    let log = std::fs::File::create(&log_path).with_context(|| log_path.display().to_string())?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["fs", "mount", "--foreground", "--dir"])
        .arg(&a.c.cluster.dir)
        .args(["--lease-ms", &a.c.lease_ms.to_string()]);
    if let Some(n) = a.c.node {
        cmd.args(["--node", &n.to_string()]);
    }
    if let Some(p) = a.c.placement {
        cmd.args(["--placement", &p.to_string()]);
    }
    let mut child = cmd
        .arg(point)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the mount's process")?;
    let start = Instant::now();
    while !locus_mount::is_mounted(point) {
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let why = log.lines().last().unwrap_or("no message").trim();
            let why = why.strip_prefix("locus: ").unwrap_or(why);
            bail!("mounting on {} failed ({status}): {why}", point.display());
        }
        if start.elapsed() > MOUNT_TIMEOUT {
            let _ = child.kill();
            bail!(
                "mounting on {}: not mounted after {MOUNT_TIMEOUT:?} (log: {})",
                point.display(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("mounted on {} (process {})", point.display(), child.id());
    Ok(())
}

pub(crate) fn umount(a: UmountArgs) -> Result<()> {
    if !locus_mount::is_mounted(&a.mountpoint) {
        bail!(
            "{}: no Locus file system is mounted there",
            a.mountpoint.display()
        );
    }
    locus_mount::unmount(&a.mountpoint, a.lazy)
        .with_context(|| format!("unmounting {}", a.mountpoint.display()))
}

/// Runs a file-system daemon; one that joins a cluster with a mount point
/// also mounts the cluster there (as a client of its own node) once the
/// cluster is formed, until the daemon stops.
pub(crate) fn serve_daemon(cfg: locus_fs::ServeConfig) -> Result<()> {
    let Some(point) = cfg.join.mount.clone() else {
        return Ok(locus_fs::serve(cfg)?);
    };
    let (dir, name) = (cfg.join.dir.clone(), cfg.join.name.clone());
    let mounted = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = mounted.clone();
    std::thread::spawn(move || match mount_when_formed(&dir, name, &point) {
        Ok(m) => *slot.lock().expect("mount slot") = Some(m),
        Err(e) => tracing::error!("mounting the cluster on {}: {e:#}", point.display()),
    });
    let served = locus_fs::serve(cfg);
    // Unmounted before this process ends.
    drop(mounted.lock().expect("mount slot").take());
    Ok(served?)
}

/// Waits for the cluster in `dir` to be formed, then mounts this host's
/// node (`name`, else the host name) at `point`.
fn mount_when_formed(
    dir: &Path,
    name: Option<String>,
    point: &Path,
) -> Result<locus_mount::Mounted> {
    let start = Instant::now();
    let spec = loop {
        if let Ok(spec) = locus_fs::ClusterSpec::load(dir) {
            break spec;
        }
        if start.elapsed() > locus_fs::JOIN_TIMEOUT {
            bail!("the cluster in {} was not formed", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let host = name.unwrap_or_else(locus_fs::hostname);
    let node = spec
        .node_named(&host)
        .with_context(|| format!("no node of the cluster is named {host}"))?;
    let opts = locus_fs::ClientOptions {
        node: node.id,
        ..locus_fs::ClientOptions::default()
    };
    let client = locus_fs::Client::open_loaded(dir, &spec, opts)?;
    std::fs::create_dir_all(point).with_context(|| point.display().to_string())?;
    let source = format!("locus:{}", dir.display());
    Ok(locus_mount::spawn(client, point, &source)?)
}
