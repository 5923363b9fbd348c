//! `locus bench kills`: nothing acknowledged is lost while daemons die.
//! Clients put new files as fast as they can while one daemon at a time is
//! killed (`SIGKILL`), left down for a while and started again; then every
//! put that was acknowledged is read back and looked for in its directory.
//! Each repetition prints what was acknowledged, lost and wrong, for each
//! replica count; the command fails if anything acknowledged was lost.

use crate::workspace::{default_root, Workspace};
use anyhow::bail;
use locus_fs::{Client, ClientOptions};
use locus_launch::daemons::node_dir;
use locus_launch::{running_pid, Daemons};
use locus_proto::Errno;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct KillsOpts {
    pub nodes: u32,
    /// Client loops putting files (on nodes 0, 1, … in turn).
    pub clients: u32,
    /// How long each repetition kills daemons for.
    pub seconds: f64,
    /// How long a killed daemon stays down, and the time between kills.
    pub down: Duration,
    pub every: Duration,
    pub repetitions: u32,
    /// Replica counts, each run in every repetition.
    pub replicas: Vec<u32>,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    pub daemons: Daemons,
}

/// What one repetition found.
#[derive(Debug, Default)]
pub struct Tally {
    pub acknowledged: usize,
    /// Puts that failed (their files may or may not exist).
    pub failed: usize,
    /// Acknowledged files gone (unreadable or unlisted).
    pub lost: Vec<String>,
    /// Acknowledged files with other bytes or without their name.
    pub wrong: Vec<String>,
    /// Names left without a record by puts that failed (their daemon died
    /// between a put's two steps).
    pub nameless: Vec<String>,
    pub kills: usize,
}

const DIR: &str = "/p";

/// The bytes of the `i`th file of client `c`: its name, repeated to
/// between a few bytes and a few KiB.
fn contents(path: &str, i: u64) -> Vec<u8> {
    format!("{path} ")
        .repeat(1 + (i * 37 % 200) as usize)
        .into_bytes()
}

/// Puts new files until `stop`; the acknowledged ones and how many failed.
async fn put_loop(cl: Client, c: u32, stop: Arc<AtomicBool>) -> (Vec<(String, u64)>, usize) {
    let (mut acked, mut failed) = (Vec::new(), 0);
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let path = format!("{DIR}/c{c}-{i}");
        match cl.put(&path, &contents(&path, i)).await {
            Ok(_) => acked.push((path, i)),
            Err(_) => failed += 1,
        }
        i += 1;
    }
    (acked, failed)
}

