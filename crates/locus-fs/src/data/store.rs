//! A node's local data store. Each version of a file is stored under its own
//! name, `data/<logical parent>/@<stamp>/<name>`, so the file's name and
//! extension stay visible to the programs that read it, and no write, fetch
//! or failure ever touches the bytes of another version: a version becomes
//! current only when its record names its stamp. Bytes in the making live in
//! `tmp/`, under names that begin with the writing process's id, so the
//! daemon can sweep what dead writers left. Empty versions are names of one
//! file, `empty`, which no one writes: they cost no inode of their own.

use crate::data::copy;
use crate::data::sums::{self, Content, Mismatch};
use crate::private_dir;
use locus_proto::fs::{ScrubReport, StoredCopy, Sum};
use locus_proto::{Errno, FsError, FsResult};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A node's data store: its versions' bytes under `data/`, files being
/// written under `tmp/`.
#[derive(Debug, Clone)]
pub struct Store {
    data: PathBuf,
    tmp: PathBuf,
    /// The file every empty version is another name of (made when first
    /// needed, and again when it has as many names as the file system allows).
    empty: PathBuf,
    /// Locked byte by byte by the node's clients while they fetch.
    fetch_locks: PathBuf,
    /// Copies found bad, set aside for a look by hand.
    quarantine: PathBuf,
    /// What the last scrub found.
    scrub_report: PathBuf,
}

/// Held while a client of this node fetches one version of a file; dropping
/// it lets the node's other clients that want that version go on.
pub struct FetchLock {
    _held: File,
}

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);
/// Ends the name of a directory in `tmp/` shared by many new files (one
/// lent directory's), which is never installed as a version's directory.
const SHARED: &str = ".shared";

/// Calls `each` with every file under `dir` and its metadata.
fn each_file(dir: &Path, each: &mut impl FnMut(&Path, &std::fs::Metadata)) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_dir() => each_file(&entry.path(), each),
            Ok(_) => {
                if let Ok(m) = entry.metadata() {
                    each(&entry.path(), &m);
                }
            }
            Err(_) => {}
        }
    }
}

/// When a file's inode last changed (its bytes, its names), in ns since
/// the epoch: for a stored copy, when it was put in place.
pub(crate) fn changed_ns(meta: &std::fs::Metadata) -> i64 {
    use std::os::unix::fs::MetadataExt;
    meta.ctime() * 1_000_000_000 + meta.ctime_nsec()
}

fn is_empty(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|m| m.len() == 0)
}

fn is_shared(dir: &Path) -> bool {
    dir.as_os_str()
        .as_encoded_bytes()
        .ends_with(SHARED.as_bytes())
}

impl Store {
    /// The store of the node whose directory is `node_dir` (created, private
    /// to its owner, if needed).
    pub fn open(node_dir: &Path) -> io::Result<Store> {
        let store = Store::existing(node_dir);
        private_dir::create(node_dir)?;
        private_dir::create(&store.data)?;
        private_dir::create(&store.tmp)?;
        Ok(store)
    }

    /// The store in existing directory `node_dir`, made nothing of: to
    /// read a stopped node's copies.
    pub fn existing(node_dir: &Path) -> Store {
        Store {
            data: node_dir.join("data"),
            tmp: node_dir.join("tmp"),
            empty: node_dir.join("empty"),
            fetch_locks: node_dir.join("fetch.lock"),
            quarantine: node_dir.join("quarantine"),
            scrub_report: node_dir.join("scrub.json"),
        }
    }

