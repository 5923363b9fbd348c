//! `locus bench replicas`: what a second copy of every file costs. Two
//! local clusters of the same size, one keeping one copy and one keeping
//! two (`--replicas 2`), side by side in the same run: a writer on node 0
//! writes large files, then many clients create small files at once, on
//! each cluster in turn (alternating which goes first, medians of rounds).

use crate::io::{settle, MIB};
use crate::report::{header, median, row, row_precise, target};
use crate::workspace::{default_root, Workspace};
use locus_fs::Client;
use locus_launch::Daemons;
use std::io::Write;
use std::path::PathBuf;
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
        if n > 0 {
            writes.push(w);
            creates.push(c);
        }
    }
    let bytes = (opts.files as u64 * opts.size) as f64 / 1e9;
    let rate = |v: &[[Duration; 2]], k: usize, amount: f64| {
        median(v.iter().map(|t| amount / t[k].as_secs_f64()).collect())
    };
    let (w1, w2) = (rate(&writes, 0, bytes), rate(&writes, 1, bytes));
    let created = opts.creates as f64;
    let (c1, c2) = (rate(&creates, 0, created), rate(&creates, 1, created));
    header("", "1 copy");
    row_precise("large-file writes, GB/s (2 copies)", w2, w1);
    row("small-file creates /s (2 copies)", c2, c1);
    target("writes with 2 copies ≥ 80% of 1 copy", w2 >= 0.8 * w1);
    target("creates with 2 copies ≥ 60% of 1 copy", c2 >= 0.6 * c1);
    drop((one, two));
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(())
}
