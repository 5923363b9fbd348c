//! `locus bench io`: write then read F files of S bytes through the client,
//! locally on the writer's node and by remote fetch on other nodes, beside
//! raw `dd` on the same file system in the same run. Each file's Locus and
//! raw operations run back to back (alternating which goes first), so both
//! see the same page-cache and memory conditions. The nodes share this
//! host: node 1 fetches as a node on the same host does (a copy in the
//! kernel), node 2 over TCP, beside raw loopback TCP between two processes
//! (`sendfile` to `dd`).

use crate::report::{header, median, row_precise, target};
use crate::workspace::{default_root, Workspace};
use locus_fs::Client;
use locus_launch::Daemons;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// What a data benchmark (`bench io`, `bench scrub`) moves: files of one
/// size, per round, over rounds, on daemons started in a scratch directory.
pub struct DataOpts {
    pub files: u32,
    /// Bytes per file (a multiple of 1 MiB).
    pub size: u64,
    pub rounds: u32,
    pub dir: Option<PathBuf>,
    pub keep: bool,
    pub daemons: Daemons,
}

pub(crate) const MIB: u64 = 1 << 20;

fn dd(args: &[String]) -> anyhow::Result<()> {
    let out = Command::new("dd")
        .args(args)
        .args(["bs=1M", "status=none"])
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "dd {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Flushes dirty pages so that no measurement pays for the writeback of the
/// one before.
pub(crate) fn settle() {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
}

/// Runs `each(0)` … `each(n - 1)` on `n` threads at once: how long until
/// all ended, or the first error.
pub(crate) fn on_threads<E: Send>(
    n: u32,
    each: impl Fn(u32) -> Result<(), E> + Sync,
) -> Result<std::time::Duration, E> {
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        let each = &each;
        let threads: Vec<_> = (0..n).map(|k| s.spawn(move || each(k))).collect();
        threads
            .into_iter()
            .try_for_each(|t| t.join().expect("benchmark thread"))
    })?;
    Ok(start.elapsed())
}

/// Writes and deletes a scratch file of `size` bytes, so that the page-cache
/// memory the next operation needs is free and recently used. On a VM that
/// returns free memory to its host, first touching memory costs more than the
/// I/O measured (0.2 GB/s against 3 GB/s here); without this, whichever side
/// ran first would get the warm memory.
pub(crate) fn warm(dir: &std::path::Path, size: u64) -> anyhow::Result<()> {
    let path = dir.join("warm");
    let mut f = std::fs::File::create(&path)?;
    let chunk = vec![0u8; MIB as usize];
    for _ in 0..size / MIB {
        f.write_all(&chunk)?;
    }
    drop(f);
    std::fs::remove_file(&path)?;
    settle();
    Ok(())
}

/// Reads a whole file in 1 MiB chunks, as `dd bs=1M` does.
pub(crate) fn drain(mut f: std::fs::File) -> std::io::Result<u64> {
    let mut buf = vec![0u8; MIB as usize];
    let mut total = 0;
    loop {
        match f.read(&mut buf)? {
            0 => return Ok(total),
            n => total += n as u64,
        }
    }
}

/// How long each file took, by kind of operation. Rates are medians over
/// files: on this kind of VM one operation in several is slowed several
/// times over by the host (the kernel's own writes of a file take 3-4x as
/// long, whoever makes them), and a sum per round would let one such file
/// decide a round.
#[derive(Default)]
struct Times {
    raw_write: Vec<Duration>,
    raw_read: Vec<Duration>,
    raw_copy: Vec<Duration>,
    raw_tcp: Vec<Duration>,
    write: Vec<Duration>,
    read: Vec<Duration>,
    fetch: Vec<Duration>,
    fetch_tcp: Vec<Duration>,
}

struct Round<'a> {
    writer: &'a Client,
    reader: &'a Client,
    /// A reader on another node that fetches over TCP.
    tcp_reader: &'a Client,
    raw: PathBuf,
    dir: String,
    size: u64,
}

