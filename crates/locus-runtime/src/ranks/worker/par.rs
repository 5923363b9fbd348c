//! A worker's part in a parallel task (`@par=N`): each of the N workers its
//! server reserved stages the task's inputs on its node and gives its
//! outputs private places there; the first (the head) gathers every
//! part's command line, launches the MPI job (`exec::job`) and tells the
//! others how it ended; each registers on its own node the outputs its
//! ranks wrote and tells the head, which reports the task for all of them.
//! Their messages pass through their server (`RankMsg::Par`).

use super::*;
use crate::exec::job::JobRank;
use locus_proto::run::{JobId, Par, ParMsg, ParPart};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

type Inbox = mpsc::UnboundedReceiver<ParMsg>;
/// A part's mailbox: its sender, and its inbox until the part takes it.
type Mailbox = (mpsc::UnboundedSender<ParMsg>, Option<Inbox>);

/// This worker's mailboxes for the parallel tasks it takes part in, by job
/// (one task's job gathered again may take this worker again): a message
/// may come before its part starts.
#[derive(Default)]
pub(crate) struct Jobs {
    /// Weak: the worker's writer ends once the worker drops its sender.
    out: OnceLock<mpsc::WeakUnboundedSender<RankMsg>>,
    boxes: Mutex<HashMap<JobId, Mailbox>>,
    /// Jobs whose part ended here: what still comes for them is dropped.
    ended: Mutex<HashSet<JobId>>,
    /// Set once the run is over for this worker: no message comes any more.
    closed: std::sync::atomic::AtomicBool,
}

impl Jobs {
    /// Messages to the other parts go out on `out` (to the server).
    pub(crate) fn connect(&self, out: &mpsc::UnboundedSender<RankMsg>) {
        let _ = self.out.set(out.downgrade());
    }

    /// The run is over for this worker (it was told to shut down or to
    /// stop): its parts waiting for another worker's word stop waiting.
    pub(crate) fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.boxes.lock().expect("jobs").clear();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A message for one of this worker's parts.
    pub(crate) fn deliver(&self, msg: ParMsg) {
        let job = msg.job();
        if self.is_closed() || self.ended.lock().expect("jobs").contains(&job) {
            return;
        }
        let mut boxes = self.boxes.lock().expect("jobs");
        let _ = Self::mailbox(&mut boxes, job).0.send(msg);
    }

    fn mailbox(boxes: &mut HashMap<JobId, Mailbox>, job: JobId) -> &mut Mailbox {
        boxes.entry(job).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            (tx, Some(rx))
        })
    }

    fn inbox(&self, job: JobId) -> Inbox {
        if self.is_closed() {
            return mpsc::unbounded_channel().1;
        }
        let mut boxes = self.boxes.lock().expect("jobs");
        (Self::mailbox(&mut boxes, job).1.take()).expect("one part per job and worker")
    }

    fn end(&self, job: JobId) {
        self.boxes.lock().expect("jobs").remove(&job);
        self.ended.lock().expect("jobs").insert(job);
    }

    fn send(&self, to: Rank, msg: ParMsg) {
        if let Some(out) = self.out.get().and_then(mpsc::WeakUnboundedSender::upgrade) {
            let _ = out.send(RankMsg::Par { to, msg });
        }
    }
}

