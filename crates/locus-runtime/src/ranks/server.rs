//! A server rank: accepts its workers and the other servers, keeps its
//! share of the work queues (`balancer`), hands tasks to idle workers,
//! steals for them from other servers when it has nothing they may run,
//! and passes each outcome to the server that put the task. Every server's
//! dataflow engine puts leaf tasks and talks to the other engines through
//! its `Dispatch`; the leader (first server) ends the run.

use crate::engine::ids::{self, IdMap};
use crate::ranks::balancer::{Balancer, Finished};
use crate::ranks::layout::Layout;
use crate::ranks::rendezvous::{self, Entry, RanksDir};
use crate::ranks::wire::{self, Reader};
use crate::ranks::worker::told_to_stop;
use crate::record::{self, HeldTask};
use crate::INTERRUPTED;
use locus_proto::auth::Secret;
use locus_proto::run::{ErrorKind, Outcome, ParMsg, Rank, RankMsg, RunError, Task};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, Notify};

const JOIN_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a server waiting for ranks to connect looks for a note that
/// one of them failed.
const FAILED_LOOK: Duration = Duration::from_millis(100);
/// How long a server that is done waits for its last messages to go out.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

const LISTEN_BACKLOG: u32 = 8192;

/// The task writing one connection's messages.
type Writer = tokio::task::JoinHandle<std::io::Result<()>>;
/// Steal retry delays after a round of empty answers.
const STEAL_BACKOFF_MIN: Duration = Duration::from_micros(500);
const STEAL_BACKOFF_MAX: Duration = Duration::from_millis(20);
/// Tasks a worker may be sent ahead, when they are short
/// (`Costs::is_short`): queued at a worker, they cost the balance at most
/// `PREFETCH` short tasks' time and save a round trip each.
const PREFETCH: u32 = 32;
/// How long the leader waits, once too many ranks did not start, for the
/// others that did not either (the ranks of a node whose daemon is gone
/// each find it so at their start), to name them all.
const NOT_STARTED_GRACE: Duration = Duration::from_millis(250);

pub(crate) struct ServerConfig {
    pub me: Rank,
    pub layout: Arc<Layout>,
    /// Every rank's published entry (servers' addresses).
    pub entries: Vec<Entry>,
    pub secret: Secret,
    /// The longest a SOFT task waits for its busy target (`--soft-wait`);
    /// without it, only the estimated costs decide.
    pub soft_wait: Option<Duration>,
    /// A process's server told to stop by a signal (SIGTERM, SIGINT: a
    /// job's end) writes the tasks it holds into this run directory's
    /// records (what never started) and ends the run as `Interrupted`.
    /// `None`: signals are not its own (ranks in one process).
    pub held_to: Option<std::path::PathBuf>,
    /// The run directory, where a rank that fails notes why.
    pub run_dir: std::path::PathBuf,
    /// On the leader: the fewest ranks the run goes on with when some did
    /// not start (`--min-ranks`; the run's size by default).
    pub min_ranks: u32,
}

enum Event {
    Joined(Rank, mpsc::UnboundedSender<RankMsg>, Writer),
    Msg(Rank, RankMsg),
    /// A connection ended: cleanly, or broken (why).
    Closed(Rank, Option<String>),
    /// A worker failed before it connected (why).
    NotConnected(Rank, String),
    /// From this server's engine.
    Put(Task),
    Send(Rank, RankMsg),
    Abort(RunError),
    /// The leader's engine is done: end the run.
    Finish,
}

/// Messages from other servers' engines: the sender and the bytes.
pub(crate) type Inbox = mpsc::UnboundedReceiver<(Rank, Vec<u8>)>;

/// A server's engine puts leaf tasks here and awaits their outcomes, and
/// exchanges messages with the other engines.
pub struct Dispatch {
    events: mpsc::UnboundedSender<Event>,
    pending: Mutex<IdMap<oneshot::Sender<Outcome>>>,
    next_id: AtomicU64,
    abort: Mutex<Option<RunError>>,
    aborted: Notify,
    /// Messages from other servers' engines, until the engine takes them.
    inbox: Mutex<Option<Inbox>>,
    /// On the leader: nodes lost during the run (name, why), and a wake-up
    /// for each.
    lost: Mutex<Vec<(String, String)>>,
    node_lost: Notify,
    /// Other servers whose process is gone: nothing asked of them comes.
    servers_gone: Mutex<HashSet<Rank>>,
    /// On the leader: workers whose process is gone, each with why.
    workers_gone: Mutex<Vec<String>>,
    /// Woken when the tasks released and not done fall to half of
    /// `RELEASED_MOST` (one at a time, so they pass through it).
    room: Notify,
    /// The most tasks released and not done at once.
    most_released: std::sync::atomic::AtomicUsize,
}

/// Tasks one engine keeps released and not done (queued for a worker or
/// running) before its `foreach` loops wait to start more iterations. A
/// released task costs its engine a few KiB until it ends (the call waiting
/// for it, the task itself): a loop of millions of tasks would otherwise
/// hold them all at once, as fast as the engine makes them. Enough to keep
/// thousands of workers busy and their balancer choosing.
pub const RELEASED_MOST: usize = 20_000;

impl Dispatch {
    fn new(events: mpsc::UnboundedSender<Event>, inbox: Inbox) -> Dispatch {
        Dispatch {
            events,
            pending: Mutex::default(),
            next_id: AtomicU64::new(1),
            abort: Mutex::default(),
            aborted: Notify::new(),
            inbox: Mutex::new(Some(inbox)),
            lost: Mutex::default(),
            node_lost: Notify::new(),
            servers_gone: Mutex::default(),
            workers_gone: Mutex::default(),
            room: Notify::new(),
            most_released: Default::default(),
        }
    }

    /// Sends `bytes` to the engine of server rank `to`.
    pub fn send_engine(&self, to: Rank, bytes: Vec<u8>) {
        let _ = self.events.send(Event::Send(to, RankMsg::Engine(bytes)));
    }

    /// The messages other engines send this one (taken once).
    pub fn inbox(&self) -> Option<Inbox> {
        self.inbox.lock().expect("inbox").take()
    }