impl Round<'_> {
    fn raw_file(&self, name: &str) -> String {
        self.raw.join(name).display().to_string()
    }

    fn raw_write(&self, i: u32) -> anyhow::Result<Duration> {
        let (of, count) = (self.raw_file(&format!("f{i}")), self.size / MIB);
        self.timed(|| {
            dd(&[
                "if=/dev/zero".into(),
                format!("of={of}"),
                format!("count={count}"),
            ])
        })
    }

    fn raw_read(&self, i: u32) -> anyhow::Result<Duration> {
        let src = self.raw_file(&format!("f{i}"));
        self.timed(|| dd(&[format!("if={src}"), "of=/dev/null".into()]))
    }

    /// A local copy: what a fetch would cost over an infinitely fast network.
    fn raw_copy(&self, i: u32) -> anyhow::Result<Duration> {
        let (src, dst) = (
            self.raw_file(&format!("f{i}")),
            self.raw_file(&format!("copy{i}")),
        );
        self.timed(|| dd(&[format!("if={src}"), format!("of={dst}")]))
    }

    /// Raw loopback TCP between two processes: this one sends the file
    /// (`sendfile`), `dd` in another receives it (bash's `/dev/tcp`) and
    /// throws it away.
    fn raw_tcp(&self, i: u32) -> anyhow::Result<Duration> {
        let mut file = std::fs::File::open(self.raw_file(&format!("f{i}")))?;
        warm(&self.raw, self.size)?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let mut receiver = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "dd bs=1M of=/dev/null status=none < /dev/tcp/127.0.0.1/{port}"
            ))
            .spawn()?;
        let (mut stream, _) = listener.accept()?;
        let start = Instant::now();
        let sent = std::io::copy(&mut file, &mut stream)?;
        drop(stream);
        let status = receiver.wait()?;
        let took = start.elapsed();
        if !status.success() || sent != self.size {
            anyhow::bail!("raw TCP: sent {sent} bytes, receiver {status}");
        }
        Ok(took)
    }

    async fn write(&self, i: u32) -> anyhow::Result<Duration> {
        let chunk = vec![0u8; MIB as usize];
        warm(&self.raw, self.size)?;
        let start = Instant::now();
        let mut out = self.writer.create(&format!("{}/f{i}", self.dir)).await?;
        for _ in 0..self.size / MIB {
            out.write_all(&chunk)?;
        }
        out.close().await?;
        Ok(start.elapsed())
    }

    async fn read(&self, client: &Client, i: u32) -> anyhow::Result<Duration> {
        warm(&self.raw, self.size)?;
        let start = Instant::now();
        let got = drain(client.open_read(&format!("{}/f{i}", self.dir)).await?)?;
        if got != self.size {
            anyhow::bail!("reading {}/f{i} returned {got} bytes", self.dir);
        }
        Ok(start.elapsed())
    }

    /// A fetch alone: `client` makes file `i` local (what a task's input
    /// costs before the task reads it), as a local copy makes a file.
    async fn fetch(&self, client: &Client, i: u32) -> anyhow::Result<Duration> {
        warm(&self.raw, self.size)?;
        let start = Instant::now();
        let copy = client.local_path(&format!("{}/f{i}", self.dir)).await?;
        let took = start.elapsed();
        let got = std::fs::metadata(&copy)?.len();
        if got != self.size {
            anyhow::bail!("fetching {}/f{i} made {got} bytes", self.dir);
        }
        Ok(took)
    }

    fn timed(&self, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
        warm(&self.raw, self.size)?;
        let start = Instant::now();
        f()?;
        Ok(start.elapsed())
    }

    async fn run(&self, files: u32, t: &mut Times) -> anyhow::Result<()> {
        for i in 0..files {
            let locus_first = i % 2 == 0;
            if locus_first {
                t.write.push(self.write(i).await?);
            }
            t.raw_write.push(self.raw_write(i)?);
            if !locus_first {
                t.write.push(self.write(i).await?);
            }
        }
        for i in 0..files {
            t.read.push(self.read(self.writer, i).await?);
            t.raw_read.push(self.raw_read(i)?);
        }
        for i in 0..files {
            let locus_first = i % 2 == 1;
            if locus_first {
                t.fetch.push(self.fetch(self.reader, i).await?);
            }
            t.raw_copy.push(self.raw_copy(i)?);
            if !locus_first {
                t.fetch.push(self.fetch(self.reader, i).await?);
            }
        }
        for i in 0..files {
            let locus_first = i % 2 == 0;
            if locus_first {
                t.fetch_tcp.push(self.fetch(self.tcp_reader, i).await?);
            }
            t.raw_tcp.push(self.raw_tcp(i)?);
            if !locus_first {
                t.fetch_tcp.push(self.fetch(self.tcp_reader, i).await?);
            }
        }
        Ok(())
    }
}

