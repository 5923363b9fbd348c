//! Copies of data on other nodes: placed with a write, made after it,
//! dropped with a removed version.

use super::{blocking, Client};
use crate::client::copies::before_publishing;
use crate::client::follow::Follower;
use crate::cluster::replica_set;
use crate::data::sums::Content;
use crate::data::transfer;
use crate::data::version::VersionRef;
use crate::peer::is_unreachable;
use locus_proto::fs::{NodeId, Record, Request, Sum};
use locus_proto::FsResult;
use std::path::Path;

impl Client {
    /// The nodes that keep the bytes of the versions of `rec`'s file (of a
    /// directory: of new files in it).
    pub fn copies(&self, rec: &Record) -> u32 {
        self.inner.copies.of(rec.copies)
    }

    /// Tells `nodes` to delete their stored copy `stamp` of `path`. A node
    /// that cannot be reached keeps an orphan copy, never a visible file.
    pub(super) async fn drop_copies(&self, path: &str, nodes: Vec<NodeId>, stamp: u64) {
        let drops: Vec<_> = nodes
            .into_iter()
            .map(|node| {
                let (client, path) = (self.clone(), path.to_string());
                let req = Request::DropData { path, stamp };
                tokio::spawn(async move { client.call(node, req).await })
            })
            .collect();
        for d in drops {
            match d.await {
                // A lost node's copies went with it (or are swept as
                // orphans if it comes back).
                Ok(Err(e)) if is_unreachable(&e) => {
                    tracing::debug!("could not delete a stale copy: {e}");
                }
                Ok(Err(e)) => tracing::warn!("could not delete a stale copy: {e}"),
                _ => {}
            }
        }
    }

    /// The copy of a file written here to its first replica, made while it
    /// is written, where that node is on this host.
    pub(super) fn follower(&self, tmp: &Path, target: NodeId, copies: u32) -> Option<Follower> {
        let me = self.inner.me;
        if copies == 1 || target != me || self.inner.diskless {
            return None;
        }
        let first = replica_set(me, self.node_count(), 2).into_iter().nth(1)?;
        if !self.same_host(first) {
            return None;
        }
        Follower::start(first, &self.inner.dirs[first as usize], tmp)
            .inspect_err(|e| tracing::debug!("no replica copy while writing: {e}"))
            .ok()
    }

    /// Pushes `src` to `node` as copy `stamp` of `path`, kept there only
    /// if it holds what `sum` says.
    fn push_to(
        &self,
        node: NodeId,
        src: &Path,
        VersionRef { path, stamp }: VersionRef<'_>,
        sum: Option<Sum>,
    ) -> FsResult<u64> {
        self.with_transfer(node, |s| {
            transfer::push(s, src, VersionRef { path, stamp }, sum)
        })
    }

