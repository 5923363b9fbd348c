//! Publishing written files: a new version committed on its owner, one
//! at a time, in batches, or later in the background.

use super::{blocking, unexpected, Client};
use crate::client::copies::before_publishing;
use crate::data::sums::{self, Chunks, Content};
use crate::data::version::VersionRef;
use crate::meta::now_ns;
use crate::path::{normalise, split};
use crate::peer::is_unreachable;
use crate::placement::Placement;
use futures_util::future::join_all;
use locus_proto::fs::{Kind, Lease, NodeId, Record, Request, Response, Sum};
use locus_proto::{Errno, FsError, FsResult};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A file closed in a held directory, to publish in the background.
pub(super) struct Later {
    pub(super) out: Output,
    pub(super) held: Option<Arc<crate::client::held_dirs::Held>>,
    pub(super) _slot: tokio::sync::OwnedSemaphorePermit,
}

tokio::task_local! {
    /// Set while a held directory's files are published or claimed: those
    /// requests go out without giving the directory back; `Lazy` ones (in
    /// the background: no program waits for them) are answered before
    /// their commit is flushed.
    pub(super) static PUBLISHING: Publishing;
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Publishing {
    Lazy,
    Flushed,
}

/// Background publications one client has in flight at most.
pub(super) const PUBLISHING_AT_ONCE: usize = 128;

/// Publications of a new file that fail because a daemon cannot be reached
/// are tried again this many times, a second apart (a daemon restarting).
const PUBLISH_TRIES: u32 = 30;

/// A version about to be committed: the write lock's token that names its
/// copies, what it holds, and the run's task that made it, if one did.
pub(super) struct NewVersion<'a> {
    token: u64,
    content: Content,
    made_by: Option<&'a str>,
}

impl NewVersion<'_> {
    /// A version no run's task made (a library writer's, an import).
    pub(super) fn plain(token: u64, content: Content) -> NewVersion<'static> {
        NewVersion {
            token,
            content,
            made_by: None,
        }
    }
}

/// A file a program writes in a private place, then publishes with
/// `Client::commit` (or drops with `Client::discard`).
#[derive(Debug, Clone)]
pub struct Output {
    /// The logical path it will be published as.
    pub path: String,
    /// Where the program writes it (its file name is the logical one's).
    pub local: PathBuf,
    pub(super) lease: Lease,
    /// The permission bits it gets if it is new.
    pub(super) mode: u32,
    /// What a writer of this client wrote, hashed as it was written (a
    /// program's output is read once it is done).
    pub(super) written: Option<Chunks>,
    /// The run's task that writes it (`Record::made_by`).
    pub(super) made_by: Option<String>,
}

/// A new file stored and ready to be named: its committed record, the
/// directories above it its daemon keeps too, and the nodes its bytes were
/// also copied to.
pub(super) struct NewFile {
    record: Record,
    parents: Vec<String>,
    replicas: Vec<NodeId>,
}

impl NewFile {
    /// The one request that names `out`'s file where one daemon keeps both
    /// its entry and its record (and makes the `parents` it lacks).
    fn request(&self, out: &Output) -> Request {
        // The path was split when the output was made.
        let (parent, name) = split(&out.path).unwrap_or(("/", ""));
        Request::CreateFile {
            parent: parent.to_string(),
            name: name.to_string(),
            path: out.path.clone(),
            record: self.record.clone(),
            parents: self.parents.clone(),
            lease: None,
        }
    }
}

impl Output {
    /// Names the run's task that writes it, kept in its record.
    pub fn made_by(&mut self, task: String) {
        self.made_by = Some(task);
    }

    /// The record of this file's first version, `size` bytes hashing to
    /// `sum` on `holders`.
    pub(super) fn first_version(
        &self,
        size: u64,
        sum: Option<Sum>,
        holders: Vec<NodeId>,
    ) -> Record {
        let mut record = Record::new(Kind::File, self.mode, now_ns());
        record.size = size;
        record.sum = sum;
        record.version = 1;
        record.stamp = self.lease.token;
        record.holders = holders;
        record.made_by.clone_from(&self.made_by);
        record
    }
}

