//! Parallel tasks (`@par=N`) on a real run: an MPI program of the test's
//! own (C with MPICH, `examples/bin/par-sim.c`, built here) started as one
//! job across the workers its server reserved.

mod common;

use common::{locus, ok, processes_with, FsDown, Run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// `par-sim`, built once per test process.
fn par_sim() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("par-sim");
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join(format!("par-sim-{}", std::process::id()));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bin/par-sim.c");
        let built = Command::new("mpicc")
            .args(["-O2", "-o"])
            .arg(&exe)
            .arg(&src)
            .output()
            .expect("mpicc (MPICH, installed by scripts/setup.sh)");
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        exe
    })
}

/// A script whose `@par=N` simulation writes `outs` files (one per rank)
/// under `/locus/<tag>/`, each then read by `reads` analyses.
fn simulate(n: u32, tag: &str, reads: u32) -> String {
    let outs: Vec<String> = (0..n).map(|r| format!("o{r}")).collect();
    let decls: String = (0..n)
        .map(|r| format!("file o{r} <\"/locus/{tag}/out{r}.txt\">;\n"))
        .collect();
    format!(
        r#"import files;
app ({outs_sig}) sim(file p) {{ "{sim}" p {outs_words} }}
app (file o) analyze(file i) {{ "cp" i o }}
file p <"/locus/{tag}/params.txt"> = write("params\n");
{decls}({outs_list}) = @par={n} sim(p);
file outs[] = [{outs_list}];
foreach o, i in outs {{
  foreach k in [1:{reads}] {{
    file a <sprintf("/locus/{tag}/an-%i-%i.txt", i, k)> = analyze(o);
  }}
}}
"#,
        outs_sig = outs
            .iter()
            .map(|o| format!("file {o}"))
            .collect::<Vec<_>>()
            .join(", "),
        sim = par_sim().display(),
        outs_words = outs.join(" "),
        outs_list = outs.join(", "),
    )
}

/// What rank `r`'s output says: "rank R of N on HOST node NODE: …".
fn said_node(text: &str) -> String {
    let after = text.split(" node ").nth(1).expect("a node");
    after.split(':').next().unwrap().to_string()
}

#[test]
fn a_parallel_task_runs_as_one_job_and_its_outputs_stay_where_its_ranks_wrote_them() {
    // Eight workers, two on each of four nodes, all in the job; each rank's
    // file (4 MB: worth reading where it is) is registered on its node, and
    // the two analyses of each run there.
    let script = simulate(8, "sim", 2).replace(
        &format!("\"{}\"", par_sim().display()),
        &format!(
            "\"env\" \"PAR_SIM_BYTES=4000000\" \"{}\"",
            par_sim().display()
        ),
    );
    let run = Run::new(&["-n", "9", "--nodes", "4", "--keep-fs"], &script).ok();
    let fs_dir = run.run_dir().join("fs");
    let _down = FsDown(fs_dir.clone());
    let fs = fs_dir.to_str().unwrap();
    let sims = run.records("sim");
    assert_eq!(sims.len(), 1, "one record for the job");
    let job = &sims[0].job;
    assert_eq!(job.len(), 8, "{job:?}");
    assert_eq!(job[0].rank, sims[0].rank, "the first worker launched it");
    let analyses = run.records("analyze");
    assert_eq!(analyses.len(), 16);
    let mut local = 0;
    for (r, part) in job.iter().enumerate() {
        let path = format!("/sim/out{r}.txt");
        let text = ok(&locus(&["fs", "cat", "--dir", fs, &path]));
        assert!(text.starts_with(&format!("rank {r} of 8 ")), "{text}");
        assert_eq!(said_node(&text), part.node, "rank {r} ran for its worker");
        let holders = ok(&locus(&["fs", "locate", "--dir", fs, &path]));
        let first = holders.split_whitespace().nth(1).unwrap();
        assert_eq!(first, part.node, "out{r} is where its rank wrote it");
        assert!(part.written_bytes > 4_000_000);
        let readers = (analyses.iter())
            .filter(|a| a.inputs.iter().any(|i| i.path == format!("/locus{path}")));
        local += readers.filter(|a| a.node == part.node).count();
    }
    // (A SOFT task may still leave when its node's workers are busy.)
    assert!(
        local >= 12,
        "{local} of 16 analyses ran next to their input"
    );
}

#[test]
fn two_jobs_over_half_the_workers_both_run_and_a_failed_rank_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("failed-once");
    // Six workers: each job of four waits for the other.
    let two = format!(
        r#"import files;
app (file w, file x, file y, file z) sim(file p) {{ "{sim}" p w x y z }}
file p <"/locus/two/params.txt"> = write("params\n");
foreach j in [0:1] {{
  file w <sprintf("/locus/two/%i-0.txt", j)>;
  file x <sprintf("/locus/two/%i-1.txt", j)>;
  file y <sprintf("/locus/two/%i-2.txt", j)>;
  file z <sprintf("/locus/two/%i-3.txt", j)>;
  (w, x, y, z) = @par=4 sim(p);
}}
"#,
        sim = par_sim().display()
    );
    let file = dir.path().join("t.swift");
    std::fs::write(&file, two).unwrap();
    let run_dir = dir.path().join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args([
            "run",
            "-n",
            "7",
            "--nodes",
            "3",
            "--retries",
            "1",
            "--run-dir",
        ])
        .arg(&run_dir)
        .arg(&file)
        .env("PAR_SIM_FAIL_RANK", "2")
        .env("PAR_SIM_FAIL_ONCE", &once)
        .output()
        .unwrap();
    ok(&out);
    let recs = locus_runtime::record::load(&run_dir).unwrap();
    let sims: Vec<_> = recs.iter().filter(|r| r.func == "sim").collect();
    assert_eq!(sims.len(), 2);
    assert!(sims.iter().all(|r| r.job.len() == 4 && r.error.is_none()));
    // The first took the fewest nodes: two of the three.
    let mut first: Vec<&str> = sims[0].job.iter().map(|p| p.node.as_str()).collect();
    first.dedup();
    assert_eq!(first.len(), 2, "{:?}", sims[0].job);
    assert_eq!(
        sims.iter().map(|r| r.attempts).sum::<u32>(),
        3,
        "one job ran again after its rank 2 failed"
    );
}

