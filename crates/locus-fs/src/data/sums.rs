//! What vouches for a version's bytes, made where the version is written
//! and kept in its record: the XXH3-128 hash of its 1 MiB chunks' XXH3-64
//! hashes and its size. A copy made from another, and a copy read on its
//! node, is checked against it, so no reader is handed bytes the writer did
//! not write. A stored copy keeps its chunks' hashes beside it (an extended
//! attribute), so a read of part of a big file checks only what it reads.
//!
//! XXH3 rather than BLAKE3: a check is one more pass over the bytes, and
//! here BLAKE3 runs at 2.2-3.5 GB/s on a core, about the page cache's write
//! rate, while XXH3 runs at 9-10 GB/s from memory and over 30 from the CPU's
//! cache (where a writer's bytes are as they are hashed). It tells
//! corruption apart as surely; it does not stand against someone who
//! crafts collisions, which is not what a store on the user's own nodes
//! guards against. Chunks also let a big file be hashed by several threads.

use crate::data::copy::PIECE;
pub use locus_proto::fs::Mismatch;
use locus_proto::fs::Sum;
use std::fs::File;
use std::hash::Hasher as _;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use twox_hash::xxhash3_128::Hasher as Xxh3;
use twox_hash::xxhash3_64::Hasher as Xxh3_64;

/// The bytes each chunk hash covers (a copy's piece: a piece copied is a
/// chunk hashed).
pub const CHUNK: usize = PIECE;

/// Files at least this big are hashed by several threads.
const PARALLEL_MIN: u64 = 16 * CHUNK as u64;

/// What a version holds: its size and the hash of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Content {
    /// Its length in bytes.
    pub size: u64,
    /// The hash of its chunks' hashes and its size.
    pub sum: Sum,
}

/// A file's bytes as chunks: its size and each chunk's hash, from which
/// its `Content` follows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunks {
    /// The bytes hashed.
    pub size: u64,
    /// Each 1 MiB chunk's XXH3-64, in order.
    pub sums: Vec<u64>,
}

impl Chunks {
    /// What the file holds: the hash of its chunks' hashes and its size.
    pub fn content(&self) -> Content {
        let mut root = Xxh3::new();
        for sum in &self.sums {
            root.write(&sum.to_le_bytes());
        }
        root.write(&self.size.to_le_bytes());
        Content {
            size: self.size,
            sum: root.finish_128().to_le_bytes(),
        }
    }

    /// The chunks a read of `len` bytes at `offset` touches.
    pub fn touched(&self, offset: u64, len: u64) -> std::ops::Range<usize> {
        let end = offset.saturating_add(len).min(self.size);
        if len == 0 || offset >= end {
            return 0..0;
        }
        let chunk = CHUNK as u64;
        (offset / chunk) as usize..end.div_ceil(chunk) as usize
    }
}

/// The hash of one chunk's bytes.
fn chunk_sum(bytes: &[u8]) -> u64 {
    Xxh3_64::oneshot(bytes)
}

/// Hashes bytes taken in order, as they are written or copied.
#[derive(Default)]
pub struct Summer {
    chunks: Chunks,
    /// The chunk being filled, when its bytes came in more than one piece.
    open: Option<Xxh3_64>,
    /// Bytes of the chunk being filled.
    filled: usize,
}

impl Summer {
    /// Takes the next `bytes`.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.chunks.size += bytes.len() as u64;
        while !bytes.is_empty() {
            let take = bytes.len().min(CHUNK - self.filled);
            let (now, rest) = bytes.split_at(take);
            bytes = rest;
            if self.filled == 0 && take == CHUNK {
                self.chunks.sums.push(chunk_sum(now));
                continue;
            }
            self.open.get_or_insert_with(Xxh3_64::new).write(now);
            self.filled += take;
            if self.filled == CHUNK {
                self.close_chunk();
            }
        }
    }

    fn close_chunk(&mut self) {
        if let Some(open) = self.open.take() {
            self.chunks.sums.push(open.finish());
        }
        self.filled = 0;
    }

    /// The chunks of the bytes taken.
    pub fn finish(mut self) -> Chunks {
        self.close_chunk();
        self.chunks
    }
}

/// What `bytes` are.
pub fn of_bytes(bytes: &[u8]) -> Content {
    let mut summer = Summer::default();
    summer.update(bytes);
    summer.finish().content()
}

