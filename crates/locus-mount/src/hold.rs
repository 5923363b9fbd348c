//! Holding a task's writes: while a task runs (`begin`), a file its
//! programs close through the mount is not published but kept, then
//! published when the task succeeds or dropped when it fails (`end`), so a
//! failed task changes nothing, through the mount too.

use locus_fs::{Client, Writer};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A file written during the task, waiting for its end.
struct Held {
    writer: Writer,
    /// Nothing was written (a new file stays empty, a truncated one is
    /// published empty).
    unwritten: bool,
    /// A modification time set while it was open.
    mtime_ns: Option<i64>,
}

/// A mount's task hold (clones share it).
#[derive(Clone)]
pub struct Hold(Arc<Inner>);

struct Inner {
    client: Client,
    active: AtomicBool,
    held: Mutex<Vec<Held>>,
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

    pub(crate) fn keep(&self, writer: Writer, unwritten: bool, mtime_ns: Option<i64>) {
        let held = Held {
            writer,
            unwritten,
            mtime_ns,
        };
        self.0.held.lock().expect("held writes").push(held);
    }

    /// Ends the task: what it wrote is published if it `succeeded` (the
    /// first failure to publish is returned), else dropped, leaving each
    /// file as it was before the task.
    pub async fn end(&self, succeeded: bool) -> Result<(), String> {
        self.0.active.store(false, Ordering::SeqCst);
        let held = std::mem::take(&mut *self.0.held.lock().expect("held writes"));
        let mut first = Ok(());
        for h in held {
            let path = h.writer.path().to_string();
            let done = match (succeeded, h.unwritten) {
                (false, _) => {
                    h.writer.abort().await;
                    Ok(())
                }
                (true, true) => h.writer.close_unwritten().await,
                (true, false) => h.writer.close().await.map(drop),
            };
            let done = match (done, h.mtime_ns) {
                (Ok(()), Some(t)) if succeeded => {
                    self.0.client.set_attr(&path, None, Some(t)).await.map(drop)
                }
                (done, _) => done,
            };
            if let (Err(e), Ok(())) = (done, &first) {
                first = Err(format!("{path}: {e}"));
            }
        }
        first
    }
}
