//! Reading part of a file, checking only the chunks read: this node's copy
//! of a big file keeps its chunks' hashes (`sums::keep`), so a read of a
//! few bytes hashes the 1 MiB chunks they are in, not the whole file. A
//! bad chunk sets the copy aside as any bad copy is, and the read goes on
//! from another holder (fetched and checked whole, as every fetch is).

use crate::client::blocking;
use crate::data::sums::{self, Content, Mismatch};
use crate::path::normalise;
use crate::Client;
use locus_proto::fs::Record;
use locus_proto::{FsError, FsResult};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Reads up to `len` bytes of `file` from `offset` (fewer at its end).
fn read_at(file: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let size = file.metadata()?.len();
    let len = size.saturating_sub(offset).min(len) as usize;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// This node's copy `file` of version `rec`: the bytes read, checked by
/// the chunks it keeps; `None` if it keeps none (then it is checked whole).
fn read_kept(
    file: &Path,
    rec: &Record,
    offset: u64,
    len: u64,
) -> std::io::Result<Option<Result<Vec<u8>, Mismatch>>> {
    let Some(sum) = rec.sum else {
        return Ok(None);
    };
    let f = match File::open(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Some(Err(Mismatch::Missing)))
        }
        f => f?,
    };
    let len_now = f.metadata()?.len();
    if len_now != rec.size {
        return Ok(Some(Err(Mismatch::Size(len_now))));
    }
    let Some(chunks) = sums::kept(
        &f,
        Content {
            size: rec.size,
            sum,
        },
    ) else {
        return Ok(None);
    };
    let bytes = read_at(&f, offset, len)?;
    let verdict = sums::check_chunks(&f, &chunks, chunks.touched(offset, len))?;
    Ok(Some(verdict.map(|()| bytes)))
}

impl Client {
    /// Reads up to `len` bytes of `path` from `offset` (fewer at its end),
    /// checked as every read is: where this node's copy keeps its chunks'
    /// hashes, only the chunks read are hashed; otherwise the file is made
    /// local and checked whole, as `local_copy` does.
    pub async fn read_range(&self, path: &str, offset: u64, len: u64) -> FsResult<Vec<u8>> {
        let path = normalise(path)?;
        self.published(&path).await;
        let mut rec = self.stat(&path).await?;
        let mut replaced = false;
        if self.holds(&rec) {
            let file = self.store().data_path(&path, rec.stamp);
            let (p, r, f) = (path.clone(), rec.clone(), file.clone());
            let kept =
                blocking(move || read_kept(&f, &r, offset, len).map_err(|e| FsError::io(&p, &e)))
                    .await?;
            match kept {
                Some(Ok(bytes)) => return Ok(bytes),
                Some(Err(why)) => {
                    let me = self.node();
                    match self.bad_copy(&path, &rec, me, why).await {
                        Ok(()) => {
                            rec.holders.retain(|&h| h != me);
                            if rec.holders.is_empty() {
                                let bad = [(me, why)];
                                return Err(crate::data::verify::no_good_copy(&path, &bad));
                            }
                        }
                        // Replaced since it was read: the version current
                        // now is read (its record looked at again).
                        Err(_) => replaced = true,
                    }
                }
                None => {}
            }
        }
        let known = (!replaced).then_some(&rec);
        let (file, _) = self.open_current(&path, known).await?;
        blocking(move || read_at(&file, offset, len).map_err(|e| FsError::io(&path, &e))).await
    }
}
