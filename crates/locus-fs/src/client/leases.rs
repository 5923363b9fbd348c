//! Write locks held by a lease, renewed while a writer is open.

use super::{expect_ok, expect_record, Client};
use crate::path::normalise;
use locus_proto::fs::{Lease, Record, Request, Response};
use locus_proto::{Errno, FsResult};
use std::time::{Duration, Instant};

/// Pause between sending again a step no answer came for.
const AGAIN_AFTER: Duration = Duration::from_millis(50);

/// Renews a write lock's lease while alive.
pub(super) struct LeaseGuard(pub(super) Option<tokio::task::AbortHandle>);

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

impl Client {
    /// A new lease: a fresh token (which also stamps the version it writes).
    pub(super) fn new_lease(&self) -> Lease {
        Lease {
            token: rand::random::<u64>() | 1,
            ms: self.inner.lease_ms,
        }
    }

    /// Renews `lease` on `path` in the background until the guard is dropped.
    pub(super) fn keep_lease(&self, path: &str, lease: Lease) -> LeaseGuard {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return LeaseGuard(None);
        };
        let (client, path) = (self.clone(), path.to_string());
        let every = Duration::from_millis(u64::from(lease.ms) / 3);
        let task = rt.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let renew = Request::Renew {
                    path: path.clone(),
                    lease,
                };
                if let Err(e) = client.meta(&path, renew).await {
                    tracing::warn!("renewing the write lock: {e}");
                    if e.code == Errno::EBUSY {
                        return;
                    }
                }
            }
        });
        LeaseGuard(Some(task.abort_handle()))
    }

    /// Sends `req`, a write's decisive step (a commit or a rename's
    /// replacement under this client's write lock, a new file's record),
    /// and learns how its daemon decided it. While no answer comes (the
    /// daemon stalled, or the request or its answer was lost) it is sent
    /// again — a daemon answers a repeat as it answered the first — until
    /// an answer comes or the lease has surely ended: one lease and one
    /// request's time from now (renewals sent since reach the daemon
    /// behind the step, so cannot keep the lock for it). A daemon refuses
    /// a locked step once its lease has ended, so such a step cannot take
    /// effect after the error this gives then; a new file's record has no
    /// lock, and a daemon stalled longer than that may still make it.
    pub(super) async fn decided(&self, path: &str, req: Request) -> FsResult<Response> {
        let timeout = self
            .endpoint(self.owner(path))
            .map_or(Duration::ZERO, |e| e.timeout);
        let until =
            Instant::now() + Duration::from_millis(u64::from(self.inner.lease_ms)) + timeout;
        loop {
            let answer = self.meta(path, req.clone()).await;
            match &answer {
                Err(e) if e.is_unanswered() && Instant::now() < until => {
                    tokio::time::sleep(AGAIN_AFTER).await;
                }
                _ => return answer,
            }
        }
    }

    /// Takes the write lock of normalised `path` by compare-and-swap.
    pub(super) async fn lock(&self, path: &str, lease: Lease) -> FsResult<Record> {
        let req = Request::Lock {
            path: path.to_string(),
            lease,
        };
        expect_record(self.meta(path, req).await?)
    }

    /// `lock` of a name that exists: a concurrent creator may have added the
    /// name and not yet its record (then holding its lock: `EBUSY`).
    pub(super) async fn lock_created(&self, path: &str, lease: Lease) -> FsResult<Record> {
        let mut tries = 0;
        loop {
            match self.lock(path, lease).await {
                // (A record lost with its owner never comes.)
                Err(e) if e.code == Errno::ENOENT && !Client::owner_lost(&e) && tries < 200 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                other => return other,
            }
        }
    }

    /// Releases a write lock this client took, leaving the file unchanged.
    pub(super) async fn unlock(&self, path: &str, token: u64) -> FsResult<Response> {
        let req = Request::Unlock {
            path: path.to_string(),
            token: Some(token),
        };
        self.meta(path, req).await
    }

    /// Breaks the write lock of `path`, whoever holds it (an operator's
    /// remedy for a writer known to be gone; its lease would end it too).
    pub async fn break_lock(&self, path: &str) -> FsResult<()> {
        let path = normalise(path)?;
        let req = Request::Unlock {
            path: path.clone(),
            token: None,
        };
        expect_ok(self.meta(&path, req).await?)
    }
}
