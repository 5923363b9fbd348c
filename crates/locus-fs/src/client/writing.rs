//! Writers: taking a name for a write, and the file being written.

use super::{
    blocking, blocking_failed, expect_ok, leases::LeaseGuard, publish::content_of, publish::Later,
    publish::NewVersion, publish::Output, publish::Publishing, unexpected, Client, CLAIM_TRIES,
};
use crate::client::follow::Follower;
use crate::client::held_dirs::Unclaimed;
use crate::cluster::replica_set;
use crate::data::copy;
use crate::data::sums::{Content, Summer};
use crate::meta::now_ns;
use crate::path::{normalise, split};
use locus_proto::fs::{Kind, Lease, NodeId, Record, Request, Response};
use locus_proto::{Errno, FsError, FsResult};
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An open file being written. Bytes go to a private temporary file in this
/// node's store; `close` publishes them as the file's next version.
pub struct Writer {
    pub(super) client: Client,
    pub(super) path: String,
    pub(super) lease: Lease,
    pub(super) target: NodeId,
    /// Nodes to keep the bytes (`target` and replicas).
    pub(super) copies: u32,
    /// The record when the lock was taken (`None` for a new file).
    pub(super) replacing: Option<Record>,
    pub(super) tmp: PathBuf,
    pub(super) file: Option<File>,
    /// Whether the first replica may still be copied as the file is
    /// written: until something but `Write` touches the file.
    pub(super) may_follow: bool,
    /// That copy, from the first `write` on.
    pub(super) follower: Option<Follower>,
    /// The bytes hashed as they are written, while they are only appended
    /// from the start (`None` once the file is touched otherwise: it is
    /// read at `close`).
    pub(super) summer: Option<Summer>,
    pub(super) closed: bool,
    pub(super) _renewal: LeaseGuard,
    /// A new file of a held directory, not yet named to any daemon.
    pub(super) unclaimed: Option<Arc<Unclaimed>>,
}

impl Writer {
    /// The path this writer publishes to.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The underlying local file, for seeking or positioned writes (the
    /// first replica is then copied at `close`).
    pub fn file(&mut self) -> &mut File {
        self.may_follow = false;
        self.follower = None;
        self.summer = None;
        self.file.as_mut().expect("open until closed")
    }

    /// The written bytes, to read (the copy made as they are written goes on).
    pub fn written(&self) -> &File {
        self.file.as_ref().expect("open until closed")
    }

    /// Publishes the written bytes as the file's next version: stores them
    /// under a new stamp on the target node, then commits size, mtime,
    /// version and stamp and releases the write lock. If this fails, the
    /// previous version is kept, readable and unlocked.
    pub async fn close(mut self) -> FsResult<Record> {
        if self.unclaimed.is_some() {
            match self.claimed().await {
                Ok(true) => {}
                Ok(false) => {
                    let (out, held) = self.take_output();
                    return self
                        .client
                        .publish_held(&out, held, Publishing::Flushed)
                        .await;
                }
                // Taken by another writer while the directory was recalled.
                Err(e) => {
                    self.drop_unclaimed();
                    return Err(e);
                }
            }
        }
        self.closed = true;
        drop(self.file.take().expect("open until closed"));
        let content = self.content().await?;
        // A copy on a node that does not answer would not count: the
        // replica goes to the next node that does.
        let follower = match self.follower.take() {
            Some(f) if self.client.ping(f.node).await.is_ok() => Some(f),
            _ => None,
        };
        let made = match follower {
            Some(f) => {
                let (node, path, token) = (f.node, self.path.clone(), self.lease.token);
                match blocking(move || f.finish(&path, token, content)).await {
                    Ok(()) => vec![node],
                    Err(e) => {
                        tracing::debug!("{}: replica copy while writing: {e}", self.path);
                        Vec::new()
                    }
                }
            }
            None => Vec::new(),
        };
        let replacing = self.replacing.as_ref();
        self.client
            .finish_write(
                &self.tmp,
                &self.path,
                NewVersion::plain(self.lease.token, content),
                (self.target, self.copies, &made),
                replacing,
            )
            .await
    }

