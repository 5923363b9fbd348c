//! Names and records: stat, directories, listing and removal.

use super::{expect_added, expect_ok, expect_record, recovery::NoRecord, unexpected, Client};
use crate::client::held_dirs::Known;
use crate::meta::now_ns;
use crate::path::{join, normalise, split};
use locus_proto::fs::{Entry, Kind, Lease, NodeId, Record, Request, Response};
use locus_proto::{Errno, FsError, FsResult};
use std::time::{Duration, Instant};

/// Entries asked for per `readdir` round trip.
const PAGE: u32 = 10_000;

impl Client {
    /// The record of `path`.
    pub async fn stat(&self, path: &str) -> FsResult<Record> {
        let path = normalise(path)?;
        if let Some((held, name)) = self.held_parent(&path) {
            match held.known(name) {
                Some(Known::Missing) => return Err(FsError::new(Errno::ENOENT, path)),
                Some(Known::Pending(rec)) => return Ok(rec),
                Some(Known::Published) | None => {}
            }
        }
        let got = self.record(&path).await;
        // A miss whose name's entry is kept elsewhere, in a directory
        // another client may hold: the entry's keeper has the last word
        // (and recalls the directory first).
        let (parent, name) = match (&got, split(&path)) {
            (Err(e), Ok((parent, name)))
                if e.code == Errno::ENOENT && self.owner(parent) != self.owner(&path) =>
            {
                (parent, name)
            }
            _ => return got,
        };
        let has = Request::HasEntry {
            parent: parent.to_string(),
            name: name.to_string(),
        };
        match self.meta(parent, has).await? {
            Response::Present(Some(_)) => self.stat_created(&path).await,
            Response::Present(None) => got,
            other => Err(unexpected(other)),
        }
    }

    /// The record of normalised `path`, as its owner has it.
    pub(super) async fn record(&self, path: &str) -> FsResult<Record> {
        let get = Request::GetRecord {
            path: path.to_string(),
        };
        expect_record(self.meta(path, get).await?)
    }

    /// Sets the permission bits and/or modification time of `path`.
    pub async fn set_attr(
        &self,
        path: &str,
        mode: Option<u32>,
        mtime_ns: Option<i64>,
    ) -> FsResult<Record> {
        let path = normalise(path)?;
        let req = Request::SetAttr {
            path: path.clone(),
            mode,
            mtime_ns,
        };
        expect_record(self.meta(&path, req).await?)
    }

    /// Makes files written from now on under directory `dir` (in it and in
    /// its subdirectories, existing or made later) keep their bytes on
    /// `copies` nodes; files already there keep theirs. Returns the number
    /// of directories set.
    pub async fn set_copies(&self, dir: &str, copies: u32) -> FsResult<u64> {
        let dir = normalise(dir)?;
        let nodes = self.node_count() as u32;
        if copies == 0 || copies > nodes {
            return Err(FsError::new(Errno::EINVAL, dir)
                .with_detail(format!("copies must be 1 to {nodes}, the cluster's nodes")));
        }
        if dir == "/" {
            return Err(FsError::new(Errno::EINVAL, dir)
                .with_detail("the root keeps the cluster's count (its --replicas)"));
        }
        if self.stat(&dir).await?.kind != Kind::Dir {
            return Err(FsError::new(Errno::ENOTDIR, dir));
        }
        let mut todo = vec![dir];
        let mut set = 0;
        while let Some(d) = todo.pop() {
            let req = Request::SetCopies {
                path: d.clone(),
                copies,
            };
            expect_record(self.meta(&d, req).await?)?;
            set += 1;
            for e in self.readdir(&d).await? {
                if e.kind == Kind::Dir {
                    todo.push(join(&d, &e.name));
                }
            }
        }
        Ok(set)
    }

    /// The nodes holding the current data of `path` (primary first).
    pub async fn locate(&self, path: &str) -> FsResult<Vec<NodeId>> {
        let rec = self.stat(path).await?;
        if rec.kind == Kind::Dir {
            return Err(FsError::new(Errno::EISDIR, path));
        }
        Ok(rec.holders)
    }

