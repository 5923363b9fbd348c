//! The FUSE file system: kernel requests answered by a Locus client of one
//! node, with the client library's semantics (a file is written locally and
//! published when its opener closes it; a remote file is fetched whole on
//! open, then read locally; a second writer gets `EBUSY`).

mod writes;

use crate::dir_attrs::DirAttrs;
use crate::handles::{Backed, Handles, Open, Reading};
use crate::hold::{Hold, Read};
use crate::inodes::{Inodes, ROOT};
use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr,
    ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use locus_fs::path::join;
use locus_fs::{now_ns, Client};
use locus_proto::fs::{Kind, Record};
use locus_proto::FsError;
use std::ffi::OsStr;
use std::future::Future;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use writes::{touched, Next};

/// How long the kernel may trust a name it looked up, and what it knows of
/// an inode. An inode is one version, whose size and bytes never change
/// (this mount's own writes and `setattr`s reach the kernel through their
/// replies), so only names can go stale: a name another node gave a new
/// version is seen by `stat` within this time, and at once by `open`, which
/// checks the version and has the kernel look the name up again.
const TTL: Duration = Duration::from_secs(1);
/// Largest write request; also the block size `stat` reports, so tools
/// like `cp` copy in pieces this large.
const MAX_WRITE: u32 = 1 << 20;

/// The FUSE file system of a mount: the kernel's requests answered with one
/// client.
pub struct LocusFs {
    client: Client,
    rt: tokio::runtime::Runtime,
    inodes: Mutex<Inodes>,
    handles: Mutex<Handles>,
    dir_attrs: Mutex<DirAttrs>,
    /// Directories this mount made that have had no name made in them
    /// since: the first file made in one asks for it to be lent.
    made_empty: Mutex<std::collections::HashSet<String>>,
    /// Directory listings in progress, by handle: taken whole at `opendir`.
    listings: Mutex<std::collections::HashMap<u64, Vec<(String, FileType)>>>,
    next_dir: std::sync::atomic::AtomicU64,
    passthrough: AtomicBool,
    /// While a task runs, closed files wait for its end.
    hold: Hold,
    uid: u32,
    gid: u32,
}

/// Logs a failure worth knowing about and gives its errno.
fn failed(op: &str, e: &FsError) -> Errno {
    use locus_proto::Errno as E;
    if matches!(e.code, E::EIO | E::ENOSPC) {
        tracing::warn!("{op}: {e}");
    }
    Errno::from_i32(e.code.raw())
}

fn io_errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn time(ns: i64) -> SystemTime {
    if ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        UNIX_EPOCH
    }
}

fn ns_of(t: TimeOrNow) -> i64 {
    match t {
        TimeOrNow::Now => now_ns(),
        TimeOrNow::SpecificTime(t) => t
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0),
    }
}

fn kind(k: Kind) -> FileType {
    match k {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
    }
}

