//! Bulk transfers of whole files between nodes, with blocking std I/O off the
//! async threads. The payload follows its header raw, never framed, and never
//! passes through user space: senders use `sendfile`, receivers `splice`.

use crate::data::copy;
use crate::data::store::Store;
use crate::data::sums::{self, Chunks};
use crate::data::version::VersionRef;
use crate::path::checked;
use locus_proto::fs::{Sum, TransferReply, TransferRequest};
use locus_proto::{frame, Errno, FsError, FsResult};
use std::fs::File;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::ptr::null_mut;

/// Serves transfer requests on an authenticated connection until it closes.
pub(crate) fn serve(mut stream: TcpStream, store: &Store) -> io::Result<()> {
    let mut buf = Vec::new();
    while frame::read_sync(&mut stream, &mut buf)? {
        match frame::decode::<TransferRequest>(&buf)? {
            TransferRequest::Fetch {
                path,
                stamp,
                offset,
                len,
            } => {
                if let Err(e) = checked(&path) {
                    reply_err(&mut stream, e)?;
                    continue;
                }
                let opened = File::open(store.data_path(&path, stamp))
                    .and_then(|f| f.metadata().map(|m| (f, m.len())));
                match opened {
                    Ok((file, size)) => {
                        let (start, n) = range(size, offset, len);
                        stream.write_all(&frame::encode(&TransferReply::Ready { size })?)?;
                        // A file that shrank under us ends the connection: the
                        // peer sees a short body.
                        send_range(&file, &stream, start, n)?;
                    }
                    Err(e) => reply_err(&mut stream, FsError::io(path, &e))?,
                }
            }
            TransferRequest::Locate { path, stamp } => {
                let located = checked(&path).and_then(|_| {
                    let file = std::fs::canonicalize(store.data_path(&path, stamp))
                        .map_err(|e| FsError::io(&path, &e))?;
                    let meta = std::fs::metadata(&file).map_err(|e| FsError::io(&path, &e))?;
                    Ok(TransferReply::Located {
                        file: file.to_string_lossy().into_owned(),
                        dev: meta.dev(),
                        ino: meta.ino(),
                    })
                });
                let reply = located.unwrap_or_else(TransferReply::Err);
                stream.write_all(&frame::encode(&reply)?)?;
            }
            TransferRequest::Push {
                path,
                stamp,
                size,
                sum,
            } => {
                // After a failed push the byte stream may be out of step:
                // answer, then close the connection.
                let failed = receive(
                    &mut stream,
                    store,
                    VersionRef { path: &path, stamp },
                    (size, sum),
                )
                .err();
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

/// The part of a `size`-byte file a request for `len` bytes at `offset` gets.
fn range(size: u64, offset: u64, len: u64) -> (u64, u64) {
    let start = offset.min(size);
    (start, len.min(size - start))
}

fn reply_err(stream: &mut TcpStream, e: FsError) -> io::Result<()> {
    stream.write_all(&frame::encode(&TransferReply::Err(e))?)
}

/// Reads exactly `size` bytes from `stream` into a temporary file and, if
/// they hash to `sum` (when given), installs it as copy `stamp` of `path`.
fn receive(
    stream: &mut TcpStream,
    store: &Store,
    VersionRef { path, stamp }: VersionRef<'_>,
    (size, sum): (u64, Option<Sum>),
) -> FsResult<()> {
    checked(path)?;
    let (tmp, file) = store.temp_file()?;
    let result = match receive_into(stream, (path, &file), (0, size), |_| Ok(())) {
        Ok(_) => match sums::check(&file, size, sum) {
            Ok(Ok(())) => store.install(&tmp, path, stamp),
            Ok(Err(why)) => {
                Err(FsError::new(Errno::EIO, path).with_detail(format!("the pushed copy: {why}")))
            }
            Err(e) => Err(FsError::io(path, &e)),
        },
        Err(e) => {
            Err(this_side(&e).unwrap_or_else(|| FsError::new(Errno::EIO, path).with_detail(e)))
        }
    };
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Client side: fetches up to `len` bytes of copy `stamp` of `path` from
/// `offset` into the same range of `dest`, telling `landed` how far the
/// bytes in `dest` reach after each piece; returns the whole file's size.
/// An `Err` of the outer result means the connection is unusable.
pub(crate) fn fetch(
    stream: &mut TcpStream,
    VersionRef { path, stamp }: VersionRef<'_>,
    (offset, len): (u64, u64),
    dest: &File,
    landed: impl FnMut(u64) -> io::Result<()>,
) -> io::Result<FsResult<u64>> {
    let req = TransferRequest::Fetch {
        path: path.to_string(),
        stamp,
        offset,
        len,
    };
    stream.write_all(&frame::encode(&req)?)?;
    let size = match read_reply(stream)? {
        TransferReply::Ready { size } => size,
        TransferReply::Err(e) => return Ok(Err(e)),
        TransferReply::Located { .. } => return Err(unexpected()),
    };
    let (start, n) = range(size, offset, len);
    receive_into(stream, (path, dest), (start, n), landed)?;
    Ok(Ok(size))
}

/// Client side, for a holder on this host: copies copy `stamp` of `path`
/// from the holder's store into `dest` directly (no socket), if this
/// process can open the holder's file and it is the one the holder named
/// (same device and inode); returns what it copied, hashed on the way.
/// `Ok(Ok(None))`: it cannot, fetch over the network.
pub(crate) fn copy_local(
    stream: &mut TcpStream,
    VersionRef { path, stamp }: VersionRef<'_>,
    dest: &File,
) -> io::Result<FsResult<Option<Chunks>>> {
    let (file, dev, ino) = match locate(stream, VersionRef { path, stamp })? {
        Ok(Some(located)) => located,
        Ok(None) => return Ok(Err(FsError::new(Errno::ENOENT, path))),
        Err(e) => return Ok(Err(e)),
    };
    let Ok(src) = File::open(&file) else {
        return Ok(Ok(None));
    };
    let meta = match src.metadata() {
        Ok(meta) if (meta.dev(), meta.ino()) == (dev, ino) => meta,
        _ => return Ok(Ok(None)),
    };
    // A failure here (a full disk) is this node's, not the holder's.
    Ok(copy::whole_summed(&src, &meta, dest)
        .map(Some)
        .map_err(|e| FsError::io(path, &e)))
}

/// Client side: where the peer keeps copy `stamp` of `path` (its file,
/// device and inode there), or `None` if it has no such copy.
pub(crate) fn locate(
    stream: &mut TcpStream,
    VersionRef { path, stamp }: VersionRef<'_>,
) -> io::Result<FsResult<Option<(String, u64, u64)>>> {
    let req = TransferRequest::Locate {
        path: path.to_string(),
        stamp,
    };
    stream.write_all(&frame::encode(&req)?)?;
    match read_reply(stream)? {
        TransferReply::Located { file, dev, ino } => Ok(Ok(Some((file, dev, ino)))),
        TransferReply::Err(e) if e.code == Errno::ENOENT => Ok(Ok(None)),
        TransferReply::Err(e) => Ok(Err(e)),
        TransferReply::Ready { .. } => Err(unexpected()),
    }
}

/// Client side: pushes local file `src` to the peer, stored there as copy
/// `stamp` of `path`.
pub(crate) fn push(
    stream: &mut TcpStream,
    src: &Path,
    VersionRef { path, stamp }: VersionRef<'_>,
    sum: Option<Sum>,
) -> io::Result<FsResult<u64>> {
    // Nothing is sent yet: a file that cannot be read is this side's error.
    let opened = File::open(src).and_then(|f| Ok((f.metadata()?.len(), f)));
    let (size, file) = match opened {
        Ok(sized) => sized,
        Err(e) => return Ok(Err(FsError::io(src.display().to_string(), &e))),
    };
    stream.write_all(&frame::encode(&TransferRequest::Push {
        path: path.to_string(),
        stamp,
        size,
        sum,
    })?)?;
    send_range(&file, stream, 0, size)?;
    Ok(match read_reply(stream)? {
        TransferReply::Ready { size } => Ok(size),
        TransferReply::Err(e) => Err(e),
        TransferReply::Located { .. } => return Err(unexpected()),
    })
}

/// Runs a byte-moving system call until it is not interrupted; returns
/// the bytes it moved.
fn syscall(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let n = call();
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Sends exactly `len` bytes of `file` from `offset` with `sendfile`.
/// (`std::io::copy` falls back to read/write for a `Take<File>`.)
fn send_range(file: &File, stream: &TcpStream, offset: u64, len: u64) -> io::Result<()> {
    let mut at = offset as libc::off_t;
    let mut left = len;
    while left > 0 {
        let want = left.min(1 << 30) as usize;
        // SAFETY: valid descriptors; `at` is a valid offset the call advances.
        let n = syscall(|| unsafe {
            libc::sendfile(stream.as_raw_fd(), file.as_raw_fd(), &mut at, want)
        })?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank"));
        }
        left -= n as u64;
    }
    Ok(())
}

/// Whether an idle stream, on which nothing is due, has been closed by its
/// peer (it reads as ended, or has failed).
pub(crate) fn closed_by_peer(stream: &TcpStream) -> bool {
    let mut fd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready != 0
}

/// A transfer that failed on this side, filling the file for `path` (a
/// full disk), not on its connection: the stream is out of step and is
/// dropped, but the peer is not taken for unreachable.
fn on_this_side(path: &str, e: io::Error) -> io::Error {
    io::Error::other(FsError::io(path, &e))
}

/// What a transfer met on this side, if that is where it failed.
pub(crate) fn this_side(e: &io::Error) -> Option<FsError> {
    e.get_ref()?.downcast_ref::<FsError>().cloned()
}

/// Copies exactly `size` bytes from the socket to the file (filled for
/// `path`) at `offset`. The bytes move socket → pipe → file with `splice`,
/// never through user space (`io::copy` would use an 8 KiB buffer here:
/// splice needs a pipe at one end). Explicit offsets let several streams
/// fill one file at once.
fn receive_into(
    stream: &mut TcpStream,
    (path, dest): (&str, &File),
    (offset, size): (u64, u64),
    mut landed: impl FnMut(u64) -> io::Result<()>,
) -> io::Result<u64> {
    let pipe = Pipe::new()?;
    let (sock, file) = (stream.as_raw_fd(), dest.as_raw_fd());
    let mut at = offset as libc::loff_t;
    let mut left = size;
    while left > 0 {
        let want = (left as usize).min(PIPE_SIZE);
        // SAFETY: valid descriptors; null offsets use and advance the files' own.
        let n = syscall(|| unsafe {
            libc::splice(
                sock,
                null_mut(),
                pipe.write,
                null_mut(),
                want,
                libc::SPLICE_F_MOVE,
            )
        })?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "transfer cut short",
            ));
        }
        let mut in_pipe = n;
        while in_pipe > 0 {
            // SAFETY: as above; `at` is a valid offset the call advances.
            in_pipe -= syscall(|| unsafe {
                libc::splice(
                    pipe.read,
                    null_mut(),
                    file,
                    &mut at,
                    in_pipe,
                    libc::SPLICE_F_MOVE,
                )
            })
            .map_err(|e| on_this_side(path, e))?;
        }
        left -= n as u64;
        landed(at as u64)?;
    }
    Ok(size)
}

const PIPE_SIZE: usize = 1 << 20;

/// A pipe sized for bulk splicing, closed on drop.
struct Pipe {
    read: RawFd,
    write: RawFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 returns.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let pipe = Pipe {
            read: fds[0],
            write: fds[1],
        };
        // A larger pipe moves more per call; the default (64 KiB) still works.
        // SAFETY: plain fcntl on a descriptor we own.
        unsafe { libc::fcntl(pipe.write, libc::F_SETPIPE_SZ, PIPE_SIZE as libc::c_int) };
        Ok(pipe)
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: both descriptors are owned by this pipe and closed once.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

/// A reply that does not answer the request: the stream is out of step.
fn unexpected() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "a reply to another request")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    #[test]
    fn a_push_of_a_file_that_cannot_be_read_fails_here_and_sends_nothing() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        let missing = Path::new("/nonexistent/locus-push-source");
        let e = push(
            &mut stream,
            missing,
            VersionRef {
                path: "/f",
                stamp: 1,
            },
            None,
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(e.code, Errno::ENOENT, "{e}");
        // The stream is still in step: the peer got no byte.
        drop(stream);
        let mut got = Vec::new();
        peer.read_to_end(&mut got).unwrap();
        assert!(got.is_empty());
    }

    #[test]
    fn a_pushed_copy_is_kept_only_if_it_holds_what_its_sum_says() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("node")).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let served = std::thread::spawn(move || {
            for _ in 0..2 {
                let (peer, _) = listener.accept().unwrap();
                serve(peer, &store).unwrap();
            }
        });
        let src = dir.path().join("src");
        let bytes = vec![3u8; 3 * sums::CHUNK + 11];
        std::fs::write(&src, &bytes).unwrap();
        let right = sums::of_bytes(&bytes).sum;
        let mut stream = TcpStream::connect(addr).unwrap();
        let pushed = push(
            &mut stream,
            &src,
            VersionRef {
                path: "/d/f",
                stamp: 7,
            },
            Some(right),
        )
        .unwrap();
        assert_eq!(pushed.unwrap(), bytes.len() as u64);
        drop(stream);
        let wrong = sums::of_bytes(b"other bytes").sum;
        let mut stream = TcpStream::connect(addr).unwrap();
        let e = push(
            &mut stream,
            &src,
            VersionRef {
                path: "/d/g",
                stamp: 7,
            },
            Some(wrong),
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(e.code, Errno::EIO, "{e}");
        drop(stream);
        served.join().unwrap();
        let store = Store::open(&dir.path().join("node")).unwrap();
        let kept = File::open(store.data_path("/d/f", 7)).unwrap();
        assert_eq!(sums::of_file(&kept).unwrap().content().sum, right);
        assert!(
            !store.data_path("/d/g", 7).exists(),
            "a copy that differs is not kept"
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("node/tmp"))
                .unwrap()
                .count(),
            0
        );
    }
}
