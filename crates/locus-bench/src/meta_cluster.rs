//! `locus bench meta-cluster`: seed 002 Figs. 6–7 on an emulated cluster.
//! One client per node, inside the node's namespace, creates K empty files
//! in its own directory (Fig. 6), then all clients create K each in one
//! shared directory (Fig. 7): on Locus (a daemon per node, metadata spread
//! over all of them) and on the central file system (one daemon on the
//! storage host, every request through its link), scaled over node counts.

use crate::emulated::{Cluster, ClusterOpts, Testbed};
use crate::meta::{phase, Layout};
use crate::report::target;
use anyhow::{bail, Context, Result};
use locus_fs::{Client, ClientOptions};
use locus_launch::emulate::{Emulation, FsMode};
use locus_launch::role::{self, Program, Role};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};

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
        self.client_seconds.len() as f64 * f64::from(self.files) / wall
    }
}

/// `locus bench meta-cluster`'s results (`OUT/meta-cluster.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    #[serde(flatten)]
    pub testbed: Testbed,
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

/// What one client process does (started by `run` inside its node's
/// namespace and cgroup, from a role file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientArgs {
    /// The file system (`locus fs up` directory).
    pub fs: PathBuf,
    /// The emulated node it runs on: its directory's name, and the daemon it
    /// acts through on Locus.
    pub node: u32,
    /// Set for a client of the central file system: where it stages data.
    pub scratch: Option<PathBuf>,
    /// Its files go under `ROOT/c<node>` and `ROOT/shared`.
    pub root: String,
    pub files: u32,
    pub depth: u32,
}

impl Role for ClientArgs {
    const NAME: &'static str = "bench-meta-client";
}

const LAYOUTS: [Layout; 2] = [Layout::OwnDirs, Layout::SharedDir];

/// A client process: makes its directories and says `ready`, then for each
/// layout waits for a line on stdin, creates its files and prints the
/// seconds it took.
pub fn client_main(a: ClientArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let k = a.node;
    let opts = ClientOptions {
        // The central file system has one node, reached over the network.
        node: if a.scratch.is_some() { 0 } else { k },
        scratch: a.scratch,
        ..ClientOptions::default()
    };
    let c = Client::open(&a.fs, opts)?;
    rt.block_on(async {
        c.mkdir_all(&format!("{}/c{k}", a.root)).await?;
        c.mkdir_all(&format!("{}/shared", a.root)).await?;
        anyhow::Ok(())
    })?;
    let (mut stdin, mut stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
    writeln!(stdout, "ready")?;
    stdout.flush()?;
    for layout in LAYOUTS {
        let mut go = String::new();
        if stdin.read_line(&mut go)? == 0 {
            bail!("the benchmark went away");
        }
        let root = a.root.clone();
        let create = move |c: Client, _, i| {
            let path = layout.path(&root, k, i);
            async move { c.create_empty(&path).await.map(drop) }
        };
        let took = rt.block_on(phase(std::slice::from_ref(&c), a.files, a.depth, create))?;
        writeln!(stdout, "{}", took.as_secs_f64())?;
        stdout.flush()?;
    }
    Ok(())
}

/// Client processes, killed if dropped before they finish.
struct Clients(Vec<(Child, BufReader<ChildStdout>)>);

impl Clients {
    /// One line from every client; a client that ends instead fails the
    /// measurement with what it said on stderr.
    fn lines(&mut self) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        for (k, (child, out)) in self.0.iter_mut().enumerate() {
            let mut line = String::new();
            if out.read_line(&mut line)? == 0 {
                let _ = child.kill();
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                bail!("client on node{k} failed: {}", err.trim());
            }
            lines.push(line.trim().to_string());
        }
        Ok(lines)
    }

    fn go(&mut self) -> Result<()> {
        for (child, _) in &mut self.0 {
            let stdin = child.stdin.as_mut().context("client stdin")?;
            stdin.write_all(b"go\n")?;
            stdin.flush()?;
        }
        Ok(())
    }
}