    /// Waits for, then takes, this node's lock on fetching copy `stamp` of
    /// `path`: an open-file-description lock on one byte of `fetch.lock`
    /// chosen by hashing, shared by every process of the node (two versions
    /// whose bytes collide only take turns).
    pub fn lock_fetch(&self, path: &str, stamp: u64) -> FsResult<FetchLock> {
        use std::os::fd::AsRawFd;
        let err = |e: &io::Error| FsError::io(self.fetch_locks.display().to_string(), e);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.fetch_locks)
            .map_err(|e| err(&e))?;
        let hash = blake3::hash(format!("{path}#{stamp}").as_bytes());
        let byte = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"));
        // SAFETY: a zeroed flock is a valid value to fill in.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as i16;
        lock.l_whence = libc::SEEK_SET as i16;
        lock.l_start = (byte % (1 << 40)) as libc::off_t;
        lock.l_len = 1;
        loop {
            // SAFETY: fcntl on our own open file with a valid flock.
            if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLKW, &lock) } == 0 {
                return Ok(FetchLock { _held: file });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(err(&e));
            }
        }
    }

    /// Where copy `stamp` of normalised logical `path` lives in this store.
    pub fn data_path(&self, path: &str, stamp: u64) -> PathBuf {
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
        self.data
            .join(parent.trim_start_matches('/'))
            .join(format!("@{stamp:016x}"))
            .join(name)
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.data
    }

    fn temp_name(&self) -> PathBuf {
        self.tmp.join(format!(
            "{}-{}-{:x}",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed),
            rand::random::<u32>()
        ))
    }

    /// A new, empty temporary file in this store.
    /// (Open for reading too: what is written is hashed back from it.)
    pub fn temp_file(&self) -> FsResult<(PathBuf, File)> {
        let path = self.temp_name();
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| FsError::io(path.display().to_string(), &e))?;
        Ok((path, file))
    }

    /// A private place for a program to write the file called `name` (the
    /// returned path ends in it); `install` publishes it, `discard` removes it.
    pub fn private_file(&self, name: &str) -> FsResult<PathBuf> {
        let dir = self.temp_name();
        std::fs::create_dir(&dir).map_err(|e| FsError::io(dir.display().to_string(), &e))?;
        Ok(dir.join(name))
    }

    /// A place for the new files of one directory lent to a client, each
    /// under its own name (made by the first `shared_file`).
    pub fn shared_dir(&self) -> PathBuf {
        let mut name = self.temp_name().into_os_string();
        name.push(SHARED);
        PathBuf::from(name)
    }

    /// A new file `path` in a shared directory (made if missing).
    pub fn shared_file(&self, path: &Path) -> FsResult<(PathBuf, File)> {
        let io_err = |e: &io::Error| FsError::io(path.display().to_string(), e);
        let dir = path
            .parent()
            .ok_or_else(|| FsError::new(Errno::EINVAL, "shared file"))?;
        match File::create_new(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => match std::fs::create_dir(dir) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(io_err(&e)),
                _ => File::create_new(path),
            },
            made => made,
        }
        .map(|f| (path.to_path_buf(), f))
        .map_err(|e| io_err(&e))
    }

    /// Removes a file made by `private_file` (or `temp_file`), with its
    /// private directory; what is already gone is no error.
    pub fn discard(&self, file: &Path) {
        let _ = std::fs::remove_file(file);
        self.remove_private_dir(file);
    }

    /// Removes the private directory `file` was made in, if it has one.
    fn remove_private_dir(&self, file: &Path) {
        // A shared one stays while new files may be made in it.
        if let Some(dir) = file.parent().filter(|d| *d != self.tmp && !is_shared(d)) {
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// Removes shared directory `dir` once no new file will be made in it,
    /// if it is empty (else the daemon's sweep does, after its writer).
    pub fn remove_shared(&self, dir: &Path) {
        let _ = std::fs::remove_dir(dir);
    }

    /// Atomically makes temporary file `tmp` stored copy `stamp` of `path`.
    pub fn install(&self, tmp: &Path, path: &str, stamp: u64) -> FsResult<()> {
        let dest = self.data_path(path, stamp);
        // A private file is alone in its private directory under its own
        // name: that directory becomes the version's, one rename and no
        // directory made or removed (inode allocation is most of an output's
        // cost on ext4).
        let version_dir = dest.parent().expect("store paths have a parent");
        if let Some(private) = self.private_dir(tmp, &dest) {
            self.make_parent(version_dir, path)?;
            if std::fs::rename(private, version_dir).is_ok() {
                return Ok(());
            }
        }
        // Where the version's directory is there already (many files of a
        // lent directory share one), no directory is made.
        if let Err(e) = std::fs::rename(tmp, &dest) {
            if e.kind() != io::ErrorKind::NotFound || !tmp.exists() {
                return Err(FsError::io(path, &e));
            }
            self.make_parent(&dest, path)?;
            std::fs::rename(tmp, &dest).map_err(|e| FsError::io(path, &e))?;
        }
        self.remove_private_dir(tmp);
        Ok(())
    }

    /// The private directory `tmp` is alone in under `dest`'s name, which
    /// becomes the version's directory as a whole.
    fn private_dir<'t>(&self, tmp: &'t Path, dest: &Path) -> Option<&'t Path> {
        tmp.parent()
            .filter(|d| *d != self.tmp && tmp.file_name() == dest.file_name() && !is_shared(d))
    }

    /// Makes stored copy `stamp` of `path` an empty file, no inode made:
    /// on ext4 allocating one is most of what a new file costs.
    /// (`drop_copy` undoes it.)
    pub fn install_empty(&self, path: &str, stamp: u64) -> FsResult<()> {
        self.link_empty(&self.data_path(path, stamp))
            .map_err(|e| FsError::io(path, &e))
    }

    /// `install` of `tmp` holding `size` bytes: an empty one becomes a
    /// name of `empty` (and `tmp` goes).
    pub fn install_sized(&self, tmp: &Path, path: &str, stamp: u64, size: u64) -> FsResult<()> {
        if size > 0 {
            return self.install(tmp, path, stamp);
        }
        self.install_empty(path, stamp)?;
        self.discard(tmp);
        Ok(())
    }

    /// Makes `dest` (and its directory, if missing) a name of `empty`.
    fn link_empty(&self, dest: &Path) -> io::Result<()> {
        // A missing directory, a missing `empty`, and one with the most names
        // the file system allows are each put right once.
        for _ in 0..3 {
            let e = match std::fs::hard_link(&self.empty, dest) {
                Err(e) => e,
                linked => return linked,
            };
            match e.raw_os_error() {
                Some(libc::ENOENT) if self.empty.exists() => {
                    std::fs::create_dir_all(dest.parent().expect("store paths have a parent"))?;
                }
                Some(libc::ENOENT | libc::EMLINK) => self.new_empty()?,
                // A file system without hard links: an empty file of its own.
                Some(libc::EPERM | libc::EOPNOTSUPP) => return File::create_new(dest).map(drop),
                _ => return Err(e),
            }
        }
        std::fs::hard_link(&self.empty, dest)
    }

    /// Puts a new empty file in `empty`'s place (the old one keeps the
    /// names it has), read-only, as a reminder that none may write it.
    fn new_empty(&self) -> io::Result<()> {
        let tmp = self.temp_name();
        File::create_new(&tmp)?
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o444))?;
        std::fs::rename(&tmp, &self.empty)
    }

    /// Undoes `install(tmp, path, stamp)`: the copy goes back to `tmp`.
    pub fn uninstall(&self, path: &str, stamp: u64, tmp: &Path) -> FsResult<()> {
        let dest = self.data_path(path, stamp);
        let version_dir = dest.parent().expect("store paths have a parent");
        let moved = match self.private_dir(tmp, &dest) {
            Some(private) => std::fs::rename(version_dir, private),
            None => std::fs::rename(&dest, tmp),
        };
        moved.map_err(|e| FsError::io(path, &e))
    }

    /// Copies host file `source` in as stored copy `stamp` of `path`;
    /// returns what it holds (hashed as copied in: the copy is what the
    /// version's record vouches for). Nothing is stored if the copy fails.
    pub fn import(&self, source: &Path, path: &str, stamp: u64) -> FsResult<Content> {
        let host_err = |e: &io::Error| FsError::io(source.display().to_string(), e);
        let from = File::open(source).map_err(|e| host_err(&e))?;
        let meta = from.metadata().map_err(|e| host_err(&e))?;
        if meta.is_file() && meta.len() == 0 {
            return self
                .install_empty(path, stamp)
                .map(|()| sums::of_bytes(b""));
        }
        let (tmp, to) = self.temp_file()?;
        let copied = copy::whole_summed(&from, &meta, &to)
            .map(|chunks| {
                sums::keep(&to, &chunks);
                chunks.content()
            })
            .map_err(|e| host_err(&e))
            .and_then(|content| self.install(&tmp, path, stamp).map(|()| content));
        if copied.is_err() {
            self.discard(&tmp);
        }
        copied
    }

    /// Copies stored copy `stamp` of `path` out to host file `dest`, which
    /// appears whole or not at all, if it holds what `expect` says (its
    /// version's size, and hash if known); returns its size, or how it
    /// differs (nothing is left at `dest` then).
    pub fn export(
        &self,
        path: &str,
        stamp: u64,
        dest: &Path,
        expect: (u64, Option<Sum>),
    ) -> FsResult<Result<u64, Mismatch>> {
        let host_err = |e: &io::Error| FsError::io(dest.display().to_string(), e);
        let from = match File::open(self.data_path(path, stamp)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(Mismatch::Missing)),
            from => from.map_err(|e| FsError::io(path, &e))?,
        };
        let name = dest.file_name().ok_or_else(|| {
            FsError::new(Errno::EINVAL, dest.display().to_string()).with_detail("not a file name")
        })?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".locus-{}", std::process::id()));
        let tmp = dest.with_file_name(tmp_name);
        let copied = File::create(&tmp)
            .and_then(|to| copy::whole_summed(&from, &from.metadata()?, &to))
            .and_then(|content| {
                // What was copied out is what is checked.
                match sums::judge(content.content(), expect.0, expect.1) {
                    Ok(()) => std::fs::rename(&tmp, dest).map(|()| Ok(content.size)),
                    Err(why) => Ok(Err(why)),
                }
            })
            .map_err(|e| host_err(&e));
        if !matches!(copied, Ok(Ok(_))) {
            let _ = std::fs::remove_file(&tmp);
        }
        copied
    }

    /// Makes stored copy `stamp` of `to` another name of that of `from` (no
    /// bytes copied).
    pub fn link(&self, from: &str, to: &str, stamp: u64) -> FsResult<()> {
        let dest = self.data_path(to, stamp);
        self.make_parent(&dest, to)?;
        let source = self.data_path(from, stamp);
        let linked = match std::fs::hard_link(&source, &dest) {
            // An empty version shares `empty`, which may have all its names.
            Err(e) if e.raw_os_error() == Some(libc::EMLINK) && is_empty(&source) => {
                self.link_empty(&dest)
            }
            linked => linked,
        };
        match linked {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(FsError::io(from, &e)),
            _ => Ok(()),
        }
    }

    /// Deletes stored copy `stamp` of `path`; a missing copy is not an error.
    pub fn drop_copy(&self, path: &str, stamp: u64) -> FsResult<()> {
        let file = self.data_path(path, stamp);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(FsError::io(path, &e)),
        }
        // The stamp directory holds this one name unless a rename linked more.
        let _ = std::fs::remove_dir(file.parent().expect("stamped paths have a parent"));
        Ok(())
    }

    /// Moves copy `stamp` of `path` to `quarantine/` (named by its stamp
    /// and path), where nothing reads it; gone already is fine.
    pub fn quarantine(&self, path: &str, stamp: u64) -> FsResult<()> {
        let file = self.data_path(path, stamp);
        private_dir::create(&self.quarantine).map_err(|e| FsError::io(path, &e))?;
        let aside = self
            .quarantine
            .join(format!("{stamp:016x}{}", path.replace('/', "%")));
        match std::fs::rename(&file, aside) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(FsError::io(path, &e)),
        }
        let _ = std::fs::remove_dir(file.parent().expect("stamped paths have a parent"));
        Ok(())
    }

    /// Keeps what a scrub of this store found (replacing the last).
    pub fn save_scrub(&self, report: &ScrubReport) -> io::Result<()> {
        let tmp = self.scrub_report.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(report).map_err(io::Error::other)?)?;
        std::fs::rename(&tmp, &self.scrub_report)
    }

    /// What the last scrub of this store found, if one ran.
    pub fn last_scrub(&self) -> Option<ScrubReport> {
        let text = std::fs::read(&self.scrub_report).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn make_parent(&self, dest: &Path, path: &str) -> FsResult<()> {
        let parent = dest.parent().expect("store paths have a parent");
        std::fs::create_dir_all(parent).map_err(|e| FsError::io(path, &e))
    }

    /// Removes what writers that are no longer running left in `tmp/`
    /// (temporary files and private output directories); returns how many.
    pub fn sweep_dead_writers(&self) -> usize {
        let Ok(rd) = std::fs::read_dir(&self.tmp) else {
            return 0;
        };
        let mut swept = 0;
        for entry in rd.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.split('-').next()?.parse::<u32>().ok());
            let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
            if alive {
                continue;
            }
            let path = entry.path();
            let removed = match entry.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
            if removed.is_ok() {
                swept += 1;
            }
        }
        swept
    }

    /// Files and bytes held in this store.
    pub fn usage(&self) -> (u64, u64) {
        let (mut files, mut bytes) = (0, 0);
        each_file(&self.data, &mut |_, m| {
            files += 1;
            bytes += m.len();
        });
        (files, bytes)
    }

    /// Every copy this store holds, as the version of a logical path.
    pub fn stored(&self) -> Vec<StoredCopy> {
        let mut copies = Vec::new();
        each_file(&self.data, &mut |file, m| {
            let Ok(rel) = file.strip_prefix(&self.data) else {
                return;
            };
            let mut parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
            let (Some(name), Some(stamp)) = (parts.pop(), parts.pop()) else {
                return;
            };
            let Some(stamp) = stamp
                .strip_prefix('@')
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            else {
                return;
            };
            copies.push(StoredCopy {
                path: format!(
                    "/{}",
                    parts
                        .iter()
                        .chain([&name])
                        .copied()
                        .collect::<Vec<_>>()
                        .join("/")
                ),
                stamp,
                size: m.len(),
                stored_ns: changed_ns(m),
            });
        });
        copies
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
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn versions_live_side_by_side_under_their_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("node")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("node")), 0o700);
        assert_eq!(mode(store.root()), 0o700);
        for (stamp, bytes) in [(1, &b"one"[..]), (2, b"two!")] {
            let (tmp, mut f) = store.temp_file().unwrap();
            f.write_all(bytes).unwrap();
            drop(f);
            store.install(&tmp, "/a/b/c.txt", stamp).unwrap();
        }
        let v1 = store.data_path("/a/b/c.txt", 1);
        assert!(v1.ends_with("a/b/@0000000000000001/c.txt"));
        assert_eq!(std::fs::read(&v1).unwrap(), b"one");
        assert_eq!(
            std::fs::read(store.data_path("/a/b/c.txt", 2)).unwrap(),
            b"two!"
        );
        store.link("/a/b/c.txt", "/d.txt", 2).unwrap();
        store.drop_copy("/a/b/c.txt", 2).unwrap();
        store.drop_copy("/a/b/c.txt", 1).unwrap();
        assert!(!v1.parent().unwrap().exists());
        assert_eq!(
            std::fs::read(store.data_path("/d.txt", 2)).unwrap(),
            b"two!"
        );
        store.drop_copy("/missing", 9).unwrap();
        assert_eq!(store.usage(), (1, 4));
        // A program's private output becomes a version by renaming its
        // private directory; under another name (a link's target) the file
        // moves alone. Either way nothing is left in tmp/.
        for (stamp, name, bytes) in [(3, "c.txt", &b"three"[..]), (4, "x.txt", b"four")] {
            let out = store.private_file(name).unwrap();
            std::fs::write(&out, bytes).unwrap();
            store.install(&out, "/a/b/c.txt", stamp).unwrap();
            assert_eq!(
                std::fs::read(store.data_path("/a/b/c.txt", stamp)).unwrap(),
                bytes
            );
            assert_eq!(std::fs::read_dir(&store.tmp).unwrap().count(), 0);
        }
    }

    #[test]
    fn empty_versions_are_names_of_one_file_and_a_full_one_is_replaced() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        store.install_empty("/a/x", 1).unwrap();
        store.install_empty("/b/c/y", 2).unwrap();
        let (x, y) = (store.data_path("/a/x", 1), store.data_path("/b/c/y", 2));
        assert_eq!(ino(&x), ino(&y));
        assert_eq!(std::fs::read(&y).unwrap(), b"");
        // Written empty, or copied in from an empty file: the same.
        let (tmp, _) = store.temp_file().unwrap();
        store.install_sized(&tmp, "/c", 5, 0).unwrap();
        assert!(!tmp.exists());
        assert_eq!(store.import(&y, "/d", 6).unwrap().size, 0);
        assert_eq!(ino(&store.data_path("/c", 5)), ino(&x));
        assert_eq!(ino(&store.data_path("/d", 6)), ino(&x));
        store.drop_copy("/a/x", 1).unwrap();
        assert!(!x.parent().unwrap().exists() && y.exists());
        // Lost, it is made again; the versions that had it keep theirs.
        std::fs::remove_file(&store.empty).unwrap();
        store.install_empty("/a/z", 3).unwrap();
        assert_ne!(ino(&store.data_path("/a/z", 3)), ino(&y));
        // ext4 gives a file 65,000 names at most: then a new one is made,
        // and an empty version linked elsewhere (a rename) follows it.
        let first = ino(&store.data_path("/a/z", 3));
        let mut replaced = false;
        for i in 0..70_000 {
            store.install_empty(&format!("/many/{i}"), 4).unwrap();
            if ino(&store.data_path(&format!("/many/{i}"), 4)) != first {
                replaced = true;
                store.link("/a/z", "/moved", 3).unwrap();
                break;
            }
        }
        if replaced {
            assert_eq!(std::fs::read(store.data_path("/moved", 3)).unwrap(), b"");
        } else {
            // Others (tmpfs, XFS) allow more than were made here.
            let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: a NUL-terminated path and a writable statfs.
            assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
            assert_ne!(st.f_type, libc::EXT4_SUPER_MAGIC, "ext4 gave 70,000 names");
        }
        assert_eq!(store.usage().1, 0);
    }

    #[test]
    fn dead_writers_leftovers_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (mine, _) = store.temp_file().unwrap();
        let out = store.private_file("out.txt").unwrap();
        std::fs::write(&out, b"x").unwrap();
        // A pid no process has (above the kernel's pid limit).
        let dead = store.tmp.join("4194305-0-1");
        std::fs::write(&dead, b"left").unwrap();
        std::fs::create_dir(store.tmp.join("4194305-1-2")).unwrap();
        std::fs::write(store.tmp.join("stray"), b"?").unwrap();
        assert_eq!(store.sweep_dead_writers(), 3);
        assert!(mine.exists() && out.exists() && !dead.exists());
        store.discard(&out);
        assert!(!out.parent().unwrap().exists());
    }
}
