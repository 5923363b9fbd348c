//! The `locus fs` client commands, each acting as a client on one node.

use crate::shown::shown;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use locus_fs::{Client, ClientOptions, Placement, Via};
use locus_proto::fs::{Kind, NodeId, Record};
use locus_proto::{Errno, FsError};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Clone)]
pub(crate) struct ClusterArgs {
    /// The cluster's directory (as given to `locus fs up`).
    #[arg(long, env = "LOCUS_DIR", default_value_os_t = locus_fs::default_dir())]
    pub dir: PathBuf,
}

const DEFAULT_LEASE_MS: u64 = 30_000;

#[derive(Args, Clone)]
pub(crate) struct ClientArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Act as a client on this node (default: this host's node, else node 0;
    /// on a host of no node of a deployed cluster, a client with no store
    /// of its own, whose bytes all cross the network).
    #[arg(long)]
    pub node: Option<NodeId>,
    /// Placement of new files: local, hash or round-robin (default: the cluster's).
    #[arg(long)]
    pub placement: Option<Placement>,
    /// How long a write lock this command takes outlives it if it dies
    /// (renewed while it writes).
    #[arg(long, default_value_t = DEFAULT_LEASE_MS, value_name = "MS")]
    pub lease_ms: u64,
}

impl ClientArgs {
    /// A client of `cluster` as this host's node, with the defaults.
    pub(crate) fn of(cluster: ClusterArgs) -> ClientArgs {
        ClientArgs {
            cluster,
            node: None,
            placement: None,
            lease_ms: DEFAULT_LEASE_MS,
        }
    }

    pub(crate) fn client(&self) -> Result<Client> {
        let opts = ClientOptions {
            placement: self.placement,
            lease: std::time::Duration::from_millis(self.lease_ms),
            ..ClientOptions::default()
        };
        Ok(Client::on_this_host(
            &self.cluster.dir,
            self.node,
            scratch_dir(),
            opts,
        )?)
    }
}

/// Where a command run on a host without a node stages bytes; removed when
/// the command ends (`remove_scratch`).
fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("locus-client-{}", std::process::id()))
}

/// Removes what a command's diskless client staged.
pub(crate) fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch_dir());
}

/// Reading a stopped file system as it is.
#[derive(Args, Clone, Copy)]
pub(crate) struct OfflineArgs {
    /// Read a stopped file system straight from its nodes' stores on this
    /// host, starting nothing and writing nothing (a file's bytes are
    /// checked against its hash, as a daemon checks them).
    #[arg(long)]
    pub offline: bool,
}

/// Who moves a tree's bytes.
#[derive(Args, Clone)]
pub(crate) struct ViaArgs {
    /// With -r: `nodes` has every node read (put) or write (get) its own
    /// files on the host file system directly, which every node's host must
    /// see; `client` moves all bytes through this command's node; `auto`:
    /// nodes when the cluster runs on this machine, or the host path is on
    /// the file system holding the cluster's (shared) directory.
    #[arg(
        long,
        default_value = "auto",
        value_name = "auto|nodes|client",
        requires = "recursive"
    )]
    via: ViaChoice,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ViaChoice {
    Auto,
    Nodes,
    Client,
}

impl ViaArgs {
    pub(crate) fn auto() -> ViaArgs {
        ViaArgs {
            via: ViaChoice::Auto,
        }
    }

    fn resolve(&self, c: &ClientArgs, host: &std::path::Path) -> Result<Via> {
        Ok(match self.via {
            ViaChoice::Nodes => Via::Nodes,
            ViaChoice::Client => Via::Client,
            ViaChoice::Auto => {
                let dir = &c.cluster.dir;
                Via::for_path(&locus_fs::ClusterSpec::load(dir)?, dir, host)
            }
        })
    }
}

