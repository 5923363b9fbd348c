//! `locus bench meta-cluster`: seed 002 Figs. 6–7 on an emulated cluster.
//! One client per node, inside the node's namespace, creates K empty files
//! in its own directory (Fig. 6), then all clients create K each in one
//! shared directory (Fig. 7): on Locus (a daemon per node, metadata spread
//! over all of them) and on the central file system (one daemon on the
//! storage host, every request through its link), scaled over node counts.

use crate::emulate::{Emulation, FsMode};
use crate::emulated::ClusterOpts;
use crate::meta::{phase, Layout};
use crate::report::target;
use anyhow::{anyhow, Result};
use locus_fs::{Client, ClientOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Barrier;

pub struct MetaClusterOpts {
    pub cluster: ClusterOpts,
    pub nodes: Vec<u32>,
    /// Files each client creates per layout.
    pub files: u32,
    /// Creates each client keeps in flight.
    pub depth: u32,
    pub work: PathBuf,
    pub out: PathBuf,
}

/// One layout on one file system at one node count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    pub nodes: u32,
    pub layout: String,
    pub central: bool,
    /// Files each client created.
    pub files: u32,
    /// Seconds each client took, from the common start.
    pub client_seconds: Vec<f64>,
}

impl Point {
    /// Creates per second over all clients: every file over the slowest
    /// client's time.
    pub fn rate(&self) -> f64 {
        let wall = self.client_seconds.iter().copied().fold(0.0, f64::max);
        self.client_seconds.len() as f64 * self.files as f64 / wall
    }
}

/// `locus bench meta-cluster`'s results (`OUT/meta-cluster.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub machine: String,
    pub link: String,
    pub storage_link: String,
    pub files: u32,
    pub depth: u32,
    pub points: Vec<Point>,
}

impl Results {
    /// The point for `nodes`, `layout` and file system, if measured.
    pub fn find(&self, nodes: u32, layout: Layout, central: bool) -> Option<&Point> {
        self.points
            .iter()
            .find(|p| p.nodes == nodes && p.layout == layout.label() && p.central == central)
    }

    pub fn node_counts(&self) -> Vec<u32> {
        let mut n: Vec<u32> = self.points.iter().map(|p| p.nodes).collect();
        n.dedup();
        n
    }
}

/// A client of the file system at `fs_dir` acting on node `k` of `e`, with a
/// runtime whose threads are inside the node's namespace (the calling
/// thread joins it too).
fn connect(
    e: &Emulation,
    fs_dir: &Path,
    k: u32,
    central: bool,
    scratch: &Path,
) -> Result<(tokio::runtime::Runtime, Client)> {
    let host = &e.nodes[k as usize];
    let netns = host.netns.clone();
    locus_fs::netns::enter_thread(&netns)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_start(move || {
            let _ = locus_fs::netns::enter_thread(&netns);
        })
        .build()?;
    let opts = if central {
        ClientOptions {
            scratch: Some(scratch.join(&host.name)),
            ..ClientOptions::default()
        }
    } else {
        ClientOptions {
            node: k,
            ..ClientOptions::default()
        }
    };
    Ok((rt, Client::open(fs_dir, opts)?))
}

/// Client `k`'s part of one measurement, on its own thread: connect and
/// make its directories, then for each layout wait for every client and
/// create its files; returns its seconds per layout. It waits at every
/// start even after a failure, so the others never wait for it forever.
fn client(
    e: &Emulation,
    fs_dir: &Path,
    k: u32,
    central: bool,
    scratch: &Path,
    (files, depth): (u32, u32),
    start: &Barrier,
) -> Result<Vec<f64>> {
    let root = format!("/meta/n{}", e.nodes.len());
    let ready = connect(e, fs_dir, k, central, scratch).and_then(|(rt, c)| {
        rt.block_on(async {
            c.mkdir_all(&format!("{root}/c{k}")).await?;
            if k == 0 {
                c.mkdir_all(&format!("{root}/shared")).await?;
            }
            anyhow::Ok(())
        })?;
        Ok((rt, c))
    });
    let layouts = [Layout::OwnDirs, Layout::SharedDir];
    let (rt, c) = match ready {
        Ok(ready) => ready,
        Err(e) => {
            layouts.iter().for_each(|_| drop(start.wait()));
            return Err(e);
        }
    };
    let (mut seconds, mut failed) = (Vec::new(), None);
    for layout in layouts {
        start.wait();
        if failed.is_some() {
            continue;
        }
        let root = root.clone();
        let create = move |c: Client, _, i| {
            let path = layout.path(&root, k, i);
            async move { c.create_empty(&path).await.map(drop) }
        };
        match rt.block_on(phase(std::slice::from_ref(&c), files, depth, create)) {
            Ok(took) => seconds.push(took.as_secs_f64()),
            Err(e) => failed = Some(e),
        }
    }
    failed.map_or(Ok(seconds), Err)
}