impl LocusFs {
    /// A mount's file system, answering the kernel with `client`.
    pub fn new(client: Client) -> std::io::Result<LocusFs> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        // SAFETY: getuid/getgid have no preconditions and cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(LocusFs {
            hold: Hold::new(client.clone()),
            client,
            rt,
            inodes: Mutex::default(),
            handles: Mutex::default(),
            dir_attrs: Mutex::new(DirAttrs::new(TTL)),
            made_empty: Mutex::default(),
            listings: Mutex::default(),
            next_dir: Default::default(),
            passthrough: AtomicBool::new(false),
            uid,
            gid,
        })
    }

    /// The hold a task runner uses to make a task's writes all-or-nothing.
    pub fn hold(&self) -> Hold {
        self.hold.clone()
    }

    fn run<T>(&self, f: impl Future<Output = T>) -> T {
        self.rt.block_on(f)
    }

    fn path(&self, ino: INodeNo) -> Result<String, Errno> {
        let t = self.inodes.lock().expect("inodes");
        t.path(ino.0).map(str::to_string).ok_or(Errno::ESTALE)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<String, Errno> {
        let name = name.to_str().ok_or(Errno::EINVAL)?;
        Ok(join(&self.path(parent)?, name))
    }

    fn attr(&self, ino: u64, rec: &Record) -> FileAttr {
        let t = time(rec.mtime_ns);
        FileAttr {
            ino: INodeNo(ino),
            size: rec.size,
            blocks: rec.size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: kind(rec.kind),
            perm: (rec.mode & 0o7777) as u16,
            nlink: if rec.kind == Kind::Dir { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: MAX_WRITE,
            flags: 0,
        }
    }

    /// The record of `path` as this mount's programs see it: a file being
    /// written here has the size written so far.
    fn stat(&self, ino: u64, path: &str) -> Result<Record, Errno> {
        let rec = match self.hold.known(path) {
            Some(rec) => rec,
            None => self
                .run(self.client.stat(path))
                .map_err(|e| failed("stat", &e))?,
        };
        self.sized(ino, path, rec)
    }

    /// `rec` with the size written so far (and the modification time set,
    /// applied once published) if a program here writes `ino`, or as the
    /// running task wrote `path`.
    fn sized(&self, ino: u64, path: &str, mut rec: Record) -> Result<Record, Errno> {
        let writing = self.handles.lock().expect("handles").writer_of(ino);
        if let Some(h) = writing {
            if let Open::Write(w) = &mut *h.lock().expect("handle") {
                rec.mtime_ns = w.mtime_ns.unwrap_or(rec.mtime_ns);
                if let Some(writer) = w.writer.as_ref() {
                    rec.size = writer.written().metadata().map_err(|e| io_errno(&e))?.len();
                    return Ok(rec);
                }
            }
        }
        if let Some(held) = self.hold.size(path) {
            let (size, mtime_ns) = held.map_err(|e| io_errno(&e))?;
            rec.size = size;
            rec.mtime_ns = mtime_ns.unwrap_or(rec.mtime_ns);
        }
        Ok(rec)
    }

    /// Notes what the daemon said of `ino` (kept if it is a directory).
    fn learned(&self, ino: u64, rec: &Record) {
        let mut dirs = self.dir_attrs.lock().expect("dir attrs");
        dirs.learned(ino, rec, Instant::now());
    }

    fn entry(&self, path: &str, rec: &Record, reply: ReplyEntry) {
        let ino = self
            .inodes
            .lock()
            .expect("inodes")
            .looked_up(path, rec.stamp);
        self.learned(ino, rec);
        reply.entry(&TTL, &self.attr(ino, rec), Generation(0));
    }

    fn open_reading(&self, ino: u64, path: &str, reply: ReplyOpen) {
        if let Some(held) = self.hold.read(path) {
            // What the running task wrote, read past the kernel's cache.
            let open = match held {
                Ok(file) => Open::Read(Reading {
                    file,
                    backing: None,
                }),
                Err(e) => return reply.error(io_errno(&e)),
            };
            let fh = self.handles.lock().expect("handles").insert(ino, open);
            return reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO);
        }
        let known = self.hold.known(path);
        let (file, copy) = match self.run(self.client.open_local(path, known.as_ref())) {
            Ok(opened) => opened,
            Err(e) => return reply.error(failed("open", &e)),
        };
        self.hold.read_from(Read {
            path: path.to_string(),
            stamp: copy.stamp,
            size: copy.size,
            sum: copy.sum,
            fetched: copy.fetched,
        });
        // Rewritten since the kernel looked the name up (on another node, or
        // by a task whose held writes were published): `ino` stands for the
        // version before. Unless a program here still has it open, it stands
        // for the current one from now on, read past what the kernel kept of
        // the other; else the kernel asks again by name (`ESTALE`) and gets
        // the current version's number.
        let rebound = !self.is_version(ino, copy.stamp);
        let mut handles = self.handles.lock().expect("handles");
        if rebound {
            if handles.is_open(ino) {
                return reply.error(Errno::ESTALE);
            }
            self.inodes
                .lock()
                .expect("inodes")
                .published(ino, copy.stamp);
        }
        let want = Backed::Version(copy.stamp);
        let backing = match self.pass_through(&mut handles, ino, want, || reply.open_backing(&file))
        {
            Ok(b) => b,
            Err(e) => return reply.error(e),
        };
        // Without passthrough the kernel reads through its cache: pages of
        // a version stay right (keep them), unless a program here writes
        // the next version through them or they were another version's
        // (then read past them).
        let past_cache = rebound || handles.writer_of(ino).is_some();
        let flags = match backing.is_none() && past_cache {
            true => FopenFlags::FOPEN_DIRECT_IO,
            false => FopenFlags::FOPEN_KEEP_CACHE,
        };
        let open = Open::Read(Reading {
            file,
            backing: backing.clone(),
        });
        let fh = FileHandle(handles.insert(ino, open));
        match backing {
            Some(b) => reply.opened_passthrough(fh, FopenFlags::empty(), &b),
            None => reply.opened(fh, flags),
        }
    }

    /// Whether `ino` stands for version `stamp` (or is being written here).
    fn is_version(&self, ino: u64, stamp: u64) -> bool {
        let bound = self.inodes.lock().expect("inodes").stamp(ino);
        bound == Some(stamp)
            || self
                .handles
                .lock()
                .expect("handles")
                .writer_of(ino)
                .is_some()
    }

    fn handle(&self, fh: FileHandle) -> Result<crate::handles::Handle, Errno> {
        let h = self.handles.lock().expect("handles").get(fh.0);
        h.ok_or(Errno::EBADF)
    }

    fn list(&self, dir: &str) -> Result<Vec<(String, FileType)>, Errno> {
        let entries = self
            .run(self.client.readdir(dir))
            .map_err(|e| failed("readdir", &e))?;
        Ok(entries
            .into_iter()
            .map(|e| (e.name, kind(e.kind)))
            .collect())
    }

    /// `unlink` (a file) or `rmdir` (a directory) of `name` in `parent`.
    fn remove(&self, parent: INodeNo, name: &OsStr, kind: Kind) -> Result<(), Errno> {
        let path = self.child(parent, name)?;
        // What the running task wrote there goes first (a file it made
        // goes with it).
        let held = self.hold.take(&path).map(|h| self.abort(h.writer));
        let removed = match kind {
            Kind::File => self.run(self.client.unlink(&path)),
            Kind::Dir => self.run(self.client.rmdir(&path)),
        };
        match removed {
            Err(e) if held.is_some() && e.code == locus_proto::Errno::ENOENT => {}
            removed => removed.map_err(|e| failed("remove", &e))?,
        }
        self.inodes.lock().expect("inodes").removed(&path);
        Ok(())
    }
}

