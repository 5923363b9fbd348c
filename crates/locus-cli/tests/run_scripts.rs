//! Run tests: every `tests/swift/run/NAME.swift` is run with `locus run`.
//! With `NAME.expected`, it must exit 0 and print every listed line (in any
//! order); with `NAME.fails`, it must exit non-zero and say that text.

mod common;

use std::path::{Path, PathBuf};

fn run_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/swift/run")
}

/// Runs every script with `locus run` and these options; returns what went
/// wrong.
fn run_all(scripts: &[PathBuf], options: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for script in scripts {
        let work = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_locus"))
            .arg("run")
            .args(options)
            .arg("--run-dir")
            .arg(work.path())
            .arg(script)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let name = format!(
            "{} ({})",
            script.file_stem().unwrap().to_string_lossy(),
            options.join(" ")
        );
        let expected = script.with_extension("expected");
        if expected.exists() {
            if !out.status.success() {
                problems.push(format!("{name}: exit {:?}: {stderr}", out.status.code()));
                continue;
            }
            for line in std::fs::read_to_string(&expected).unwrap().lines() {
                if !stdout.lines().any(|l| l == line) {
                    problems.push(format!("{name}: missing line {line:?}; output:\n{stdout}"));
                }
            }
        } else {
            let want = std::fs::read_to_string(script.with_extension("fails")).unwrap();
            if out.status.success() {
                problems.push(format!("{name}: succeeded, but should fail"));
            } else if !stderr.contains(want.trim()) {
                problems.push(format!("{name}: stderr lacks {:?}:\n{stderr}", want.trim()));
            }
        }
    }
    problems
}

/// The corpus with one server, and with two (control work and futures
/// spread over both engines): the same outputs and the same failures.
#[test]
fn run_corpus() {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(run_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "swift"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 100, "only {} run tests", scripts.len());
    // A run of a small script waits about half its time (its ranks
    // meeting, starting, ending): eight at once keep two cores busy.
    let layouts: [&[&str]; 2] = [&["-n", "3"], &["-n", "4", "--servers", "2"]];
    let problems: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = layouts
            .iter()
            .flat_map(|options| {
                let scripts = &scripts;
                (0..4).map(move |k| {
                    let mine: Vec<PathBuf> = scripts.iter().skip(k).step_by(4).cloned().collect();
                    s.spawn(move || run_all(&mine, options))
                })
            })
            .collect();
        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn script_arguments_reach_argv() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("args.swift");
    std::fs::write(
        &script,
        "import sys;\n\
         trace(argv(\"name\"), argv(\"short\"), argv(\"bare\"), argv_contains(\"bare\"));\n\
         trace(argc(), argp(1), argp(2), argp(0));\n\
         trace(args());\n",
    )
    .unwrap();
    let path = script.to_str().unwrap();
    let args = ["--name=ada", "first", "-short=x", "--bare", "second"];
    // In a run directory of the test's: nothing left in the machine's /tmp.
    let runs = tempfile::tempdir().unwrap();
    let rd = runs.path().join("run");
    let rd = rd.to_str().unwrap();
    let mut line = vec!["run", "--fresh", "--run-dir", rd, path];
    line.extend(args);
    let out = common::locus(&line);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    // As Turbine reads its command line: flags with one dash or two, a
    // flag without a value is "", argp(0) is the program.
    assert!(said.contains("trace: ada,x,,1\n"), "{said}");
    assert!(
        said.contains(&format!("trace: 2,first,second,{path}\n")),
        "{said}"
    );
    assert!(
        said.contains(&format!("trace: {}\n", args.join(" "))),
        "{said}"
    );
    // A flag the script does not accept ends the run naming it.
    std::fs::write(
        &script,
        "import sys;\nargv_accept(\"name\");\ntrace(argc());\n",
    )
    .unwrap();
    let ok = common::locus(&["run", "--fresh", "--run-dir", rd, path, "--name=ada", "-5"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let refused = common::locus(&[
        "run",
        "--fresh",
        "--run-dir",
        rd,
        path,
        "--name=ada",
        "-other=1",
    ]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("unknown flag: -other; accepted flags are: -name"),
        "{err}"
    );
}

/// `mpiexec.mpich -n N locus run ARGS --run-dir DIR/run SCRIPT`, which must
/// succeed: its stdout, and how its ranks met (`run.json`'s `wireup`).
fn mpiexec_run(dir: &std::path::Path, n: &str, args: &[&str], script: &str) -> (String, String) {
    let out = std::process::Command::new("mpiexec.mpich")
        .args(["-n", n, env!("CARGO_BIN_EXE_locus"), "run"])
        .args(args)
        .arg("--run-dir")
        .arg(dir.join("run"))
        .arg(script)
        .output()
        .expect("mpiexec.mpich (apt package mpich, installed by scripts/setup.sh)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run/run.json")).unwrap()).unwrap();
    (
        stdout,
        run["wireup"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn ranks_started_by_mpich_find_each_other() {
    // Debian's MPICH launcher (installed by scripts/setup.sh) starts the
    // ranks; they read PMI_RANK/PMI_SIZE and meet through its PMI, not in
    // the run directory.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("mpi.swift");
    std::fs::write(
        &script,
        "import files; import string;\n\
         app (file o) who() { \"sh\" \"-c\" \"echo $ADLB_RANK_SELF $PMI_RANK\" @stdout=o; }\n\
         foreach i in [0:2] { file f = @location=location(i, HARD, RANK) who(); trace(trim(read(f))); }\n",
    )
    .unwrap();
    let (stdout, wireup) = mpiexec_run(dir.path(), "4", &[], script.to_str().unwrap());
    for r in 0..3 {
        assert!(
            stdout.lines().any(|l| l == format!("trace: {r} {r}")),
            "{stdout}"
        );
    }
    assert_eq!(wireup, "pmi");
    // No rank published itself in the run directory; the leader kept the
    // ranks as they met there (`all.json`), for a launcher to read.
    let kept: Vec<String> = std::fs::read_dir(dir.path().join("run/ranks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(kept, ["all.json"]);
}

#[test]
fn a_run_started_as_one_mpi_process_starts_its_own_ranks() {
    // `mpiexec -n 1 locus run -n 4`: the ranks Locus starts itself must not
    // take the launcher's PMI session as theirs.
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{}/../../examples/hello.swift", env!("CARGO_MANIFEST_DIR"));
    let (stdout, wireup) = mpiexec_run(dir.path(), "1", &["-n", "4"], &script);
    assert!(stdout.contains("trace: done"), "{stdout}");
    assert_eq!(wireup, "rundir");
}
