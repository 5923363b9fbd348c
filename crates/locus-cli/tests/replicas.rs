//! Replicas (`--replicas R`): a daemon killed with `kill -9` loses no name,
//! no record and no file's bytes, the cluster keeps serving reads and
//! writes, and the daemon that comes back serves what it missed; a run
//! whose file system keeps two copies completes when one node's daemon is
//! lost mid-run.

mod common;

use common::{locus, names, ok, rt, FsDown, Run, TestCluster};
use locus_proto::Errno;
use locus_runtime::record;
use std::path::Path;
use std::time::Duration;

const FILES: u32 = 40;

fn content(i: u32) -> Vec<u8> {
    format!("file {i}\n").repeat(i as usize + 1).into_bytes()
}

#[test]
fn losing_one_daemon_of_two_copies_loses_nothing_and_it_catches_up_when_back() {
    let c = TestCluster::up_with(4, &["--replicas", "2"]);
    let rt = rt();
    rt.block_on(async {
        c.client(0).mkdir("/d").await.unwrap();
        for i in 0..FILES {
            let client = c.client(i % 4);
            client.put(&format!("/d/f{i}"), &content(i)).await.unwrap();
        }
        // Every file's bytes are on two nodes: its writer's and the next.
        for i in 0..FILES {
            let holders = c.client(0).locate(&format!("/d/f{i}")).await.unwrap();
            assert_eq!(holders, vec![i % 4, (i % 4 + 1) % 4], "/d/f{i}");
        }
    });
    c.signal(2, libc::SIGKILL);
    rt.block_on(async {
        for reader in [0, 1, 3] {
            let client = c.client(reader);
            let names = client.readdir("/d").await.unwrap();
            assert_eq!(names.len(), FILES as usize, "listing through node {reader}");
            for i in 0..FILES {
                let got = client.get(&format!("/d/f{i}")).await.unwrap();
                assert_eq!(got, content(i), "/d/f{i} read on node {reader}");
            }
        }
        // Writing goes on: new files, a rewrite, a rename and an unlink.
        let client = c.client(1);
        for i in FILES..FILES + 10 {
            client.put(&format!("/d/f{i}"), &content(i)).await.unwrap();
        }
        client
            .put("/d/f2", b"rewritten while node 2 is down")
            .await
            .unwrap();
        client.rename("/d/f3", "/d/moved").await.unwrap();
        client.unlink("/d/f5").await.unwrap();
        // The writer's node 1 skips the lost node 2 for the copy.
        assert_eq!(client.locate("/d/f41").await.unwrap(), vec![1, 3]);
    });
    c.restart();
    rt.block_on(async {
        // Back, node 2 serves the names and records it owns as they are
        // now, including what changed while it was down.
        let client = c.client(2);
        let names = names(&client, "/d").await;
        assert_eq!(names.len(), FILES as usize + 10 - 1);
        assert!(names.contains(&"moved".to_string()) && !names.contains(&"f3".to_string()));
        assert_eq!(
            client.stat("/d/f5").await.unwrap_err().code,
            Errno::ENOENT,
            "an unlinked file stays unlinked"
        );
        assert_eq!(
            client.get("/d/f2").await.unwrap(),
            b"rewritten while node 2 is down"
        );
        assert_eq!(client.get("/d/moved").await.unwrap(), content(3));
        for i in (0..FILES + 10).filter(|i| ![2, 3, 5].contains(i)) {
            let got = client.get(&format!("/d/f{i}")).await.unwrap();
            assert_eq!(got, content(i), "/d/f{i} read on node 2 after its restart");
        }
    });
}

#[test]
fn without_replicas_the_lost_daemon_is_named() {
    let c = TestCluster::up(2);
    let rt = rt();
    let owned_by_1 = (0..100)
        .map(|i| format!("/g{i}"))
        .find(|p| c.client(0).owner(p) == 1)
        .unwrap();
    rt.block_on(async { c.client(0).put(&owned_by_1, b"x").await.unwrap() });
    c.signal(1, libc::SIGKILL);
    let err = rt.block_on(async { c.client(0).stat(&owned_by_1).await.unwrap_err() });
    assert_eq!(err.code, Errno::EIO);
    assert!(err.to_string().contains("node 1"), "{err}");
}

