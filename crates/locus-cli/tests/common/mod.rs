//! A real local cluster for integration tests: daemons started by the
//! `locus` binary exactly as users start them, stopped and purged on drop.

#![allow(dead_code)]

use locus_fs::{Client, ClientOptions};
use locus_runtime::record::{self, TaskRecord};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub(crate) struct TestCluster {
    pub dir: tempfile::TempDir,
    pub nodes: u32,
}

pub(crate) fn locus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(args)
        .env_remove("LOCUS_DIR")
        .output()
        .expect("run locus")
}

impl TestCluster {
    pub(crate) fn up(nodes: u32) -> TestCluster {
        Self::up_with(nodes, &[])
    }

    pub(crate) fn up_with(nodes: u32, extra: &[&str]) -> TestCluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = TestCluster { dir, nodes };
        let n = nodes.to_string();
        let mut args = vec!["fs", "up", "--nodes", &n, "--dir", c.path_str()];
        args.extend_from_slice(extra);
        let out = locus(&args);
        assert!(
            out.status.success(),
            "fs up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        c
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path_str(&self) -> &str {
        self.dir.path().to_str().expect("utf-8 temp path")
    }

    pub(crate) fn client(&self, node: u32) -> Client {
        self.client_with(ClientOptions {
            node,
            ..ClientOptions::default()
        })
    }

    /// A client of `node` that fetches over TCP even from holders on this
    /// host.
    pub(crate) fn tcp_client(&self, node: u32) -> Client {
        self.client_with(ClientOptions {
            node,
            same_host_copy: false,
            ..ClientOptions::default()
        })
    }

    pub(crate) fn client_with(&self, opts: ClientOptions) -> Client {
        Client::open(self.path(), opts).expect("client")
    }

    /// Runs `locus fs ARGS… --dir DIR`.
    pub(crate) fn fs(&self, args: &[&str]) -> Output {
        let mut all = vec!["fs"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--dir", self.path_str()]);
        locus(&all)
    }

    pub(crate) fn node_dir(&self, node: u32) -> PathBuf {
        self.path().join(format!("node-{node}"))
    }

    /// Where node `node` stores copy `stamp` of `path`.
    pub(crate) fn stored(&self, node: u32, path: &str, stamp: u64) -> PathBuf {
        locus_fs::Store::open(&self.node_dir(node))
            .expect("node store")
            .data_path(path, stamp)
    }

    pub(crate) fn pid(&self, node: u32) -> i32 {
        std::fs::read_to_string(self.node_dir(node).join("daemon.pid"))
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid")
    }

    /// Sends `sig` to node's daemon and, for fatal signals, waits for it to go.
    /// Sends `sig` to node `node`'s daemon and waits until it took effect:
    /// dead for SIGKILL/SIGTERM, every thread stopped for SIGSTOP (a thread
    /// mid-request could otherwise still answer).
    pub(crate) fn signal(&self, node: u32, sig: i32) {
        let pid = self.pid(node);
        // SAFETY: a plain signal to a daemon this test started.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        let done = |states: Vec<String>| match sig {
            libc::SIGKILL | libc::SIGTERM => states.iter().all(|s| s == "Z"),
            libc::SIGSTOP => states.iter().all(|s| s == "T"),
            _ => true,
        };
        for _ in 0..500 {
            if done(thread_states(pid)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("daemon {pid} did not take signal {sig}");
    }

    /// Restarts stopped daemons (`locus fs up` on the existing directory).
    pub(crate) fn restart(&self) {
        let out = locus(&["fs", "up", "--dir", self.path_str()]);
        assert!(
            out.status.success(),
            "restart failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let _ = locus(&["fs", "down", "--dir", self.path_str()]);
    }
}

/// A small tmpfs mounted for a test (root only), unmounted on drop: on a
/// new directory (`new`) or over an existing one (`over`).
pub(crate) struct SmallDisk {
    dir: PathBuf,
    _made: Option<tempfile::TempDir>,
}

impl SmallDisk {
    pub(crate) fn new(size: &str) -> SmallDisk {
        let made = tempfile::tempdir().expect("tempdir");
        let mut disk = SmallDisk::over(made.path(), size);
        disk._made = Some(made);
        disk
    }

    pub(crate) fn over(dir: &Path, size: &str) -> SmallDisk {
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(ok.success(), "mounting a tmpfs on {}", dir.display());
        SmallDisk {
            dir: dir.to_path_buf(),
            _made: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for SmallDisk {
    /// Stops a cluster made on it in `cluster` (even when the test
    /// failed), then unmounts.
    fn drop(&mut self) {
        let cluster = self.dir.join("cluster");
        if cluster.exists() {
            let _ = locus(&["fs", "down", "--dir", cluster.to_str().expect("utf-8 path")]);
        }
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// Stops the cluster in its directory when dropped (also when a test fails).
pub(crate) struct FsDown(pub PathBuf);

impl Drop for FsDown {
    fn drop(&mut self) {
        let _ = locus(&["fs", "down", "--dir", self.0.to_str().expect("utf-8 path")]);
    }
}

/// The names in Locus directory `dir`, as `client` lists them.
pub(crate) async fn names(client: &Client, dir: &str) -> Vec<String> {
    let entries = client.readdir(dir).await.unwrap();
    entries.into_iter().map(|e| e.name).collect()
}

/// Whether the tests run as root (namespaces, mounts and cgroups need it).
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The stdout of a command that must have succeeded (else its output).
pub(crate) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "command failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Processes whose command line contains `needle`.
pub(crate) fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Waits up to 5 s for `cond` (for effects a daemon applies after answering).
pub(crate) fn eventually(what: &str, cond: impl Fn() -> bool) {
    eventually_within(Duration::from_secs(5), what, cond);
}

/// Waits up to `limit` for `cond`.
pub(crate) fn eventually_within(limit: Duration, what: &str, cond: impl Fn() -> bool) {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never happened within {limit:?}: {what}");
}

/// A `locus run` of a script in a fresh directory.
pub(crate) struct Run {
    pub out: Output,
    pub dir: tempfile::TempDir,
}

impl Run {
    pub(crate) fn new(opts: &[&str], script: &str) -> Run {
        Self::in_dir(tempfile::tempdir().unwrap(), opts, script)
    }

    /// A run whose run directory is `DIR/run`.
    pub(crate) fn in_dir(dir: tempfile::TempDir, opts: &[&str], script: &str) -> Run {
        let file = dir.path().join("t.swift");
        std::fs::write(&file, script).unwrap();
        let run_dir = dir.path().join("run");
        let mut args = vec!["run", "--run-dir", run_dir.to_str().unwrap()];
        args.extend_from_slice(opts);
        args.push(file.to_str().unwrap());
        let out = locus(&args);
        Run { out, dir }
    }

    pub(crate) fn ok(self) -> Run {
        assert!(
            self.out.status.success(),
            "run failed: {}{}",
            String::from_utf8_lossy(&self.out.stdout),
            String::from_utf8_lossy(&self.out.stderr)
        );
        self
    }

    pub(crate) fn records(&self, func: &str) -> Vec<TaskRecord> {
        let all = record::load(&self.dir.path().join("run")).unwrap();
        all.into_iter().filter(|r| r.func == func).collect()
    }

    pub(crate) fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).to_string()
    }

    pub(crate) fn run_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("run")
    }
}

/// The state letter of each thread of process `pid` (none once it is gone).
fn thread_states(pid: i32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("stat")).ok())
        .filter_map(|stat| {
            let after = stat.rsplit(')').next()?;
            after.split_whitespace().next().map(str::to_string)
        })
        .collect()
}

/// Opens `page` in headless Chromium: no external resources, no console
/// errors, a real screenshot (beside the page, `.png`), and at least
/// `charts` charts, each with bars.
pub(crate) fn assert_renders(page: &Path, charts: usize) {
    let html = std::fs::read_to_string(page).unwrap();
    assert!(!html.contains("<script src") && !html.contains("http"));
    let url = format!("file://{}", page.display());
    let chromium = |extra: &[&str]| {
        let mut args = vec![
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2400",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        Command::new("chromium")
            .args(&args)
            .output()
            .expect("chromium (installed by scripts/setup.sh)")
    };
    let shot = page.with_extension("png");
    let arg = format!("--screenshot={}", shot.display());
    let run = chromium(&[&arg]);
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(
        !log.lines()
            .any(|l| l.contains("CONSOLE") || l.contains("Uncaught")),
        "console errors: {log}"
    );
    let png = std::fs::read(&shot).expect("screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot too small"
    );
    // Every chart Chromium laid out has drawn bars.
    let dom = String::from_utf8_lossy(&chromium(&["--dump-dom"]).stdout).to_string();
    let found: Vec<&str> = dom.split("<svg class=\"chart\"").skip(1).collect();
    assert!(found.len() >= charts, "{} charts", found.len());
    for (i, c) in found.iter().enumerate() {
        let body = c.split("</svg>").next().unwrap();
        assert!(body.contains("class=\"bar\""), "chart {i} is empty");
    }
}
