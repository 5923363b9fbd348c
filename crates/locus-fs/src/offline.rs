//! A stopped cluster read straight from its nodes' stores on this host
//! (`locus fs ls/cat/get --offline`): no daemon, nothing written. Each
//! node's metadata shard is read from a copy of its file; a file's bytes
//! from a holder's store here, checked against the version's hash as a
//! daemon's reader checks them.

use crate::cluster::ClusterSpec;
use crate::data::store::Store;
use crate::data::sums;
use crate::meta::Snapshot;
use crate::path::{join, normalise};
use crate::ring::Ring;
use locus_proto::fs::{Entry, Kind, Record};
use locus_proto::{Errno, FsError, FsResult};
use std::fs::File;
use std::path::{Path, PathBuf};

/// A stopped cluster's nodes whose stores are on this host.
pub struct Offline {
    ring: Ring,
    /// By node id: its shard and store, if its directory is here.
    nodes: Vec<Option<(Snapshot, Store)>>,
    /// The nodes whose stores are elsewhere (another host's).
    elsewhere: Vec<String>,
}

impl Offline {
    /// Opens the cluster of `spec` (every daemon stopped: see the caller).
    pub fn open(spec: &ClusterSpec) -> FsResult<Offline> {
        let mut nodes = Vec::new();
        let mut elsewhere = Vec::new();
        for n in &spec.nodes {
            let meta = n.dir.join(crate::daemon::META_FILE);
            if meta.exists() {
                nodes.push(Some((Snapshot::of(&meta)?, Store::existing(&n.dir))));
            } else {
                nodes.push(None);
                elsewhere.push(format!("{} ({})", n.name, n.dir.display()));
            }
        }
        if nodes.iter().all(Option::is_none) {
            return Err(FsError::new(Errno::ENOENT, "offline")
                .with_detail("no node's store of this cluster is on this host"));
        }
        Ok(Offline {
            ring: spec.ring(),
            nodes,
            elsewhere,
        })
    }

    /// The shards to ask about `path`: its owner's first, then the others
    /// here (copies of its keys, or one that acted for its owner).
    fn shards(&self, path: &str) -> impl Iterator<Item = &Snapshot> {
        let owner = self.ring.owner(path) as usize;
        let others = (0..self.nodes.len()).filter(move |&k| k != owner);
        std::iter::once(owner)
            .chain(others)
            .filter_map(|k| self.nodes.get(k)?.as_ref().map(|(meta, _)| meta))
    }

    /// Why a name no shard here has may still exist.
    fn missing(&self, path: &str) -> FsError {
        let e = FsError::new(Errno::ENOENT, path);
        match self.elsewhere.is_empty() {
            true => e,
            false => e.with_detail(format!(
                "not in the stores on this host (those of {} are not)",
                self.elsewhere.join(", ")
            )),
        }
    }

    /// The record of `path`.
    pub fn stat(&self, path: &str) -> FsResult<Record> {
        self.ask(&normalise(path)?, Snapshot::get)
    }

    /// The entries of directory `dir`, in name order.
    pub fn readdir(&self, dir: &str) -> FsResult<Vec<Entry>> {
        self.ask(&normalise(dir)?, Snapshot::list)
    }

    /// The first answer about `path` of a shard that knows it.
    fn ask<T>(&self, path: &str, of: impl Fn(&Snapshot, &str) -> FsResult<T>) -> FsResult<T> {
        for meta in self.shards(path) {
            match of(meta, path) {
                Err(e) if e.code == Errno::ENOENT => continue,
                found => return found,
            }
        }
        Err(self.missing(path))
    }

    /// The current version of file `path`, opened from a good copy here.
    pub fn open_read(&self, path: &str) -> FsResult<File> {
        let path = normalise(path)?;
        let rec = self.stat(&path)?;
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        // No version closed yet: it reads as empty.
        if rec.version == 0 {
            return File::open("/dev/null").map_err(|e| FsError::io(&path, &e));
        }
        let mut faults = Vec::new();
        for &h in &rec.holders {
            let Some((_, store)) = self.nodes.get(h as usize).and_then(Option::as_ref) else {
                faults.push(format!("node {h}: its store is not on this host"));
                continue;
            };
            let copy = store.data_path(&path, rec.stamp);
            match good_copy(&copy, &rec) {
                Ok(file) => return Ok(file),
                Err(why) => faults.push(format!("node {h}: {why}")),
            }
        }
        Err(FsError::new(Errno::EIO, &path)
            .with_detail(format!("no good copy on this host ({})", faults.join("; "))))
    }

    /// Copies file or tree `path` to host path `dest` (as `cp -r` names
    /// it: into `dest` if it is a directory); returns files and bytes.
    pub fn get_tree(&self, path: &str, dest: &Path) -> FsResult<(u64, u64)> {
        let path = normalise(path)?;
        let name = path.rsplit('/').next().unwrap_or_default();
        let dest = match dest.is_dir() && !name.is_empty() {
            true => dest.join(name),
            false => dest.to_path_buf(),
        };
        let mut moved = (0, 0);
        self.copy_out(&path, &dest, &mut moved)?;
        Ok(moved)
    }

    fn copy_out(&self, path: &str, dest: &PathBuf, moved: &mut (u64, u64)) -> FsResult<()> {
        let io = |e: std::io::Error| FsError::io(dest.display().to_string(), &e);
        if self.stat(path)?.kind == Kind::Dir {
            std::fs::create_dir_all(dest).map_err(io)?;
            for e in self.readdir(path)? {
                self.copy_out(&join(path, &e.name), &dest.join(&e.name), moved)?;
            }
            return Ok(());
        }
        let mut from = self.open_read(path)?;
        let mut to = File::create(dest).map_err(io)?;
        moved.0 += 1;
        moved.1 += std::io::copy(&mut from, &mut to).map_err(io)?;
        Ok(())
    }
}

/// `copy` opened, if it holds version `rec`'s bytes (hashed whole; the
/// hashes a daemon keeps beside a copy are not written here).
fn good_copy(copy: &Path, rec: &Record) -> Result<File, String> {
    let file = File::open(copy).map_err(|e| e.to_string())?;
    let found = sums::of_file(&file).map_err(|e| e.to_string())?;
    sums::judge(found.content(), rec.size, rec.sum).map_err(|m| m.to_string())?;
    File::open(copy).map_err(|e| e.to_string())
}
