//! What vouches for a version's bytes, made where the version is written
//! and kept in its record: the XXH3-128 hash of its 1 MiB chunks' XXH3-128
//! hashes and its size. A copy made from another, and a copy read on its
//! node, is checked against it, so no reader is handed bytes the writer did
//! not write.
//!
//! XXH3 rather than BLAKE3: a check is one more pass over the bytes, and
//! here BLAKE3 runs at 2.2-3.5 GB/s on a core, about the page cache's write
//! rate, while XXH3 runs at 9-10 GB/s from memory and over 30 from the CPU's
//! cache (where a writer's bytes are as they are hashed). A 128-bit hash
//! tells corruption apart as surely; it does not stand against someone who
//! crafts collisions, which is not what a store on the user's own nodes
//! guards against. Chunks let a big file be hashed by several threads.

use crate::copy::PIECE;
pub use locus_proto::fs::Mismatch;
use locus_proto::fs::Sum;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use twox_hash::xxhash3_128::Hasher as Xxh3;

/// The bytes each chunk hash covers (a copy's piece: a piece copied is a
/// chunk hashed).
pub const CHUNK: usize = PIECE;

/// Files at least this big are hashed by several threads.
const PARALLEL_MIN: u64 = 16 * CHUNK as u64;

/// What a version holds: its size and the hash of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Content {
    pub size: u64,
    pub sum: Sum,
}

/// The hash of one chunk's bytes.
fn chunk_sum(bytes: &[u8]) -> u128 {
    Xxh3::oneshot(bytes)
}

/// Hashes bytes taken in order, as they are written or copied.
pub struct Summer {
    /// Over the hashes of the chunks done.
    chunks: Xxh3,
    /// The chunk being filled, when its bytes came in more than one piece.
    open: Option<Xxh3>,
    /// Bytes of the chunk being filled.
    filled: usize,
    size: u64,
}

impl Default for Summer {
    fn default() -> Self {
        Summer {
            chunks: Xxh3::new(),
            open: None,
            filled: 0,
            size: 0,
        }
    }
}

impl Summer {
    /// Takes the next `bytes`.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.size += bytes.len() as u64;
        while !bytes.is_empty() {
            let take = bytes.len().min(CHUNK - self.filled);
            let (now, rest) = bytes.split_at(take);
            bytes = rest;
            if self.filled == 0 && take == CHUNK {
                self.chunk_done(chunk_sum(now));
                continue;
            }
            self.open.get_or_insert_with(Xxh3::new).write(now);
            self.filled += take;
            if self.filled == CHUNK {
                let open = self.open.take().expect("a chunk being filled");
                self.chunk_done(open.finish_128());
            }
        }
    }

    fn chunk_done(&mut self, sum: u128) {
        self.chunks.write(&sum.to_le_bytes());
        self.filled = 0;
    }

    /// What the bytes taken are.
    pub fn finish(mut self) -> Content {
        if let Some(open) = self.open.take() {
            self.chunk_done(open.finish_128());
        }
        self.chunks.write(&self.size.to_le_bytes());
        Content {
            size: self.size,
            sum: self.chunks.finish_128().to_le_bytes(),
        }
    }
}

/// What `bytes` are.
pub fn of_bytes(bytes: &[u8]) -> Content {
    let mut summer = Summer::default();
    summer.update(bytes);
    summer.finish()
}

/// What `file` holds, read whole (a big file by as many threads as there
/// are cores, each hashing a run of chunks).
pub fn of_file(file: &File) -> io::Result<Content> {
    let len = file.metadata()?.len();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4)) as u64;
    if len < PARALLEL_MIN || threads == 1 {
        return of_file_in_order(file);
    }
    let per_run = len.div_ceil(CHUNK as u64).div_ceil(threads);
    let runs: Vec<io::Result<(Vec<u128>, u64)>> = std::thread::scope(|s| {
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
    let mut summer = Summer::default();
    let last = runs.len() - 1;
    for (k, run) in runs.into_iter().enumerate() {
        let (sums, read) = run?;
        if k < last && read != per_run * CHUNK as u64 {
            // Shrunk while read: its chunks no longer line up.
            return of_file_in_order(file);
        }
        sums.into_iter().for_each(|sum| summer.chunk_done(sum));
        summer.size += read;
    }
    Ok(summer.finish())
}

fn of_file_in_order(file: &File) -> io::Result<Content> {
    let len = file.metadata()?.len();
    let mut buf = vec![0; (len as usize).clamp(4096, CHUNK)];
    let mut summer = Summer::default();
    loop {
        match file.read_at(&mut buf, summer.size) {
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
        let at = k * CHUNK as u64;
        let mut filled = 0;
        while filled < CHUNK {
            match file.read_at(&mut buf[filled..], at + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
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

/// Whether `file` holds `size` bytes hashing to `sum` (its size alone is
/// checked when the version has no hash).
pub fn check(file: &File, size: u64, sum: Option<Sum>) -> io::Result<Result<(), Mismatch>> {
    let len = file.metadata()?.len();
    if len != size {
        return Ok(Err(Mismatch::Size(len)));
    }
    if sum.is_none() {
        return Ok(Ok(()));
    }
    Ok(judge(of_file(file)?, size, sum))
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

    #[test]
    fn a_file_is_hashed_as_its_bytes_are_and_a_changed_copy_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [0, 1, CHUNK - 1, CHUNK, CHUNK + 7, 3 * CHUNK, 17 * CHUNK + 5];
        for len in sizes {
            let bytes = bytes(len);
            let path = dir.path().join("f");
            std::fs::write(&path, &bytes).unwrap();
            let f = File::open(&path).unwrap();
            let content = of_bytes(&bytes);
            assert_eq!(content.size, len as u64);
            assert_eq!(of_file(&f).unwrap(), content, "{len} bytes");
            assert_eq!(of_file_in_order(&f).unwrap(), content, "{len} bytes");
            let (size, sum) = (content.size, Some(content.sum));
            assert_eq!(check(&f, size, sum).unwrap(), Ok(()));
            assert_eq!(check(&f, size + 1, sum).unwrap(), Err(Mismatch::Size(size)));
            assert_eq!(
                check(&f, size + 1, None).unwrap(),
                Err(Mismatch::Size(size))
            );
            if len > 0 {
                let flipped = File::options().write(true).open(&path).unwrap();
                flipped
                    .write_all_at(&[bytes[len / 2] ^ 0xff], len as u64 / 2)
                    .unwrap();
                assert_eq!(check(&f, size, sum).unwrap(), Err(Mismatch::Bytes));
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
            assert_eq!(summer.finish(), whole, "pieces of {piece}");
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
}
