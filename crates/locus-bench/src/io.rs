//! `locus bench io`: write then read F files of S bytes through the client,
//! locally on the writer's node and by remote fetch on another node, beside
//! raw `dd` to and from the same file system in the same run.

use crate::report::{header, median, row_precise, target};
use crate::workspace::{default_root, Workspace};
use locus_fs::launch::Launch;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct IoOpts {
    pub files: u32,
    /// Bytes per file (a multiple of 1 MiB).
    pub size: u64,
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    pub launch: Launch,
}

const MIB: u64 = 1 << 20;

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn dd(args: &[String]) -> anyhow::Result<()> {
    let out = Command::new("dd").args(args).arg("status=none").output()?;
    if !out.status.success() {
        anyhow::bail!("dd {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

fn timed(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

fn raw_write(dir: &Path, files: u32, size: u64) -> anyhow::Result<Duration> {
    timed(|| {
        for i in 0..files {
            dd(&[
                "if=/dev/zero".into(),
                format!("of={}", dir.join(format!("f{i}")).display()),
                "bs=1M".into(),
                format!("count={}", size / MIB),
            ])?;
        }
        Ok(())
    })
}

fn raw_read(dir: &Path, files: u32) -> anyhow::Result<Duration> {
    timed(|| {
        for i in 0..files {
            dd(&[
                format!("if={}", dir.join(format!("f{i}")).display()),
                "of=/dev/null".into(),
                "bs=1M".into(),
            ])?;
        }
        Ok(())
    })
}

/// Reads a whole file in 1 MiB chunks, as `dd bs=1M` does.
fn drain(mut f: std::fs::File) -> std::io::Result<u64> {
    let mut buf = vec![0u8; MIB as usize];
    let mut total = 0;
    loop {
        match f.read(&mut buf)? {
            0 => return Ok(total),
            n => total += n as u64,
        }
    }
}

struct Round {
    raw_write: f64,
    raw_read: f64,
    write: f64,
    read: f64,
    fetch: f64,
}

pub fn run(opts: IoOpts) -> anyhow::Result<()> {
    if opts.size == 0 || opts.size % MIB != 0 {
        anyhow::bail!("--size must be a positive multiple of 1 MiB");
    }
    let root = opts.dir.clone().unwrap_or_else(|| default_root("io"));
    let ws = Workspace::start(&root, 2, &opts.launch, opts.keep)?;
    println!("{}", crate::machine::describe());
    println!(
        "io: {} files x {} MiB, {} rounds (median shown); writer on node 0, remote reader on node 1; raw dd in {}",
        opts.files,
        opts.size / MIB,
        opts.rounds,
        ws.root.join("raw").display()
    );
    let writer = ws.client(0)?;
    let reader = ws.client(1)?;
    let raw = ws.raw_dir("io")?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(writer.mkdir("/io"))?;
    let total = opts.files as u64 * opts.size;
    let chunk = vec![0u8; MIB as usize];
    let mut rounds = Vec::new();
    for _ in 0..opts.rounds.max(1) {
        let raw_w = raw_write(&raw, opts.files, opts.size)?;
        let raw_r = raw_read(&raw, opts.files)?;
        let (w, r, f) = rt.block_on(async {
            let start = Instant::now();
            for i in 0..opts.files {
                let mut out = writer.create_or_truncate(&format!("/io/f{i}")).await?;
                for _ in 0..opts.size / MIB {
                    out.write_all(&chunk)?;
                }
                out.close().await?;
            }
            let w = start.elapsed();
            let start = Instant::now();
            for i in 0..opts.files {
                drain(writer.open_read(&format!("/io/f{i}")).await?)?;
            }
            let r = start.elapsed();
            let start = Instant::now();
            for i in 0..opts.files {
                let got = drain(reader.open_read(&format!("/io/f{i}")).await?)?;
                if got != opts.size {
                    anyhow::bail!("remote read of /io/f{i} returned {got} bytes");
                }
            }
            anyhow::Ok((w, r, start.elapsed()))
        })?;
        rounds.push(Round {
            raw_write: gbps(total, raw_w),
            raw_read: gbps(total, raw_r),
            write: gbps(total, w),
            read: gbps(total, r),
            fetch: gbps(total, f),
        });
    }
    let m = |f: fn(&Round) -> f64| median(rounds.iter().map(f).collect());
    let (raw_w, raw_r) = (m(|r| r.raw_write), m(|r| r.raw_read));
    let (w, r, f) = (m(|r| r.write), m(|r| r.read), m(|r| r.fetch));
    header("GB/s", "raw dd");
    row_precise("local write", w, raw_w);
    row_precise("local read", r, raw_r);
    row_precise("remote fetch + read (node 1)", f, raw_r);
    target(&format!("local write >= 90% of raw ({:.0}%)", 100.0 * w / raw_w), w >= 0.9 * raw_w);
    target(&format!("local read >= 90% of raw ({:.0}%)", 100.0 * r / raw_r), r >= 0.9 * raw_r);
    target(&format!("remote fetch >= 1 GB/s ({f:.2} GB/s)"), f >= 1.0);
    Ok(())
}
