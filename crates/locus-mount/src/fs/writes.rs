//! The write side of the mount: a version's life from the open that starts
//! it to its publication (or, while a task holds the mount's writes, to
//! the task's end), and which file backs an inode for the kernel.

use super::{failed, io_errno, LocusFs};
use crate::handles::{Backed, Handles, Open, Writing};
use crate::hold::Held;
use fuser::{Errno, Request};
use locus_fs::Writer;
use locus_proto::fs::Record;
use locus_proto::FsError;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A writer opened for a program here.
pub(super) struct Next {
    pub writer: Writer,
    /// Taken back from the task's hold.
    pub resumed: bool,
    /// Holding bytes the task wrote before.
    pub wrote: bool,
    /// A modification time the task set for it.
    pub mtime_ns: Option<i64>,
}

impl Next {
    pub(super) fn new(writer: Writer) -> Next {
        Next {
            writer,
            resumed: false,
            wrote: false,
            mtime_ns: None,
        }
    }
}

/// A file's size and modification time, to tell whether it was written.
fn seen(f: &std::fs::File) -> (u64, i64) {
    use std::os::unix::fs::MetadataExt;
    f.metadata()
        .map(|m| (m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))
        .unwrap_or_default()
}

/// Whether `w`'s file changed since it was opened or last published (by
/// this process's writes, or by the kernel's under passthrough).
pub(super) fn touched(w: &Writing) -> bool {
    w.written || seen(&w.file) != w.seen
}

impl LocusFs {
    /// Publishes what `w` wrote as the file's next version, then sets a
    /// modification time given while it was open.
    pub(super) fn publish(&self, w: &mut Writing) -> Result<(), Errno> {
        self.reopen_late(w)?;
        if let Some(writer) = w.writer.take() {
            let rec = self
                .close(writer, false)
                .map_err(|e| failed("publishing", &e))?;
            self.bind_version(w.ino, rec);
        }
        (w.written, w.fresh, w.seen) = (false, false, seen(&w.file));
        self.set_time(w)
    }

    /// Sets the modification time given while `w` was open, if any.
    pub(super) fn set_time(&self, w: &mut Writing) -> Result<(), Errno> {
        if let Some(t) = w.mtime_ns.take() {
            self.run(self.client.set_attr(&w.path, None, Some(t)))
                .map_err(|e| failed("setting the time", &e))?;
        }
        Ok(())
    }

    /// Closes `writer`: a new file of a lent directory at once (published
    /// in the background), any other as usual (`unwritten`: it wrote
    /// nothing). The version it published, if any.
    pub(super) fn close(&self, writer: Writer, unwritten: bool) -> Result<Option<Record>, FsError> {
        match self.run(writer.close_later()) {
            Ok(rec) => Ok(Some(rec)),
            Err(writer) if unwritten => self.run(writer.close_unwritten()).map(|()| None),
            Err(writer) => self.run(writer.close()).map(Some),
        }
    }

    /// `ino`'s pages (or its backing file) are version `rec` now.
    pub(super) fn bind_version(&self, ino: u64, rec: Option<Record>) {
        if let Some(rec) = rec {
            let stamp = rec.stamp;
            self.inodes.lock().expect("inodes").published(ino, stamp);
            self.handles.lock().expect("handles").published(ino, stamp);
        }
    }

    /// Asks for the directory `path` is made in to be lent to this mount,
    /// if the mount made it and nothing was made in it since (the first
    /// file made there): its new files are then made and looked up here.
    pub(super) fn lend_if_made_empty(&self, path: &str) {
        let Ok((dir, _)) = locus_fs::path::split(path) else {
            return;
        };
        if !self.made_empty.lock().expect("made dirs").remove(dir) {
            return;
        }
        if let Err(e) = self.run(self.client.delegate(dir)) {
            tracing::debug!("{dir}: not lent: {e}");
        }
    }

    /// A writer for bytes the kernel wrote into the published file after
    /// publication (a descriptor shared with the opener outlived its
    /// close): what the file holds now is the next version.
    fn reopen_late(&self, w: &mut Writing) -> Result<(), Errno> {
        if w.writer.is_none() && touched(w) {
            let next = self.next_writer(&w.path, false);
            let next = next.map_err(|e| failed("publishing late writes", &e))?;
            w.mtime_ns = w.mtime_ns.or(next.mtime_ns);
            w.writer = Some(next.writer);
        }
        Ok(())
    }

    /// A writer of `path` for a program here: what the running task wrote
    /// to it, taken back from the hold (emptied if `truncate`), else the
    /// published file's next version.
    pub(super) fn next_writer(&self, path: &str, truncate: bool) -> Result<Next, FsError> {
        let Some(mut held) = self.hold.take(path) else {
            return Ok(Next::new(self.run(self.client.open_write(path, truncate))?));
        };
        if truncate {
            if let Err(e) = held.writer.file().set_len(0) {
                self.keep(held);
                return Err(FsError::io(path, &e));
            }
        }
        Ok(Next {
            resumed: true,
            wrote: !held.unwritten && !truncate,
            mtime_ns: held.mtime_ns,
            writer: held.writer,
        })
    }

    /// Gives up `next`, unused: what the task wrote goes back to the hold.
    pub(super) fn give_back(&self, next: Next) {
        if next.resumed {
            self.keep(Held {
                writer: next.writer,
                unwritten: !next.wrote,
                mtime_ns: next.mtime_ns,
            });
        } else {
            self.abort(next.writer);
        }
    }