    /// What the written file holds: hashed as written if it was only
    /// appended to, else read.
    async fn content(&mut self) -> FsResult<Content> {
        let (tmp, path) = (self.tmp.clone(), self.path.clone());
        let written = self.summer.take().map(Summer::finish);
        blocking(move || content_of(&path, &tmp, written)).await
    }

    /// Closes a writer that wrote nothing: a file it created stays, empty,
    /// with no version published (one metadata request); an existing file
    /// it was opened on is published as written (truncated or as it was).
    pub async fn close_unwritten(mut self) -> FsResult<()> {
        if self.replacing.is_some() || self.unclaimed.is_some() {
            return self.close().await.map(drop);
        }
        self.closed = true;
        self.file.take();
        self.client.inner.store.discard(&self.tmp);
        self.client
            .unlock(&self.path, self.lease.token)
            .await
            .and_then(expect_ok)
    }

    /// Discards the written bytes and releases the lock, leaving the file
    /// as it was (a file this writer created is removed).
    pub async fn abort(mut self) {
        if self.unclaimed.is_some() && !matches!(self.claimed().await, Ok(true)) {
            return self.drop_unclaimed();
        }
        self.closed = true;
        self.file.take();
        self.client.inner.store.discard(&self.tmp);
        let created = self.replacing.is_none();
        self.client
            .give_up(&self.path, self.lease.token, created)
            .await;
    }
}

/// Writers of new files in held directories.
impl Writer {
    /// Whether the name was claimed the usual way (the writer then goes on
    /// as any other); if not, it is this writer's to publish as new.
    async fn claimed(&mut self) -> FsResult<bool> {
        let Some(u) = self.unclaimed.clone() else {
            return Ok(true);
        };
        match u.closing().await {
            None => Ok(false),
            Some(claimed) => {
                self.unclaimed = None;
                self._renewal = LeaseGuard(u.take_renewal());
                claimed.map(|()| true)
            }
        }
    }

    /// The written file as an output to publish, and its held directory.
    fn take_output(&mut self) -> (Output, Option<Arc<crate::client::held_dirs::Held>>) {
        self.closed = true;
        self.file.take();
        let mode = self.unclaimed.take().map_or(0o644, |u| u.mode);
        let written = self.summer.take().map(Summer::finish);
        let out = Output {
            path: self.path.clone(),
            local: self.tmp.clone(),
            lease: self.lease,
            mode,
            written,
            made_by: None,
        };
        let held = self.client.held_parent(&self.path).map(|(h, _)| h);
        (out, held)
    }

    /// Publishes a new file of a held directory in the background: the
    /// record it will have is returned at once, and the directory answers
    /// for it until the daemons do. Anything else comes back to be closed
    /// as usual.
    pub async fn close_later(mut self) -> Result<Record, Writer> {
        if !matches!(self.claimed().await, Ok(false)) {
            return Err(self);
        }
        let size = match self.file.as_ref().map(File::metadata) {
            Some(Ok(m)) => m.len(),
            _ => return Err(self),
        };
        let slots = self.client.inner.publishing.clone();
        let Ok(slot) = slots.acquire_owned().await else {
            return Err(self);
        };
        let (out, held) = self.take_output();
        // Its hash is made as it is published (the record named meanwhile
        // is read only once it is).
        let record = out.first_version(size, None, vec![self.client.inner.me]);
        if let Some(held) = &held {
            held.closed(split(&out.path).map_or("", |(_, n)| n), record.clone());
        }
        self.client.publish_later(Later {
            out,
            held,
            _slot: slot,
        });
        Ok(record)
    }

