//! Directories lent to this client: made and published here, given back
//! before anyone else needs them.

use super::{
    expect_ok, leases::LeaseGuard, publish::Output, publish::Publishing, publish::PUBLISHING,
    writing::Writer, Client,
};
use crate::data::sums::Summer;
use crate::meta::now_ns;
use crate::path::{join, normalise, split};
use crate::placement::Placement;
use futures_util::future::join_all;
use locus_proto::fs::{Kind, Lease, NodeId, Record, Request};
use locus_proto::{Errno, FsError, FsResult};
use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

impl Client {
    /// The held directory `path` is in, and its name there.
    pub(super) fn held_parent<'p>(
        &self,
        path: &'p str,
    ) -> Option<(Arc<crate::client::held_dirs::Held>, &'p str)> {
        let (parent, name) = split(path).ok()?;
        Some((self.inner.held.get(parent)?, name))
    }

    /// Whether directory `dir` (normalised) is lent to this client: it
    /// exists, since removing it elsewhere recalls it first.
    pub fn is_lent(&self, dir: &str) -> bool {
        self.inner.held.get(dir).is_some()
    }

    /// Asks for `dir`, an empty directory, to be lent to this client: its
    /// new files are then made here without asking any daemon and
    /// published in the background after they are closed, until another
    /// client looks into `dir` or this one does anything else there.
    /// Whether it was lent.
    pub async fn delegate(&self, dir: &str) -> FsResult<bool> {
        let dir = normalise(dir)?;
        if self.inner.held.get(&dir).is_some() {
            return Ok(true);
        }
        // Its files are made here: not where they must go elsewhere.
        if self.inner.diskless || self.inner.placement != Placement::Local {
            return Ok(false);
        }
        let owner = self.owner(&dir);
        let asked = self
            .call(owner, Request::Delegate { dir: dir.clone() })
            .await;
        match asked {
            Ok(r) => expect_ok(r)?,
            Err(e) if matches!(e.code, Errno::EBUSY | Errno::ENOTEMPTY) => return Ok(false),
            Err(e) => return Err(e),
        }
        let stamp = self.new_lease().token;
        self.inner
            .held
            .insert(&dir, stamp, self.inner.store.shared_dir());
        let client = self.clone();
        tokio::spawn(async move {
            let recall = Request::AwaitRecall { dir: dir.clone() };
            // Recalled, given back or the connection lost: all end it here.
            let _ = client.call(owner, recall).await;
            client.give_back(&dir).await;
        });
        Ok(true)
    }

    /// Gives held `dir` back: its open new files are claimed as usual
    /// (write-locked by their writers), its closed ones published, then
    /// the daemon is told. Returns once `dir` is no longer held.
    async fn give_back(&self, dir: &str) {
        let Some(held) = self.inner.held.get(dir) else {
            return;
        };
        let Some(open) = held.end() else {
            return self.inner.held.gone(dir, &held).await;
        };
        PUBLISHING
            .scope(Publishing::Lazy, async {
                join_all(open.into_iter().map(|(name, unclaimed)| {
                    let path = join(dir, &name);
                    let held = held.clone();
                    async move {
                        let rec = Record::new(Kind::File, unclaimed.mode, now_ns());
                        let lease = unclaimed.lease;
                        let claimed = self.create_name(&path, rec, Some(lease)).await.map(drop);
                        let renewal = match claimed {
                            Ok(()) => {
                                let mut guard = self.keep_lease(&path, lease);
                                guard.0.take()
                            }
                            Err(_) => None,
                        };
                        held.settled(&name, claimed.is_ok());
                        unclaimed.claimed(claimed, renewal);
                    }
                }))
                .await;
                held.emptied().await;
            })
            .await;
        self.inner.held.remove(dir);
        self.discard_spares(&held);
        let owner = self.owner(dir);
        let given = Request::GiveBack {
            dir: dir.to_string(),
        };
        if let Err(e) = self.call(owner, given).await {
            tracing::debug!("{dir}: giving the delegation back: {e}");
        }
    }

    /// Gives back the held directories `req` reads or changes names in
    /// (this client does something else there than making new files).
    pub(super) async fn give_back_touched(&self, req: &Request) {
        if !self.inner.held.any()
            || matches!(req, Request::GetRecord { .. } | Request::GetHint { .. })
            || PUBLISHING.try_with(|_| ()).is_ok()
        {
            return;
        }
        for dir in req.dirs_touched() {
            if self.inner.held.get(dir).is_some() {
                self.give_back(dir).await;
            }
        }
    }

    /// `fsync` of a directory: waits until the new files closed in `dir`,
    /// if it is held, are published, and every daemon's names are on disk
    /// (publications are flushed lazily, also after a directory is given back).
    pub async fn settle_dir(&self, dir: &str) -> FsResult<()> {
        if let Some(held) = normalise(dir).ok().and_then(|d| self.inner.held.get(&d)) {
            held.flushed().await;
        }
        // A `Sync` follows the writes sent before it on each connection.
        let (sent, synced) = &self.inner.lazy;
        let upto = sent.load(Ordering::Relaxed);
        if synced.load(Ordering::Relaxed) >= upto {
            return Ok(());
        }
        let nodes = 0..self.node_count() as NodeId;
        for done in join_all(nodes.map(|n| self.call(n, Request::Sync))).await {
            expect_ok(done?)?;
        }
        synced.fetch_max(upto, Ordering::Relaxed);
        Ok(())
    }

    /// A writer of a new file in a held directory, named to no daemon
    /// until it is closed (`None` where the directory is not held).
    pub(super) fn unclaimed_writer(&self, path: &str, mode: u32) -> FsResult<Option<Writer>> {
        let (parent, name) = split(path)?;
        let Some(held) = self.inner.held.get(parent) else {
            return Ok(None);
        };
        let lease = Lease {
            token: held.stamp,
            ms: self.inner.lease_ms,
        };
        let unclaimed = match held.make(name, mode & 0o7777, lease) {
            None => return Err(FsError::new(Errno::EEXIST, path)),
            Some(None) => return Ok(None),
            Some(Some(u)) => u,
        };
        let (spare, low) = held.spare();
        if low {
            self.make_spares(parent, held.clone());
        }
        let made = spare.map_or_else(|| self.inner.store.shared_file(&held.next_spare()), Ok);
        let (tmp, file) = match made {
            Ok(made) => made,
            Err(e) => {
                held.settled(name, false);
                return Err(e);
            }
        };
        Ok(Some(Writer {
            client: self.clone(),
            path: path.to_string(),
            lease,
            target: self.inner.me,
            copies: self.inner.copies.in_dir(parent, Instant::now()),
            replacing: None,
            tmp,
            file: Some(file),
            may_follow: false,
            follower: None,
            summer: Some(Summer::default()),
            closed: false,
            _renewal: LeaseGuard(None),
            unclaimed: Some(unclaimed),
        }))
    }

    /// Makes empty files ahead for `held`'s creates, off their path.
    fn make_spares(&self, dir: &str, held: Arc<crate::client::held_dirs::Held>) {
        let (client, dir) = (self.clone(), dir.to_string());
        tokio::task::spawn_blocking(move || {
            let store = &client.inner.store;
            let made = (0..held.wanted())
                .map_while(|_| store.shared_file(&held.next_spare()).ok())
                .collect();
            held.made_ahead(made);
            // Given back meanwhile: no create will take them.
            if !client.inner.held.holds(&dir, &held) {
                client.discard_spares(&held);
            }
        });
    }

    /// Removes the empty files `held` no longer needs, and their directory.
    fn discard_spares(&self, held: &crate::client::held_dirs::Held) {
        let store = &self.inner.store;
        held.left().iter().for_each(|f| store.discard(f));
        store.remove_shared(&held.tmp);
    }

    /// Publishes `out`, a new file of `held`, and settles its name there;
    /// its bytes go if it could not be published.
    pub(super) async fn publish_held(
        &self,
        out: &Output,
        held: Option<Arc<crate::client::held_dirs::Held>>,
        how: Publishing,
    ) -> FsResult<Record> {
        let published = self.publish_new(out, how).await;
        if published.is_err() {
            self.discard(out);
        }
        if let (Some(held), Ok((_, name))) = (held, split(&out.path)) {
            held.settled(name, published.is_ok());
        }
        published
    }

    /// The empty file a new empty file was written in, published without
    /// it (`Store::install_empty`): a held directory takes it back for a
    /// later create (which then makes no inode), else it goes.
    pub(super) fn spare_again(&self, file: &Path, path: &str) {
        let store = &self.inner.store;
        let held = self
            .held_parent(path)
            .filter(|(held, _)| file.parent() == Some(held.tmp.as_path()));
        let reopened = held.and_then(|(held, _)| {
            let file = File::options().write(true).open(file).ok()?;
            Some((held, file))
        });
        let Some((held, reopened)) = reopened else {
            return store.discard(file);
        };
        if !held.take_back((file.to_path_buf(), reopened)) {
            return store.discard(file);
        }
        // Given back meanwhile: no create will take it.
        let dir = split(path).map_or("/", |(dir, _)| dir);
        if !self.inner.held.holds(dir, &held) {
            self.discard_spares(&held);
        }
    }
}