    /// Keeps `held` for the task's end (a writer it replaces is given up).
    fn keep(&self, held: Held) {
        if let Some(old) = self.hold.keep(held) {
            self.abort(old);
        }
    }

    /// Ends the version `w` wrote: published now, or, while a task holds
    /// the mount's writes, kept for the task's end.
    pub(super) fn finish_version(&self, w: &mut Writing) -> Result<(), Errno> {
        if !self.hold.active() {
            return self.publish(w);
        }
        self.reopen_late(w)?;
        if let Some(writer) = w.writer.take() {
            let (unwritten, mtime_ns) = (!touched(w), w.mtime_ns.take());
            self.keep(Held {
                writer,
                unwritten,
                mtime_ns,
            });
        }
        (w.written, w.fresh, w.seen) = (false, false, seen(&w.file));
        Ok(())
    }

    /// Gives up an unpublished writer (nothing was written).
    pub(super) fn abort(&self, writer: Writer) {
        self.run(writer.abort());
    }

    /// The writer of `w`, opening the next version if the last was published.
    pub(super) fn writer<'a>(&self, w: &'a mut Writing) -> Result<&'a mut Writer, Errno> {
        if w.writer.is_none() {
            let mut next = self
                .next_writer(&w.path, false)
                .map_err(|e| failed("reopening for writing", &e))?;
            w.file = next.writer.file().try_clone().map_err(|e| io_errno(&e))?;
            w.seen = seen(&w.file);
            w.written |= next.wrote;
            w.mtime_ns = w.mtime_ns.or(next.mtime_ns);
            w.writer = Some(next.writer);
        }
        Ok(w.writer.as_mut().expect("just set"))
    }

    /// A write handle of `next` on `ino`, passed through to its private
    /// file where the kernel can (`open_backing` registers it). `fresh`:
    /// created or truncated by this open.
    pub(super) fn open_writing(
        &self,
        ino: u64,
        req: &Request,
        next: Next,
        fresh: bool,
        open_backing: impl FnOnce(&std::fs::File) -> std::io::Result<fuser::BackingId>,
    ) -> Result<(u64, Option<Arc<fuser::BackingId>>), Errno> {
        let mut next = next;
        let file = match next.writer.file().try_clone() {
            Ok(f) => f,
            Err(e) => {
                self.give_back(next);
                return Err(io_errno(&e));
            }
        };
        let mut handles = self.handles.lock().expect("handles");
        let backing =
            match self.pass_through(&mut handles, ino, Backed::Writer, || open_backing(&file)) {
                Ok(b) => b,
                Err(e) => {
                    drop(handles);
                    self.give_back(next);
                    return Err(e);
                }
            };
        let open = Open::Write(Box::new(Writing {
            path: next.writer.path().to_string(),
            ino,
            seen: seen(&file),
            file,
            backing: backing.clone(),
            written: next.wrote,
            // A file the task wrote goes back to the hold at its close.
            fresh: fresh || next.resumed,
            opener: req.pid(),
            mtime_ns: next.mtime_ns,
            writer: Some(next.writer),
        }));
        Ok((handles.insert(ino, open), backing))
    }

    /// The backing for an open of `ino` that needs `what` behind it: the
    /// inode's (shared), a new one, or none where the kernel offers no
    /// passthrough. `ESTALE` when another file backs the inode now: its
    /// number is retired and the kernel looks the name up again, getting a
    /// new inode for this open.
    pub(super) fn pass_through(
        &self,
        handles: &mut Handles,
        ino: u64,
        what: Backed,
        open_backing: impl FnOnce() -> std::io::Result<fuser::BackingId>,
    ) -> Result<Option<Arc<fuser::BackingId>>, Errno> {
        if !self.passthrough.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match handles.backing_for(ino, what) {
            Ok(Some(b)) => Ok(Some(b)),
            Ok(None) => match open_backing() {
                Ok(b) => {
                    let b = Arc::new(b);
                    handles.set_backing(ino, what, &b);
                    Ok(Some(b))
                }
                Err(e) => {
                    tracing::debug!("no passthrough: {e}");
                    Ok(None)
                }
            },
            Err(()) => {
                self.inodes.lock().expect("inodes").retire(ino);
                Err(Errno::ESTALE)
            }
        }
    }

    /// Sets the size of `path` (`truncate`), through this mount's writer if
    /// one is open, else as a write of its own.
    pub(super) fn truncate(&self, ino: u64, path: &str, size: u64) -> Result<(), Errno> {
        let writing = self.handles.lock().expect("handles").writer_of(ino);
        if let Some(h) = writing {
            if let Open::Write(w) = &mut *h.lock().expect("handle") {
                let writer = self.writer(w)?;
                writer.file().set_len(size).map_err(|e| io_errno(&e))?;
                w.written = true;
                return Ok(());
            }
        }
        let mut next = self
            .next_writer(path, size == 0)
            .map_err(|e| failed("truncate", &e))?;
        if let Err(e) = next.writer.file().set_len(size) {
            self.give_back(next);
            return Err(io_errno(&e));
        }
        if next.resumed || self.hold.active() {
            // Written by the running task: held for its end.
            self.keep(Held {
                writer: next.writer,
                unwritten: false,
                mtime_ns: next.mtime_ns,
            });
            return Ok(());
        }
        self.run(next.writer.close())
            .map(drop)
            .map_err(|e| failed("truncate", &e))
    }
}