    /// Ends the run with `reason` (on the leader), or tells the leader to.
    pub fn report_abort(&self, reason: RunError) {
        let _ = self.events.send(Event::Abort(reason));
    }

    pub fn task_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues `task` and waits for its outcome.
    pub async fn run(&self, task: Task) -> Outcome {
        let id = task.id;
        let (tx, rx) = oneshot::channel();
        let released = {
            let mut pending = self.pending.lock().expect("pending");
            pending.insert(id, tx);
            pending.len()
        };
        self.most_released.fetch_max(released, Ordering::Relaxed);
        let _ = self.events.send(Event::Put(task));
        rx.await
            .unwrap_or_else(|_| failed(id, 0, RunError::internal("the run was stopped")))
    }

    fn complete(&self, o: Outcome) {
        let (tx, left) = {
            let mut pending = self.pending.lock().expect("pending");
            (pending.remove(&o.id), pending.len())
        };
        if let Some(tx) = tx {
            let _ = tx.send(o);
        }
        if left == RELEASED_MOST / 2 {
            self.room.notify_waiters();
        }
    }

    /// Tasks released and not done.
    fn released(&self) -> usize {
        self.pending.lock().expect("pending").len()
    }

    /// The most tasks released and not done at once, so far.
    pub fn most_released(&self) -> usize {
        self.most_released.load(Ordering::Relaxed)
    }

    /// Returns at once while fewer than `RELEASED_MOST` tasks are released
    /// and not done; else once half of them are done.
    pub async fn room(&self) {
        if self.released() < RELEASED_MOST {
            return;
        }
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.released() <= RELEASED_MOST / 2 {
                return;
            }
            notified.await;
        }
    }

    fn abort(&self, reason: RunError) {
        self.abort.lock().expect("abort").get_or_insert(reason);
        self.aborted.notify_one();
    }

    /// Resolves when a server reports that the run cannot go on (leader).
    pub async fn aborted(&self) -> RunError {
        loop {
            let notified = self.aborted.notified();
            if let Some(r) = self.abort.lock().expect("abort").clone() {
                return r;
            }
            notified.await;
        }
    }

    /// Ends the run: every rank is told to stop.
    pub fn finish(&self) {
        let _ = self.events.send(Event::Finish);
    }

    /// On the leader: the nodes lost during the run so far, by name, each
    /// with why.
    pub fn lost_nodes(&self) -> Vec<(String, String)> {
        self.lost.lock().expect("lost").clone()
    }

    /// On the leader: the workers whose process is gone, each with why.
    pub fn workers_gone(&self) -> Vec<String> {
        self.workers_gone.lock().expect("workers gone").clone()
    }

    /// Whether server rank `r`'s process is gone.
    pub fn server_gone(&self, r: Rank) -> bool {
        self.servers_gone.lock().expect("servers gone").contains(&r)
    }

    /// On the leader: resolves when a node is lost (once per loss, even
    /// one that came before the call).
    pub async fn node_lost(&self) {
        self.node_lost.notified().await;
    }
}

/// The outcome of a task that did not run or did not finish.
fn failed(id: u64, rank: Rank, error: RunError) -> Outcome {
    Outcome {
        id,
        rank,
        error: Some(error),
        ..Outcome::default()
    }
}

/// A bound server rank, ready to be published and run.
pub(crate) struct Server {
    listener: TcpListener,
    /// The same, for ranks of this host (`wire::listen_local`).
    local: Option<tokio::net::UnixListener>,
    events: mpsc::UnboundedSender<Event>,
    rx: mpsc::UnboundedReceiver<Event>,
    dispatch: Arc<Dispatch>,
    engine: mpsc::UnboundedSender<(Rank, Vec<u8>)>,
}