/// Refuses file sizes the data benchmarks cannot write in 1 MiB pieces.
pub(crate) fn whole_mib(size: u64) -> anyhow::Result<()> {
    match size > 0 && size.is_multiple_of(MIB) {
        true => Ok(()),
        false => anyhow::bail!("--size-mib must be positive"),
    }
}

/// The runtime a data benchmark's clients run on.
pub(crate) fn two_threads() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

pub fn run(opts: DataOpts) -> anyhow::Result<()> {
    whole_mib(opts.size)?;
    let root = opts.dir.clone().unwrap_or_else(|| default_root("io"));
    let ws = Workspace::start(&root, 3, &opts.daemons, opts.keep)?;
    println!("{}", crate::machine::describe());
    println!(
        "io: {} files x {} MiB per round, {} rounds after a warm-up (median of the files); \
         writer on node 0, remote readers on node 1 (same-host copy) and node 2 (TCP); \
         raw dd in {}",
        opts.files,
        opts.size / MIB,
        opts.rounds,
        ws.raw_root.display()
    );
    let writer = ws.client(0)?;
    let reader = ws.client(1)?;
    let tcp_reader = ws.client_over_tcp(2)?;
    let rt = two_threads()?;
    let gb = opts.size as f64 / 1e9;
    let mut t = Times::default();
    // Round 0 warms up and is not counted.
    for n in 0..=opts.rounds.max(1) {
        let round = Round {
            writer: &writer,
            reader: &reader,
            tcp_reader: &tcp_reader,
            raw: ws.raw_dir(&format!("r{n}"))?,
            dir: format!("/io/r{n}"),
            size: opts.size,
        };
        rt.block_on(writer.mkdir_all(&round.dir))?;
        let mut warm_up = Times::default();
        let times = if n == 0 { &mut warm_up } else { &mut t };
        rt.block_on(round.run(opts.files, times))?;
        std::fs::remove_dir_all(&round.raw)?;
        rt.block_on(writer.remove_all(&round.dir))?;
    }
    let gbps = |f: fn(&Times) -> &Vec<Duration>| {
        median(f(&t).iter().map(|d| gb / d.as_secs_f64()).collect())
    };
    let (w, raw_w) = (gbps(|t| &t.write), gbps(|t| &t.raw_write));
    let (r, raw_r) = (gbps(|t| &t.read), gbps(|t| &t.raw_read));
    let (f, raw_c) = (gbps(|t| &t.fetch), gbps(|t| &t.raw_copy));
    let (ft, raw_t) = (gbps(|t| &t.fetch_tcp), gbps(|t| &t.raw_tcp));
    header("GB/s", "baseline");
    row_precise("local write (vs dd write)", w, raw_w);
    row_precise("local read (vs dd read)", r, raw_r);
    row_precise("remote fetch, same host (vs dd copy)", f, raw_c);
    row_precise("remote fetch over TCP (vs dd copy)", ft, raw_c);
    row_precise("remote fetch over TCP (vs raw TCP)", ft, raw_t);
    target(
        &format!("local write >= 90% of raw ({:.0}%)", 100.0 * w / raw_w),
        w >= 0.9 * raw_w,
    );
    target(
        &format!("local read >= 90% of raw ({:.0}%)", 100.0 * r / raw_r),
        r >= 0.9 * raw_r,
    );
    target(&format!("remote fetch >= 1 GB/s ({f:.2} GB/s)"), f >= 1.0);
    target(
        &format!(
            "remote fetch >= 80% of a local copy ({:.0}%)",
            100.0 * f / raw_c
        ),
        f >= 0.8 * raw_c,
    );
    Ok(())
}