    /// Drops a new file of a held directory that was never claimed.
    fn drop_unclaimed(&mut self) {
        self.closed = true;
        self.file.take();
        self.unclaimed = None;
        self.client.inner.store.discard(&self.tmp);
        if let Some((held, name)) = self.client.held_parent(&self.path) {
            held.settled(name, false);
        }
    }
}

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.may_follow) {
            self.follower = self.client.follower(&self.tmp, self.target, self.copies);
        }
        let n = self.file.as_mut().expect("open until closed").write(buf)?;
        if let Some(summer) = &mut self.summer {
            summer.update(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("open until closed").flush()
    }
}

impl Drop for Writer {
    /// A writer dropped without `close` is aborted in the background (its
    /// lease ends the lock if the release cannot be sent).
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        if self.unclaimed.is_some() {
            return self.drop_unclaimed();
        }
        self.client.inner.store.discard(&self.tmp);
        let (client, path, token) = (self.client.clone(), self.path.clone(), self.lease.token);
        let created = self.replacing.is_none();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { client.give_up(&path, token, created).await });
        }
    }
}

/// A name taken for a write (`claim`): where a new file's bytes go, or the
/// record of the file it rewrites; and how many nodes keep them.
pub(super) struct Claim {
    pub(super) target: Option<NodeId>,
    pub(super) replacing: Option<Record>,
    pub(super) copies: u32,
}

impl Client {
    fn new_file_target(&self, path: &str, hint: Option<NodeId>) -> NodeId {
        hint.unwrap_or_else(|| {
            let seq = self.inner.new_files.fetch_add(1, Ordering::Relaxed);
            self.inner
                .placement
                .choose(path, self.inner.me, self.node_count(), seq)
        })
    }

    /// Creates a new empty file (`EEXIST` if the name is taken) without
    /// opening it, like `open(O_CREAT|O_EXCL)` then `close`. An empty file has
    /// no stored data, so this costs two metadata inserts and nothing else.
    pub async fn create_empty(&self, path: &str) -> FsResult<Record> {
        let path = normalise(path)?;
        let record = Record::new(Kind::File, 0o644, now_ns());
        Ok(self.create_name(&path, record, None).await?.1)
    }

    /// Creates a new file (`EEXIST` if the name is taken) and opens it for
    /// writing. Its data lands on this node unless a hint or the placement
    /// policy names another.
    pub async fn create(&self, path: &str) -> FsResult<Writer> {
        self.create_with_mode(path, 0o644).await
    }

    /// `create` of a file whose permission bits are `mode`: set by the same
    /// request that makes the name.
    pub async fn create_with_mode(&self, path: &str, mode: u32) -> FsResult<Writer> {
        let path = normalise(path)?;
        if let Some(w) = self.unclaimed_writer(&path, mode)? {
            return Ok(w);
        }
        let lease = self.new_lease();
        let record = Record::new(Kind::File, mode & 0o7777, now_ns());
        let (hint, rec) = self.create_name(&path, record, Some(lease)).await?;
        let target = self.new_file_target(&path, hint);
        let copies = self.inner.copies.of(rec.copies);
        self.writer(path, lease, (target, copies), None).await
    }

    /// Opens an existing file for writing, taking its write lock (`EBUSY` if
    /// another writer has it). Unless `truncate`, the current contents are
    /// made local first and writing continues at their end. On close this
    /// node becomes the file's holder.
    pub async fn open_write(&self, path: &str, truncate: bool) -> FsResult<Writer> {
        let path = normalise(path)?;
        let lease = self.new_lease();
        let rec = self.lock(&path, lease).await?;
        self.open_locked(path, lease, rec, truncate).await
    }