#[derive(Subcommand)]
pub(crate) enum FsOp {
    /// List a directory (or show a file).
    Ls {
        #[command(flatten)]
        c: ClientArgs,
        /// The directory (or file), `/a/b` or `/locus/a/b`.
        #[arg(default_value = "/", value_parser = locus_path)]
        path: String,
        /// Long format: kind, size, version, holders.
        #[arg(short, long)]
        long: bool,
        #[command(flatten)]
        offline: OfflineArgs,
    },
    /// Show a path's record.
    Stat {
        #[command(flatten)]
        c: ClientArgs,
        /// The file or directory.
        #[arg(value_parser = locus_path)]
        path: String,
    },
    /// Create a directory.
    Mkdir {
        #[command(flatten)]
        c: ClientArgs,
        /// The directory to make.
        #[arg(value_parser = locus_path)]
        path: String,
        /// Create missing parents; an existing directory is not an error.
        #[arg(short, long)]
        parents: bool,
    },
    /// Remove a file (or, with -d, an empty directory; with -r, a tree).
    Rm {
        #[command(flatten)]
        c: ClientArgs,
        /// What to remove.
        #[arg(value_parser = locus_path)]
        path: String,
        /// Remove an empty directory.
        #[arg(short = 'd', long = "directory")]
        directory: bool,
        /// Remove a directory and everything under it.
        #[arg(short, long)]
        recursive: bool,
    },
    /// Rename a file or directory.
    Mv {
        #[command(flatten)]
        c: ClientArgs,
        /// The file or directory to rename.
        #[arg(value_parser = locus_path)]
        from: String,
        /// Its new name (a file there is replaced).
        #[arg(value_parser = locus_path)]
        to: String,
    },
    /// Copy a host file (or `-` for stdin), or with -r a tree, into Locus;
    /// an existing directory receives it under its own name, as with cp.
    /// New files are placed by --placement (round-robin spreads a tree's
    /// files over the nodes).
    Put {
        #[command(flatten)]
        c: ClientArgs,
        /// Copy a directory and everything under it, many files at once.
        #[arg(short, long)]
        recursive: bool,
        #[command(flatten)]
        via: ViaArgs,
        /// The host file or directory (`-`: stdin).
        local: PathBuf,
        /// The Locus path it is copied to.
        #[arg(value_parser = locus_path)]
        path: String,
    },
    /// Copy a Locus file (or with -r a tree) to a host path, or a file to `-`
    /// (stdout); an existing directory receives it under its own name, as
    /// with cp.
    Get {
        #[command(flatten)]
        c: ClientArgs,
        /// Copy a directory and everything under it, many files at once.
        #[arg(short, long)]
        recursive: bool,
        #[command(flatten)]
        via: ViaArgs,
        /// The Locus file or directory.
        #[arg(value_parser = locus_path)]
        path: String,
        /// The host path it is copied to (`-`: stdout).
        local: PathBuf,
        #[command(flatten)]
        offline: OfflineArgs,
    },
    /// Print a file.
    Cat {
        #[command(flatten)]
        c: ClientArgs,
        /// Print from this byte on (only the 1 MiB chunks read are checked
        /// where this node keeps the file).
        #[arg(long)]
        offset: Option<u64>,
        /// Print at most this many bytes.
        #[arg(long)]
        length: Option<u64>,
        /// The file to print.
        #[arg(value_parser = locus_path)]
        path: String,
        #[command(flatten)]
        offline: OfflineArgs,
    },
    /// Print the nodes holding a file: id, name, address (primary first),
    /// `unreachable` after those that do not answer; a file no holder of
    /// which answers is lost (an error).
    Locate {
        #[command(flatten)]
        c: ClientArgs,
        /// The file.
        #[arg(value_parser = locus_path)]
        path: String,
    },
    /// Break the write lock of a file whose writer is gone (it would end
    /// with the writer's lease anyway).
    Unlock {
        #[command(flatten)]
        c: ClientArgs,
        /// The locked file.
        #[arg(value_parser = locus_path)]
        path: String,
    },
    /// Fix the node a file not yet created will be stored on.
    Place {
        #[command(flatten)]
        c: ClientArgs,
        /// The file not yet created.
        #[arg(value_parser = locus_path)]
        path: String,
        /// The node that will store it.
        #[arg(value_name = "NODE")]
        target: NodeId,
    },
    /// Show, or with R set, how many nodes keep the bytes of files written
    /// under a directory (in it and its subdirectories; files already there
    /// keep theirs). Names and records keep the cluster's `--replicas`.
    Replicas {
        #[command(flatten)]
        c: ClientArgs,
        /// The directory.
        #[arg(value_parser = locus_path)]
        path: String,
        /// Nodes to keep each file's bytes on (1 to the cluster's nodes).
        #[arg(value_name = "R")]
        copies: Option<u32>,
    },
    /// Show each node's stored data and free space.
    Df {
        #[command(flatten)]
        c: ClientArgs,
    },
}

