//! Open files of the mount: what each file handle reads or writes.

use fuser::BackingId;
use locus_fs::Writer;
use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, Weak};

/// A file opened for reading: one closed version, local to this node.
pub(crate) struct Reading {
    pub file: File,
    /// Held while the kernel reads the version's store file itself.
    pub backing: Option<Arc<BackingId>>,
}

/// A file opened for writing: bytes go to the writer's private file and are
/// published as the next version when the opener closes it.
pub(crate) struct Writing {
    pub path: String,
    /// Its inode, which stands for each version it publishes.
    pub ino: u64,
    /// `None` once published; a later write opens the next version.
    pub writer: Option<Writer>,
    /// The writer's private file (once published, the version's file): the
    /// kernel writes it itself under passthrough.
    pub file: File,
    /// `file`'s size and modification time when opened or last published.
    pub seen: (u64, i64),
    /// Held while the kernel writes `file` itself.
    pub backing: Option<Arc<BackingId>>,
    /// Bytes or size changed through this process since the last publication.
    pub written: bool,
    /// Created or truncated by its open: published when released even if
    /// nothing was written.
    pub fresh: bool,
    /// The process that opened it: its `close` publishes (others sharing the
    /// descriptor, such as a shell's children, do not).
    pub opener: u32,
    /// A modification time set while open, applied after publishing (the
    /// commit stamps the time of closing).
    pub mtime_ns: Option<i64>,
}

pub(crate) enum Open {
    Read(Reading),
    Write(Box<Writing>),
}

pub(crate) type Handle = Arc<Mutex<Open>>;

#[derive(Default)]
pub(crate) struct Handles {
    next: u64,
    open: HashMap<u64, (u64, Handle)>,
    /// Open write handles, per inode.
    writers: HashMap<u64, Vec<u64>>,
    /// The file the kernel passes an inode's reads and writes through to,
    /// while any such open lasts (one per inode, as the kernel requires).
    backings: HashMap<u64, (Backed, Weak<BackingId>)>,
}

/// What an inode's passthrough backing file is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Backed {
    /// A closed version's store file.
    Version(u64),
    /// A writer's private file.
    Writer,
}

impl Handles {
    pub(crate) fn insert(&mut self, ino: u64, open: Open) -> u64 {
        self.next += 1;
        let fh = self.next;
        if matches!(open, Open::Write(_)) {
            self.writers.entry(ino).or_default().push(fh);
        }
        self.open.insert(fh, (ino, Arc::new(Mutex::new(open))));
        fh
    }

    pub(crate) fn get(&self, fh: u64) -> Option<Handle> {
        self.open.get(&fh).map(|(_, h)| h.clone())
    }

    pub(crate) fn remove(&mut self, fh: u64) -> Option<Handle> {
        let (ino, h) = self.open.remove(&fh)?;
        let last = match &*h.lock().expect("handle") {
            Open::Read(r) => r
                .backing
                .as_ref()
                .is_some_and(|b| Arc::strong_count(b) == 1),
            Open::Write(w) => w
                .backing
                .as_ref()
                .is_some_and(|b| Arc::strong_count(b) == 1),
        };
        if last {
            self.backings.remove(&ino);
        }
        if let Some(w) = self.writers.get_mut(&ino) {
            w.retain(|&x| x != fh);
            if w.is_empty() {
                self.writers.remove(&ino);
            }
        }
        Some(h)
    }

    /// Whether a program here has `ino` open.
    pub(crate) fn is_open(&self, ino: u64) -> bool {
        self.open.values().any(|&(i, _)| i == ino)
    }

    /// A handle writing `ino` in this mount, if any (its size is the
    /// file's size as this mount's programs see it).
    pub(crate) fn writer_of(&self, ino: u64) -> Option<Handle> {
        let fh = *self.writers.get(&ino)?.first()?;
        self.get(fh)
    }

    /// How an open needing `want` as `ino`'s backing may be passed through:
    /// with the live backing (`Some`), a new one (`None`), or not at all
    /// (another file backs the inode now).
    #[allow(clippy::result_unit_err)]
    pub(crate) fn backing_for(&self, ino: u64, want: Backed) -> Result<Option<Arc<BackingId>>, ()> {
        match self.backings.get(&ino) {
            Some((had, b)) => match b.upgrade() {
                Some(b) if *had == want => Ok(Some(b)),
                Some(_) => Err(()),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    pub(crate) fn set_backing(&mut self, ino: u64, what: Backed, b: &Arc<BackingId>) {
        self.backings.insert(ino, (what, Arc::downgrade(b)));
    }

    /// The writer backing `ino` published version `stamp`: its file is that
    /// version's now, which readers may share.
    pub(crate) fn published(&mut self, ino: u64, stamp: u64) {
        if let Some((what @ Backed::Writer, _)) = self.backings.get_mut(&ino) {
            *what = Backed::Version(stamp);
        }
    }
}