    /// Makes `node` the node the file `path`, not yet created, will be stored on.
    pub async fn place(&self, path: &str, node: NodeId) -> FsResult<()> {
        self.endpoint(node)?;
        let path = normalise(path)?;
        expect_ok(
            self.meta(
                &path,
                Request::SetHint {
                    path: path.clone(),
                    node,
                },
            )
            .await?,
        )
    }

    /// The node `place` chose for `path`, not yet created, if any.
    pub async fn hint(&self, path: &str) -> FsResult<Option<NodeId>> {
        let path = normalise(path)?;
        match self
            .meta(&path, Request::GetHint { path: path.clone() })
            .await?
        {
            Response::Hint(h) => Ok(h),
            other => Err(unexpected(other)),
        }
    }

    /// Adds `path` as a name in its parent and creates its record (locked by
    /// `lease` if given, its `copies` its parent's); returns the placement
    /// hint left for it, if any, and the record.
    pub(super) async fn create_name(
        &self,
        path: &str,
        record: Record,
        lease: Option<Lease>,
    ) -> FsResult<(Option<NodeId>, Record)> {
        match self.create_name_once(path, record.clone(), lease).await {
            // The parent named but its record not made yet (another
            // client's mkdir between its two steps): `stat` waits for it.
            Err(e) if e.code == Errno::ENOENT && e.subject == split(path)?.0 => {
                match self.stat(&e.subject).await {
                    Ok(above) if above.kind == Kind::Dir => {
                        self.create_name_once(path, record, lease).await
                    }
                    _ => Err(e),
                }
            }
            made => made,
        }
    }