/// What the file a program wrote for `out` holds (`EISDIR` for a
/// directory), read off the async threads.
pub(super) async fn output_content(out: &Output) -> FsResult<Content> {
    let (path, local, written) = (out.path.clone(), out.local.clone(), out.written.clone());
    blocking(move || content_of(&path, &local, written)).await
}

/// What file `local`, written for `path`, holds: `written`, hashed by its
/// writer as it wrote, while the file is as long as that; else read. Its
/// chunks' hashes are kept with it.
pub(super) fn content_of(path: &str, local: &Path, written: Option<Chunks>) -> FsResult<Content> {
    let io_err = |e: &io::Error| FsError::io(path, e);
    let file = File::open(local).map_err(|e| io_err(&e))?;
    let meta = file.metadata().map_err(|e| io_err(&e))?;
    if meta.is_dir() {
        return Err(FsError::new(Errno::EISDIR, path));
    }
    let chunks = match written {
        Some(c) if meta.len() == c.size => c,
        _ => sums::of_file(&file).map_err(|e| io_err(&e))?,
    };
    sums::keep(&file, &chunks);
    Ok(chunks.content())
}

impl Client {
    /// Queues `later` for the publisher task (started if it is not running):
    /// files closed together are published together, their requests
    /// sharing frames and wake-ups.
    pub(super) fn publish_later(&self, later: Later) {
        let mut queue = self.inner.to_publish.lock().expect("publish queue");
        queue.0.push(later);
        if std::mem::replace(&mut queue.1, true) {
            return;
        }
        let client = self.clone();
        tokio::spawn(async move {
            loop {
                let batch = {
                    let mut queue = client.inner.to_publish.lock().expect("publish queue");
                    if queue.0.is_empty() {
                        queue.1 = false;
                        return;
                    }
                    std::mem::take(&mut queue.0)
                };
                let client = &client;
                join_all(batch.into_iter().map(|later| async move {
                    let published = client.publish_held(&later.out, later.held, Publishing::Lazy);
                    if let Err(e) = published.await {
                        tracing::warn!("{}: publishing after its close: {e}", later.out.path);
                    }
                }))
                .await;
            }
        });
    }

    /// Publishes `out` as a new file (or the next version of a file made
    /// meanwhile), trying again while a daemon cannot be reached.
    pub(super) async fn publish_new(&self, out: &Output, how: Publishing) -> FsResult<Record> {
        let mut tries = 0;
        loop {
            match PUBLISHING.scope(how, self.commit_named(out)).await {
                Err(e) if is_unreachable(&e) && tries < PUBLISH_TRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                other => return other,
            }
        }
    }

    /// A private place in this node's store for a program to write `path`
    /// (the file name is kept), published by `commit` or removed by
    /// `discard`. Nothing is visible, and no version is touched, before
    /// `commit` succeeds.
    pub fn output(&self, path: &str) -> FsResult<Output> {
        let path = normalise(path)?;
        let (_, name) = split(&path)?;
        let local = self.inner.store.private_file(name)?;
        Ok(Output {
            lease: self.new_lease(),
            path,
            local,
            mode: 0o644,
            written: None,
            made_by: None,
        })
    }

    /// Removes an output that will not be committed (its program failed).
    pub fn discard(&self, out: &Output) {
        self.inner.store.discard(&out.local);
    }

    /// Publishes the file a program wrote at `out.local` as the next version
    /// of `out.path`, creating the name (and missing parent directories) if
    /// needed. A new file goes where a
    /// placement hint or the placement policy says (its bytes are moved
    /// there); a rewritten file, like `open_write`, stays on this node. If
    /// this fails, the previous version is kept, readable and unlocked.
    pub async fn commit(&self, out: &Output) -> FsResult<Record> {
        let content = output_content(out).await?;
        if let Some(new) = self.prepare_new(out, content, false).await? {
            let answer = self.decided(&out.path, new.request(out)).await;
            if let Some(record) = self.finish_new(out, new, answer).await? {
                return Ok(record);
            }
        }
        self.commit_claimed(out, content).await
    }

