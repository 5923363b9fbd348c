//! Bulk transfers of whole files between nodes, with blocking std I/O off the
//! async threads: `std::io::copy` moves file-to-socket bytes with `sendfile`
//! and socket-to-file bytes with `splice`, so the payload is never framed.

use crate::path::checked;
use crate::store::Store;
use locus_proto::fs::{TransferReply, TransferRequest};
use locus_proto::{frame, Errno, FsError, FsResult};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;

/// Serves transfer requests on an authenticated connection until it closes.
pub fn serve(mut stream: TcpStream, store: &Store) -> io::Result<()> {
    let mut buf = Vec::new();
    while frame::read_sync(&mut stream, &mut buf)? {
        match frame::decode::<TransferRequest>(&buf)? {
            TransferRequest::Fetch { path } => {
                if let Err(e) = checked(&path) {
                    reply_err(&mut stream, e)?;
                    continue;
                }
                let opened = File::open(store.data_path(&path))
                    .and_then(|f| f.metadata().map(|m| (f, m.len())));
                match opened {
                    Ok((file, size)) => {
                        stream.write_all(&frame::encode(&TransferReply::Ready { size })?)?;
                        let sent = io::copy(&mut file.take(size), &mut stream)?;
                        if sent != size {
                            // The file shrank under us: the peer sees a short body.
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "file shrank",
                            ));
                        }
                    }
                    Err(e) => reply_err(&mut stream, FsError::io(path, &e))?,
                }
            }
            TransferRequest::Push { path, size } => {
                // After a failed push the byte stream may be out of step:
                // answer, then close the connection.
                let failed = match receive(&mut stream, store, &path, size) {
                    Ok(()) => None,
                    Err(e) => Some(e),
                };
                let reply = match &failed {
                    None => TransferReply::Ready { size },
                    Some(e) => TransferReply::Err(e.clone()),
                };
                stream.write_all(&frame::encode(&reply)?)?;
                if failed.is_some() {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

fn reply_err(stream: &mut TcpStream, e: FsError) -> io::Result<()> {
    stream.write_all(&frame::encode(&TransferReply::Err(e))?)
}

/// Reads exactly `size` bytes from `stream` into a temporary file and installs
/// it as `path`.
fn receive(stream: &mut TcpStream, store: &Store, path: &str, size: u64) -> FsResult<()> {
    checked(path)?;
    let (tmp, mut file) = store.temp_file()?;
    let copied = io::copy(&mut stream.take(size), &mut file);
    let result = match copied {
        Ok(n) if n == size => store.install(&tmp, path),
        Ok(_) => Err(FsError::new(Errno::EIO, path).with_detail("transfer cut short")),
        Err(e) => Err(FsError::new(Errno::EIO, path).with_detail(e)),
    };
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Client side: fetches `path` from the peer into `dest`; returns its size.
/// An `Err` of the outer result means the connection is unusable.
pub fn fetch(stream: &mut TcpStream, path: &str, dest: &mut File) -> io::Result<FsResult<u64>> {
    stream.write_all(&frame::encode(&TransferRequest::Fetch {
        path: path.to_string(),
    })?)?;
    let size = match read_reply(stream)? {
        TransferReply::Ready { size } => size,
        TransferReply::Err(e) => return Ok(Err(e)),
    };
    let got = io::copy(&mut (&mut *stream).take(size), dest)?;
    if got != size {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "transfer cut short",
        ));
    }
    Ok(Ok(size))
}

/// Client side: pushes local file `src` to the peer, stored there as `path`.
pub fn push(stream: &mut TcpStream, src: &Path, path: &str) -> io::Result<FsResult<u64>> {
    let file = File::open(src)?;
    let size = file.metadata()?.len();
    stream.write_all(&frame::encode(&TransferRequest::Push {
        path: path.to_string(),
        size,
    })?)?;
    let sent = io::copy(&mut file.take(size), stream)?;
    if sent != size {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "local file shrank",
        ));
    }
    Ok(match read_reply(stream)? {
        TransferReply::Ready { size } => Ok(size),
        TransferReply::Err(e) => Err(e),
    })
}

fn read_reply(stream: &mut TcpStream) -> io::Result<TransferReply> {
    let mut buf = Vec::new();
    if !frame::read_sync(stream, &mut buf)? {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "daemon closed the transfer",
        ));
    }
    frame::decode(&buf)
}