    async fn open_locked(
        &self,
        path: String,
        lease: Lease,
        rec: Record,
        truncate: bool,
    ) -> FsResult<Writer> {
        let me = self.inner.me;
        let copies = self.inner.copies.of(rec.copies);
        let mut w = self
            .writer(path, lease, (me, copies), Some(rec.clone()))
            .await?;
        if !truncate && rec.size > 0 {
            if let Err(e) = self.copy_current(&w.path, &rec, &w.tmp).await {
                w.abort().await;
                return Err(e);
            }
            w.file()
                .seek(io::SeekFrom::End(0))
                .map_err(|e| FsError::io(w.path.clone(), &e))?;
        }
        Ok(w)
    }

    /// A writer holding `lease` on `path`, writing into a new temporary file;
    /// the lock is released if it cannot be made.
    async fn writer(
        &self,
        path: String,
        lease: Lease,
        (target, copies): (NodeId, u32),
        replacing: Option<Record>,
    ) -> FsResult<Writer> {
        let renewal = self.keep_lease(&path, lease);
        let (tmp, file) = match self.inner.store.temp_file() {
            Ok(t) => t,
            Err(e) => {
                let _ = self.unlock(&path, lease.token).await;
                return Err(e);
            }
        };
        Ok(Writer {
            client: self.clone(),
            path,
            lease,
            target,
            copies,
            replacing,
            tmp,
            file: Some(file),
            may_follow: true,
            follower: None,
            summer: Some(Summer::default()),
            closed: false,
            _renewal: renewal,
            unclaimed: None,
        })
    }

    /// Copies the current contents of `path` into `tmp`, from this node's
    /// store or from a holder.
    async fn copy_current(&self, path: &str, rec: &Record, tmp: &Path) -> FsResult<()> {
        let dest = std::fs::OpenOptions::new()
            .write(true)
            .open(tmp)
            .map_err(|e| FsError::io(path, &e))?;
        // Made local (and checked) first: a write goes on from the bytes
        // that were written.
        let local = self.make_local(path, rec).await?;
        File::open(&local.path)
            .and_then(|from| copy::whole(&from, &dest))
            .map(drop)
            .map_err(|e| FsError::io(path, &e))
    }

    /// Opens `path` for writing from empty, creating it if it does not exist.
    pub async fn create_or_truncate(&self, path: &str) -> FsResult<Writer> {
        match self.create(path).await {
            Err(e) if e.code == Errno::EEXIST => {
                let path = normalise(path)?;
                let lease = self.new_lease();
                let rec = self.lock_created(&path, lease).await?;
                self.open_locked(path, lease, rec, true).await
            }
            other => other,
        }
    }

    /// Writes a whole file, creating it (and its missing parent
    /// directories) or replacing its contents: written in a private place,
    /// then published as `commit` does (a new file in one request where one
    /// daemon keeps its name and record).
    pub async fn put(&self, path: &str, data: &[u8]) -> FsResult<Record> {
        let out = self.output(path)?;
        let published = match std::fs::write(&out.local, data) {
            Ok(()) => self.commit(&out).await,
            Err(e) => Err(FsError::io(&out.path, &e)),
        };
        if published.is_err() {
            self.discard(&out);
        }
        published
    }