impl Server {
    /// Listens on `addr` (within a tokio runtime: the listeners register
    /// with its reactor).
    pub(crate) fn bind(addr: std::net::SocketAddr, me: Rank) -> std::io::Result<Server> {
        // Every worker of a large run connects at once: a queue long enough
        // for all of them (the kernel caps it at somaxconn), so none waits
        // for TCP's SYN retransmission (1 s, 3 s, 7 s…).
        let socket = match addr {
            std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.bind(addr)?;
        let listener = socket.listen(LISTEN_BACKLOG)?;
        let local = wire::listen_local(listener.local_addr()?, me)
            .inspect_err(|e| tracing::warn!("ranks of this host will use TCP: {e}"))
            .ok();
        let (events, rx) = mpsc::unbounded_channel();
        let (engine, inbox) = mpsc::unbounded_channel();
        let dispatch = Arc::new(Dispatch::new(events.clone(), inbox));
        Ok(Server {
            listener,
            local,
            events,
            rx,
            dispatch,
            engine,
        })
    }

    pub(crate) fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// The engine's handle.
    pub(crate) fn dispatch(&self) -> Arc<Dispatch> {
        self.dispatch.clone()
    }

    /// Connects the ranks this server talks to; returns once all have
    /// joined, with the loop that serves them until the run ends.
    /// Joins the run; returns the server's work, which ends with the run
    /// (`Interrupted` if a signal stopped this server).
    pub(crate) async fn start(
        self,
        cfg: ServerConfig,
    ) -> Result<impl std::future::Future<Output = Result<(), RunError>>, RunError> {
        let Server {
            listener,
            local,
            events,
            mut rx,
            dispatch,
            engine,
        } = self;
        let layout = cfg.layout.clone();
        let me = cfg.me;
        // Task ids name the server that put the task (`deliver`).
        dispatch
            .next_id
            .store(ids::tagged(me - layout.workers(), 1), Ordering::Relaxed);
        // Workers and lower servers call us; we call the higher servers.
        let mut expected: HashSet<Rank> =
            layout.workers_of(me).chain(layout.workers()..me).collect();
        {
            let (events, secret) = (events.clone(), cfg.secret.clone());
            // Each expected rank connects once; a connection claiming another
            // rank, or one already connected, is refused and changes nothing.
            let callers = Arc::new(std::sync::Mutex::new(expected.clone()));
            let workers = layout.workers();
            let admit = move |stream: wire::Stream, from: String| {
                let (events, secret) = (events.clone(), secret.clone());
                let callers = callers.clone();
                tokio::spawn(async move {
                    match wire::accept(stream, &secret).await {
                        Ok((rank, reader, wr)) => {
                            if callers.lock().expect("callers").remove(&rank) {
                                // A lower server's engine may be busy too.
                                let reader = if rank < workers {
                                    reader
                                } else {
                                    reader.of_a_server()
                                };
                                attach(rank, reader, wr, events);
                            } else {
                                tracing::warn!(
                                    "refused a connection from {from} claiming rank {rank}"
                                );
                            }
                        }
                        Err(e) => tracing::warn!("refused a connection from {from}: {e}"),
                    }
                });
            };
            if let Some(local) = local {
                let admit = admit.clone();
                tokio::spawn(async move {
                    while let Ok((stream, _)) = local.accept().await {
                        admit(wire::Stream::Local(stream), "this host".into());
                    }
                });
            }
            tokio::spawn(async move {
                while let Ok((stream, from)) = listener.accept().await {
                    admit(wire::Stream::Tcp(stream), from.to_string());
                }
            });
        }
        for s in me + 1..layout.size() {
            let addr = cfg.entries[s as usize]
                .addr
                .ok_or_else(|| RunError::launch(format!("server rank {s} published no address")))?;
            let (reader, wr) = wire::connect((addr, s), &cfg.secret, me)
                .await
                .map_err(|e| {
                    RunError::launch(format!(
                        "rank {me} cannot reach server rank {s} at {addr}: {e}"
                    ))
                })?;
            attach(s, reader.of_a_server(), wr, events.clone());
            expected.insert(s);
        }
        let mut state = State::new(me, layout, cfg.soft_wait, dispatch, engine);
        state.min_ranks = cfg.min_ranks;
        let deadline = tokio::time::Instant::now() + JOIN_TIMEOUT;
        let ranks = RanksDir::of(&cfg.run_dir);
        let mut early = Vec::new();
        while !expected.iter().all(|r| state.peers.contains_key(r)) {
            // A worker that failed before it connected is not waited for (its
            // loss is judged as any worker's that did not start); a server
            // that did fails this one at once.
            let failed = (expected.iter())
                .filter(|r| !state.peers.contains_key(r))
                .find_map(|&r| Some((r, rendezvous::failed(&ranks, r)?)));
            if let Some((r, why)) = failed {
                expected.remove(&r);
                if state.layout.is_worker(r) {
                    early.push(Event::NotConnected(r, why));
                    continue;
                }
                return Err(RunError::launch(format!(
                    "server rank {me}: server rank {r} failed: {why}"
                )));
            }
            let tick = (tokio::time::Instant::now() + FAILED_LOOK).min(deadline);
            match tokio::time::timeout_at(tick, rx.recv()).await {
                Ok(Some(Event::Joined(r, tx, w))) => {
                    state.peers.insert(r, tx);
                    state.writers.push(w);
                }
                Ok(Some(ev)) => early.push(ev),
                Err(_) if tokio::time::Instant::now() < deadline => {}
                _ => {
                    let mut missing: Vec<_> = expected
                        .iter()
                        .filter(|r| !state.peers.contains_key(r))
                        .map(std::string::ToString::to_string)
                        .collect();
                    missing.sort();
                    let why = RunError::launch(format!(
                        "server rank {me}: ranks {} did not connect within {JOIN_TIMEOUT:?}",
                        missing.join(",")
                    ));
                    // The leader learns the cause, not only that this
                    // server is gone.
                    let leader = state.layout.leader();
                    if leader != me {
                        let reason = why.clone();
                        state.send(leader, RankMsg::Abort { reason });
                        state.close_flushed().await;
                    }
                    return Err(why);
                }
            }
        }
        state.held_to = cfg.held_to;
        Ok(async move {
            let stop = told_to_stop(state.held_to.is_some());
            let stopped = tokio::select! {
                () = state.serve(early, rx) => {
                    // Its workers were stopped from outside and the run
                    // ended before this server's own signal was seen.
                    if state.stopping {
                        state.keep_held();
                    }
                    None
                }
                () = stop => Some(state.stopped_by_signal()),
            };
            // The last `Shutdown`s.
            state.close_flushed().await;
            stopped.map_or(Ok(()), Err)
        })
    }
}

impl State {
    /// Closes every connection once what is queued on it went out (or
    /// `FLUSH_TIMEOUT` passed): messages must leave before the process ends.
    async fn close_flushed(&mut self) {
        self.peers.clear();
        for w in self.writers.drain(..) {
            let _ = tokio::time::timeout(FLUSH_TIMEOUT, w).await;
        }
    }

