//! `locus bench meta`: an mdtest-like metadata benchmark. C clients each
//! create, stat, then remove K empty files, first each in its own directory,
//! then all in one shared directory; then one directory of N entries is
//! listed. The same operations on the raw local file system, in the same
//! run, are the baseline.

use crate::io::{on_threads, settle};
use crate::report::{header, row, row_precise, target};
use crate::workspace::{default_root, Workspace};
use locus_fs::Client;
use locus_launch::Daemons;
use locus_proto::FsResult;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct MetaOpts {
    pub nodes: u32,
    pub clients: u32,
    pub files: u32,
    /// Operations each client keeps in flight.
    pub depth: u32,
    /// Entries in the directory that is listed.
    pub list: u32,
    pub dir: Option<PathBuf>,
    /// Where the raw baseline runs (default: beside the stores).
    pub raw_dir: Option<PathBuf>,
    pub keep: bool,
    pub daemons: Daemons,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Layout {
    OwnDirs,
    SharedDir,
}

impl Layout {
    pub fn label(self) -> &'static str {
        match self {
            Layout::OwnDirs => "own dirs",
            Layout::SharedDir => "shared dir",
        }
    }

    pub fn path(self, root: &str, client: u32, i: u32) -> String {
        match self {
            Layout::OwnDirs => format!("{root}/c{client}/f{i}"),
            Layout::SharedDir => format!("{root}/shared/c{client}-f{i}"),
        }
    }
}

