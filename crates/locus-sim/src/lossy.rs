//! A client's transport that loses messages as a flaky network does: a
//! request lost before it reached its daemon (nothing done), or an answer
//! lost after the daemon applied the request. Either way the client is told
//! the daemon could not be reached — and whatever it does next (send again,
//! ask a replica, give up) must still explain to the model.

use locus_fs::{Calling, Endpoint, Transport};
use locus_proto::fs::{NodeId, Request, Response};
use locus_proto::FsResult;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Losses, and whether they happen now (the simulation turns them off
/// while it reads everything back).
#[derive(Default)]
pub(crate) struct Losses {
    pub on: AtomicBool,
    pub requests: AtomicUsize,
    pub answers: AtomicUsize,
}

pub(crate) struct Lossy {
    inner: Arc<dyn Transport>,
    rng: Mutex<StdRng>,
    /// The chance that a request, or else its answer, is lost.
    chance: f64,
    losses: Arc<Losses>,
}

impl Lossy {
    pub(crate) fn new(
        inner: Arc<dyn Transport>,
        seed: u64,
        chance: f64,
        losses: Arc<Losses>,
    ) -> Lossy {
        Lossy {
            inner,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            chance,
            losses,
        }
    }

    /// What happens to the next request: sent, lost, or answered unheard.
    fn draw(&self) -> Fate {
        if !self.losses.on.load(Ordering::Relaxed) {
            return Fate::Sent;
        }
        let r: f64 = self.rng.lock().expect("rng").gen();
        if r < self.chance / 2.0 {
            Fate::RequestLost
        } else if r < self.chance {
            Fate::AnswerLost
        } else {
            Fate::Sent
        }
    }
}

enum Fate {
    Sent,
    RequestLost,
    AnswerLost,
}

impl Transport for Lossy {
    fn call(&self, node: NodeId, req: Request) -> Calling<'_> {
        let fate = self.draw();
        Box::pin(async move {
            let lost = |why: &str, count: &AtomicUsize| {
                count.fetch_add(1, Ordering::Relaxed);
                let endpoint = self.inner.endpoint(node).expect("a node of the cluster");
                Err(endpoint.no_answer(why))
            };
            match fate {
                Fate::Sent => self.inner.call(node, req).await,
                Fate::RequestLost => lost("request lost (simulated)", &self.losses.requests),
                Fate::AnswerLost => {
                    let _: FsResult<Response> = self.inner.call(node, req).await;
                    lost("answer lost (simulated)", &self.losses.answers)
                }
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