impl Drop for Clients {
    fn drop(&mut self) {
        for (child, _) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Both layouts with one client process per node at once, on Locus or
/// central; each client starts inside its node's namespace and cgroup.
fn measure(
    program: &dyn Program,
    cluster: &Cluster,
    work: &Path,
    central: bool,
    o: &MetaClusterOpts,
) -> Result<Vec<Point>> {
    let e = &cluster.emulation;
    let mode = if central {
        FsMode::Central
    } else {
        FsMode::Local
    };
    let fs_dir = Emulation::fs_dir(&cluster.dir, mode);
    let nodes = e.nodes.len() as u32;
    let root = format!("/meta/n{nodes}");
    let mut clients = Clients(Vec::new());
    for (k, host) in e.nodes.iter().enumerate() {
        let config = ClientArgs {
            fs: fs_dir.clone(),
            node: k as u32,
            scratch: central.then(|| work.join("scratch").join(&host.name)),
            root: root.clone(),
            files: o.files,
            depth: o.depth,
        };
        let role_file = work.join(format!("meta-client-{k}.json"));
        role::write(&role_file, &config)?;
        let mut cmd = program.command(&role_file);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        host.enter(&mut cmd)?;
        let mut child = cmd.spawn().context("starting a metadata client")?;
        let out = BufReader::new(child.stdout.take().context("client stdout")?);
        clients.0.push((child, out));
    }
    clients.lines()?;
    let mut points = Vec::new();
    for layout in LAYOUTS {
        clients.go()?;
        let seconds = clients.lines()?;
        let client_seconds = seconds
            .iter()
            .map(|s| {
                s.parse::<f64>()
                    .with_context(|| format!("client said '{s}'"))
            })
            .collect::<Result<_>>()?;
        points.push(Point {
            nodes,
            layout: layout.label().to_string(),
            central,
            files: o.files,
            client_seconds,
        });
    }
    Ok(points)
}

pub fn run(o: MetaClusterOpts) -> Result<()> {
    let testbed = o.cluster.testbed()?;
    println!("{}", testbed.machine);
    std::fs::create_dir_all(&o.work)?;
    let mut results = Results {
        testbed,
        files: o.files,
        depth: o.depth,
        points: Vec::new(),
    };
    for &nodes in &o.nodes {
        let work = o.work.join(format!("n{nodes}"));
        std::fs::create_dir_all(&work)?;
        let cluster = o.cluster.cluster(&work, nodes)?;
        eprintln!(
            "  {} node(s): Locus, then central",
            cluster.emulation.nodes.len()
        );
        for central in [false, true] {
            let points = measure(
                o.cluster.daemons.program.as_ref(),
                &cluster,
                &work,
                central,
                &o,
            )?;
            results.points.extend(points);
        }
    }
    print_results(&results);
    let page = crate::html::meta_cluster(&results);
    crate::emulated::save(&o.out, "meta-cluster", &results, page)
}

fn print_results(r: &Results) {
    println!(
        "\n{} empty files per client, {} in flight, one client per node; {}; creates/s:",
        r.files,
        r.depth,
        r.testbed.links()
    );
    println!(
        "{:>6} {:>14} {:>14} {:>8} {:>14} {:>14} {:>8}",
        "nodes", "own: Locus", "own: central", "ratio", "shared: Locus", "shared: central", "ratio"
    );
    let rate = |n, layout, central| r.find(n, layout, central).map_or(f64::NAN, Point::rate);
    for n in r.node_counts() {
        let (ol, oc) = (
            rate(n, Layout::OwnDirs, false),
            rate(n, Layout::OwnDirs, true),
        );
        let (sl, sc) = (
            rate(n, Layout::SharedDir, false),
            rate(n, Layout::SharedDir, true),
        );
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
