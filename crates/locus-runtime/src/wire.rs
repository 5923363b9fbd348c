//! Connections between ranks: authenticated with the run's secret, opened
//! with a `Hello` naming the caller, then a stream of `RankMsg` frames.

use locus_proto::auth::{self, Channel, Secret};
use locus_proto::frame;
use locus_proto::run::{Rank, RankMsg};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads frames off one connection.
pub struct Reader {
    rd: OwnedReadHalf,
    buf: Vec<u8>,
}

impl Reader {
    /// The next message, `None` at a clean end of stream.
    pub async fn next(&mut self) -> io::Result<Option<RankMsg>> {
        if !frame::read_async(&mut self.rd, &mut self.buf).await? {
            return Ok(None);
        }
        frame::decode(&self.buf).map(Some)
    }
}

/// Writes one message as a frame.
async fn send(w: &mut OwnedWriteHalf, msg: &RankMsg) -> io::Result<()> {
    w.write_all(&frame::encode(msg)?).await
}

/// How long a rank keeps trying to reach a server: at start-up a server of
/// a large run is busy accepting hundreds of ranks on a few cores.
const CONNECT_PATIENCE: Duration = Duration::from_secs(60);

/// Connects to the server rank at `addr` as rank `me`, trying again (with
/// back-off) while the server is too busy to answer, for a bounded time.
pub async fn connect(
    addr: SocketAddr,
    secret: &Secret,
    me: Rank,
) -> io::Result<(Reader, OwnedWriteHalf)> {
    let deadline = tokio::time::Instant::now() + CONNECT_PATIENCE;
    let mut pause = Duration::from_millis(10);
    loop {
        match connect_once(addr, secret, me).await {
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
    addr: SocketAddr,
    secret: &Secret,
    me: Rank,
) -> io::Result<(Reader, OwnedWriteHalf)> {
    let secret = secret.clone();
    let std_stream = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(CONNECT_TIMEOUT))?;
        auth::connect(&mut s, &secret, Channel::Ranks)?;
        s.set_read_timeout(None)?;
        s.set_nonblocking(true)?;
        Ok::<_, io::Error>(s)
    })
    .await
    .map_err(io::Error::other)??;
    let (rd, mut wr) = TcpStream::from_std(std_stream)?.into_split();
    send(&mut wr, &RankMsg::Hello { rank: me }).await?;
    Ok((
        Reader {
            rd,
            buf: Vec::new(),
        },
        wr,
    ))
}

/// Accepts a rank's connection: checks the secret and reads who it is.
pub async fn accept(
    mut stream: TcpStream,
    secret: &Secret,
) -> io::Result<(Rank, Reader, OwnedWriteHalf)> {
    stream.set_nodelay(true)?;
    if auth::accept(&mut stream, secret).await? != Channel::Ranks {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a rank connection",
        ));
    }
    let (rd, wr) = stream.into_split();
    let mut reader = Reader {
        rd,
        buf: Vec::new(),
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, reader.next()).await {
        Ok(Ok(Some(RankMsg::Hello { rank }))) => Ok((rank, reader, wr)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a rank connection must start with Hello",
        )),
    }
}
