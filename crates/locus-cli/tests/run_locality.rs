//! Placement of leaf tasks on a real run: ranks and file-system daemons
//! started by `locus run`, checked through the task records.

mod common;

use common::Run;
use std::path::Path;

/// 4 workers (0,1 on node0; 2,3 on node1) and 2 servers.
const TWO_NODES: &[&str] = &["-n", "6", "--servers", "2", "--nodes", "2"];

#[test]
fn hard_rank_calls_run_on_their_rank_and_see_it() {
    let script = r#"
import assert; import files; import string;
app (file o) whoami() { "sh" "-c" "echo $ADLB_RANK_SELF $LOCUS_RANK $LOCUS_NODE" @stdout=o; }
foreach i in [0:499] {
  int r = i %% 4;
  file f = @location=location(r, HARD, RANK) whoami();
  string want = sprintf("%i %i node%i", r, r, r %/ 2);
  assertEqual(trim(read(f)), want, sprintf("task %i", i));
}
"#;
    let run = Run::new(TWO_NODES, script).ok();
    let recs = run.records("whoami");
    assert_eq!(recs.len(), 500);
    for r in &recs {
        let t = r.target.expect("a target");
        assert!(t.hard && !t.node);
        assert_eq!(r.rank, t.rank, "task {} ran off its HARD target", r.id);
    }
}

#[test]
fn hard_node_calls_stay_on_the_node_and_use_its_workers() {
    let script = r#"
app (void o) nap() { "sleep" "0.05" }
foreach i in [0:39] { @location=location(2, HARD, NODE) nap(); }
"#;
    let run = Run::new(TWO_NODES, script).ok();
    let recs = run.records("nap");
    assert_eq!(recs.len(), 40);
    assert!(recs.iter().all(|r| r.node == "node1"), "{recs:?}");
    // Any worker of the node, not only the target rank.
    assert!(recs.iter().any(|r| r.rank == 3) && recs.iter().any(|r| r.rank == 2));
}

#[test]
fn soft_calls_spill_when_the_target_is_busy_and_hard_ones_do_not() {
    let script = |how: &str| {
        format!(
            "app (void o) nap() {{ \"sleep\" \"0.1\" }}\nforeach i in [0:11] {{ @location=location(0, {how}, RANK) nap(); }}\n"
        )
    };
    let soft = Run::new(TWO_NODES, &script("SOFT")).ok();
    let recs = soft.records("nap");
    assert_eq!(recs.len(), 12);
    let elsewhere = recs.iter().filter(|r| r.rank != 0).count();
    assert!(elsewhere > 0, "no SOFT task left its busy target");
    // Same node first: rank 1 shares node0 with the target.
    assert!(recs.iter().any(|r| r.rank == 1));
    let hard = Run::new(TWO_NODES, &script("HARD")).ok();
    assert!(hard.records("nap").iter().all(|r| r.rank == 0));
}

#[test]
fn work_is_stolen_between_servers() {
    // SOFT tasks for rank 0 are queued on rank 0's server (rank 4). Ranks 1
    // and 3 are served by the other server (rank 5): what they run of it
    // came to them by stealing.
    let script = "app (void o) nap() { \"sleep\" \"0.05\" }\n\
                  foreach i in [0:39] { @location=location(0, SOFT, RANK) nap(); }\n";
    let mut opts = TWO_NODES.to_vec();
    opts.extend_from_slice(&["--soft-wait", "10"]);
    let run = Run::new(&opts, script).ok();
    let recs = run.records("nap");
    assert_eq!(recs.len(), 40);
    let stolen = recs.iter().filter(|r| r.rank == 1 || r.rank == 3).count();
    assert!(stolen > 0, "no task reached the other server's workers");
}

/// Eight files of `bytes` written on node1, then (once all are written) a
/// `wc -c` of each.
fn storage_script(annotated: bool, bytes: u64) -> String {
    let place = if annotated {
        "@location=ip2rank(lookup(filename(f[i])))"
    } else {
        ""
    };
    format!(
        r#"
import files; import string;
app (file o) make() {{ "head" "-c" "{bytes}" "/dev/zero" @stdout=o; }}
app (file o) count(file i) {{ "wc" "-c" i @stdout=o; }}
file f[];
foreach i in [0:7] {{
  f[i] = @location=location(2, HARD, NODE) make();
}}
wait (f) {{
  foreach i in [0:7] {{
    file c = {place} count(f[i]);
    trace(lookup(filename(f[i])), size(split(trim(read(c)), " ")));
  }}
}}
"#
    )
}

fn remote_bytes(run: &Run) -> u64 {
    let recs = run.records("count");
    assert_eq!(recs.len(), 8);
    recs.iter().map(|r| r.remote_bytes).sum()
}