    /// Handles events until the run is over for this server: the one
    /// place the state machine is given the time.
    async fn serve(&mut self, early: Vec<Event>, mut rx: mpsc::UnboundedReceiver<Event>) {
        for ev in early {
            if !self.handle(ev, Instant::now()) {
                return;
            }
        }
        loop {
            let ev = match self.wake_at(Instant::now()) {
                Some(at) => match tokio::time::timeout_at(at.into(), rx.recv()).await {
                    Ok(ev) => ev,
                    Err(_) => {
                        self.after_events(Instant::now());
                        continue;
                    }
                },
                None => rx.recv().await,
            };
            let Some(ev) = ev else { return };
            if !self.handle(ev, Instant::now()) {
                return;
            }
            // Take everything queued before matching: one pass per burst.
            while let Ok(ev) = rx.try_recv() {
                if !self.handle(ev, Instant::now()) {
                    return;
                }
            }
            self.after_events(Instant::now());
        }
    }
}

/// Feeds one connection's messages to the server loop.
fn attach(rank: Rank, mut reader: Reader, wr: wire::Writer, events: mpsc::UnboundedSender<Event>) {
    let (tx, writer) = wire::spawn_writer(wr);
    let _ = events.send(Event::Joined(rank, tx, writer));
    tokio::spawn(async move {
        let broken = loop {
            match reader.next().await {
                Ok(Some(msg)) => {
                    if events.send(Event::Msg(rank, msg)).is_err() {
                        return;
                    }
                }
                Ok(None) => break None,
                Err(e) => {
                    tracing::warn!("connection of rank {rank} broke: {e}");
                    break Some(e.to_string());
                }
            }
        };
        let _ = events.send(Event::Closed(rank, broken));
    });
}

struct State {
    me: Rank,
    layout: Arc<Layout>,
    balancer: Balancer,
    peers: HashMap<Rank, mpsc::UnboundedSender<RankMsg>>,
    dispatch: Arc<Dispatch>,
    /// This server's engine's inbox.
    engine: mpsc::UnboundedSender<(Rank, Vec<u8>)>,
    /// Round-robin cursor for untargeted tasks and steal victims.
    next_server: u32,
    stealing: bool,
    /// Victims asked in the current round without getting work.
    steal_round: u32,
    next_steal: Instant,
    backoff: Duration,
    closing: bool,
    writers: Vec<Writer>,
    /// The workers that have asked for work.
    asked: HashSet<Rank>,
    /// This server's workers.
    workers: usize,
    /// Workers that left the run (their node was lost).
    left: HashSet<Rank>,
    /// A worker was told to stop from outside: the run is being stopped,
    /// and the workers that end now are not reported.
    stopping: bool,
    /// On the leader: workers of the whole run that left.
    left_in_run: usize,
    /// `ServerConfig::held_to`.
    held_to: Option<std::path::PathBuf>,
    /// `ServerConfig::min_ranks`.
    min_ranks: u32,
    /// On the leader: the ranks that did not start, each with why.
    not_started: Vec<(Rank, String)>,
    /// On the leader: the run fails for ranks that did not start, at this
    /// time (`NOT_STARTED_GRACE` after the first too many).
    not_started_fail: Option<Instant>,
}

impl State {
    fn new(
        me: Rank,
        layout: Arc<Layout>,
        soft_wait: Option<Duration>,
        dispatch: Arc<Dispatch>,
        engine: mpsc::UnboundedSender<(Rank, Vec<u8>)>,
    ) -> State {
        State {
            me,
            balancer: Balancer::new(layout.clone(), me, soft_wait),
            workers: layout.workers_of(me).count(),
            layout,
            peers: HashMap::new(),
            dispatch,
            engine,
            next_server: 0,
            stealing: false,
            steal_round: 0,
            next_steal: Instant::now(),
            backoff: STEAL_BACKOFF_MIN,
            closing: false,
            writers: Vec::new(),
            asked: HashSet::new(),
            left: HashSet::new(),
            stopping: false,
            left_in_run: 0,
            held_to: None,
            min_ranks: 0,
            not_started: Vec::new(),
            not_started_fail: None,
        }
    }

    fn send(&self, to: Rank, msg: RankMsg) {
        if let Some(tx) = self.peers.get(&to) {
            let _ = tx.send(msg);
        }
    }

    fn tell_other_servers(&self, msg: &RankMsg) {
        for s in (self.layout.workers()..self.layout.size()).filter(|s| *s != self.me) {
            self.send(s, msg.clone());
        }
    }

    /// Handles one event at time `now`; `false` ends the loop.
    fn handle(&mut self, ev: Event, now: Instant) -> bool {
        match ev {
            Event::Joined(r, tx, w) => {
                self.peers.insert(r, tx);
                self.writers.push(w);
            }
            Event::Put(task) => self.route(task, now),
            Event::Msg(from, _) if self.left.contains(&from) => {}
            Event::Send(to, msg) => self.send(to, msg),
            Event::Abort(reason) => self.report_abort(reason),
            Event::Msg(from, msg) => match msg {
                RankMsg::Want => {
                    self.asked.insert(from);
                    self.offer(from, true);
                }
                RankMsg::Done(o) => {
                    let again = self.layout.is_worker(from)
                        && self.finished(from, &o, now) == Finished::Again;
                    if !again {
                        self.deliver(o);
                    }
                }
                RankMsg::Par { to, msg } => {
                    // A part's last word: its worker is free.
                    if let ParMsg::Registered { job, .. } = &msg {
                        self.balancer.part_done(from, job.task, now);
                        self.offer(from, false);
                    }
                    self.send(to, RankMsg::Par { to, msg });
                }
                RankMsg::Put(task) => self.queue(task, now),
                RankMsg::Steal { idle } => {
                    // Own idle workers first: two servers each with an idle
                    // worker would otherwise pass a new task back and forth.
                    self.assign(now);
                    let tasks = self.balancer.give(&idle, now);
                    self.send(from, RankMsg::Gift { tasks });
                }
                RankMsg::Gift { tasks } => {
                    self.stealing = false;
                    if tasks.is_empty() {
                        self.steal_round += 1;
                        if self.steal_round + 1 >= self.layout.servers {
                            self.steal_round = 0;
                            self.next_steal = now + self.backoff;
                            self.backoff = (self.backoff * 2).min(STEAL_BACKOFF_MAX);
                        }
                    } else {
                        self.steal_round = 0;
                        self.backoff = STEAL_BACKOFF_MIN;
                        for t in tasks {
                            self.queue(t, now);
                        }
                    }
                }
                // A worker's (past its memory budget): the leader ends the run.
                RankMsg::Abort { reason } if self.layout.is_worker(from) => {
                    self.report_abort(reason);
                }
                RankMsg::Abort { reason } => self.dispatch.abort(reason),
                RankMsg::Leave { node, reason } if self.layout.is_worker(from) => {
                    self.worker_left(from, node, reason, now);
                }
                RankMsg::Leave { node, reason } => {
                    // Another server's worker left with its node: this one
                    // may hold work for the node with no worker of its own
                    // left there to learn it from.
                    for t in self.balancer.node_lost(node, now) {
                        self.cannot_run(t);
                    }
                    if self.me == self.layout.leader() {
                        self.node_lost(node, reason);
                    }
                }
                RankMsg::Gone { rank, reason } => {
                    // Another server's worker: this one's work for its node
                    // may have no worker left there.
                    for t in self.balancer.rank_lost(rank, now) {
                        self.cannot_run(t);
                    }
                    if self.me == self.layout.leader() {
                        self.worker_gone_told(reason);
                    }
                }
                RankMsg::NotStarted { rank, reason } => self.not_started(rank, reason, now),
                RankMsg::Stopping => self.stopping = true,
                RankMsg::Engine(bytes) => {
                    let _ = self.engine.send((from, bytes));
                }
                RankMsg::Shutdown => {
                    self.shutdown();
                    return false;
                }
                // (`Alive` is taken by the connection's reader.)
                RankMsg::Hello { .. } | RankMsg::Run(_) | RankMsg::Alive => {}
            },
            Event::NotConnected(r, why) => {
                self.worker_gone(r, format!("it failed before it connected: {why}"), now);
            }
            Event::Closed(r, broken) => {
                let how = match broken {
                    Some(e) => format!("its connection broke ({e})"),
                    None => "it exited".to_string(),
                };
                if !self.closing && self.layout.is_worker(r) && !self.left.contains(&r) {
                    self.worker_gone(r, how, now);
                } else if !self.closing && r != self.layout.leader() {
                    let gone = &self.dispatch.servers_gone;
                    gone.lock().expect("servers gone").insert(r);
                    // Its engine's values and queued tasks are nowhere else.
                    self.report_abort(RunError::lost(format!(
                        "server rank {r} on {} is gone ({how}): the run cannot go on \
                         without the values and tasks it held (`--resume` picks it up)",
                        self.layout.node_name(r)
                    )));
                }
                self.peers.remove(&r);
                // Without the leader the run is over, whatever happened to it.
                if r == self.layout.leader() && !self.closing {
                    self.shutdown();
                    return false;
                }
            }
            Event::Finish => {
                self.tell_other_servers(&RankMsg::Shutdown);
                self.shutdown();
                return false;
            }
        }
        true
    }

