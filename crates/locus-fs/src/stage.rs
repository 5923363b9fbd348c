//! Staging whole trees between the host file system and Locus (`locus fs put
//! -r`, `get -r`), many files in flight at once, named as `cp -r` names them:
//! a destination that is an existing directory receives a copy of the
//! source under the source's name; any other becomes the copy. The bytes
//! move through this client, or straight between the host file system and
//! the nodes holding them (`Via::Nodes`), every node moving its own.

use crate::client::Client;
use crate::cluster::ClusterSpec;
use crate::data::copy;
use crate::path::{join, normalise};
use locus_proto::fs::Kind;
use locus_proto::{Errno, FsError, FsResult};
use std::path::{Path, PathBuf};
use tokio::task::JoinSet;

/// Files moved at once.
const IN_FLIGHT: usize = 16;

/// Who moves the bytes of a staging command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// This client reads (put) or writes (get) the host files; every byte
    /// passes through its node.
    Client,
    /// Each node reads (put) or writes (get) its own files on the host
    /// file system itself, which must be one every node's host sees.
    Nodes,
}

impl Via {
    /// `Nodes` when every daemon of the cluster in `dir` sees host path
    /// `host`: the cluster runs on this machine, or it was deployed across
    /// hosts (its directory is on their shared file system) and `host` is
    /// on the same file system as its directory. Otherwise `Client`.
    pub fn for_path(spec: &ClusterSpec, dir: &Path, host: &Path) -> Via {
        use std::os::unix::fs::MetadataExt;
        if !spec.joined {
            return Via::Nodes;
        }
        // The nearest existing ancestor of a destination still to be made.
        let existing = host.ancestors().find_map(|p| std::fs::metadata(p).ok());
        match (existing, std::fs::metadata(dir)) {
            (Some(h), Ok(d)) if h.dev() == d.dev() => Via::Nodes,
            _ => Via::Client,
        }
    }
}

/// A host path as every daemon reads it: absolute (their working
/// directories are not this process's).
fn absolute(p: &Path) -> FsResult<PathBuf> {
    std::path::absolute(p).map_err(|e| host_error(p, &e))
}

/// What a staging command moved.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub files: u64,
    pub bytes: u64,
}

fn host_error(p: &Path, e: &std::io::Error) -> FsError {
    FsError::io(p.display().to_string(), e)
}

/// The last component of a host path, as a Locus name.
fn host_name(p: &Path) -> FsResult<String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| {
            FsError::new(Errno::EINVAL, p.display().to_string())
                .with_detail("not a file name Locus can hold (UTF-8)")
        })
}

/// Copies host file or tree `src` to Locus path `dst`; new files are placed
/// by the client's placement policy, so a round-robin client spreads them
/// over the nodes.
pub async fn put_tree(client: &Client, src: &Path, dst: &str, via: Via) -> FsResult<Moved> {
    let src = &absolute(src)?;
    let meta = std::fs::metadata(src).map_err(|e| host_error(src, &e))?;
    let mut dst = normalise(dst)?;
    if let Ok(rec) = client.stat(&dst).await {
        if rec.kind == Kind::Dir {
            dst = join(&dst, &host_name(src)?);
        }
    }
    let put = move |client, host, locus| put_file(client, host, locus, via);
    if !meta.is_dir() {
        let bytes = put(client.clone(), src.clone(), dst).await?;
        return Ok(Moved { files: 1, bytes });
    }
    let mut files = Vec::new();
    let mut dirs = vec![(src.clone(), dst)];
    while let Some((host, locus)) = dirs.pop() {
        client.mkdir_all(&locus).await?;
        for entry in std::fs::read_dir(&host).map_err(|e| host_error(&host, &e))? {
            let entry = entry.map_err(|e| host_error(&host, &e))?;
            let child = join(&locus, &host_name(&entry.path())?);
            // Follows symbolic links, as the files they name are what a
            // workflow reads.
            if std::fs::metadata(entry.path())
                .map_err(|e| host_error(&entry.path(), &e))?
                .is_dir()
            {
                dirs.push((entry.path(), child));
            } else {
                files.push((entry.path(), child));
            }
        }
    }
    in_parallel(client, files, put).await
}

