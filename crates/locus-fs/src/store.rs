//! A node's local data store: each file under its logical path in `data/`, so
//! names and extensions stay visible to the programs that read them. New
//! contents are written to `tmp/` and renamed into place, so a reader never
//! sees a half-written version.

use locus_proto::{FsError, FsResult};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone)]
pub struct Store {
    data: PathBuf,
    tmp: PathBuf,
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// The store of the node whose directory is `node_dir` (created if needed).
    pub fn open(node_dir: &Path) -> io::Result<Store> {
        let store = Store {
            data: node_dir.join("data"),
            tmp: node_dir.join("tmp"),
        };
        std::fs::create_dir_all(&store.data)?;
        std::fs::create_dir_all(&store.tmp)?;
        Ok(store)
    }

    /// Where the data of normalised logical `path` lives in this store.
    pub fn data_path(&self, path: &str) -> PathBuf {
        self.data.join(path.trim_start_matches('/'))
    }

    pub fn root(&self) -> &Path {
        &self.data
    }

    /// A new, empty temporary file in this store.
    pub fn temp_file(&self) -> FsResult<(PathBuf, File)> {
        let name = format!(
            "{}-{}-{:x}",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        );
        let path = self.tmp.join(name);
        let file =
            File::create_new(&path).map_err(|e| FsError::io(path.display().to_string(), &e))?;
        Ok((path, file))
    }

    /// Atomically makes temporary file `tmp` the stored copy of `path`.
    pub fn install(&self, tmp: &Path, path: &str) -> FsResult<()> {
        let dest = self.data_path(path);
        self.make_parent(&dest, path)?;
        std::fs::rename(tmp, &dest).map_err(|e| FsError::io(path, &e))
    }

    /// Makes stored `to` another name of stored `from` (no bytes copied).
    pub fn link(&self, from: &str, to: &str) -> FsResult<()> {
        let dest = self.data_path(to);
        self.make_parent(&dest, to)?;
        match std::fs::remove_file(&dest) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(FsError::io(to, &e)),
        }
        std::fs::hard_link(self.data_path(from), &dest).map_err(|e| FsError::io(from, &e))
    }

    /// Deletes the stored copy of `path`; a missing copy is not an error.
    pub fn drop_copy(&self, path: &str) -> FsResult<()> {
        match std::fs::remove_file(self.data_path(path)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(FsError::io(path, &e)),
        }
    }

    fn make_parent(&self, dest: &Path, path: &str) -> FsResult<()> {
        let parent = dest.parent().expect("store paths have a parent");
        std::fs::create_dir_all(parent).map_err(|e| FsError::io(path, &e))
    }

    /// Files and bytes held in this store.
    pub fn usage(&self) -> (u64, u64) {
        fn walk(dir: &Path, files: &mut u64, bytes: &mut u64) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in rd.flatten() {
                match entry.file_type() {
                    Ok(t) if t.is_dir() => walk(&entry.path(), files, bytes),
                    Ok(_) => {
                        *files += 1;
                        *bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
                    }
                    Err(_) => {}
                }
            }
        }
        let (mut files, mut bytes) = (0, 0);
        walk(&self.data, &mut files, &mut bytes);
        (files, bytes)
    }

    /// Free and total bytes of the file system holding the store.
    pub fn capacity(&self) -> (u64, u64) {
        let Ok(c) = std::ffi::CString::new(self.data.as_os_str().as_encoded_bytes()) else {
            return (0, 0);
        };
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return (0, 0);
        }
        let frsize = st.f_frsize as u64;
        (st.f_bavail as u64 * frsize, st.f_blocks as u64 * frsize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn install_link_and_drop() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (tmp, mut f) = store.temp_file().unwrap();
        f.write_all(b"hello").unwrap();
        drop(f);
        store.install(&tmp, "/a/b/c.txt").unwrap();
        assert_eq!(
            std::fs::read(store.data_path("/a/b/c.txt")).unwrap(),
            b"hello"
        );
        store.link("/a/b/c.txt", "/d.txt").unwrap();
        store.drop_copy("/a/b/c.txt").unwrap();
        assert_eq!(std::fs::read(store.data_path("/d.txt")).unwrap(), b"hello");
        store.drop_copy("/missing").unwrap();
        assert_eq!(store.usage(), (1, 5));
    }
}
