//! Metadata replication between daemons (FusionFS's scheme): what a
//! daemon's operations write is sent, in commit order, to the next
//! `replicas - 1` daemons in node order; the first of them has applied it
//! before the client is answered, the others get it after. A daemon that
//! comes back takes its keys back from the first replica that answers
//! before it serves, so it does not serve what it missed while it was down.

use crate::cluster::{replica_set, ClusterSpec};
use crate::meta::MetaStore;
use crate::peer::{Endpoint, Peer};
use locus_proto::auth::Secret;
use locus_proto::fs::{Change, NodeId, Request, Response};
use locus_proto::FsResult;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Batches sent to a replica and not yet answered, at most.
const IN_FLIGHT: usize = 4;
/// Changes sent to a replica in one request at most.
const MAX_BATCH: usize = 10_000;
/// Keys per page when a daemon takes its keys back.
const PAGE: u32 = 10_000;
/// Bound on one request to a replica.
const TIMEOUT: Duration = Duration::from_secs(5);

struct Batch {
    changes: Vec<Change>,
    applied: Option<Applied>,
}

/// What runs once the first replica applied a batch, or could not be
/// reached, or the daemon stops: run when dropped, so it always runs.
struct Applied(Option<Box<dyn FnOnce() + Send>>);

impl Drop for Applied {
    fn drop(&mut self) {
        if let Some(then) = self.0.take() {
            then();
        }
    }
}

/// A daemon's senders to its replicas, one ordered queue each.
pub struct Replicator {
    replicas: Vec<mpsc::UnboundedSender<Batch>>,
}

fn peer(spec: &ClusterSpec, node: NodeId, secret: &Secret) -> Peer {
    let n = &spec.nodes[node as usize];
    Peer::new(Endpoint {
        node,
        name: n.name.clone(),
        addr: n.addr,
        secret: secret.clone(),
        timeout: TIMEOUT,
    })
}

impl Replicator {
    /// The replicator of daemon `me`, if the cluster keeps more than one
    /// copy. Starts one sending task per replica (on the current runtime).
    pub fn new(spec: &ClusterSpec, me: NodeId, secret: &Secret) -> Option<Arc<Replicator>> {
        let set = replica_set(me, spec.nodes.len(), spec.replicas);
        let replicas: Vec<_> = set[1..]
            .iter()
            .map(|&node| {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(send_in_order(peer(spec, node, secret), rx));
                tx
            })
            .collect();
        (!replicas.is_empty()).then(|| Arc::new(Replicator { replicas }))
    }

    /// Queues `changes` for every replica (callable from any thread, in
    /// commit order); `then` runs once the first replica applied them, or
    /// could not be reached (the write stands on fewer copies then), on the
    /// task that sends to it (no task or wake-up of its own).
    pub fn forward(&self, changes: Vec<Change>, then: impl FnOnce() + Send + 'static) {
        let mut applied = Some(Applied(Some(Box::new(then))));
        for r in &self.replicas {
            let _ = r.send(Batch {
                changes: changes.clone(),
                applied: applied.take(),
            });
        }
    }
}

/// Sends what is queued for one replica, batched, in order on one
/// connection (the replica applies it in the order it was written), up to
/// `IN_FLIGHT` batches awaiting its answer at once.
async fn send_in_order(peer: Peer, mut rx: mpsc::UnboundedReceiver<Batch>) {
    let mut warned = false;
    let mut waiting = std::collections::VecDeque::new();
    loop {
        // Take what is queued, or wait for the oldest answer.
        let next = match waiting.len() {
            0 => rx.recv().await,
            n if n < IN_FLIGHT => rx.try_recv().ok(),
            _ => None,
        };
        if let Some(first) = next {
            let mut changes = first.changes;
            let mut applied = vec![first.applied];
            while changes.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(b) => {
                        changes.extend(b.changes);
                        applied.push(b.applied);
                    }
                    Err(_) => break,
                }
            }
            let sent = peer.send(Request::Replicate { changes }).await;
            waiting.push_back((sent, applied));
            continue;
        }
        let Some((sent, applied)) = waiting.pop_front() else {
            return; // the daemon stopped
        };
        let answer = match sent {
            Ok(pending) => pending.answer().await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(_) => warned = false,
            Err(e) if !warned => {
                tracing::warn!("replica unreachable, writes go on with fewer copies: {e}");
                warned = true;
            }
            Err(_) => {}
        }
        drop(applied);
    }
}

/// Takes the keys daemon `me` owns back from the first of its replicas that
/// answers (they saw every write acknowledged while `me` was down), in
/// place of its own; without replicas, from the next node (which took them
/// over for a run while `me` was lost), added to its own. Returns the node
/// and how many keys it gave, or `None` if none answered.
pub async fn take_back(
    spec: &ClusterSpec,
    me: NodeId,
    secret: &Secret,
    meta: &MetaStore,
) -> FsResult<Option<(NodeId, usize)>> {
    let ring = spec.ring();
    let set = replica_set(me, spec.nodes.len(), spec.replicas.max(2));
    let replace = spec.replicas > 1;
    'replicas: for &node in &set[1..] {
        let peer = peer(spec, node, secret);
        let mut theirs = Vec::new();
        let mut after = None;
        loop {
            let page = peer
                .call(Request::Dump {
                    after: after.clone(),
                    limit: PAGE,
                })
                .await;
            match page {
                Ok(Response::Changes { changes, more }) => {
                    after = changes.last().cloned();
                    theirs.extend(changes);
                    if !more {
                        break;
                    }
                }
                Ok(_) | Err(_) => continue 'replicas,
            }
        }
        let taken = meta.take_back(&theirs, |path| ring.owner(path) == me, replace)?;
        return Ok(Some((node, taken)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A write's answer waits for its first replica, and is given even if
    /// what was queued for the replica is never sent (the daemon stopped).
    #[test]
    fn a_forwarded_write_is_answered_once_whatever_becomes_of_its_batch() {
        let answered = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::unbounded_channel();
        let replicator = Replicator { replicas: vec![tx] };
        let a = answered.clone();
        replicator.forward(Vec::new(), move || {
            a.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(answered.load(Ordering::SeqCst), 0, "answered before sent");
        drop(rx);
        assert_eq!(answered.load(Ordering::SeqCst), 1);
        // No sender task at all: answered at once.
        let a = answered.clone();
        replicator.forward(Vec::new(), move || {
            a.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(answered.load(Ordering::SeqCst), 2);
    }
}
