//! Renames of files (the record moves with the name) and directories.

use super::{expect_ok, unexpected, Client, CLAIM_TRIES};
use crate::path::{join, normalise};
use crate::peer::is_unreachable;
use locus_proto::fs::{Kind, Lease, Record, Request, Response};
use locus_proto::{Errno, FsError, FsResult};

impl Client {
    /// Renames `from` to `to`, replacing a file at `to`. A directory is moved
    /// entry by entry (not atomically). Stored copies are hard-linked under the
    /// new name before the metadata moves, so the file is readable throughout.
    pub async fn rename(&self, from: &str, to: &str) -> FsResult<()> {
        self.rename_as(from, to, true).await
    }

    /// `rename` that fails with `EEXIST` instead of replacing anything at
    /// `to` (`RENAME_NOREPLACE`), decided by the same step that makes `to`.
    pub async fn rename_noreplace(&self, from: &str, to: &str) -> FsResult<()> {
        self.rename_as(from, to, false).await
    }

    async fn rename_as(&self, from: &str, to: &str, replace: bool) -> FsResult<()> {
        let (from, to) = (normalise(from)?, normalise(to)?);
        if from == to {
            self.stat(&from).await?;
            return Ok(());
        }
        if to.starts_with(&format!("{from}/")) || from == "/" {
            return Err(
                FsError::new(Errno::EINVAL, to).with_detail("cannot move a directory into itself")
            );
        }
        match self.stat(&from).await?.kind {
            Kind::File => self.rename_file(&from, &to, replace).await,
            Kind::Dir => Box::pin(self.rename_dir(&from, &to, replace)).await,
        }
    }

    /// A file's rename, decided under its write lock: `from` is locked by
    /// compare-and-swap (a second rename of it, or a writer, gets `EBUSY`),
    /// its copies are linked under `to`, and one step puts its record at
    /// `to` — the create of a new name, or `ReplaceLocked` of a file at `to`
    /// this rename locked. Before that step a failure undoes only what this
    /// rename made; after it the file is at `to`, and `from` is removed only
    /// while the lock is still this rename's.
    async fn rename_file(&self, from: &str, to: &str, replace: bool) -> FsResult<()> {
        let lease = self.new_lease();
        let rec = self.lock(from, lease).await?;
        let _renewal = self.keep_lease(from, lease);
        let moved = self.move_record(from, to, &rec, lease, replace).await;
        let replaced = match moved {
            Ok(replaced) => replaced,
            Err(e) => {
                let _ = self.unlock(from, lease.token).await;
                return Err(e);
            }
        };
        match replaced {
            Some(old) => self.drop_copies(to, old.holders, old.stamp).await,
            None => drop(self.unlock(to, lease.token).await),
        }
        // The file is at `to` now; if the old name cannot be removed (its
        // daemon lost, or this client stalled past its lease and someone
        // else has it), it stays too, and the rename is not acknowledged.
        let removed = self.remove_locked(from, lease.token).await.map_err(|e| {
            let detail = format!("copied to {to}, but the old name stays: {}", e.detail);
            e.with_detail(detail)
        })?;
        self.drop_copies(from, removed.holders, removed.stamp).await;
        Ok(())
    }

    /// Links `rec`'s copies under `to` and puts `rec` there (the decided
    /// step), holding `lease` on `from` and on `to`; the record it replaced,
    /// or `None` if `to` was made new (and is left locked). On failure, what
    /// was made here is undone.
    async fn move_record(
        &self,
        from: &str,
        to: &str,
        rec: &Record,
        lease: Lease,
        replace: bool,
    ) -> FsResult<Option<Record>> {
        for &h in &rec.holders {
            let link = Request::LinkData {
                from: from.to_string(),
                to: to.to_string(),
                stamp: rec.stamp,
            };
            if let Err(e) = self.call(h, link).await.and_then(expect_ok) {
                self.drop_copies(to, rec.holders.clone(), rec.stamp).await;
                return Err(e);
            }
        }
        let mut tries = 0;
        let placed = loop {
            match self.create_name(to, rec.clone(), Some(lease)).await {
                Ok(_) => return Ok(None),
                Err(e) if e.code == Errno::EEXIST && replace => {
                    match self.replace_locked(to, rec, lease).await {
                        // Unlinked since its name was found taken: the name
                        // may be free now.
                        Err(e)
                            if e.code == Errno::ENOENT
                                && !Client::owner_lost(&e)
                                && tries < CLAIM_TRIES =>
                        {
                            tries += 1;
                        }
                        replaced => break replaced,
                    }
                }
                Err(e) => break Err(e),
            }
        };
        // A step whose answer was lost may have been applied: its links stay.
        if placed.as_ref().is_err_and(|e| !is_unreachable(e)) {
            self.drop_copies(to, rec.holders.clone(), rec.stamp).await;
        }
        placed.map(Some)
    }

    /// Locks the existing file `to` with `lease` and puts `rec` in its
    /// place; answers the record replaced.
    async fn replace_locked(&self, to: &str, rec: &Record, lease: Lease) -> FsResult<Record> {
        self.lock_created(to, lease).await?;
        let replace = Request::ReplaceLocked {
            path: to.to_string(),
            token: lease.token,
            record: rec.clone(),
        };
        match self.decided(to, replace).await {
            Ok(Response::Committed { replaced, .. }) => Ok(replaced),
            Ok(other) => Err(unexpected(other)),
            Err(e) => {
                let _ = self.unlock(to, lease.token).await;
                Err(e)
            }
        }
    }

    async fn rename_dir(&self, from: &str, to: &str, replace: bool) -> FsResult<()> {
        match self.mkdir(to).await {
            Ok(()) => {}
            Err(e) if e.code == Errno::EEXIST && replace => {
                // POSIX: a directory may replace an empty directory.
                if self.stat(to).await?.kind != Kind::Dir {
                    return Err(FsError::new(Errno::ENOTDIR, to));
                }
                if !self.readdir_page(to, None, 1).await?.0.is_empty() {
                    return Err(FsError::new(Errno::ENOTEMPTY, to));
                }
            }
            Err(e) => return Err(e),
        }
        for e in self.readdir(from).await? {
            self.rename(&join(from, &e.name), &join(to, &e.name))
                .await?;
        }
        self.rmdir(from).await
    }
}
