//! What the servers' engines say to each other. Control work is spread over
//! the servers: a composite call, or a share of a large `foreach`, may run
//! on another server's engine, which answers `Finished` when it and all the
//! work it started are done. Futures stay with the server that created them
//! (their id names it); another server reads one by asking its owner, who
//! answers once the future is closed (closed values never change, so the
//! asker keeps them), and writes one by sending the value and waiting for
//! the owner's acknowledgement, so a write is in place before the writer
//! counts as done. Non-leaders report their progress to the leader, whose
//! stall detector and end-of-run summary cover every server.

use crate::engine::depth::Chain;
use crate::engine::ids::IdMap;
use crate::engine::plan::BlockId;
use crate::engine::store::{owner, FutureId};
use crate::engine::value::{Key, Value};
use crate::ranks::server::Dispatch;
use locus_lang::ir::VarId;
use locus_proto::run::{Rank, RunError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, OnceCell};

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Msg {
    /// Run composite function `func`, its parameters bound to these futures.
    Call {
        id: u64,
        func: String,
        binds: Vec<(VarId, FutureId)>,
        chain: Chain,
    },
    /// Run these iterations of the `foreach` statement `stmt` of `block`
    /// (in function `func`), seeing the variables `binds`.
    Iterations {
        id: u64,
        func: String,
        block: BlockId,
        stmt: u32,
        binds: Vec<(VarId, FutureId)>,
        items: Items,
        chain: Chain,
    },
    /// The `Call` or `Iterations` `id` and all its work are done.
    Finished {
        id: u64,
    },
    Read {
        req: u64,
        id: FutureId,
        what: Read,
    },
    Write {
        req: u64,
        id: FutureId,
        what: Write,
    },
    /// Leader → server: what do you wait on, what did you run?
    Status {
        req: u64,
    },
    Reply {
        req: u64,
        answer: Answer,
    },
    /// Server → leader, a few times per stall period.
    Progress(Progress),
    /// Make these lost files again, if tasks of yours made them (lineage).
    Remake {
        req: u64,
        paths: Vec<String>,
    },
    /// Leader → server, at the end of a run that lost a node: make again
    /// every lost file your tasks made.
    Repair {
        req: u64,
    },
}