/// Kills node `node`'s daemon of the run in `run_dir` (`kill -9`) once
/// its records satisfy `when`; returns how many tasks were recorded then.
fn kill_node_when(
    run_dir: &Path,
    node: u32,
    when: impl Fn(&[record::TaskRecord]) -> bool + Send + 'static,
) -> std::thread::JoinHandle<usize> {
    let run_dir = run_dir.to_path_buf();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            let done = record::load(&run_dir).unwrap_or_default();
            if when(&done) {
                let pid_file = run_dir.join(format!("fs/node-{node}/daemon.pid"));
                let pid: i32 = std::fs::read_to_string(pid_file)
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                // SAFETY: a plain signal to a daemon this test's run started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return done.len();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the run's records never showed the moment to kill node {node}");
    })
}

/// Kills node 2's daemon once `after` tasks are recorded.
fn kill_node_2_after(run_dir: &Path, after: usize) -> std::thread::JoinHandle<usize> {
    kill_node_when(run_dir, 2, move |done| done.len() >= after)
}

/// Forty tasks each writing a file, each file read by a task of its own,
/// and one task joining them, on 4 nodes (two workers each) whose file
/// system keeps `replicas` copies; node 2's daemon is killed with `kill -9`
/// once 8 tasks are done (and node 3's, with `then_node_3`, once files
/// are being made again). The run must complete with the result a run
/// without the failure gives. Returns the run and the run's `make` records
/// that succeeded.
fn run_losing_node_2(replicas: &str, then_node_3: bool) -> (Run, Vec<record::TaskRecord>) {
    // Every `make` output's record is kept by node 2 and its directory's
    // names by another: a file made on node 2 loses its bytes and its
    // record, and keeps its name.
    let nodes = ["node0", "node1", "node2", "node3"];
    let ring = locus_fs::Ring::new(
        nodes.iter().enumerate().map(|(i, n)| (i as u32, *n)),
        locus_fs::DEFAULT_VNODES,
    );
    let dir = (0..)
        .map(|k| format!("/made{k}"))
        .find(|d| ring.owner(d) != 2)
        .unwrap();
    let names: Vec<String> = (1..=40)
        .map(|i| {
            (0..)
                .map(|k| format!("{dir}/p{i}-{k}.txt"))
                .find(|p| ring.owner(p) == 2)
                .unwrap()
        })
        .collect();
    let names = names.join("\", \"");
    let script = format!(
        "import string;\n\
        app (file o) make(int i) {{ \"sh\" \"-c\" (\"sleep 0.2; seq \" + toString(i) + \" > $0\") o }}\n\
        app (file o) count(file p) {{ \"sh\" \"-c\" \"sleep 0.1; wc -l < $1 > $0\" o p }}\n\
        app (file o) join(file inputs[]) {{ \"sh\" \"-c\" \"cat \\\"$@\\\" | sort -n | md5sum > $0\" o inputs }}\n\
        string names[] = [\"{names}\"];\n\
        file parts[];\n\
        foreach i in [1:40] {{\n\
          file p<\"/locus\" + names[i - 1]> = make(i);\n\
          parts[i] = p;\n\
          file q<\"/locus/counted/q\" + toString(i) + \".txt\"> = count(p);\n\
        }}\n\
        file all<\"/locus/out/all.txt\"> = join(parts);\n"
    );
    let script = script.as_str();
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let fs_dir = run_dir.join("fs");
    let killer = kill_node_2_after(&run_dir, 8);
    // A task that found its input lost (the only failures of this run)
    // has its producer run again at once: node 3 is lost while it does.
    let second = then_node_3.then(|| {
        kill_node_when(&run_dir, 3, |done| {
            done.iter().any(|r| r.remade || r.error.is_some())
        })
    });
    let run = Run::in_dir(
        dir,
        &[
            "-n",
            "9",
            "--nodes",
            "4",
            "--replicas",
            replicas,
            "--keep-fs",
        ],
        script,
    );
    // Dropped before `run`, which holds the directory with the daemons'
    // pid files: the file system kept for the checks stops if any fails.
    let _down = FsDown(fs_dir.clone());
    assert!(
        run.out.status.success(),
        "run failed ({}): {}{}",
        run.out.status,
        String::from_utf8_lossy(&run.out.stdout),
        String::from_utf8_lossy(&run.out.stderr)
    );
    let done_before = killer.join().unwrap();
    assert!(done_before < 41, "the daemon was killed after the run");
    if let Some(second) = second {
        let done_before = second.join().unwrap();
        assert!(done_before < 81, "node 3's daemon was killed after the run");
    }
    let made: Vec<_> = run
        .records("make")
        .into_iter()
        .filter(|r| r.error.is_none())
        .collect();
    let mut keys: Vec<&str> = made.iter().map(|r| r.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 40, "every task succeeded once at least");
    // The same result as the same lines made without a failure.
    let expected: String = (1..=40)
        .flat_map(|i| 1..=i)
        .map(|n: u32| n.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let mut sorted: Vec<u32> = expected.lines().map(|l| l.parse().unwrap()).collect();
    sorted.sort_unstable();
    let text: String = sorted.iter().map(|n| format!("{n}\n")).collect();
    let md5 = std::process::Command::new("md5sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    if replicas == "1" {
        // Without copies, a client outside the run reads node 2's names
        // once it is back: it takes what was made in its place meanwhile.
        let out = locus(&["fs", "up", "--dir", fs_dir.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let client = locus_fs::Client::open(
        &fs_dir,
        locus_fs::ClientOptions {
            node: 0,
            ..Default::default()
        },
    )
    .unwrap();
    let rt = rt();
    // Every output of the run is there after it, wherever its copy was.
    for (i, name) in (1..=40u32).zip(names.split("\", \"")) {
        let got = rt.block_on(client.get(name)).unwrap();
        let lines: Vec<String> = (1..=i).map(|n| n.to_string()).collect();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            lines.join("\n") + "\n",
            "{name}"
        );
        let counted = rt
            .block_on(client.get(&format!("/counted/q{i}.txt")))
            .unwrap();
        assert_eq!(
            String::from_utf8(counted).unwrap(),
            format!("{i}\n"),
            "q{i}"
        );
    }
    let all = rt.block_on(client.get("/out/all.txt")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&all),
        String::from_utf8_lossy(&md5.stdout)
    );
    (run, made)
}

#[test]
fn a_run_with_two_copies_completes_when_a_node_daemon_is_killed_mid_run() {
    let (_, made) = run_losing_node_2("2", false);
    assert!(made.iter().all(|r| !r.remade), "nothing was lost");
}

#[test]
fn a_run_without_copies_makes_the_lost_files_again_when_a_node_daemon_is_killed() {
    let (run, made) = run_losing_node_2("1", false);
    let remade = made.iter().filter(|r| r.remade).count();
    assert!(remade > 0, "files lost with node 2 were made again");
    // The report says what was lost and what was made again.
    let report = ok(&locus(&["report", run.run_dir().to_str().unwrap()]));
    assert!(report.contains("lost node: node2: "), "{report}");
    assert!(
        report.contains(&format!("{remade} tasks made again the files lost")),
        "{report}"
    );
    assert!(report.contains("(0 failed,"), "{report}");
}

#[test]
fn a_run_without_copies_survives_losing_a_second_node_while_it_makes_files_again() {
    let (run, made) = run_losing_node_2("1", true);
    assert!(made.iter().any(|r| r.remade));
    let report = ok(&locus(&["report", run.run_dir().to_str().unwrap()]));
    assert!(report.contains("lost node: node2: "), "{report}");
    assert!(report.contains("lost node: node3: "), "{report}");
    assert!(report.contains("(0 failed,"), "{report}");
}

#[test]
fn a_producer_failing_when_made_again_fails_the_run_at_its_own_call() {
    // `make` fails when run a second time (its marker is left): the lost
    // files cannot be made again, and the error names `make`'s call.
    let marks = tempfile::tempdir().unwrap();
    let m = marks.path().display();
    let script = format!(
        "import string;\n\
         app (file o) make(int i) {{ \"sh\" \"-c\" (\"sleep 0.2; test -e {m}/\" + toString(i) + \" && exit 3; touch {m}/\" + toString(i) + \"; seq \" + toString(i) + \" > $0\") o }}\n\
         app (file o) count(file p) {{ \"sh\" \"-c\" \"sleep 0.3; wc -l < $1 > $0\" o p }}\n\
         foreach i in [1:40] {{\n\
           file p<\"/locus/out/p\" + toString(i) + \".txt\"> = make(i);\n\
           file q<\"/locus/counted/q\" + toString(i) + \".txt\"> = count(p);\n\
         }}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let killer = kill_node_2_after(&dir.path().join("run"), 8);
    let run = Run::in_dir(dir, &["-n", "9", "--nodes", "4"], &script);
    killer.join().unwrap();
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("t.swift:5:") && last.contains("making lost files again: app 'make'"),
        "{err}"
    );
}

#[test]
fn a_run_fails_naming_every_lost_file_that_no_task_of_it_made() {
    let c = TestCluster::up(3);
    rt().block_on(async {
        // Two inputs whose only copy is on node 1, one on node 0.
        let one = c.client(1);
        one.put("/in/a.txt", b"a\n").await.unwrap();
        one.put("/in/b.txt", b"b\n").await.unwrap();
        c.client(0).put("/in/c.txt", b"c\n").await.unwrap();
    });
    c.signal(1, libc::SIGKILL);
    let script = "app (file o) cat3(file a, file b, file c) { \"sh\" \"-c\" \"cat $1 $2 $3 > $0\" o a b c }\n\
        file o<\"/locus/out.txt\"> = cat3(input(\"/locus/in/a.txt\"), input(\"/locus/in/b.txt\"), input(\"/locus/in/c.txt\"));\n";
    let run = Run::new(&["-n", "2", "--retries", "0", "--fs", c.path_str()], script);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        err.contains(
            "lost (their node gone, or every copy found bad), and made by no task of this run: /locus/in/a.txt, /locus/in/b.txt\n"
        ),
        "{err}"
    );
}

#[test]
fn a_name_lost_with_its_daemon_is_given_back_from_a_copy_that_survived() {
    let c = TestCluster::up(3);
    let rt = rt();
    let writer = c.client(0);
    let owned_by_1 = |prefix: &str| {
        (0..100)
            .map(|i| format!("/{prefix}{i}"))
            .find(|p| writer.owner(p) == 1)
            .unwrap()
    };
    // Named on node 1: one held on node 0, one held on node 1 itself.
    let (kept, gone) = (owned_by_1("kept"), owned_by_1("gone"));
    let (kept_rec, gone_rec) = rt.block_on(async {
        let a = writer.put(&kept, b"bytes on node 0").await.unwrap();
        let b = c.client(1).put(&gone, b"bytes on node 1").await.unwrap();
        (a, b)
    });
    c.signal(1, libc::SIGKILL);
    let plain = c.client(2);
    let taking_over = c.client_with(locus_fs::ClientOptions {
        node: 2,
        take_over: true,
        ..Default::default()
    });
    rt.block_on(async {
        // A client that does not take over names its owner, as before.
        let e = plain.stat(&kept).await.unwrap_err();
        assert_eq!(e.code, Errno::EIO, "{e}");
        let e = taking_over.stat(&kept).await.unwrap_err();
        assert!(locus_fs::Client::owner_lost(&e), "{e}");
        assert!(taking_over.lost(&kept).await.unwrap());
        assert!(taking_over.reinstate(&kept, &kept_rec).await.unwrap());
        assert_eq!(taking_over.get(&kept).await.unwrap(), b"bytes on node 0");
        assert!(!taking_over.lost(&kept).await.unwrap());
        // Its bytes went with node 1: nothing to give back.
        assert!(!taking_over.reinstate(&gone, &gone_rec).await.unwrap());
        assert!(taking_over.lost(&gone).await.unwrap());
    });
    // Named on node 0, held only on node 1: `locate` says it is lost.
    let held_by_1 = (0..100)
        .map(|i| format!("/held{i}"))
        .find(|p| writer.owner(p) == 0)
        .unwrap();
    c.restart();
    rt.block_on(c.client(1).put(&held_by_1, b"x")).unwrap();
    c.signal(1, libc::SIGKILL);
    let out = c.fs(&["locate", &held_by_1]);
    assert!(!out.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stdout.starts_with("1 node1 ") && stdout.trim_end().ends_with(" unreachable"),
        "{stdout}"
    );
    assert!(
        stderr.contains("lost: every node holding it is unreachable"),
        "{stderr}"
    );
}

#[test]
fn a_file_written_in_pieces_reaches_its_replica_as_it_is_written() {
    use std::io::{Seek, SeekFrom, Write};
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let piece = |k: u8| vec![b'a' + k; 1 << 20];
    let whole: Vec<u8> = (0..12).flat_map(piece).collect();
    rt.block_on(async {
        let writer = c.client(0);
        let mut w = writer.create("/big").await.unwrap();
        for k in 0..12 {
            w.write_all(&piece(k)).unwrap();
        }
        // The copy is being made in node 1's store before `close`.
        let copying = || {
            std::fs::read_dir(c.node_dir(1).join("tmp"))
                .unwrap()
                .count()
        };
        assert_eq!(copying(), 1);
        let rec = w.close().await.unwrap();
        assert_eq!(copying(), 0);
        assert_eq!((rec.size, rec.holders.clone()), (12 << 20, vec![0, 1]));
        assert_eq!(
            std::fs::read(c.stored(1, "/big", rec.stamp)).unwrap(),
            whole
        );
        // A writer that also writes at an offset: the copy is made at close.
        let mut w = writer.create("/patched").await.unwrap();
        w.write_all(&whole).unwrap();
        w.file().seek(SeekFrom::Start(5)).unwrap();
        w.file().write_all(b"PATCH").unwrap();
        let rec = w.close().await.unwrap();
        let mut want = whole.clone();
        want[5..10].copy_from_slice(b"PATCH");
        assert_eq!(rec.holders, vec![0, 1]);
        assert_eq!(
            std::fs::read(c.stored(1, "/patched", rec.stamp)).unwrap(),
            want
        );
    });
    // With node 1's daemon gone, the copy goes to node 2.
    c.signal(1, libc::SIGKILL);
    rt.block_on(async {
        let mut w = c.client(0).create("/later").await.unwrap();
        w.write_all(&whole).unwrap();
        let rec = w.close().await.unwrap();
        assert_eq!(rec.holders, vec![0, 2]);
        assert_eq!(c.client(2).get("/later").await.unwrap(), whole);
        assert_eq!(
            std::fs::read_dir(c.node_dir(1).join("tmp"))
                .unwrap()
                .count(),
            0
        );
    });
}

#[test]
fn a_directory_sets_how_many_nodes_keep_the_files_written_under_it() {
    use std::io::Write;
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    ok(&c.fs(&["mkdir", "-p", "/scratch/old"]));
    ok(&c.fs(&["mkdir", "/keep"]));
    let shown = |path: &str, set: &[&str]| {
        let mut args = vec!["replicas", path];
        args.extend(set);
        ok(&c.fs(&args)).trim().parse::<u32>().unwrap()
    };
    assert_eq!(shown("/scratch", &["1"]), 1);
    assert_eq!(shown("/keep", &["3"]), 3);
    // Subdirectories take it: those there before and those made after.
    ok(&c.fs(&["mkdir", "/scratch/new"]));
    assert_eq!(shown("/scratch/old", &[]), 1);
    assert_eq!(shown("/scratch/new", &[]), 1);
    assert_eq!(shown("/", &[]), 2);
    let host = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(host.path(), b"host bytes\n").unwrap();
    let rt = rt();
    for (dir, want) in [("/scratch/new", 1), ("/keep", 3), ("/", 2)] {
        // Every way a file is written: `locus fs put`, the library's
        // writer, a program's outputs (several, so both ways of
        // registering one are taken), and a copy in from a host file.
        let put = format!("{}/put", dir.trim_end_matches('/'));
        ok(&c.fs(&["put", host.path().to_str().unwrap(), &put]));
        let mut written = vec![put];
        rt.block_on(async {
            let client = c.client(0);
            let path = format!("{}/writer", dir.trim_end_matches('/'));
            let mut w = client.create(&path).await.unwrap();
            w.write_all(b"written\n").unwrap();
            w.close().await.unwrap();
            written.push(path);
            for i in 0..4 {
                let path = format!("{}/out{i}", dir.trim_end_matches('/'));
                let out = client.output(&path).unwrap();
                std::fs::write(&out.local, b"output\n").unwrap();
                client.commit(&out).await.unwrap();
                written.push(path);
            }
            let path = format!("{}/imported", dir.trim_end_matches('/'));
            client.import(&path, host.path()).await.unwrap();
            written.push(path);
            client.settled().await;
            for path in &written {
                let rec = client.stat(path).await.unwrap();
                assert_eq!(rec.holders.len(), want, "{path}: {:?}", rec.holders);
                assert_eq!(client.copies(&rec), want as u32, "{path}");
            }
        });
    }
    // A file keeps the copies it was made with.
    assert_eq!(shown("/keep", &["1"]), 1);
    let rec = rt.block_on(async {
        let client = c.client(1);
        client.put("/keep/put", b"again\n").await.unwrap();
        client.settled().await;
        client.stat("/keep/put").await.unwrap()
    });
    assert_eq!((rec.version, rec.holders.len()), (2, 3));
    for (args, error) in [
        (["replicas", "/keep/put", "2"], "ENOTDIR"),
        (["replicas", "/keep", "4"], "copies must be 1 to 3"),
        (["replicas", "/keep", "0"], "copies must be 1 to 3"),
        (["replicas", "/", "1"], "the root keeps the cluster's count"),
    ] {
        let out = c.fs(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(error), "{stderr}");
    }
}

#[test]
fn a_client_taking_over_a_lost_daemon_writes_its_files_again() {
    let c = TestCluster::up(4);
    let rt = rt();
    let w = c.client(0);
    // One directory kept by a daemon that stays, one by the one lost.
    let dir_owned_by = |node: u32| {
        (0..100)
            .map(|i| format!("/d{i}"))
            .find(|p| w.owner(p) == node)
            .unwrap()
    };
    let dirs = [dir_owned_by(3), dir_owned_by(2)];
    let paths: Vec<String> = dirs
        .iter()
        .flat_map(|d| (1..=24).map(move |i| format!("{d}/f{i}.txt")))
        .collect();
    rt.block_on(async {
        for p in &paths {
            w.put(p, b"first").await.unwrap();
        }
    });
    c.signal(2, libc::SIGKILL);
    let t = c.client_with(locus_fs::ClientOptions {
        node: 1,
        take_over: true,
        ..Default::default()
    });
    rt.block_on(async {
        let mut lost = 0;
        for p in &paths {
            // As a task remaking it does: its output committed again.
            if t.lost(p).await.unwrap() {
                lost += 1;
                let out = t.output(p).unwrap();
                std::fs::write(&out.local, b"again").unwrap();
                let done = t.commit_all(&[out]).await.remove(0);
                assert_eq!(done.unwrap().size, 5, "{p}");
                assert_eq!(t.get(p).await.unwrap(), b"again", "{p}");
            } else {
                assert_eq!(t.get(p).await.unwrap(), b"first", "{p}");
            }
        }
        assert!(lost > 0, "some records were lost with node 2");
        // The directory kept elsewhere names them all again.
        assert_eq!(t.readdir(&dirs[0]).await.unwrap().len(), 24);
    });
}
