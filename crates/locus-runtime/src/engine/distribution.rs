//! Work spread over the servers: shares of large `foreach` loops, calls
//! shipped to other servers, writes of futures another server owns, and
//! the messages between engines.

use super::*;

impl Engine {
    pub(super) fn write_remote(
        self: &Arc<Self>,
        f: FutureId,
        what: remote::Write,
        at: Option<ir::Pos>,
        done: &Arc<Done>,
    ) {
        let (e, done) = (self.clone(), done.clone());
        tokio::spawn(async move {
            if let Err(err) = e.remote.write(f, what).await {
                e.fail(match at {
                    Some(at) => err.within(e.place(&at)),
                    None => err,
                });
            }
            e.step();
            drop(done);
        });
    }

    /// How a `foreach` of `count` iterations is shared out: contiguous parts,
    /// one per server, when there are enough to be worth a message;
    /// otherwise all here. This server's part comes last, so the others
    /// start while it starts its own.
    pub(super) fn shares(&self, count: u64) -> Vec<(u32, u64, u64)> {
        let servers = u64::from(self.remote.servers);
        if servers == 1 || count < SHARE_MIN * servers {
            return vec![(self.remote.me, 0, count)];
        }
        (1..=servers)
            .map(|k| {
                let server = (u64::from(self.remote.me) + k) % servers;
                let part = k % servers;
                let (from, to) = (count * part / servers, count * (part + 1) / servers);
                (server as u32, from, to)
            })
            .collect()
    }

    /// Runs a share of the `foreach` statement `i` of `block` on `server`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_share(
        self: &Arc<Self>,
        server: u32,
        func: &Arc<Function>,
        frame: &Arc<Frame>,
        block: &Arc<Block>,
        i: usize,
        items: Items,
        done: &Arc<Done>,
    ) {
        if server == self.remote.me {
            return self.iterate(func, frame, block, i, items, done).await;
        }
        let (func, block, binds) = (func.name.clone(), block.id, frame.flatten());
        let chain = Chain::clone(&frame.chain);
        self.ship(server, done, |id| Msg::Iterations {
            id,
            func,
            block,
            stmt: i as u32,
            binds,
            items,
            chain,
        });
    }

    /// Sends control work to another server; `done` is held until it
    /// reports the work finished.
    pub(super) fn ship(&self, server: u32, done: &Arc<Done>, msg: impl FnOnce(u64) -> Msg) {
        let id = self.remote.new_id();
        self.shipped
            .lock()
            .expect("shipped")
            .insert(id, done.clone());
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.remote.send(server, &msg(id));
    }

    /// A message from the engine of server `from`.
    pub(super) fn received_msg(self: &Arc<Self>, from: u32, msg: Msg) {
        match msg {
            Msg::Call {
                id,
                func,
                binds,
                chain,
            } => {
                let Some(callee) = self.funcs.get(&func).cloned() else {
                    return self.fail(RunError::internal(format!("no function '{func}'")));
                };
                let done = self.finished_guard(from, id);
                self.start_call(&callee, &binds, Arc::new(chain), &done);
            }
            Msg::Iterations {
                id,
                func,
                block,
                stmt,
                binds,
                items,
                chain,
            } => {
                let (Some(f), Some(b)) = (self.funcs.get(&func).cloned(), self.plans.block(block))
                else {
                    return self.fail(RunError::internal(format!("no block {block} in '{func}'")));
                };
                let (e, b, done) = (self.clone(), b.clone(), self.finished_guard(from, id));
                tokio::spawn(async move {
                    let frame = Frame::with_bindings(&binds, Arc::new(chain));
                    e.iterate(&f, &frame, &b, stmt as usize, items, &done).await;
                });
            }
            Msg::Finished { id } => {
                // Dropping the guard lets the caller's statement finish.
                self.shipped.lock().expect("shipped").remove(&id);
            }
            Msg::Read { req, id, what } => {
                let e = self.clone();
                tokio::spawn(async move {
                    let answer = match what {
                        remote::Read::Value => remote::Answer::Value(e.store.get(id).await),
                        remote::Read::Member(k) => {
                            remote::Answer::Member(e.store.member(id, &k).await)
                        }
                        remote::Read::Path => {
                            remote::Answer::Value(Value::Str(e.store.path(id).await))
                        }
                    };
                    e.remote.send(from, &Msg::Reply { req, answer });
                });
            }
            Msg::Write { req, id, what } => {
                let r = match what {
                    remote::Write::Assign(v) => self.store.assign(id, v),
                    remote::Write::Insert(path, v) => self.store.insert(id, &path, v),
                    remote::Write::Update(op, v) => self.store.update(id, op, v),
                };
                self.step();
                let answer = remote::Answer::Written(r);
                self.remote.send(from, &Msg::Reply { req, answer });
            }
            Msg::Status { req } => {
                let answer = remote::Answer::Status(self.status());
                self.remote.send(from, &Msg::Reply { req, answer });
            }
            Msg::Remake { req, paths } => {
                let e = self.clone();
                tokio::spawn(async move {
                    let answer = remote::Answer::Remade(e.remake_here(&paths).await);
                    e.remote.send(from, &Msg::Reply { req, answer });
                });
            }
            Msg::Repair { req } => {
                let e = self.clone();
                tokio::spawn(async move {
                    let answer = remote::Answer::Repaired(e.repair_here().await);
                    e.remote.send(from, &Msg::Reply { req, answer });
                });
            }
            Msg::Reply { req, answer } => self.remote.answered(req, answer),
            Msg::Progress(p) => {
                self.remote.progressed(from, p);
                self.show_progress();
            }
        }
    }

    /// The guard of work received from server `from`: when it and all it
    /// started are done, `from` is told.
    pub(super) fn finished_guard(self: &Arc<Self>, from: u32, id: u64) -> Arc<Done> {
        self.received.fetch_add(1, Ordering::Relaxed);
        let e = self.clone();
        Done::new(None, move || e.remote.send(from, &Msg::Finished { id }))
    }
}

/// Iterations per server below which a `foreach` is not shared out.
const SHARE_MIN: u64 = 64;
