//! Locus deployed across hosts by real site launchers: each host a network,
//! UTS and mount namespace of its own (`scripts/hosts.sh`), the machine's
//! file system playing the shared one; MPICH's `mpiexec` starting daemons
//! and ranks through an `ssh` stand-in, and a Slurm cluster
//! (`scripts/slurm.sh`) running the batch example.

mod common;

use common::{is_root, ok, processes_with};

use locus_proto::run::ErrorKind;
use locus_runtime::record;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HOSTS: [&str; 4] = ["login", "node0", "node1", "node2"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Hosts made for one test, removed with everything on them when dropped.
struct Hosts {
    dir: tempfile::TempDir,
}

impl Hosts {
    fn up() -> Hosts {
        let dir = tempfile::tempdir().unwrap();
        let hosts = Hosts { dir };
        let out = hosts.script("up", &HOSTS);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        hosts
    }

    fn script(&self, cmd: &str, args: &[&str]) -> Output {
        Command::new(workspace().join("scripts/hosts.sh"))
            .arg(cmd)
            .arg(self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }

    /// Runs `locus ARGS` on `host`.
    fn locus(&self, host: &str, args: &[&str]) -> Output {
        let mut all = vec![host, env!("CARGO_BIN_EXE_locus")];
        all.extend_from_slice(args);
        self.script("exec", &all)
    }

    /// `mpiexec.mpich` on the login host, reaching the others by `ssh`.
    fn mpiexec(&self, hosts: &str, per_host: &str, n: &str, cmd: &[&str]) -> Output {
        let ssh = self.path("ssh");
        let mut all = vec![
            "login",
            "mpiexec.mpich",
            "-launcher",
            "ssh",
            "-launcher-exec",
        ];
        all.extend_from_slice(&[&ssh, "-hosts", hosts, "-ppn", per_host, "-n", n]);
        all.push(env!("CARGO_BIN_EXE_locus"));
        all.extend_from_slice(cmd);
        self.script("exec", &all)
    }

    /// Starts `sh -c CMD` on `host`, its output piped.
    fn spawn(&self, host: &str, cmd: &str) -> std::process::Child {
        Command::new(workspace().join("scripts/hosts.sh"))
            .args([
                "exec",
                self.dir.path().to_str().unwrap(),
                host,
                "sh",
                "-c",
                cmd,
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn path(&self, p: &str) -> String {
        self.dir.path().join(p).to_str().unwrap().to_string()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = Command::new(workspace().join("scripts/slurm.sh"))
            .arg("down")
            .arg(self.dir.path())
            .status();
        let _ = self.script("down", &[]);
    }
}

/// Kills process `rank` of the launch started on `role_file`: the process
/// doing its work, not the one its launcher started, which stays between
/// them to report how it ended.
fn kill_launched(role_file: &str, rank: u32) {
    let rank_var = format!("PMI_RANK={rank}");
    let doing: Vec<u32> = processes_with(role_file)
        .into_iter()
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let env = String::from_utf8_lossy(&env);
            let vars: Vec<&str> = env.split('\0').collect();
            vars.contains(&rank_var.as_str())
                && !vars.iter().any(|v| v.starts_with("LOCUS_SUPERVISE"))
        })
        .collect();
    // A child the rank is starting (an app between fork and exec) shows
    // the rank's command line and environment: the rank is its parent.
    let parent = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        after_name.split_whitespace().nth(1)?.parse::<u32>().ok()
    };
    let doing: Vec<u32> = doing
        .iter()
        .copied()
        .filter(|&pid| parent(pid).is_none_or(|p| !doing.contains(&p)))
        .collect();
    assert_eq!(doing.len(), 1, "{doing:?}");
    // SAFETY: a signal to a process this test started.
    unsafe { libc::kill(doing[0] as i32, libc::SIGKILL) };
}

/// A run of 48 short tasks, each writing a host file in `NAME-out`,
/// started from the login host by `run` (`RUN_DIR` and `SCRIPT` in it
/// replaced), once some of its tasks have ended: the run, its run
/// directory and its output directory.
fn naps_under_way(h: &Hosts, name: &str, run: &str) -> (std::process::Child, String, String) {
    let (run_dir, out) = (
        h.path(&format!("{name}-run")),
        h.path(&format!("{name}-out")),
    );
    std::fs::create_dir(&out).unwrap();
    let script = h.path(&format!("{name}.swift"));
    std::fs::write(
        &script,
        format!(
            "app (file o) nap(int i) {{ \"sh\" \"-c\" \"sleep 0.4; echo $1 > $0\" o i }}\n\
             foreach i in [0:47] {{ file f<sprintf(\"{out}/%i.txt\", i)> = nap(i); }}\n"
        ),
    )
    .unwrap();
    let cmd = run.replace("RUN_DIR", &run_dir).replace("SCRIPT", &script);
    let child = h.spawn("login", &cmd);
    let count = || std::fs::read_dir(&out).map_or(0, std::iter::Iterator::count);
    common::eventually_within(std::time::Duration::from_secs(60), "tasks ended", || {
        count() >= 6
    });
    (child, run_dir, out)
}

/// `naps_under_way` whose rank `victim` is then killed: its output, run
/// directory and output directory.
fn kill_a_rank_mid_run(h: &Hosts, name: &str, run: &str, victim: u32) -> (Output, String, String) {
    let (child, run_dir, out) = naps_under_way(h, name, run);
    kill_launched(&format!("{run_dir}/rank.json"), victim);
    let done = child.wait_with_output().unwrap();
    assert!(processes_with(&run_dir).is_empty(), "left running");
    (done, run_dir, out)
}

/// `naps_under_way` in an allocation that is then cancelled (`scancel`:
/// Slurm sends SIGTERM to every process of the job): nothing is left
/// running, no worker is reported lost, and the run can be read — its
/// summary says it was interrupted, the tasks that finished are recorded.
fn a_cancelled_run_can_be_read(h: &Hosts, name: &str, run: &str) {
    let (child, run_dir, out) = naps_under_way(h, name, run);
    let stores = stores_of(&format!("{run_dir}/fs"));
    assert_eq!(stores.len(), 3);
    assert!(stores.iter().all(|s| s.exists()));
    let scancel = format!("SLURM_CONF={} scancel --user=root", h.path("slurm.conf"));
    let cancelled = h.script("exec", &["login", "timeout", "30", "sh", "-c", &scancel]);
    assert!(cancelled.status.success(), "{cancelled:?}");
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success(), "{stderr}");
    assert!(stderr.contains("the run was interrupted"), "{stderr}");
    // Ranks stopping with the run are not workers lost from it.
    assert!(!stderr.contains("elsewhere"), "{stderr}");
    assert!(processes_with(&run_dir).is_empty(), "left running");
    // Within Slurm's KillWait (30 s) the job's stores are gone from its hosts.
    common::eventually_within(std::time::Duration::from_secs(30), "stores removed", || {
        all_gone(&stores)
    });
    // Each daemon noted it: the cluster's directory goes without a launcher.
    let fs = format!("{run_dir}/fs");
    let down = ok(&h.locus("login", &["fs", "down", "--dir", &fs, "--purge"]));
    assert!(down.contains("stores removed"), "{down}");
    let summary = locus_runtime::RunSummary::load(Path::new(&run_dir)).unwrap();
    assert_eq!(summary.error_kind, Some(ErrorKind::Interrupted));
    // Where the ranks ran, as they met through Slurm's PMI.
    assert_eq!(summary.layout.nodes.len(), 3, "{:?}", summary.layout);
    let records = record::load(Path::new(&run_dir)).unwrap();
    // The naps running when the job ended were stopped with it, not failed.
    assert!(records.iter().all(|r| !r.failed()), "{records:?}");
    let naps: Vec<_> = (records.iter())
        .filter(|r| r.func == "nap" && r.error.is_none())
        .collect();
    let written = std::fs::read_dir(&out).unwrap().count();
    assert!(
        !naps.is_empty() && naps.len() <= written,
        "{} of {written}",
        naps.len()
    );
    let report = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["report", &run_dir])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{shown}");
    assert!(shown.contains("interrupted"), "{shown}");
}

