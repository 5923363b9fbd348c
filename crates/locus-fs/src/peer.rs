//! A client's pipelined RPC connection to one daemon. Requests carry ids and
//! many are in flight at once; a reader task hands each response to its
//! waiter. A broken connection fails its waiters with `EIO` naming the node
//! and is re-established by the next request.

use locus_proto::auth::{self, Channel, Secret};
use locus_proto::fs::{Envelope, NodeId, Request, Response};
use locus_proto::{frame, Cause, Errno, FsError, FsResult};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::sync::oneshot;

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Response>>>>;

struct Conn {
    out: frame::Outbox,
    waiters: Waiters,
    alive: Arc<AtomicBool>,
}

/// Where a daemon is and how to prove ourselves to it.
#[derive(Clone)]
pub struct Endpoint {
    /// The node's id.
    pub node: NodeId,
    /// Its name (the host's, or `nodeNNN` for emulated nodes).
    pub name: String,
    /// Where its daemon listens.
    pub addr: SocketAddr,
    /// The cluster's secret, proven at each connection.
    pub secret: Secret,
    /// Bound on connecting and on any one request.
    pub timeout: Duration,
}

impl Endpoint {
    /// `EIO` naming this node.
    pub fn unreachable(&self, why: impl std::fmt::Display) -> FsError {
        FsError::new(
            Errno::EIO,
            format!("node {} ({} at {})", self.node, self.name, self.addr),
        )
        .with_detail(format!("unreachable: {why}"))
        .with_cause(Cause::Unreachable { node: self.node })
    }

    /// `EIO` naming this node, which was sent a request and gave no answer
    /// (`why`): it may still act on it.
    pub fn no_answer(&self, why: impl std::fmt::Display) -> FsError {
        let mut e = self.unreachable(why);
        e.cause = Some(Cause::NoAnswer { node: self.node });
        e
    }

    /// Opens an authenticated blocking stream on `channel` (connect and
    /// handshake both bounded by the timeout).
    pub fn open_blocking(&self, channel: Channel) -> FsResult<TcpStream> {
        let mut s = TcpStream::connect_timeout(&self.addr, self.timeout)
            .map_err(|e| self.unreachable(e))?;
        s.set_nodelay(true).map_err(|e| self.unreachable(e))?;
        s.set_read_timeout(Some(self.timeout))
            .map_err(|e| self.unreachable(e))?;
        s.set_write_timeout(Some(self.timeout))
            .map_err(|e| self.unreachable(e))?;
        auth::connect(&mut s, &self.secret, channel).map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                FsError::new(Errno::EACCES, format!("node {} ({})", self.node, self.addr))
                    .with_detail("the daemon refused this cluster secret")
            } else {
                self.unreachable(e)
            }
        })?;
        Ok(s)
    }
}

/// Whether `e` says a daemon could not be reached (not that it refused).
pub(crate) fn is_unreachable(e: &FsError) -> bool {
    e.is_unreachable()
}

/// A client's connection state for one daemon.
pub(crate) struct Peer {
    pub endpoint: Endpoint,
    next_id: AtomicU64,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
}

impl Peer {
    pub(crate) fn new(endpoint: Endpoint) -> Peer {
        Peer {
            endpoint,
            next_id: AtomicU64::new(1),
            conn: tokio::sync::Mutex::new(None),
        }
    }

    fn unreachable(&self, why: impl std::fmt::Display) -> FsError {
        self.endpoint.unreachable(why)
    }

    async fn connection(&self) -> FsResult<Arc<Conn>> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref() {
            if c.alive.load(Ordering::Acquire) {
                return Ok(c.clone());
            }
        }
        let endpoint = self.endpoint.clone();
        let std_stream = tokio::task::spawn_blocking(move || endpoint.open_blocking(Channel::Rpc))
            .await
            .map_err(|e| self.unreachable(e))??;
        std_stream
            .set_read_timeout(None)
            .map_err(|e| self.unreachable(e))?;
        std_stream
            .set_nonblocking(true)
            .map_err(|e| self.unreachable(e))?;
        let stream =
            tokio::net::TcpStream::from_std(std_stream).map_err(|e| self.unreachable(e))?;
        let (rd, wr) = stream.into_split();
        let (out, flusher) = frame::Outbox::new(wr);
        let waiters: Waiters = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        {
            let alive = alive.clone();
            tokio::spawn(async move {
                let _ = flusher.await;
                alive.store(false, Ordering::Release);
            });
        }
        {
            let (alive, waiters) = (alive.clone(), waiters.clone());
            tokio::spawn(async move {
                read_responses(rd, &waiters).await;
                alive.store(false, Ordering::Release);
                // Dropping the senders wakes every waiter with an error.
                waiters.lock().expect("waiters lock").clear();
            });
        }
        let conn = Arc::new(Conn {
            out,
            waiters,
            alive,
        });
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Sends one request and waits (bounded by the timeout) for its answer.
    pub(crate) async fn call(&self, body: Request) -> FsResult<Response> {
        self.send(body).await?.answer().await
    }

    /// Sends one request without waiting for its answer: requests sent one
    /// after another reach the daemon in that order.
    pub(crate) async fn send(&self, body: Request) -> FsResult<Pending<'_>> {
        let conn = self.connection().await?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let lone = {
            let mut waiters = conn.waiters.lock().expect("waiters lock");
            waiters.insert(id, tx);
            waiters.len() == 1
        };
        // A request with others in flight joins their burst.
        if let Err(e) = conn.out.send(&Envelope { id, body }, lone) {
            conn.waiters.lock().expect("waiters lock").remove(&id);
            // A request too large to frame leaves the connection as it was.
            if e.kind() == std::io::ErrorKind::InvalidInput {
                return Err(FsError::new(Errno::EINVAL, self.endpoint.name.clone())
                    .with_detail(format!("request: {e}")));
            }
            conn.alive.store(false, Ordering::Release);
            return Err(self.unreachable(e));
        }
        Ok(Pending {
            peer: self,
            conn,
            id,
            rx,
        })
    }
}

/// A request sent, its answer still to come.
pub(crate) struct Pending<'p> {
    peer: &'p Peer,
    conn: Arc<Conn>,
    id: u64,
    rx: oneshot::Receiver<Response>,
}

impl Pending<'_> {
    /// The answer (bounded by the timeout).
    pub(crate) async fn answer(self) -> FsResult<Response> {
        match tokio::time::timeout(self.peer.endpoint.timeout, self.rx).await {
            Ok(Ok(Response::Err(e))) => Err(e),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(self.peer.unreachable("connection lost")),
            Err(_) => {
                self.conn
                    .waiters
                    .lock()
                    .expect("waiters lock")
                    .remove(&self.id);
                let limit = self.peer.endpoint.timeout;
                Err(self
                    .peer
                    .endpoint
                    .no_answer(format!("no answer within {limit:?}")))
            }
        }
    }
}

async fn read_responses(rd: tokio::net::tcp::OwnedReadHalf, waiters: &Waiters) {
    let mut rd = BufReader::with_capacity(64 << 10, rd);
    let mut buf = Vec::new();
    while let Ok(true) = frame::read_async(&mut rd, &mut buf).await {
        let Ok(env) = frame::decode::<Envelope<Response>>(&buf) else {
            return;
        };
        if let Some(tx) = waiters.lock().expect("waiters lock").remove(&env.id) {
            let _ = tx.send(env.body);
        }
    }
}
