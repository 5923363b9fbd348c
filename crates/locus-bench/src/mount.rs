//! `locus bench mount`: programs using the file system through its FUSE
//! mount, beside the same programs on the store's own file system and
//! beside the client library, in one run: `fio` sequential write and read
//! of local files, the first read of a remote file (fetch included), and an
//! mdtest-like create-then-stat of many empty files.

use crate::io::{drain, on_threads, settle, warm, MIB};
use crate::report::{header, median, row, row_precise, target};
use crate::workspace::{default_root, Workspace};
use anyhow::{bail, Context};
use locus_launch::Daemons;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct MountOpts {
    /// Bytes per fio file (a multiple of 1 MiB).
    pub size: u64,
    /// Empty files per create/stat round.
    pub files: u32,
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    pub daemons: Daemons,
    /// libfuse's `passthrough` example, a baseline for creates and stats.
    pub passthrough: Option<PathBuf>,
}

/// libfuse's `passthrough` example mounted at `point`, mirroring `/`
/// (a host path `p` is `point/p` through it); unmounted when dropped.
struct Passthrough {
    point: PathBuf,
    child: std::process::Child,
}

impl Passthrough {
    fn mount(program: &Path, point: &Path) -> anyhow::Result<Passthrough> {
        std::fs::create_dir(point)?;
        let child = Command::new(program)
            .args(["-f", "-o", "max_threads=10"])
            .arg(point)
            .stdout(std::process::Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "{} (scripts/fuse-passthrough.sh builds it)",
                    program.display()
                )
            })?;
        let pt = Passthrough {
            point: point.to_path_buf(),
            child,
        };
        let start = Instant::now();
        // Mounted once the point is on another device than its parent.
        let dev = |p: &Path| std::fs::metadata(p).map(|m| std::os::unix::fs::MetadataExt::dev(&m));
        let parent = point.parent().unwrap_or(Path::new("/"));
        while dev(point)? == dev(parent)? {
            if start.elapsed() > Duration::from_secs(10) {
                bail!("{} did not mount {}", program.display(), point.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(pt)
    }

    /// Host path `p` through the mount.
    fn at(&self, p: &Path) -> PathBuf {
        self.point.join(p.strip_prefix("/").unwrap_or(p))
    }
}

impl Drop for Passthrough {
    fn drop(&mut self) {
        let _ = locus_mount::unmount(&self.point, true);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one sequential fio job on `file`: the bandwidth fio measured.
/// Writes start on warm memory (see `io::warm`); reads start with the whole
/// file read into the page cache just before (fio told not to drop it), so
/// both sides read memory, where what the mount adds shows. From the disk,
/// this VM's reads of a file ran at 2.4-3.4 GB/s or, for some files, at
/// 0.6-0.7 (measured without Locus, twice in a row for one file while
/// another read fast between): one such file decided the ratio. And this
/// VM's reclaim evicts pages left a while. No preallocation on either side:
/// fio preallocates a new file, closes it and opens it again, and on the
/// mount that open starts the next version as a copy of the preallocated
/// one (a cost of versions, not of writing).
fn fio(file: &Path, rw: &str, size: u64, scratch: &Path) -> anyhow::Result<f64> {
    if rw == "write" {
        warm(scratch, size)?;
    } else {
        settle();
        let f = std::fs::File::open(file).with_context(|| file.display().to_string())?;
        drain(f).with_context(|| file.display().to_string())?;
    }
    // From memory a read takes milliseconds, fio's resolution: read it
    // eight times.
    let loops = if rw == "read" { 8 } else { 1 };
    let out = Command::new("fio")
        .arg(format!("--loops={loops}"))
        .args([
            "--name=seq",
            "--bs=1M",
            "--ioengine=psync",
            "--fallocate=none",
            "--invalidate=0",
            "--output-format=json",
        ])
        .arg(format!("--rw={rw}"))
        .arg(format!("--size={size}"))
        .arg(format!("--filename={}", file.display()))
        .output()
        .context("fio (apt package fio, installed by scripts/setup.sh)")?;
    if !out.status.success() {
        bail!(
            "fio --rw={rw} {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).context("fio's report")?;
    let bw = &report["jobs"][0][rw]["bw_bytes"];
    bw.as_f64()
        .map(|b| b / 1e9)
        .with_context(|| format!("no {rw} bandwidth in fio's report"))
}

/// Creates `n` empty files in `dir`, then stats each: (creates, stats) time.
fn create_stat(dir: &Path, n: u32) -> anyhow::Result<(Duration, Duration)> {
    std::fs::create_dir(dir)?;
    settle();
    let start = Instant::now();
    for i in 0..n {
        std::fs::File::create(dir.join(format!("f{i}")))?;
    }
    let created = start.elapsed();
    let start = Instant::now();
    for i in 0..n {
        std::fs::metadata(dir.join(format!("f{i}")))?;
    }
    Ok((created, start.elapsed()))
}

/// Programs creating at once, each in a directory of its own (mdtest's
/// unique-directory mode; creates in one directory are one at a time in
/// the kernel, whatever the file system).
const CREATORS: u32 = 8;

/// `n` empty files created in `dir` by [`CREATORS`] threads, each in its
/// own subdirectory: files per second.
fn create_parallel(dir: &Path, n: u32) -> anyhow::Result<f64> {
    let dirs: Vec<PathBuf> = (0..CREATORS).map(|k| dir.join(format!("u{k}"))).collect();
    for d in &dirs {
        std::fs::create_dir_all(d)?;
    }
    settle();
    let took = on_threads(CREATORS, |k| -> std::io::Result<()> {
        for i in 0..n / CREATORS {
            std::fs::File::create(dirs[k as usize].join(format!("f{i}")))?;
        }
        Ok(())
    })?;
    Ok(f64::from(n / CREATORS * CREATORS) / took.as_secs_f64())
}

/// fs_mark's jobs: its flags, and what the row says.
const FS_MARK: [(&str, &str); 3] = [
    ("-s 0 -S 0", "fs_mark, empty files, no fsync"),
    ("-s 4096 -S 0", "fs_mark, 4 KiB files, no fsync"),
    ("-s 51200 -S 1", "fs_mark's defaults (50 KiB, fsync)"),
];

/// fs_mark making `n` files in new directory `dir` with `flags`: the files
/// per second it reports.
fn fs_mark(dir: &Path, flags: &str, n: u32) -> anyhow::Result<f64> {
    settle();
    // It takes directory names of under 40 bytes: one relative to its
    // parent, where it also leaves its log once done.
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        bail!("fs_mark: {} is no directory name", dir.display());
    };
    let out = Command::new("fs_mark")
        .arg("-d")
        .arg(name)
        .args(["-n", &n.to_string(), "-L", "1", "-k"])
        .args(flags.split(' '))
        .current_dir(parent)
        .output()
        .context("fs_mark (apt package fsmark, installed by scripts/setup.sh)")?;
    let report = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        bail!("fs_mark -d {} {flags}: {}", dir.display(), said.trim());
    }
    // The line under "FSUse%  Count  Size  Files/sec  App Overhead".
    report
        .lines()
        .skip_while(|l| !l.contains("Files/sec"))
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
        .with_context(|| format!("no files/s in fs_mark's report: {}", report.trim()))
}

/// Opens `open`'s file and reads it whole in 1 MiB pieces: GB/s, the
/// opening (a remote file's fetch) included.
fn first_read(
    open: impl FnOnce() -> anyhow::Result<std::fs::File>,
    (scratch, size): (&Path, u64),
) -> anyhow::Result<f64> {
    warm(scratch, size)?;
    let start = Instant::now();
    let n = drain(open()?)?;
    Ok(n as f64 / 1e9 / start.elapsed().as_secs_f64())
}

/// One round's figures, each (through Locus, baseline).
#[derive(Default)]
struct Round {
    write: (f64, f64),
    read: (f64, f64),
    remote: (f64, f64),
    create: (f64, f64),
    stat: (f64, f64),
    /// Creates and stats through libfuse's passthrough, if it was given.
    passthrough: Option<(f64, f64)>,
    /// Creates by [`CREATORS`] programs at once: through Locus, through
    /// libfuse's passthrough (if given).
    parallel: (f64, Option<f64>),
    /// Each `FS_MARK` job's files/s: through Locus, through libfuse's
    /// passthrough (if given).
    fs_mark: [(f64, Option<f64>); FS_MARK.len()],
    /// Creates and stats through a FUSE file system that does no work.
    floor: (f64, f64),
}

pub fn run(opts: MountOpts) -> anyhow::Result<()> {
    if opts.size == 0 || !opts.size.is_multiple_of(MIB) {
        bail!("--size-mib must be positive");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        bail!("bench mount mounts file systems: it needs root and /dev/fuse");
    }
    let root = opts.dir.clone().unwrap_or_else(|| default_root("mount"));
    let ws = Workspace::start(&root, 2, &opts.daemons, opts.keep)?;
    let (p0, p1) = (root.join("m0"), root.join("m1"));
    std::fs::create_dir(&p0)?;
    std::fs::create_dir(&p1)?;
    let (writer, reader) = (ws.client(0)?, ws.client(1)?);
    let m0 = locus_mount::spawn(ws.client(0)?, &p0, "locus:bench")?;
    let m1 = locus_mount::spawn(ws.client(1)?, &p1, "locus:bench")?;
    let floor_point = root.join("floor");
    std::fs::create_dir(&floor_point)?;
    let floor = crate::fuse_floor::mount(&floor_point)?;
    let passthrough = match &opts.passthrough {
        Some(program) => Some(Passthrough::mount(program, &root.join("pt"))?),
        None => None,
    };
    println!("{}", crate::machine::describe());
    println!(
        "mount: fio 1 MiB sequential on {} MiB files, {} empty files created then \
         stat'ed; {} rounds after a warm-up (median shown); mounts of node 0 and 1 \
         beside the store's own file system ({})",
        opts.size / MIB,
        opts.files,
        opts.rounds,
        ws.raw_root.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut rounds = Vec::new();
    for n in 0..=opts.rounds.max(1) {
        let raw = ws.raw_dir(&format!("r{n}"))?;
        let dir = p0.join(format!("r{n}"));
        std::fs::create_dir(&dir)?;
        let mut r = Round::default();
        // Alternate which goes first, so neither always gets warmer memory.
        let (a, b) = (dir.join("seq"), raw.join("seq"));
        let (size, scratch) = (opts.size, &ws.raw_root);
        if n % 2 == 0 {
            r.write = (
                fio(&a, "write", size, scratch)?,
                fio(&b, "write", size, scratch)?,
            );
            r.read = (
                fio(&a, "read", size, scratch)?,
                fio(&b, "read", size, scratch)?,
            );
        } else {
            r.write.1 = fio(&b, "write", size, scratch)?;
            r.write.0 = fio(&a, "write", size, scratch)?;
            r.read.1 = fio(&b, "read", size, scratch)?;
            r.read.0 = fio(&a, "read", size, scratch)?;
        }
        // A file of node 0 read first on node 1, against the library's fetch
        // of another such file.
        let remote = p1.join(format!("r{n}/seq"));
        let other = format!("/r{n}/other");
        rt.block_on(async {
            let mut w = writer.create(&other).await?;
            std::io::copy(
                &mut std::io::Read::take(std::io::repeat(7), opts.size),
                &mut w,
            )?;
            w.close().await?;
            anyhow::Ok(())
        })?;
        r.remote = (
            first_read(|| Ok(std::fs::File::open(&remote)?), (scratch, size))?,
            first_read(
                || Ok(rt.block_on(reader.open_read(&other))?),
                (scratch, size),
            )?,
        );
        let per_s = |d: Duration| f64::from(opts.files) / d.as_secs_f64();
        // Creates slow down after many files were removed (the last
        // round's, here): which side goes first alternates too.
        let through = |r: &mut Round| -> anyhow::Result<()> {
            if let Some(pt) = &passthrough {
                let (pc, ps) = create_stat(&pt.at(&raw.join("through")), opts.files)?;
                r.passthrough = Some((per_s(pc), per_s(ps)));
                r.parallel.1 = Some(create_parallel(&pt.at(&raw.join("parallel")), opts.files)?);
                for (job, (flags, _)) in FS_MARK.iter().enumerate() {
                    let dir = pt.at(&raw.join(format!("fs_mark{job}")));
                    r.fs_mark[job].1 = Some(fs_mark(&dir, flags, opts.files)?);
                }
            }
            Ok(())
        };
        if n % 2 == 1 {
            through(&mut r)?;
        }
        let (c, s) = create_stat(&dir.join("many"), opts.files)?;
        let (rc, rs) = create_stat(&raw.join("many"), opts.files)?;
        (r.create, r.stat) = ((per_s(c), per_s(rc)), (per_s(s), per_s(rs)));
        r.parallel.0 = create_parallel(&dir.join("parallel"), opts.files)?;
        if passthrough.is_some() {
            for (job, (flags, _)) in FS_MARK.iter().enumerate() {
                let at = dir.join(format!("fs_mark{job}"));
                r.fs_mark[job].0 = fs_mark(&at, flags, opts.files)?;
            }
        }
        if n % 2 == 0 {
            through(&mut r)?;
        }
        let (fc, fs) = create_stat(&floor_point.join(format!("r{n}")), opts.files)?;
        r.floor = (per_s(fc), per_s(fs));
        std::fs::remove_dir_all(&raw)?;
        rt.block_on(writer.remove_all(&format!("/r{n}")))?;
        if n > 0 {
            rounds.push(r);
        }
    }
    drop((m0, m1, passthrough, floor));
    let rate = |f: fn(&Round) -> (f64, f64)| {
        let l = median(rounds.iter().map(|r| f(r).0).collect());
        let b = median(rounds.iter().map(|r| f(r).1).collect());
        (l, b)
    };
    let (w, raw_w) = rate(|r| r.write);
    let (rd, raw_r) = rate(|r| r.read);
    let (rem, lib) = rate(|r| r.remote);
    let (c, raw_c) = rate(|r| r.create);
    let (s, raw_s) = rate(|r| r.stat);
    // Each fs_mark job's medians: through Locus, through passthrough.
    let fs_marks: Vec<(f64, Option<f64>)> = (0..FS_MARK.len())
        .map(|job| {
            let ours = median(rounds.iter().map(|r| r.fs_mark[job].0).collect());
            let theirs: Vec<f64> = rounds.iter().filter_map(|r| r.fs_mark[job].1).collect();
            (ours, (!theirs.is_empty()).then(|| median(theirs)))
        })
        .collect();
    header("GB/s", "direct");
    row_precise("fio write, local (vs store fs)", w, raw_w);
    row_precise("fio read, local (vs store fs)", rd, raw_r);
    row_precise("first remote read (vs library)", rem, lib);
    header("ops/s", "direct");
    row("create empty files (vs store fs)", c, raw_c);
    row("stat them (vs store fs)", s, raw_s);
    let through: Vec<(f64, f64)> = rounds.iter().filter_map(|r| r.passthrough).collect();
    let libfuse = (!through.is_empty()).then(|| {
        let c = median(through.iter().map(|t| t.0).collect());
        let s = median(through.iter().map(|t| t.1).collect());
        (c, s)
    });
    match libfuse {
        Some((pc, ps)) => {
            row("create empty files (vs libfuse passthrough)", c, pc);
            row("stat them (vs libfuse passthrough)", s, ps);
            let ours = median(rounds.iter().map(|r| r.parallel.0).collect());
            let theirs = median(rounds.iter().filter_map(|r| r.parallel.1).collect());
            row(
                &format!("creates, {CREATORS} programs in {CREATORS} dirs (vs passthrough)"),
                ours,
                theirs,
            );
            for ((_, what), &(ours, theirs)) in FS_MARK.iter().zip(&fs_marks) {
                row(
                    &format!("{what} (vs passthrough)"),
                    ours,
                    theirs.unwrap_or(0.0),
                );
            }
        }
        None => println!(
            "(no libfuse passthrough baseline: give --passthrough, as make bench-mount does)"
        ),
    }
    let (floor_c, floor_s) = rate(|r| r.floor);
    row("create empty files (vs FUSE doing nothing)", c, floor_c);
    row("stat them (vs FUSE doing nothing)", s, floor_s);
    if let Some((pc, _)) = libfuse {
        println!(
            "FUSE alone (a file system answering at once) creates {:.2}x as many files/s as libfuse passthrough",
            floor_c / pc
        );
    }
    let pct = |a: f64, b: f64| 100.0 * a / b;
    target(
        &format!("local write >= 80% of the store fs ({:.0}%)", pct(w, raw_w)),
        w >= 0.8 * raw_w,
    );
    target(
        &format!("local read >= 80% of the store fs ({:.0}%)", pct(rd, raw_r)),
        rd >= 0.8 * raw_r,
    );
    target(
        &format!(
            "first remote read >= 70% of the library's fetch ({:.0}%)",
            pct(rem, lib)
        ),
        rem >= 0.7 * lib,
    );
    if let Some((pc, _)) = libfuse {
        target(
            &format!("creates >= 2x libfuse passthrough's ({:.2}x)", c / pc),
            c >= 2.0 * pc,
        );
        let (ours, theirs) = (fs_marks[0].0, fs_marks[0].1.unwrap_or(0.0));
        target(
            &format!(
                "fs_mark's creates >= 2x libfuse passthrough's ({:.2}x)",
                ours / theirs
            ),
            ours >= 2.0 * theirs,
        );
    }
    Ok(())
}