/// Kills node `node`'s daemon and waits until it is gone.
fn kill(cluster: &std::path::Path, node: u32) -> anyhow::Result<()> {
    let dir = node_dir(cluster, node);
    let Some(pid) = running_pid(&dir) else {
        bail!("node {node}'s daemon is not running");
    };
    // SAFETY: a plain signal to a daemon this benchmark started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while running_pid(&dir).is_some() {
        if Instant::now() > deadline {
            bail!("node {node}'s daemon {pid} outlived SIGKILL");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// One repetition on a new cluster keeping `replicas` copies.
pub fn repetition(
    root: &std::path::Path,
    opts: &KillsOpts,
    replicas: u32,
) -> anyhow::Result<Tally> {
    let daemons = Daemons {
        replicas,
        ..opts.daemons.clone()
    };
    let ws = Workspace::start(root, opts.nodes, &daemons, opts.keep)?;
    let cluster = ws.root.join("cluster");
    let rt = tokio::runtime::Runtime::new()?;
    ws.client(0)
        .and_then(|cl| Ok(rt.block_on(cl.mkdir(DIR))?))?;
    let stop = Arc::new(AtomicBool::new(false));
    let loops = (0..opts.clients)
        .map(|c| {
            let cl = Client::open(
                &cluster,
                ClientOptions {
                    node: c % opts.nodes,
                    timeout: Duration::from_millis(800),
                    lease: Duration::from_secs(1),
                    ..ClientOptions::default()
                },
            )?;
            Ok(rt.spawn(put_loop(cl, c, stop.clone())))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut tally = Tally::default();
    let end = Instant::now() + Duration::from_secs_f64(opts.seconds);
    let killed = (|| {
        while Instant::now() < end {
            std::thread::sleep(opts.every);
            kill(&cluster, tally.kills as u32 % opts.nodes)?;
            std::thread::sleep(opts.down);
            daemons.restart_stopped(&cluster)?;
            tally.kills += 1;
        }
        anyhow::Ok(())
    })();
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    for l in loops {
        let (a, failed) = rt.block_on(l)?;
        acked.extend(a);
        tally.failed += failed;
    }
    killed?;
    tally.acknowledged = acked.len();
    // Every lease of a put that gave up has ended.
    std::thread::sleep(Duration::from_millis(1200));
    let reader = ws.client(0)?;
    let listed: HashSet<String> = rt
        .block_on(reader.readdir(DIR))?
        .into_iter()
        .map(|e| format!("{DIR}/{}", e.name))
        .collect();
    let listed = Arc::new(listed);
    // Checked by many at once: a name without a record is only known to
    // be one once its lease is over, and there are hundreds of them.
    let checks: Vec<Check> = (acked.into_iter().map(|(p, i)| Check::Acked(p, i)))
        .chain(listed.iter().cloned().map(Check::Listed))
        .collect();
    let per = checks.len().div_ceil(CHECKERS).max(1);
    let mut checkers = tokio::task::JoinSet::new();
    let mut checks = checks.into_iter();
    loop {
        let chunk: Vec<Check> = checks.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        let (reader, listed) = (reader.clone(), listed.clone());
        let checker = async move {
            let mut t = Tally::default();
            for c in chunk {
                c.check(&reader, &listed, &mut t).await;
            }
            t
        };
        checkers.spawn_on(checker, rt.handle());
    }
    rt.block_on(async {
        while let Some(t) = checkers.join_next().await {
            let t = t?;
            tally.lost.extend(t.lost);
            tally.wrong.extend(t.wrong);
            tally.nameless.extend(t.nameless);
        }
        anyhow::Ok(())
    })?;
    Ok(tally)
}

/// How many check the files at the end at once.
const CHECKERS: usize = 32;

/// What is checked at the end: a put that was acknowledged (its path and
/// number), or a name found in the directory.
enum Check {
    Acked(String, u64),
    Listed(String),
}

impl Check {
    async fn check(self, reader: &Client, listed: &HashSet<String>, tally: &mut Tally) {
        match self {
            Check::Acked(path, i) => match reader.get(&path).await {
                Ok(bytes) if bytes == contents(&path, i) && listed.contains(&path) => {}
                Ok(bytes) if bytes == contents(&path, i) => {
                    tally.lost.push(format!("{path}: not listed"));
                }
                Ok(bytes) => tally
                    .wrong
                    .push(format!("{path}: {} bytes, not its own", bytes.len())),
                Err(e) if e.code == Errno::ENOENT => tally.lost.push(format!("{path}: {e}")),
                Err(e) => tally.wrong.push(format!("{path}: {e}")),
            },
            Check::Listed(path) => {
                if let Err(e) = reader.stat(&path).await {
                    tally.nameless.push(format!("{path}: listed, but {e}"));
                }
            }
        }
    }
}

pub fn run(opts: KillsOpts) -> anyhow::Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "{} nodes, {} clients putting new files; a daemon killed every {:?}, down {:?}, for {} s",
        opts.nodes, opts.clients, opts.every, opts.down, opts.seconds
    );
    let root = opts.dir.clone().unwrap_or_else(|| default_root("kills"));
    let mut bad = 0;
    for rep in 1..=opts.repetitions {
        for &r in &opts.replicas {
            let t = repetition(&root.join(format!("rep{rep}-r{r}")), &opts, r)?;
            println!(
                "R={r} repetition {rep}: {} acknowledged, {} lost, {} wrong ({} failed cleanly, \
                 {} names of failed puts without a record, {} kills)",
                t.acknowledged,
                t.lost.len(),
                t.wrong.len(),
                t.failed,
                t.nameless.len(),
                t.kills
            );
            for what in t.lost.iter().chain(&t.wrong).chain(&t.nameless).take(5) {
                println!("  {what}");
            }
            bad += t.lost.len() + t.wrong.len();
        }
    }
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    crate::report::target("0 acknowledged writes lost or wrong", bad == 0);
    if bad > 0 {
        bail!("{bad} acknowledged write(s) lost or wrong");
    }
    Ok(())
}