/// Both layouts with every node's client at once, on Locus or central.
fn measure(
    e: &Emulation,
    cluster_dir: &Path,
    work: &Path,
    central: bool,
    load: (u32, u32),
) -> Result<Vec<Point>> {
    let mode = if central { FsMode::Central } else { FsMode::Local };
    let fs_dir = Emulation::fs_dir(cluster_dir, mode);
    let scratch = work.join("scratch");
    let nodes = e.nodes.len() as u32;
    let start = Barrier::new(nodes as usize);
    let seconds: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..nodes)
            .map(|k| {
                let (fs_dir, scratch, start) = (&fs_dir, &scratch, &start);
                s.spawn(move || client(e, fs_dir, k, central, scratch, load, start))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a client thread panicked"))?)
            .collect::<Result<_>>()
    })?;
    Ok([Layout::OwnDirs, Layout::SharedDir]
        .iter()
        .enumerate()
        .map(|(i, layout)| Point {
            nodes,
            layout: layout.label().to_string(),
            central,
            files: load.0,
            client_seconds: seconds.iter().map(|s| s[i]).collect(),
        })
        .collect())
}

pub fn run(o: MetaClusterOpts) -> Result<()> {
    let machine = crate::machine::describe();
    println!("{machine}");
    std::fs::create_dir_all(&o.work)?;
    let mut results = Results {
        machine,
        link: o.cluster.link.to_string(),
        storage_link: o.cluster.storage_link.to_string(),
        files: o.files,
        depth: o.depth,
        points: Vec::new(),
    };
    for &nodes in &o.nodes {
        let work = o.work.join(format!("n{nodes}"));
        std::fs::create_dir_all(&work)?;
        let cluster = o.cluster.cluster(&work, nodes)?;
        let e = &cluster.emulation;
        let nodes = e.nodes.len() as u32;
        eprintln!("  {nodes} node(s): Locus, then central");
        for central in [false, true] {
            let points = measure(e, &cluster.dir, &work, central, (o.files, o.depth))?;
            results.points.extend(points);
        }
    }
    print_results(&results);
    let page = crate::html::meta_cluster(&results);
    crate::emulated::save(&o.out, "meta-cluster", &results, page)
}

fn print_results(r: &Results) {
    println!(
        "\n{} empty files per client, {} in flight, one client per node; links {} (storage {}); creates/s:",
        r.files, r.depth, r.link, r.storage_link
    );
    println!(
        "{:>6} {:>14} {:>14} {:>8} {:>14} {:>14} {:>8}",
        "nodes", "own: Locus", "own: central", "ratio", "shared: Locus", "shared: central", "ratio"
    );
    let rate = |n, layout, central| r.find(n, layout, central).map_or(f64::NAN, Point::rate);
    for n in r.node_counts() {
        let (ol, oc) = (rate(n, Layout::OwnDirs, false), rate(n, Layout::OwnDirs, true));
        let (sl, sc) = (rate(n, Layout::SharedDir, false), rate(n, Layout::SharedDir, true));
        println!(
            "{n:>6} {ol:>14.0} {oc:>14.0} {:>8.2} {sl:>14.0} {sc:>15.0} {:>8.2}",
            ol / oc,
            sl / sc
        );
    }
    let counts = r.node_counts();
    if let (Some(&first), Some(&last)) = (counts.first(), counts.last()) {
        if last > first {
            for layout in [Layout::OwnDirs, Layout::SharedDir] {
                let grow = |central| rate(last, layout, central) / rate(first, layout, central);
                target(
                    &format!(
                        "{}: Locus's rate grows more than central's from {first} to {last} nodes ({:.2}x vs {:.2}x)",
                        layout.label(),
                        grow(false),
                        grow(true)
                    ),
                    grow(false) > grow(true),
                );
            }
        }
    }
}
