//! Length-delimited frames: a little-endian `u32` length, then a postcard body.
//!
//! Writers append many frames to one buffer and write it at once, so a burst of
//! pipelined requests costs one system call. A frame longer than [`MAX_FRAME`]
//! or a body that does not decode is an error for that connection only.
//! Readers allocate as the body's bytes arrive, never on the length prefix's
//! word alone, so a peer that announces a large frame and stalls holds no
//! more memory than it sent.

use serde::{de::DeserializeOwned, Serialize};
use std::io::{self, Read};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// A buffer that grew past this for one large frame is given back before the next.
const KEEP_CAPACITY: usize = 1 << 20;

/// Largest frame accepted; anything larger is treated as a malformed stream.
pub const MAX_FRAME: usize = 16 << 20;

/// Appends `msg` as one frame to `out`.
pub fn encode_into<T: Serialize>(out: &mut Vec<u8>, msg: &T) -> io::Result<()> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut body = postcard::to_extend(msg, std::mem::take(out)).map_err(invalid)?;
    let len = body.len() - start - 4;
    if len > MAX_FRAME {
        body.truncate(start);
        *out = body;
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "frame too large",
        ));
    }
    body[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
    *out = body;
    Ok(())
}

/// Encodes `msg` as a standalone frame.
pub fn encode<T: Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_into(&mut out, msg)?;
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(body: &[u8]) -> io::Result<T> {
    postcard::from_bytes(body).map_err(invalid)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

fn check_len(len: u32) -> io::Result<usize> {
    let len = len as usize;
    if len > MAX_FRAME {
        return Err(invalid(format!("frame of {len} bytes exceeds the limit")));
    }
    Ok(len)
}

fn prepare(buf: &mut Vec<u8>) {
    buf.clear();
    if buf.capacity() > KEEP_CAPACITY {
        buf.shrink_to(KEEP_CAPACITY);
    }
}

fn check_complete(buf: &[u8], len: usize) -> io::Result<()> {
    if buf.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "frame cut short",
        ));
    }
    Ok(())
}

/// Reads one frame body into `buf`. Returns `false` on a clean end of stream.
pub async fn read_async<R: AsyncRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<bool> {
    read_async_within(r, buf, None).await
}

/// [`read_async`], with the body (once its length has arrived) due within
/// `body_timeout`: a peer that stops in the middle of a frame is cut off.
pub async fn read_async_within<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    body_timeout: Option<Duration>,
) -> io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = check_len(u32::from_le_bytes(len))?;
    prepare(buf);
    let mut limited = (&mut *r).take(len as u64);
    let body = limited.read_to_end(buf);
    match body_timeout {
        None => body.await?,
        Some(t) => tokio::time::timeout(t, body).await.map_err(|_| {
            io::Error::new(io::ErrorKind::TimedOut, "frame not completed in time")
        })??,
    };
    check_complete(buf, len)?;
    Ok(true)
}

/// Blocking counterpart of [`read_async`] for the bulk-transfer threads.
pub fn read_sync<R: Read>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = check_len(u32::from_le_bytes(len))?;
    prepare(buf);
    r.take(len as u64).read_to_end(buf)?;
    check_complete(buf, len)?;
    Ok(true)
}

/// Frames for a TCP connection. A lone message is written by its sender
/// straight to the socket when it takes it at once, without waking a writer
/// task (a thread switch per message when the sender is not on the runtime,
/// as a mount's thread is). Messages of a burst, and what the socket could
/// not take, wait in order for the flushing task [`Outbox::new`] returns,
/// which lets the other ready tasks add theirs first: a burst leaves in few
/// writes.
#[derive(Clone)]
pub struct Outbox(Arc<Senders>);

/// The senders' share: when the last goes, the flusher ends once it has
/// written what is pending (and the socket's write side is shut).
struct Senders(Arc<Shared>);

struct Shared {
    wr: tokio::net::tcp::OwnedWriteHalf,
    state: Mutex<Pending>,
    wake: tokio::sync::Notify,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// The flusher owns the bytes: senders only append.
    flushing: bool,
    closed: bool,
    broken: Option<io::ErrorKind>,
}

impl Outbox {
    /// An outbox for `wr`, and the task that writes what senders could not.
    pub fn new(
        wr: tokio::net::tcp::OwnedWriteHalf,
    ) -> (Outbox, impl std::future::Future<Output = io::Result<()>>) {
        let shared = Arc::new(Shared {
            wr,
            state: Mutex::new(Pending::default()),
            wake: tokio::sync::Notify::new(),
        });
        let flusher = flush_pending(shared.clone());
        (Outbox(Arc::new(Senders(shared))), flusher)
    }

    /// Sends `msg` as one frame: if `alone` (nothing else is about to be
    /// sent), written now when the socket takes it; else with whatever else
    /// is sent meanwhile. An error means the connection is broken (or `msg`
    /// too large to frame).
    pub fn send<T: Serialize>(&self, msg: &T, alone: bool) -> io::Result<()> {
        let shared = &self.0 .0;
        let mut p = shared.state.lock().expect("outbox lock");
        if let Some(kind) = p.broken {
            return Err(kind.into());
        }
        encode_into(&mut p.bytes, msg)?;
        if p.flushing {
            return Ok(());
        }
        if alone {
            match write_ready(&shared.wr, &mut p.bytes) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    p.broken = Some(e.kind());
                    return Err(e);
                }
            }
        }
        p.flushing = true;
        drop(p);
        shared.wake.notify_one();
        Ok(())
    }
}

