//! A run under faults: a hostile peer with the run's secret, a dying
//! leader, a dying worker, a failing task beside long ones, absurd ranges.

mod common;

use common::{locus, processes_with, Run};
use locus_proto::auth::{self, Channel, Secret};
use locus_proto::frame;
use locus_proto::run::{ErrorKind, RankMsg};
use locus_runtime::Entry;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Starts `locus run -n 3` of `script` in the background.
fn start(dir: &Path, script: &str) -> (Child, PathBuf) {
    start_with(dir, script, &["-n", "3"])
}

/// Starts `locus run ARGS` of `script` in the background.
fn start_with(dir: &Path, script: &str, args: &[&str]) -> (Child, PathBuf) {
    let file = dir.join("t.swift");
    std::fs::write(&file, script).unwrap();
    let run_dir = dir.join("run");
    let child = Command::new(env!("CARGO_BIN_EXE_locus"))
        .arg("run")
        .args(args)
        .arg("--run-dir")
        .arg(&run_dir)
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, run_dir)
}

/// The rendezvous entry of `rank`, once it is published.
fn entry(run_dir: &Path, rank: u32) -> Entry {
    let path = run_dir.join("ranks").join(format!("{rank}.json"));
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(e) = serde_json::from_str(&text) {
                return e;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("rank {rank} never published {}", path.display());
}

#[test]
fn a_peer_with_the_secret_cannot_end_a_run_with_bad_frames() {
    let dir = tempfile::tempdir().unwrap();
    let (child, run_dir) = start(
        dir.path(),
        "app (file o) nap() { \"sh\" \"-c\" \"sleep 2.345; echo x > $0\" o }\n\
         file f = nap();\nwait (f) { trace(\"done\"); }\n",
    );
    let server = entry(&run_dir, 2).addr.unwrap();
    // Once the run is under way (every rank connected).
    while processes_with("sleep 2.345").is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let secret = Secret::load(&run_dir.join("secret")).unwrap();
    // Claiming a worker already connected, a rank that does not exist, and
    // no rank at all; each then sends garbage.
    for hello in [Some(0), Some(99), None] {
        let mut s = TcpStream::connect(server).unwrap();
        auth::connect(&mut s, &secret, Channel::Ranks).unwrap();
        if let Some(rank) = hello {
            s.write_all(&frame::encode(&RankMsg::Hello { rank }).unwrap())
                .unwrap();
        }
        let _ = s.write_all(&[
            9, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ]);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("trace: done"));
}

#[test]
fn a_failed_run_leaves_no_app_running_and_a_dead_leader_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // One app fails while another would run on and write.
    let marker = dir.path().join("marker");
    let script = format!(
        "app (void v) long() {{ \"sh\" \"-c\" \"sleep 7.321; touch {}\" }}\n\
         app (void v) fail() {{ \"sh\" \"-c\" \"sleep 0.5; exit 4\" }}\n\
         long();\nfail();\n",
        marker.display()
    );
    let (child, failed_dir) = start(dir.path(), &script);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exited with code 4"), "{stderr}");
    // The run and the task say what kind of failure it was.
    let summary = locus_runtime::RunSummary::load(&failed_dir).unwrap();
    assert_eq!(summary.error_kind, Some(ErrorKind::Task), "{summary:?}");
    let records = locus_runtime::record::load(&failed_dir).unwrap();
    let fail = records.iter().find(|r| r.func == "fail").unwrap();
    assert_eq!(fail.error_kind, Some(ErrorKind::Task));
    assert!(
        processes_with("sleep 7.321").is_empty(),
        "an app outlived its run"
    );

    // The leading server is killed: the run ends, saying so, with a summary.
    let dir = tempfile::tempdir().unwrap();
    let (child, run_dir) = start(
        dir.path(),
        "app (void v) nap() { \"sleep\" \"30.123\" }\nnap();\n",
    );
    let leader = entry(&run_dir, 2).pid;
    while processes_with("sleep 30.123").is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to a rank of the run this test started.
    unsafe { libc::kill(leader as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rank 2 (the leading server) on node0 was killed by signal 9"),
        "{stderr}"
    );
    let summary = locus(&["report", run_dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(text.contains("killed by signal 9"), "{text}");
    assert!(processes_with("sleep 30.123").is_empty());
}

#[test]
fn absurd_ranges_are_errors_not_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.swift");
    std::fs::write(
        &file,
        "int A[] = [1:9223372036854775807];\ntrace(size(A));\n\
         foreach i in [-9223372036854775807:9223372036854775807:4611686018427387904] \
         { trace(i); }\n",
    )
    .unwrap();
    let out = locus(&["run", "-n", "2", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("has 9223372036854775807 elements; an array made from a range holds"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The run directory is announced; remove it.
    if let Some(d) = stderr
        .lines()
        .find_map(|l| l.strip_prefix("locus: run directory "))
    {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn sigterm_stops_everything_and_keeps_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    // Five quick tasks finish; then two run (one per worker) until the run
    // is stopped, with four more waiting for a worker.
    let script = "app (file o) quick(int i) { \"sh\" \"-c\" \"echo $1 > $0\" o i }\n\
                  app (void v) slow(int k) { \"sleep\" \"40.456\" }\n\
                  app (void v) later(int k) { \"true\" }\n\
                  file q[];\nforeach i in [0:4] { q[i] = quick(i); }\n\
                  wait (q) { slow(0); slow(1); foreach k in [0:3] { later(k); } }\n";
    let (child, run_dir) = start(dir.path(), script);
    while processes_with("sleep 40.456").len() < 2 {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the `locus run` this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(processes_with("sleep 40.456").is_empty());
    assert_eq!(
        processes_with(run_dir.to_str().unwrap()).len(),
        0,
        "a rank or daemon was left"
    );
    let quick = locus_runtime::record::load(&run_dir)
        .unwrap()
        .into_iter()
        .filter(|r| r.func == "quick")
        .count();
    assert_eq!(quick, 5, "records of the finished tasks");
    // The task running when the run was stopped is recorded so.
    let slow: Vec<_> = locus_runtime::record::load(&run_dir)
        .unwrap()
        .into_iter()
        .filter(|r| r.func == "slow")
        .collect();
    assert_eq!(slow.len(), 2, "{slow:?}");
    assert!(
        slow.iter().all(|s| s.interrupted() && !s.failed()),
        "{slow:?}"
    );
    let report = locus(&["report", run_dir.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&report.stdout);
    assert!(shown.contains("interrupted"), "{shown}");
    assert!(
        shown.contains("(0 failed, 2 stopped with the run,"),
        "{shown}"
    );
    assert!(shown.contains("running when stopped: slow at "), "{shown}");
    // What waited for a worker, as its server held it.
    assert!(
        shown.contains("never started: 4 task(s): later at ")
            && shown.contains("t.swift:6:51 (×4)"),
        "{shown}"
    );
    // The page says so too, as a stopped run, not a failed one.
    let page = dir.path().join("page.html");
    let html = locus(&[
        "report",
        run_dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(html.status.success());
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("<h2>Stopped</h2>") && page.contains("Never started: 4 task(s): later at "),
        "{page}"
    );
}

#[test]
fn a_kept_file_system_serves_a_later_run() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.swift");
    std::fs::write(
        &first,
        "import files;\nfile f<\"/locus/kept.txt\"> = write(\"kept\\n\");\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let rd = run_dir.to_str().unwrap();
    let out = locus(&[
        "run",
        "-n",
        "2",
        "--keep-fs",
        "--run-dir",
        rd,
        first.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("file system is still up"));
    let fs = run_dir.join("fs");
    let _down = common::FsDown(fs.clone());
    let second = dir.path().join("second.swift");
    std::fs::write(
        &second,
        "import files;\ntrace(read(input(\"/locus/kept.txt\")));\n",
    )
    .unwrap();
    let out = locus(&[
        "run",
        "-n",
        "2",
        "--run-dir",
        dir.path().join("run2").to_str().unwrap(),
        "--fs",
        fs.to_str().unwrap(),
        second.to_str().unwrap(),
    ]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("trace: kept"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_hanging_app_is_killed_at_the_task_timeout_and_retried_like_any_failure() {
    let script = "app (void o) hang() { \"sleep\" \"60\" }\nmain { hang(); }\n";
    let started = std::time::Instant::now();
    let run = Run::new(
        &["-n", "2", "--task-timeout", "0.3", "--retries", "1"],
        script,
    );
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        err.contains("ran longer than the task timeout (300ms) and was killed (2 attempts)"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let records = run.records("hang");
    assert_eq!((records.len(), records[0].attempts), (1, 2), "{records:?}");
    // Killed at each timeout, it may take a moment to go on a loaded
    // machine (in two full suites, more than 5 s and more than 20 s: the
    // cause was not found in isolation, under load, in 12 reruns); it must
    // not run its 60 s. What is left is named if it does.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(45);
    while !processes_with("sleep 60").is_empty() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left: Vec<String> = processes_with("sleep 60")
        .iter()
        .map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default())
        .collect();
    assert!(left.is_empty(), "the app is left running: {left:?}");
    let bad = Run::new(&["--task-timeout=-1"], script);
    let err = String::from_utf8_lossy(&bad.out.stderr);
    assert!(
        err.contains("'-1' is not a positive number of seconds"),
        "{err}"
    );
}

/// A script nesting `depth` blocks of the kinds `kinds` picks in turn, with
/// a `trace("deep")` innermost: 0 `if`, 1 `else` (`else if` when an `if`
/// follows), 2 `switch`, 3 `foreach`, 4 `wait`.
fn nested_script(depth: usize, kinds: &[usize]) -> String {
    let mut open = String::from("int x = 1;\n");
    let mut close = String::new();
    for level in 0..depth {
        let kind = |l: usize| kinds[l % kinds.len()];
        let chained = level + 1 < depth && kind(level + 1) <= 1;
        let (o, c) = match kind(level) {
            0 => ("if (x == 1) {\n".to_string(), "}\n"),
            1 if chained => (format!("if (x == 0) {{ trace({level}); }} else "), ""),
            1 => (
                format!("if (x == 0) {{ trace({level}); }} else {{\n"),
                "}\n",
            ),
            2 => ("switch (x) { case 1:\n".to_string(), "}\n"),
            3 => (format!("foreach i{level} in [0:0] {{\n"), "}\n"),
            _ => ("wait (x) {\n".to_string(), "}\n"),
        };
        open.push_str(&o);
        close.insert_str(0, c);
    }
    format!("{open}trace(\"deep\");\n{close}")
}

#[test]
fn generated_deep_scripts_are_refused_by_check_and_run_alike_or_run() {
    // Every kind of block alone and mixed, just inside the documented limit
    // of 100 and past it (20,000 switches used to pass `check` and then
    // overflow the server's stack).
    let mixes: [&[usize]; 7] = [&[0], &[1], &[2], &[3], &[4], &[0, 1, 2, 3, 4], &[1, 1, 2]];
    for kinds in mixes {
        for depth in [95, 20_000] {
            let script = nested_script(depth, kinds);
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("deep.swift");
            std::fs::write(&file, &script).unwrap();
            let check = locus(&["check", file.to_str().unwrap()]);
            let run = Run::new(&["-n", "3", "--servers", "2"], &script);
            let run_err = String::from_utf8_lossy(&run.out.stderr).to_string();
            let what = format!("kinds {kinds:?}, depth {depth}");
            if depth < 100 {
                assert!(check.status.success(), "{what}: check refused it");
                assert_eq!(run.ok().stdout(), "trace: deep\n", "{what}");
                continue;
            }
            let check_err = String::from_utf8_lossy(&check.stderr).to_string();
            assert!(
                check_err.contains("error: nesting too deep"),
                "{what}: {check_err}"
            );
            // The same position and message: the limit is applied in one place.
            let first = |e: &str| {
                e.lines()
                    .next()
                    .and_then(|l| l.split_once(".swift:"))
                    .map(|(_, m)| m.to_string())
            };
            assert_eq!(first(&check_err), first(&run_err), "{what}");
            assert_eq!(run.out.status.code(), Some(1), "{what}: {run_err}");
        }
    }
}

#[test]
fn generated_long_flat_scripts_run() {
    // Many statements, a long `=>` chain, a large literal: each used to
    // take time quadratic in its length before it ran.
    let n = 20_000;
    let statements: String = (0..n).map(|i| format!("int x{i} = {i};\n")).collect();
    let chain = format!(
        "trace(\"a\") =>\n{}trace(\"end\");\n",
        (0..n)
            .map(|i| format!("trace({i}) =>\n"))
            .collect::<String>()
    );
    let literal = format!(
        "int A[] = [{}];\ntrace(size(A));\n",
        (0..5 * n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    for (script, last) in [
        (
            statements + &format!("trace(x{});\n", n - 1),
            format!("trace: {}", n - 1),
        ),
        (chain, "trace: end".to_string()),
        (literal, format!("trace: {}", 5 * n)),
    ] {
        let run = Run::new(&["-n", "3", "--servers", "2"], &script).ok();
        assert_eq!(run.stdout().lines().last(), Some(last.as_str()));
    }
}

#[test]
fn a_worker_killed_mid_run_costs_only_its_tasks_which_run_elsewhere() {
    // Three workers (ranks 0-2) and the leading server (rank 3); then with
    // a second server (rank 4), which serves worker 1 and tells the leader.
    kill_a_worker_mid_run(&["-n", "4"], 0);
    kill_a_worker_mid_run(&["-n", "5", "--servers", "2"], 1);
}

/// `n` tasks `nap(i)`, each sleeping `secs` (a string `processes_with`
/// finds) then writing `i` to host file `out/i.txt`.
fn naps(out: &Path, secs: &str, n: u32) -> String {
    format!(
        "app (file o) nap(int i) {{ \"sh\" \"-c\" \"sleep {secs}; echo $1 > $0\" o i }}\n\
         foreach i in [0:{}] {{ file f<sprintf(\"{}/%i.txt\", i)> = nap(i); }}\n",
        n - 1,
        out.display()
    )
}

/// Every one of `n` naps wrote its number.
fn assert_naps_done(out: &Path, n: u32) {
    for i in 0..n {
        let got = std::fs::read_to_string(out.join(format!("{i}.txt"))).unwrap();
        assert_eq!(got.trim(), i.to_string(), "nap {i}");
    }
}

fn kill_a_worker_mid_run(args: &[&str], victim: u32) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = naps(&out, "0.4567", 12);
    let (child, run_dir) = start_with(dir.path(), &script, args);
    let worker = entry(&run_dir, victim).pid;
    // Every worker busy with a task (each shows as its `sh -c "sleep …"`
    // and that shell's `sleep`): the victim is mid-run, not starting.
    while processes_with("sleep 0.4567").len() < 6 {
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: a signal to a rank of the run this test started.
    unsafe { libc::kill(worker as i32, libc::SIGKILL) };
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    let said = format!("rank {victim} (a worker) on node0 was killed by signal 9");
    assert!(stderr.contains(&said), "{stderr}");
    assert_naps_done(&out, 12);
    let records = locus_runtime::record::load(&run_dir).unwrap();
    let ran: std::collections::BTreeSet<_> = records
        .iter()
        .filter(|r| r.func == "nap" && r.error.is_none())
        .map(|r| r.rank)
        .collect();
    let others: Vec<u32> = (0..3).filter(|w| *w != victim).collect();
    assert!(others.iter().all(|w| ran.contains(w)), "{ran:?}");
    assert!(processes_with("sleep 0.4567").is_empty());
    // The report tells it.
    let gone = format!("worker rank {victim} on node0 is gone: ");
    let summary = locus_runtime::RunSummary::load(&run_dir).unwrap();
    assert!(
        summary.workers_gone.len() == 1 && summary.workers_gone[0].starts_with(&gone),
        "{:?}",
        summary.workers_gone
    );
    let report = locus(&["report", run_dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains(&gone) && text.contains("its tasks ran elsewhere"),
        "{text}"
    );
}

#[test]
fn a_stopped_worker_of_the_servers_host_is_taken_for_gone_and_the_run_completes() {
    // Three workers and their server on one host (Unix sockets): a worker
    // stopped mid-task (SIGSTOP) says nothing, nor does its connection.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = naps(&out, "0.5678", 12);
    let (child, run_dir) = start_with(dir.path(), &script, &["-n", "4"]);
    let worker = entry(&run_dir, 0).pid;
    while processes_with("sleep 0.5678").len() < 6 {
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: a signal to a rank of the run this test started.
    unsafe { libc::kill(worker as i32, libc::SIGSTOP) };
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    assert_naps_done(&out, 12);
    let summary = locus_runtime::RunSummary::load(&run_dir).unwrap();
    let gone = &summary.workers_gone;
    assert!(
        gone.len() == 1
            && gone[0].starts_with("worker rank 0 ")
            && gone[0].contains("no sign of life"),
        "{gone:?}\n{stderr}"
    );
    // Killed by the launcher once the run ended (it could not be told to stop).
    assert!(
        stderr.contains("rank 0 (a worker) on node0 did not stop"),
        "{stderr}"
    );
    assert!(
        !Path::new(&format!("/proc/{worker}")).exists() || {
            let stat = std::fs::read_to_string(format!("/proc/{worker}/stat")).unwrap_or_default();
            stat.contains(") Z ")
        }
    );
}

#[test]
fn a_server_killed_mid_run_ends_it_clearly_and_resume_finishes_it() {
    // Workers 0-2, the leader (rank 3) and a second server (rank 4), whose
    // values and queue are nowhere else.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = naps(&out, "0.3456", 18);
    let args = ["-n", "5", "--servers", "2"];
    let (child, run_dir) = start_with(dir.path(), &script, &args);
    let server = entry(&run_dir, 4).pid;
    common::eventually_within(Duration::from_secs(30), "tasks ended", || {
        std::fs::read_dir(&out).map_or(0, std::iter::Iterator::count) >= 3
    });
    // SAFETY: a signal to a rank of the run this test started.
    unsafe { libc::kill(server as i32, libc::SIGKILL) };
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success());
    assert!(
        stderr.contains("server rank 4 on node0 is gone (it exited): the run cannot go on"),
        "{stderr}"
    );
    assert!(processes_with("sleep 0.3456").is_empty());
    let finished = locus_runtime::record::load(&run_dir)
        .unwrap()
        .iter()
        .filter(|r| r.func == "nap" && r.error.is_none())
        .count();
    assert!(finished >= 3, "{finished}");

    let mut resume = vec!["--resume"];
    resume.extend_from_slice(&args);
    let (child, _) = start_with(dir.path(), &script, &resume);
    let done = child.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_naps_done(&out, 18);
    let records = locus_runtime::record::load(&run_dir).unwrap();
    let ran = records
        .iter()
        .filter(|r| r.func == "nap" && !r.resumed)
        .count();
    assert_eq!(ran, 18 - finished, "only what the first run did not finish");
}

/// A run whose launcher is killed (`kill -9`) or loses its terminal
/// (`SIGHUP`) leaves no rank, daemon or program of its own behind.
#[test]
fn a_killed_or_hung_up_launcher_leaves_no_rank_daemon_or_program() {
    for (sig, nap) in [(libc::SIGKILL, "31.701"), (libc::SIGHUP, "31.702")] {
        let dir = tempfile::tempdir().unwrap();
        let script = format!("app (void v) nap() {{ \"sleep\" \"{nap}\" }}\nnap();\n");
        let (mut child, run_dir) = start_with(dir.path(), &script, &["-n", "3", "--nodes", "2"]);
        let run = run_dir.to_str().unwrap().to_string();
        while processes_with(&format!("sleep {nap}")).is_empty() {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(processes_with(&run).len() >= 5, "3 ranks and 2 daemons");
        // SAFETY: a signal to the launcher this test started.
        unsafe { libc::kill(child.id() as i32, sig) };
        child.wait().unwrap();
        common::eventually_within(Duration::from_secs(10), "the run's processes end", || {
            processes_with(&run).is_empty() && processes_with(&format!("sleep {nap}")).is_empty()
        });
    }
}

/// A run directory is one live run's: a second run of it is refused while
/// the first lives; once it is killed, `--resume` does what it left, each
/// task once.
#[test]
fn a_live_run_owns_its_directory_and_a_resume_after_its_kill_runs_each_task_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = naps(&out, "0.3457", 12);
    let (mut child, run_dir) = start(dir.path(), &script);
    common::eventually_within(Duration::from_secs(30), "tasks ended", || {
        std::fs::read_dir(&out).map_or(0, std::iter::Iterator::count) >= 2
    });
    let (second, _) = start_with(dir.path(), &script, &["-n", "3", "--resume"]);
    let refused = second.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains(&format!(
            "a live run holds it (locus run, pid {} on ",
            child.id()
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // SAFETY: a signal to the launcher this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let run = run_dir.to_str().unwrap().to_string();
    common::eventually_within(Duration::from_secs(10), "the run's processes end", || {
        processes_with(&run).is_empty() && processes_with("sleep 0.3457").is_empty()
    });
    let finished = locus_runtime::record::load(&run_dir)
        .unwrap()
        .iter()
        .filter(|r| r.func == "nap" && r.error.is_none())
        .count();
    let (resumed, _) = start_with(dir.path(), &script, &["-n", "3", "--resume"]);
    let done = resumed.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let records = locus_runtime::record::load(&run_dir).unwrap();
    let ran = records
        .iter()
        .filter(|r| r.func == "nap" && !r.resumed)
        .count();
    assert_eq!(ran, 12 - finished, "only what the first run did not finish");
    assert_naps_done(&out, 12);
}

#[test]
fn a_builtin_waiting_on_a_stopped_daemon_is_not_taken_for_a_stalled_run() {
    // The run is taken for stalled after ~1 s with no step and nothing
    // running; a builtin's file-system call is work under way however long
    // it takes. Node 1's daemon, which keeps the file's record, is stopped
    // for 3 s (less than the client's 5 s timeout): the run waits for it.
    let c = common::TestCluster::up(2);
    let client = c.client(0);
    let path = (0..)
        .map(|i| format!("/slow{i}.txt"))
        .find(|p| client.owner(p) == 1)
        .unwrap();
    common::rt().block_on(client.put(&path, b"four")).unwrap();
    c.signal(1, libc::SIGSTOP);
    let resume = std::thread::spawn({
        let pid = c.pid(1);
        move || {
            std::thread::sleep(Duration::from_secs(3));
            // SAFETY: a plain signal to a daemon this test started.
            unsafe { libc::kill(pid, libc::SIGCONT) };
        }
    });
    let script =
        format!("import files;\nfile f = input(\"/locus{path}\");\ntrace(file_size(f));\n");
    let run = Run::new(&["-n", "2", "--fs", c.path_str()], &script);
    resume.join().unwrap();
    let run = run.ok();
    assert!(run.stdout().contains("trace: 4"), "{}", run.stdout());
}

#[test]
fn a_run_past_its_memory_budget_fails_naming_the_loop_or_the_recursion() {
    // Each would take the node's memory: an endless range and a function
    // calling itself without a base case (whose calls, dropped at the end,
    // overflowed the stack too) on the server; on the worker, the endless
    // output of a `system` command, which becomes its value. Each fails
    // within its budget, naming its cause where the script has it.
    let cases = [
        (
            "foreach i in [0:9223372036854775807] { int x = i + 1; }\n",
            "server",
            "t.swift:1:9: this loop made ",
        ),
        (
            "(int o) f(int n) { o = f(n + 1); }\ntrace(f(0));\n",
            "server",
            "calls of 'f' made ",
        ),
        (
            "import string;\nimport sys;\nstring o; int c;\n\
             (o, c) = system1(\"while :; do head -c 8000000 /dev/zero; sleep 0.02; done\");\n\
             trace(strlen(o));\n",
            "worker",
            "t.swift:4:10)",
        ),
    ];
    // The smallest budget a debug build's idle ranks stay under: the time
    // to fill it grows with it.
    std::thread::scope(|s| {
        for (script, rank, cause) in cases {
            s.spawn(move || over_budget(script, rank, cause));
        }
    });
}

fn over_budget(script: &str, rank: &str, cause: &str) {
    let started = std::time::Instant::now();
    let run = Run::new(&["-n", "2", "--max-memory", "64M"], script);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| l.starts_with(&format!("locus: {rank}")))
        .unwrap_or_default();
    assert!(
        last.contains("over its budget of 61.0 MiB (--max-memory)") && last.contains(cause),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(120));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.run_dir().join("run.json")).unwrap()).unwrap();
    assert_eq!(summary["error_kind"], "Memory");
}

#[test]
fn a_host_file_slow_to_read_holds_its_builtin_only_not_the_server() {
    // A FIFO whose writer comes 12 s later, as a hung NFS server would:
    // read on the engine's thread, it held the whole server past its
    // peers' 10 s bound for a sign of life, and the run lost its worker.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("slow");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a plain mkfifo of a path in this test's directory.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let writer = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            std::thread::sleep(Duration::from_secs(12));
            std::fs::write(fifo, "late\n").unwrap();
        }
    });
    let script = format!(
        "import files;\n\
         app (void o) nap() {{ \"sleep\" \"1\" }}\n\
         foreach i in [1:3] {{ nap(); }}\n\
         string s = read(input(\"{}\"));\n\
         trace(\"read\", s);\n",
        fifo.display()
    );
    let run = Run::new(&["-n", "2"], &script);
    writer.join().unwrap();
    let run = run.ok();
    assert!(
        run.stdout().contains("trace: read,late"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_plain_run_in_a_slurm_batch_script_runs_on_this_node_and_says_how_to_use_all() {
    // A batch script of a 3-node, 6-task job has Slurm's rank variables too
    // (no step id: nothing started other ranks). Taken for rank 0 of 6, a
    // plain `locus run` waited 60 s for ranks that never came.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("t.swift");
    std::fs::write(&script, "trace(\"here\");\n").unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "-n", "2", "--run-dir"])
        .arg(dir.path().join("run"))
        .arg(&script)
        .envs([
            ("SLURM_JOB_ID", "77"),
            ("SLURM_JOB_NUM_NODES", "3"),
            ("SLURM_NNODES", "3"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "6"),
            ("SLURM_CONF", "/nonexistent/slurm.conf"),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("trace: here"));
    assert!(
        err.contains(
            "locus: Slurm job 77 has 3 nodes; without --launcher srun this run uses this node \
             only (add --launcher srun -n RANKS to use them all)"
        ),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_run_whose_ranks_do_not_start_fails_at_once_naming_them_unless_min_ranks_allows() {
    // Node 1's daemon is gone before the run: the workers there cannot
    // start (the redeployment of issue 49 that restarted daemons on the
    // wrong host left such a run going on with a quarter of its ranks).
    let c = common::TestCluster::up(2);
    c.signal(1, libc::SIGKILL);
    let script = "app (void v) nap() { \"sleep\" \"0.1\" }\nforeach i in [0:3] { nap(); }\n";
    let run = Run::new(&["-n", "5", "--fs", c.path_str()], script);
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(!run.out.status.success(), "{stderr}");
    assert!(
        stderr.contains("2 of the run's 5 ranks did not start (ranks 2,3 on node1: its node was lost: its file-system daemon does not answer"),
        "{stderr}"
    );
    assert!(stderr.contains("--min-ranks"), "{stderr}");
    let summary = locus_runtime::report::Report::load(&run.run_dir()).unwrap();
    assert_eq!(summary.run.error_kind, Some(ErrorKind::Launch));
    // Allowed to go on with three of five, it does, on node 0.
    let run = Run::new(
        &["-n", "5", "--min-ranks", "3", "--fs", c.path_str()],
        script,
    )
    .ok();
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        stderr.contains("the run goes on with 3 of its 5 ranks"),
        "{stderr}"
    );
    assert!(run.records("nap").iter().all(|r| r.node == "node0"));
}