/// Worker rank 1 killed: the other workers run its tasks and the run
/// succeeds, though the launcher reports the loss.
fn a_worker_killed_under_a_launcher(h: &Hosts, name: &str, run: &str, launcher: &str) {
    let (done, run_dir, out) = kill_a_rank_mid_run(h, name, run, 1);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{stderr}");
    // The code is the launcher's to choose: Hydra has given 137 (the dead
    // rank's) and 1.
    let said = stderr
        .split_once(&format!("{launcher} ended with code "))
        .map(|(_, rest)| rest);
    assert!(
        said.is_some_and(|rest| {
            let (code, why) = rest.split_once(' ').unwrap_or_default();
            code.parse::<i32>().is_ok_and(|c| c != 0)
                && why.starts_with("(a rank it started failed); the run finished without it")
        }),
        "{stderr}"
    );
    for i in 0..48 {
        let got = std::fs::read_to_string(format!("{out}/{i}.txt")).unwrap();
        assert_eq!(got.trim(), i.to_string());
    }
    let records = record::load(Path::new(&run_dir)).unwrap();
    let ran: std::collections::BTreeSet<u32> = records
        .iter()
        .filter(|r| r.func == "nap" && r.error.is_none())
        .map(|r| r.rank)
        .collect();
    assert!(ran.len() >= 3 && ran.iter().any(|r| *r != 1), "{ran:?}");
}

