//! `locus bench replicas`: what a second copy of every file costs. Two
//! local clusters of the same size, one keeping one copy and one keeping
//! two (`--replicas 2`), side by side in the same run: a writer on node 0
//! writes large files, then many clients create small files at once, on
//! each cluster in turn (alternating which goes first, medians of rounds).
//! Beside them, what this host itself allows a second copy made while a
//! file is written: the same writes on the store's file system without
//! Locus, alone and with a thread copying what is written as it is written.

use crate::io::{on_threads, settle, MIB};
use crate::report::{header, median, row, row_precise, target};
use crate::workspace::{default_root, Workspace};
use locus_fs::{copy_as_written, Client, Store};
use locus_launch::Daemons;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

pub struct ReplicasOpts {
    pub nodes: u32,
    /// Large files written per round, and their size in bytes.
    pub files: u32,
    pub size: u64,
    /// Small files created per round.
    pub creates: u32,
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    pub daemons: Daemons,
}

/// Creates each client keeps in flight.
const DEPTH: usize = 16;

struct Side {
    _ws: Workspace,
    writer: Client,
    clients: Vec<Client>,
}

impl Side {
    fn start(root: &std::path::Path, opts: &ReplicasOpts, replicas: u32) -> anyhow::Result<Side> {
        let daemons = Daemons {
            replicas,
            ..opts.daemons.clone()
        };
        let ws = Workspace::start(
            &root.join(format!("r{replicas}")),
            opts.nodes,
            &daemons,
            opts.keep,
        )?;
        let writer = ws.client(0)?;
        let clients = (0..opts.nodes)
            .map(|n| ws.client(n))
            .collect::<anyhow::Result<_>>()?;
        Ok(Side {
            _ws: ws,
            writer,
            clients,
        })
    }

    /// Writes `files` files of `size` bytes from node 0, one after another.
    async fn write(&self, dir: &str, files: u32, size: u64) -> anyhow::Result<Duration> {
        let chunk = vec![7u8; MIB as usize];
        self.writer.mkdir_all(dir).await?;
        settle();
        let start = Instant::now();
        for i in 0..files {
            let mut out = self.writer.create(&format!("{dir}/f{i}")).await?;
            for _ in 0..size / MIB {
                out.write_all(&chunk)?;
            }
            out.close().await?;
        }
        Ok(start.elapsed())
    }

    /// Creates `count` one-line files, spread over every node's client,
    /// `DEPTH` in flight per client.
    async fn create(&self, dir: &str, count: u32) -> anyhow::Result<Duration> {
        self.writer.mkdir_all(dir).await?;
        let start = Instant::now();
        let per = count.div_ceil(self.clients.len() as u32);
        let mut tasks = Vec::new();
        for (k, client) in self.clients.iter().enumerate() {
            for lane in 0..DEPTH {
                let (client, dir) = (client.clone(), dir.to_string());
                let names: Vec<String> = (0..per)
                    .filter(|i| *i as usize % DEPTH == lane)
                    .map(|i| format!("{dir}/c{k}-{i}"))
                    .collect();
                tasks.push(tokio::spawn(async move {
                    for name in names {
                        client.put(&name, b"x\n").await?;
                    }
                    anyhow::Ok(())
                }));
            }
        }
        for t in tasks {
            t.await??;
        }
        Ok(start.elapsed())
    }
}

/// What this host allows a second copy made while a file is written,
/// without Locus: `files` files of `size` bytes written in 1 MiB pieces in
/// `dir`, (0) alone, (1) each with a thread copying what it has so far into
/// another file (`copy_as_written`, as the first replica on
/// this host is made), (2) each piece written to two files at once by two
/// threads. The three total times.
fn raw_copies(dir: &Path, files: u32, size: u64) -> anyhow::Result<[Duration; 3]> {
    let chunk = Arc::new(vec![7u8; MIB as usize]);
    let pieces = size / MIB;
    let mut took = [Duration::ZERO; 3];
    for (k, took) in took.iter_mut().enumerate() {
        settle();
        for i in 0..files {
            let (src, dst) = (dir.join(format!("f{i}")), dir.join(format!("f{i}.copy")));
            let start = Instant::now();
            let mut out = File::create(&src)?;
            match k {
                0 => (0..pieces).try_for_each(|_| out.write_all(&chunk))?,
                1 => {
                    let (from, to) = (File::open(&src)?, File::create(&dst)?);
                    let done = Arc::new(AtomicBool::new(false));
                    let copier = std::thread::spawn({
                        let done = done.clone();
                        move || copy_as_written(&from, &to, &done, &AtomicBool::new(false))
                    });
                    (0..pieces).try_for_each(|_| out.write_all(&chunk))?;
                    done.store(true, Ordering::Release);
                    let n = copier
                        .join()
                        .map_err(|_| anyhow::anyhow!("copy thread panicked"))??;
                    anyhow::ensure!(n == size, "copied {n} of {size} bytes");
                }
                _ => {
                    let mut other = File::create(&dst)?;
                    let (go, back) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
                    let twin = std::thread::spawn({
                        let (go, back, chunk) = (go.clone(), back.clone(), chunk.clone());
                        move || -> std::io::Result<()> {
                            for _ in 0..pieces {
                                go.wait();
                                let written = other.write_all(&chunk);
                                back.wait();
                                written?;
                            }
                            Ok(())
                        }
                    });
                    for _ in 0..pieces {
                        go.wait();
                        let written = out.write_all(&chunk);
                        back.wait();
                        written?;
                    }
                    twin.join()
                        .map_err(|_| anyhow::anyhow!("writer thread panicked"))??;
                }
            }
            drop(out);
            *took += start.elapsed();
            let _ = std::fs::remove_file(&src);
            let _ = std::fs::remove_file(&dst);
        }
    }
    Ok(took)
}