impl Filesystem for LocusFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_max_write(MAX_WRITE);
        // As far ahead as the kernel allows (it caps this).
        if let Err(most) = config.set_max_readahead(MAX_WRITE) {
            let _ = config.set_max_readahead(most);
        }
        let _ = config.add_capabilities(
            InitFlags::FUSE_ATOMIC_O_TRUNC
                | InitFlags::FUSE_AUTO_INVAL_DATA
                | InitFlags::FUSE_BIG_WRITES
                | InitFlags::FUSE_PARALLEL_DIROPS
                | InitFlags::FUSE_MAX_PAGES,
        );
        // The kernel reads and writes local files itself (passthrough);
        // where it cannot, it caches writes instead (the two exclude each
        // other). Only root may give the kernel files to pass through to
        // (CAP_SYS_ADMIN of the host, not of a user namespace).
        if crate::is_root()
            && config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
            && config.set_max_stack_depth(1).is_ok()
        {
            self.passthrough.store(true, Ordering::Relaxed);
        } else {
            let _ = config.add_capabilities(InitFlags::FUSE_WRITEBACK_CACHE);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let path = match self.child(parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let known = self.inodes.lock().expect("inodes").listed(&path);
        // A directory lent here exists (it is recalled before it can go),
        // with attributes as fresh as `getattr` trusts them: `mkdir` of it,
        // which makes the kernel ask again (as before each file fs_mark
        // makes there), costs no round trip.
        if self.client.is_lent(&path) {
            let fresh = self
                .dir_attrs
                .lock()
                .expect("dir attrs")
                .fresh(known, Instant::now());
            if let Some((rec, left)) = fresh {
                let ino = self
                    .inodes
                    .lock()
                    .expect("inodes")
                    .looked_up(&path, rec.stamp);
                return reply.entry(&left, &self.attr(ino, &rec), Generation(0));
            }
        }
        match self.stat(known, &path) {
            Ok(rec) => self.entry(&path, &rec, reply),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.inodes.lock().expect("inodes").forget(ino.0, nlookup);
    }

    /// `access(2)`, asked only of root's mounts (see `config`): root may
    /// read and write anything, and run a directory or a file with an
    /// execute bit, as the kernel's own check would say.
    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        match self.path(ino).and_then(|p| self.stat(ino.0, &p)) {
            Ok(rec)
                if mask.contains(AccessFlags::X_OK)
                    && rec.kind == Kind::File
                    && rec.mode & 0o111 == 0 =>
            {
                reply.error(Errno::EACCES);
            }
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let known = self
            .dir_attrs
            .lock()
            .expect("dir attrs")
            .fresh(ino.0, Instant::now());
        if let Some((rec, left)) = known {
            return reply.attr(&left, &self.attr(ino.0, &rec));
        }
        let attr = self.path(ino).and_then(|p| {
            let mut rec = self.stat(ino.0, &p)?;
            self.learned(ino.0, &rec);
            // An open file is the version it opened; a name is the current.
            let opened = match fh.and_then(|fh| self.handle(fh).ok()) {
                Some(h) => match &*h.lock().expect("handle") {
                    Open::Read(r) => Some(r.file.metadata().map_err(|e| io_errno(&e))?.len()),
                    Open::Write(_) => None,
                },
                None => None,
            };
            if let Some(size) = opened {
                rec.size = size;
            } else if rec.kind == Kind::File
                && !self.is_version(ino.0, rec.stamp)
                && self.hold.size(&p).is_none()
            {
                return Err(Errno::ESTALE);
            }
            Ok(self.attr(ino.0, &rec))
        });
        match attr {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let result = (|| {
            // Owners are not recorded: files belong to the mounting user.
            if uid.is_some_and(|u| u != self.uid) || gid.is_some_and(|g| g != self.gid) {
                return Err(Errno::EPERM);
            }
            let path = self.path(ino)?;
            self.dir_attrs.lock().expect("dir attrs").changed(ino.0);
            if let Some(size) = size {
                self.truncate(ino.0, &path, size)?;
            }
            let mut mtime = mtime.map(ns_of);
            if mtime.is_some() {
                // A file open for writing here is stamped when published:
                // its time is set after that.
                let writing = self.handles.lock().expect("handles").writer_of(ino.0);
                if let Some(h) = writing {
                    if let Open::Write(w) = &mut *h.lock().expect("handle") {
                        w.mtime_ns = mtime.take();
                    }
                }
            }
            if mtime.is_some_and(|t| self.hold.set_mtime(&path, t)) {
                mtime = None;
            }
            let rec = if mode.is_some() || mtime.is_some() {
                let set = self.run(self.client.set_attr(&path, mode, mtime));
                self.sized(ino.0, &path, set.map_err(|e| failed("setattr", &e))?)?
            } else {
                self.stat(ino.0, &path)?
            };
            Ok(self.attr(ino.0, &rec))
        })();
        match result {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let result = (|| {
            let path = self.child(parent, name)?;
            let mode = mode & !umask & 0o7777;
            self.run(self.client.mkdir_with_mode(&path, mode))
                .map_err(|e| failed("mkdir", &e))?;
            let mut made = self.made_empty.lock().expect("made dirs");
            if let Ok((above, _)) = locus_fs::path::split(&path) {
                made.remove(above);
            }
            made.insert(path.clone());
            Ok((path, Record::new(Kind::Dir, mode, now_ns())))
        })();
        match result {
            Ok((path, rec)) => self.entry(&path, &rec, reply),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.remove(parent, name, Kind::File) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.remove(parent, name, Kind::Dir) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _link_name: &OsStr,
        _target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        // Records hold files and directories only.
        reply.error(Errno::EPERM);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: fuser::ReplyXattr,
    ) {
        // Records hold no extended attributes: none is ever set.
        reply.error(Errno::NO_XATTR);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: fuser::ReplyXattr) {
        match size {
            0 => reply.size(0),
            _ => reply.data(&[]),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOTSUP);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::NO_XATTR);
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        // Files are made by `create`; records hold no special files.
        reply.error(Errno::EPERM);
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        // As a disk file answers: not a terminal (`isatty` asks on every
        // open by Python), no reflinks (`cp` falls back to copying).
        reply.error(Errno::ENOTTY);
    }

    fn link(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _newparent: INodeNo,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        // One name per file (tools such as git fall back to rename).
        reply.error(Errno::EPERM);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            let (from, to) = (self.child(parent, name)?, self.child(newparent, newname)?);
            // A file the running task wrote moves with its bytes (a rename
            // is not held): published first. One it wrote at the new name
            // is replaced.
            if let Some(h) = self.hold.take(&from) {
                let published = self.run(h.publish(&self.client));
                published.map_err(|e| failed("rename", &e))?;
            }
            if flags.is_empty() {
                if let Some(h) = self.hold.take(&to) {
                    self.abort(h.writer);
                }
            }
            let renamed = if flags == RenameFlags::RENAME_NOREPLACE {
                self.run(self.client.rename_noreplace(&from, &to))
            } else if flags.is_empty() {
                self.run(self.client.rename(&from, &to))
            } else {
                return Err(Errno::EINVAL);
            };
            renamed.map_err(|e| failed("rename", &e))?;
            self.inodes.lock().expect("inodes").renamed(&from, &to);
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let path = match self.path(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        if flags.acc_mode() == OpenAccMode::O_RDONLY {
            return self.open_reading(ino.0, &path, reply);
        }
        let truncate = flags.0 & libc::O_TRUNC != 0;
        let next = match self.next_writer(&path, truncate) {
            Ok(w) => w,
            Err(e) => return reply.error(failed("open", &e)),
        };
        match self.open_writing(ino.0, req, next, truncate, |f| reply.open_backing(f)) {
            Ok((fh, Some(b))) => reply.opened_passthrough(FileHandle(fh), FopenFlags::empty(), &b),
            Ok((fh, None)) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let result = (|| {
            let path = self.child(parent, name)?;
            self.lend_if_made_empty(&path);
            // The mode asked for is the new file's; an existing file keeps its own.
            let mode = mode & !umask & 0o7777;
            let (next, rec) = match self.run(self.client.create_with_mode(&path, mode)) {
                Ok(writer) => (Next::new(writer), Record::new(Kind::File, mode, now_ns())),
                // Made by another node since the kernel looked (or by
                // the running task).
                Err(e) if e.code == locus_proto::Errno::EEXIST && flags & libc::O_EXCL == 0 => {
                    let truncate = flags & libc::O_TRUNC != 0;
                    let next = self.next_writer(&path, truncate);
                    let next = next.map_err(|e| failed("create", &e))?;
                    let rec = match self.run(self.client.stat(&path)) {
                        Ok(rec) => rec,
                        Err(e) => {
                            self.give_back(next);
                            return Err(failed("create", &e));
                        }
                    };
                    (next, rec)
                }
                Err(e) => return Err(failed("create", &e)),
            };
            let ino = self
                .inodes
                .lock()
                .expect("inodes")
                .looked_up(&path, rec.stamp);
            let (fh, backing) =
                self.open_writing(ino, req, next, true, |f| reply.open_backing(f))?;
            Ok((self.attr(ino, &rec), fh, backing))
        })();
        let (flags, generation) = (FopenFlags::empty(), Generation(0));
        match result {
            Ok((attr, fh, Some(b))) => {
                reply.created_passthrough(&TTL, &attr, generation, FileHandle(fh), flags, &b);
            }
            Ok((attr, fh, None)) => reply.created(&TTL, &attr, generation, FileHandle(fh), flags),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = (|| {
            let h = self.handle(fh)?;
            let mut open = h.lock().expect("handle");
            let mut buf = vec![0u8; size as usize];
            let n = match &mut *open {
                Open::Read(r) => r.file.read_at(&mut buf, offset),
                Open::Write(w) => {
                    let writer = self.writer(w)?;
                    writer.file().read_at(&mut buf, offset)
                }
            }
            .map_err(|e| io_errno(&e))?;
            buf.truncate(n);
            Ok(buf)
        })();
        match result {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = (|| {
            let h = self.handle(fh)?;
            let mut open = h.lock().expect("handle");
            let Open::Write(w) = &mut *open else {
                return Err(Errno::EBADF);
            };
            let writer = self.writer(w)?;
            writer
                .file()
                .write_all_at(data, offset)
                .map_err(|e| io_errno(&e))?;
            w.written = true;
            Ok(data.len() as u32)
        })();
        match result {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            let h = self.handle(fh)?;
            let mut open = h.lock().expect("handle");
            match &mut *open {
                // Close-to-open: the opener's close publishes what it wrote,
                // so the next open anywhere sees it. (A shell closes the
                // descriptor it opened once it has duplicated it: nothing
                // written yet, nothing published.)
                Open::Write(w) if w.opener == req.pid() && touched(w) => self.finish_version(w),
                // Only a time set (`touch` of an existing file): set when
                // its opener closes it, as a write is published (the
                // kernel's release comes after the close has returned).
                Open::Write(w) if w.opener == req.pid() && !w.fresh => self.set_time(w),
                _ => Ok(()),
            }
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let Some(h) = self.handles.lock().expect("handles").remove(fh.0) else {
            return reply.error(Errno::EBADF);
        };
        let mut open = h.lock().expect("handle");
        if let Open::Write(w) = &mut *open {
            let ended = if touched(w) || (w.fresh && self.hold.active()) {
                self.finish_version(w)
            } else {
                // Nothing written: a new file stays empty, a truncated one
                // is published, any other is as it was.
                match w.writer.take() {
                    Some(writer) if w.fresh => self
                        .close(writer, true)
                        .map(|rec| self.bind_version(w.ino, rec))
                        .map_err(|e| failed("closing", &e)),
                    Some(writer) => {
                        self.abort(writer);
                        Ok(())
                    }
                    None => Ok(()),
                }
                // A modification time set since it was published.
                .and_then(|()| self.publish(w))
            };
            if let Err(e) = ended {
                tracing::warn!("{}: at its last close: {e:?}", w.path);
            }
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            let h = self.handle(fh)?;
            let mut open = h.lock().expect("handle");
            if let Open::Write(w) = &mut *open {
                let Some(writer) = w.writer.as_mut() else {
                    return Ok(());
                };
                let f = writer.file();
                if datasync {
                    f.sync_data()
                } else {
                    f.sync_all()
                }
                .map_err(|e| io_errno(&e))?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Names are kept by the daemons, which answer each change once it
        // is committed as the cluster's durability says; the files closed
        // in a directory lent to this mount, once they are published.
        let settled = self.path(ino).and_then(|dir| {
            let settled = self.run(self.client.settle_dir(&dir));
            settled.map_err(|e| failed("fsync", &e))
        });
        match settled {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            let h = self.handle(fh)?;
            let mut open = h.lock().expect("handle");
            let Open::Write(w) = &mut *open else {
                return Err(Errno::EBADF);
            };
            let file = self.writer(w)?.file();
            let (offset, length) = (offset as libc::off_t, length as libc::off_t);
            // SAFETY: a valid descriptor (the writer's file) and plain integers.
            if unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, length) } != 0 {
                return Err(io_errno(&std::io::Error::last_os_error()));
            }
            w.written = true;
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.path(ino).and_then(|p| self.list(&p)) {
            Ok(entries) => {
                let fh = self.next_dir.fetch_add(1, Ordering::Relaxed);
                self.listings.lock().expect("listings").insert(fh, entries);
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dir = match self.path(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let listings = self.listings.lock().expect("listings");
        let Some(entries) = listings.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        let inodes = self.inodes.lock().expect("inodes");
        // Offsets: 1 and 2 after "." and "..", then 3 + i after entry i.
        let dots = [(ino.0, "."), (ROOT, "..")];
        for (i, (n, name)) in dots.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*n), i as u64 + 1, FileType::Directory, name) {
                return reply.ok();
            }
        }
        let start = (offset as usize).saturating_sub(2);
        for (i, (name, k)) in entries.iter().enumerate().skip(start) {
            let n = inodes.listed(&join(&dir, name));
            if reply.add(INodeNo(n), i as u64 + 3, *k, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.listings.lock().expect("listings").remove(&fh.0);
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // Space is each node's own; this mount's node is what a program
        // writing here fills.
        match self.run(self.client.status(self.client.node())) {
            Ok(s) => {
                let block = 4096u64;
                reply.statfs(
                    s.total_bytes / block,
                    s.free_bytes / block,
                    s.free_bytes / block,
                    s.records,
                    u64::MAX / 2,
                    block as u32,
                    255,
                    block as u32,
                );
            }
            Err(e) => reply.error(failed("statfs", &e)),
        }
    }
}
