//! Which daemon answers a path: its owner, or while the owner cannot be
//! reached the next that acts for it.

use super::{expect_ok, publish::Publishing, publish::PUBLISHING, unexpected, Client};
use crate::cluster::replica_set;
use crate::path::split;
use crate::peer::is_unreachable;
use locus_proto::fs::{NodeId, NodeStatus, Request, Response};
use locus_proto::{Cause, Errno, FsError, FsResult};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a write waits for an owner taking its keys back (`EAGAIN`
/// from the daemon that acted for it) before the error is the answer.
const RETURN_WAIT: Duration = Duration::from_secs(90);

impl Client {
    /// The daemon owning the metadata of `path`.
    pub fn owner(&self, path: &str) -> NodeId {
        self.inner.ring.owner(path)
    }

    pub(crate) async fn call(&self, node: NodeId, req: Request) -> FsResult<Response> {
        self.inner.transport.call(node, req).await
    }

    /// A metadata request to the owner of `path`; while the owner cannot be
    /// reached, to the next daemons in node order, the first that answers
    /// acting for it: with replicas it holds the owner's keys; without
    /// (`take_over` only), the names the owner kept are lost (a miss names
    /// the owner) and new ones are made there.
    pub(crate) async fn meta(&self, path: &str, req: Request) -> FsResult<Response> {
        self.meta_retried(path, req).await.0
    }

    /// `meta`, and whether the answer came after an attempt that could not
    /// be completed: the request may then have been applied before, and a
    /// create answered `EEXIST` may be this client's own.
    pub(super) async fn meta_retried(
        &self,
        path: &str,
        req: Request,
    ) -> (FsResult<Response>, bool) {
        self.give_back_touched(&req).await;
        // No program waits for a background publication: its writes go to
        // disk with the next flushed commit (or at `settle_dir`).
        let lazy = PUBLISHING.try_with(|p| *p == Publishing::Lazy && req.is_metadata_write());
        let req = match lazy {
            Ok(true) => {
                self.inner.lazy.0.fetch_add(1, Ordering::Relaxed);
                Request::Lazy { op: Box::new(req) }
            }
            _ => req,
        };
        let owner = self.owner(path);
        if self.inner.replicas == 1 && !self.inner.take_over {
            return (self.call(owner, req).await, false);
        }
        let nodes = self.node_count();
        let candidates = match self.inner.take_over {
            true => nodes as u32,
            false => self.inner.replicas,
        };
        let coming_back = Instant::now();
        let (mut tried, mut retried) = (Vec::new(), false);
        'owner: loop {
            tried.clear();
            for node in replica_set(owner, nodes, candidates) {
                match self.call(node, req.clone()).await {
                    Err(e) if is_unreachable(&e) => {
                        tried.push(e);
                        retried = true;
                    }
                    // A miss where the owner's keys are kept (a replica
                    // of them) is as sure as the owner's own.
                    Err(e)
                        if e.code == Errno::ENOENT
                            && !tried.is_empty()
                            && !replica_set(owner, nodes, self.inner.replicas).contains(&node) =>
                    {
                        let detail =
                            format!("lost? its owner {} cannot be reached", tried[0].subject);
                        let lost = Cause::OwnerLost { node: owner };
                        return (Err(e.with_detail(detail).with_cause(lost)), retried);
                    }
                    // The owner is taking its keys back from the daemon
                    // that acted for it, or serves them again: try it.
                    Err(e) if e.code == Errno::EAGAIN && coming_back.elapsed() < RETURN_WAIT => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue 'owner;
                    }
                    other => return (other, retried),
                }
            }
            break;
        }
        let first = tried.remove(0);
        let others: Vec<String> = tried.iter().map(|e| e.subject.clone()).collect();
        let detail = format!("and the daemons after it: {}", others.join(", "));
        (Err(first.with_detail(detail)), retried)
    }

    /// Whether `e` is a miss whose owner could not be reached: the name
    /// may have been lost with it.
    pub fn owner_lost(e: &FsError) -> bool {
        matches!(e.cause, Some(Cause::OwnerLost { .. }))
    }

    /// Resolves, with the error, once node `node`'s daemon has stopped
    /// answering: a ping (one every `every`) found it unreachable, and so
    /// did another shortly after.
    pub async fn lost_node(&self, node: NodeId, every: std::time::Duration) -> FsError {
        let confirm = every / 5;
        loop {
            tokio::time::sleep(every).await;
            if !matches!(self.ping(node).await, Err(e) if is_unreachable(&e)) {
                continue;
            }
            tokio::time::sleep(confirm).await;
            if let Err(e) = self.ping(node).await {
                if is_unreachable(&e) {
                    return e;
                }
            }
        }
    }

    /// Whether node `node`'s daemon answers (and accepts this client's secret).
    pub async fn ping(&self, node: NodeId) -> FsResult<()> {
        expect_ok(self.call(node, Request::Ping).await?)
    }

    /// Stops node `node`'s daemon (it answers first); with `purge` it also
    /// removes its node directory.
    pub async fn shutdown(&self, node: NodeId, purge: bool) -> FsResult<()> {
        expect_ok(self.call(node, Request::Shutdown { purge }).await?)
    }

    /// What node `node`'s daemon holds and how it is doing.
    pub async fn status(&self, node: NodeId) -> FsResult<NodeStatus> {
        match self.call(node, Request::Status).await? {
            Response::Status(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    /// The directories above `path` (outermost first) whose entries and
    /// records the daemon keeping `path` keeps too: it can make those
    /// itself if they are missing.
    pub(super) fn kept_with(&self, path: &str) -> Vec<String> {
        let owner = self.owner(path);
        let mut dirs = Vec::new();
        let mut dir = split(path).map_or("/", |(p, _)| p);
        while dir != "/" {
            let above = split(dir).map_or("/", |(p, _)| p);
            if self.owner(dir) != owner || self.owner(above) != owner {
                break;
            }
            dirs.push(dir.to_string());
            dir = above;
        }
        dirs.reverse();
        dirs
    }
}