    /// Takes the name `path` for a write holding `lease`: creates it (and
    /// says where its data goes), or locks the existing file (and returns
    /// its record); with the copies its versions get.
    pub(super) async fn claim(&self, path: &str, lease: Lease, mode: u32) -> FsResult<Claim> {
        let record = Record::new(Kind::File, mode, now_ns());
        let new = |hint| Some(self.new_file_target(path, hint));
        let mut tries = 0;
        let (target, replacing) = loop {
            let created = match self.create_name(path, record.clone(), Some(lease)).await {
                Err(e) if e.code == Errno::EEXIST => None,
                made => Some(made?),
            };
            let Some((hint, rec)) = created else {
                match self.lock_created(path, lease).await {
                    // Named in its parent, its record lost with its owner
                    // (taken over): made again, as new, where its keys are
                    // now (unless another writer just did: then locked as
                    // any).
                    Err(e) if Client::owner_lost(&e) => {
                        match self.record_again(path, record, Some(lease)).await {
                            Ok((hint, rec)) => break (new(hint), rec),
                            Err(e) if e.code == Errno::EEXIST => {
                                break (None, self.lock_created(path, lease).await?)
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    // Unlinked since its name was found taken: the name may
                    // be free now (a name a crash left without its record
                    // stays taken, and this fails).
                    Err(e) if e.code == Errno::ENOENT && tries < CLAIM_TRIES => {
                        tries += 1;
                        continue;
                    }
                    locked => break (None, locked?),
                }
            };
            break (new(hint), rec);
        };
        Ok(Claim {
            target,
            copies: self.inner.copies.of(replacing.copies),
            replacing: target.is_none().then_some(replacing),
        })
    }

    /// Copies host file `source` in as the next version of `path`, creating
    /// the name if needed, its bytes read by the node the placement policy
    /// picks (also for a file that exists) straight from `source`: staging
    /// in from a file system every node's host sees, without the bytes
    /// passing through this client. If this fails, the previous version is
    /// kept, readable and unlocked.
    pub async fn import(&self, path: &str, source: &Path) -> FsResult<Record> {
        let path = normalise(path)?;
        let lease = self.new_lease();
        let claimed = self.claim(&path, lease, 0o644).await?;
        let replacing = claimed.replacing;
        let target = claimed
            .target
            .unwrap_or_else(|| self.new_file_target(&path, None));
        let _renewal = self.keep_lease(&path, lease);
        // The replicas' nodes read the source too, at the same time.
        let copies = replica_set(target, self.node_count(), claimed.copies);
        let imports: Vec<_> = copies
            .iter()
            .map(|&node| {
                let (c, p, src) = (self.clone(), path.clone(), source.to_path_buf());
                tokio::spawn(async move { c.import_on(node, &p, lease.token, &src).await })
            })
            .collect();
        let mut copied = Vec::new();
        for i in imports {
            copied.push(i.await.map_err(blocking_failed).and_then(|r| r));
        }
        // A replica counts if it holds what the first copy does (the
        // source may change while they read it).
        let first = copied[0].as_ref().ok().copied();
        let (mut made, mut differ) = (Vec::new(), Vec::new());
        for (&node, c) in copies.iter().zip(&copied) {
            match c {
                Ok(c) if Some(*c) == first => made.push(node),
                Ok(_) => differ.push(node),
                Err(_) => {}
            }
        }
        match copied.swap_remove(0) {
            Ok(content) => {
                if !differ.is_empty() {
                    tracing::warn!("{path}: changed while copied in; copies on {differ:?} dropped");
                    self.drop_copies(&path, differ, lease.token).await;
                }
                let replacing = replacing.as_ref();
                let version = NewVersion::plain(lease.token, content);
                self.publish(&path, version, made, replacing).await
            }
            Err(e) => {
                // Copied in or not, an unpublished stamp is not kept.
                self.drop_copies(&path, copies, lease.token).await;
                self.give_up(&path, lease.token, replacing.is_none()).await;
                Err(e)
            }
        }
    }

    /// Has node `node` copy host file `source` in as copy `stamp` of `path`
    /// (this client itself when it is that node's).
    pub(super) async fn import_on(
        &self,
        node: NodeId,
        path: &str,
        stamp: u64,
        source: &Path,
    ) -> FsResult<Content> {
        if node == self.inner.me && !self.inner.diskless {
            let (store, p, src) = (
                self.inner.store.clone(),
                path.to_string(),
                source.to_path_buf(),
            );
            return blocking(move || store.import(&src, &p, stamp)).await;
        }
        let req = Request::ImportData {
            path: path.to_string(),
            stamp,
            source: source.to_path_buf(),
        };
        match self.call(node, req).await? {
            Response::Content { size, sum } => Ok(Content { size, sum }),
            other => Err(unexpected(other)),
        }
    }
}
