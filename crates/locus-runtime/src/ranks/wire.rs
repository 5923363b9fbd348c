//! Connections between ranks: authenticated with the run's secret, opened
//! with a `Hello` naming the caller, then a stream of `RankMsg` frames.
//! A server listens on TCP and, under a name derived from its TCP address,
//! on a Unix socket in Linux's abstract namespace, which is one per network
//! namespace: ranks of one host (emulated or not) talk through it, the
//! others over TCP. Unix sockets cost a fraction of TCP's loopback per
//! message, and every task is two messages.

use locus_proto::auth::{self, Channel, Secret};
use locus_proto::frame;
use locus_proto::run::{Rank, RankMsg};
use std::io;
use std::net::SocketAddr;
use std::os::linux::net::SocketAddrExt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The sending half of a rank connection.
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection between ranks, before its handshake.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Local(UnixStream),
}

impl Stream {
    fn split(self) -> (Reader, Writer) {
        let (rd, wr): (Box<dyn AsyncRead + Send + Unpin>, Writer) = match self {
            Stream::Tcp(s) => {
                let (rd, wr) = s.into_split();
                (Box::new(rd), Box::new(wr))
            }
            Stream::Local(s) => {
                let (rd, wr) = s.into_split();
                (Box::new(rd), Box::new(wr))
            }
        };
        let reader = Reader {
            rd: BufReader::with_capacity(READ_BUFFER, rd),
            buf: Vec::new(),
            silence: PEER_SILENCE,
        };
        (reader, wr)
    }
}

/// The abstract Unix socket name of server rank `rank` listening on
/// `addr` (unique on a host while it listens; the rank tells apart servers
/// of other hosts a site may bind to the same address, such as 0.0.0.0:P).
fn local_name(addr: SocketAddr, rank: Rank) -> io::Result<std::os::unix::net::SocketAddr> {
    std::os::unix::net::SocketAddr::from_abstract_name(format!("locus-ranks-{addr}-{rank}"))
}

/// Listens for the ranks of this host of server `rank` listening on `addr`.
pub(crate) fn listen_local(addr: SocketAddr, rank: Rank) -> io::Result<UnixListener> {
    let listener = std::os::unix::net::UnixListener::bind_addr(&local_name(addr, rank)?)?;
    listener.set_nonblocking(true)?;
    UnixListener::from_std(listener)
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes read from a connection at a time: the tasks a server sends
/// together arrive with one read, not two per frame.
const READ_BUFFER: usize = 64 << 10;

/// Reads frames off one connection.
pub(crate) struct Reader {
    rd: BufReader<Box<dyn AsyncRead + Send + Unpin>>,
    buf: Vec<u8>,
    /// How long the peer may say nothing before it counts as gone.
    silence: Duration,
}

impl Reader {
    /// This reader of a server's connection: it gives the server
    /// `SERVER_SILENCE`, as a server's engine works on its rank's one
    /// thread and may be busy for a while (a large script's step).
    pub(crate) fn of_a_server(self) -> Reader {
        Reader {
            silence: SERVER_SILENCE,
            ..self
        }
    }

    /// The next message, `None` at a clean end of stream. A connection
    /// silent for its limit (not even `Alive`) is broken: its peer is
    /// frozen (stopped, swapped out) or cut off, whatever the transport.
    pub(crate) async fn next(&mut self) -> io::Result<Option<RankMsg>> {
        loop {
            let read = frame::read_async(&mut self.rd, &mut self.buf);
            match tokio::time::timeout(self.silence, read).await {
                Err(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "no sign of life for {}s: frozen or cut off",
                            self.silence.as_secs()
                        ),
                    ))
                }
                Ok(read) => {
                    if !read? {
                        return Ok(None);
                    }
                }
            }
            match frame::decode(&self.buf)? {
                RankMsg::Alive => {}
                msg => return Ok(Some(msg)),
            }
        }
    }
}

/// How often a rank says `Alive` on each connection: well within
/// `PEER_SILENCE`, so a rank busy for a moment is not taken for frozen.
const HEARTBEAT: Duration = Duration::from_secs(2);

/// Sends what is queued on the returned channel down `wr` (batched), and
/// `Alive` every `HEARTBEAT` while the channel is open. The handle ends
/// once every sender is dropped and all is written.
pub(crate) fn spawn_writer(
    wr: Writer,
) -> (mpsc::UnboundedSender<RankMsg>, JoinHandle<io::Result<()>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(frame::write_batched(wr, rx));
    // A weak sender: the heartbeat never keeps the connection open.
    let beating = tx.downgrade();
    tokio::spawn(async move {
        let mut beat = tokio::time::interval(HEARTBEAT);
        loop {
            beat.tick().await;
            match beating.upgrade() {
                Some(tx) if tx.send(RankMsg::Alive).is_ok() => {}
                _ => return,
            }
        }
    });
    (tx, writer)
}

/// Writes one message as a frame.
async fn send(w: &mut Writer, msg: &RankMsg) -> io::Result<()> {
    w.write_all(&frame::encode(msg)?).await
}

/// How long a rank keeps trying to reach a server: at start-up a server of
/// a large run is busy accepting hundreds of ranks on a few cores.
const CONNECT_PATIENCE: Duration = Duration::from_secs(60);

