//! What a run keeps of each task as it ends: its record (where the script
//! calls it, the command as run, its Locus files, CPU time and peak memory)
//! and the output streams the script did not redirect.

mod common;

use common::Run;

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
    assert_eq!(r.argv[5], "hi");
    assert_eq!(
        (r.inputs.as_slice(), r.outputs.as_slice()),
        (
            &["/locus/in.txt".to_string()][..],
            &["/locus/out.txt".to_string()][..]
        )
    );
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
    let report = common::locus(&["report", run.run_dir().to_str().unwrap()]);
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
}