/// What this host allows small files stored twice, without Locus's
/// daemons and metadata: `creates` files put by `threads` threads as a
/// node's store keeps them (a private directory made, the file written in
/// it, the directory renamed to be the version's), (0) once, (1) and each
/// copied into a second store as a same-host replica is (`Store::import`).
/// The two total times.
fn raw_creates(dir: &Path, creates: u32, threads: u32) -> anyhow::Result<[Duration; 2]> {
    let mut took = [Duration::ZERO; 2];
    for (k, took) in took.iter_mut().enumerate() {
        let node = |n: &str| Store::open(&dir.join(format!("{k}{n}")));
        let stores = [node("a")?, node("b")?];
        settle();
        *took = on_threads(threads, |t| -> anyhow::Result<()> {
            for i in 0..creates / threads {
                let (name, stamp) = (format!("t{t}-{i}"), u64::from(t) << 32 | u64::from(i));
                let path = format!("/small/{name}");
                let out = stores[0].private_file(&name)?;
                std::fs::write(&out, b"x\n")?;
                stores[0].install(&out, &path, stamp)?;
                if k == 1 {
                    stores[1].import(&stores[0].data_path(&path, stamp), &path, stamp)?;
                }
            }
            Ok(())
        })?;
        for n in ["a", "b"] {
            std::fs::remove_dir_all(dir.join(format!("{k}{n}")))?;
        }
    }
    Ok(took)
}

/// The median over rounds of `amount` per second of column `k`.
fn rate<const N: usize>(rounds: &[[Duration; N]], k: usize, amount: f64) -> f64 {
    median(rounds.iter().map(|t| amount / t[k].as_secs_f64()).collect())
}

pub fn run(opts: ReplicasOpts) -> anyhow::Result<()> {
    if opts.size == 0 || !opts.size.is_multiple_of(MIB) || opts.nodes < 2 {
        anyhow::bail!("give at least 2 nodes and a size that is a positive multiple of 1 MiB");
    }
    let root = opts.dir.clone().unwrap_or_else(|| default_root("replicas"));
    if root.exists() {
        anyhow::bail!("{} already exists; give a new --dir", root.display());
    }
    let one = Side::start(&root, &opts, 1)?;
    let two = Side::start(&root, &opts, 2)?;
    println!("{}", crate::machine::describe());
    println!(
        "replicas: {} nodes on this host (loopback); per round node 0 writes {} files x {} MiB, \
         then {} clients create {} small files ({DEPTH} in flight each); {} rounds after a \
         warm-up (median shown), the two clusters alternating",
        opts.nodes,
        opts.files,
        opts.size / MIB,
        opts.nodes,
        opts.creates,
        opts.rounds
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (mut writes, mut creates) = (Vec::new(), Vec::new());
    let (mut raw, mut raw_small) = (Vec::new(), Vec::new());
    let scratch = root.join("raw");
    std::fs::create_dir_all(&scratch)?;
    for n in 0..=opts.rounds.max(1) {
        let mut w = [Duration::ZERO; 2];
        let mut c = [Duration::ZERO; 2];
        let order = if n % 2 == 0 { [0, 1] } else { [1, 0] };
        for k in order {
            let side = [&one, &two][k];
            let dir = format!("/bench/r{n}");
            w[k] = rt.block_on(side.write(&format!("{dir}/big"), opts.files, opts.size))?;
            c[k] = rt.block_on(side.create(&format!("{dir}/small"), opts.creates))?;
            rt.block_on(side.writer.remove_all(&dir))?;
        }
        let r = raw_copies(&scratch, opts.files, opts.size)?;
        let small = raw_creates(&scratch, opts.creates, opts.nodes)?;
        if n > 0 {
            writes.push(w);
            creates.push(c);
            raw.push(r);
            raw_small.push(small);
        }
    }
    let bytes = (u64::from(opts.files) * opts.size) as f64 / 1e9;
    let (w1, w2) = (rate(&writes, 0, bytes), rate(&writes, 1, bytes));
    let created = f64::from(opts.creates);
    let (c1, c2) = (rate(&creates, 0, created), rate(&creates, 1, created));
    let (alone, copied, twice) = (
        rate(&raw, 0, bytes),
        rate(&raw, 1, bytes),
        rate(&raw, 2, bytes),
    );
    header("", "1 copy");
    row_precise("large-file writes, GB/s (2 copies)", w2, w1);
    row_precise("host: write + copy as written", copied, alone);
    row_precise("host: each piece to 2 files at once", twice, alone);
    row("small-file creates /s (2 copies)", c2, c1);
    let stored = f64::from(opts.creates / opts.nodes * opts.nodes);
    let (once, twice_small) = (rate(&raw_small, 0, stored), rate(&raw_small, 1, stored));
    row("host: small files stored twice", twice_small, once);
    println!(
        "host rows: the same files written without Locus (GB/s), beside the writes alone: with \
         a thread copying each as it is written (as Locus's first copy on this host is made), \
         and with each 1 MiB piece written to two files by two threads at once; the small \
         files stored by {} threads as the nodes' stores keep them, without daemons or \
         metadata (files/s), each also copied into a second store beside stored once",
        opts.nodes
    );
    target("writes with 2 copies ≥ 80% of 1 copy", w2 >= 0.8 * w1);
    target("creates with 2 copies ≥ 60% of 1 copy", c2 >= 0.6 * c1);
    drop((one, two));
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}