    /// `commit` of a new file whose bytes were written where no one saw
    /// them (in a held directory): they are stored first, then named with
    /// their record already committed, so a reader never finds the name
    /// without its bytes, even where two daemons keep name and record.
    async fn commit_named(&self, out: &Output) -> FsResult<Record> {
        let content = output_content(out).await?;
        if let Some(new) = self.prepare_new(out, content, true).await? {
            let named = self.create_name(&out.path, new.record.clone(), None).await;
            let answer = named.map(|(hint, record)| Response::Created { record, hint });
            if let Some(record) = self.finish_new(out, new, answer).await? {
                return Ok(record);
            }
        }
        self.commit_claimed(out, content).await
    }

    /// `commit` of many outputs (one program's) as one batch: the new files
    /// one daemon keeps entirely go to it as one `Batch` (one transaction,
    /// one commit to disk), the rest as `commit` does, all at once. One
    /// result per output, in order.
    pub async fn commit_all(&self, outs: &[Output]) -> Vec<FsResult<Record>> {
        let prepared = join_all(outs.iter().map(|out| async move {
            let content = output_content(out).await?;
            Ok((content, self.prepare_new(out, content, false).await?))
        }))
        .await;
        let mut batches: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
        for (i, p) in prepared.iter().enumerate() {
            if let Ok((_, Some(_))) = p {
                batches
                    .entry(self.owner(&outs[i].path))
                    .or_default()
                    .push(i);
            }
        }
        let mut answers: Vec<Option<FsResult<Response>>> = outs.iter().map(|_| None).collect();
        let sent = join_all(batches.into_values().map(|batch| {
            let ops = batch
                .iter()
                .filter_map(|&i| match &prepared[i] {
                    Ok((_, Some(new))) => Some(new.request(&outs[i])),
                    _ => None,
                })
                .collect();
            let first = outs[batch[0]].path.as_str();
            async move { (self.decided(first, Request::Batch { ops }).await, batch) }
        }))
        .await;
        for (answer, batch) in sent {
            let n = batch.len();
            let each: Vec<FsResult<Response>> = match answer {
                Ok(Response::Batch(rs)) if rs.len() == n => rs
                    .into_iter()
                    .map(|r| match r {
                        Response::Err(e) => Err(e),
                        r => Ok(r),
                    })
                    .collect(),
                Ok(r) => vec![Err(unexpected(r)); n],
                Err(e) => vec![Err(e); n],
            };
            for (i, a) in batch.into_iter().zip(each) {
                answers[i] = Some(a);
            }
        }
        join_all(outs.iter().zip(prepared).zip(answers).map(
            |((out, prepared), answer)| async move {
                let (content, new) = prepared?;
                if let (Some(new), Some(answer)) = (new, answer) {
                    if let Some(record) = self.finish_new(out, new, answer).await? {
                        return Ok(record);
                    }
                }
                self.commit_claimed(out, content).await
            },
        ))
        .await
    }

    /// `commit` the usual way: claim the name (making missing parents),
    /// then store and publish the bytes.
    async fn commit_claimed(&self, out: &Output, content: Content) -> FsResult<Record> {
        let path = out.path.as_str();
        let lease = out.lease;
        let claimed = match self.claim(path, lease, out.mode).await {
            Err(e) => {
                self.make_parents(path, e).await?;
                self.claim(path, lease, out.mode).await?
            }
            Ok(c) => c,
        };
        let target = claimed.target.unwrap_or(self.inner.me);
        let replacing = claimed.replacing;
        let _renewal = self.keep_lease(path, lease);
        let version = NewVersion {
            token: lease.token,
            content,
            made_by: out.made_by.as_deref(),
        };
        self.finish_write(
            &out.local,
            path,
            version,
            (target, claimed.copies, &[]),
            replacing.as_ref(),
        )
        .await
    }

