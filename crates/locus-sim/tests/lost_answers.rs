//! Answers lost on their way back, the daemon having done the work: what
//! the simulation's lossy transport found, pinned down in process with a
//! transport that loses exactly the answers a test names.

mod common;

use common::{rt, Cluster};
use locus_fs::{Calling, Client, ClientOptions, Endpoint, Transport};
use locus_proto::fs::{NodeId, Request};
use locus_proto::Errno;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Which requests a test picks.
type Pick = Box<dyn FnMut(&Request) -> bool + Send>;

/// Loses the answer of each request `lose` picks (after the daemon applied
/// it), and the requests `refuse` picks (before they reach a daemon).
struct Losing {
    inner: Arc<dyn Transport>,
    lose: Mutex<Pick>,
    refuse: Mutex<Pick>,
}

impl Transport for Losing {
    fn call(&self, node: NodeId, req: Request) -> Calling<'_> {
        let lost = (self.lose.lock().unwrap())(&req);
        let refused = (self.refuse.lock().unwrap())(&req);
        Box::pin(async move {
            let endpoint = self.inner.endpoint(node).expect("a node");
            if refused {
                return Err(endpoint.unreachable("request lost (test)"));
            }
            let answer = self.inner.call(node, req).await;
            match lost {
                true => Err(endpoint.unreachable("answer lost (test)")),
                false => answer,
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

/// Picks the first request `is` matches, once.
fn first(
    is: impl Fn(&Request) -> bool + Send + 'static,
) -> Box<dyn FnMut(&Request) -> bool + Send> {
    let mut done = false;
    Box::new(move |r| {
        let pick = !done && is(r);
        done |= pick;
        pick
    })
}

fn losing(c: &Cluster, lose: Pick, refuse: Pick) -> Client {
    let opts = ClientOptions::default();
    c.c.client_over(opts, |inner| {
        Arc::new(Losing {
            inner,
            lose: Mutex::new(lose),
            refuse: Mutex::new(refuse),
        })
    })
    .expect("client")
}

fn never() -> Pick {
    Box::new(|_| false)
}

#[test]
fn an_unlink_whose_answer_was_lost_is_answered_as_done_when_sent_again() {
    // Two copies: the client asks the replica, which finds the owner up
    // and sends it back there with the same removal.
    let c = Cluster::with(3, 2);
    let rt = rt();
    // The answer of the first removal of each form is lost: one daemon
    // keeping name and record (`RemoveFile`), or two (`RemoveRecord`).
    let mut one = first(|r| matches!(r, Request::RemoveFile { .. }));
    let mut two = first(|r| matches!(r, Request::RemoveRecord { .. }));
    let client = losing(&c, Box::new(move |r| one(r) | two(r)), never());
    let plain = c.client(1);
    rt.block_on(async {
        plain.mkdir("/d").await.unwrap();
        for i in 0..8 {
            let path = format!("/d/f{i}");
            let mut w = plain.create(&path).await.unwrap();
            w.write_all(b"x").unwrap();
            w.close().await.unwrap();
        }
        for i in 0..8 {
            let path = format!("/d/f{i}");
            client
                .unlink(&path)
                .await
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            let gone = plain.stat(&path).await.unwrap_err();
            assert_eq!(gone.code, Errno::ENOENT, "{path}");
        }
        // Another's removal of a removed file is still a miss.
        let e = plain.unlink("/d/f0").await.unwrap_err();
        assert_eq!(e.code, Errno::ENOENT);
    });
}

/// A name in `/d` whose entry and record two daemons keep (so that a
/// create adds the entry, and an unlink removes it, in steps of their own).
fn kept_apart(c: &Client) -> String {
    (0..64)
        .map(|i| format!("/d/f{i}"))
        .find(|p| c.owner(p) != c.owner("/d"))
        .expect("a name kept by two daemons")
}

#[test]
fn a_create_whose_entry_answer_was_lost_takes_its_name_when_sent_again() {
    // Two copies: the lost `AddEntry` is sent again (to the replica, then
    // the owner), which remembers it added the name for this create.
    let c = Cluster::with(3, 2);
    let rt = rt();
    let plain = c.client(0);
    rt.block_on(plain.mkdir("/d")).unwrap();
    let path = kept_apart(&plain);
    let client = losing(
        &c,
        first(|r| matches!(r, Request::AddEntry { .. })),
        never(),
    );
    rt.block_on(async {
        let mut w = client
            .create(&path)
            .await
            .expect("the create, its name its own");
        w.write_all(b"made").unwrap();
        w.close().await.unwrap();
        assert_eq!(plain.get(&path).await.unwrap(), b"made");
        assert_eq!(common::names(&plain, "/d").await, [&path[3..]]);
    });
}

#[test]
fn a_name_removed_whose_answer_was_lost_is_not_removed_again_once_made_anew() {
    // An unlink removes the record, then the name; the name's removal is
    // applied, its answer lost, and before it is sent again another client
    // makes a new file under the name: the removal sent again must not take
    // the new file's name (its record would stay, unlisted).
    let c = Cluster::with(3, 2);
    let rt = rt();
    let plain = c.client(0);
    rt.block_on(plain.mkdir("/d")).unwrap();
    let path = kept_apart(&plain);
    rt.block_on(plain.put(&path, b"old")).unwrap();
    let is_removal = {
        let path = path.clone();
        move |r: &Request| matches!(r, Request::RemoveEntry { parent, name, .. } if format!("{parent}/{name}") == path)
    };
    let sent = AtomicUsize::new(0);
    let (held, open) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let removal = is_removal.clone();
    // The removal sent again waits for the new file.
    let hold: common::Pick =
        Box::new(move |r| removal(r) && sent.fetch_add(1, Ordering::SeqCst) == 1);
    let (h, o) = (held.clone(), open.clone());
    let client =
        c.c.client_over(ClientOptions::default(), move |inner| {
            let losing: Arc<dyn Transport> = Arc::new(Losing {
                inner,
                lose: Mutex::new(first(is_removal)),
                refuse: Mutex::new(never()),
            });
            Arc::new(common::Gate {
                inner: losing,
                hold,
                opens: Box::new(|_| false),
                held: h,
                open: o,
            })
        })
        .expect("client");
    rt.block_on(async {
        let unlink = {
            let path = path.clone();
            tokio::spawn(async move { client.unlink(&path).await })
        };
        held.notified().await;
        plain
            .put(&path, b"new")
            .await
            .expect("a new file under the freed name");
        open.notify_one();
        unlink.await.unwrap().expect("the unlink");
        assert_eq!(plain.get(&path).await.unwrap(), b"new");
        assert_eq!(common::names(&plain, "/d").await, [&path[3..]]);
    });
}

#[test]
fn a_commit_or_a_rename_whose_answer_was_lost_is_answered_as_done_when_sent_again() {
    // Two copies, so that the lost step is sent again (replica, then owner).
    let c = Cluster::with(3, 2);
    let rt = rt();
    let mut commit = first(|r| matches!(r, Request::CommitWrite { .. }));
    let mut replace = first(|r| matches!(r, Request::ReplaceLocked { .. }));
    let client = losing(&c, Box::new(move |r| commit(r) | replace(r)), never());
    let plain = c.client(1);
    rt.block_on(async {
        plain.mkdir("/d").await.unwrap();
        // The first commit's answer is lost: the close still succeeds, once.
        let mut w = client.create("/d/a").await.unwrap();
        w.write_all(b"first").unwrap();
        w.close().await.unwrap();
        let mut w = plain.create("/d/b").await.unwrap();
        w.write_all(b"second").unwrap();
        w.close().await.unwrap();
        // The rename's decided step (replacing `b`) has its answer lost.
        client.rename("/d/a", "/d/b").await.unwrap();
        assert_eq!(plain.stat("/d/a").await.unwrap_err().code, Errno::ENOENT);
        let read = plain.get("/d/b").await.unwrap();
        assert_eq!(read, b"first", "the renamed file, its copy kept");
    });
}

#[test]
fn a_put_whose_create_answer_was_lost_is_done_even_when_overwritten_before_it_was_sent_again() {
    // Two copies: the lost `CreateFile` is sent again (to the replica, then
    // the owner). Before it is, another client overwrites the file — the
    // first put's version was published, then replaced: both puts are done.
    let c = Cluster::with(2, 2);
    let rt = rt();
    let other = c.client(1);
    rt.block_on(other.mkdir("/d")).unwrap();
    // A name one daemon keeps with its parent's entries (one `CreateFile`).
    let path = (0..64)
        .map(|i| format!("/d/f{i}"))
        .find(|p| other.owner(p) == other.owner("/d"))
        .expect("a name kept with its parent");
    let creates = Arc::new(Mutex::new(0));
    let overwrite = {
        let (creates, other, path) = (creates.clone(), other.clone(), path.clone());
        Box::new(move |r: &Request| {
            if matches!(r, Request::CreateFile { .. }) {
                let mut n = creates.lock().unwrap();
                *n += 1;
                if *n == 2 {
                    // (On a thread of its own: this runs inside the
                    // losing client's runtime.)
                    let (other, path) = (other.clone(), path.clone());
                    std::thread::spawn(move || common::rt().block_on(other.put(&path, b"second")))
                        .join()
                        .unwrap()
                        .expect("the overwrite");
                }
            }
            false
        })
    };
    let client = losing(
        &c,
        first(|r| matches!(r, Request::CreateFile { .. })),
        overwrite,
    );
    rt.block_on(async {
        client
            .put(&path, b"first")
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(*creates.lock().unwrap() >= 2, "sent again");
        assert_eq!(other.get(&path).await.unwrap(), b"second");
    });
}

#[test]
fn a_create_undone_after_its_record_answer_was_lost_leaves_a_name_made_since() {
    // A write's create whose record's answer is lost removes what it made
    // (its record, then its name); if another client makes the name anew
    // meanwhile, the undo must not take that name too (its record would
    // stay, readable, unlisted: seed 2035).
    let c = Cluster::up(3);
    let rt = rt();
    let plain = c.client(0);
    rt.block_on(plain.mkdir("/d")).unwrap();
    let path = kept_apart(&plain);
    let made = {
        let path = path.clone();
        move |r: &Request| matches!(r, Request::CreateRecord { path: p, .. } if *p == path)
    };
    let removals = AtomicUsize::new(0);
    let removal = {
        let path = path.clone();
        move |r: &Request| {
            matches!(r, Request::RemoveEntry { parent, name, .. } if format!("{parent}/{name}") == path)
                && removals.fetch_add(1, Ordering::SeqCst) == 1
        }
    };
    let (held, open) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (h, o) = (held.clone(), open.clone());
    let client =
        c.c.client_over(ClientOptions::default(), move |inner| {
            let losing: Arc<dyn Transport> = Arc::new(Losing {
                inner,
                lose: Mutex::new(first(made)),
                refuse: Mutex::new(never()),
            });
            // A second removal of the name (the undo's) waits for the new file.
            Arc::new(common::Gate {
                inner: losing,
                hold: Box::new(removal),
                opens: Box::new(|_| false),
                held: h,
                open: o,
            })
        })
        .expect("client");
    rt.block_on(async {
        let put = {
            let path = path.clone();
            tokio::spawn(async move { client.put(&path, b"lost").await })
        };
        // Made anew once the failed create removed what it made (or at
        // its second removal of the name, held until then).
        let mut put = put;
        let ended = tokio::select! {
            () = held.notified() => None,
            done = &mut put => Some(done.unwrap()),
        };
        plain
            .put(&path, b"new")
            .await
            .expect("a new file under the name");
        open.notify_one();
        let failed = match ended {
            Some(done) => done,
            None => put.await.unwrap(),
        };
        assert!(failed.is_err_and(|e| e.is_unreachable()));
        assert_eq!(plain.get(&path).await.unwrap(), b"new");
        assert_eq!(common::names(&plain, "/d").await, [&path[3..]]);
    });
}