impl Drop for Senders {
    fn drop(&mut self) {
        self.0.state.lock().expect("outbox lock").closed = true;
        self.0.wake.notify_one();
    }
}

/// Writes from the front of `bytes` what the socket takes without waiting:
/// whether that was all of it.
fn write_ready(wr: &tokio::net::tcp::OwnedWriteHalf, bytes: &mut Vec<u8>) -> io::Result<bool> {
    let mut done = 0;
    let all = loop {
        if done == bytes.len() {
            break Ok(true);
        }
        match wr.try_write(&bytes[done..]) {
            Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    bytes.drain(..done);
    if bytes.is_empty() {
        prepare(bytes);
    }
    all
}

async fn flush_pending(shared: Arc<Shared>) -> io::Result<()> {
    loop {
        shared.wake.notified().await;
        // The other ready tasks add theirs before the write.
        tokio::task::yield_now().await;
        loop {
            {
                let mut p = shared.state.lock().expect("outbox lock");
                if p.flushing {
                    match write_ready(&shared.wr, &mut p.bytes) {
                        Ok(all) => p.flushing = !all,
                        Err(e) => {
                            p.broken = Some(e.kind());
                            return Err(e);
                        }
                    }
                }
                if !p.flushing {
                    if p.closed {
                        return Ok(());
                    }
                    break;
                }
            }
            shared.wr.writable().await?;
        }
    }
}

/// Writes every message sent on `rx` as a frame, coalescing whatever is queued
/// into one write, until the channel closes or the peer goes away.
pub async fn write_batched<W, T>(mut w: W, mut rx: mpsc::UnboundedReceiver<T>) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let mut out = Vec::with_capacity(64 << 10);
    while let Some(msg) = rx.recv().await {
        out.clear();
        encode_into(&mut out, &msg)?;
        // Let the other ready tasks queue their messages first: under load one
        // write then carries many frames instead of one system call each.
        tokio::task::yield_now().await;
        while out.len() < (1 << 20) {
            match rx.try_recv() {
                Ok(msg) => encode_into(&mut out, &msg)?,
                Err(_) => break,
            }
        }
        w.write_all(&out).await?;
    }
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_back_to_back() {
        let mut out = Vec::new();
        encode_into(&mut out, &(1u64, "a".to_string())).unwrap();
        encode_into(&mut out, &(2u64, "bc".to_string())).unwrap();
        let mut r = &out[..];
        let mut buf = Vec::new();
        assert!(read_sync(&mut r, &mut buf).unwrap());
        assert_eq!(decode::<(u64, String)>(&buf).unwrap(), (1, "a".into()));
        assert!(read_sync(&mut r, &mut buf).unwrap());
        assert_eq!(decode::<(u64, String)>(&buf).unwrap(), (2, "bc".into()));
        assert!(!read_sync(&mut r, &mut buf).unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_outbox_delivers_in_order_what_the_socket_could_not_take_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, server) =
            tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
        let (_, wr) = client.unwrap().into_split();
        let (mut rd, _) = server.unwrap().0.into_split();
        let (out, flusher) = Outbox::new(wr);
        let flusher = tokio::spawn(flusher);
        // 16 MiB sent before anything is read: more than the socket
        // holds, so most of it waits for the flusher; from another thread,
        // as a metadata writer sends.
        let big = vec![7u8; 64 << 10];
        let sender = {
            let out = out.clone();
            std::thread::spawn(move || {
                for i in 0..256u32 {
                    out.send(&(i, &big), i % 2 == 0).unwrap();
                }
            })
        };
        sender.join().unwrap();
        drop(out);
        let mut buf = Vec::new();
        for i in 0..256u32 {
            assert!(read_async(&mut rd, &mut buf).await.unwrap());
            let (n, body): (u32, Vec<u8>) = decode(&buf).unwrap();
            assert_eq!((n, body.len()), (i, 64 << 10));
        }
        // With every sender gone, the flusher ends and the stream with it.
        assert!(!read_async(&mut rd, &mut buf).await.unwrap());
        flusher.await.unwrap().unwrap();
        let too_big = vec![0u8; MAX_FRAME + 1];
        let (other, flusher) = Outbox::new({
            let (c, s) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
            drop(s);
            c.unwrap().into_split().1
        });
        // Refused before anything is written; the outbox stays usable.
        let err = other.send(&too_big, true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        drop((other, flusher));
    }

    #[test]
    fn an_announced_frame_costs_only_the_bytes_that_came() {
        let mut bytes = (MAX_FRAME as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(&[7; 100]);
        let mut buf = Vec::new();
        let err = read_sync(&mut &bytes[..], &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(buf.capacity() < 4096, "{}", buf.capacity());
    }

    #[test]
    fn oversized_length_is_rejected() {
        let bytes = (u32::MAX).to_le_bytes();
        let mut buf = Vec::new();
        let err = read_sync(&mut &bytes[..], &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn garbage_body_does_not_decode() {
        assert!(decode::<(u64, String)>(&[0xff, 0xff, 0xff]).is_err());
    }
}
