//! `locus run --dry-run [--resume]`: what a run would do, per function, and
//! why each task an earlier run did would run again — with nothing started
//! and nothing in the run directory changed.

mod common;

use common::{locus, ok};
use std::path::Path;

/// Two stages over four host inputs, an app with a side effect outside
/// Locus, and one that fails.
fn script(dir: &Path, count: &str) -> String {
    let d = dir.display();
    format!(
        r#"
app (file o) prep(file i, int k) {{
  "sh" "-c" "cat \"$0\" > \"$1\"; echo \"$2\" >> \"$1\"" i o k;
}}
app (file o) count(file p) {{
  {count} p @stdout=o;
}}
app (void v) side() {{
  "touch" "{d}/SIDE";
}}
app (file o) bad() {{
  "sh" "-c" "exit 4" o;
}}
foreach k in [0:3] {{
  file i = input(sprintf("{d}/in%i.txt", k));
  file p <sprintf("/locus/p%i.txt", k)> = prep(i, k);
  file c <sprintf("/locus/c%i.txt", k)> = count(p);
}}
side();
file b <"/locus/bad.txt"> = bad();
"#
    )
}

/// A directory with the inputs and the script (`count` run as `count`).
fn setup(count: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for k in 0..4 {
        std::fs::write(
            dir.path().join(format!("in{k}.txt")),
            format!("input {k}\n"),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("wf.swift"), script(dir.path(), count)).unwrap();
    dir
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` with its size and modification time.
fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else if !e.path().starts_with(dir.join("fs")) {
                out.push((
                    e.path().display().to_string(),
                    m.len(),
                    m.modified().unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_dry_run_counts_calls_per_function_and_starts_nothing() {
    let dir = setup(r#""wc" "-c""#);
    let wf = dir.path().join("wf.swift");
    // Its scratch run directory goes where a run's would.
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "--dry-run", "-n", "3", arg(&wf)])
        .env("TMPDIR", tmp.path())
        .env_remove("LOCUS_DIR")
        .output()
        .unwrap();
    let plan = ok(&out);
    assert!(
        plan.contains("10 app call(s): 10 would run, 0 kept"),
        "{plan}"
    );
    let row = |f: &str| {
        let line = plan.lines().find(|l| l.starts_with(f)).unwrap_or_default();
        line.split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("prep"), "4 0");
    assert_eq!(row("count"), "4 0");
    assert_eq!(row("side"), "1 0");
    assert_eq!(row("bad"), "1 0");
    assert!(!dir.path().join("SIDE").exists(), "an app ran");
    // Nothing of it is left.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_dry_resume_says_why_each_task_would_run_again_and_changes_nothing() {
    let dir = setup(r#""wc" "-c""#);
    let (wf, run_dir) = (dir.path().join("wf.swift"), dir.path().join("D"));
    let first = locus(&[
        "run",
        "--keep-going",
        "-n",
        "3",
        "--run-dir",
        arg(&run_dir),
        arg(&wf),
    ]);
    assert_eq!(first.status.code(), Some(1), "bad() fails the first run");
    std::fs::remove_file(dir.path().join("SIDE")).unwrap();
    // An input changes, and count's command.
    std::fs::write(dir.path().join("in2.txt"), "changed\n").unwrap();
    std::fs::write(&wf, script(dir.path(), r#""wc" "-l""#)).unwrap();
    let before = listing(&run_dir);
    let dry = &[
        "run",
        "--dry-run",
        "--resume",
        "-n",
        "3",
        "--run-dir",
        arg(&run_dir),
        arg(&wf),
    ];
    let plan = ok(&locus(dry));
    assert!(
        plan.contains("10 app call(s): 6 would run, 4 kept"),
        "{plan}"
    );
    let reason = |needle: &str| plan.lines().filter(|l| l.contains(needle)).count();
    let in2 = format!(
        "prep: input version changed: {}/in2.txt",
        dir.path().display()
    );
    assert_eq!(reason(&in2), 1, "{plan}");
    // count(p2) reads what prep(in2) makes again; the others' command changed.
    assert_eq!(
        reason("count: input made again: /locus/p2.txt"),
        1,
        "{plan}"
    );
    assert_eq!(
        reason("count: command changed (was: wc -c /locus/p"),
        3,
        "{plan}"
    );
    assert_eq!(reason("bad: failed: "), 1, "{plan}");
    assert_eq!(reason("side:"), 0, "side() is kept: {plan}");
    assert!(!dir.path().join("SIDE").exists(), "an app ran");
    assert_eq!(listing(&run_dir), before, "the run directory changed");
    // The resume it describes does what it said: the same calls run.
    let args = ["run", "--resume", "--keep-going", "-n", "3", "--run-dir"];
    let resumed = locus(&[&args[..], &[arg(&run_dir), arg(&wf)]].concat());
    assert_eq!(resumed.status.code(), Some(1), "bad() fails again");
    let records = locus_runtime::record::load(&run_dir).unwrap();
    let ran = |f: &str| records.iter().filter(|r| r.func == f && !r.resumed).count();
    assert_eq!(
        [ran("prep"), ran("count"), ran("side"), ran("bad")],
        [1, 4, 0, 1]
    );
}
