//! Open files of the mount: what each file handle reads or writes.

use fuser::BackingId;
use locus_fs::Writer;
use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, Weak};

/// A file opened for reading: one closed version, local to this node.
pub struct Reading {
    pub file: File,
    /// Held while the kernel reads the version's store file itself.
    pub backing: Option<Arc<BackingId>>,
}

/// A file opened for writing: bytes go to the writer's private file and are
/// published as the next version when the opener closes it.
pub struct Writing {
    pub path: String,
    /// Its inode, which stands for each version it publishes.
    pub ino: u64,
    /// `None` once published; a later write opens the next version.
    pub writer: Option<Writer>,
    /// Bytes or size changed since the last publication.
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

pub enum Open {
    Read(Reading),
    Write(Box<Writing>),
}

pub type Handle = Arc<Mutex<Open>>;

#[derive(Default)]
pub struct Handles {
    next: u64,
    open: HashMap<u64, (u64, Handle)>,
    /// Open write handles, per inode.
    writers: HashMap<u64, Vec<u64>>,
    /// The store file the kernel passes reads of an inode through to, while
    /// any such open lasts (one per inode, as the kernel requires).
    backings: HashMap<u64, Weak<BackingId>>,
}

impl Handles {
    pub fn insert(&mut self, ino: u64, open: Open) -> u64 {
        self.next += 1;
        let fh = self.next;
        if matches!(open, Open::Write(_)) {
            self.writers.entry(ino).or_default().push(fh);
        }
        self.open.insert(fh, (ino, Arc::new(Mutex::new(open))));
        fh
    }

    pub fn get(&self, fh: u64) -> Option<Handle> {
        self.open.get(&fh).map(|(_, h)| h.clone())
    }

    pub fn remove(&mut self, fh: u64) -> Option<Handle> {
        let (ino, h) = self.open.remove(&fh)?;
        if let Open::Read(Reading {
            backing: Some(b), ..
        }) = &*h.lock().expect("handle")
        {
            if Arc::strong_count(b) == 1 {
                self.backings.remove(&ino);
            }
        }
        if let Some(w) = self.writers.get_mut(&ino) {
            w.retain(|&x| x != fh);
            if w.is_empty() {
                self.writers.remove(&ino);
            }
        }
        Some(h)
    }

    /// A handle writing `ino` in this mount, if any (its size is the
    /// file's size as this mount's programs see it).
    pub fn writer_of(&self, ino: u64) -> Option<Handle> {
        let fh = *self.writers.get(&ino)?.first()?;
        self.get(fh)
    }

    /// The live passthrough backing of `ino`, if reads of it are passed
    /// through now.
    pub fn backing(&self, ino: u64) -> Option<Arc<BackingId>> {
        self.backings.get(&ino)?.upgrade()
    }

    pub fn set_backing(&mut self, ino: u64, b: &Arc<BackingId>) {
        self.backings.insert(ino, Arc::downgrade(b));
    }
}