    /// Stores `src` as copy `stamp` of `path` on node `target` (moved here,
    /// pushed there; `src` is gone either way), and, of the `copies` - 1
    /// replicas, the first on the next node that takes it (all of them when
    /// `target` is another node: `src` is not kept), unless the nodes
    /// `made` hold it already. No other copy is touched. Returns the nodes
    /// holding the copy, `target` first.
    pub(super) async fn place_bytes(
        &self,
        src: &Path,
        (VersionRef { path, stamp }, content): (VersionRef<'_>, Content),
        (target, copies, made): (NodeId, u32, &[NodeId]),
    ) -> FsResult<Vec<NodeId>> {
        let sum = Some(content.sum);
        let here = target == self.inner.me && !self.inner.diskless;
        let wanted = match here {
            true => before_publishing(copies),
            false => copies - 1,
        };
        let wanted = wanted.saturating_sub(made.len() as u32);
        let pushed = self
            .push_replicas(src, (VersionRef { path, stamp }, sum), target, made, wanted)
            .await;
        let replicas: Vec<NodeId> = made.iter().copied().chain(pushed).collect();
        let placed = if here {
            let installed = self
                .inner
                .store
                .install_sized(src, path, stamp, content.size);
            if installed.is_err() {
                self.inner.store.discard(src);
            }
            installed
        } else {
            let (c, p, l) = (self.clone(), path.to_string(), src.to_path_buf());
            let pushed =
                blocking(move || c.push_to(target, &l, VersionRef { path: &p, stamp }, sum)).await;
            self.inner.store.discard(src);
            pushed.map(drop)
        };
        if let Err(e) = placed {
            self.drop_copies(path, replicas, stamp).await;
            return Err(e);
        }
        Ok(std::iter::once(target).chain(replicas).collect())
    }

    /// Copies `src` as copy `stamp` of `path` to up to `wanted` nodes after
    /// `holder` in node order that do not have it (`have`), skipping nodes
    /// that cannot take it: FusionFS's replicas, off the writer's node. A
    /// node on this host copies the file itself, without a socket.
    pub(super) async fn push_replicas(
        &self,
        src: &Path,
        (VersionRef { path, stamp }, sum): (VersionRef<'_>, Option<Sum>),
        holder: NodeId,
        have: &[NodeId],
        wanted: u32,
    ) -> Vec<NodeId> {
        if wanted == 0 {
            return Vec::new();
        }
        let mut made = Vec::new();
        let others = replica_set(holder, self.node_count(), u32::MAX);
        for node in others.into_iter().skip(1).filter(|n| !have.contains(n)) {
            if made.len() as u32 == wanted {
                break;
            }
            let copied = if self.same_host(node) {
                self.import_on(node, path, stamp, src).await.map(Some)
            } else {
                let (c, p, l) = (self.clone(), path.to_string(), src.to_path_buf());
                blocking(move || c.push_to(node, &l, VersionRef { path: &p, stamp }, sum))
                    .await
                    .map(|_| None)
            };
            match copied {
                // A copy on this host was hashed as it was made.
                Ok(Some(c)) if sum.is_some_and(|sum| c.sum != sum) => {
                    tracing::warn!("{path}: the replica made on node {node} differs; dropped");
                    self.drop_copies(path, vec![node], stamp).await;
                }
                Ok(_) => made.push(node),
                Err(e) => tracing::debug!("{path}: no replica on node {node}: {e}"),
            }
        }
        made
    }

    /// Whether `node`'s daemon is on this host (on loopback, not an
    /// emulated node behind its own link) and may copy files directly.
    pub(super) fn same_host(&self, node: NodeId) -> bool {
        self.inner.same_host_copy && self.endpoint(node).is_ok_and(|e| e.addr.ip().is_loopback())
    }

    /// Waits for the replicas being made in the background (a program that
    /// wrote files calls this before it exits, or they are not made).
    pub async fn settled(&self) {
        let mut pending = std::mem::take(&mut *self.inner.background.lock().expect("background"));
        while pending.join_next().await.is_some() {}
    }

    /// Makes the replicas a committed version still lacks, in the
    /// background, from this node's copy, and registers each.
    pub(super) fn replicate_rest(&self, path: &str, rec: &Record) {
        let missing = self
            .inner
            .copies
            .of(rec.copies)
            .saturating_sub(rec.holders.len() as u32);
        if missing == 0 || !self.holds(rec) || self.inner.diskless {
            return;
        }
        let (c, path, rec) = (self.clone(), path.to_string(), rec.clone());
        let mut background = self.inner.background.lock().expect("background");
        while background.try_join_next().is_some() {}
        background.spawn(async move {
            let src = c.inner.store.data_path(&path, rec.stamp);
            let made = c
                .push_replicas(
                    &src,
                    (
                        VersionRef {
                            path: &path,
                            stamp: rec.stamp,
                        },
                        rec.sum,
                    ),
                    rec.holders[0],
                    &rec.holders,
                    missing,
                )
                .await;
            for node in made {
                let req = Request::AddHolder {
                    path: path.clone(),
                    version: rec.version,
                    node,
                };
                if let Err(e) = c.meta(&path, req).await {
                    tracing::warn!("{path}: replica on node {node} not registered: {e}");
                }
            }
        });
    }
}