#[test]
fn lookup_reports_the_writer_node_and_ip2rank_reads_locally() {
    let run = Run::new(TWO_NODES, &storage_script(true, 300_000)).ok();
    assert!(
        run.stdout()
            .lines()
            .filter(|l| l.starts_with("trace: node1,"))
            .count()
            == 8,
        "{}",
        run.stdout()
    );
    assert_eq!(remote_bytes(&run), 0);
    let recs = run.records("count");
    assert!(recs
        .iter()
        .all(|r| r.node == "node1" && r.local_bytes == 300_000));
}

#[test]
fn hash_placement_stores_outputs_where_their_names_hash() {
    // Hercules' default placement: every writer runs on node1, yet each
    // output lands on the node its path hashes to, lookup reports that node
    // and a task placed there reads it locally.
    let script = r#"
import files; import string;
app (file o) make() { "head" "-c" "1000" "/dev/zero" @stdout=o; }
app (file o) count(file i) { "wc" "-c" i @stdout=o; }
foreach i in [0:7] {
  file f<sprintf("/locus/hashed/f%i", i)> = @location=location(2, HARD, NODE) make();
  file c = @location=ip2rank(lookup(filename(f))) count(f);
  trace(i, lookup(filename(f)), trim(read(c)));
}
"#;
    let mut opts = TWO_NODES.to_vec();
    opts.extend_from_slice(&["--placement", "hash"]);
    let run = Run::new(&opts, script).ok();
    let out = run.stdout();
    let mut nodes = std::collections::BTreeSet::new();
    for i in 0..8 {
        let home = locus_fs::hash_node(&format!("/hashed/f{i}"), 2);
        nodes.insert(home);
        let line = format!("trace: {i},node{home},");
        assert!(out.lines().any(|l| l.starts_with(&line)), "{line} in {out}");
    }
    assert_eq!(nodes.len(), 2, "the names should hash to both nodes");
    assert!(run.records("make").iter().all(|r| r.node == "node1"));
    let counts = run.records("count");
    assert_eq!(counts.len(), 8);
    assert!(counts
        .iter()
        .all(|r| r.remote_bytes == 0 && r.local_bytes == 1000));
    // A bad policy is refused before anything starts.
    let bad = common::locus(&["run", "--placement", "near", "t.swift"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown placement 'near'"));
}

#[test]
fn automatic_locality_reads_locally_and_off_does_not() {
    // 24 MB inputs, all written before the first count: fetching one
    // (~0.2 s at the rate assumed before any fetch) costs more than waiting
    // for a `wc -c` on its node, so counts stay there. A machine so loaded
    // that a `wc -c` seems to take longer may move some: only with their
    // reason recorded.
    let script = storage_script(false, 24_000_000);
    let auto = Run::new(TWO_NODES, &script).ok();
    let counts = auto.records("count");
    assert!(counts.iter().all(|r| {
        r.placed == locus_proto::run::Placed::Auto && r.target.is_some_and(|t| t.node && !t.hard)
    }));
    for r in &counts {
        match r.spill {
            None => assert_eq!((r.node.as_str(), r.remote_bytes), ("node1", 0), "{r:?}"),
            Some(s) => assert!(s.fetch_us < s.wait_us, "{r:?}"),
        }
    }
    let local = counts.iter().filter(|r| r.remote_bytes == 0).count();
    assert!(local >= 2, "{counts:?}");
    let mut opts = TWO_NODES.to_vec();
    opts.extend_from_slice(&["--locality", "off"]);
    let off = Run::new(&opts, &script).ok();
    assert!(
        remote_bytes(&off) > 0,
        "locality off still read everything locally"
    );
    // The report shows the difference.
    let report = common::locus(&["report", off.run_dir().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("locality:") && text.contains("fetched"),
        "{text}"
    );
}

#[test]
fn a_failing_app_names_command_node_and_code_and_retries_help() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("once");
    let script = format!(
        "app (void o) flaky() {{ \"sh\" \"-c\" \"test -e {f} || {{ touch {f}; exit 3; }}\" }}\nflaky();\n",
        f = flag.display()
    );
    let failed = Run::new(&["-n", "2"], &script);
    assert!(!failed.out.status.success());
    let err = String::from_utf8_lossy(&failed.out.stderr);
    assert!(
        err.contains("app 'flaky' failed on node0 (rank 0)") && err.contains("exited with code 3"),
        "{err}"
    );
    std::fs::remove_file(&flag).unwrap();
    let retried = Run::new(&["-n", "2", "--retries", "1"], &script).ok();
    assert_eq!(retried.records("flaky")[0].attempts, 2);
}

#[test]
fn run_ends_soon_after_its_last_task() {
    // Not a timing assertion: the leader's recorded end follows the last
    // task's end, and every rank has exited when `locus run` returns.
    let run = Run::new(
        &["-n", "3"],
        "app (void o) t() { \"true\" }\nforeach i in [1:20] { t(); }\n",
    )
    .ok();
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.run_dir().join("run.json")).unwrap()).unwrap();
    let last = run.records("t").iter().map(|r| r.end_us).max().unwrap();
    assert!(summary["end_us"].as_u64().unwrap() >= last);
    for rank in 0..3 {
        let path = run.run_dir().join(format!("ranks/{rank}.json"));
        let entry: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let pid = entry["pid"].as_u64().unwrap();
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid),
            "rank pid {pid} still running"
        );
    }
}

