//! `locus bench watch`: what a live page costs a run. `bench tasks`' no-op
//! builtin tasks (one server, two workers), run unwatched and watched in
//! turn — watched: the page's server reading the run directory and a page
//! connected to its updates — and how late the page learns of a task's end.

use crate::disturbed::{in_turn, launch, Shape};
use crate::report::{header, median, row, target};
use anyhow::{Context, Result};
use locus_launch::Program;
use locus_runtime::RunSummary;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct WatchOpts {
    pub program: Arc<dyn Program>,
    pub tasks: u32,
    pub rounds: u32,
}

/// A page connected to `addr`'s updates, reading them until dropped.
struct Page {
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<u64>>,
}

impl Page {
    fn open(addr: SocketAddr) -> Result<Page> {
        let mut s = TcpStream::connect(addr)?;
        write!(
            s,
            "GET /events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
        )?;
        s.set_read_timeout(Some(std::time::Duration::from_millis(200)))?;
        let stop = Arc::new(AtomicBool::new(false));
        let reading = stop.clone();
        let reader = std::thread::spawn(move || {
            let (mut buf, mut bytes) = (vec![0u8; 64 << 10], 0u64);
            while !reading.load(Ordering::Acquire) {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => bytes += n as u64,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
            bytes
        });
        Ok(Page {
            stop,
            reader: Some(reader),
        })
    }

    /// Bytes of updates it was sent.
    fn close(mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        self.reader.take().map_or(0, |r| r.join().unwrap_or(0))
    }
}

/// The page's JSON as its server last published it.
fn view(addr: SocketAddr) -> Result<serde_json::Value> {
    let mut s = TcpStream::connect(addr)?;
    write!(
        s,
        "GET /view.json HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok(serde_json::from_str(body)?)
}

/// One run; watched, what the page said of it (lag max and mean, ms; and
/// bytes of updates sent).
fn once(o: &WatchOpts, dir: &Path, name: &str, watched: bool) -> Result<(f64, Option<[f64; 3]>)> {
    let script = format!(
        "import sys;\nforeach i in [1:{}] {{ sleep(0.0); }}\n",
        o.tasks
    );
    let run_dir = dir.join(name);
    let shape = Shape {
        file: "watch.swift",
        script: &script,
        ranks: 3,
        nodes: 1,
        servers: 1,
    };
    let page = match watched {
        false => None,
        true => {
            let w = locus_watch::watch(locus_watch::WatchOptions {
                run_dir: run_dir.clone(),
                listen: ([127, 0, 0, 1], 0).into(),
            })?;
            let page = Page::open(w.addr)?;
            Some((w, page))
        }
    };
    launch(&o.program, dir, name, &shape)?;
    let s = RunSummary::load(&run_dir)?;
    let secs = s.end_us.saturating_sub(s.start_us) as f64 / 1e6;
    let seen = match page {
        None => None,
        Some((w, page)) => {
            w.settle();
            let v = view(w.addr)?;
            let sent = page.close() as f64;
            let done = v["done"].as_u64().context("no view")?;
            anyhow::ensure!(done == u64::from(o.tasks), "the page saw {done} tasks");
            let lag = |k: &str| v["lag"][k].as_f64().unwrap_or(f64::NAN);
            Some([lag("max_ms"), lag("mean_ms"), sent])
        }
    };
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok((f64::from(o.tasks) / secs, seen))
}

pub fn run(o: WatchOpts) -> Result<()> {
    println!("{}", crate::machine::describe());
    println!(
        "watch: {} no-op builtin tasks, 1 server and 2 workers, unwatched and watched (the page's \
         server and one page connected) in turn; median of {} rounds after a warm-up round",
        o.tasks, o.rounds
    );
    let dir = crate::workspace::default_root("watch");
    std::fs::create_dir_all(&dir)?;
    once(&o, &dir, "warm-up", false)?;
    let (calm, watched) = in_turn(o.rounds, |name, watched| once(&o, &dir, name, watched))?;
    let _ = std::fs::remove_dir_all(&dir);
    let rate = |v: &[(f64, Option<[f64; 3]>)]| median(v.iter().map(|r| r.0).collect());
    let (base, with) = (rate(&calm), rate(&watched));
    let seen: Vec<[f64; 3]> = watched.iter().filter_map(|r| r.1).collect();
    let worst = seen.iter().map(|s| s[0]).fold(0.0, f64::max);
    let mean = median(seen.iter().map(|s| s[1]).collect());
    let sent = median(seen.iter().map(|s| s[2]).collect());
    header("tasks/s", "baseline");
    row("builtin leaf tasks, watched (vs unwatched)", with, base);
    println!(
        "a task's end reached the page {mean:.0} ms after its record's end (median of the runs' \
         means), {worst:.0} ms at worst; {:.0} KiB of updates sent per run",
        sent / 1024.0
    );
    target(
        &format!("watched ≥ 97% of unwatched ({:.1}%)", 100.0 * with / base),
        with >= 0.97 * base,
    );
    target(
        &format!("a task's end on the page within 1 s ({worst:.0} ms at worst)"),
        worst <= 1000.0,
    );
    Ok(())
}