fn locus_path(s: &str) -> Result<String, String> {
    Ok(locus_runtime::namespace_path(s).to_string())
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::File => "file",
        Kind::Dir => "dir",
    }
}

/// A directory entry as `ls` shows it; with its record, as `ls -l`.
fn listed(e: &locus_proto::fs::Entry, rec: Option<&Record>) -> String {
    match rec {
        Some(r) => format!(
            "{:4} {:>12} v{:<4} [{}] {}",
            kind_name(r.kind),
            r.size,
            r.version,
            holders(r),
            shown(&e.name)
        ),
        None if e.kind == Kind::Dir => format!("{}/", shown(&e.name)),
        None => shown(&e.name).to_string(),
    }
}

fn holders(rec: &Record) -> String {
    let ids: Vec<String> = rec
        .holders
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    ids.join(",")
}

pub(crate) fn run(op: FsOp) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let args = op.client_args().clone();
    if op.offline() {
        if !rt.block_on(all_down(&args)) {
            anyhow::bail!(
                "--offline reads a stopped file system; the one at {} is running \
                 (read it without --offline)",
                args.cluster.dir.display()
            );
        }
        return run_offline(op);
    }
    let result = rt.block_on(run_op(op));
    remove_scratch();
    match result {
        Err(e) if is_unreachable(&e) && rt.block_on(all_down(&args)) => {
            Err(e.context(stopped(&args.cluster.dir)))
        }
        other => other,
    }
}

fn is_unreachable(e: &anyhow::Error) -> bool {
    e.downcast_ref::<locus_proto::FsError>()
        .is_some_and(locus_proto::FsError::is_unreachable)
}

/// Whether no daemon of the cluster answers.
async fn all_down(args: &ClientArgs) -> bool {
    let Ok(client) = args.client() else {
        return false;
    };
    for node in 0..client.node_count() as NodeId {
        if client.ping(node).await.is_ok() {
            return false;
        }
    }
    true
}

/// What to say of the stopped file system at `dir`.
pub(crate) fn stopped(dir: &Path) -> String {
    // One deployed on a job's hosts starts again through their launcher.
    let on_hosts = locus_fs::ClusterSpec::load(dir).is_ok_and(|s| s.joined);
    format!(
        "the file system at {0} is not running (no daemon answers; its files are kept): \
         start it with `locus fs up --dir {0}`{1}",
        dir.display(),
        if on_hosts {
            " inside an allocation holding its hosts (through the launcher it was deployed with)"
        } else {
            ", or read it as it is with `ls`, `cat` or `get --offline`"
        }
    )
}

impl FsOp {
    /// Whether it reads a stopped file system's stores (`--offline`).
    fn offline(&self) -> bool {
        match self {
            FsOp::Ls { offline, .. } | FsOp::Get { offline, .. } | FsOp::Cat { offline, .. } => {
                offline.offline
            }
            _ => false,
        }
    }

    fn client_args(&self) -> &ClientArgs {
        match self {
            FsOp::Ls { c, .. }
            | FsOp::Stat { c, .. }
            | FsOp::Mkdir { c, .. }
            | FsOp::Rm { c, .. }
            | FsOp::Mv { c, .. }
            | FsOp::Put { c, .. }
            | FsOp::Get { c, .. }
            | FsOp::Cat { c, .. }
            | FsOp::Locate { c, .. }
            | FsOp::Unlock { c, .. }
            | FsOp::Place { c, .. }
            | FsOp::Replicas { c, .. }
            | FsOp::Df { c, .. } => c,
        }
    }
}

