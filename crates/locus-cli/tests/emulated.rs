//! The emulated cluster (network namespaces, shaped links) and the workflow
//! benchmarks on it, small enough for CI: `locus cluster up/down` leave
//! nothing behind, runs land where their configuration says, and the HTML
//! report renders in headless Chromium. Needs root, as the cluster does.

mod common;

use common::{assert_renders, locus, ok, processes_with};
use locus_bench::emulated::Outcome;
use locus_bench::filecopy::Results;
use std::path::Path;
use std::process::Command;

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the emulated-cluster tests need root (network namespaces)"
    );
}

fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Interfaces of this (the root) namespace, without their counters.
fn root_links() -> Vec<String> {
    let mut v: Vec<String> = sh("ip", &["-o", "link"])
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().to_string()))
        .collect();
    v.sort();
    v
}

/// Running, not gone or a zombie waiting for a parent that is not ours.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            != Some("Z")
    })
}

/// Takes the cluster in `dir` down if the test ends before it does.
struct Down<'a>(&'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        if self.0.join("emulation.json").exists() {
            let _ = locus(&["cluster", "down", "--dir", self.0.to_str().unwrap()]);
        }
    }
}

/// A 2-node emulated cluster at `dir`, each host limited to half a CPU.
fn cluster_up(dir: &str, extra: &[&str]) {
    let mut args = vec![
        "cluster",
        "up",
        "--emulate",
        "--nodes",
        "2",
        "--host-cpus",
        "0.5",
        "--dir",
        dir,
    ];
    args.extend_from_slice(extra);
    ok(&locus(&args));
}

fn daemon_pids(fs: &Path) -> Vec<i32> {
    std::fs::read_dir(fs)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("daemon.pid")).ok())
        .map(|p| p.trim().parse().unwrap())
        .collect()
}

#[test]
fn cluster_up_run_down_leaves_nothing_behind() {
    require_root();
    let links_before = root_links();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("emu");
    let d = dir.to_str().unwrap();
    cluster_up(d, &["--link", "200mbit"]);
    let _down = Down(&dir);
    let e: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("emulation.json")).unwrap()).unwrap();
    let id = e["id"].as_str().unwrap().to_string();
    let ours = |list: &str| list.lines().filter(|l| l.contains(&id)).count();
    // Two nodes, the storage host and the bridge.
    assert_eq!(ours(&sh("ip", &["netns", "list"])), 4);
    let mut pids = daemon_pids(&dir.join("fs"));
    pids.extend(daemon_pids(&dir.join("central")));
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|p| alive(*p)));
    // Each host's daemon runs in the host's CPU-limited cgroup.
    let cgroups: Vec<std::path::PathBuf> = e["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .chain([&e["storage"]])
        .map(|h| h["cgroup"].as_str().unwrap().into())
        .collect();
    let mut in_cgroups: Vec<i32> = cgroups
        .iter()
        .flat_map(|cg| {
            let procs = std::fs::read_to_string(cg.join("cgroup.procs")).unwrap();
            procs
                .lines()
                .map(|p| p.parse().unwrap())
                .collect::<Vec<i32>>()
        })
        .collect();
    in_cgroups.sort();
    let mut sorted = pids.clone();
    sorted.sort();
    assert_eq!(in_cgroups, sorted);
    let status = ok(&locus(&["cluster", "status", "--dir", d]));
    assert!(
        status.contains("10.0.0.2") && status.contains("200mbit"),
        "{status}"
    );

    // A file written on node1 is read on node0 across the emulated link; in
    // central mode every byte lives on the storage host.
    let script = tmp.path().join("t.swift");
    std::fs::write(
        &script,
        r#"import files; import location; import string;
app (file o) make() { "sh" "-c" "head -c 100000 /dev/zero" @stdout=o; }
app (file o) count(file i) { "wc" "-c" i @stdout=o; }
string hosts[] = hostmapList();
file f<"/locus/data/f.bin"> = @location=location(hostmapOneWorkerRank(hosts[1]), HARD, NODE) make();
file c<"/locus/data/c.txt"> = @location=location(hostmapOneWorkerRank(hosts[0]), HARD, NODE) count(f);
trace(read(c));
app (file o) cgroup() { "cat" "/proc/self/cgroup" @stdout=o; }
file g = @location=location(hostmapOneWorkerRank(hosts[1]), HARD, NODE) cgroup();
trace(read(g));
"#,
    )
    .unwrap();
    for mode in ["local", "central"] {
        let run_dir = tmp.path().join(format!("run-{mode}"));
        let out = ok(&locus(&[
            "run",
            "--cluster",
            d,
            "--fs-mode",
            mode,
            "-n",
            "3",
            "--run-dir",
            run_dir.to_str().unwrap(),
            script.to_str().unwrap(),
        ]));
        assert!(out.contains("100000"), "{mode}: {out}");
        // Tasks run inside their host's cgroup.
        assert!(out.contains(&format!("locus-{id}-node1")), "{mode}: {out}");
        let recs = locus_runtime::record::load(&run_dir).unwrap();
        let count = recs.iter().find(|r| r.func == "count").unwrap();
        assert_eq!(
            (count.node.as_str(), count.remote_bytes),
            ("node0", 100_000),
            "{mode}"
        );
    }
    // Stored under its version's stamp: node-K/data/data/@<stamp>/f.bin.
    let data = |fs: &str, node: u32| {
        let parent = dir.join(fs).join(format!("node-{node}/data/data"));
        std::fs::read_dir(parent)
            .into_iter()
            .flatten()
            .any(|e| e.unwrap().path().join("f.bin").exists())
    };
    assert!(data("fs", 1), "Locus keeps data where it was written");
    assert!(data("central", 0), "central keeps data on the storage host");

    let down = ok(&locus(&["cluster", "down", "--dir", d, "--purge"]));
    assert!(down.contains("3 daemon(s) stopped") && down.contains("4 namespace(s) removed"));
    assert_eq!(ours(&sh("ip", &["netns", "list"])), 0);
    assert!(pids.iter().all(|p| !alive(*p)));
    assert!(cgroups.iter().all(|cg| !cg.exists()));
    assert_eq!(root_links(), links_before);
    assert!(!dir.exists());
}

