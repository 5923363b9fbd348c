//! The live page as a user sees it: `locus run --watch` opened in headless
//! Chromium, driven over the DevTools protocol; and `locus watch` of a
//! large run's directory, whose memory stays bounded.

mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Tasks that take a few seconds on two workers, and one that fails saying
/// why on stderr once some have ended.
const SCRIPT: &str = r#"
app (file o) work(int i) {
  "sh" "-c" ("sleep 0.15; echo " + i) @stdout=o;
}
app (file o) bad(file after) {
  "sh" "-c" "echo this-went-wrong-on-purpose >&2; exit 3" @stdout=o;
}
file outs[];
foreach i in [0:39] {
  outs[i] = work(i);
}
file b <"/locus/bad.txt"> = bad(outs[12]);
"#;

/// A process this test started, killed and reaped when dropped.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A DevTools-protocol session with one page of a headless Chromium.
struct Browser {
    ws: tungstenite::WebSocket<TcpStream>,
    session: String,
    next: u64,
    /// Exceptions the page's scripts threw.
    exceptions: Vec<Value>,
    _chromium: Started,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn open(url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let chromium = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args(["--remote-debugging-port=0", "--window-size=1200,1600"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium (installed by scripts/setup.sh)");
        let chromium = Started(chromium);
        // Chromium writes its port and the browser's socket path here.
        let port_file = profile.path().join("DevToolsActivePort");
        common::eventually_within(Duration::from_secs(30), "chromium listens", || {
            std::fs::read_to_string(&port_file).is_ok_and(|s| s.lines().count() >= 2)
        });
        let text = std::fs::read_to_string(&port_file).unwrap();
        let mut lines = text.lines();
        let (port, path) = (lines.next().unwrap(), lines.next().unwrap());
        let stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let (ws, _) = tungstenite::client(format!("ws://127.0.0.1:{port}{path}"), stream).unwrap();
        let mut b = Browser {
            ws,
            session: String::new(),
            next: 0,
            exceptions: Vec::new(),
            _chromium: chromium,
            _profile: profile,
        };
        let target = b.call("Target.createTarget", json!({ "url": "about:blank" }));
        let attached = b.call(
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b.call("Runtime.enable", json!({}));
        b.call("Page.enable", json!({}));
        b.call("Page.navigate", json!({ "url": url }));
        b
    }

    /// Sends a command (to the page, once attached) and returns its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let mut msg = json!({ "id": self.next, "method": method, "params": params });
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws.send(msg.to_string().into()).unwrap();
        loop {
            let text = match self.ws.read().unwrap() {
                tungstenite::Message::Text(t) => t,
                _ => continue,
            };
            let reply: Value = serde_json::from_str(&text).unwrap();
            if reply["method"] == "Runtime.exceptionThrown" {
                self.exceptions.push(reply["params"].clone());
            }
            if reply["id"] == json!(self.next) {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true }),
        );
        r["result"]["value"].clone()
    }

    fn text_of(&mut self, id: &str) -> String {
        let expr = format!("(document.getElementById('{id}') || {{}}).textContent || ''");
        self.eval(&expr).as_str().unwrap_or_default().to_string()
    }
}

/// Reads `child`'s stderr until the line naming the page's address.
fn page_url(child: &mut Child) -> String {
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(at) = line.find("http://") {
            let url = line[at..].split_whitespace().next().unwrap().to_string();
            // The rest is drained, so that the process never blocks on it.
            std::thread::spawn(move || lines.for_each(drop));
            return url;
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    panic!("no page address printed: {seen}");
}

#[test]
fn a_browser_watches_tasks_end_and_a_failure_appear_while_the_run_goes() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("w.swift");
    std::fs::write(&script, SCRIPT).unwrap();
    let run_dir = dir.path().join("run");
    let mut run = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "--watch", "--keep-going", "-n", "3", "--run-dir"])
        .arg(&run_dir)
        .arg(&script)
        .env_remove("LOCUS_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = page_url(&mut run);
    let mut run = Started(run);
    let mut page = Browser::open(&url);

    // The done count, as the page shows it, grows while the run goes.
    let mut counts = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut failure_seen_live = false;
    loop {
        let state = page.text_of("state");
        if let Ok(n) = page.text_of("done").parse::<u64>() {
            if counts.last() != Some(&n) {
                counts.push(n);
            }
        }
        if state == "running"
            && page
                .text_of("failures")
                .contains("this-went-wrong-on-purpose")
        {
            failure_seen_live = true;
        }
        if state == "failed" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed the end: {counts:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        counts.len() >= 4,
        "the done count did not grow while shown: {counts:?}"
    );
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
    assert!(
        failure_seen_live,
        "the failed task's stderr was not shown while the run went"
    );
    // The ended run's page: every task, the failure in full, the report.
    assert_eq!(page.text_of("done"), "41");
    assert_eq!(page.text_of("failed"), "1");
    let failures = page.text_of("failures");
    assert!(
        failures.contains("bad") && failures.contains("exit 3"),
        "{failures}"
    );
    assert!(
        page.eval("document.querySelectorAll('#stream rect.task').length")
            .as_u64()
            > Some(10)
    );
    assert!(
        page.eval("document.querySelectorAll('#series polyline').length")
            .as_u64()
            == Some(4)
    );
    assert!(page.text_of("funcs").contains("work"));
    assert!(page.text_of("fs").contains("node0"));
    assert!(page.text_of("report").contains("the full report"));
    let shot = page.call("Page.captureScreenshot", json!({ "format": "png" }));
    let png = base64_decode(shot["data"].as_str().unwrap());
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000);
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("watch-page.png");
    std::fs::write(&kept, &png).unwrap();
    eprintln!("screenshot: {}", kept.display());
    assert!(page.exceptions.is_empty(), "{:?}", page.exceptions);
    let code = run.0.wait().unwrap();
    assert_eq!(code.code(), Some(1), "a run with a failed task fails");
}