    /// Told to stop from outside: keeps what it holds for the report (what
    /// never started), ends the run as interrupted and tells its workers.
    fn stopped_by_signal(&mut self) -> RunError {
        let reason = RunError::new(ErrorKind::Interrupted, INTERRUPTED);
        self.keep_held();
        self.stopping = true;
        self.report_abort(reason.clone());
        self.shutdown();
        reason
    }

    /// Writes the tasks this server holds into the run's records (`held_to`).
    fn keep_held(&self) {
        let Some(dir) = &self.held_to else { return };
        let held: Vec<HeldTask> = (self.balancer.held())
            .map(|t| HeldTask {
                id: t.id,
                func: t.func.clone(),
                at: t.at.clone(),
            })
            .collect();
        if let Err(e) = record::write_held(dir, self.me, &held) {
            tracing::warn!("keeping the tasks server rank {} held: {e}", self.me);
        }
    }

    fn shutdown(&mut self) {
        self.closing = true;
        let mine: Vec<Rank> = self.layout.workers_of(self.me).collect();
        for w in mine {
            self.send(w, RankMsg::Shutdown);
        }
    }

    fn report_abort(&self, reason: RunError) {
        if self.me == self.layout.leader() {
            self.dispatch.abort(reason);
        } else {
            self.send(self.layout.leader(), RankMsg::Abort { reason });
        }
    }

    /// Gives an outcome to the engine that put the task.
    fn deliver(&self, o: Outcome) {
        let origin = self.layout.workers() + ids::server_of(o.id);
        if origin == self.me {
            self.dispatch.complete(o);
        } else {
            self.send(origin, RankMsg::Done(o));
        }
    }

    /// Targeted tasks go to their target's server, others round-robin over
    /// the servers; parallel tasks to the leader, which has the most
    /// workers to gather from.
    fn route(&mut self, task: Task, now: Instant) {
        let server = match task.target {
            _ if task.par.is_some() => self.layout.leader(),
            Some(t) => self.layout.server_of(t.rank),
            None => {
                let servers = self.layout.servers.min(self.layout.workers());
                self.next_server = (self.next_server + 1) % servers;
                self.layout.workers() + self.next_server
            }
        };
        if server == self.me {
            self.queue(task, now);
        } else {
            self.send(server, RankMsg::Put(task));
        }
    }

    /// Queues a task here; one that can never run fails.
    fn queue(&mut self, task: Task, now: Instant) {
        if let Err(t) = self.balancer.put(task, now) {
            self.cannot_run(*t);
        }
    }

    /// Tells the other workers of each job `w` works for that it is gone:
    /// the job cannot go on.
    fn tell_job_parts(&self, w: Rank, reason: &str) {
        for (job, ranks) in self.balancer.jobs_of(w) {
            for to in ranks.into_iter().filter(|r| *r != w) {
                let msg = ParMsg::Gone {
                    job,
                    rank: w,
                    reason: reason.to_string(),
                };
                self.send(to, RankMsg::Par { to, msg });
            }
        }
    }

    /// A parallel task fails when fewer workers than it needs are left.
    fn cannot_gather(&self, t: Task) {
        let size = t.par.as_ref().map_or(1, |p| p.size);
        let left = self.balancer.live();
        let error = format!(
            "{}: @par={size} cannot run: {left} of this server's workers are left",
            t.func
        );
        self.deliver(failed(t.id, self.me, RunError::lost(error)));
    }

    /// A HARD task whose target's node was lost, or whose target worker
    /// is gone, fails.
    fn cannot_run(&self, t: Task) {
        let rank = t.target.map_or(0, |t| t.rank);
        let what = match self.balancer.rank_gone(rank) {
            true => "is gone",
            false => "was lost with its node",
        };
        let error = format!(
            "{}: its HARD target, rank {rank} on {}, {what}",
            t.func,
            self.layout.node_name(rank)
        );
        self.deliver(failed(t.id, rank, RunError::lost(error)));
    }

