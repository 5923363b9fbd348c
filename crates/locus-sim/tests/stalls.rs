//! A daemon that stalls with a client's locked step in hand (a write's
//! commit, a rename's replacement) decides it when it resumes; the client
//! reports what it decided: it waits for the answer while the lock's lease
//! lasts, and past the lease the daemon refuses the step, so an error the
//! client gives is never contradicted by a publication after it.

mod common;

use common::{rt, Cluster};
use locus_fs::{Calling, Client, ClientOptions, Endpoint, Transport};
use locus_proto::fs::{NodeId, Request, Response};
use locus_proto::{Errno, FsResult};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

type Held = (Request, oneshot::Sender<FsResult<Response>>);

/// Stalls node `node`'s daemon for `stall` from the first request `starts`
/// picks: requests sent to it meanwhile wait, in order, and reach it when
/// it resumes; a client waits `wait` for an answer, as over TCP.
struct Stalling {
    inner: Arc<dyn Transport>,
    node: NodeId,
    starts: Box<dyn Fn(&Request) -> bool + Send + Sync>,
    stall: Duration,
    wait: Duration,
    /// Where requests wait while the daemon is stalled (`None` otherwise),
    /// and whether the stall has happened.
    queue: Arc<Mutex<(Option<mpsc::UnboundedSender<Held>>, bool)>>,
}

impl Stalling {
    /// The request's place in the stalled daemon's queue, or `None` if the
    /// daemon is not stalled.
    fn hold(&self, req: &Request) -> Option<oneshot::Receiver<FsResult<Response>>> {
        let mut q = self.queue.lock().unwrap();
        if q.0.is_none() && !q.1 && (self.starts)(req) {
            let (tx, mut rx) = mpsc::unbounded_channel::<Held>();
            *q = (Some(tx), true);
            let (inner, node, stall, queue) = (
                self.inner.clone(),
                self.node,
                self.stall,
                self.queue.clone(),
            );
            tokio::spawn(async move {
                tokio::time::sleep(stall).await;
                queue.lock().unwrap().0 = None;
                while let Some((req, answer)) = rx.recv().await {
                    let _ = answer.send(inner.call(node, req).await);
                }
            });
        }
        let tx = q.0.as_ref()?;
        let (answer, rx) = oneshot::channel();
        tx.send((req.clone(), answer))
            .expect("the stalled daemon's queue");
        Some(rx)
    }
}

impl Transport for Stalling {
    fn call(&self, node: NodeId, req: Request) -> Calling<'_> {
        let held = (node == self.node).then(|| self.hold(&req)).flatten();
        Box::pin(async move {
            let Some(held) = held else {
                return self.inner.call(node, req).await;
            };
            match tokio::time::timeout(self.wait, held).await {
                Ok(Ok(answer)) => answer,
                _ => Err(self
                    .endpoint(node)
                    .expect("a node")
                    .no_answer("stalled (test)")),
            }
        })
    }

    fn endpoint(&self, node: NodeId) -> Option<&Endpoint> {
        self.inner.endpoint(node)
    }

    fn nodes(&self) -> usize {
        self.inner.nodes()
    }
}

/// A client of node 0 whose requests to node 1 stall for `stall` from the
/// first one `starts` picks; its write locks last `lease`.
fn stalling(
    c: &Cluster,
    starts: impl Fn(&Request) -> bool + Send + Sync + 'static,
    stall: Duration,
    lease: Duration,
) -> Client {
    let wait = Duration::from_millis(300);
    let opts = ClientOptions {
        node: 0,
        timeout: wait,
        lease,
        ..ClientOptions::default()
    };
    c.c.client_over(opts, |inner| {
        Arc::new(Stalling {
            inner,
            node: 1,
            starts: Box::new(starts),
            stall,
            wait,
            queue: Arc::default(),
        })
    })
    .expect("client")
}

/// A path whose metadata node `node` keeps.
fn owned_by(cl: &Client, node: NodeId, prefix: &str) -> String {
    (0..)
        .map(|i| format!("/{prefix}{i}.txt"))
        .find(|p| cl.owner(p) == node)
        .unwrap()
}