#[test]
fn a_job_that_cannot_run_is_a_positioned_error_and_par_fits_only_apps() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("t.swift");
    std::fs::write(
        &script,
        "(int o) twice(int i) { o = 2 * i; }\nint x = @par=2 twice(3);\ntrace(x);\n",
    )
    .unwrap();
    let out = locus(&["check", script.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("t.swift:2:9: error: @par applies to app functions"),
        "{err}"
    );
    let run = Run::new(&["-n", "4"], &simulate(4, "big", 1));
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        err.contains("t.swift:9:27: call of 'sim': @par=4 can never run: this run has 3 workers"),
        "{err}"
    );
}

#[test]
fn a_failed_job_fails_its_task_and_a_stopped_run_leaves_no_rank_running() {
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("failed-once");
    let file = dir.path().join("t.swift");
    std::fs::write(&file, simulate(2, "fail", 1)).unwrap();
    let run = |env: &[(&str, &Path)], run_dir: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_locus"));
        cmd.args(["run", "-n", "5", "--nodes", "2", "--run-dir"])
            .arg(run_dir)
            .arg(&file);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    };
    let failed = run(
        &[
            ("PAR_SIM_FAIL_RANK", Path::new("1")),
            ("PAR_SIM_FAIL_ONCE", &once),
        ],
        &dir.path().join("failed"),
    )
    .output()
    .unwrap();
    assert!(!failed.status.success());
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(
        err.contains("app 'sim' failed as a job of 2 ranks") && err.contains("exited with code 3"),
        "{err}"
    );
    // A run stopped while its job works: no rank of the job is left.
    let mut child = run(
        &[("PAR_SIM_SECONDS", Path::new("60"))],
        &dir.path().join("stopped"),
    )
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let exe = par_sim().display().to_string();
    common::eventually_within(Duration::from_secs(60), "the job's ranks run", || {
        processes_with(&exe).len() >= 2
    });
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    // (A zombie has no command line: only live ranks are found.)
    common::eventually_within(Duration::from_secs(10), "no rank of the job left", || {
        processes_with(&exe).is_empty()
    });
}

#[test]
fn a_job_whose_worker_is_killed_runs_again_on_workers_left() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.swift");
    let script = simulate(2, "lost", 1).replace(
        &format!("\"{}\"", par_sim().display()),
        &format!("\"env\" \"PAR_SIM_SECONDS=2\" \"{}\"", par_sim().display()),
    );
    std::fs::write(&file, script).unwrap();
    let run_dir = dir.path().join("run");
    let child = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "-n", "5", "--nodes", "2", "--run-dir"])
        .arg(&run_dir)
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The worker that MPI rank 1 stands for, once the job runs.
    let exe = par_sim().display().to_string();
    let rank_1 = || {
        processes_with(&exe).into_iter().find_map(|pid| {
            var(pid, "PMI_RANK")
                .filter(|r| r == "1")
                .and(var(pid, "LOCUS_RANK"))
        })
    };
    common::eventually_within(Duration::from_secs(60), "the job's rank 1 runs", || {
        rank_1().is_some()
    });
    let worker: u32 = rank_1().expect("rank 1 runs").parse().unwrap();
    let entry = std::fs::read_to_string(run_dir.join(format!("ranks/{worker}.json"))).unwrap();
    let entry: locus_runtime::Entry = serde_json::from_str(&entry).unwrap();
    let pid = entry.pid;
    // SAFETY: a signal to a rank of the run this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let done = child.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let recs = locus_runtime::record::load(&run_dir).unwrap();
    let sims: Vec<_> = recs.iter().filter(|r| r.func == "sim").collect();
    // The first attempt is recorded as stopped by the loss, the second ran
    // on workers still there.
    assert_eq!(sims.len(), 2, "{sims:?}");
    assert!(sims[0].abandoned && sims[0].error.as_deref().unwrap_or("").contains("is gone"));
    let last = sims
        .iter()
        .find(|r| r.error.is_none())
        .expect("a run that succeeded");
    assert!(last.job.iter().all(|p| p.rank != worker), "{:?}", last.job);
    assert_eq!(recs.iter().filter(|r| r.func == "analyze").count(), 2);
}

/// Variable `name` of process `pid`'s environment.
fn var(pid: u32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    (env.split(|b| *b == 0))
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .find_map(|kv| kv.strip_prefix(&prefix).map(str::to_string))
}
