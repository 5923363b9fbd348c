//! Holding a task's writes: while a task runs (`begin`), a file its
//! programs close through the mount is not published but kept, then
//! published when the task succeeds or dropped when it fails (`end`), so a
//! failed task changes nothing, through the mount too. What is held is the
//! task's own to read and write again (by its path) until then.

use locus_fs::{Client, Writer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// Publishes what the task wrote, then the time it set.
    pub(crate) async fn publish(self, client: &Client) -> locus_proto::FsResult<()> {
        let path = self.writer.path().to_string();
        match self.unwritten {
            true => self.writer.close_unwritten().await?,
            false => drop(self.writer.close().await?),
        }
        match self.mtime_ns {
            Some(t) => client.set_attr(&path, None, Some(t)).await.map(drop),
            None => Ok(()),
        }
    }
}

/// A mount's task hold (clones share it).
#[derive(Clone)]
pub struct Hold(Arc<Inner>);

struct Inner {
    client: Client,
    active: AtomicBool,
    /// By path: a file closed again replaces what it held.
    held: Mutex<HashMap<String, Held>>,
    /// Bytes fetched from other nodes by opens while the task runs.
    fetched: AtomicU64,
}

impl Hold {
    pub(crate) fn new(client: Client) -> Hold {
        Hold(Arc::new(Inner {
            client,
            active: AtomicBool::new(false),
            held: Mutex::default(),
            fetched: AtomicU64::new(0),
        }))
    }

    /// From now until `end`, files closed through the mount wait for it.
    pub fn begin(&self) {
        self.0.active.store(true, Ordering::SeqCst);
    }

    pub(crate) fn active(&self) -> bool {
        self.0.active.load(Ordering::SeqCst)
    }

    /// Counts `bytes` an open fetched from another node, if a task runs.
    pub(crate) fn fetched(&self, bytes: u64) {
        if self.active() {
            self.0.fetched.fetch_add(bytes, Ordering::SeqCst);
        }
    }

    /// The bytes opens fetched from other nodes since the last call, while
    /// a task ran: what its program read that it had not declared.
    pub fn take_fetched(&self) -> u64 {
        self.0.fetched.swap(0, Ordering::SeqCst)
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

    /// Ends the task: what it wrote is published if it `succeeded` (the
    /// first failure to publish is returned), else dropped, leaving each
    /// file as it was before the task.
    pub async fn end(&self, succeeded: bool) -> Result<(), String> {
        self.0.active.store(false, Ordering::SeqCst);
        let held = std::mem::take(&mut *self.0.held.lock().expect("held writes"));
        let mut first = Ok(());
        for h in held.into_values() {
            let path = h.writer.path().to_string();
            let done = match succeeded {
                true => h.publish(&self.0.client).await,
                false => {
                    h.writer.abort().await;
                    Ok(())
                }
            };
            if let (Err(e), Ok(())) = (done, &first) {
                first = Err(format!("{path}: {e}"));
            }
        }
        first
    }
}
