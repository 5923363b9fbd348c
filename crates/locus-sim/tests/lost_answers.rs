//! Answers lost on their way back, the daemon having done the work: what
//! the simulation's lossy transport found, pinned down in process with a
//! transport that loses exactly the answers a test names.

mod common;

use common::{rt, Cluster};
use locus_fs::{Calling, Client, ClientOptions, Endpoint, Transport};
use locus_proto::fs::{NodeId, Request};
use locus_proto::Errno;
use std::io::Write;
use std::sync::{Arc, Mutex};

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

#[test]
fn a_create_that_cannot_tell_whether_the_name_is_its_own_says_so_not_eexist() {
    // Two copies: the lost `AddEntry` is sent again (to the replica, then
    // the owner) and finds the name taken.
    let c = Cluster::with(3, 2);
    let rt = rt();
    let plain = c.client(0);
    rt.block_on(plain.mkdir("/d")).unwrap();
    // A name whose entry and record two daemons keep (an `AddEntry` first).
    let path = (0..64)
        .map(|i| format!("/d/f{i}"))
        .find(|p| plain.owner(p) != plain.owner("/d"))
        .expect("a name kept by two daemons");
    let is_entry = |r: &Request| matches!(r, Request::AddEntry { .. });
    // The entry's answer is lost, and the look at its record after (to
    // tell whether the name is this create's own) cannot be made.
    let looked = {
        let path = path.clone();
        move |r: &Request| matches!(r, Request::GetRecord { path: p } if *p == path)
    };
    let client = losing(&c, first(is_entry), Box::new(looked));
    rt.block_on(async {
        let e = client.create(&path).await.map(drop).unwrap_err();
        assert_eq!(e.code, Errno::EIO, "unknown, not EEXIST: {e}");
        assert!(e.is_unreachable(), "{e}");
        // Sent again with what it can see, a create takes its name.
        let ok = losing(&c, never(), never());
        let mut w = ok.create(&path).await;
        if let Err(e) = &w {
            // The name this create left without a record (documented):
            // removed, then made.
            assert_eq!(e.code, Errno::EEXIST, "{e}");
            ok.unlink(&path).await.unwrap();
            w = ok.create(&path).await;
        }
        let mut w = w.unwrap();
        w.write_all(b"made").unwrap();
        w.close().await.unwrap();
        assert_eq!(ok.stat(&path).await.unwrap().size, 4);
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
