//! A daemon's delegations: directories whose names it has lent to one
//! client connection (a mount creating many files), which answers for them
//! and publishes what it makes later. Any other connection's request that
//! reads or changes a name in such a directory first recalls it: the holder
//! is told (its `AwaitRecall` is answered), publishes, and gives it back;
//! the request then runs. A holder that does not give it back within
//! [`RECALL_WAIT`], or whose connection ends, loses it.

use locus_proto::fs::Request;
use locus_proto::Errno;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// How long a recalled delegation may take to come back before it is taken.
pub(crate) const RECALL_WAIT: Duration = Duration::from_secs(5);

struct Grant {
    conn: u64,
    /// Recalled before the holder asked to be told.
    recalled: bool,
    /// The holder's pending `AwaitRecall`.
    tell: Option<oneshot::Sender<()>>,
    /// Dropped with the grant: requests waiting for it go on.
    _ended: watch::Sender<()>,
    ended: watch::Receiver<()>,
}

impl Grant {
    fn recall(&mut self) {
        match self.tell.take() {
            Some(tell) => drop(tell.send(())),
            None => self.recalled = true,
        }
    }
}

#[derive(Default)]
pub(crate) struct Delegations {
    grants: Mutex<HashMap<String, Grant>>,
    /// Grants held, read without the lock on every request.
    count: AtomicUsize,
}

/// A recalled delegation a request waits for.
pub(crate) struct Recalled {
    pub dir: String,
    ended: watch::Receiver<()>,
}

impl Recalled {
    /// Waits until the delegation ends, or takes it after [`RECALL_WAIT`].
    pub(crate) async fn ended(mut self, delegations: &Delegations) {
        let wait = tokio::time::timeout(RECALL_WAIT, self.ended.changed());
        if wait.await.is_err() {
            tracing::warn!("{}: the delegation was not given back: taken", self.dir);
            delegations.end(&self.dir, None);
        }
    }
}

impl Delegations {
    fn grants(&self) -> std::sync::MutexGuard<'_, HashMap<String, Grant>> {
        self.grants.lock().expect("delegations")
    }

    /// Lends `dir` to `conn` (`EBUSY` if another connection has it).
    pub(crate) fn grant(&self, dir: &str, conn: u64) -> Result<(), Errno> {
        let mut grants = self.grants();
        if let Some(g) = grants.get(dir) {
            return if g.conn == conn {
                Ok(())
            } else {
                Err(Errno::EBUSY)
            };
        }
        let (tx, rx) = watch::channel(());
        grants.insert(
            dir.to_string(),
            Grant {
                conn,
                recalled: false,
                tell: None,
                _ended: tx,
                ended: rx,
            },
        );
        self.count.store(grants.len(), Ordering::Release);
        Ok(())
    }

    /// What answers `conn`'s `AwaitRecall` of `dir`: at once (`Err`) if it
    /// does not hold `dir` or it was recalled already.
    pub(crate) fn await_recall(&self, dir: &str, conn: u64) -> Result<oneshot::Receiver<()>, ()> {
        let mut grants = self.grants();
        match grants.get_mut(dir) {
            Some(g) if g.conn == conn && !g.recalled => {
                let (tx, rx) = oneshot::channel();
                g.tell = Some(tx);
                Ok(rx)
            }
            _ => Err(()),
        }
    }

    /// Ends the delegation of `dir`: `conn`'s own giving back, or (`None`)
    /// taking it whoever holds it.
    pub(crate) fn end(&self, dir: &str, conn: Option<u64>) {
        let mut grants = self.grants();
        if grants
            .get(dir)
            .is_some_and(|g| conn.is_none_or(|c| c == g.conn))
        {
            grants.remove(dir);
        }
        self.count.store(grants.len(), Ordering::Release);
    }

    /// Ends every delegation `conn` holds (its connection ended).
    pub(crate) fn closed(&self, conn: u64) {
        let mut grants = self.grants();
        grants.retain(|_, g| g.conn != conn);
        self.count.store(grants.len(), Ordering::Release);
    }

    /// A delegation held by another connection than `conn` that `req`
    /// must wait for, recalled now.
    pub(crate) fn blocking(&self, req: &Request, conn: u64) -> Option<Recalled> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut grants = self.grants();
        for dir in req.dirs_touched() {
            if let Some(g) = grants.get_mut(dir).filter(|g| g.conn != conn) {
                g.recall();
                return Some(Recalled {
                    dir: dir.to_string(),
                    ended: g.ended.clone(),
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(dir: &str) -> Request {
        Request::ListEntries {
            dir: dir.into(),
            after: None,
            limit: 10,
        }
    }

    #[tokio::test]
    async fn another_connection_recalls_the_holder_and_waits_for_the_giving_back() {
        let d = Delegations::default();
        d.grant("/d", 1).unwrap();
        assert_eq!(d.grant("/d", 2), Err(Errno::EBUSY));
        let told = d.await_recall("/d", 1).unwrap();
        // The holder's own requests and other directories' go on.
        assert!(d.blocking(&list("/d"), 1).is_none());
        assert!(d.blocking(&list("/e"), 2).is_none());
        let stat = Request::GetRecord {
            path: "/d/x".into(),
        };
        let waiting = d.blocking(&stat, 2).expect("recalled");
        told.await.expect("the holder is told");
        let mut ended = tokio::spawn(async move {
            let d2 = Delegations::default();
            waiting.ended(&d2).await;
        });
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut ended)
                .await
                .is_err(),
            "the request waits for the holder"
        );
        d.end("/d", Some(2)); // not the holder's: no effect
        assert!(d.blocking(&list("/d"), 2).is_some());
        d.end("/d", Some(1));
        ended.await.unwrap();
        assert!(d.blocking(&list("/d"), 2).is_none());
    }

    #[tokio::test]
    async fn a_recall_before_the_holder_asks_is_told_at_once_and_a_closed_connection_ends_its_grants(
    ) {
        let d = Delegations::default();
        d.grant("/d", 1).unwrap();
        d.grant("/e", 1).unwrap();
        let waiting = d.blocking(&list("/d"), 2).expect("recalled");
        assert!(d.await_recall("/d", 1).is_err(), "told at once");
        assert!(d.await_recall("/e", 2).is_err(), "not its grant");
        d.closed(1);
        waiting.ended(&d).await;
        let rmdir = Request::RemoveRecord {
            path: "/e".into(),
            kind: locus_proto::fs::Kind::Dir,
            locked_by: None,
            op: 1,
        };
        assert!(d.blocking(&rmdir, 2).is_none());
        d.grant("/e", 2).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_holder_that_does_not_give_back_loses_the_delegation() {
        let d = Delegations::default();
        d.grant("/d", 1).unwrap();
        let rmdir = Request::RemoveRecord {
            path: "/d".into(),
            kind: locus_proto::fs::Kind::Dir,
            locked_by: None,
            op: 1,
        };
        let waiting = d
            .blocking(&rmdir, 2)
            .expect("the directory's names are read");
        waiting.ended(&d).await;
        assert!(d.blocking(&rmdir, 2).is_none());
        d.grant("/d", 2).unwrap();
    }
}
