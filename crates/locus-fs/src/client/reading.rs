//! Reading: local copies of a version, fetched from its holders when
//! none is here.

use super::{blocking, blocking_failed, expect_ok, unexpected, Client};
use crate::client::held_dirs::Known;
use crate::data::sums::{self, Chunks, Mismatch};
use crate::data::transfer;
use crate::data::version::VersionRef;
use crate::path::normalise;
use locus_proto::auth::Channel;
use locus_proto::fs::{Kind, NodeId, Record, Request, Response, Sum};
use locus_proto::{Errno, FsError, FsResult};
use std::fs::File;
use std::io;
use std::net::TcpStream;
use std::path::{Path, PathBuf};

/// Files at least this large are fetched over several streams at once.
const PARALLEL_FETCH_MIN: u64 = 16 << 20;
const FETCH_STREAMS: u64 = 4;
/// How many times a read starts again from the file's current version when
/// the one it was reading is replaced meanwhile (its copies dropped): a
/// reader loses only to a writer publishing faster than one fetch.
const REREADS: u32 = 10;

/// Where a file's data is on this node, once `local_copy` made it local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCopy {
    /// The copy's file in this node's store (or a diskless client's scratch).
    pub path: PathBuf,
    /// Its length in bytes.
    pub size: u64,
    /// The version it is (`Record::stamp`).
    pub stamp: u64,
    /// The hash of its bytes, which it was checked against (`Record::sum`).
    pub sum: Option<Sum>,
    /// The data came from another node (it was not here before).
    pub fetched: bool,
    /// No version of the file was closed yet (`Record::version` 0): its
    /// first writer has it open, or gave up. It reads as empty.
    pub never_closed: bool,
    /// The file's record it was made from.
    pub record: Record,
}

impl Client {
    /// The holders of `rec` that another node can fetch from (this node's
    /// copy, if it had one, is gone).
    fn remote_holders(&self, rec: &Record) -> Vec<NodeId> {
        let me = self.inner.me;
        let diskless = self.inner.diskless;
        rec.holders
            .iter()
            .copied()
            .filter(|&h| diskless || h != me)
            .collect()
    }

