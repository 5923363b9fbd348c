//! What a run keeps of each task as it ends: its record (where the script
//! calls it, the command as run, its Locus files, CPU time and peak memory)
//! and the output streams the script did not redirect.

mod common;

use common::{locus, ok, Run};
use locus_runtime::record::{self, Seen, TaskRecord};
use std::path::Path;

const SCRIPT: &str = r#"import files;
app (file o) shout(file i, string word) {
  "sh" "-c" "cat \"$0\" > \"$1\"; echo \"said $2\"; echo to stderr >&2" i o word
}
app (void v) silent() { "true" }
main {
  file i<"/locus/in.txt"> = write("hello\n");
  file o<"/locus/out.txt"> = shout(i, "hi");
  silent();
}
"#;

#[test]
fn records_hold_the_call_the_command_the_files_and_the_usage() {
    let run = Run::new(&["--quiet-apps"], SCRIPT).ok();
    assert!(!run.stdout().contains("said hi"), "{}", run.stdout());
    let shout = run.records("shout");
    let r = &shout[0];
    assert!(r.at.contains("t.swift:8:"), "{}", r.at);
    assert_eq!(r.argv[..2], ["sh", "-c"]);
    // Its files by their Locus paths, not the store paths it was given.
    assert_eq!(r.argv[3..], ["/locus/in.txt", "/locus/out.txt", "hi"]);
    let paths = |v: &[Seen]| v.iter().map(|s| s.path.clone()).collect::<Vec<_>>();
    assert_eq!(paths(&r.inputs), ["/locus/in.txt"]);
    assert_eq!(paths(&r.outputs), ["/locus/out.txt"]);
    assert!(r.inputs[0].version.starts_with('s'), "{r:?}");
    assert!(r.cpu_us > 0 && r.max_rss_kib > 0, "{r:?}");
    let kept = |p: &Option<String>| {
        std::fs::read_to_string(run.run_dir().join(p.as_ref().unwrap())).unwrap()
    };
    assert_eq!(
        r.stdout.as_deref(),
        Some(format!("tasks/{}.out", r.id).as_str())
    );
    assert_eq!(kept(&r.stdout), "said hi\n");
    assert_eq!(kept(&r.stderr), "to stderr\n");
    // A task that says nothing leaves no file.
    let silent = &run.records("silent")[0];
    assert_eq!((&silent.stdout, &silent.stderr), (&None, &None));
    let files = std::fs::read_dir(run.run_dir().join("tasks"))
        .unwrap()
        .count();
    assert_eq!(files, 2);
    // `locus log`: each task in a line, and one in full with its streams.
    let dir = run.run_dir().display().to_string();
    let list = ok(&locus(&["log", &dir]));
    assert_eq!(list.lines().count(), 3, "{list}");
    assert!(
        list.lines()
            .any(|l| l.contains(" shout ") && l.contains("t.swift:8:")),
        "{list}"
    );
    let full = ok(&locus(&["log", &dir, &r.id.to_string()]));
    assert!(
        full.starts_with(&format!("task {}: shout at {}", r.id, r.at)),
        "{full}"
    );
    assert!(full.contains("command: sh -c 'cat \"$0\" > \"$1\"; echo \"said $2\"; echo to stderr >&2' /locus/in.txt /locus/out.txt hi"), "{full}");
    assert!(
        full.contains("exit: 0;") && full.contains("node: node0"),
        "{full}"
    );
    assert!(
        full.contains(&format!("stdout (tasks/{}.out):\n  | said hi\n", r.id)),
        "{full}"
    );
    assert!(full.contains("  | to stderr\n"), "{full}");
    assert_eq!(ok(&locus(&["log", &dir, "--failed"])), "no task failed\n");
    let missing = locus(&["log", &dir, "999"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no task 999"));
}

#[test]
fn app_output_reaches_the_terminal_and_a_retry_replaces_what_was_kept() {
    let script = r#"
app (void v) flaky() {
  "sh" "-c" "echo attempt; echo why >&2; exit 4"
}
main { flaky(); }
"#;
    let run = Run::new(&["--retries", "1"], script);
    assert!(!run.out.status.success());
    assert_eq!(
        run.stdout().matches("attempt").count(),
        2,
        "{}",
        run.stdout()
    );
    let r = &run.records("flaky")[0];
    assert_eq!((r.attempts, r.exit), (2, Some(4)));
    let err = std::fs::read_to_string(run.run_dir().join(r.stderr.as_ref().unwrap())).unwrap();
    assert_eq!(err, "why\n");
    let report = locus(&["report", run.run_dir().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    let line = text
        .lines()
        .skip_while(|l| *l != "failed tasks:")
        .nth(1)
        .unwrap_or_default();
    assert!(
        line.contains("t.swift:5:8 app 'flaky' failed on node0"),
        "{text}"
    );
    assert!(
        line.ends_with(&format!(
            "exited with code 4 (2 attempts) (its stderr: tasks/{}.err)",
            r.id
        )),
        "{text}"
    );
    // The page says so at its top: the run's error, the failed task's row
    // (function, position, node, exit, attempts, its stderr's last lines
    // and a link to all of it), and the task outlined red on the timeline.
    let page = run.run_dir().join("page.html");
    let dir = run.run_dir();
    ok(&locus(&[
        "report",
        dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]));
    let html = std::fs::read_to_string(&page).unwrap();
    let body = html.split("<body>").nth(1).unwrap();
    let failed = body
        .strip_prefix("\n<h1>")
        .and_then(|b| b.split("</h1>\n").nth(1))
        .and_then(|b| b.strip_prefix("<div class=\"failed\"><h2>Failed</h2><p>"))
        .unwrap_or_else(|| panic!("no failure box first: {body}"));
    let (error, rest) = failed.split_once("</p>").unwrap();
    assert!(error.contains("t.swift:5:8: app 'flaky' failed"), "{error}");
    let row = rest
        .split("<tr>")
        .nth(2)
        .and_then(|r| r.split("</tr>").next())
        .unwrap();
    let cells: Vec<&str> = row
        .split("</td>")
        .filter_map(|c| Some(c.split_once('>')?.1))
        .collect();
    assert!(cells[1].ends_with("/t.swift:5:8"), "{row}");
    assert!(cells[2].starts_with("node0 ("), "{row}");
    let (func, exit, attempts) = (cells[0], cells[3], cells[4]);
    assert_eq!([func, exit, attempts], ["flaky", "4", "2"], "{row}");
    assert!(
        cells[6].starts_with("<pre>why</pre><a href=\"file://"),
        "{row}"
    );
    assert!(
        cells[6].ends_with(&format!("/tasks/{0}.err\">tasks/{0}.err</a>", r.id)),
        "{row}"
    );
    assert!(
        html.contains("stroke=\"#d62728\" stroke-width=\"3\""),
        "{html}"
    );
    // Chromium draws it; its picture is kept with the tests' files.
    common::assert_renders(&page, 1);
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("failed-run-page.png");
    std::fs::copy(page.with_extension("png"), kept).unwrap();
}

#[test]
fn a_failed_app_is_told_with_the_locus_paths_of_its_files() {
    let script = r#"import files;
app (file o) fail(file i) { "sh" "-c" "exit 2" i o }
main {
  file i<"/locus/in.txt"> = write("x");
  file o<"/locus/out.txt"> = fail(i);
}
"#;
    let run = Run::new(&[], script);
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(!run.out.status.success());
    assert!(
        stderr.contains("`sh -c exit 2 /locus/in.txt /locus/out.txt` exited with code 2"),
        "{stderr}"
    );
}

/// Ten steps, each copying its host input into a Locus file (step 5 fails
/// while the flag file exists), then one task joining them all.
const PIPELINE: &str = r#"import files; import string; import sys;
app (file o) step(file i, int k, string flag) {
  "sh" "-c" "if [ $1 -eq 5 ] && [ -e \"$2\" ]; then exit 3; fi; cat \"$0\" > \"$3\"" i k flag o
}
app (file o) join(file parts[]) { "cat" parts @stdout=o; }
file parts[];
foreach k in [0:9] {
  parts[k] = step(input(sprintf("%s/in%i.txt", argv("dir"), k)), k, argv("flag"));
}
file all<"/locus/all.txt"> = join(parts);
"#;

/// Runs the pipeline in `work/run` with `extra` options (`--resume`):
/// whether it succeeded, and its records.
fn pipeline(work: &Path, extra: &[&str]) -> (bool, Vec<TaskRecord>) {
    let script = work.join("p.swift");
    std::fs::write(&script, PIPELINE).unwrap();
    let run_dir = work.join("run");
    let dir = format!("--dir={}", work.display());
    let flag = format!("--flag={}", work.join("flag").display());
    let mut args = vec!["run", "-n", "3", "--quiet-apps"];
    args.extend(["--run-dir", run_dir.to_str().unwrap()]);
    args.extend(extra);
    args.extend([script.to_str().unwrap(), dir.as_str(), flag.as_str()]);
    let out = locus(&args);
    (
        out.status.success(),
        record::load(&run_dir).unwrap_or_default(),
    )
}

/// The functions of the tasks that ran (sorted), and how many were resumed.
fn ran_and_resumed(records: &[TaskRecord]) -> (Vec<String>, usize) {
    let mut ran: Vec<String> = records
        .iter()
        .filter(|r| !r.resumed)
        .map(|r| r.func.clone())
        .collect();
    ran.sort();
    (ran, records.iter().filter(|r| r.resumed).count())
}

#[test]
fn a_resumed_run_does_only_what_is_not_done() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    for k in 0..10 {
        std::fs::write(w.join(format!("in{k}.txt")), format!("part {k}\n")).unwrap();
    }
    std::fs::write(w.join("flag"), "").unwrap();
    let (succeeded, first) = pipeline(w, &[]);
    assert!(!succeeded);
    let done_first = first.iter().filter(|r| r.error.is_none()).count();
    // Step 5 runs again, and whatever the failed run did not finish.
    std::fs::remove_file(w.join("flag")).unwrap();
    let (succeeded, second) = pipeline(w, &["--resume"]);
    assert!(succeeded, "{second:?}");
    let (ran, resumed) = ran_and_resumed(&second);
    assert_eq!(resumed, done_first, "{second:?}");
    assert_eq!(ran.len() + resumed, 11);
    assert!(ran.contains(&"join".to_string()));
    assert!(second
        .iter()
        .any(|r| r.func == "step" && !r.resumed && r.argv[4] == "5"));
    // Nothing changed: nothing runs.
    let (succeeded, third) = pipeline(w, &["--resume"]);
    assert!(succeeded);
    assert_eq!(ran_and_resumed(&third), (vec![], 11));
    // One input changed: its step and the join run again, nothing else.
    std::fs::write(w.join("in3.txt"), "part three\n").unwrap();
    let (succeeded, fourth) = pipeline(w, &["--resume"]);
    assert!(succeeded);
    let again = vec!["join".to_string(), "step".to_string()];
    assert_eq!(ran_and_resumed(&fourth), (again, 9));
    let report = ok(&locus(&["report", w.join("run").to_str().unwrap()]));
    assert!(
        report.contains("11 tasks (0 failed, 9 done by an earlier run)"),
        "{report}"
    );
    // The task graph: every step's file to the join; the resumed steps grey.
    let run = w.join("run");
    let dot = ok(&locus(&["report", run.to_str().unwrap(), "--graph", "dot"]));
    assert_eq!(dot.matches("[label=\"step #").count(), 10, "{dot}");
    assert_eq!(dot.matches("[label=\"join #").count(), 1, "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 10, "{dot}");
    assert_eq!(dot.matches("fillcolor=\"#eeeeee\"").count(), 9, "{dot}");
    let svg = ok(&locus(&["report", run.to_str().unwrap(), "--graph", "svg"]));
    assert!(svg.contains("<svg") && svg.contains("join #"), "{svg}");
    // The file system the run made was started again for each resume.
    let fs = w.join("run/fs");
    let fs = fs.to_str().unwrap();
    ok(&locus(&["fs", "up", "--dir", fs]));
    let all = w.join("all.txt");
    ok(&locus(&[
        "fs",
        "get",
        "--dir",
        fs,
        "/locus/all.txt",
        all.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&all).unwrap();
    assert!(
        text.contains("part three") && text.contains("part 9"),
        "{text}"
    );
    ok(&locus(&["fs", "down", "--dir", fs]));
    // The same --run-dir again without saying how: refused, nothing of the
    // earlier run touched; --fresh replaces it (every task runs again).
    let run_dir = w.join("run");
    let script = w.join("p.swift");
    let again = locus(&[
        "run",
        "--run-dir",
        run_dir.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success());
    assert!(
        err.contains("holds an earlier run (done): --resume goes on from it, --fresh replaces it"),
        "{err}"
    );
    let kept = record::load(&run_dir).unwrap();
    assert_eq!(ran_and_resumed(&kept), ran_and_resumed(&fourth));
    let (succeeded, fresh) = pipeline(w, &["--fresh"]);
    assert!(succeeded);
    assert_eq!(ran_and_resumed(&fresh).0.len(), 11);
    // Nothing to resume is an error.
    let empty = tempfile::tempdir().unwrap();
    assert!(!pipeline(empty.path(), &["--resume"]).0);
}

#[test]
fn a_run_resumed_by_content_keeps_tasks_whose_files_have_the_same_bytes() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let write = |k: u32, text: &str| std::fs::write(w.join(format!("in{k}.txt")), text).unwrap();
    for k in 0..10 {
        write(k, &format!("part {k}\n"));
    }
    let (succeeded, first) = pipeline(w, &["--record-hashes"]);
    assert!(succeeded, "{first:?}");
    assert!(first
        .iter()
        .all(|r| r.inputs.iter().all(|i| i.hash.is_some())));
    // Rewritten with the same bytes: a new version, the same content.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(3, "part 3\n");
    let (succeeded, second) = pipeline(w, &["--resume=content"]);
    assert!(succeeded, "{second:?}");
    assert_eq!(ran_and_resumed(&second), (vec![], 11));
    // By versions, the same rewrite runs its step and the join again.
    write(3, "part 3\n");
    let (_, third) = pipeline(w, &["--resume"]);
    let again = vec!["join".to_string(), "step".to_string()];
    assert_eq!(ran_and_resumed(&third), (again.clone(), 9));
    // Other bytes: by content too.
    write(3, "part three\n");
    let (_, fourth) = pipeline(w, &["--resume=content"]);
    assert_eq!(ran_and_resumed(&fourth), (again, 9));
    let bad = locus(&["run", "--resume=bytes", "--run-dir", "x", "p.swift"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("expected versions or content"), "{err}");
}

#[test]
fn a_resumed_run_runs_again_the_tasks_whose_program_changed() {
    // The model is a script the command line names, not a declared input:
    // editing it reruns its tasks; the tasks beside them stay done.
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let model = w.join("model.sh");
    std::fs::write(&model, "echo v1 $1\n").unwrap();
    let script = w.join("m.swift");
    std::fs::write(
        &script,
        r#"import files; import string; import sys;
app (file o) model(string prog, int k) { "sh" prog k @stdout=o }
app (file o) other(int k) { "echo" k @stdout=o }
foreach k in [0:3] {
  file a<sprintf("/locus/a%i", k)> = model(argv("model"), k);
  file b<sprintf("/locus/b%i", k)> = other(k);
}
"#,
    )
    .unwrap();
    let run_dir = w.join("run");
    let model_arg = format!("--model={}", model.display());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-n", "3", "--quiet-apps"];
        args.extend(["--run-dir", run_dir.to_str().unwrap()]);
        args.extend(extra);
        args.extend([script.to_str().unwrap(), model_arg.as_str()]);
        ok(&locus(&args));
        ran_and_resumed(&record::load(&run_dir).unwrap())
    };
    run(&[]);
    assert_eq!(run(&["--resume"]), (vec![], 8));
    std::fs::write(&model, "echo v2 $1\n").unwrap();
    let model4 = vec!["model".to_string(); 4];
    assert_eq!(run(&["--resume"]), (model4, 4));
    assert_eq!(run(&["--resume"]), (vec![], 8));
}

#[test]
fn past_runs_are_listed_and_the_ended_ones_removed_never_a_live_one() {
    // Runs without --run-dir, in a temporary directory of the test's own.
    let tmp = tempfile::tempdir().unwrap();
    let locus_in_tmp = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_locus"));
        c.args(args)
            .env("TMPDIR", tmp.path())
            .env("XDG_STATE_HOME", tmp.path().join("state"))
            .env_remove("LOCUS_DIR");
        c
    };
    let script = |name: &str, text: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let fine = script("fine.swift", "trace(1);\n");
    let broken = script(
        "broken.swift",
        "app (void v) broken() { \"false\" }\nbroken();\n",
    );
    let slow = script(
        "slow.swift",
        "app (void v) nap() { \"sleep\" \"30\" }\nnap();\n",
    );
    assert!(locus_in_tmp(&["run", "-n", "2", &fine])
        .output()
        .unwrap()
        .status
        .success());
    assert!(!locus_in_tmp(&["run", "-n", "2", &broken])
        .output()
        .unwrap()
        .status
        .success());
    let live = locus_in_tmp(&["run", "-n", "2", &slow])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stopped however the test ends (SIGTERM: the run ends as Ctrl-C ends it).
    struct Stopped(std::process::Child);
    impl Drop for Stopped {
        fn drop(&mut self) {
            // SAFETY: signals the run this test started.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
    let _live = Stopped(live);
    let listed = || ok(&locus_in_tmp(&["runs"]).output().unwrap());
    common::eventually("the live run listed", || listed().contains(" running "));
    let list = listed();
    let states: Vec<&str> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(states.len(), 3, "{list}");
    for state in ["done", "failed", "running"] {
        assert!(states.contains(&state), "{list}");
    }
    assert!(
        list.contains("task: ") && list.contains("app 'broken' failed"),
        "{list}"
    );
    // A run given its directory elsewhere is in the index: listed, shown.
    let elsewhere = tempfile::tempdir().unwrap();
    let kept = elsewhere.path().join("kept");
    let kept_dir = kept.to_str().unwrap();
    assert!(
        locus_in_tmp(&["run", "-n", "2", "--run-dir", kept_dir, &fine])
            .output()
            .unwrap()
            .status
            .success()
    );
    let list = listed();
    let line = list.lines().find(|l| l.contains(kept_dir)).expect(&list);
    let id = line.split_whitespace().next().unwrap();
    let shown = ok(&locus_in_tmp(&["runs", "show", &id[..6]]).output().unwrap());
    assert!(shown.starts_with(&format!("{kept_dir} (done)")), "{shown}");
    assert!(shown.contains("run: 0 tasks"), "{shown}");
    // One whose launcher is killed (SIGKILL) is stopped, not running.
    let killed = elsewhere.path().join("killed");
    let mut launcher = locus_in_tmp(&[
        "run",
        "-n",
        "2",
        "--run-dir",
        killed.to_str().unwrap(),
        &slow,
    ])
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    common::eventually("the second live run listed", || {
        listed()
            .lines()
            .any(|l| l.contains(killed.to_str().unwrap()) && l.contains(" running "))
    });
    launcher.kill().unwrap();
    launcher.wait().unwrap();
    common::eventually("the killed run stopped", || {
        listed()
            .lines()
            .any(|l| l.contains(killed.to_str().unwrap()) && l.contains(" stopped "))
    });
    // Its file system's daemons stop with it (SIGTERM from the kernel).
    common::eventually("the killed run's daemon gone", || {
        let pid = std::fs::read_to_string(killed.join("fs/node-0/daemon.pid")).unwrap_or_default();
        pid.trim().is_empty() || !Path::new("/proc").join(pid.trim()).exists()
    });
    // Only the failed one, then every ended one; each listed before --yes.
    let failed_only = ok(&locus_in_tmp(&["runs", "clean", "--failed"])
        .output()
        .unwrap());
    assert!(
        failed_only.contains("1 run(s),") && failed_only.contains("--yes removes them"),
        "{failed_only}"
    );
    let asked = ok(&locus_in_tmp(&["runs", "clean"]).output().unwrap());
    assert!(asked.contains("4 run(s),"), "{asked}");
    assert!(kept.exists(), "nothing removed without --yes");
    let clean = ok(
        &locus_in_tmp(&["runs", "clean", "--older-than", "0s", "--yes"])
            .output()
            .unwrap(),
    );
    assert!(clean.contains("4 run(s) removed"), "{clean}");
    assert!(!kept.exists() && !killed.exists());
    assert!(!listed().contains(kept_dir));
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("locus-run-"))
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(listed().contains(" running "));
}