#[test]
fn cluster_commands_refuse_bad_input_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("emu");
    let d = d.to_str().unwrap();
    let no_flag = locus(&["cluster", "up", "--nodes", "2", "--dir", d]);
    assert!(String::from_utf8_lossy(&no_flag.stderr).contains("pass --emulate"));
    let bad_rate = locus(&["cluster", "up", "--emulate", "--link", "fast", "--dir", d]);
    assert!(String::from_utf8_lossy(&bad_rate.stderr).contains("bad rate 'fast'"));
    let none = locus(&["cluster", "down", "--dir", d]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no emulated cluster"));
}

/// Every read task of `o` ran on the node holding its file.
fn all_reads_local(o: &Outcome) -> bool {
    o.run
        .tasks("read_task")
        .all(|t| t.remote_bytes == 0 && t.local_bytes > 0)
}

#[test]
fn filecopy_bench_configurations_do_what_they_say_and_the_report_renders() {
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let stdout = ok(&locus(&[
        "bench",
        "filecopy",
        "--nodes",
        "2",
        "--workers-per-node",
        "2",
        "--size-mib",
        "2",
        "--chunk-kib",
        "256",
        "--link",
        "200mbit",
        "--storage-link",
        "100mbit",
        "--dir",
        tmp.path().join("work").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert!(stdout.contains("vs central"), "{stdout}");
    let r: Results =
        serde_json::from_slice(&std::fs::read(out_dir.join("filecopy.json")).unwrap()).unwrap();
    let step = &r.steps[0];
    assert_eq!((step.nodes, step.workers_per_node, step.files), (2, 2, 4));
    let by = |name: &str| {
        step.outcomes
            .iter()
            .find(|o| o.config.name.starts_with(name))
            .unwrap_or_else(|| panic!("no configuration {name}"))
    };
    for o in &step.outcomes {
        assert_eq!(o.run.tasks("write_task").count(), 4, "{}", o.config.name);
        assert_eq!(o.run.tasks("read_task").count(), 4, "{}", o.config.name);
        assert!(o
            .run
            .tasks("write_task")
            .all(|t| t.written_bytes == 2 << 20));
    }
    // Central: every byte read crossed the storage link.
    assert!(by("central")
        .run
        .tasks("read_task")
        .all(|t| t.remote_bytes == 2 << 20 && t.local_bytes == 0));
    // HARD locality-aware readers (and automatic locality) read only local data.
    assert!(all_reads_local(by("DP-def TP-loc-aw HARD NODE")));
    assert!(all_reads_local(by("DP-inf TP-loc-aw HARD NODE")));
    assert!(all_reads_local(by("DP-local TP-auto")));
    let per_node = |o: &Outcome, func: &str| {
        let mut n = std::collections::BTreeMap::<String, u32>::new();
        for t in o.run.tasks(func) {
            let node = &o.run.workers.iter().find(|(r, _)| *r == t.rank).unwrap().1;
            *n.entry(node.clone()).or_default() += 1;
        }
        n
    };
    // Informed placement: the same number of files written on each node.
    let inf = by("DP-inf TP-loc-aw");
    let written = per_node(inf, "write_task");
    assert_eq!(written.values().copied().collect::<Vec<_>>(), vec![2, 2]);
    // Default placement hashes each file to a node (a configuration writes
    // /filecopy/<its name>-<round>/f<i>.dat), and HARD readers follow the
    // files.
    let mut hashed = std::collections::BTreeMap::<String, u32>::new();
    for i in 0..4 {
        let path = format!("/filecopy/DP-def_TP-loc-aw_HARD_NODE-0/f{i}.dat");
        let node = locus_fs::hash_node(&path, 2);
        *hashed.entry(format!("node{node}")).or_default() += 1;
    }
    let def = by("DP-def TP-loc-aw HARD NODE");
    assert_eq!(per_node(def, "read_task"), hashed);

    // The report: regenerated by `locus report`, opened in Chromium.
    let page = tmp.path().join("report.html");
    ok(&locus(&[
        "report",
        out_dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]));
    assert_renders(&page, 6 + 4);
}

#[test]
fn mapreduce_bench_places_phases_as_configured_and_the_report_renders() {
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    ok(&locus(&[
        "bench",
        "mapreduce",
        "--nodes",
        "2",
        "--workers-per-node",
        "2",
        "--files",
        "6",
        "--size-mib",
        "1",
        "--dir",
        tmp.path().join("work").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    let r: locus_bench::mapreduce::Results =
        serde_json::from_slice(&std::fs::read(out_dir.join("mapreduce.json")).unwrap()).unwrap();
    assert_eq!(r.outcomes.len(), 7);
    for o in &r.outcomes {
        let n = |f: &str| o.run.tasks(f).count();
        let counts = (n("generate"), n("map"), n("count"), n("merge"));
        assert_eq!(counts, (6, 6, 6, 5), "{}", o.config.name);
    }
    let by = |name: &str| r.outcomes.iter().find(|o| o.config.name == name).unwrap();
    assert!(by("central")
        .run
        .tasks("count")
        .all(|t| t.local_bytes == 0 && t.remote_bytes > 0));
    // HARD NODE: every count task on the node of its words; informed: every
    // map task too.
    for name in ["DP-def HARD NODE", "DP-inf HARD NODE"] {
        assert!(
            by(name).run.tasks("count").all(|t| t.remote_bytes == 0),
            "{name}"
        );
    }
    assert!(by("DP-inf HARD NODE")
        .run
        .tasks("map")
        .all(|t| t.remote_bytes == 0));
    let page = tmp.path().join("mr.html");
    ok(&locus(&[
        "report",
        out_dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]));
    assert_renders(&page, 3 + 7);
}

/// A 2-node emulated cluster in a new temporary directory: the directory
/// and the cluster's (take it down with `Down`).
fn two_hosts() -> (tempfile::TempDir, std::path::PathBuf) {
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("emu");
    cluster_up(dir.to_str().unwrap(), &[]);
    (tmp, dir)
}

#[test]
fn meta_cluster_bench_creates_every_file_on_both_file_systems_and_renders() {
    let (tmp, dir) = two_hosts();
    let _down = Down(&dir);
    let d = dir.to_str().unwrap();
    let out_dir = tmp.path().join("out");
    let stdout = ok(&locus(&[
        "bench",
        "meta-cluster",
        "--cluster",
        d,
        "--files",
        "150",
        "--depth",
        "8",
        "--dir",
        tmp.path().join("work").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert!(stdout.contains("0.50 CPU(s) per host"), "{stdout}");
    let r: locus_bench::meta_cluster::Results =
        serde_json::from_slice(&std::fs::read(out_dir.join("meta-cluster.json")).unwrap()).unwrap();
    // Two layouts on two file systems, each with both nodes' clients.
    assert_eq!(r.points.len(), 4);
    for p in &r.points {
        assert_eq!((p.nodes, p.files, p.client_seconds.len()), (2, 150, 2));
        assert!(p.rate() > 0.0 && p.rate().is_finite());
    }
    // Every file exists, in its client's directory and in the shared one, on
    // Locus and on the central file system (listed from inside node0).
    let e: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("emulation.json")).unwrap()).unwrap();
    let netns = e["nodes"][0]["netns"].as_str().unwrap();
    let exe = env!("CARGO_BIN_EXE_locus");
    for fs in ["fs", "central"] {
        let fs_dir = dir.join(fs);
        let count = |path: &str| {
            let out = Command::new("ip")
                .args(["netns", "exec", netns, exe, "fs", "ls", "--dir"])
                .arg(&fs_dir)
                .arg(path)
                .output()
                .unwrap();
            ok(&out).lines().count()
        };
        assert_eq!(count("/meta/n2/c0"), 150, "{fs}");
        assert_eq!(count("/meta/n2/c1"), 150, "{fs}");
        assert_eq!(count("/meta/n2/shared"), 300, "{fs}");
    }
    let page = tmp.path().join("meta.html");
    ok(&locus(&[
        "report",
        out_dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]));
    assert_renders(&page, 2);
}

#[test]
fn a_host_cut_off_mid_run_costs_only_its_tasks() {
    let (tmp, dir) = two_hosts();
    let _down = Down(&dir);
    let d = dir.to_str().unwrap();
    let e: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("emulation.json")).unwrap()).unwrap();
    let bridge = e["bridge_netns"].as_str().unwrap().to_string();
    // Workers 0 and 1 and the server on node0, workers 2 and 3 on node1.
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let script = tmp.path().join("t.swift");
    std::fs::write(
        &script,
        format!(
            "app (file o) nap(int i) {{ \"sh\" \"-c\" \"sleep 0.2; echo $1 > $0\" o i }}\n\
             foreach i in [0:99] {{ file f<sprintf(\"{}/%i.txt\", i)> = nap(i); }}\n",
            out.display()
        ),
    )
    .unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "--cluster", d, "-n", "5", "--run-dir"])
        .arg(tmp.path().join("run"))
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::eventually_within(std::time::Duration::from_secs(30), "tasks ran", || {
        std::fs::read_dir(&out).map_or(0, std::iter::Iterator::count) >= 8
    });
    // node1's link to the bridge goes down: nothing reaches it, nothing
    // says it is gone.
    ok(&Command::new("ip")
        .args(["-n", &bridge, "link", "set", "n1", "down"])
        .output()
        .unwrap());
    // Noticed within the rank connections' 10 s of silence, not never.
    let ended = (0..600).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        run.try_wait().unwrap().is_some()
    });
    if !ended {
        // The ranks hold its output open: they go too.
        for pid in processes_with(tmp.path().join("run").to_str().unwrap()) {
            // SAFETY: a signal to a rank of the run this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let _ = run.kill();
    }
    let done = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(ended, "still running a minute after the cut: {stderr}");
    assert!(done.status.success(), "{stderr}");
    for w in [2, 3] {
        assert!(
            stderr.contains(&format!(
                "worker rank {w} on node1 is gone: its connection broke"
            )),
            "{stderr}"
        );
    }
    for i in 0..100 {
        let got = std::fs::read_to_string(out.join(format!("{i}.txt"))).unwrap();
        assert_eq!(got.trim(), i.to_string());
    }
}