/// `examples/par-simulate.swift` started from the login host by `run`
/// (`RUN_DIR` and `SCRIPT` in it replaced; its MPI program built here):
/// each simulation's two ranks ran on the hosts of the workers reserved
/// for it, their outputs were registered there and read there, and no
/// rank is left running.
fn parallel_tasks_run_on_the_reserved_hosts(h: &Hosts, name: &str, run: &str) {
    let exe = h.path(&format!("{name}-par-sim"));
    let built = Command::new("mpicc")
        .args(["-O2", "-o", &exe])
        .arg(workspace().join("examples/bin/par-sim.c"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let example = std::fs::read_to_string(workspace().join("examples/par-simulate.swift")).unwrap();
    let script = h.path(&format!("{name}.swift"));
    std::fs::write(&script, example.replace("examples/bin/par-sim", &exe)).unwrap();
    let (run_dir, out) = (
        h.path(&format!("{name}-run")),
        h.path(&format!("{name}-out")),
    );
    let cmd = run
        .replace("RUN_DIR", &run_dir)
        .replace("SCRIPT", &format!("--stage-out /locus/par {out} {script}"));
    let done = h.script("exec", &["login", "timeout", "240", "sh", "-c", &cmd]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let records = record::load(Path::new(&run_dir)).unwrap();
    let sims: Vec<_> = records.iter().filter(|r| r.func == "simulate").collect();
    assert_eq!(sims.len(), 8);
    for sim in &sims {
        assert_eq!(sim.job.len(), 2, "{sim:?}");
        for (r, part) in sim.job.iter().enumerate() {
            // What the rank wrote: where it ran (the host's own name) and
            // the node of the worker it stood for.
            let made = &sim.declared[r];
            let local = made.replacen("/locus/par", &out, 1);
            let text = std::fs::read_to_string(&local).unwrap();
            assert!(
                text.starts_with(&format!("rank {r} of 2 on {0} node {0}:", part.node)),
                "{made}: {text:.80} (job {:?})",
                sim.job
            );
        }
    }
    let analyses: Vec<_> = records.iter().filter(|r| r.func == "analyze").collect();
    assert_eq!(analyses.len(), 128);
    let local = analyses.iter().filter(|r| r.remote_bytes == 0).count();
    assert!(
        local >= 96,
        "{local} of 128 analyses read only local inputs"
    );
    common::eventually("no rank of a job left", || processes_with(&exe).is_empty());
}

/// The node-local stores of the cluster in `fs`, as its cluster file says.
fn stores_of(fs: &str) -> Vec<PathBuf> {
    let spec = locus_fs::ClusterSpec::load(Path::new(fs)).unwrap();
    spec.nodes.into_iter().map(|n| n.dir).collect()
}

fn all_gone(stores: &[PathBuf]) -> bool {
    stores.iter().all(|s| !s.exists())
}

/// How the ranks of the run in `run_dir` met, as its `run.json` says.
fn wireup(run_dir: &str) -> String {
    let run = std::fs::read(Path::new(run_dir).join("run.json")).unwrap();
    let run: serde_json::Value = serde_json::from_slice(&run).unwrap();
    run["wireup"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_cluster_deployed_by_mpiexec_across_hosts_runs_workflows_where_the_data_is() {
    if !is_root() {
        eprintln!("skipped: making hosts needs root");
        return;
    }
    let h = Hosts::up();
    let (fs, store, mnt) = (h.path("fs"), h.path("local"), h.path("mnt"));
    std::fs::create_dir(&mnt).unwrap();
    // One daemon per host, started by the launcher, formed in fs/, each
    // mounting the cluster at the same path on its host.
    let up = ok(&h.locus(
        "login",
        &[
            "fs",
            "up",
            "--dir",
            &fs,
            "--launcher",
            "mpiexec",
            "--launcher-program",
            "mpiexec.mpich",
            "--nodes",
            "3",
            "--store",
            &store,
            "--mount",
            &mnt,
            "--launcher-arg=-launcher",
            "--launcher-arg=ssh",
            &format!("--launcher-arg=-launcher-exec={}", h.path("ssh")),
            "--launcher-arg=-hosts",
            "--launcher-arg=node0,node1,node2",
        ],
    ));
    for (k, host) in ["node0", "node1", "node2"].iter().enumerate() {
        assert!(
            up.contains(&format!("node {k} {host} 10.77.0.{}:", k + 2)),
            "{up}"
        );
    }

    // Stage in from one host: the files spread over all three.
    let inputs = h.dir.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    for i in 0..30 {
        std::fs::write(inputs.join(format!("{i}.txt")), format!("input {i}\n")).unwrap();
    }
    let dir_arg = ["--dir", fs.as_str()];
    let mut put = vec!["fs", "put", "-r", "--placement", "round-robin"];
    put.extend_from_slice(&dir_arg);
    put.extend_from_slice(&[inputs.to_str().unwrap(), "/locus/in"]);
    assert!(ok(&h.locus("node1", &put)).starts_with("30 files"));
    let mut ls = vec!["fs", "ls", "--long"];
    ls.extend_from_slice(&dir_arg);
    ls.push("/in");
    let listing = ok(&h.locus("node0", &ls));
    for k in 0..3 {
        assert_eq!(listing.matches(&format!("[{k}]")).count(), 10, "{listing}");
    }

    // From the login host, which has no daemon: a client with no store of
    // its own (its bytes go to and come from the nodes).
    let note = h.dir.path().join("note.txt");
    std::fs::write(&note, "written from the login host\n").unwrap();
    let mut put_one = vec!["fs", "put"];
    put_one.extend_from_slice(&dir_arg);
    put_one.extend_from_slice(&[note.to_str().unwrap(), "/locus/note.txt"]);
    ok(&h.locus("login", &put_one));
    for host in ["login", "node2"] {
        let mut cat = vec!["fs", "cat"];
        cat.extend_from_slice(&dir_arg);
        cat.push("/locus/note.txt");
        assert_eq!(ok(&h.locus(host, &cat)), "written from the login host\n");
    }
    // Each node's host has the cluster mounted at the same path (the login
    // host, with no daemon, has not).
    let mounted = |host: &str| {
        let table = h.script("exec", &[host, "cat", "/proc/self/mountinfo"]);
        String::from_utf8_lossy(&table.stdout)
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(mnt.as_str()))
    };
    let note_through = format!("{mnt}/note.txt");
    for host in ["node0", "node1", "node2"] {
        common::eventually("every host mounted", || mounted(host));
        let read = h.script("exec", &[host, "cat", &note_through]);
        assert_eq!(ok(&read), "written from the login host\n", "{host}");
    }
    assert!(!mounted("login"));

    // A workflow whose ranks mpiexec starts on the hosts: every task runs
    // on the host holding its input.
    let run = h.path("run");
    let script = workspace().join("examples/locality-loop.swift");
    let out = ok(&h.mpiexec(
        "node0,node1,node2",
        "2",
        "6",
        &[
            "run",
            "--run-dir",
            &run,
            "--fs",
            &fs,
            script.to_str().unwrap(),
        ],
    ));
    assert!(
        out.contains("trace: counted,16,files where they live"),
        "{out}"
    );
    assert_eq!(wireup(&run), "pmi", "ranks met through mpiexec's PMI");
    let records = record::load(Path::new(&run)).unwrap();
    let made: std::collections::BTreeSet<&str> = records
        .iter()
        .filter(|r| r.func == "make_input")
        .map(|r| r.node.as_str())
        .collect();
    assert_eq!(made.len(), 3, "inputs made on every host");
    let apps: Vec<_> = records.iter().filter(|r| r.func == "application").collect();
    assert_eq!(apps.len(), 16);
    for r in &apps {
        assert!(r.node.starts_with("node") && r.remote_bytes == 0, "{r:?}");
        // Each count is named after the file it counts.
        let stem = |p: &str| Path::new(p).file_stem().map(std::ffi::OsStr::to_owned);
        assert_eq!(stem(&r.inputs[0].path), stem(&r.outputs[0].path), "{r:?}");
    }

    // Ranks on a host with no daemon, told to use the file system: refused.
    let wrong = h.mpiexec(
        "login",
        "2",
        "2",
        &[
            "run",
            "--run-dir",
            &h.path("run2"),
            "--fs",
            &fs,
            script.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(!wrong.status.success());
    assert!(
        err.contains("no worker of this run is on a host of the file system"),
        "{err}"
    );

    // The same started by `locus run --launcher` from the login host, with
    // a file system of its own on the hosts (one daemon each, purged at the
    // end) and its results staged out when it succeeds.
    let (run3, results3) = (h.path("run3"), h.path("results3"));
    let out = ok(&h.locus(
        "login",
        &[
            "run",
            "--launcher",
            "mpiexec",
            "--launcher-program",
            "mpiexec.mpich",
            "--launcher-arg=-launcher",
            "--launcher-arg=ssh",
            &format!("--launcher-arg=-launcher-exec={}", h.path("ssh")),
            "--launcher-arg=-hosts",
            "--launcher-arg=node0,node1,node2",
            "-n",
            "6",
            "--nodes",
            "3",
            "--run-dir",
            &run3,
            "--stage-out",
            "/locus/output",
            &results3,
            script.to_str().unwrap(),
        ],
    ));
    assert!(
        out.contains("trace: counted,16,files where they live"),
        "{out}"
    );
    assert_eq!(std::fs::read_dir(&results3).unwrap().count(), 16);
    let records = record::load(Path::new(&run3)).unwrap();
    let apps: Vec<_> = records.iter().filter(|r| r.func == "application").collect();
    let hosts: std::collections::BTreeSet<&str> = apps.iter().map(|r| r.node.as_str()).collect();
    assert_eq!((apps.len(), hosts.len()), (16, 3), "{hosts:?}");
    assert!(apps.iter().all(|r| r.remote_bytes == 0));
    assert!(
        processes_with(&run3).is_empty(),
        "ranks, daemons or launcher left running"
    );

    // A worker killed mid-run under mpiexec, which would end the job.
    let mpiexec_run = format!(
        "{} run --launcher mpiexec --launcher-program mpiexec.mpich \
         --launcher-arg=-launcher --launcher-arg=ssh --launcher-arg=-launcher-exec={} \
         --launcher-arg=-hosts --launcher-arg=node0,node1,node2 -n 6 --nodes 3 \
         --run-dir RUN_DIR SCRIPT",
        env!("CARGO_BIN_EXE_locus"),
        h.path("ssh")
    );
    a_worker_killed_under_a_launcher(&h, "killed", &mpiexec_run, "mpiexec.mpich");
    // Parallel tasks: each job started by Hydra on the reserved hosts.
    parallel_tasks_run_on_the_reserved_hosts(&h, "par", &mpiexec_run);
    // A second server killed: its values are nowhere else, so the run ends
    // (and every rank with it), saying why.
    let two_servers = mpiexec_run.replace("-n 6", "-n 6 --servers 2");
    let (done, _, _) = kill_a_rank_mid_run(&h, "server", &two_servers, 5);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success());
    assert!(
        stderr.contains("server rank 5 on node")
            && stderr.contains("the run cannot go on without the values and tasks it held"),
        "{stderr}"
    );

    // Stage out from another host, then tear down over the network.
    let results = h.path("results");
    let mut get = vec!["fs", "get", "-r"];
    get.extend_from_slice(&dir_arg);
    get.extend_from_slice(&["/locus/output", &results]);
    assert!(ok(&h.locus("node2", &get)).starts_with("16 files"));
    let mut down = vec!["fs", "down", "--purge"];
    down.extend_from_slice(&dir_arg);
    assert!(ok(&h.locus("login", &down)).contains("3 daemon(s) stopped"));
    for _ in 0..200 {
        if processes_with(&fs).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for host in ["node0", "node1", "node2"] {
        assert!(!mounted(host), "{host}: unmounted with its daemon");
    }
    assert!(
        processes_with(&fs).is_empty(),
        "daemons or launcher left running"
    );
    assert_eq!(
        std::fs::read_dir(&store).unwrap().count(),
        0,
        "node-local stores purged"
    );

    // One host's daemon killed: the launcher keeps the others serving.
    let fs2 = h.path("fs2");
    let launcher_exec = format!("--launcher-arg=-launcher-exec={}", h.path("ssh"));
    let mut up = vec!["fs", "up", "--dir", &fs2, "--launcher", "mpiexec"];
    up.extend_from_slice(&[
        "--launcher-program",
        "mpiexec.mpich",
        "--nodes",
        "3",
        "--launcher-arg=-launcher",
        "--launcher-arg=ssh",
        &launcher_exec,
        "--launcher-arg=-hosts",
        "--launcher-arg=node0,node1,node2",
    ]);
    ok(&h.locus("login", &up));
    kill_launched(&format!("{fs2}/serve.json"), 1);
    let status = |host: &str| h.locus(host, &["fs", "status", "--dir", &fs2]);
    common::eventually("node1's daemon seen down", || {
        String::from_utf8_lossy(&status("node0").stderr).contains("1 of 3 daemons down")
    });
    let table = String::from_utf8_lossy(&status("node2").stdout).into_owned();
    let states: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(4))
        .collect();
    assert_eq!(states, ["up", "down", "up"], "{table}");
    // The file system was the launch's: down removes every store, the
    // killed daemon's through the launcher on its host.
    let stores = stores_of(&fs2);
    let down = ok(&h.locus("login", &["fs", "down", "--dir", &fs2]));
    assert!(down.contains("2 daemon(s) stopped"), "{down}");
    assert!(down.contains("stores removed"), "{down}");
    assert!(all_gone(&stores), "{stores:?}");
    assert!(!Path::new(&fs2).exists());
    common::eventually("the launcher and the other daemons gone", || {
        processes_with(&fs2).is_empty()
    });
}

#[test]
fn the_slurm_batch_example_deploys_runs_stages_and_tears_down() {
    if !is_root() {
        eprintln!("skipped: making hosts needs root");
        return;
    }
    let h = Hosts::up();
    let slurm = Command::new(workspace().join("scripts/slurm.sh"))
        .arg("up")
        .arg(h.dir.path())
        .output()
        .unwrap();
    assert!(
        slurm.status.success(),
        "{}",
        String::from_utf8_lossy(&slurm.stderr)
    );
    let submit = h.dir.path().join("submit");
    std::fs::create_dir_all(submit.join("inputs")).unwrap();
    for i in 0..12 {
        std::fs::write(submit.join(format!("inputs/{i}.txt")), "x".repeat(i + 1)).unwrap();
    }
    // The workflow named relative to the submit directory, as a user would.
    std::fs::create_dir(submit.join("wf")).unwrap();
    std::fs::copy(
        workspace().join("examples/count-inputs.swift"),
        submit.join("wf/count.swift"),
    )
    .unwrap();
    let job_out = submit.join("job.out");
    let sbatch = format!(
        "cd {} && SLURM_CONF={} LOCUS={} sbatch --wait --output={} {} wf/count.swift",
        submit.display(),
        h.path("slurm.conf"),
        env!("CARGO_BIN_EXE_locus"),
        job_out.display(),
        workspace().join("examples/slurm/locality.sbatch").display(),
    );
    let out = h.script("exec", &["login", "timeout", "120", "sh", "-c", &sbatch]);
    let log = std::fs::read_to_string(&job_out).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        log.contains("3 nodes up") && log.contains("12 files"),
        "{log}"
    );
    assert!(
        log.contains("trace: counted,12,inputs where they live"),
        "{log}"
    );
    assert!(log.contains("3 daemon(s) stopped"), "{log}");
    // A log file, not a terminal: plain text.
    assert!(!log.contains('\u{1b}'), "{log}");
    let work = std::fs::read_dir(&submit)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("locus-")
        })
        .expect("the job's work directory");
    assert_eq!(
        wireup(work.join("run").to_str().unwrap()),
        "pmi",
        "ranks met through Slurm's PMI"
    );
    let results = work.join("results");
    assert!(
        log.contains(&format!("results in {}", results.display())),
        "{log}"
    );
    let records = record::load(&work.join("run")).unwrap();
    let apps: Vec<_> = records.iter().filter(|r| r.func == "count").collect();
    assert_eq!(apps.len(), 12);
    let hosts: std::collections::BTreeSet<&str> = apps.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    // Each input read where it was staged.
    assert!(apps.iter().all(|r| r.remote_bytes == 0));
    assert_eq!(std::fs::read_dir(&results).unwrap().count(), 12);
    for i in 0..12 {
        let count = std::fs::read_to_string(results.join(format!("{i}.txt.count"))).unwrap();
        assert_eq!(count.trim(), (i + 1).to_string());
    }
    assert!(
        processes_with(work.to_str().unwrap()).is_empty(),
        "left running after the job"
    );

    // A worker killed mid-run in an allocation: srun reports it, the run
    // goes on without it.
    let srun_run = format!(
        "SLURM_CONF={} salloc --nodes=3 --ntasks-per-node=2 {} run --launcher srun -n 6 \
         --run-dir RUN_DIR SCRIPT",
        h.path("slurm.conf"),
        env!("CARGO_BIN_EXE_locus"),
    );
    a_worker_killed_under_a_launcher(&h, "killed", &srun_run, "srun");
    // Parallel tasks: each job a step of the allocation on the reserved hosts.
    parallel_tasks_run_on_the_reserved_hosts(&h, "par", &srun_run);
    // Stopped as a job's end or `scancel` stops it.
    a_cancelled_run_can_be_read(&h, "cancelled", &srun_run);
    stores_killed_daemons_leave_are_removed(&h);
}

/// Daemons killed with SIGKILL (as a job's end does to what ignores
/// SIGTERM past KillWait) cannot remove their stores; what does: `fs down
/// --purge` in the job (through srun), the next daemon started on the
/// host once the job is gone, an epilog's `fs purge --job ID`.
fn stores_killed_daemons_leave_are_removed(h: &Hosts) {
    let locus = env!("CARGO_BIN_EXE_locus");
    let in_job = |script: &str| {
        let cmd = format!(
            "SLURM_CONF={} salloc --nodes=3 sh -c '{script}'",
            h.path("slurm.conf")
        );
        let out = h.script("exec", &["login", "timeout", "60", "sh", "-c", &cmd]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // `[.]` keeps the pattern from matching the shell running it.
    let up_and_killed = |fs: &str| {
        format!("{locus} fs up --launcher srun --dir {fs} && pkill -KILL -f \"{fs}/serve[.]json\"")
    };
    let (a, b, c, d) = (h.path("fsA"), h.path("fsB"), h.path("fsC"), h.path("fsD"));

    // In the job: through srun on each host.
    let out = in_job(&format!(
        "{} && sleep 0.5 && {locus} fs down --dir {a} --purge",
        up_and_killed(&a)
    ));
    assert!(
        out.contains("0 daemon(s) stopped") && out.contains("stores removed"),
        "{out}"
    );
    assert!(!Path::new(&a).exists());

    // After the job: not reachable, so named, and the cluster kept.
    in_job(&up_and_killed(&b));
    let stores_b = stores_of(&b);
    assert!(stores_b.iter().all(|s| s.exists()));
    let down = h.locus("login", &["fs", "down", "--dir", &b, "--purge"]);
    let err = String::from_utf8_lossy(&down.stderr);
    assert!(!down.status.success(), "{err}");
    assert!(err.contains("3 store(s) not removed"), "{err}");
    for s in &stores_b {
        assert!(err.contains(s.to_str().unwrap()), "{err}");
    }
    assert!(Path::new(&b).join("cluster.json").exists());
    // Nor restarted: its job has ended, as Slurm says.
    let conf = format!("SLURM_CONF={}", h.path("slurm.conf"));
    let up = h.script(
        "exec",
        &["login", "env", &conf, locus, "fs", "up", "--dir", &b],
    );
    let err = String::from_utf8_lossy(&up.stderr);
    assert!(
        !up.status.success() && err.contains("which has ended"),
        "{err}"
    );

    // The next daemons on those hosts remove them (their job is gone); a
    // job's file system without --keep goes with a plain `fs down`.
    let out = in_job(&format!(
        "{locus} fs up --launcher srun --dir {c} && {locus} fs down --dir {c}"
    ));
    assert!(
        out.contains("3 daemon(s) stopped") && out.contains("stores removed"),
        "{out}"
    );
    assert!(all_gone(&stores_b), "{stores_b:?}");
    assert!(!Path::new(&c).exists());
    // And the cluster directory they noted it in can now be removed.
    ok(&h.locus("login", &["fs", "down", "--dir", &b, "--purge"]));
    assert!(!Path::new(&b).exists());

    // A kept file system across allocations: started again through srun on
    // its own hosts; refused where the allocation lacks one of them.
    let e = h.path("fsE");
    let note = h.path("note.txt");
    std::fs::write(&note, "kept across jobs\n").unwrap();
    in_job(&format!(
        "{locus} fs up --launcher srun --keep --dir {e} && \
         {locus} fs put --dir {e} {note} /note.txt && {locus} fs down --dir {e}"
    ));
    let stores_e = stores_of(&e);
    assert!(stores_e.iter().all(|s| s.exists()), "kept: {stores_e:?}");
    let out = in_job(&format!(
        "{locus} fs up --dir {e} --launcher srun && {locus} fs cat --dir {e} /note.txt && \
         {locus} fs down --dir {e}"
    ));
    assert!(
        out.contains("3 daemon(s) restarted on their hosts"),
        "{out}"
    );
    assert!(out.contains("kept across jobs"), "{out}");
    let two = format!(
        "SLURM_CONF={} salloc --nodes=2 {locus} fs up --dir {e} --launcher srun",
        h.path("slurm.conf")
    );
    let refused = h.script("exec", &["login", "timeout", "60", "sh", "-c", &two]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(
        err.contains("which this launcher cannot reach") && err.contains("do not move"),
        "{err}"
    );
    assert!(stores_e.iter().all(|s| s.exists()), "{stores_e:?}");
    in_job(&format!("{locus} fs down --dir {e} --purge"));
    assert!(all_gone(&stores_e), "{stores_e:?}");

    // An epilog's purge of the job.
    let job = in_job(&format!("{} && echo job=$SLURM_JOB_ID", up_and_killed(&d)));
    let job = job.split("job=").nth(1).unwrap().trim();
    let stores_d = stores_of(&d);
    assert!(stores_d.iter().all(|s| s.exists()));
    // A SIGKILLed daemon serves its store until its parent has reaped it
    // (its process is there till then): slow under load.
    common::eventually("the killed daemons reaped", || {
        stores_d.iter().all(|s| !locus_fs::store_served(s))
    });
    let purged = ok(&h.locus("node0", &["fs", "purge", "--job", job]));
    // The hosts here share one /tmp: node0's purge sees all three.
    assert!(purged.contains("3 store(s) removed"), "{purged}");
    assert!(all_gone(&stores_d), "{stores_d:?}");
}
