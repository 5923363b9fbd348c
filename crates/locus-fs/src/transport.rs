//! How a client's metadata requests reach the daemons: the seam between
//! what the client decides and how its messages travel. `Tcp` is the one
//! deployed clients use (one pipelined connection per daemon); a test or a
//! simulation wraps it to lose, refuse or delay messages
//! (`Client::with_transport`).

use crate::peer::{Endpoint, Peer};
use locus_proto::fs::{NodeId, Request, Response};
use locus_proto::{Errno, FsError, FsResult};
use std::future::Future;
use std::pin::Pin;

/// A request on its way to a daemon, its answer to come.
pub type Calling<'a> = Pin<Box<dyn Future<Output = FsResult<Response>> + Send + 'a>>;

/// Carries a client's metadata requests to the daemons and their answers
/// back. A daemon that cannot be reached, or whose answer is lost, is an
/// `EIO` whose cause is `Cause::Unreachable` naming it (the request may
/// have been applied or not).
pub trait Transport: Send + Sync {
    /// Sends `req` to node `node`'s daemon and waits (bounded) for its
    /// answer; an `Err` answer comes back as the error.
    fn call(&self, node: NodeId, req: Request) -> Calling<'_>;

    /// Where node `node`'s daemon is, and how the client proves itself.
    fn endpoint(&self, node: NodeId) -> Option<&Endpoint>;

    /// Nodes in the cluster.
    fn nodes(&self) -> usize;
}

/// The deployed transport: one pipelined TCP connection per daemon, made
/// again by the next request after it breaks.
pub(crate) struct Tcp {
    peers: Vec<Peer>,
}

impl Tcp {
    /// A transport to the daemons at `endpoints` (node ids in order).
    pub(crate) fn new(endpoints: Vec<Endpoint>) -> Tcp {
        Tcp {
            peers: endpoints.into_iter().map(Peer::new).collect(),
        }
    }
}

impl Transport for Tcp {
    fn call(&self, node: NodeId, req: Request) -> Calling<'_> {
        Box::pin(async move {
            let peer = self
                .peers
                .get(node as usize)
                .ok_or_else(|| no_such_node(node))?;
            peer.call(req).await
        })
    }

    fn endpoint(&self, node: NodeId) -> Option<&Endpoint> {
        self.peers.get(node as usize).map(|p| &p.endpoint)
    }

    fn nodes(&self) -> usize {
        self.peers.len()
    }
}

/// `EINVAL` for a node the cluster does not have.
pub(crate) fn no_such_node(node: NodeId) -> FsError {
    FsError::new(Errno::EINVAL, format!("node {node}")).with_detail("no such node")
}