/// The chunks of `file`, read whole (a big file by as many threads as
/// there are cores, each hashing a run of chunks).
pub fn of_file(file: &File) -> io::Result<Chunks> {
    let len = file.metadata()?.len();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4)) as u64;
    if len < PARALLEL_MIN || threads == 1 {
        return of_file_in_order(file);
    }
    let per_run = len.div_ceil(CHUNK as u64).div_ceil(threads);
    let runs: Vec<io::Result<(Vec<u64>, u64)>> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..threads)
            .map(|k| {
                // The last run reads to the end, however far it is now.
                let count = if k + 1 == threads { u64::MAX } else { per_run };
                s.spawn(move || {
                    let mut sums = Vec::new();
                    let read = read_chunks(file, k * per_run, count, |c| sums.push(chunk_sum(c)))?;
                    Ok((sums, read))
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("a hashing thread panicked"))
            .collect()
    });
    let mut chunks = Chunks::default();
    let last = runs.len() - 1;
    for (k, run) in runs.into_iter().enumerate() {
        let (sums, read) = run?;
        if k < last && read != per_run * CHUNK as u64 {
            // Shrunk while read: its chunks no longer line up.
            return of_file_in_order(file);
        }
        chunks.sums.extend(sums);
        chunks.size += read;
    }
    Ok(chunks)
}