    /// Worker `w` left the run because its node `node` was lost: the node
    /// takes no more work, and what the worker was sent and did not finish
    /// is queued again (to run elsewhere).
    fn worker_left(&mut self, w: Rank, node: u32, reason: String, now: Instant) {
        if !self.left.insert(w) {
            return;
        }
        let early = self.if_not_started(w, &format!("its node was lost: {reason}"), now);
        if !early {
            tracing::warn!(
                "worker rank {w} left the run: node {} was lost: {reason}",
                self.layout.node_name(w)
            );
        }
        for t in self.balancer.node_lost(node, now) {
            self.cannot_run(t);
        }
        self.tell_job_parts(w, &reason);
        for t in self.balancer.lost(w) {
            self.queue(t, now);
        }
        self.tell_other_servers(&RankMsg::Leave {
            node,
            reason: reason.clone(),
        });
        if self.me == self.layout.leader() {
            self.node_lost(node, reason);
        }
    }

    /// Worker `w`'s process is gone: what it was sent and did not finish is
    /// queued again (to run elsewhere), and work only it could run fails.
    fn worker_gone(&mut self, w: Rank, how: String, now: Instant) {
        if !self.left.insert(w) {
            return;
        }
        let early = self.if_not_started(w, &how, now);
        let running = self.balancer.running(w);
        let what = match running {
            Some(id) => format!(" while running task {id}"),
            None => String::new(),
        };
        let reason = format!(
            "worker rank {w} on {} is gone: {how}{what}",
            self.layout.node_name(w)
        );
        match (self.stopping, early) {
            // Not a loss to report, but its tasks are put again all the
            // same: a worker stopped alone leaves a run that goes on.
            (true, _) => tracing::debug!("{reason}, as the run is being stopped"),
            // Reported as a rank that did not start.
            (_, true) => tracing::debug!("{reason}"),
            _ => tracing::warn!("{reason}; its tasks run elsewhere"),
        }
        for t in self.balancer.rank_lost(w, now) {
            self.cannot_run(t);
        }
        self.tell_job_parts(w, &reason);
        for t in self.balancer.lost(w) {
            self.queue(t, now);
        }
        self.tell_other_servers(&RankMsg::Gone {
            rank: w,
            reason: reason.clone(),
        });
        if self.me == self.layout.leader() {
            self.worker_gone_told(reason);
        }
    }

    /// Worker `w`, leaving (`why`), did not start if it never asked for
    /// work: the leader judges whether the run goes on without it. Whether
    /// it did not start.
    fn if_not_started(&mut self, w: Rank, why: &str, now: Instant) -> bool {
        if self.asked.contains(&w) || self.stopping {
            return false;
        }
        let reason = why.to_string();
        match self.me == self.layout.leader() {
            true => self.not_started(w, reason, now),
            false => self.send(
                self.layout.leader(),
                RankMsg::NotStarted { rank: w, reason },
            ),
        }
        true
    }

    /// On the leader: rank `w` did not start (`reason`). The run goes on
    /// while it has `--min-ranks` of its ranks; otherwise it fails
    /// `NOT_STARTED_GRACE` later, naming each that did not start by then
    /// (the ranks of a node whose daemon is gone, which each find it so at
    /// their start, say so together).
    fn not_started(&mut self, w: Rank, reason: String, now: Instant) {
        self.not_started.push((w, reason));
        let size = self.layout.size();
        let started = size - self.not_started.len() as u32;
        if started < self.min_ranks {
            self.not_started_fail.get_or_insert(now + NOT_STARTED_GRACE);
        } else {
            let (r, why) = self.not_started.last().expect("just pushed");
            tracing::warn!(
                "rank {r} on {} did not start: {why}; the run goes on with {started} of its \
                 {size} ranks (--min-ranks {})",
                self.layout.node_name(*r),
                self.min_ranks
            );
        }
    }

    /// On the leader: the run fails for the ranks that did not start.
    fn fail_not_started(&mut self, now: Instant) {
        match self.not_started_fail {
            Some(at) if at <= now => self.not_started_fail = None,
            _ => return,
        }
        // One line per node and cause.
        self.not_started.sort();
        let mut each: Vec<(String, &str, Vec<String>)> = Vec::new();
        for (r, why) in &self.not_started {
            let node = self.layout.node_name(*r).to_string();
            match each.iter_mut().find(|(n, w, _)| *n == node && *w == why) {
                Some((_, _, ranks)) => ranks.push(r.to_string()),
                None => each.push((node, why, vec![r.to_string()])),
            }
        }
        let each: Vec<String> = (each.iter())
            .map(|(node, why, ranks)| match ranks.len() {
                1 => format!("rank {} on {node}: {why}", ranks[0]),
                _ => format!("ranks {} on {node}: {why}", ranks.join(",")),
            })
            .collect();
        self.report_abort(RunError::launch(format!(
            "{} of the run's {} ranks did not start ({}); it needs {} (--min-ranks N lets it \
             go on with N)",
            self.not_started.len(),
            self.layout.size(),
            each.join("; "),
            self.min_ranks,
        )));
    }

    /// On the leader: a worker's process is gone (`reason` says which and
    /// how), for the run's summary.
    fn worker_gone_told(&mut self, reason: String) {
        let gone = &self.dispatch.workers_gone;
        gone.lock().expect("workers gone").push(reason.clone());
        self.count_gone(reason);
    }

    /// On the leader: one more worker of the run is gone (its node lost or
    /// its process dead).
    fn count_gone(&mut self, reason: String) {
        self.left_in_run += 1;
        if self.left_in_run == self.layout.workers() as usize {
            self.report_abort(RunError::lost(format!(
                "every worker is gone (last: {reason})"
            )));
        }
    }

    /// On the leader: a worker of node `node` left; with none left the run
    /// cannot go on.
    fn node_lost(&mut self, node: u32, reason: String) {
        let name = (self.layout.nodes.get(node as usize).cloned())
            .unwrap_or_else(|| format!("node {node}"));
        {
            let mut lost = self.dispatch.lost.lock().expect("lost");
            if !lost.iter().any(|(n, _)| *n == name) {
                lost.push((name.clone(), reason.clone()));
                self.dispatch.node_lost.notify_one();
            }
        }
        self.count_gone(format!("node {name} was lost: {reason}"));
    }

