//! Files into and out of a run's own file system: `--stage-in SRC:DST`
//! puts host trees in before the first task, `--stage-out SRC DST` takes
//! results out after the run.

mod common;

use common::Run;

const SCRIPT: &str = r#"import files; import string;
file inputs[] = glob("/locus/inputs/*.txt");
string words[];
foreach f, i in inputs { words[i] = trim(read(f)); }
trace(size(inputs), string_join(words, "+"), trim(read(input("/locus/one.txt"))));
file out<"/locus/results/all.txt"> = write(string_join(words, "\n"));
"#;

#[test]
fn stage_in_puts_trees_in_before_the_first_task_and_stage_out_takes_results_out() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    for (name, word) in [("a.txt", "alpha"), ("b.txt", "beta"), ("c.log", "not read")] {
        std::fs::write(data.join(name), word).unwrap();
    }
    let one = dir.path().join("one:colon.txt");
    std::fs::write(&one, "single\n").unwrap();
    let results = dir.path().join("results");
    let in_tree = format!("{}:/locus/inputs", data.display());
    let in_file = format!("{}:/locus/one.txt", one.display());
    let (r, out) = (results.to_str().unwrap(), "/locus/results");
    let opts = [
        "--stage-in",
        &in_tree,
        "--stage-in",
        &in_file,
        "--stage-out",
        out,
        r,
    ];
    let run = Run::in_dir(dir, &opts, SCRIPT).ok();
    let stdout = run.stdout();
    assert!(
        stdout.lines().any(|l| l == "trace: 2,alpha+beta,single"),
        "{stdout}"
    );
    let all = std::fs::read_to_string(run.dir.path().join("results/all.txt")).unwrap();
    assert_eq!(all, "alpha\nbeta");
}

#[test]
fn a_stage_in_that_cannot_be_done_fails_the_run_naming_it() {
    let missing = "/nonexistent/locus-stage-in:/locus/inputs";
    let run = Run::new(&["--stage-in", missing], SCRIPT);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        err.contains("--stage-in /nonexistent/locus-stage-in:/locus/inputs"),
        "{err}"
    );
    assert!(!run.stdout().contains("trace:"), "a task ran");
    let bad = Run::new(&["--stage-in", "/tmp/x:/elsewhere"], SCRIPT);
    let err = String::from_utf8_lossy(&bad.out.stderr);
    assert!(
        !bad.out.status.success() && err.contains("/locus/ path"),
        "{err}"
    );
}