    /// Fetches the current version of `path` (as `rec` describes it) from the
    /// first reachable holder into `dest`. A large file comes over several
    /// streams at once: one stream's receiver, copying into the page cache,
    /// is the bottleneck, not the network.
    /// Returns the holder it came from, and whether what it sent is the
    /// version (hashed as it came; a good copy keeps its chunks' hashes).
    async fn fetch_into(
        &self,
        path: &str,
        rec: &Record,
        dest: File,
    ) -> FsResult<(NodeId, Result<(), Mismatch>)> {
        let (client, path, rec) = (self.clone(), path.to_string(), rec.clone());
        let holders = self.remote_holders(&rec);
        tokio::task::spawn_blocking(move || {
            let mut last = FsError::new(Errno::EIO, &path).with_detail("no node holds the data");
            for h in holders {
                match client.fetch_parts(
                    h,
                    VersionRef {
                        path: &path,
                        stamp: rec.stamp,
                    },
                    rec.size,
                    &dest,
                ) {
                    Ok(sent) => {
                        let verdict = sent.and_then(|chunks| {
                            crate::data::verify::judge_copied(&dest, &chunks, &rec)
                        });
                        return Ok((h, verdict));
                    }
                    // Gone from its store (or replaced since `rec` was read:
                    // setting it aside then changes nothing).
                    Err(e) if e.code == Errno::ENOENT => return Ok((h, Err(Mismatch::Missing))),
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
        .await
        .map_err(blocking_failed)?
    }

    fn fetch_parts(
        &self,
        node: NodeId,
        VersionRef { path, stamp }: VersionRef<'_>,
        size: u64,
        dest: &File,
    ) -> FsResult<Result<Chunks, Mismatch>> {
        // A holder on this host is copied from directly, without a socket,
        // its bytes hashed as they pass.
        if self.same_host(node) {
            let copied = self.with_transfer(node, |st| {
                transfer::copy_local(st, VersionRef { path, stamp }, dest)
            })?;
            if let Some(chunks) = copied {
                return Ok(Ok(chunks));
            }
        }
        let streams = if size >= PARALLEL_FETCH_MIN {
            FETCH_STREAMS
        } else {
            1
        };
        // Parts start at chunks, each hashed by its stream as it lands.
        let part = size.div_ceil(streams).next_multiple_of(sums::CHUNK as u64);
        let results: Vec<FsResult<(u64, Vec<u64>)>> = std::thread::scope(|s| {
            let parts: Vec<_> = (0..streams)
                .map(|k| {
                    // The last part asks for everything left, however long.
                    let len = if k + 1 == streams { u64::MAX } else { part };
                    s.spawn(move || {
                        let mut trail = sums::Trailing::new(dest, k * part);
                        let size = self.with_transfer(node, |st| {
                            let landed = |at| trail.landed(at);
                            transfer::fetch(
                                st,
                                VersionRef { path, stamp },
                                (k * part, len),
                                dest,
                                landed,
                            )
                        })?;
                        let sums = trail.finish().map_err(|e| FsError::io(path, &e))?;
                        Ok((size, sums))
                    })
                })
                .collect();
            parts
                .into_iter()
                .map(|p| {
                    p.join()
                        .unwrap_or_else(|_| Err(FsError::new(Errno::EIO, path)))
                })
                .collect()
        });
        let mut chunks = Chunks {
            size,
            sums: Vec::new(),
        };
        for r in results {
            let (n, sums) = r?;
            if n != size {
                return Ok(Err(Mismatch::Size(n)));
            }
            chunks.sums.extend(sums);
        }
        Ok(Ok(chunks))
    }

    /// Runs `f` on an idle authenticated transfer stream to `node`, returning
    /// the stream to the pool unless the connection failed.
    pub(super) fn with_transfer<T>(
        &self,
        node: NodeId,
        f: impl FnOnce(&mut TcpStream) -> io::Result<FsResult<T>>,
    ) -> FsResult<T> {
        let pool = &self.inner.transfers[node as usize];
        let endpoint = self.endpoint(node)?;
        // A stream the daemon closed while it sat idle (the daemon was
        // restarted) is dropped, not taken for the daemon being down.
        let pooled = std::iter::from_fn(|| pool.lock().expect("transfer pool").pop())
            .find(|s| !transfer::closed_by_peer(s));
        let mut stream = match pooled {
            Some(s) => s,
            None => endpoint.open_blocking(Channel::Transfer)?,
        };
        match f(&mut stream) {
            Ok(result) => {
                pool.lock().expect("transfer pool").push(stream);
                result
            }
            Err(e) => Err(transfer::this_side(&e).unwrap_or_else(|| endpoint.unreachable(e))),
        }
    }

    /// Makes the current data of `path` present in this node's store and
    /// returns where it is, for handing to a program. A remote file is
    /// fetched whole and registered as a cached replica.
    pub async fn local_path(&self, path: &str) -> FsResult<PathBuf> {
        self.local_copy(path).await.map(|c| c.path)
    }

    /// `local_path`, also saying how big the file is and whether it was
    /// fetched from another node.
    pub async fn local_copy(&self, path: &str) -> FsResult<LocalCopy> {
        self.local_copy_from(path, None).await
    }

    /// `local_copy` starting from `known`, a record of `path` read shortly
    /// before (by whoever placed the task that reads it): the owner is
    /// asked only if it no longer leads to the bytes.
    pub async fn local_copy_from(&self, path: &str, known: Option<&Record>) -> FsResult<LocalCopy> {
        let path = normalise(path)?;
        self.published(&path).await;
        let mut rec = match known {
            // Seen while a version was being written (one made again, say)
            // or before any was closed: its empty last version may be gone
            // by now.
            Some(rec) if rec.lock.is_none() && rec.version > 0 => rec.clone(),
            _ => self.stat(&path).await?,
        };
        let mut attempts = 0;
        loop {
            match self.make_local(&path, &rec).await {
                // Rewritten while we fetched it (the old copies are dropped
                // once the new version is published), or its copies moved
                // since `known` was read: fetch what is there now.
                Err(e) if attempts < REREADS => {
                    let now = self.stat(&path).await?;
                    if now == rec {
                        return Err(e);
                    }
                    tracing::debug!("{path} changed while fetched ({e}); again");
                    rec = now;
                    attempts += 1;
                }
                other => return other,
            }
        }
    }

    /// Opens this node's copy of the current version of `path` (as
    /// `local_copy_from` makes it). A copy made local can be dropped before
    /// it is opened, its version replaced by another node's write: then the
    /// version current now is opened, so a reader gets the old or the new
    /// version, never "no such file".
    pub(crate) async fn open_current(
        &self,
        path: &str,
        known: Option<&Record>,
    ) -> FsResult<(File, LocalCopy)> {
        let mut known = known.cloned();
        let mut attempts = 0;
        loop {
            let local = self.local_copy_from(path, known.as_ref()).await?;
            match File::open(&local.path) {
                Ok(file) => return Ok((file, local)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < REREADS => {
                    tracing::debug!("{path}: copy {} dropped before it was opened", local.stamp);
                    known = None;
                    attempts += 1;
                }
                Err(e) => return Err(FsError::io(path, &e)),
            }
        }
    }

    /// Waits until normalised `path`, if a new file of a held directory,
    /// is published: it is read once it is.
    pub(crate) async fn published(&self, path: &str) {
        if let Some((held, name)) = self.held_parent(path) {
            if matches!(held.known(name), Some(Known::Pending(_))) {
                held.flushed().await;
            }
        }
    }

    pub(super) async fn make_local(&self, path: &str, rec: &Record) -> FsResult<LocalCopy> {
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        let me = self.inner.me;
        let mut local = LocalCopy {
            path: self.inner.store.data_path(path, rec.stamp),
            size: rec.size,
            stamp: rec.stamp,
            sum: rec.sum,
            fetched: true,
            never_closed: rec.version == 0,
            record: rec.clone(),
        };
        // Copies found bad (set aside), and the holders left to read from.
        let mut bad = Vec::new();
        let mut rec = rec.clone();
        if self.holds(&rec) {
            match self.check_local(path, &rec, &local.path).await? {
                Ok(()) => {
                    local.fetched = false;
                    return Ok(local);
                }
                Err(why) => {
                    self.bad_copy(path, &rec, me, why).await?;
                    rec.holders.retain(|&h| h != me);
                    bad.push((me, why));
                }
            }
        }
        // One fetch of a version per node: a client of this node fetching
        // it already is waited for, and its copy used. (A diskless client's
        // scratch is its own: it stages every read, but reads its own staged
        // copy again while it is as it was checked.)
        let fetching = match self.inner.diskless {
            true if self.still_checked(path, &rec, &local.path) => {
                local.fetched = false;
                return Ok(local);
            }
            true => None,
            false => {
                let (store, p, stamp) = (self.inner.store.clone(), path.to_string(), rec.stamp);
                Some(blocking(move || store.lock_fetch(&p, stamp)).await?)
            }
        };
        if fetching.is_some() && local.path.exists() && bad.is_empty() {
            local.fetched = false;
            return Ok(local);
        }
        // An empty version has no bytes to fetch (a file never closed has no
        // holder: its last closed version is empty).
        if rec.size == 0 {
            self.inner.store.install_empty(path, rec.stamp)?;
        } else {
            loop {
                if rec.holders.is_empty() {
                    return Err(crate::data::verify::no_good_copy(path, &bad));
                }
                let (tmp, file) = self.inner.store.temp_file()?;
                let (from, sent) = match self.fetch_into(path, &rec, file).await {
                    Ok(fetched) => fetched,
                    Err(e) => {
                        self.inner.store.discard(&tmp);
                        return Err(e);
                    }
                };
                if let Err(why) = sent {
                    self.inner.store.discard(&tmp);
                    self.bad_copy(path, &rec, from, why).await?;
                    rec.holders.retain(|&h| h != from);
                    bad.push((from, why));
                    continue;
                }
                self.inner.store.install(&tmp, path, rec.stamp)?;
                self.checked_here(path, &rec);
                break;
            }
        }
        if self.inner.diskless {
            // A staged copy, not a replica the cluster can serve.
            return Ok(local);
        }
        let cached = Request::AddHolder {
            path: path.to_string(),
            version: rec.version,
            node: me,
        };
        expect_ok(self.meta(path, cached).await?)?;
        if !local.record.holders.contains(&me) {
            local.record.holders.push(me);
        }
        if !bad.is_empty() {
            // Back to as many copies as the version keeps, from this good one.
            if let Ok(now) = self.stat(path).await {
                self.replicate_rest(path, &now);
            }
        }
        Ok(local)
    }

    /// Opens `path` for reading, as a local copy (fetched if none is here).
    pub async fn open_read(&self, path: &str) -> FsResult<File> {
        self.open_local(path, None).await.map(|(file, _)| file)
    }

    /// `open_read`, also saying which copy was opened (`local_copy`).
    pub async fn open_local(
        &self,
        path: &str,
        known: Option<&Record>,
    ) -> FsResult<(File, LocalCopy)> {
        let path = normalise(path)?;
        self.open_current(&path, known).await
    }

    /// Reads a whole file.
    pub async fn get(&self, path: &str) -> FsResult<Vec<u8>> {
        let mut file = self.open_read(path).await?;
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| FsError::io(path, &e))?;
        Ok(bytes)
    }

    /// Copies file `path` out to host file `dest` by a node holding it (this
    /// one if it does): staging out to a file system every node's host
    /// sees, without the bytes passing through this client. Returns the
    /// bytes copied.
    pub async fn export(&self, path: &str, dest: &Path) -> FsResult<u64> {
        let path = normalise(path)?;
        let rec = self.stat(&path).await?;
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        if rec.size == 0 {
            return std::fs::write(dest, b"")
                .map(|()| 0)
                .map_err(|e| FsError::io(dest.display().to_string(), &e));
        }
        // This node's copy first; a holder whose copy is bad is set aside
        // and the next one asked.
        let me = self.inner.me;
        let mut holders = rec.holders.clone();
        if self.holds(&rec) {
            holders.retain(|&h| h != me);
            holders.insert(0, me);
        }
        let expect = (rec.size, rec.sum);
        let mut bad = Vec::new();
        for node in holders {
            let exported = if node == me && !self.inner.diskless {
                let (store, src, dst) =
                    (self.inner.store.clone(), path.clone(), dest.to_path_buf());
                blocking(move || store.export(&src, rec.stamp, &dst, expect)).await?
            } else {
                let req = Request::ExportData {
                    path: path.clone(),
                    stamp: rec.stamp,
                    dest: dest.to_path_buf(),
                    size: rec.size,
                    sum: rec.sum,
                };
                match self.call(node, req).await? {
                    Response::Size(n) => Ok(n),
                    Response::BadCopy(why) => Err(why),
                    other => return Err(unexpected(other)),
                }
            };
            match exported {
                Ok(n) => return Ok(n),
                Err(why) => {
                    self.bad_copy(&path, &rec, node, why).await?;
                    bad.push((node, why));
                }
            }
        }
        Err(crate::data::verify::no_good_copy(&path, &bad))
    }
}