    /// Tells the balancer whether `w` may be sent another task: when it has
    /// none; ahead, when it runs one (the next is then there when it
    /// finishes, instead of a round trip later) or only short ones. Nothing
    /// goes ahead before every worker has asked once, or the first to ask
    /// would take work from those still starting. Short tasks go in
    /// batches: a worker sent `PREFETCH` is offered more once it has run
    /// half of them (`filling` while a batch is made), so that one message
    /// wakes it for many tasks rather than each.
    fn offer(&mut self, w: Rank, filling: bool) {
        let (all, long) = self.balancer.outstanding(w);
        let short_room = if filling { PREFETCH } else { PREFETCH / 2 + 1 };
        if all == 0 {
            self.balancer.ready(w);
        } else if self.asked.len() == self.workers && (all < 2 || (long == 0 && all < short_room)) {
            self.balancer.ready_ahead(w);
        }
    }

    fn sent_to(&mut self, w: Rank, task: Task) {
        self.send(w, RankMsg::Run(task));
        self.offer(w, true);
    }

    fn finished(&mut self, w: Rank, o: &Outcome, now: Instant) -> Finished {
        let finished = self.balancer.finished(w, o, now);
        self.offer(w, false);
        finished
    }

    /// Matches work to idle workers.
    fn assign(&mut self, now: Instant) {
        loop {
            let assigned = self.balancer.dispatch(now);
            for t in self.balancer.take_cannot() {
                self.cannot_gather(t);
            }
            if assigned.is_empty() {
                break;
            }
            for (w, task) in assigned {
                self.sent_to(w, task);
            }
        }
    }

    /// Matches work to idle workers, and steals for those left idle.
    fn after_events(&mut self, now: Instant) {
        self.fail_not_started(now);
        // A run about to fail starts no more work (nor ends first).
        if self.not_started_fail.is_some() {
            return;
        }
        self.assign(now);
        if self.layout.servers < 2 || self.stealing || self.closing || now < self.next_steal {
            return;
        }
        let idle: Vec<(Rank, u32)> = self
            .balancer
            .idle()
            .map(|w| (w, self.layout.node_of(w)))
            .collect();
        if idle.is_empty() {
            return;
        }
        let others = self.layout.servers - 1;
        let offset = self.me - self.layout.workers();
        self.next_server = (self.next_server + 1) % others;
        let victim = self.layout.workers() + (offset + 1 + self.next_server) % self.layout.servers;
        self.stealing = true;
        self.send(victim, RankMsg::Steal { idle });
    }

    /// When the loop must wake without an event: the run failing for
    /// ranks that did not start, a steal retry or SOFT tasks to weigh
    /// again.
    fn wake_at(&self, now: Instant) -> Option<Instant> {
        if self.closing || self.balancer.idle().next().is_none() {
            return self.not_started_fail;
        }
        let steal = (self.layout.servers > 1 && !self.stealing).then_some(self.next_steal);
        [steal, self.balancer.next_spill(now), self.not_started_fail]
            .into_iter()
            .flatten()
            .min()
    }
}

/// A server's state machine driven by hand: events in, time given, the
/// messages it sends read from each peer's channel. No sockets, no clock.
#[cfg(test)]
mod tests {
    use super::*;

    struct Harness {
        state: State,
        /// What the state machine sent to each other rank.
        sent: HashMap<Rank, mpsc::UnboundedReceiver<RankMsg>>,
        t0: Instant,
    }

    /// Server `me` of a run whose ranks are on `nodes` (the last `servers`
    /// ranks serve), every other rank connected.
    fn harness(nodes: &[&str], servers: u32, me: Rank) -> Harness {
        let names: Vec<String> = nodes.iter().map(|n| (*n).to_string()).collect();
        let layout = Arc::new(Layout::from_names(servers, &names).unwrap());
        let (events, _) = mpsc::unbounded_channel();
        let (engine, inbox) = mpsc::unbounded_channel();
        let dispatch = Arc::new(Dispatch::new(events, inbox));
        let mut state = State::new(me, layout.clone(), None, dispatch, engine);
        let mut sent = HashMap::new();
        for r in (0..layout.size()).filter(|r| *r != me) {
            let (tx, rx) = mpsc::unbounded_channel();
            state.peers.insert(r, tx);
            sent.insert(r, rx);
        }
        Harness {
            state,
            sent,
            t0: Instant::now(),
        }
    }

    impl Harness {
        fn msg(&mut self, from: Rank, msg: RankMsg) {
            assert!(self.state.handle(Event::Msg(from, msg), self.t0));
        }

        fn sent_to(&mut self, r: Rank) -> Vec<RankMsg> {
            let rx = self.sent.get_mut(&r).unwrap();
            std::iter::from_fn(|| rx.try_recv().ok()).collect()
        }

        fn runs_sent_to(&mut self, r: Rank) -> Vec<u64> {
            let msgs = self.sent_to(r);
            let runs = msgs.into_iter().filter_map(|m| match m {
                RankMsg::Run(t) => Some(t.id),
                _ => None,
            });
            runs.collect()
        }

        /// Puts `task` as its engine would, with the engine's wait for
        /// its outcome.
        fn put(&mut self, task: Task) -> oneshot::Receiver<Outcome> {
            let (tx, rx) = oneshot::channel();
            let pending = &self.state.dispatch.pending;
            pending.lock().unwrap().insert(task.id, tx);
            assert!(self.state.handle(Event::Put(task), self.t0));
            rx
        }
    }

    /// Task `n` of the engine of the first server, targeted at (rank,
    /// HARD) if given.
    fn task(n: u64, target: Option<(Rank, bool)>) -> Task {
        let target = target.map(|(rank, hard)| (rank, hard, false));
        crate::ranks::balancer::tests::task(ids::tagged(0, n), target, 0)
    }

    fn done(id: u64, rank: Rank) -> Outcome {
        Outcome {
            id,
            rank,
            ..Outcome::default()
        }
    }

