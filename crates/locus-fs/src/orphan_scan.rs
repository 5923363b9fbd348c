//! A daemon's own look, every so often, for copies in its store that no
//! record names any more (of versions replaced or files removed while it
//! was down, of writes that failed half way): `locus fs repair --orphans`
//! of one node's store, in the background. A round is skipped while any
//! daemon of the cluster does not answer, so that a copy is judged only by
//! its record's own keeper.

use crate::{Client, ClientOptions};
use locus_proto::fs::NodeId;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// How often a daemon looks for orphaned copies, and which it may judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrphanScan {
    /// Between two rounds; zero: never.
    pub every: Duration,
    /// Only copies put in place at least this long ago are judged (a write
    /// in progress names its copy well within it).
    pub older_than: Duration,
}

impl Default for OrphanScan {
    fn default() -> Self {
        OrphanScan {
            every: Duration::from_secs(3600),
            older_than: Duration::from_secs(600),
        }
    }
}

/// Runs the scan of node `node`'s store, in the cluster described in
/// `dir`, until dropped.
pub(crate) async fn scan_orphans(dir: PathBuf, node: NodeId, scan: OrphanScan) {
    if scan.every.is_zero() {
        return;
    }
    loop {
        tokio::time::sleep(scan.every).await;
        // Opened each round: a restarted daemon may serve on a new port.
        let opts = ClientOptions {
            node,
            ..Default::default()
        };
        let client = match Client::open(&dir, opts) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("orphan scan: {e}");
                continue;
            }
        };
        if !every_daemon_answers(&client).await {
            tracing::debug!("orphan scan skipped: a daemon does not answer");
            continue;
        }
        let done = client.reclaim_copies_of(node, scan.older_than).await;
        if done.dropped > 0 {
            tracing::info!(
                "orphan scan: dropped {} copies no record names ({} bytes) of {} looked at",
                done.dropped,
                done.bytes,
                done.checked
            );
        }
    }
}

async fn every_daemon_answers(client: &Client) -> bool {
    for n in 0..client.node_count() as NodeId {
        if client.ping(n).await.is_err() {
            return false;
        }
    }
    true
}