/// Connects to the server rank at `addr` as rank `me`, trying again (with
/// back-off) while the server is too busy to answer, for a bounded time.
pub(crate) async fn connect(
    (addr, to): (SocketAddr, Rank),
    secret: &Secret,
    me: Rank,
) -> io::Result<(Reader, Writer)> {
    let deadline = tokio::time::Instant::now() + CONNECT_PATIENCE;
    let mut pause = Duration::from_millis(10);
    loop {
        match connect_once((addr, to), secret, me).await {
            Err(e) if busy(&e) && tokio::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            other => return other,
        }
    }
}

/// A server that did not answer in time, as opposed to one that is gone
/// (refused: it listened before it published its address) or refused the
/// secret.
fn busy(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

async fn connect_once(
    (addr, to): (SocketAddr, Rank),
    secret: &Secret,
    me: Rank,
) -> io::Result<(Reader, Writer)> {
    let secret = secret.clone();
    let stream = tokio::task::spawn_blocking(move || {
        // A server of this host is reached by its Unix socket.
        if let Ok(mut s) = std::os::unix::net::UnixStream::connect_addr(&local_name(addr, to)?) {
            handshake(
                &mut s,
                &secret,
                std::os::unix::net::UnixStream::set_read_timeout,
            )?;
            s.set_nonblocking(true)?;
            return Ok(Stream::Local(UnixStream::from_std(s)?));
        }
        let mut s = std::net::TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
        s.set_nodelay(true)?;
        watch_peer(&s)?;
        handshake(&mut s, &secret, std::net::TcpStream::set_read_timeout)?;
        s.set_nonblocking(true)?;
        Ok::<_, io::Error>(Stream::Tcp(TcpStream::from_std(s)?))
    })
    .await
    .map_err(io::Error::other)??;
    let (reader, mut wr) = stream.split();
    send(&mut wr, &RankMsg::Hello { rank: me }).await?;
    Ok((reader, wr))
}

/// How long a rank connection may go without a sign of life from the other
/// end before it counts as broken: a peer frozen (its process stopped) or
/// cut off by the network is then gone as a killed one is. Ranks say
/// `Alive` every `HEARTBEAT` (so a connection is never at rest: no kernel
/// keepalive probes are needed), and over TCP what is sent must be
/// acknowledged in this time.
const PEER_SILENCE: Duration = Duration::from_secs(10);

/// How long a server may say nothing before its peers count it gone: its
/// engine shares the rank's one thread with its heartbeats.
const SERVER_SILENCE: Duration = Duration::from_secs(60);

/// Has the kernel end a TCP rank connection whose sent bytes go
/// unacknowledged for `PEER_SILENCE` (the sender learns it too, not only
/// the reader).
fn watch_peer<S: std::os::fd::AsFd>(s: &S) -> io::Result<()> {
    socket2::SockRef::from(s).set_tcp_user_timeout(Some(PEER_SILENCE))
}

/// The caller's side of the handshake, bounded in time (`timeout` sets a
/// stream's read timeout).
fn handshake<S: io::Read + io::Write>(
    s: &mut S,
    secret: &Secret,
    timeout: impl Fn(&S, Option<Duration>) -> io::Result<()>,
) -> io::Result<()> {
    timeout(s, Some(CONNECT_TIMEOUT))?;
    auth::connect(s, secret, Channel::Ranks)?;
    timeout(s, None)
}

/// Accepts a rank's connection: checks the secret and reads who it is.
pub(crate) async fn accept(
    mut stream: Stream,
    secret: &Secret,
) -> io::Result<(Rank, Reader, Writer)> {
    let channel = match &mut stream {
        Stream::Tcp(s) => {
            s.set_nodelay(true)?;
            watch_peer(&*s)?;
            auth::accept(s, secret).await?
        }
        Stream::Local(s) => auth::accept(s, secret).await?,
    };
    if channel != Channel::Ranks {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a rank connection",
        ));
    }
    let (mut reader, wr) = stream.split();
    match tokio::time::timeout(CONNECT_TIMEOUT, reader.next()).await {
        Ok(Ok(Some(RankMsg::Hello { rank }))) => Ok((rank, reader, wr)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a rank connection must start with Hello",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn serve(stream: Stream, secret: Secret) -> Rank {
        let (rank, mut reader, _wr) = accept(stream, &secret).await.unwrap();
        assert!(matches!(
            reader.next().await,
            Ok(Some(RankMsg::Hello { rank: 8 }))
        ));
        rank
    }

    async fn call(to: (SocketAddr, Rank), secret: &Secret) {
        let (_reader, mut wr) = connect(to, secret, 7).await.unwrap();
        send(&mut wr, &RankMsg::Hello { rank: 8 }).await.unwrap();
    }

    #[tokio::test]
    async fn a_rank_of_this_host_is_reached_by_its_unix_socket_and_others_by_tcp() {
        let secret = Secret::generate();
        // Its TCP listener is never served: only the Unix one can answer.
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let local = listen_local(addr, 3).unwrap();
        let served = tokio::spawn({
            let secret = secret.clone();
            async move { serve(Stream::Local(local.accept().await.unwrap().0), secret).await }
        });
        call((addr, 3), &secret).await;
        assert_eq!(served.await.unwrap(), 7);
        // Without a Unix socket: TCP.
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let served = tokio::spawn({
            let secret = secret.clone();
            async move { serve(Stream::Tcp(tcp.accept().await.unwrap().0), secret).await }
        });
        call((addr, 3), &secret).await;
        assert_eq!(served.await.unwrap(), 7);
    }
}