    #[test]
    fn workers_that_leave_before_asking_for_work_did_not_start() {
        let aborted = |h: &Harness| h.state.dispatch.abort.lock().unwrap().clone();
        let leave = |why: &str| RankMsg::Leave {
            node: 1,
            reason: why.into(),
        };
        // Workers 0 and 1 on a, 2 and 3 on b; the leader, rank 4, on b.
        let nodes = ["a", "a", "b", "b", "b"];
        let mut h = harness(&nodes, 1, 4);
        h.state.min_ranks = 5;
        h.msg(0, RankMsg::Want);
        h.msg(3, leave("its daemon does not answer"));
        assert!(h.state.handle(Event::Closed(2, None), h.t0));
        assert!(aborted(&h).is_none(), "failed before the events at hand");
        h.state.after_events(h.t0);
        assert!(aborted(&h).is_none(), "failed before the others could say");
        assert_eq!(h.state.wake_at(h.t0), Some(h.t0 + NOT_STARTED_GRACE));
        h.state.after_events(h.t0 + NOT_STARTED_GRACE);
        let e = aborted(&h).expect("the run fails");
        assert_eq!(e.kind, ErrorKind::Launch);
        assert!(
            e.message
                .starts_with("2 of the run's 5 ranks did not start"),
            "{e}"
        );
        assert!(e.message.contains("rank 2 on b: it exited"), "{e}");
        assert!(e.message.contains("rank 3 on b: its node was lost"), "{e}");

        // Allowed to go on with three: it does.
        let mut h = harness(&nodes, 1, 4);
        h.state.min_ranks = 3;
        h.msg(2, leave("gone"));
        h.msg(3, leave("gone"));
        h.state.after_events(h.t0);
        assert!(aborted(&h).is_none());
        // A worker that asked for work and then left had started: it is a
        // loss the run goes on after, whatever --min-ranks says.
        let mut h = harness(&nodes, 1, 4);
        h.state.min_ranks = 5;
        h.msg(2, RankMsg::Want);
        h.msg(2, leave("gone"));
        h.state.after_events(h.t0);
        assert!(aborted(&h).is_none());
    }

    #[test]
    fn a_task_goes_to_the_worker_that_asked_and_its_outcome_to_its_engine() {
        let mut h = harness(&["a", "a", "a"], 1, 2);
        h.msg(0, RankMsg::Want);
        let mut outcome = h.put(task(1, None));
        h.state.after_events(h.t0);
        assert_eq!(h.runs_sent_to(0), vec![task(1, None).id]);
        assert!(h.runs_sent_to(1).is_empty());
        assert!(outcome.try_recv().is_err(), "answered before it ran");
        h.msg(0, RankMsg::Done(done(task(1, None).id, 0)));
        assert_eq!(outcome.try_recv().unwrap().rank, 0);
    }

    #[test]
    fn the_task_of_a_worker_gone_while_running_it_runs_on_another() {
        let mut h = harness(&["a", "a", "a"], 1, 2);
        let _outcome = h.put(task(1, None));
        h.msg(0, RankMsg::Want);
        h.state.after_events(h.t0);
        assert_eq!(h.runs_sent_to(0), vec![task(1, None).id]);
        h.msg(1, RankMsg::Want);
        let broke = Event::Closed(0, Some("connection reset".into()));
        assert!(h.state.handle(broke, h.t0));
        h.state.after_events(h.t0);
        assert_eq!(h.runs_sent_to(1), vec![task(1, None).id]);
        let gone = h.state.dispatch.workers_gone();
        assert_eq!(gone.len(), 1, "{gone:?}");
        assert!(gone[0].contains("worker rank 0"), "{gone:?}");
    }

    #[test]
    fn a_hard_task_for_a_gone_worker_fails_naming_it_and_a_soft_one_runs() {
        let mut h = harness(&["a", "a", "a"], 1, 2);
        assert!(h.state.handle(Event::Closed(1, None), h.t0));
        let mut hard = h.put(task(1, Some((1, true))));
        let failed = hard.try_recv().unwrap();
        let error = failed.error.unwrap();
        assert_eq!(error.kind, locus_proto::run::ErrorKind::Lost);
        let error = error.message;
        assert!(error.contains("HARD target, rank 1"), "{error}");
        assert!(error.contains("is gone"), "{error}");
        let _soft = h.put(task(2, Some((1, false))));
        h.msg(0, RankMsg::Want);
        h.state.after_events(h.t0);
        assert_eq!(h.runs_sent_to(0), vec![task(2, None).id]);
    }

    #[test]
    fn empty_steal_rounds_back_off_by_the_time_given() {
        // Workers 0..3, servers 4 and 5; server 4 serves workers 0 and 2.
        let mut h = harness(&["a", "a", "b", "b", "a", "b"], 2, 4);
        h.msg(0, RankMsg::Want);
        h.state.after_events(h.t0);
        let steals = |msgs: Vec<RankMsg>| {
            let steals = msgs.iter().filter(|m| matches!(m, RankMsg::Steal { .. }));
            steals.count()
        };
        assert_eq!(steals(h.sent_to(5)), 1, "an idle worker: steal");
        // An empty answer: the next round waits STEAL_BACKOFF_MIN, then
        // twice that after another.
        h.msg(5, RankMsg::Gift { tasks: Vec::new() });
        h.state.after_events(h.t0);
        assert_eq!(steals(h.sent_to(5)), 0, "asked again at once");
        let t1 = h.t0 + STEAL_BACKOFF_MIN;
        assert_eq!(h.state.wake_at(h.t0), Some(t1));
        h.state.after_events(t1);
        assert_eq!(steals(h.sent_to(5)), 1, "not asked once the wait was over");
        assert!(h
            .state
            .handle(Event::Msg(5, RankMsg::Gift { tasks: Vec::new() }), t1));
        assert_eq!(h.state.wake_at(t1), Some(t1 + 2 * STEAL_BACKOFF_MIN));
        // Work given: the worker runs it and the wait starts over.
        let given = Task {
            id: ids::tagged(1, 1),
            ..task(0, None)
        };
        let t2 = t1 + 2 * STEAL_BACKOFF_MIN;
        h.state.after_events(t2);
        assert!(h
            .state
            .handle(Event::Msg(5, RankMsg::Gift { tasks: vec![given] }), t2));
        h.state.after_events(t2);
        assert_eq!(h.runs_sent_to(0), vec![ids::tagged(1, 1)]);
        assert_eq!(h.state.backoff, STEAL_BACKOFF_MIN);
    }
}