async fn put_file(client: Client, host: PathBuf, locus: String, via: Via) -> FsResult<u64> {
    if via == Via::Nodes {
        return client.import(&locus, &host).await.map(|rec| rec.size);
    }
    let mut src = std::fs::File::open(&host).map_err(|e| host_error(&host, &e))?;
    let mut w = client.create_or_truncate(&locus).await?;
    match std::io::copy(&mut src, w.file()) {
        Ok(_) => w.close().await.map(|rec| rec.size),
        Err(e) => {
            w.abort().await;
            Err(FsError::io(&locus, &e))
        }
    }
}

/// Copies Locus file or tree `src` to host path `dst`.
pub async fn get_tree(client: &Client, src: &str, dst: &Path, via: Via) -> FsResult<Moved> {
    let src = normalise(src)?;
    let rec = client.stat(&src).await?;
    let mut dst = absolute(dst)?;
    if dst.is_dir() {
        let name = src
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .unwrap_or("locus");
        dst = dst.join(name);
    }
    let get = move |client, locus, host| get_file(client, locus, host, via);
    if rec.kind == Kind::File {
        let bytes = get(client.clone(), src, dst).await?;
        return Ok(Moved { files: 1, bytes });
    }
    let mut files = Vec::new();
    let mut dirs = vec![(src, dst)];
    while let Some((locus, host)) = dirs.pop() {
        std::fs::create_dir_all(&host).map_err(|e| host_error(&host, &e))?;
        for e in client.readdir(&locus).await? {
            let (child, target) = (join(&locus, &e.name), host.join(&e.name));
            match e.kind {
                Kind::Dir => dirs.push((child, target)),
                Kind::File => files.push((child, target)),
            }
        }
    }
    in_parallel(client, files, get).await
}

async fn get_file(client: Client, locus: String, host: PathBuf, via: Via) -> FsResult<u64> {
    if via == Via::Nodes {
        return client.export(&locus, &host).await;
    }
    let local = client.local_path(&locus).await?;
    tokio::task::spawn_blocking(move || {
        let from = std::fs::File::open(&local).map_err(|e| host_error(&local, &e))?;
        let meta = from.metadata().map_err(|e| host_error(&local, &e))?;
        // The copy keeps the file's mode (an executable stays one).
        std::fs::File::create(&host)
            .and_then(|to| copy::whole_known(&from, &meta, &to).map(|n| (n, to)))
            .and_then(|(n, to)| to.set_permissions(meta.permissions()).map(|()| n))
            .map_err(|e| host_error(&host, &e))
    })
    .await
    .map_err(|e| FsError::new(Errno::EIO, locus).with_detail(e))?
}

/// Runs `one` on every job, [`IN_FLIGHT`] at a time; stops starting new ones
/// at the first failure and returns it once those running have ended.
async fn in_parallel<A, B, F, Fut>(client: &Client, jobs: Vec<(A, B)>, one: F) -> FsResult<Moved>
where
    F: Fn(Client, A, B) -> Fut,
    Fut: std::future::Future<Output = FsResult<u64>> + Send + 'static,
{
    let mut moved = Moved::default();
    let mut failed = None;
    let mut running = JoinSet::new();
    let mut jobs = jobs.into_iter();
    loop {
        while failed.is_none() && running.len() < IN_FLIGHT {
            let Some((a, b)) = jobs.next() else { break };
            running.spawn(one(client.clone(), a, b));
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        match done.map_err(|e| FsError::new(Errno::EIO, "staging").with_detail(e)) {
            Ok(Ok(bytes)) => {
                moved.files += 1;
                moved.bytes += bytes;
            }
            Ok(Err(e)) | Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(moved),
    }
}