/// Runs `op(client, index)` for every client and `0..files`, each client with
/// `depth` operations in flight; returns the wall time.
pub(crate) async fn phase<F, Fut>(
    clients: &[Client],
    files: u32,
    depth: u32,
    op: F,
) -> anyhow::Result<Duration>
where
    F: Fn(Client, u32, u32) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = FsResult<()>> + Send,
{
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (k, client) in clients.iter().enumerate() {
        for lane in 0..depth.min(files).max(1) {
            let (client, op) = (client.clone(), op.clone());
            set.spawn(async move {
                for i in (lane..files).step_by(depth.max(1) as usize) {
                    op(client.clone(), k as u32, i).await?;
                }
                FsResult::Ok(())
            });
        }
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(start.elapsed())
}

fn rate(ops: u64, d: Duration) -> f64 {
    ops as f64 / d.as_secs_f64()
}

/// The raw baseline: C threads each doing one operation on K files.
fn raw_phase(
    dir: &Path,
    layout: Layout,
    clients: u32,
    files: u32,
    op: fn(&Path) -> std::io::Result<()>,
) -> anyhow::Result<Duration> {
    let root = dir.to_str().unwrap_or_default();
    let took = on_threads(clients, |k| -> std::io::Result<()> {
        for i in 0..files {
            op(Path::new(&layout.path(root, k, i)))?;
        }
        Ok(())
    })?;
    Ok(took)
}

fn raw_create(p: &Path) -> std::io::Result<()> {
    std::fs::File::create_new(p).map(drop)
}

fn raw_stat(p: &Path) -> std::io::Result<()> {
    std::fs::metadata(p).map(drop)
}

fn raw_remove(p: &Path) -> std::io::Result<()> {
    std::fs::remove_file(p)
}

struct Rates {
    create: f64,
    stat: f64,
    remove: f64,
}

fn raw_rates(dir: &Path, layout: Layout, clients: u32, files: u32) -> anyhow::Result<Rates> {
    for k in 0..clients {
        std::fs::create_dir_all(dir.join(format!("c{k}")))?;
    }
    std::fs::create_dir_all(dir.join("shared"))?;
    let ops = u64::from(clients) * u64::from(files);
    let rates = Rates {
        create: rate(ops, raw_phase(dir, layout, clients, files, raw_create)?),
        stat: rate(ops, raw_phase(dir, layout, clients, files, raw_stat)?),
        remove: rate(ops, raw_phase(dir, layout, clients, files, raw_remove)?),
    };
    // Beside the stores, the baseline's write-back would otherwise land in
    // the daemons' next commits (one journal) and slow Locus's next phase.
    settle();
    Ok(rates)
}

async fn locus_rates(
    clients: &[Client],
    layout: Layout,
    files: u32,
    depth: u32,
) -> anyhow::Result<Rates> {
    let root = "/bench";
    let ops = clients.len() as u64 * u64::from(files);
    let create = phase(clients, files, depth, move |c, k, i| async move {
        c.create_empty(&layout.path(root, k, i)).await.map(drop)
    })
    .await?;
    let stat = phase(clients, files, depth, move |c, k, i| async move {
        c.stat(&layout.path(root, k, i)).await.map(drop)
    })
    .await?;
    let remove = phase(clients, files, depth, move |c, k, i| async move {
        c.unlink(&layout.path(root, k, i)).await
    })
    .await?;
    Ok(Rates {
        create: rate(ops, create),
        stat: rate(ops, stat),
        remove: rate(ops, remove),
    })
}

pub fn run(opts: MetaOpts) -> anyhow::Result<()> {
    let root = opts.dir.clone().unwrap_or_else(|| default_root("meta"));
    let mut ws = Workspace::start(&root, opts.nodes, &opts.daemons, opts.keep)?;
    if let Some(d) = &opts.raw_dir {
        ws.raw_under(d);
    }
    println!("{}", crate::machine::describe());
    println!(
        "meta: {} daemons ({} metadata), {} clients x {} files, {} in flight per client; raw baseline in {}",
        opts.nodes,
        if opts.daemons.durability == locus_fs::Durability::Group { "durable" } else { "non-durable" },
        opts.clients,
        opts.files,
        opts.depth,
        ws.raw_root.display()
    );
    let clients: Vec<Client> = (0..opts.clients)
        .map(|k| ws.client(k % opts.nodes))
        .collect::<anyhow::Result<_>>()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut results = Vec::new();
    for layout in [Layout::OwnDirs, Layout::SharedDir] {
        rt.block_on(async {
            clients[0].mkdir_all("/bench/shared").await?;
            for k in 0..opts.clients {
                clients[0].mkdir_all(&format!("/bench/c{k}")).await?;
            }
            anyhow::Ok(())
        })?;
        let locus = rt.block_on(locus_rates(&clients, layout, opts.files, opts.depth))?;
        let raw = raw_rates(
            &ws.raw_dir(layout.label().replace(' ', "-").as_str())?,
            layout,
            opts.clients,
            opts.files,
        )?;
        results.push((layout, locus, raw));
    }
    header("ops/s", "raw");
    for (layout, locus, raw) in &results {
        row(
            &format!("create ({})", layout.label()),
            locus.create,
            raw.create,
        );
        row(&format!("stat ({})", layout.label()), locus.stat, raw.stat);
        row(
            &format!("remove ({})", layout.label()),
            locus.remove,
            raw.remove,
        );
    }

    // Listing one big directory.
    let n = opts.list;
    let listing = rt.block_on(async {
        clients[0].mkdir("/big").await?;
        phase(
            &clients,
            n / opts.clients,
            opts.depth,
            |c, k, i| async move { c.create_empty(&format!("/big/c{k}-{i}")).await.map(drop) },
        )
        .await?;
        let start = Instant::now();
        let entries = clients[0].readdir("/big").await?;
        anyhow::Ok((start.elapsed(), entries.len()))
    })?;
    let raw_big = ws.raw_dir("big")?;
    for i in 0..listing.1 {
        std::fs::File::create_new(raw_big.join(format!("e{i}")))?;
    }
    let start = Instant::now();
    let raw_count = std::fs::read_dir(&raw_big)?.count();
    let raw_list = start.elapsed();
    header("s", "raw");
    row_precise(
        &format!("list {} entries (s)", listing.1),
        listing.0.as_secs_f64(),
        raw_list.as_secs_f64(),
    );
    if raw_count != listing.1 {
        anyhow::bail!(
            "raw listing found {raw_count} entries, expected {}",
            listing.1
        );
    }

    let shared = &results[1].1;
    let best_create = results.iter().map(|r| r.1.create).fold(0.0, f64::max);
    let best_stat = results.iter().map(|r| r.1.stat).fold(0.0, f64::max);
    target(
        &format!(
            "creates >= 20,000/s ({best_create:.0}/s; shared dir {:.0}/s)",
            shared.create
        ),
        best_create >= 20_000.0,
    );
    target(
        &format!(
            "stats >= 50,000/s ({best_stat:.0}/s; shared dir {:.0}/s)",
            shared.stat
        ),
        best_stat >= 50_000.0,
    );
    target(
        &format!(
            "listing {} entries under 2 s ({:.3} s)",
            listing.1,
            listing.0.as_secs_f64()
        ),
        listing.0 < Duration::from_secs(2),
    );
    Ok(())
}