fn of_file_in_order(file: &File) -> io::Result<Chunks> {
    let len = file.metadata()?.len();
    let mut buf = vec![0; (len as usize).clamp(4096, CHUNK)];
    let mut summer = Summer::default();
    loop {
        match file.read_at(&mut buf, summer.chunks.size) {
            Ok(0) => return Ok(summer.finish()),
            Ok(n) => summer.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads up to `count` chunks of `file` from chunk `first`, handing each to
/// `take` (the file's last one may be short); returns the bytes read.
fn read_chunks(
    file: &File,
    first: u64,
    count: u64,
    mut take: impl FnMut(&[u8]),
) -> io::Result<u64> {
    let mut buf = vec![0; CHUNK];
    let mut read = 0;
    for k in first..first.saturating_add(count) {
        let filled = read_chunk(file, k, &mut buf)?;
        if filled > 0 {
            take(&buf[..filled]);
        }
        read += filled as u64;
        if filled < CHUNK {
            break;
        }
    }
    Ok(read)
}

/// Reads chunk `k` of `file` into `buf` (`CHUNK` bytes); returns how many
/// bytes it has (fewer at the file's end).
fn read_chunk(file: &File, k: u64, buf: &mut [u8]) -> io::Result<usize> {
    let at = k * CHUNK as u64;
    let mut filled = 0;
    while filled < CHUNK {
        match file.read_at(&mut buf[filled..CHUNK], at + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Hashes a range of a file, starting at a chunk's start, as its bytes
/// land in order (a fetch's part): each chunk once it is whole, read back
/// while the page cache still holds it.
pub struct Trailing<'f> {
    file: &'f File,
    /// Where the next chunk to hash starts.
    next: u64,
    /// How far the bytes have landed.
    upto: u64,
    sums: Vec<u64>,
    buf: Vec<u8>,
}

impl<'f> Trailing<'f> {
    /// Hashes `file`'s chunks from `start` (a chunk boundary) as bytes land.
    pub fn new(file: &'f File, start: u64) -> Trailing<'f> {
        debug_assert_eq!(
            start % CHUNK as u64,
            0,
            "a range hashed by chunks starts one"
        );
        Trailing {
            file,
            next: start,
            upto: start,
            sums: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// The bytes up to `upto` have landed: hashes the chunks now whole.
    pub fn landed(&mut self, upto: u64) -> io::Result<()> {
        self.upto = self.upto.max(upto);
        while self.next + CHUNK as u64 <= self.upto {
            self.hash_next(CHUNK)?;
        }
        Ok(())
    }

    fn hash_next(&mut self, len: usize) -> io::Result<()> {
        self.buf.resize(len, 0);
        self.file.read_exact_at(&mut self.buf, self.next)?;
        self.sums.push(chunk_sum(&self.buf));
        self.next += len as u64;
        Ok(())
    }

    /// The hashes of the range's chunks (its last one may be short: the
    /// file's end).
    pub fn finish(mut self) -> io::Result<Vec<u64>> {
        let rest = (self.upto - self.next) as usize;
        if rest > 0 {
            self.hash_next(rest)?;
        }
        Ok(self.sums)
    }
}

/// Whether chunks `range` of `file` hash as `chunks` says; the first that
/// does not, if any.
pub fn check_chunks(
    file: &File,
    chunks: &Chunks,
    range: std::ops::Range<usize>,
) -> io::Result<Result<(), Mismatch>> {
    let mut buf = vec![0; CHUNK];
    for k in range {
        let filled = read_chunk(file, k as u64, &mut buf)?;
        let expected_len = (chunks.size - k as u64 * CHUNK as u64).min(CHUNK as u64);
        if filled as u64 != expected_len || chunks.sums.get(k) != Some(&chunk_sum(&buf[..filled])) {
            return Ok(Err(Mismatch::Chunk(k as u64)));
        }
    }
    Ok(Ok(()))
}

/// The extended attribute a stored copy's chunk hashes are kept in (files
/// of more than one chunk), so a read of part of it checks only the chunks
/// it reads. Derived data: trusted only when they hash to the record's sum.
const CHUNKS_XATTR: &std::ffi::CStr = c"user.locus.chunks";

/// Keeps `chunks` with `file` (a file system without extended attributes,
/// or one too small for them, keeps nothing: its reads check it whole).
pub fn keep(file: &File, chunks: &Chunks) {
    if chunks.sums.len() < 2 {
        return;
    }
    let mut value = chunks.size.to_le_bytes().to_vec();
    chunks
        .sums
        .iter()
        .for_each(|s| value.extend(s.to_le_bytes()));
    // SAFETY: a valid descriptor, a NUL-terminated name, and a buffer of
    // the length given.
    unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            CHUNKS_XATTR.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
}

/// The chunks kept with `file`, if any and they are those of a version
/// holding `content`.
pub fn kept(file: &File, content: Content) -> Option<Chunks> {
    let count = content.size.div_ceil(CHUNK as u64) as usize;
    if count < 2 {
        return None;
    }
    let mut value = vec![0u8; 8 + 8 * count];
    // SAFETY: a valid descriptor, a NUL-terminated name, and a buffer of
    // the length given.
    let n = unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            CHUNKS_XATTR.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    if n != value.len() as isize {
        return None;
    }
    let words: Vec<u64> = value
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect();
    let chunks = Chunks {
        size: words[0],
        sums: words[1..].to_vec(),
    };
    (chunks.content() == content).then_some(chunks)
}

/// Whether `file` holds `size` bytes hashing to `sum` (its size alone is
/// checked when the version has no hash). A file found good keeps its
/// chunks' hashes; a bad one whose kept hashes are the version's is told
/// by its first bad chunk.
pub fn check(file: &File, size: u64, sum: Option<Sum>) -> io::Result<Result<(), Mismatch>> {
    let len = file.metadata()?.len();
    if len != size {
        return Ok(Err(Mismatch::Size(len)));
    }
    let Some(sum) = sum else {
        return Ok(Ok(()));
    };
    let chunks = of_file(file)?;
    let verdict = judge(chunks.content(), size, Some(sum));
    let version = Content { size, sum };
    let kept = kept(file, version);
    match (&verdict, kept) {
        (Ok(()), None) => keep(file, &chunks),
        (Err(Mismatch::Bytes), Some(good)) => {
            let bad = (0..good.sums.len()).find(|&k| chunks.sums.get(k) != good.sums.get(k));
            if let Some(k) = bad {
                return Ok(Err(Mismatch::Chunk(k as u64)));
            }
        }
        _ => {}
    }
    Ok(verdict)
}

/// Whether `found` is what a version of `size` bytes hashing to `sum`
/// holds (its size alone when the version has no hash).
pub fn judge(found: Content, size: u64, sum: Option<Sum>) -> Result<(), Mismatch> {
    if found.size != size {
        Err(Mismatch::Size(found.size))
    } else if sum.is_some_and(|sum| found.sum != sum) {
        Err(Mismatch::Bytes)
    } else {
        Ok(())
    }
}

/// The hash in the hex form runs record (`--record-hashes`).
pub fn hex(sum: &Sum) -> String {
    sum.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 13 % 251) as u8).collect()
    }

    fn flip(path: &std::path::Path, at: u64) {
        let f = File::options().read(true).write(true).open(path).unwrap();
        let mut b = [0u8];
        f.read_exact_at(&mut b, at).unwrap();
        f.write_all_at(&[b[0] ^ 0xff], at).unwrap();
    }

    #[test]
    fn a_file_is_hashed_as_its_bytes_are_and_a_changed_copy_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [0, 1, CHUNK - 1, CHUNK, CHUNK + 7, 3 * CHUNK, 17 * CHUNK + 5];
        for len in sizes {
            let bytes = bytes(len);
            let path = dir.path().join(format!("f{len}"));
            std::fs::write(&path, &bytes).unwrap();
            let f = File::open(&path).unwrap();
            let content = of_bytes(&bytes);
            assert_eq!(content.size, len as u64);
            assert_eq!(of_file(&f).unwrap().content(), content, "{len} bytes");
            assert_eq!(of_file(&f).unwrap(), of_file_in_order(&f).unwrap());
            assert_eq!(of_file(&f).unwrap().sums.len(), len.div_ceil(CHUNK));
            let (size, sum) = (content.size, Some(content.sum));
            assert_eq!(check(&f, size, sum).unwrap(), Ok(()));
            assert_eq!(check(&f, size + 1, sum).unwrap(), Err(Mismatch::Size(size)));
            assert_eq!(
                check(&f, size + 1, None).unwrap(),
                Err(Mismatch::Size(size))
            );
            if len > 0 {
                flip(&path, len as u64 / 2);
                // A file of several chunks kept their hashes when found
                // good: its bad chunk is named.
                let expected = match len.div_ceil(CHUNK) {
                    1 => Mismatch::Bytes,
                    _ => Mismatch::Chunk((len / 2 / CHUNK) as u64),
                };
                assert_eq!(check(&f, size, sum).unwrap(), Err(expected), "{len}");
                assert_eq!(check(&f, size, None).unwrap(), Ok(()), "no hash: size only");
            }
        }
    }

    #[test]
    fn bytes_taken_in_any_pieces_hash_alike_and_sizes_and_order_count() {
        let all = bytes(2 * CHUNK + 300);
        let whole = of_bytes(&all);
        for piece in [1, 4096, 65536, CHUNK - 1, CHUNK, CHUNK + 1] {
            let mut summer = Summer::default();
            all.chunks(piece).for_each(|p| summer.update(p));
            assert_eq!(summer.finish().content(), whole, "pieces of {piece}");
        }
        // Chunk hashes alone do not say the size: a file of zeros and one a
        // byte longer differ.
        assert_ne!(of_bytes(&[0; 10]).sum, of_bytes(&[0; 11]).sum);
        assert_ne!(of_bytes(b"").sum, of_bytes(b"\0").sum);
        let mut swapped = all[CHUNK..2 * CHUNK].to_vec();
        swapped.extend_from_slice(&all[..CHUNK]);
        swapped.extend_from_slice(&all[2 * CHUNK..]);
        assert_ne!(of_bytes(&swapped).sum, whole.sum, "chunks in another order");
        assert_eq!(hex(&whole.sum).len(), 32);
    }

    #[test]
    fn kept_chunk_hashes_check_just_the_chunks_read_and_are_trusted_only_for_their_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes = bytes(4 * CHUNK + 10);
        std::fs::write(&path, &bytes).unwrap();
        let f = File::open(&path).unwrap();
        let chunks = of_file(&f).unwrap();
        let content = chunks.content();
        assert_eq!(kept(&f, content), None, "nothing kept yet");
        keep(&f, &chunks);
        assert_eq!(kept(&f, content), Some(chunks.clone()));
        let other = of_bytes(b"another version");
        assert_eq!(kept(&f, other), None, "hashes of another version");
        assert_eq!(chunks.touched(0, 1), 0..1);
        assert_eq!(chunks.touched(CHUNK as u64 - 1, 2), 0..2);
        assert_eq!(chunks.touched(4 * CHUNK as u64, 100), 4..5);
        assert_eq!(chunks.touched(5 * CHUNK as u64, 100), 0..0);
        assert_eq!(chunks.touched(3, 0), 0..0);
        flip(&path, 2 * CHUNK as u64 + 5);
        assert_eq!(check_chunks(&f, &chunks, 0..2).unwrap(), Ok(()));
        assert_eq!(check_chunks(&f, &chunks, 3..5).unwrap(), Ok(()));
        assert_eq!(
            check_chunks(&f, &chunks, 1..4).unwrap(),
            Err(Mismatch::Chunk(2))
        );
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4 * CHUNK as u64 + 3)
            .unwrap();
        assert_eq!(
            check_chunks(&f, &chunks, 4..5).unwrap(),
            Err(Mismatch::Chunk(4)),
            "a short last chunk"
        );
        // A file of one chunk keeps nothing: a read checks all of it anyway.
        let small = dir.path().join("small");
        std::fs::write(&small, b"abc").unwrap();
        let s = File::open(&small).unwrap();
        keep(&s, &of_file(&s).unwrap());
        assert_eq!(kept(&s, of_bytes(b"abc")), None);
    }
}