fn is_zombie(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

#[test]
fn maps_stay_with_their_data_when_waiting_is_cheaper_than_fetching() {
    // A newcomer's map/reduce, no placement flag: 17 inputs of 24 MB spread
    // over 4 nodes (one worker each), a quick map of each, a merge. One
    // node has 5 maps, the others 4: its last map waits for a `wc -c`,
    // which is cheaper than fetching 24 MB, so every map runs at home.
    let script = r#"
import files; import string;
app (file o) make() { "head" "-c" "24000000" "/dev/zero" @stdout=o; }
app (file o) map(file i) { "wc" "-c" i @stdout=o; }
app (file o) merge(file m[]) { "cat" m @stdout=o; }
file inputs[];
foreach i in [0:16] {
  inputs[i] = @location=location(i %% 4, HARD, NODE) make();
}
wait (inputs) {
  file counts[];
  foreach f, i in inputs { counts[i] = map(f); }
  file all = merge(counts);
  trace(size(split(trim(read(all)), "\n")));
}
"#;
    let run = Run::new(&["-n", "5", "--nodes", "4"], script).ok();
    assert!(run.stdout().contains("trace: 17"), "{}", run.stdout());
    let maps = run.records("map");
    assert_eq!(maps.len(), 17);
    for m in &maps {
        assert_eq!(m.spill, None, "map {} left its data: {m:?}", m.id);
        assert_eq!((m.remote_bytes, m.local_bytes), (0, 24_000_000), "{m:?}");
    }
}

#[test]
fn tasks_spill_when_waiting_is_slower_than_fetching_and_say_why() {
    // Every input on node0, each task sleeps 0.3 s: node0's two workers
    // would take 1.2 s for 8 tasks, while fetching 100 kB takes a
    // millisecond, so node1's workers take some, and their records hold
    // both estimates.
    let script = r#"
app (file o) make() { "head" "-c" "100000" "/dev/zero" @stdout=o; }
app (file o) slow(file i) { "sh" "-c" "sleep 0.3; wc -c < \"$0\"" i @stdout=o; }
file inputs[];
foreach i in [0:7] { inputs[i] = @location=location(0, HARD, NODE) make(); }
wait (inputs) {
  foreach f in inputs { file c = slow(f); }
}
"#;
    let run = Run::new(TWO_NODES, script).ok();
    let tasks = run.records("slow");
    assert_eq!(tasks.len(), 8);
    let spilled: Vec<_> = tasks.iter().filter(|t| t.spill.is_some()).collect();
    assert!(!spilled.is_empty(), "nothing spilled: {tasks:?}");
    for t in &spilled {
        let s = t.spill.unwrap();
        assert_eq!(s.from, 0);
        assert!(s.fetch_us < s.wait_us, "{s:?}");
        assert_eq!(t.node, "node1");
        assert_eq!(t.remote_bytes, 100_000);
    }
    // Tasks that stayed read locally.
    for t in tasks.iter().filter(|t| t.spill.is_none()) {
        assert_eq!((t.node.as_str(), t.remote_bytes), ("node0", 0), "{t:?}");
    }
    let report = common::locus(&["report", run.run_dir().to_str().unwrap()]);
    let text = String::from_utf8_lossy(&report.stdout);
    let line = text
        .lines()
        .skip_while(|l| !l.starts_with("locality by function:"))
        .find(|l| l.trim_start().starts_with("slow "))
        .unwrap_or_else(|| panic!("no locality line for slow: {text}"));
    assert!(line.contains(&format!(" {} ", spilled.len())), "{line}");
    assert!(
        text.contains("spilled when fetching was estimated quicker than waiting"),
        "{text}"
    );
}

#[test]
fn each_input_is_stat_once_per_task() {
    // Placement reads the inputs' records; the worker stages from them
    // rather than asking the daemons again (as it does when the task
    // starts over 1 s after its placement: one worker per task here), and
    // a worker's mount shows the program the inputs as staged. The outputs
    // are host files: registering Locus ones may stat too.
    let c = common::TestCluster::up(2);
    let stats = |rt: &tokio::runtime::Runtime, client: &locus_fs::Client| -> u64 {
        (0..2)
            .map(|n| rt.block_on(client.status(n)).unwrap().stats_answered)
            .sum()
    };
    let rt = common::rt();
    let client = c.client(1);
    let tasks = 12;
    for i in 0..tasks {
        rt.block_on(client.put(&format!("/in/f{i}"), format!("{i}\n").as_bytes()))
            .unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let script = format!(
        r#"
import string;
app (file o) count(file i) {{ "wc" "-c" i @stdout=o; }}
foreach i in [0:{}] {{
  file c<sprintf("{}/c%i", i)> = count(input(sprintf("/locus/in/f%i", i)));
}}
"#,
        tasks - 1,
        out.path().display()
    );
    // Four workers; through the mount each looks up the root and the
    // inputs' directory once (the kernel keeps them), not per task.
    for (mount, most) in [("--no-mount", tasks), ("--mount", tasks + 4 * 2)] {
        let before = stats(&rt, &client);
        let run = Run::new(&["-n", "5", mount, "--fs", c.path_str()], &script).ok();
        let counts = run.records("count");
        assert_eq!(counts.len(), tasks as usize);
        assert!(counts
            .iter()
            .all(|r| r.placed == locus_proto::run::Placed::Auto));
        let stats = stats(&rt, &client) - before;
        assert!(
            stats <= most,
            "{mount}: {stats} stats for {tasks} tasks of one input each"
        );
    }
}

#[test]
fn files_read_and_written_through_the_mount_are_a_tasks_inputs_and_outputs() {
    if !common::is_root() || !std::path::Path::new("/dev/fuse").exists() {
        eprintln!("skipped: the mount needs root and /dev/fuse");
        return;
    }
    // A model every task reads by a path no command line names, on node 1.
    let c = common::TestCluster::up(2);
    let rt = common::rt();
    let model = vec![7u8; 3_000_000];
    rt.block_on(c.client(1).put("/shared/model.bin", &model))
        .unwrap();
    let script = r#"
app (file o) use_model(int i) {
  "sh" "-c" "wc -c < /locus/shared/model.bin; mkdir -p /locus/side; echo $0 > /locus/side/s$0.txt" i @stdout=o;
}
file o0 = @location=location(0, HARD, RANK) use_model(0);
wait (o0) {
  file o1 = use_model(1);
  wait (o1) {
    file o2 = use_model(2);
    trace(read(o2));
  }
}
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.swift"),
        format!("import files;\n{script}"),
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-n", "5", "--fs", c.path_str(), "--run-dir"];
        args.push(run_dir.to_str().unwrap());
        args.extend_from_slice(extra);
        args.push("t.swift");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_locus"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        let mut recs: Vec<_> = locus_runtime::record::load(&run_dir)
            .unwrap()
            .into_iter()
            .filter(|r| r.func == "use_model")
            .collect();
        recs.sort_by_key(|r| r.start_us);
        recs
    };
    let first = run(&[]);
    assert_eq!(first.len(), 3);
    let path = |seen: &[locus_runtime::record::Seen], p: &str| seen.iter().any(|s| s.path == p);
    for (i, r) in first.iter().enumerate() {
        // What it read there is its input, counted; what it wrote, its output.
        assert!(path(&r.inputs, "/locus/shared/model.bin"), "{r:?}");
        assert!(path(&r.outputs, &format!("/locus/side/s{i}.txt")), "{r:?}");
        assert_eq!(r.local_bytes + r.remote_bytes, 3_000_000, "{r:?}");
    }
    // The first ran on node 0 and fetched the model; the next ones are
    // placed by it (learned from the first), next to a copy.
    assert_eq!(first[0].remote_bytes, 3_000_000);
    for r in &first[1..] {
        assert_eq!(r.placed, locus_proto::run::Placed::Auto, "{r:?}");
        assert_eq!(r.remote_bytes, 0, "{r:?}");
    }
    // A resume reruns nothing while the model is the same, and every task
    // once it changed.
    let same = run(&["--resume"]);
    assert!(same.iter().all(|r| r.resumed), "{same:?}");
    rt.block_on(c.client(1).put("/shared/model.bin", b"new"))
        .unwrap();
    let changed = run(&["--resume"]);
    assert!(changed.iter().all(|r| !r.resumed), "{changed:?}");
}