/// `ls`, `cat` and `get` of a stopped file system, from its stores here.
fn run_offline(op: FsOp) -> Result<()> {
    let spec = locus_fs::ClusterSpec::load(&op.client_args().cluster.dir)?;
    let fs = locus_fs::Offline::open(&spec)?;
    let mut out = std::io::stdout().lock();
    match op {
        FsOp::Ls { path, long, .. } => {
            if fs.stat(&path)?.kind == Kind::File {
                writeln!(out, "{}", shown(&path))?;
                return Ok(());
            }
            for e in fs.readdir(&path)? {
                let full = locus_fs::path::join(&locus_fs::path::normalise(&path)?, &e.name);
                let rec = match long {
                    true => Some(fs.stat(&full)?),
                    false => None,
                };
                writeln!(out, "{}", listed(&e, rec.as_ref()))?;
            }
        }
        FsOp::Cat {
            path,
            offset,
            length,
            ..
        } => {
            let mut f = fs.open_read(&path)?;
            std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(offset.unwrap_or(0)))?;
            std::io::copy(
                &mut std::io::Read::take(f, length.unwrap_or(u64::MAX)),
                &mut out,
            )?;
        }
        FsOp::Get {
            path,
            local,
            recursive,
            ..
        } => {
            if local.as_os_str() == "-" {
                std::io::copy(&mut fs.open_read(&path)?, &mut out)?;
            } else if !recursive && fs.stat(&path)?.kind == Kind::Dir {
                anyhow::bail!("{path}: is a directory (get -r copies trees)");
            } else {
                let (files, bytes) = fs.get_tree(&path, &local)?;
                if recursive {
                    writeln!(out, "{files} files, {bytes} bytes")?;
                }
            }
        }
        _ => unreachable!("--offline is a flag of ls, cat and get only"),
    }
    Ok(())
}