fn is_commit(r: &Request) -> bool {
    matches!(r, Request::CommitWrite { .. })
}

#[test]
fn a_commit_whose_daemon_stalls_within_the_lease_is_published_and_said_so() {
    let c = Cluster::up(2);
    let rt = rt();
    let plain = c.client(0);
    let writer = stalling(
        &c,
        is_commit,
        Duration::from_secs(1),
        Duration::from_secs(4),
    );
    let p = owned_by(&plain, 1, "w");
    rt.block_on(async {
        let v1 = plain.put(&p, b"version one").await.unwrap();
        let mut w = writer.open_write(&p, true).await.unwrap();
        w.write_all(b"version two").unwrap();
        // Three of the client's waits for an answer pass in the stall.
        let rec = w.close().await.unwrap();
        assert_eq!(rec.version, v1.version + 1);
        let now = plain.stat(&p).await.unwrap();
        assert_eq!((now.version, now.stamp), (rec.version, rec.stamp));
        assert_eq!(plain.get(&p).await.unwrap(), b"version two");
    });
}

#[test]
fn a_commit_whose_daemon_stalls_past_the_lease_fails_and_is_refused_when_it_resumes() {
    let c = Cluster::up(2);
    let rt = rt();
    let plain = c.client(0);
    let stall = Duration::from_secs(2);
    let writer = stalling(&c, is_commit, stall, Duration::from_millis(500));
    let p = owned_by(&plain, 1, "w");
    rt.block_on(async {
        let v1 = plain.put(&p, b"version one").await.unwrap();
        let mut w = writer.open_write(&p, true).await.unwrap();
        w.write_all(b"never acknowledged").unwrap();
        let started = std::time::Instant::now();
        let e = w.close().await.unwrap_err();
        assert_eq!(e.code, Errno::EIO, "{e}");
        assert!(e.is_unreachable(), "{e}");
        // The daemon resumes, its queue (the commit, each time it was sent
        // again) is decided: refused, the lease having ended.
        tokio::time::sleep((stall + Duration::from_millis(500)).saturating_sub(started.elapsed()))
            .await;
        let now = plain.stat(&p).await.unwrap();
        assert_eq!((now.version, now.stamp), (v1.version, v1.stamp));
        assert!(now.lock.is_none());
        assert_eq!(plain.get(&p).await.unwrap(), b"version one");
        plain.put(&p, b"three").await.unwrap();
        assert_eq!(plain.get(&p).await.unwrap(), b"three");
    });
}

#[test]
fn a_rename_whose_replacement_stalls_within_the_lease_is_done_and_said_so() {
    let c = Cluster::up(2);
    let rt = rt();
    let plain = c.client(0);
    let renamer = stalling(
        &c,
        |r| matches!(r, Request::ReplaceLocked { .. }),
        Duration::from_secs(1),
        Duration::from_secs(4),
    );
    let from = owned_by(&plain, 0, "from");
    let to = owned_by(&plain, 1, "to");
    rt.block_on(async {
        plain.put(&from, b"moved").await.unwrap();
        plain.put(&to, b"replaced").await.unwrap();
        renamer.rename(&from, &to).await.unwrap();
        assert_eq!(plain.get(&to).await.unwrap(), b"moved");
        assert_eq!(plain.stat(&from).await.unwrap_err().code, Errno::ENOENT);
    });
}

#[test]
fn a_new_file_whose_daemon_stalls_within_the_lease_is_made_and_said_so() {
    let c = Cluster::up(2);
    let rt = rt();
    let plain = c.client(0);
    let writer = stalling(
        &c,
        |r| matches!(r, Request::CreateFile { .. }),
        Duration::from_secs(1),
        Duration::from_secs(4),
    );
    let p = owned_by(&plain, 1, "new");
    rt.block_on(async {
        let rec = writer.put(&p, b"made once").await.unwrap();
        let now = plain.stat(&p).await.unwrap();
        assert_eq!((now.version, now.stamp), (rec.version, rec.stamp));
        assert_eq!(plain.get(&p).await.unwrap(), b"made once");
    });
}