    /// The first half of `commit` of a new file in one round trip, where it
    /// can be: the client places new files on its own node and one daemon
    /// keeps both the parent's entries and the file's record. The bytes are
    /// stored, and the `CreateFile` that makes name and record at once,
    /// committed, is returned to be sent. `None` when the usual way must be
    /// taken.
    /// With `two_daemons`, also where two daemons keep name and record
    /// (the request is then made by `create_name`).
    async fn prepare_new(
        &self,
        out: &Output,
        content: Content,
        two_daemons: bool,
    ) -> FsResult<Option<NewFile>> {
        let (path, token) = (out.path.as_str(), out.lease.token);
        let parent = split(path)?.0;
        let me = self.inner.me;
        if self.inner.diskless
            || self.inner.placement != Placement::Local
            || (self.owner(parent) != self.owner(path) && !two_daemons)
        {
            return Ok(None);
        }
        let store = &self.inner.store;
        let copies = self.inner.copies.in_dir(parent, Instant::now());
        let replicas = self
            .push_replicas(
                &out.local,
                (VersionRef { path, stamp: token }, Some(content.sum)),
                me,
                &[],
                before_publishing(copies),
            )
            .await;
        let installed = match content.size {
            0 => store.install_empty(path, token),
            _ => store.install(&out.local, path, token),
        };
        if let Err(e) = installed {
            store.discard(&out.local);
            self.drop_copies(path, replicas, token).await;
            return Err(e);
        }
        let holders = std::iter::once(me).chain(replicas.iter().copied());
        Ok(Some(NewFile {
            record: out.first_version(content.size, Some(content.sum), holders.collect()),
            parents: self.kept_with(path),
            replicas,
        }))
    }

    /// The second half, given the daemon's `answer`: the record, or `None`
    /// (the bytes back in the output's place) when the usual way must be
    /// taken: the name exists, or a placement hint puts the data elsewhere.
    /// Missing parents the daemon does not keep are made, and the request
    /// sent again.
    async fn finish_new(
        &self,
        out: &Output,
        new: NewFile,
        mut answer: FsResult<Response>,
    ) -> FsResult<Option<Record>> {
        let (path, token) = (out.path.as_str(), out.lease.token);
        let (parent, _) = split(path)?;
        if matches!(&answer, Err(e) if e.code == Errno::ENOENT)
            && self.mkdir_all(parent).await.is_ok()
        {
            answer = self.decided(path, new.request(out)).await;
        }
        // Stored as a name of the store's empty file: the output's file stays.
        let empty = new.record.size == 0;
        let NewFile { replicas, .. } = new;
        let store = &self.inner.store;
        // The bytes back in the output's place (an empty file never left it).
        let uninstall = || match empty {
            true => store.drop_copy(path, token),
            false => store.uninstall(path, token, &out.local),
        };
        let published = match answer {
            Ok(Response::Created { record, .. }) => {
                self.inner
                    .copies
                    .learn(parent, record.copies, Instant::now());
                self.checked_here(path, &record);
                self.replicate_rest(path, &record);
                Ok(Some(record))
            }
            Ok(Response::Hint(_)) => {
                self.drop_copies(path, replicas, token).await;
                uninstall().map(|()| None)
            }
            Err(e) if matches!(e.code, Errno::EEXIST | Errno::ENOENT) => {
                // Made by this very request, sent again after its answer
                // was lost (to the daemon acting for the owner, or the
                // owner back)?
                let made = match e.code {
                    Errno::EEXIST => self.made_by(path, token).await,
                    _ => None,
                };
                match made {
                    Some(rec) => {
                        self.replicate_rest(path, &rec);
                        Ok(Some(rec))
                    }
                    None => {
                        self.drop_copies(path, replicas, token).await;
                        uninstall().map(|()| None)
                    }
                }
            }
            other => {
                let failed = match other {
                    Err(e) => e,
                    Ok(r) => unexpected(r),
                };
                // The answer may be what was lost: the record says whether
                // the file was made; the copy goes only if it was not, and
                // stays if that cannot be learned (as after a commit).
                match self.stat(path).await {
                    Ok(rec) if rec.stamp == token => Ok(Some(rec)),
                    Err(e) if e.code != Errno::ENOENT => Err(failed),
                    _ => {
                        self.drop_copies(path, replicas, token).await;
                        let _ = uninstall();
                        Err(failed)
                    }
                }
            }
        };
        if empty && matches!(published, Ok(Some(_))) {
            self.spare_again(&out.local, path);
        }
        published
    }