/// `locus watch run_dir`, and the address it serves the page at.
fn watch(run_dir: &Path) -> (Started, String) {
    let mut watch = Command::new(env!("CARGO_BIN_EXE_locus"))
        .arg("watch")
        .arg(run_dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = page_url(&mut watch);
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    (Started(watch), addr.to_string())
}

/// `GET path` of a page's server; the body.
fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// Writes the records of a 200,000-task run (four workers, one task in
/// fifty failed) into `run_dir`, as its workers would have.
fn large_run(run_dir: &Path) -> u64 {
    let records = run_dir.join("records");
    std::fs::create_dir_all(&records).unwrap();
    std::fs::write(run_dir.join("locus-run"), "").unwrap();
    let n = 200_000u64;
    for rank in 0..4u64 {
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(records.join(format!("rank-{rank}.jsonl"))).unwrap(),
        );
        for i in (rank..n).step_by(4) {
            let start = 1_700_000_000_000_000 + i * 5_000;
            // One in fifty failed.
            let error = match i % 50 {
                0 => "\"exited with code 1\"",
                _ => "null",
            };
            writeln!(
                w,
                r#"{{"id":{i},"func":"f{f}","rank":{rank},"node":"node{node}","target":null,"placed":"Auto","start_us":{start},"end_us":{end},"local_bytes":4096,"remote_bytes":0,"written_bytes":100,"exit":0,"attempts":1,"error":{error},"at":"big.swift:7:3","argv":["sh","-c","step"],"cpu_us":900,"max_rss_kib":2000,"inputs":[{{"path":"/locus/in/{i}","version":"s1"}}]}}"#,
                f = i % 9,
                node = rank % 2,
                end = start + 4_000,
            )
            .unwrap();
        }
    }
    n
}

/// The peak resident memory of process `pid` (KiB).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_200k_task_run_is_watched_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir: PathBuf = dir.path().join("run");
    let n = large_run(&run_dir);
    let on_disk: u64 = std::fs::read_dir(run_dir.join("records"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let (watch, addr) = watch(&run_dir);
    let view = || -> Value { serde_json::from_str(&get(&addr, "/view.json")).unwrap_or_default() };
    common::eventually_within(Duration::from_secs(120), "every record read", || {
        view()["done"] == json!(n)
    });
    let view = view();
    assert_eq!(view["failed"], json!(n / 50));
    assert_eq!(view["failures"].as_array().unwrap().len(), 50);
    assert_eq!(view["funcs"].as_object().unwrap().len(), 9);
    let sent = get(&addr, "/view.json").len() as u64;
    let peak = peak_kib(watch.0.id()) * 1024;
    eprintln!("records {on_disk} bytes; view {sent} bytes; watcher peak {peak} bytes");
    assert!(sent < 300_000, "the view grows with the run: {sent} bytes");
    // Far below the records it read: they are added up, not kept.
    assert!(
        peak < on_disk / 2 && peak < 48 << 20,
        "{peak} bytes for {on_disk} bytes of records"
    );
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[test]
fn the_page_of_a_run_whose_launcher_was_killed_says_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("long.swift");
    std::fs::write(
        &script,
        "app (void v) nap() { \"sleep\" \"30\" }\nforeach i in [1:4] { nap(); }\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let run = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "-n", "3", "--run-dir"])
        .arg(&run_dir)
        .arg(&script)
        .env_remove("LOCUS_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut run = Started(run);
    let (_watch, addr) = watch(&run_dir);
    let state = || -> Value {
        let v: Value = serde_json::from_str(&get(&addr, "/view.json")).unwrap_or_default();
        v["run"]["state"].clone()
    };
    common::eventually_within(Duration::from_secs(60), "the page shows it running", || {
        state() == json!("running")
    });
    // SAFETY: a signal to the launcher this test started.
    unsafe { libc::kill(run.0.id() as i32, libc::SIGKILL) };
    run.0.wait().unwrap();
    common::eventually_within(Duration::from_secs(30), "the page shows it stopped", || {
        state() == json!("stopped")
    });
}
