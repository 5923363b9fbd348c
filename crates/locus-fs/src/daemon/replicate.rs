//! Metadata replication between daemons (FusionFS's scheme): what a
//! daemon's operations write is sent, in commit order, to the next
//! `replicas - 1` daemons in node order; the first of them has applied it
//! before the client is answered, the others get it after. A daemon that
//! comes back takes its keys back from the first replica that answers
//! before it serves, so it does not serve what it missed while it was down
//! (fencing them first: `fence`). A replica that missed writes (it could not
//! be reached) catches up — replaces its copy of the owner's keys with the
//! owner's — when it comes back, and whenever the owner finds it reachable
//! again, before the owner sends it anything more.

use crate::cluster::{replica_set, ClusterSpec};
use crate::meta::MetaStore;
use crate::peer::{Endpoint, Peer};
use locus_proto::auth::Secret;
use locus_proto::fs::{Change, NodeId, Request, Response};
use locus_proto::FsResult;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};

/// Batches sent to a replica and not yet answered, at most.
const IN_FLIGHT: usize = 4;
/// Changes sent to a replica in one request at most.
const MAX_BATCH: usize = 10_000;
/// Keys per page when a daemon takes its keys back.
const PAGE: u32 = 10_000;
/// Bound on one request to a replica.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How often a replica that missed writes is asked to catch up.
const CATCH_UP_EVERY: Duration = Duration::from_millis(250);

struct Batch {
    changes: Vec<Change>,
    applied: Option<Applied>,
}

/// What runs once the first replica applied a batch, or could not be
/// reached (the write then stands on fewer copies). Dropped unrun when the
/// daemon stops first: its answer is never sent, as a killed daemon's is
/// not, and the client, whose connection closes, writes again elsewhere.
struct Applied(Box<dyn FnOnce() + Send>);

impl Applied {
    fn done(self) {
        (self.0)();
    }
}

/// A daemon's senders to its replicas, one ordered queue each, and what
/// wakes each one's sender when its replica comes back.
pub(crate) struct Replicator {
    replicas: Vec<mpsc::UnboundedSender<Batch>>,
    back: Vec<(NodeId, Arc<Notify>)>,
}