/// A `foreach`'s iterations: `n` in `from..to` of a range (value
/// `lo + n * step`, index `n`), or an array's members (value, key).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Items {
    Range {
        lo: i64,
        step: i64,
        from: u64,
        to: u64,
    },
    Members(Vec<(Key, Value)>),
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Read {
    /// The value, once closed.
    Value,
    /// A container's member once present (`None`: closed without it).
    Member(Key),
    /// A file's path, once known.
    Path,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Write {
    Assign(Value),
    /// A member at a path (`Store::insert`).
    Insert(Vec<Key>, Value),
    /// An updateable changed (`Store::update`).
    Update(locus_lang::ir::UpdateOp, Value),
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Answer {
    Value(Value),
    Member(Option<Value>),
    Written(Result<(), RunError>),
    Status(Status),
    /// To `Remake`: the paths no task of the answering engine made.
    Remade(Result<Vec<String>, RunError>),
    /// To `Repair`: how many files were made again.
    Repaired(Result<usize, RunError>),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Status {
    /// Variables this server's tasks wait on, with how many wait.
    pub waiting: Vec<(String, usize)>,
    /// Tasks that failed while the run went on (`--keep-going`).
    pub failed: Vec<RunError>,
    pub control: ControlStats,
}

/// The control work one server's engine did, for `run.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlStats {
    pub rank: Rank,
    /// Statements executed.
    pub statements: u64,
    /// Calls and `foreach` shares run for other servers.
    pub received: u64,
    /// Calls and `foreach` shares sent to other servers.
    pub sent: u64,
    /// Leaf tasks released and not yet done at once, at most.
    #[serde(default)]
    pub most_released: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct Progress {
    pub steps: u64,
    /// Leaf tasks running.
    pub external: u64,
    /// Leaf tasks put and done so far, and how many of those done failed.
    pub put: u64,
    pub done: u64,
    #[serde(default)]
    pub failed: u64,
    /// File-system calls for the script under way (`Engine::outside`).
    #[serde(default)]
    pub outside: u64,
}

/// A value that another server's future closed with, once it has.
type Closed = Arc<OnceCell<Value>>;

/// How long the leader waits for the other servers' status.
const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// One engine's link to the others.
pub(crate) struct Remote {
    /// This server's index (0 = the leader).
    pub me: u32,
    pub servers: u32,
    /// The rank of server 0.
    first: Rank,
    dispatch: Arc<Dispatch>,
    next_req: AtomicU64,
    replies: Mutex<IdMap<oneshot::Sender<Answer>>>,
    /// Closed values (`false`) and paths (`true`) of other servers' futures.
    cache: Mutex<HashMap<(FutureId, bool), Closed>>,
    /// Round-robin cursor over the servers, for control work.
    next_server: AtomicU32,
    /// On the leader: the other servers' last progress.
    progress: Mutex<HashMap<u32, Progress>>,
}

impl Remote {
    pub(crate) fn new(me: u32, servers: u32, first: Rank, dispatch: Arc<Dispatch>) -> Remote {
        Remote {
            me,
            servers,
            first,
            dispatch,
            next_req: AtomicU64::new(1),
            replies: Mutex::default(),
            cache: Mutex::default(),
            next_server: AtomicU32::new(me),
            progress: Mutex::default(),
        }
    }

    pub(crate) fn send(&self, server: u32, msg: &Msg) {
        match postcard::to_allocvec(msg) {
            Ok(bytes) => self.dispatch.send_engine(self.rank_of(server), bytes),
            Err(e) => self
                .dispatch
                .report_abort(RunError::internal(format!("engine message: {e}"))),
        }
    }

    /// The rank of server `index`.
    pub(crate) fn rank_of(&self, index: u32) -> Rank {
        self.first + index
    }

    /// The index of server rank `rank`.
    pub(crate) fn index_of(&self, rank: Rank) -> u32 {
        rank - self.first
    }

    /// The server to run the next piece of control work: each in turn.
    pub(crate) fn next_server(&self) -> u32 {
        self.next_server.fetch_add(1, Ordering::Relaxed) % self.servers
    }

    pub(crate) fn new_id(&self) -> u64 {
        self.next_req.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request and waits for its answer; `None` if the run ended first.
    async fn ask(&self, server: u32, msg: impl FnOnce(u64) -> Msg) -> Option<Answer> {
        let req = self.new_id();
        let (tx, rx) = oneshot::channel();
        self.replies.lock().expect("replies").insert(req, tx);
        self.send(server, &msg(req));
        rx.await.ok()
    }

    pub(crate) fn answered(&self, req: u64, answer: Answer) {
        if let Some(tx) = self.replies.lock().expect("replies").remove(&req) {
            let _ = tx.send(answer);
        }
    }

    /// Waits for the owner's answer to a read. A run that ends first drops
    /// the waiting task.
    async fn read(&self, id: FutureId, what: Read) -> Answer {
        match self.ask(owner(id), |req| Msg::Read { req, id, what }).await {
            Some(a) => a,
            None => std::future::pending().await,
        }
    }

    /// Another server's future's closed value (`path`: its file's path),
    /// asked once per server however many tasks want it.
    pub(crate) async fn value(&self, id: FutureId, path: bool) -> Value {
        let cell = self
            .cache
            .lock()
            .expect("cache")
            .entry((id, path))
            .or_default()
            .clone();
        let what = if path { Read::Path } else { Read::Value };
        cell.get_or_init(|| async {
            match self.read(id, what).await {
                Answer::Value(v) => v,
                other => self.unexpected(other).await,
            }
        })
        .await
        .clone()
    }

    /// Member `key` of another server's container once present; `None` if
    /// it closed without it.
    pub(crate) async fn member(&self, id: FutureId, key: Key) -> Option<Value> {
        match self.read(id, Read::Member(key)).await {
            Answer::Member(v) => v,
            other => self.unexpected(other).await,
        }
    }

    /// An answer of the wrong kind: a broken peer; the run cannot go on.
    async fn unexpected<T>(&self, a: Answer) -> T {
        self.dispatch.report_abort(RunError::internal(format!(
            "an engine answered out of turn: {a:?}"
        )));
        std::future::pending().await
    }

    /// Whether another server's future is known here to be closed.
    pub(crate) fn known_closed(&self, id: FutureId) -> bool {
        self.cache
            .lock()
            .expect("cache")
            .get(&(id, false))
            .is_some_and(|c| c.initialized())
    }

    pub(crate) async fn write(&self, id: FutureId, what: Write) -> Result<(), RunError> {
        match self
            .ask(owner(id), |req| Msg::Write { req, id, what })
            .await
        {
            Some(Answer::Written(r)) => r,
            Some(other) => self.unexpected(other).await,
            None => std::future::pending().await,
        }
    }

    /// Asks server `server` to make lost files again; the paths it did not
    /// make, or `None` if the run ended first.
    pub(crate) async fn ask_remake(
        &self,
        server: u32,
        paths: Vec<String>,
    ) -> Option<Result<Vec<String>, RunError>> {
        match self.ask(server, |req| Msg::Remake { req, paths }).await? {
            Answer::Remade(r) => Some(r),
            other => self.unexpected(other).await,
        }
    }

    /// Asks server `server` to make again every lost file its tasks made.
    pub(crate) async fn ask_repair(&self, server: u32) -> Option<Result<usize, RunError>> {
        match self.ask(server, |req| Msg::Repair { req }).await? {
            Answer::Repaired(r) => Some(r),
            other => self.unexpected(other).await,
        }
    }

    /// On the leader: the other servers' status (those that answer in time).
    pub(crate) async fn statuses(&self) -> Vec<Status> {
        let mut out = Vec::new();
        let ask_all = async {
            let asked = (0..self.servers)
                .filter(|s| *s != self.me && !self.dispatch.server_gone(self.rank_of(*s)));
            for s in asked {
                if let Some(Answer::Status(st)) = self.ask(s, |req| Msg::Status { req }).await {
                    out.push(st);
                }
            }
        };
        let _ = tokio::time::timeout(STATUS_TIMEOUT, ask_all).await;
        out
    }

    pub(crate) fn progressed(&self, server: u32, p: Progress) {
        self.progress.lock().expect("progress").insert(server, p);
    }

    /// The other servers' progress added up.
    pub(crate) fn others(&self) -> Progress {
        let all = self.progress.lock().expect("progress");
        all.values().fold(Progress::default(), |a, p| Progress {
            steps: a.steps + p.steps,
            external: a.external + p.external,
            put: a.put + p.put,
            done: a.done + p.done,
            failed: a.failed + p.failed,
            outside: a.outside + p.outside,
        })
    }
}
