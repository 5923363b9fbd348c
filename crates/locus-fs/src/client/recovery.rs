//! Finding out what an interrupted operation left: names without records,
//! records without names, versions of a lost owner, and undoing a write
//! that cannot finish.

use super::{blocking, expect_ok, unexpected, Client};
use crate::data::transfer;
use crate::data::version::VersionRef;
use crate::path::{normalise, split};
use locus_proto::fs::{Kind, Lease, NodeId, Record, Request, Response};
use locus_proto::{Errno, FsError, FsResult};
use std::time::{Duration, Instant};

/// What an unlink that found no record found at the name.
pub(super) enum NoRecord {
    NoName,
    Created,
    LeftoverRemoved,
}

impl Client {
    /// Names `path` again as `rec` (a version this client saw made) says,
    /// when its name was lost with the daemon that kept it and a node `rec`
    /// names still holds those bytes: the file comes back as it was,
    /// without being made again. `true` also if it is named meanwhile (by
    /// another look at it) with bytes in reach: nothing is to be made
    /// again; `false` if its name is gone or no node holds the bytes.
    pub async fn reinstate(&self, path: &str, rec: &Record) -> FsResult<bool> {
        let path = normalise(path)?;
        match self.stat(&path).await {
            // Named (again, by another look at it): lost only if its bytes are.
            Ok(now) => return Ok(!self.out_of_reach(&now).await),
            Err(e) if Client::owner_lost(&e) => {}
            Err(e) if e.code != Errno::ENOENT => return Err(e),
            Err(_) => return Ok(false),
        }
        let mut holders = Vec::new();
        for &h in &rec.holders {
            let (client, p, stamp) = (self.clone(), path.clone(), rec.stamp);
            let located = blocking(move || {
                client.with_transfer(h, |s| transfer::locate(s, VersionRef { path: &p, stamp }))
            })
            .await;
            if matches!(located, Ok(Some(_))) {
                holders.push(h);
            }
        }
        if holders.is_empty() {
            return Ok(false);
        }
        let (parent, name) = split(&path)?;
        self.mkdir_all(parent).await?;
        let entry = Request::AddEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::File,
            op: rand::random(),
        };
        match self.meta(parent, entry).await {
            Err(e) if e.code != Errno::EEXIST => return Err(e),
            _ => {}
        }
        let record = Record {
            holders,
            lock: None,
            ..rec.clone()
        };
        match self.record_again(&path, record, None).await {
            // Named again meanwhile, by another look at it.
            Err(e) if e.code != Errno::EEXIST => Err(e),
            _ => Ok(true),
        }
    }

    /// Whether the current version of file `path` is lost: its name is
    /// gone, or no node holding its bytes can be reached (or holds good
    /// ones).
    pub async fn lost(&self, path: &str) -> FsResult<bool> {
        let rec = match self.stat(path).await {
            Ok(rec) => rec,
            Err(e) if e.code == Errno::ENOENT => return Ok(Client::owner_lost(&e)),
            Err(e) => return Err(e),
        };
        Ok(self.out_of_reach(&rec).await)
    }

    /// Whether every node holding the bytes of version `rec` cannot be
    /// reached, or none holds them any more (every copy was found bad and
    /// set aside; a file never written holds no bytes).
    async fn out_of_reach(&self, rec: &Record) -> bool {
        if rec.holders.is_empty() {
            return rec.size > 0;
        }
        for &h in &rec.holders {
            if self.ping(h).await.is_ok() {
                return false;
            }
        }
        true
    }

    /// Makes the record of `path` again where its owner's keys are now:
    /// its name is in its parent, its record was lost with its owner.
    pub(super) async fn record_again(
        &self,
        path: &str,
        record: Record,
        lease: Option<Lease>,
    ) -> FsResult<(Option<NodeId>, Record)> {
        let req = Request::CreateRecord {
            path: path.to_string(),
            record,
            lease,
        };
        match self.meta(path, req).await? {
            Response::Created { hint, record } => Ok((hint, record)),
            other => Err(unexpected(other)),
        }
    }

    /// Whether name `path`, found taken by an `AddEntry` that may have
    /// been applied before its answer was lost, is this create's own: it
    /// has the kind asked for and no record, even after a creator between
    /// its two steps would have made one, and it is still there then (an
    /// unlink between its two steps, record first, removes it by then).
    /// `Err` when that cannot be told (a daemon unreachable): the create's
    /// outcome is then unknown, not `EEXIST`.
    pub(super) async fn nameless(&self, path: &str, kind: Kind) -> FsResult<bool> {
        let (parent, name) = split(path)?;
        let named = || async {
            let has = Request::HasEntry {
                parent: parent.to_string(),
                name: name.to_string(),
            };
            match self.meta(parent, has).await? {
                Response::Present(found) => Ok(found == Some(kind)),
                other => Err(unexpected(other)),
            }
        };
        if !named().await? {
            return Ok(false);
        }
        match self.stat_created(path).await {
            Err(e) if e.code == Errno::ENOENT => {}
            Ok(_) => return Ok(false),
            Err(e) => return Err(e),
        }
        named().await
    }

    /// What is at `path`, where an unlink found no record: no name (or
    /// one that goes meanwhile: another unlink's); a create between its two
    /// steps (its record comes within a request's time: one coming later
    /// was never acknowledged); or a name a crash left without a record,
    /// which is removed.
    pub(super) async fn without_record(&self, path: &str) -> FsResult<NoRecord> {
        let (parent, name) = split(path)?;
        let has = || Request::HasEntry {
            parent: parent.to_string(),
            name: name.to_string(),
        };
        let patience = Instant::now() + self.endpoint(0)?.timeout;
        loop {
            if let Response::Present(None) = self.meta(parent, has()).await? {
                return Ok(NoRecord::NoName);
            }
            match self.record(path).await {
                Ok(_) => return Ok(NoRecord::Created),
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) => {}
                Err(e) => return Err(e),
            }
            if Instant::now() > patience {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let entry = Request::RemoveEntry {
            parent: parent.to_string(),
            name: name.to_string(),
            kind: Kind::File,
            op: rand::random(),
        };
        expect_ok(self.meta(parent, entry).await?)?;
        Ok(NoRecord::LeftoverRemoved)
    }

    /// The record of `path` if its current version is the one write
    /// `token` made.
    pub(super) async fn made_by(&self, path: &str, token: u64) -> Option<Record> {
        self.stat(path).await.ok().filter(|rec| rec.stamp == token)
    }

    /// After creating `path` failed with `failed`: makes its parent
    /// directories if that was why (the caller then tries again), else
    /// gives `failed` back. Parents are only made when a name is missing,
    /// so the usual case (they exist) costs no round trip.
    pub(super) async fn make_parents(&self, path: &str, failed: FsError) -> FsResult<()> {
        if failed.code != Errno::ENOENT {
            return Err(failed);
        }
        let path = normalise(path)?;
        self.mkdir_all(split(&path)?.0).await
    }

    /// Releases the lock `token` of a write that will not be published; a
    /// name the write created is removed again if nothing was ever
    /// published under it (best effort: a daemon that cannot be reached
    /// leaves it, empty, and the lease ends the lock).
    pub(super) async fn give_up(&self, path: &str, token: u64, created: bool) {
        if created && self.remove_locked(path, token).await.is_ok() {
            return;
        }
        let _ = self.unlock(path, token).await;
    }
}
