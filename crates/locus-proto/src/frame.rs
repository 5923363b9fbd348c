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
