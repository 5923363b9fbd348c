//! What vouches for a version's bytes: the BLAKE3 hash of the whole file,
//! made where the version is written and kept in its record. A copy made
//! from another, and a copy read on its node, is checked against it, so no
//! reader is handed bytes the writer did not write.

use crate::copy::PIECE;
pub use locus_proto::fs::Mismatch;
use locus_proto::fs::Sum;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// What a version holds: its size and the hash of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Content {
    pub size: u64,
    pub sum: Sum,
}

/// The hash of `bytes`.
pub fn of_bytes(bytes: &[u8]) -> Sum {
    *blake3::hash(bytes).as_bytes()
}

/// What `bytes` are.
pub fn of_bytes_content(bytes: &[u8]) -> Content {
    Content {
        size: bytes.len() as u64,
        sum: of_bytes(bytes),
    }
}

/// What `file` holds, read whole.
pub fn of_file(file: &File) -> io::Result<Content> {
    let mut hasher = blake3::Hasher::new();
    let len = file.metadata()?.len();
    let mut buf = vec![0; (len as usize).clamp(4096, PIECE)];
    let mut at = 0u64;
    loop {
        let n = match file.read_at(&mut buf, at) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            read => read?,
        };
        if n == 0 {
            let sum = *hasher.finalize().as_bytes();
            return Ok(Content { size: at, sum });
        }
        hasher.update(&buf[..n]);
        at += n as u64;
    }
}

/// Whether `file` holds `size` bytes hashing to `sum` (its size alone is
/// checked when the version has no hash).
pub fn check(file: &File, size: u64, sum: Option<Sum>) -> io::Result<Result<(), Mismatch>> {
    let len = file.metadata()?.len();
    if len != size {
        return Ok(Err(Mismatch::Size(len)));
    }
    let Some(sum) = sum else {
        return Ok(Ok(()));
    };
    let found = of_file(file)?;
    Ok(if found.size != size {
        Err(Mismatch::Size(found.size))
    } else if found.sum != sum {
        Err(Mismatch::Bytes)
    } else {
        Ok(())
    })
}

/// The hash in the hex form runs record (`--record-hashes`).
pub fn hex(sum: &Sum) -> String {
    blake3::Hash::from_bytes(*sum).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_is_hashed_as_its_bytes_are_and_a_changed_copy_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 1, PIECE - 1, PIECE + 7, 3 * PIECE] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
            let path = dir.path().join("f");
            std::fs::write(&path, &bytes).unwrap();
            let f = File::open(&path).unwrap();
            let content = of_bytes_content(&bytes);
            assert_eq!(of_file(&f).unwrap(), content, "{len} bytes");
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
        let mut f = File::create(dir.path().join("g")).unwrap();
        f.write_all(b"abc").unwrap();
        assert_eq!(
            hex(&of_bytes(b"abc")),
            blake3::hash(b"abc").to_hex().as_str()
        );
    }
}
