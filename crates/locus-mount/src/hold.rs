//! Holding a task's writes: while a task runs (`begin`), a file its
//! programs close through the mount is not published but kept, then
//! published when the task succeeds or dropped when it fails (`end`), so a
//! failed task changes nothing, through the mount too. What is held is the
//! task's own to read and write again (by its path) until then.

use locus_fs::{Client, Writer};
use locus_proto::fs::{Record, Sum};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A file written during the task, waiting for its end.
pub(crate) struct Held {
    pub writer: Writer,
    /// Nothing was written (a new file stays empty, a truncated one is
    /// published empty).
    pub unwritten: bool,
    /// A modification time set while it was open.
    pub mtime_ns: Option<i64>,
}

impl Held {
    /// Publishes what the task wrote, then the time it set: the file as
    /// it is then.
    pub(crate) async fn publish(self, client: &Client) -> locus_proto::FsResult<Record> {
        let path = self.writer.path().to_string();
        let rec = match self.unwritten {
            true => {
                self.writer.close_unwritten().await?;
                client.stat(&path).await?
            }
            false => self.writer.close().await?,
        };
        match self.mtime_ns {
            Some(t) => client.set_attr(&path, None, Some(t)).await,
            None => Ok(rec),
        }
    }
}

/// A file a task's programs opened for reading through the mount: the
/// version they read, whole (the kernel reads the copy itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Its Locus path (`/`-rooted, without `/locus`).
    pub path: String,
    /// The version's stamp (`Record::stamp`).
    pub stamp: u64,
    /// Its length in bytes.
    pub size: u64,
    /// The hash of its bytes, if the version has one.
    pub sum: Option<Sum>,
    /// The open fetched it from another node.
    pub fetched: bool,
}

/// A mount's task hold (clones share it).
#[derive(Clone)]
pub struct Hold(Arc<Inner>);

struct Inner {
    client: Client,
    active: AtomicBool,
    /// By path: a file closed again replaces what it held.
    held: Mutex<HashMap<String, Held>>,
    /// What opens read while the task runs, by path (the last version).
    read: Mutex<HashMap<String, Read>>,
    /// The task's inputs as staged for it, by path: what the mount shows
    /// of them while it runs.
    known: Mutex<HashMap<String, Record>>,
}

impl Hold {
    pub(crate) fn new(client: Client) -> Hold {
        Hold(Arc::new(Inner {
            client,
            active: AtomicBool::new(false),
            held: Mutex::default(),
            read: Mutex::default(),
            known: Mutex::default(),
        }))
    }

    /// From now until `end`, files closed through the mount wait for it,
    /// and the task's inputs, staged as `inputs` (by `/`-rooted path), are
    /// the versions it reads there, with no round trip to their daemons.
    pub fn begin(&self, inputs: impl IntoIterator<Item = (String, Record)>) {
        *self.0.known.lock().expect("known inputs") = inputs.into_iter().collect();
        self.0.active.store(true, Ordering::SeqCst);
    }

    /// The record of `path` if it is an input of the running task.
    pub(crate) fn known(&self, path: &str) -> Option<Record> {
        let known = self.0.known.lock().expect("known inputs");
        known.get(path).filter(|_| self.active()).cloned()
    }

    pub(crate) fn active(&self) -> bool {
        self.0.active.load(Ordering::SeqCst)
    }

    /// Notes what an open read, if a task runs.
    pub(crate) fn read_from(&self, read: Read) {
        if self.active() {
            let mut all = self.0.read.lock().expect("mount reads");
            all.insert(read.path.clone(), read);
        }
    }

    /// What opens read since the last call, while a task ran.
    pub fn take_reads(&self) -> Vec<Read> {
        let all = std::mem::take(&mut *self.0.read.lock().expect("mount reads"));
        all.into_values().collect()
    }

    /// Whether the running task wrote `path` through the mount (its
    /// `/`-rooted Locus path).
    pub fn holds(&self, path: &str) -> bool {
        self.0.held.lock().expect("held writes").contains_key(path)
    }

    /// Keeps `held` for the task's end; the writer it replaces, if any
    /// (the same file opened twice at once and closed twice), to abort.
    pub(crate) fn keep(&self, held: Held) -> Option<Writer> {
        let path = held.writer.path().to_string();
        let mut all = self.0.held.lock().expect("held writes");
        all.insert(path, held).map(|h| h.writer)
    }

    /// Takes back what the task wrote to `path`, to write it again or
    /// give it up.
    pub(crate) fn take(&self, path: &str) -> Option<Held> {
        self.0.held.lock().expect("held writes").remove(path)
    }

    /// What the task wrote to `path`, as a file to read.
    pub(crate) fn read(&self, path: &str) -> Option<std::io::Result<std::fs::File>> {
        let all = self.0.held.lock().expect("held writes");
        Some(all.get(path)?.writer.written().try_clone())
    }

    /// The size of what the task wrote to `path`, and the modification
    /// time it set.
    pub(crate) fn size(&self, path: &str) -> Option<std::io::Result<(u64, Option<i64>)>> {
        let all = self.0.held.lock().expect("held writes");
        let h = all.get(path)?;
        Some(h.writer.written().metadata().map(|m| (m.len(), h.mtime_ns)))
    }

    /// Sets the modification time `path` gets when published.
    pub(crate) fn set_mtime(&self, path: &str, mtime_ns: i64) -> bool {
        let mut all = self.0.held.lock().expect("held writes");
        all.get_mut(path)
            .map(|h| h.mtime_ns = Some(mtime_ns))
            .is_some()
    }

    /// Ends the task: what it wrote is published if it `succeeded` (each
    /// file's path and record as published; the first failure to publish is
    /// returned), else dropped, leaving each file as it was before the task.
    pub async fn end(&self, succeeded: bool) -> Result<Vec<(String, Record)>, String> {
        self.0.active.store(false, Ordering::SeqCst);
        self.0.known.lock().expect("known inputs").clear();
        let held = std::mem::take(&mut *self.0.held.lock().expect("held writes"));
        let mut published = Vec::new();
        let mut first = None;
        for h in held.into_values() {
            let path = h.writer.path().to_string();
            if !succeeded {
                h.writer.abort().await;
                continue;
            }
            match h.publish(&self.0.client).await {
                Ok(rec) => published.push((path, rec)),
                Err(e) => {
                    first.get_or_insert(format!("{path}: {e}"));
                }
            }
        }
        match first {
            None => Ok(published),
            Some(e) => Err(e),
        }
    }
}