pub(crate) fn peer(spec: &ClusterSpec, node: NodeId, secret: &Secret) -> Peer {
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
    pub(crate) fn new(spec: &ClusterSpec, me: NodeId, secret: &Secret) -> Option<Arc<Replicator>> {
        let set = replica_set(me, spec.nodes.len(), spec.replicas);
        let (replicas, back) = set[1..]
            .iter()
            .map(|&node| {
                let (tx, rx) = mpsc::unbounded_channel();
                let back = Arc::new(Notify::new());
                let peer = peer(spec, node, secret);
                tokio::spawn(send_in_order(peer, me, rx, back.clone()));
                (tx, (node, back))
            })
            .unzip::<_, _, Vec<_>, Vec<_>>();
        (!replicas.is_empty()).then(|| Arc::new(Replicator { replicas, back }))
    }

    /// Replica `node` came back: if it missed writes, it is caught up now.
    pub(crate) fn replica_back(&self, node: NodeId) {
        for (_, back) in self.back.iter().filter(|(n, _)| *n == node) {
            back.notify_one();
        }
    }

    /// Queues `changes` for every replica (callable from any thread, in
    /// commit order); `then` runs once the first replica applied them, or
    /// could not be reached (the write stands on fewer copies then), on the
    /// task that sends to it (no task or wake-up of its own).
    pub(crate) fn forward(&self, changes: Vec<Change>, then: impl FnOnce() + Send + 'static) {
        let mut applied = Some(Applied(Box::new(then)));
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
/// `IN_FLIGHT` batches awaiting its answer at once. Once a batch could not
/// be applied, the replica is behind: it is asked to catch up (every
/// `CATCH_UP_EVERY` until it answers; what is written meanwhile is in what
/// it takes) before anything more is sent.
async fn send_in_order(
    peer: Peer,
    me: NodeId,
    mut rx: mpsc::UnboundedReceiver<Batch>,
    back: Arc<Notify>,
) {
    let mut behind = false;
    let mut waiting = std::collections::VecDeque::new();
    loop {
        if behind && waiting.is_empty() {
            match peer.call(Request::CatchUp { owner: me }).await {
                Ok(Response::Ok) => {
                    tracing::info!("replica node {} caught up", peer.endpoint.node);
                    behind = false;
                }
                _ => {
                    let until = tokio::time::Instant::now() + CATCH_UP_EVERY;
                    loop {
                        tokio::select! {
                            batch = rx.recv() => match batch {
                                // Answered on fewer copies; the catch-up carries it.
                                Some(batch) => batch.applied.into_iter().for_each(Applied::done),
                                None => return, // the daemon stopped
                            },
                            _ = tokio::time::sleep_until(until) => break,
                            // Back: what it missed since it restarted is only
                            // here until it is caught up.
                            _ = back.notified() => break,
                        }
                    }
                    continue;
                }
            }
        }
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
            Ok(Response::Ok) => {}
            Ok(_) | Err(_) if behind => {}
            Ok(r) => {
                tracing::warn!("replica refused writes, to catch up: {r:?}");
                behind = true;
            }
            Err(e) => {
                tracing::warn!("replica unreachable, writes go on with fewer copies: {e}");
                behind = true;
            }
        }
        applied.into_iter().flatten().for_each(Applied::done);
    }
}

/// Every key daemon `node` has (its own and those it replicates).
async fn dump_of(peer: &Peer) -> FsResult<Vec<Change>> {
    let (mut all, mut after) = (Vec::new(), None);
    loop {
        let page = Request::Dump {
            after: after.clone(),
            limit: PAGE,
        };
        match peer.call(page).await? {
            Response::Changes { changes, more } => {
                after = changes.last().cloned();
                all.extend(changes);
                if !more {
                    return Ok(all);
                }
            }
            Response::Err(e) => return Err(e),
            other => {
                return Err(locus_proto::FsError::new(
                    locus_proto::Errno::EIO,
                    format!("node {}", peer.endpoint.node),
                )
                .with_detail(format!("unexpected answer to a dump: {other:?}")))
            }
        }
    }
}

/// The nodes whose keys daemon `me` keeps copies of.
pub(crate) fn replicated_by(spec: &ClusterSpec, me: NodeId) -> Vec<NodeId> {
    let n = spec.nodes.len();
    (0..n as NodeId)
        .filter(|&p| p != me && replica_set(p, n, spec.replicas)[1..].contains(&me))
        .collect()
}

/// Replaces this daemon's copy of `owner`'s keys with `owner`'s own, in one
/// transaction (a replica catching up); returns how many keys it holds now.
pub(crate) async fn catch_up(
    spec: &ClusterSpec,
    owner: NodeId,
    secret: &Secret,
    meta: &MetaStore,
) -> FsResult<usize> {
    let ring = spec.ring();
    let owned = |path: &str| ring.owner(path) == owner;
    let theirs: Vec<Change> = dump_of(&peer(spec, owner, secret))
        .await?
        .into_iter()
        .filter(|c| owned(c.key_path()))
        .collect();
    let kept: std::collections::HashSet<_> = theirs.iter().map(key_of).collect();
    let mut changes: Vec<Change> = meta
        .keys(owned)?
        .iter()
        .filter(|c| !kept.contains(&key_of(c)))
        .map(Change::removal)
        .collect();
    let count = theirs.len();
    changes.extend(theirs);
    match meta.write(Request::Replicate { changes }).await {
        Response::Ok => Ok(count),
        Response::Err(e) => Err(e),
        other => Err(
            locus_proto::FsError::new(locus_proto::Errno::EIO, "metadata store")
                .with_detail(format!("unexpected answer: {other:?}")),
        ),
    }
}

/// A key as (table, path or parent, name).
fn key_of(c: &Change) -> (u8, String, String) {
    match c {
        Change::Record { path, .. } => (0, path.clone(), String::new()),
        Change::Entry { parent, name, .. } => (1, parent.clone(), name.clone()),
        Change::Hint { path, .. } => (2, path.clone(), String::new()),
        Change::Answered { path, op, .. } => (3, path.clone(), op.to_string()),
    }
}

/// The daemons that may act for `me`: its replicas; without replicas, any
/// other (each in turn while those before it were lost too).
fn acting_for(spec: &ClusterSpec, me: NodeId) -> Vec<NodeId> {
    let n = spec.nodes.len();
    let count = match spec.replicas {
        0 | 1 => n as u32,
        r => r,
    };
    replica_set(me, n, count).split_off(1)
}

/// Tells the daemons whose keys `me` keeps that it is back, so that each
/// catches it up at once if it missed their writes.
pub(crate) async fn back_for_owners(spec: &ClusterSpec, me: NodeId, secret: &Secret) {
    for owner in replicated_by(spec, me) {
        let _ = peer(spec, owner, secret)
            .call(Request::ReplicaBack { replica: me })
            .await;
    }
}

/// Tells the daemons that may act for `me` that it is coming back (they
/// refuse writes to its keys until it serves) or that it serves; returns
/// those that answered.
pub(crate) async fn announce(
    spec: &ClusterSpec,
    me: NodeId,
    secret: &Secret,
    serving: bool,
) -> Vec<NodeId> {
    let mut answered = Vec::new();
    for node in acting_for(spec, me) {
        let told = Request::Returning { owner: me, serving };
        if let Ok(Response::Ok) = peer(spec, node, secret).call(told).await {
            answered.push(node);
        }
    }
    answered
}

/// Takes the keys daemon `me` owns back from the first of its replicas that
/// answers (they saw every write acknowledged while `me` was down), in
/// place of its own. Without replicas, from every daemon that answers
/// (those that took them over for a run while `me` was lost), the newest
/// of each key winning, added to its own; the givers then forget them, so
/// that none serves them again once `me` is lost another time. Returns
/// the nodes that gave and how many keys were taken, or `None` if none
/// answered.
pub(crate) async fn take_back(
    spec: &ClusterSpec,
    me: NodeId,
    secret: &Secret,
    meta: &MetaStore,
) -> FsResult<Option<(Vec<NodeId>, usize)>> {
    let ring = spec.ring();
    let mine = |path: &str| ring.owner(path) == me;
    // Fenced first: what they accept for `me` after this is refused.
    let answered = announce(spec, me, secret, false).await;
    if spec.replicas > 1 {
        for node in answered {
            let Ok(theirs) = dump_of(&peer(spec, node, secret)).await else {
                continue;
            };
            let taken = meta.take_back(&theirs, mine, true)?;
            return Ok(Some((vec![node], taken)));
        }
        return Ok(None);
    }
    let mut given = Vec::new();
    for node in answered {
        if let Ok(theirs) = dump_of(&peer(spec, node, secret)).await {
            let theirs: Vec<Change> = theirs.into_iter().filter(|c| mine(c.key_path())).collect();
            given.push((node, theirs));
        }
    }
    if given.is_empty() {
        return Ok(None);
    }
    let newest = newest_of(given.iter().flat_map(|(_, theirs)| theirs.iter().cloned()));
    let taken = meta.take_back(&newest, mine, false)?;
    for (node, theirs) in &given {
        if theirs.is_empty() {
            continue;
        }
        let changes = theirs.iter().map(Change::removal).collect();
        if let Err(e) = peer(spec, *node, secret)
            .call(Request::Replicate { changes })
            .await
        {
            tracing::warn!("node {node} keeps the keys it gave back: {e}");
        }
    }
    Ok(Some((given.into_iter().map(|(n, _)| n).collect(), taken)))
}

/// One change per key: of records, the one made last (a file made again
/// after a loss is newer than what a daemon kept of it before).
fn newest_of(changes: impl IntoIterator<Item = Change>) -> Vec<Change> {
    let mut by_key: HashMap<_, Change> = HashMap::new();
    for c in changes {
        let mtime = |c: &Change| match c {
            Change::Record {
                record: Some(r), ..
            } => r.mtime_ns,
            _ => i64::MIN,
        };
        match by_key.entry(key_of(&c)) {
            Entry::Occupied(mut have) if mtime(&c) > mtime(have.get()) => {
                have.insert(c);
            }
            Entry::Occupied(_) => {}
            Entry::Vacant(v) => {
                v.insert(c);
            }
        }
    }
    by_key.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn of_records_kept_by_several_daemons_the_one_made_last_is_taken() {
        use locus_proto::fs::{Kind, Record};
        let record = |mtime_ns, size| Change::Record {
            path: "/a".into(),
            record: Some(Record {
                size,
                ..Record::new(Kind::File, 0o644, mtime_ns)
            }),
        };
        let entry = Change::Entry {
            parent: "/".into(),
            name: "a".into(),
            kind: Some(Kind::File),
        };
        let kept = newest_of([
            record(5, 1),
            entry.clone(),
            record(9, 2),
            entry,
            record(7, 3),
        ]);
        assert_eq!(kept.len(), 2);
        assert!(kept.contains(&record(9, 2)));
    }

    /// A write's answer waits for its first replica; one still queued when
    /// the daemon stops is never given, as a killed daemon's is not (its
    /// client, whose connection closes, writes again elsewhere).
    #[test]
    fn a_forwarded_write_is_answered_once_its_replica_took_it_and_never_otherwise() {
        let answered = Arc::new(AtomicUsize::new(0));
        let count = || {
            let a = answered.clone();
            move || {
                a.fetch_add(1, Ordering::SeqCst);
            }
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let replicator = Replicator {
            replicas: vec![tx],
            back: vec![],
        };
        replicator.forward(Vec::new(), count());
        assert_eq!(answered.load(Ordering::SeqCst), 0, "answered before sent");
        let batch = rx.try_recv().expect("queued for the replica");
        batch.applied.expect("the first replica's").done();
        assert_eq!(answered.load(Ordering::SeqCst), 1);
        // Queued, then the daemon stops: no answer.
        replicator.forward(Vec::new(), count());
        drop(rx);
        // No sender task at all: no answer either.
        replicator.forward(Vec::new(), count());
        assert_eq!(answered.load(Ordering::SeqCst), 1);
    }
}
