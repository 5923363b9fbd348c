//! `locus bench scrub`: how fast a scrub checks a node's copies read from
//! the disk, beside reading files of the same sizes on the same file system
//! in the same run (the disk's sequential read rate). Before each side the
//! files it reads are dropped from the page cache (`POSIX_FADV_DONTNEED`
//! after a `sync`, file by file: nothing else on the machine is evicted);
//! rounds alternate which side goes first.

use crate::io::{drain, settle, two_threads, whole_mib, DataOpts, MIB};
use crate::report::{header, median, row_precise, target};
use crate::workspace::{default_root, Workspace};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// Drops every file under `dir` from the page cache.
fn evict(dir: &Path) -> std::io::Result<()> {
    settle();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            evict(&entry.path())?;
        } else if entry.file_type()?.is_file() {
            let f = std::fs::File::open(entry.path())?;
            // SAFETY: a valid descriptor and plain integers.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
    Ok(())
}

fn bytes_of(i: u32, size: u64) -> impl Iterator<Item = Vec<u8>> {
    (0..size / MIB).map(move |k| vec![(u64::from(i) * 31 + k) as u8; MIB as usize])
}

pub fn run(opts: DataOpts) -> anyhow::Result<()> {
    whole_mib(opts.size)?;
    let root = opts.dir.clone().unwrap_or_else(|| default_root("scrub"));
    let ws = Workspace::start(&root, 1, &opts.daemons, opts.keep)?;
    println!("{}", crate::machine::describe());
    println!(
        "scrub: {} files x {} MiB on one node, read from the disk, {} rounds (median shown); \
         baseline: the same number of files of that size read whole in {}",
        opts.files,
        opts.size / MIB,
        opts.rounds,
        ws.raw_root.display()
    );
    let client = ws.client(0)?;
    let rt = two_threads()?;
    let raw = ws.raw_dir("files")?;
    rt.block_on(client.mkdir_all("/scrub"))?;
    for i in 0..opts.files {
        let mut out = rt.block_on(client.create(&format!("/scrub/f{i}")))?;
        let mut copy = std::fs::File::create(raw.join(format!("f{i}")))?;
        for piece in bytes_of(i, opts.size) {
            out.write_all(&piece)?;
            copy.write_all(&piece)?;
        }
        rt.block_on(out.close())?;
    }
    let stores = root.join("cluster");
    let total = (u64::from(opts.files) * opts.size) as f64 / 1e9;
    let (mut scrubbed, mut read) = (Vec::new(), Vec::new());
    for n in 0..opts.rounds.max(1) {
        let scrub = || -> anyhow::Result<Duration> {
            evict(&stores)?;
            let start = Instant::now();
            let done = rt.block_on(client.scrub(None))?;
            let took = start.elapsed();
            anyhow::ensure!(
                done.checked == opts.files as usize && done.repaired.is_empty(),
                "the scrub checked {} copies and repaired {} (expected {} and none)",
                done.checked,
                done.repaired.len(),
                opts.files
            );
            Ok(took)
        };
        let read_all = || -> anyhow::Result<Duration> {
            evict(&raw)?;
            let start = Instant::now();
            for i in 0..opts.files {
                drain(std::fs::File::open(raw.join(format!("f{i}")))?)?;
            }
            Ok(start.elapsed())
        };
        if n % 2 == 0 {
            scrubbed.push(scrub()?);
            read.push(read_all()?);
        } else {
            read.push(read_all()?);
            scrubbed.push(scrub()?);
        }
    }
    let gbps = |times: &[Duration]| median(times.iter().map(|t| total / t.as_secs_f64()).collect());
    let (s, r) = (gbps(&scrubbed), gbps(&read));
    header("GB/s", "baseline");
    row_precise("scrub from disk (vs reading the files)", s, r);
    target(
        &format!(
            "scrub >= 80% of the disk's read rate ({:.0}%)",
            100.0 * s / r
        ),
        s >= 0.8 * r,
    );
    Ok(())
}