impl App<'_> {
    /// A part other than the head's: stages, hands its command line to the
    /// head, waits for the job's end, registers what its ranks wrote.
    pub(super) async fn run_part(&self, par: &Par, argv: &[Arg], io: &mut Io) {
        let jobs = &self.cfg.jobs;
        let head = par.head().expect("a reserved job");
        let job = par.job(self.id);
        let mut inbox = jobs.inbox(job);
        let prepared = (self.prepare(argv, [&None, &None, &None], io, Staging::JOB_PART)).await;
        let started = std::time::SystemTime::now();
        let staged = match &prepared {
            Ok(p) => Ok(p.words.clone()),
            Err(e) => Err(e.clone()),
        };
        let msg = ParMsg::Staged {
            job,
            index: par.index,
            argv: staged,
            lost: io.lost.clone(),
        };
        jobs.send(head, msg);
        let ok = loop {
            let msg = tokio::select! {
                m = inbox.recv() => m,
                () = self.cfg.stopped() => None,
            };
            match msg {
                Some(ParMsg::Ended { ok, .. }) => break ok,
                Some(ParMsg::Gone { rank, .. }) if rank == head => break false,
                Some(_) => {}
                None => break false,
            }
        };
        let mut part = ParPart {
            rank: self.cfg.me,
            ..ParPart::default()
        };
        if let (true, Ok(mut p)) = (ok, prepared) {
            // What this node's ranks wrote (nothing was there before).
            p.outputs
                .retain(|o| written_since(&o.local, &None, started));
            if let Err(e) = self.publish(&mut p.outputs, io).await {
                part.error = Some(e);
            }
        }
        part.local_bytes = io.local;
        part.remote_bytes = io.remote;
        part.written_bytes = io.written;
        part.made = std::mem::take(&mut io.made);
        jobs.end(job);
        jobs.send(head, ParMsg::Registered { job, part });
    }

    /// The head's part: stages, gathers the others' command lines, runs the
    /// job (again on failure, as `--retries` says), tells the others how it
    /// ended, and registers; returns every part, its own first.
    pub(super) async fn run_head(
        &self,
        par: &Par,
        argv: &[Arg],
        declared: &[String],
        streams: [&Option<Arg>; 3],
        (io, exit, attempts): (&mut Io, &mut Option<i32>, &mut u32),
    ) -> (Vec<ParPart>, Result<(), RunError>) {
        let jobs = &self.cfg.jobs;
        let job = par.job(self.id);
        let mut inbox = jobs.inbox(job);
        let others = &par.ranks[1..];
        let prepared = self.prepare(argv, streams, io, Staging::JOB_HEAD).await;
        let mut failure = prepared.as_ref().err().cloned();
        let mut argvs: Vec<Option<Vec<String>>> = vec![None; par.ranks.len()];
        let mut gone: HashSet<Rank> = HashSet::new();
        let mut staged = 0;
        while staged + gone.len() < others.len() {
            let msg = tokio::select! {
                m = inbox.recv() => m,
                () = self.cfg.stopped() => None,
            };
            match msg {
                Some(ParMsg::Staged {
                    index, argv, lost, ..
                }) => {
                    staged += 1;
                    // Named in the outcome: the run may make them again.
                    for l in lost {
                        if !io.lost.contains(&l) {
                            io.lost.push(l);
                        }
                    }
                    match argv {
                        Ok(a) => argvs[index as usize] = Some(a),
                        Err(e) => {
                            failure.get_or_insert(e);
                        }
                    }
                }
                Some(ParMsg::Gone { rank, reason, .. }) => {
                    failure.get_or_insert(self.lost(rank, &reason));
                    gone.insert(rank);
                }
                Some(_) => {}
                None => {
                    failure.get_or_insert(self.stopped());
                    break;
                }
            }
        }
        let mut result = match (prepared, failure) {
            (Ok(mut p), None) => {
                argvs[0] = Some(p.words.clone());
                let ranks: Vec<JobRank> = (par.ranks.iter().zip(argvs))
                    .map(|(r, argv)| {
                        let node = self.cfg.layout.node_name(*r).to_string();
                        JobRank {
                            host: node.clone(),
                            argv: argv.expect("every part staged"),
                            env: vec![
                                ("LOCUS_NODE".to_string(), node),
                                ("LOCUS_RANK".to_string(), r.to_string()),
                            ],
                        }
                    })
                    .collect();
                let ran = self
                    .launch(&ranks, &mut p, declared, (io, exit, attempts))
                    .await;
                ran.map(|written| (p, written))
            }
            (_, Some(e)) | (Err(e), _) => Err(e),
        };
        for &r in others.iter().filter(|r| !gone.contains(r)) {
            let ok = result.is_ok();
            jobs.send(r, ParMsg::Ended { job, ok });
        }
        // Its own ranks' outputs are registered while the other parts
        // register theirs.
        let mut mine = match &mut result {
            Ok((p, written)) => {
                let wrote = |o: &locus_fs::Output| {
                    (declared.iter().zip(written.iter()))
                        .any(|(d, w)| *w && fs_path(d) == Some(o.path.as_str()))
                };
                Some(p.outputs.split(wrote))
            }
            Err(_) => None,
        };
        let publishing = async {
            match &mut mine {
                Some(m) => self.publish(m, io).await,
                None => Ok(()),
            }
        };
        let collecting = self.collect(&mut inbox, others.len(), &mut gone);
        let (published, (mut parts, lost)) = tokio::join!(publishing, collecting);
        jobs.end(job);
        io.job_lost_a_worker = !gone.is_empty();
        let failed = lost.or_else(|| parts.iter().find_map(|p| p.error.clone()));
        let result = match (result, published, failed) {
            (Ok((mut p, _)), Ok(()), None) => {
                self.register_rest(&mut p, declared, &parts, io).await
            }
            (Err(e), ..) | (_, Err(e), _) | (_, _, Some(e)) => Err(e),
        };
        let mine = ParPart {
            rank: self.cfg.me,
            local_bytes: io.local,
            remote_bytes: io.remote,
            written_bytes: io.written,
            made: Vec::new(),
            error: None,
        };
        for p in &parts {
            io.local += p.local_bytes;
            io.remote += p.remote_bytes;
            io.written += p.written_bytes;
            io.made.extend(p.made.iter().cloned());
            for (path, record) in &p.made {
                io.outputs.push(Seen::locus(path, record.stamp));
            }
        }
        parts.sort_by_key(|p| par.ranks.iter().position(|r| *r == p.rank));
        parts.insert(0, mine);
        (parts, result)
    }

    /// Runs the job until it succeeds or has no attempts left; which of
    /// `declared` this node's ranks wrote.
    async fn launch(
        &self,
        ranks: &[JobRank],
        p: &mut Prepared<'_>,
        declared: &[String],
        (io, exit, attempts): (&mut Io, &mut Option<i32>, &mut u32),
    ) -> Result<Vec<bool>, RunError> {
        let cfg = self.cfg;
        let node = cfg.layout.node_name(cfg.me);
        let dir = cfg.run_dir.join("jobs").join(self.id.to_string());
        let cmd = (cfg.job_launcher.command(ranks, &dir))
            .map_err(|e| RunError::task(format!("app '{}': {e}", self.func)))?;
        let command = io.argv.join(" ");
        loop {
            let started = std::time::SystemTime::now();
            let before: Vec<_> = declared.iter().map(|d| p.outputs.state(d)).collect();
            let spawned = tokio::select! {
                s = spawn(cfg, self.id, &cmd, &p.files, self.timeout) => s,
                () = cfg.stopped() => return Err(self.stopped()),
            };
            let ended = spawned.map_err(|e| {
                RunError::task(format!(
                    "app '{}': cannot start the job `{}` on {node} (rank {}): {e}",
                    self.func,
                    cmd.join(" "),
                    cfg.me
                ))
            })?;
            *exit = ended.code;
            io.usage.cpu_us += ended.usage.cpu_us;
            io.usage.max_rss_kib = io.usage.max_rss_kib.max(ended.usage.max_rss_kib);
            let failure = match ended.code {
                Some(0) => {
                    let written = (declared.iter().zip(&before))
                        .map(|(d, was)| p.outputs.written(d, was, started))
                        .collect();
                    return Ok(written);
                }
                Some(code) => format!("exited with code {code}"),
                None => format!(
                    "ran longer than the task timeout ({:?}) and was killed",
                    self.timeout.unwrap_or_default()
                ),
            };
            if *attempts > cfg.retries {
                return Err(RunError::task(format!(
                    "app '{}' failed as a job of {} ranks from {node} (rank {}): `{command}` \
                     {failure}{}",
                    self.func,
                    ranks.len(),
                    cfg.me,
                    if *attempts > 1 {
                        format!(" ({attempts} attempts)")
                    } else {
                        String::new()
                    }
                )));
            }
            *attempts += 1;
        }
    }

    /// Every other part's registration, or its worker's end (the first
    /// such end is the job's failure).
    async fn collect(
        &self,
        inbox: &mut Inbox,
        others: usize,
        gone: &mut HashSet<Rank>,
    ) -> (Vec<ParPart>, Option<RunError>) {
        let (mut parts, mut lost) = (Vec::new(), None);
        while parts.len() + gone.len() < others {
            match inbox.recv().await {
                Some(ParMsg::Registered { part, .. }) => parts.push(part),
                Some(ParMsg::Gone { rank, reason, .. }) if gone.insert(rank) => {
                    lost.get_or_insert_with(|| self.lost(rank, &reason));
                }
                Some(_) => {}
                None => break,
            }
        }
        (parts, lost)
    }

    /// After a successful job whose outputs written here are registered:
    /// every declared output was written by some rank, or made empty here
    /// (unmapped), and those no rank wrote are registered empty here.
    async fn register_rest(
        &self,
        p: &mut Prepared<'_>,
        declared: &[String],
        parts: &[ParPart],
        io: &mut Io,
    ) -> Result<(), RunError> {
        let made = |d: &str| {
            let here = io.made.iter();
            let elsewhere = parts.iter().flat_map(|x| &x.made);
            here.chain(elsewhere).any(|(m, _)| fs_path(m) == fs_path(d))
        };
        let mut empty = Vec::new();
        for d in declared.iter().filter(|d| !made(d)) {
            if !p.made_empty.contains(&d.as_str()) {
                return Err(RunError::task(format!(
                    "app '{}': its job exited 0 without writing its output {d} on any of \
                     its ranks' nodes (missing output)",
                    self.func
                )));
            }
            empty.push(d.clone());
        }
        p.outputs
            .retain(|o| empty.iter().any(|d| fs_path(d) == Some(o.path.as_str())));
        self.publish(&mut p.outputs, io).await
    }

    fn lost(&self, rank: Rank, reason: &str) -> RunError {
        RunError::lost(format!(
            "app '{}': rank {rank} of its job on {} is gone: {reason}",
            self.func,
            self.cfg.layout.node_name(rank)
        ))
    }

    fn stopped(&self) -> RunError {
        RunError::new(
            ErrorKind::Interrupted,
            format!(
                "app '{}' on {} (rank {}) was stopped with the run while its job ran",
                self.func,
                self.cfg.layout.node_name(self.cfg.me),
                self.cfg.me
            ),
        )
    }
}