    async fn create_name_once(
        &self,
        path: &str,
        mut record: Record,
        lease: Option<Lease>,
    ) -> FsResult<(Option<NodeId>, Record)> {
        let (parent, name) = split(path)?;
        if self.owner(parent) == self.owner(path) {
            // One daemon keeps the entry and the record: one request.
            let req = Request::CreateFile {
                parent: parent.to_string(),
                name: name.to_string(),
                path: path.to_string(),
                record,
                parents: Vec::new(),
                lease,
            };
            let (answer, retried) = self.meta_retried(path, req).await;
            let (hint, record) = match answer {
                Ok(Response::Created { hint, record }) => (hint, record),
                // Sent again after its answer was lost: the file there is
                // this create's own if this create's lease holds it (its
                // placement hint is lost with the answer).
                Err(e) if e.code == Errno::EEXIST && retried => {
                    match (lease, self.record(path).await) {
                        (Some(l), Ok(rec)) if rec.lock.map(|k| k.token) == Some(l.token) => {
                            (None, rec)
                        }
                        _ => return Err(e),
                    }
                }
                Ok(other) => return Err(unexpected(other)),
                Err(e) => return Err(e),
            };
            self.inner
                .copies
                .learn(parent, record.copies, Instant::now());
            return Ok((hint, record));
        }
        let kind = record.kind;
        let entry = Request::AddEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind,
            op: rand::random(),
        };
        let copies = match self.meta_retried(parent, entry).await {
            (Err(e), true) if e.code == Errno::EEXIST => match self.nameless(path, kind).await? {
                true => self.stat(parent).await?.copies,
                false => return Err(e),
            },
            (added, _) => expect_added(added?)?,
        };
        self.inner.copies.learn(parent, copies, Instant::now());
        record.copies = copies;
        let stamp = record.stamp;
        let created = self
            .meta(
                path,
                Request::CreateRecord {
                    path: path.to_string(),
                    record,
                    lease,
                },
            )
            .await;
        let failed = match created {
            Ok(Response::Created { hint, record }) => return Ok((hint, record)),
            Ok(other) => unexpected(other),
            Err(e) => e,
        };
        // A record made before its answer was lost: a write's is removed
        // while its lock is still this create's (record, then name); a
        // directory's is this mkdir's, done. Where that cannot be told, or
        // the record is another's now, the name is not this create's to
        // remove: a file made since under it would lose its name.
        if failed.is_unreachable() {
            let made = match lease {
                Some(l) => self.remove_locked(path, l.token).await.map(|_| None),
                None => self.record(path).await.map(Some),
            };
            match made {
                Ok(Some(rec)) if rec.stamp == stamp => return Ok((None, rec)),
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) => {}
                _ => return Err(failed),
            }
        }
        let undo = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind,
            op: rand::random(),
        };
        let _ = self.meta(parent, undo).await;
        Err(failed)
    }

    /// Makes the directory `path` (its parent must exist).
    pub async fn mkdir(&self, path: &str) -> FsResult<()> {
        self.mkdir_with_mode(path, 0o755).await
    }

    /// `mkdir` of a directory whose permission bits are `mode`.
    pub async fn mkdir_with_mode(&self, path: &str, mode: u32) -> FsResult<()> {
        let path = normalise(path)?;
        let record = Record::new(Kind::Dir, mode & 0o7777, now_ns());
        self.create_name(&path, record, None).await.map(drop)
    }

    /// The record of a name that exists: a concurrent creator may have added
    /// the name and not yet its record, so `ENOENT` is retried for a while
    /// (200 tries a millisecond apart: longer when the daemons are busy).
    pub(super) async fn stat_created(&self, path: &str) -> FsResult<Record> {
        let mut tries = 0;
        loop {
            match self.record(path).await {
                // (A record lost with its owner never comes.)
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) && tries < 200 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                other => return other,
            }
        }
    }

    /// `mkdir -p`: creates missing ancestors; an existing directory is fine.
    pub async fn mkdir_all(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        if path == "/" {
            return Ok(());
        }
        // From the deepest name up: where only the last directories are
        // missing (the usual case), the ones above cost nothing.
        let mut missing = vec![path];
        while let Some(dir) = missing.last().cloned() {
            match self.mkdir(&dir).await {
                Ok(()) => {
                    missing.pop();
                }
                Err(e) if e.code == Errno::EEXIST => {
                    match self.stat_created(&dir).await {
                        Ok(rec) if rec.kind != Kind::Dir => {
                            return Err(FsError::new(Errno::ENOTDIR, dir))
                        }
                        Ok(_) => {}
                        // Named in its parent, its record lost with its
                        // owner: made again where the owner's keys are now.
                        Err(e) if Client::owner_lost(&e) => {
                            let rec = Record::new(Kind::Dir, 0o755, now_ns());
                            match self.record_again(&dir, rec, None).await {
                                Ok(_) => {}
                                Err(e) if e.code == Errno::EEXIST => {}
                                Err(e) => return Err(e),
                            }
                        }
                        Err(e) => return Err(e),
                    }
                    missing.pop();
                }
                Err(e) if e.code == Errno::ENOENT => {
                    let parent = split(&dir)?.0.to_string();
                    if parent == "/" || missing.contains(&parent) {
                        return Err(e);
                    }
                    missing.push(parent);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One page of `dir`'s names after `after`, and whether more follow.
    pub async fn readdir_page(
        &self,
        dir: &str,
        after: Option<&str>,
        limit: u32,
    ) -> FsResult<(Vec<Entry>, bool)> {
        let dir = normalise(dir)?;
        let req = Request::ListEntries {
            dir: dir.clone(),
            after: after.map(str::to_string),
            limit,
        };
        match self.meta(&dir, req).await? {
            Response::Entries { entries, more } => Ok((entries, more)),
            other => Err(unexpected(other)),
        }
    }

    /// Every name in `dir`, in byte order.
    pub async fn readdir(&self, dir: &str) -> FsResult<Vec<Entry>> {
        let mut all: Vec<Entry> = Vec::new();
        loop {
            let after = all.last().map(|e| e.name.clone());
            let (page, more) = self.readdir_page(dir, after.as_deref(), PAGE).await?;
            all.extend(page);
            if !more {
                return Ok(all);
            }
        }
    }

    /// Removes file `path`; `EBUSY` while it is being written or renamed
    /// (as a rename of it would be). Where one daemon keeps its entry and
    /// its record, in one step. Elsewhere record first, if no one holds its
    /// lock, then the name (as a rename removes its old name): a new file
    /// cannot take the name before the record is gone, so the record
    /// removed is never a new file's.
    pub async fn unlink(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        let (parent, name) = split(&path)?;
        if self.owner(parent) == self.owner(&path) {
            let remove = Request::RemoveFile {
                parent: parent.to_string(),
                name: name.to_string(),
                path: path.clone(),
                op: rand::random(),
            };
            match self.meta(&path, remove).await? {
                Response::Record(rec) => self.drop_copies(&path, rec.holders, rec.stamp).await,
                Response::Ok => {}
                other => return Err(unexpected(other)),
            }
            return Ok(());
        }
        let mut removed = self.remove_file(&path, None).await;
        if matches!(&removed, Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(e)) {
            match self.without_record(&path).await? {
                NoRecord::NoName => return removed.map(drop),
                NoRecord::LeftoverRemoved => return Ok(()),
                NoRecord::Created => removed = self.remove_file(&path, None).await,
            }
        }
        let rec = removed?;
        self.drop_copies(&path, rec.holders, rec.stamp).await;
        Ok(())
    }

    /// Removes the empty directory `path`.
    pub async fn rmdir(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        let (parent, name) = split(&path)?;
        // The record goes first: its daemon also holds the directory's entries,
        // so the emptiness check and the removal are one atomic step.
        let removed = Request::RemoveRecord {
            path: path.clone(),
            kind: Kind::Dir,
            locked_by: None,
            op: rand::random(),
        };
        let lost_record = match self.meta(&path, removed).await {
            Ok(r) => expect_record(r).map(|_| false)?,
            // A name whose record an earlier crash lost: removing the name is
            // the whole job (and fails with ENOENT if there is none).
            Err(e) if e.code == Errno::ENOENT => true,
            Err(e) => return Err(e),
        };
        let entry = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::Dir,
            op: rand::random(),
        };
        match self.meta(parent, entry).await {
            Err(e) if !lost_record && e.code == Errno::ENOENT => Ok(()),
            other => other.and_then(expect_ok),
        }
    }

    /// Removes `path` and, for a directory, everything under it.
    pub async fn remove_all(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        if self.stat(&path).await?.kind == Kind::File {
            return self.unlink(&path).await;
        }
        let mut stack = vec![(path, false)];
        while let Some((dir, emptied)) = stack.pop() {
            if emptied {
                self.rmdir(&dir).await?;
                continue;
            }
            stack.push((dir.clone(), true));
            for e in self.readdir(&dir).await? {
                let child = join(&dir, &e.name);
                match e.kind {
                    Kind::File => self.unlink(&child).await?,
                    Kind::Dir => stack.push((child, false)),
                }
            }
        }
        Ok(())
    }

    /// Removes file `path` — record, then name — if `token` still holds its
    /// write lock: no one else changed it meanwhile, so nothing removed is
    /// anyone else's. Answers with the removed record.
    pub(super) async fn remove_locked(&self, path: &str, token: u64) -> FsResult<Record> {
        self.remove_file(path, Some(token)).await
    }

    /// Removes file `path`'s record (held by `locked_by`, or by no one),
    /// then its name; a name already gone is no error (a failure between
    /// leaves the name without its record, as a crash would).
    async fn remove_file(&self, path: &str, locked_by: Option<u64>) -> FsResult<Record> {
        let remove = Request::RemoveRecord {
            path: path.to_string(),
            kind: Kind::File,
            locked_by,
            op: rand::random(),
        };
        let rec = expect_record(self.meta(path, remove).await?)?;
        let (parent, name) = split(path)?;
        let entry = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::File,
            op: rand::random(),
        };
        match self.meta(parent, entry).await {
            Err(e) if e.code != Errno::ENOENT => Err(e),
            _ => Ok(rec),
        }
    }
}