    /// Stores `src` (holding `content`) as the version `token` of `path` on node
    /// `target` (and its replicas, besides nodes `made` that hold it
    /// already) and commits it, as the write holding lock `token`; a write
    /// whose bytes cannot be stored is given up.
    pub(super) async fn finish_write(
        &self,
        src: &Path,
        path: &str,
        version: NewVersion<'_>,
        placing: (NodeId, u32, &[NodeId]),
        replacing: Option<&Record>,
    ) -> FsResult<Record> {
        let (token, content) = (version.token, version.content);
        let copies = match self
            .place_bytes(src, (VersionRef { path, stamp: token }, content), placing)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                self.give_up(path, token, replacing.is_none()).await;
                return Err(e);
            }
        };
        self.publish(path, version, copies, replacing).await
    }

    /// Makes copy `token` on `holder` the current version of `path` (the
    /// write holding lock `token` commits), then drops the replaced copies.
    /// If the commit fails, or its outcome cannot be learned, nothing of
    /// the previous version is touched; the new copy is dropped only once
    /// the record is known not to name it.
    pub(super) async fn publish(
        &self,
        path: &str,
        version: NewVersion<'_>,
        copies: Vec<NodeId>,
        replacing: Option<&Record>,
    ) -> FsResult<Record> {
        let NewVersion {
            token,
            content,
            made_by,
        } = version;
        let req = Request::CommitWrite {
            path: path.to_string(),
            token,
            size: content.size,
            mtime_ns: now_ns(),
            holder: copies[0],
            replicas: copies[1..].to_vec(),
            sum: Some(content.sum),
            made_by: made_by.map(String::from),
        };
        let mut answer = self.decided(path, req.clone()).await;
        if matches!(&answer, Err(e) if Client::owner_lost(e)) {
            // The record was lost with its owner while this wrote (its keys
            // taken over): made again where they are now, locked by this
            // write, which is committed to it.
            let mode = replacing.map_or(0o644, |r| r.mode);
            let record = Record::new(Kind::File, mode, now_ns());
            let lease = Lease {
                token,
                ms: self.inner.lease_ms,
            };
            if self.record_again(path, record, Some(lease)).await.is_ok() {
                answer = self.decided(path, req).await;
            }
        }
        let failed = match answer {
            Ok(Response::Committed { record, replaced }) => {
                // A version this write published already (a request sent
                // again after its answer was lost) shares its stamp.
                if replaced.stamp != token {
                    self.drop_copies(path, replaced.holders, replaced.stamp)
                        .await;
                }
                self.checked_here(path, &record);
                self.replicate_rest(path, &record);
                return Ok(record);
            }
            Ok(other) => unexpected(other),
            Err(e) => e,
        };
        // Refused (lock lost, name gone) or unknown (daemon unreachable):
        // ask the record which it was. (A lock lost may be this very
        // commit's, sent again after its answer was lost with its owner.)
        let current = match failed.code {
            Errno::EIO | Errno::EBUSY => self.stat(path).await,
            _ => Err(failed.clone()),
        };
        match current {
            Ok(rec) if rec.stamp == token => {
                if let Some(old) = replacing.filter(|old| old.stamp != token) {
                    self.drop_copies(path, old.holders.clone(), old.stamp).await;
                }
                Ok(rec)
            }
            Err(e) if e.code == Errno::EIO => Err(failed.with_detail(
                "the metadata daemon did not answer; the write is published only if it \
                 decided so before now (`locus fs stat` tells), never later; the previous \
                 version is kept otherwise",
            )),
            _ => {
                self.drop_copies(path, copies, token).await;
                self.give_up(path, token, replacing.is_none()).await;
                Err(failed)
            }
        }
    }
}