async fn run_op(op: FsOp) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match op {
        FsOp::Ls { c, path, long, .. } => {
            let client = c.client()?;
            let rec = client.stat(&path).await?;
            if rec.kind == Kind::File {
                writeln!(out, "{}", shown(&path))?;
                return Ok(());
            }
            for e in client.readdir(&path).await? {
                let full = locus_fs::path::join(&locus_fs::path::normalise(&path)?, &e.name);
                let rec = match long {
                    true => Some(client.stat(&full).await?),
                    false => None,
                };
                writeln!(out, "{}", listed(&e, rec.as_ref()))?;
            }
        }
        FsOp::Stat { c, path } => {
            let client = c.client()?;
            let r = client.stat(&path).await?;
            writeln!(out, "path: {path}")?;
            writeln!(out, "kind: {}", kind_name(r.kind))?;
            writeln!(out, "size: {}", r.size)?;
            writeln!(out, "mode: {:o}", r.mode)?;
            let mtime = std::time::UNIX_EPOCH
                + std::time::Duration::from_nanos(u64::try_from(r.mtime_ns).unwrap_or(0));
            writeln!(out, "mtime: {}", humantime::format_rfc3339_nanos(mtime))?;
            writeln!(out, "version: {}", r.version)?;
            writeln!(out, "holders: {}", holders(&r))?;
            writeln!(out, "copies: {}", client.copies(&r))?;
            writeln!(out, "locked: {}", r.lock.is_some())?;
            writeln!(out, "stamp: {:016x}", r.stamp)?;
        }
        FsOp::Mkdir { c, path, parents } => {
            let client = c.client()?;
            if parents {
                client.mkdir_all(&path).await?;
            } else {
                client.mkdir(&path).await?;
            }
        }
        FsOp::Rm {
            c,
            path,
            directory,
            recursive,
        } => {
            let client = c.client()?;
            if recursive {
                client.remove_all(&path).await?;
            } else if directory {
                client.rmdir(&path).await?;
            } else {
                client.unlink(&path).await?;
            }
        }
        FsOp::Mv { c, from, to } => c.client()?.rename(&from, &to).await?,
        FsOp::Put {
            c,
            recursive,
            via,
            local,
            path,
        } => {
            let client = c.client()?;
            if recursive {
                let via = via.resolve(&c, &local)?;
                let moved = locus_fs::put_tree(&client, &local, &path, via).await?;
                client.settled().await;
                writeln!(out, "{} files, {} bytes", moved.files, moved.bytes)?;
                return Ok(());
            }
            if local.as_os_str() == "-" {
                let mut w = client.create_or_truncate(&path).await?;
                if let Err(e) = std::io::copy(&mut std::io::stdin().lock(), w.file()) {
                    // Nothing of the file changes; its lock is released now.
                    w.abort().await;
                    return Err(FsError::io(&path, &e).into());
                }
                w.close().await?;
            } else {
                let meta =
                    std::fs::metadata(&local).with_context(|| local.display().to_string())?;
                if meta.is_dir() {
                    anyhow::bail!("{}: is a directory (put -r copies trees)", local.display());
                }
                // Named as cp names it: an existing directory receives the
                // file under its own name.
                locus_fs::put_tree(&client, &local, &path, Via::Client).await?;
            }
            client.settled().await;
        }
        FsOp::Get {
            c,
            recursive,
            via,
            path,
            local,
            ..
        } => {
            let client = c.client()?;
            if local.as_os_str() == "-" {
                let mut f = client.open_read(&path).await?;
                std::io::copy(&mut f, &mut out)?;
            } else if recursive {
                let via = via.resolve(&c, &local)?;
                let moved = locus_fs::get_tree(&client, &path, &local, via).await?;
                writeln!(out, "{} files, {} bytes", moved.files, moved.bytes)?;
            } else {
                if client.stat(&path).await?.kind == Kind::Dir {
                    anyhow::bail!("{path}: is a directory (get -r copies trees)");
                }
                // Named as cp names it: an existing directory receives the
                // file under its own name.
                locus_fs::get_tree(&client, &path, &local, Via::Client).await?;
            }
        }
        FsOp::Cat {
            c,
            offset: None,
            length: None,
            path,
            ..
        } => {
            let mut f = c.client()?.open_read(&path).await?;
            std::io::copy(&mut f, &mut out)?;
        }
        FsOp::Cat {
            c,
            offset,
            length,
            path,
            ..
        } => {
            let (offset, length) = (offset.unwrap_or(0), length.unwrap_or(u64::MAX));
            out.write_all(&c.client()?.read_range(&path, offset, length).await?)?;
        }
        FsOp::Locate { c, path } => {
            let client = c.client()?;
            let holders = client.locate(&path).await?;
            let mut reachable = 0;
            for &id in &holders {
                let ep = client.endpoint(id)?;
                let up = client.ping(id).await.is_ok();
                reachable += usize::from(up);
                let mark = if up { "" } else { " unreachable" };
                writeln!(out, "{id} {} {}{mark}", ep.name, ep.addr.ip())?;
            }
            if reachable == 0 && !holders.is_empty() {
                out.flush()?;
                return Err(FsError::new(Errno::EIO, &path)
                    .with_detail("lost: every node holding it is unreachable")
                    .into());
            }
        }
        FsOp::Place { c, path, target } => c.client()?.place(&path, target).await?,
        FsOp::Unlock { c, path } => c.client()?.break_lock(&path).await?,
        FsOp::Replicas { c, path, copies } => {
            let client = c.client()?;
            if let Some(r) = copies {
                client.set_copies(&path, r).await?;
            }
            writeln!(out, "{}", client.copies(&client.stat(&path).await?))?;
        }
        FsOp::Df { c } => {
            let client = c.client()?;
            writeln!(
                out,
                "{:>4} {:<10} {:>10} {:>14} {:>14}",
                "node", "name", "files", "stored", "free"
            )?;
            for id in 0..client.node_count() as NodeId {
                let name = client.endpoint(id)?.name.clone();
                match client.status(id).await {
                    Ok(s) => writeln!(
                        out,
                        "{id:>4} {name:<10} {:>10} {:>14} {:>14}",
                        s.stored_files, s.stored_bytes, s.free_bytes
                    )?,
                    Err(e) => writeln!(out, "{id:>4} {name:<10} down: {e}")?,
                }
            }
        }
    }
    Ok(())
}
