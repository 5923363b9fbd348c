//! A daemon's own upkeep of its store, in the background: every so often
//! it drops the copies no record names any more (of versions replaced or
//! files removed while it was down, of writes that failed half way:
//! `locus fs repair --orphans` of one node's store), and it scrubs its
//! store (`locus fs scrub` of one node, at a bounded rate). A round is
//! skipped while any daemon of the cluster does not answer, so that a copy
//! is judged only by its record's own keeper.

use crate::{Client, ClientOptions};
use locus_proto::fs::NodeId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a daemon looks after its store; a zero period: never.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upkeep {
    /// Between two looks for orphaned copies.
    pub orphans_every: Duration,
    /// Only copies put in place at least this long ago are judged orphans
    /// (a write in progress names its copy well within it).
    pub orphans_older_than: Duration,
    /// Between two scrubs of the whole store.
    pub scrub_every: Duration,
    /// Bytes a second a scrub reads at most (0: unbounded).
    pub scrub_rate: u64,
}

impl Default for Upkeep {
    fn default() -> Self {
        Upkeep {
            orphans_every: Duration::from_secs(3600),
            orphans_older_than: Duration::from_secs(600),
            scrub_every: Duration::from_secs(24 * 3600),
            scrub_rate: 100_000_000,
        }
    }
}

impl Upkeep {
    /// A run's own file system, gone when the run ends: no scrub.
    pub fn of_a_run() -> Upkeep {
        Upkeep {
            scrub_every: Duration::ZERO,
            ..Upkeep::default()
        }
    }
}

/// Looks after node `node`'s store, in the cluster described in `dir`,
/// until dropped.
pub(crate) async fn look_after(dir: PathBuf, node: NodeId, upkeep: Upkeep) {
    let orphans = every(&dir, node, upkeep.orphans_every, |client| async move {
        let done = client
            .reclaim_copies_of(node, upkeep.orphans_older_than)
            .await;
        if done.dropped > 0 {
            tracing::info!(
                "orphan scan: dropped {} copies no record names ({} bytes) of {} looked at",
                done.dropped,
                done.bytes,
                done.checked
            );
        }
    });
    let scrub = every(&dir, node, upkeep.scrub_every, |client| async move {
        let rate = Some(upkeep.scrub_rate).filter(|r| *r > 0);
        match client.scrub(rate).await {
            Ok(done) => {
                tracing::info!(
                    "scrub: {} copies checked ({} bytes), {} repaired, {} with no good copy left",
                    done.checked,
                    done.bytes,
                    done.repaired.len(),
                    done.lost.len()
                );
                for l in &done.lost {
                    tracing::warn!(
                        "scrub: {}: {}, and no other node holds a good copy{}",
                        l.path,
                        l.why,
                        crate::daemon::scrub::made_by_note(l.made_by.as_deref())
                    );
                }
            }
            Err(e) => tracing::warn!("scrub: {e}"),
        }
    });
    tokio::join!(orphans, scrub);
}

/// Runs `job` every `period` (never if zero) with a client of the cluster
/// acting as node `node`, once every daemon answers.
async fn every<F, Fut>(dir: &Path, node: NodeId, period: Duration, job: F)
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    if period.is_zero() {
        return;
    }
    loop {
        tokio::time::sleep(period).await;
        // Opened each round: a restarted daemon may serve on a new port.
        let opts = ClientOptions {
            node,
            ..Default::default()
        };
        let client = match Client::open(dir, opts) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("upkeep: {e}");
                continue;
            }
        };
        if !every_daemon_answers(&client).await {
            tracing::debug!("upkeep skipped: a daemon does not answer");
            continue;
        }
        job(client).await;
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
