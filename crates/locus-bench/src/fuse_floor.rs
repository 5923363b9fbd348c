//! The floor under any FUSE file system's creates on this machine: names
//! kept in memory and every request answered at once, mounted with the
//! Locus mount's options. What a create through it costs is the kernel's
//! round trips alone (lookup, create, flush, release, and the parent's
//! attributes that permission checks ask for).

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, ReplyAttr, ReplyCreate, ReplyEmpty, ReplyEntry, Request,
};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// As long as the Locus mount lets the kernel trust what it was told.
const TTL: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Names {
    by_name: HashMap<(u64, OsString), u64>,
    kinds: HashMap<u64, FileType>,
    next: u64,
}

struct Floor {
    names: Mutex<Names>,
}

fn attr(ino: u64, kind: FileType) -> FileAttr {
    let t = SystemTime::now();
    FileAttr {
        ino: INodeNo(ino),
        size: 0,
        blocks: 0,
        atime: t,
        mtime: t,
        ctime: t,
        crtime: t,
        kind,
        perm: if kind == FileType::Directory {
            0o755
        } else {
            0o644
        },
        nlink: 1,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl Floor {
    fn add(&self, parent: INodeNo, name: &OsStr, kind: FileType) -> Result<FileAttr, Errno> {
        let mut n = self.names.lock().expect("names");
        let key = (parent.0, name.to_os_string());
        if n.by_name.contains_key(&key) {
            return Err(Errno::EEXIST);
        }
        n.next += 1;
        let ino = n.next;
        n.by_name.insert(key, ino);
        n.kinds.insert(ino, kind);
        Ok(attr(ino, kind))
    }
}

impl Filesystem for Floor {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let n = self.names.lock().expect("names");
        match n.by_name.get(&(parent.0, name.to_os_string())) {
            Some(&ino) => reply.entry(&TTL, &attr(ino, n.kinds[&ino]), Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let kind = self.names.lock().expect("names").kinds.get(&ino.0).copied();
        match kind {
            Some(k) => reply.attr(&TTL, &attr(ino.0, k)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        match self.add(parent, name, FileType::Directory) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        match self.add(parent, name, FileType::RegularFile) {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&self, _: &Request, _: INodeNo, _: FileHandle, _: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }
}

/// The floor file system mounted at `point` (an empty directory) until the
/// session is dropped.
pub(crate) fn mount(point: &Path) -> std::io::Result<fuser::BackgroundSession> {
    let mut names = Names {
        next: 1,
        ..Names::default()
    };
    names.kinds.insert(1, FileType::Directory);
    let floor = Floor {
        names: Mutex::new(names),
    };
    fuser::spawn_mount(floor, point, &locus_mount::config("locus:floor"))
}
