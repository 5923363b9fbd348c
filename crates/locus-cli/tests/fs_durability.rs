//! Acknowledged data survives failed later operations: overwrites whose
//! commit fails, failing programs, dead writers, racing creators, a full
//! metadata disk, daemons killed while clients work, hostile peers and
//! directories made by someone else.

mod common;

use common::{
    eventually, eventually_within, is_root, locus, ok, rt, FsDown, Run, SmallDisk, TestCluster,
};
use locus_fs::{Client, ClientOptions};
use locus_proto::auth::{self, Channel, Secret};
use locus_proto::Errno;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A path whose metadata daemon is node `node`.
fn owned_by(cl: &Client, node: u32, prefix: &str) -> String {
    (0..)
        .map(|i| format!("/{prefix}{i}.txt"))
        .find(|p| cl.owner(p) == node)
        .unwrap()
}

fn wait_unlocked(rt: &tokio::runtime::Runtime, cl: &Client, path: &str) {
    eventually("the write lock's lease ends", || {
        rt.block_on(cl.stat(path)).is_ok_and(|r| r.lock.is_none())
    });
}

#[test]
fn an_overwrite_whose_commit_fails_keeps_the_acknowledged_version() {
    let c = TestCluster::up(2);
    let rt = rt();
    let writer = c.client_with(ClientOptions {
        node: 0,
        timeout: Duration::from_secs(1),
        lease: Duration::from_secs(1),
        ..ClientOptions::default()
    });
    let reader = c.client(0);
    // The metadata daemon is killed, or stalls past the writer's lease,
    // while the new version is being committed.
    for (i, fault) in [libc::SIGKILL, libc::SIGCONT].into_iter().enumerate() {
        let p = owned_by(&writer, 1, &format!("v{i}-"));
        let v1 = rt
            .block_on(writer.put(&p, b"acknowledged version one"))
            .unwrap();
        let mut w = rt.block_on(writer.open_write(&p, true)).unwrap();
        w.write_all(b"never acknowledged").unwrap();
        c.signal(1, libc::SIGSTOP);
        let e = rt.block_on(w.close()).unwrap_err();
        assert_eq!(e.code, Errno::EIO, "{e}");
        if fault == libc::SIGKILL {
            c.signal(1, libc::SIGKILL);
            c.restart();
        } else {
            std::thread::sleep(Duration::from_millis(1500));
            c.signal(1, libc::SIGCONT);
        }
        wait_unlocked(&rt, &reader, &p);
        let rec = rt.block_on(reader.stat(&p)).unwrap();
        assert_eq!(
            (rec.version, rec.stamp, rec.size),
            (v1.version, v1.stamp, v1.size)
        );
        assert_eq!(
            rt.block_on(c.client(1).get(&p)).unwrap(),
            b"acknowledged version one"
        );
        rt.block_on(reader.put(&p, b"v2")).unwrap();
        assert_eq!(rt.block_on(c.client(1).get(&p)).unwrap(), b"v2");
    }
}

#[test]
fn a_failing_program_rewriting_an_output_changes_nothing() {
    // `bad` rewrites o.txt, then fails; `peek` reads o.txt meanwhile.
    let script = r#"
app (file o) good() { "sh" "-c" "printf 'version one, acknowledged' > $0" o }
app (file o) bad(file i) { "sh" "-c" "printf 'partial' > $0; sleep 2; exit 3" o }
app (file o) peek(file i) { "sh" "-c" "sleep 0.5; cat $1 > $0" o i }
file a<"/locus/o.txt"> = good();
file b<"/locus/o.txt"> = bad(a);
file r<"/locus/r.txt"> = peek(a);
"#;
    let run = Run::new(&["-n", "3", "--nodes", "1"], script);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(err.contains("exited with code 3"), "{err}");
    let fs = run.run_dir().join("fs");
    let fs_str = fs.to_str().unwrap();
    let up = locus(&["fs", "up", "--dir", fs_str]);
    let _down = FsDown(fs.clone());
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let rt = rt();
    let cl = Client::open(&fs, ClientOptions::default()).unwrap();
    let o = rt.block_on(cl.stat("/o.txt")).unwrap();
    assert_eq!((o.version, o.size, o.lock), (1, 25, None));
    assert_eq!(
        rt.block_on(cl.get("/o.txt")).unwrap(),
        b"version one, acknowledged"
    );
    assert_eq!(
        rt.block_on(cl.get("/r.txt")).unwrap(),
        b"version one, acknowledged",
        "a reader saw bytes that were never published"
    );
    // Nothing of the failed attempt is left in the store.
    let tmp = fs.join("node-0/tmp");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// `locus fs put - PATH` from a pipe that stays open: a writer that holds
/// the lock until it is killed.
fn hanging_writer(c: &TestCluster, path: &str) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["fs", "put", "--dir", c.path_str(), "--lease-ms", "1000"])
        .args(["-", path])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"half written")
        .unwrap();
    child
}

#[test]
fn a_dead_writers_lock_ends_with_its_lease_and_its_leftovers_are_swept() {
    let c = TestCluster::up(1);
    let rt = rt();
    let cl = c.client(0);
    rt.block_on(cl.put("/f.txt", b"kept")).unwrap();
    let tmp = c.node_dir(0).join("tmp");
    let leftovers = || std::fs::read_dir(&tmp).unwrap().count();
    for (k, unlock) in [false, true].into_iter().enumerate() {
        let mut child = hanging_writer(&c, "/f.txt");
        eventually("the writer holds the lock and writes", || {
            rt.block_on(cl.stat("/f.txt")).unwrap().lock.is_some() && leftovers() > k
        });
        child.kill().unwrap();
        child.wait().unwrap();
        let busy = rt.block_on(cl.open_write("/f.txt", true)).err().unwrap();
        assert_eq!(busy.code, Errno::EBUSY);
        assert_eq!(rt.block_on(cl.get("/f.txt")).unwrap(), b"kept");
        if unlock {
            let out = c.fs(&["unlock", "/f.txt"]);
            assert!(out.status.success());
            assert!(rt.block_on(cl.stat("/f.txt")).unwrap().lock.is_none());
        } else {
            wait_unlocked(&rt, &cl, "/f.txt");
        }
        rt.block_on(cl.put("/f.txt", b"kept")).unwrap();
    }
    // The killed writers' temporary files are gone once the daemon restarts.
    assert_eq!(leftovers(), 2);
    c.signal(0, libc::SIGKILL);
    c.restart();
    assert_eq!(leftovers(), 0);
    // A put that fails (a directory as its source) leaves no lock behind.
    let out = c.fs(&["put", "/tmp", "/f.txt"]);
    assert!(!out.status.success());
    assert!(rt.block_on(cl.stat("/f.txt")).unwrap().lock.is_none());
    // A writer that loses the lock of a file it created publishes nothing,
    // and the name goes again.
    rt.block_on(async {
        let mut w = cl.create("/new.txt").await.unwrap();
        w.write_all(b"lost").unwrap();
        cl.break_lock("/new.txt").await.unwrap();
        let e = w.close().await.unwrap_err();
        assert_eq!(e.code, Errno::EBUSY, "{e}");
        assert_eq!(cl.stat("/new.txt").await.unwrap_err().code, Errno::ENOENT);
        let w = cl.create("/new.txt").await.unwrap();
        w.abort().await;
        assert_eq!(cl.stat("/new.txt").await.unwrap_err().code, Errno::ENOENT);
    });
}

#[test]
fn without_flushes_a_clean_stop_or_a_quiet_second_keeps_what_was_acknowledged() {
    let c = TestCluster::up_with(2, &["--durability", "none"]);
    let rt = rt();
    let names_now = |c: &TestCluster| {
        let cl = c.client(0);
        rt.block_on(common::names(&cl, "/"))
    };
    let cl = c.client(0);
    for f in ["a", "b", "c"] {
        rt.block_on(cl.put(&format!("/{f}"), f.as_bytes())).unwrap();
    }
    // Stopped cleanly (`fs down`, SIGTERM): everything is kept.
    ok(&c.fs(&["down"]));
    c.restart();
    assert_eq!(names_now(&c), ["a", "b", "c"]);
    c.signal(1, libc::SIGTERM);
    c.restart();
    assert_eq!(names_now(&c), ["a", "b", "c"]);
    // Killed a second after its last operation: that is on disk too.
    let cl = c.client(0);
    rt.block_on(cl.put("/d", b"d")).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    c.signal(0, libc::SIGKILL);
    c.signal(1, libc::SIGKILL);
    c.restart();
    assert_eq!(names_now(&c), ["a", "b", "c", "d"]);
}

#[test]
fn racing_writers_of_a_new_name_win_or_get_ebusy() {
    let c = TestCluster::up(3);
    let rt = rt();
    let clients: Vec<Client> = (0..3).map(|n| c.client(n)).collect();
    rt.block_on(async {
        for round in 0..20 {
            let p = format!("/race{round}");
            let mut set = tokio::task::JoinSet::new();
            for i in 0..6 {
                let cl = clients[i % 3].clone();
                let p = p.clone();
                set.spawn(async move { (i, cl.put(&p, format!("writer {i}").as_bytes()).await) });
            }
            let mut won = Vec::new();
            while let Some(r) = set.join_next().await {
                match r.unwrap() {
                    (i, Ok(rec)) => won.push((rec.version, i)),
                    (_, Err(e)) => assert_eq!(e.code, Errno::EBUSY, "{e}"),
                }
            }
            let last = won.iter().max().expect("someone wins").1;
            let got = clients[0].get(&p).await.unwrap();
            assert_eq!(got, format!("writer {last}").as_bytes());
        }
    });
}

#[test]
fn a_full_metadata_disk_fails_cleanly_and_recovers_when_space_is_freed() {
    if !is_root() {
        eprintln!("skipped: mounting a small disk needs root");
        return;
    }
    let disk = SmallDisk::new("16m");
    let dir = disk.path().join("cluster");
    let d = dir.to_str().unwrap();
    assert!(locus(&["fs", "up", "--nodes", "1", "--dir", d])
        .status
        .success());
    let rt = rt();
    let cl = Client::open(&dir, ClientOptions::default()).unwrap();
    rt.block_on(cl.put("/before.txt", b"acknowledged")).unwrap();
    // Fill the disk, then create until the metadata store cannot grow.
    let filler = disk.path().join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    while f.write_all(&[0u8; 1 << 16]).is_ok() {}
    drop(f);
    let mut failed = None;
    for i in 0..20_000 {
        if let Err(e) = rt.block_on(cl.create_empty(&format!("/f{i}"))) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("the disk filled up");
    assert_eq!(e.code, Errno::ENOSPC, "{e}");
    let status = String::from_utf8_lossy(&locus(&["fs", "status", "--dir", d]).stdout).to_string();
    assert!(status.contains("degraded"), "{status}");
    // A data write on the full disk is one ENOSPC line, and changes nothing.
    let out = locus(&["fs", "put", "--dir", d, "/etc/services", "/before.txt"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("locus: ENOSPC: ") && err.lines().count() == 1,
        "{err}"
    );
    // Space freed: the same daemon serves again, acknowledged data intact.
    std::fs::remove_file(&filler).unwrap();
    eventually("the metadata store reopens", || {
        rt.block_on(cl.create_empty("/after")).is_ok()
    });
    assert_eq!(rt.block_on(cl.get("/before.txt")).unwrap(), b"acknowledged");
    let status = locus(&["fs", "status", "--dir", d]);
    assert!(status.status.success());
}

#[test]
fn directories_made_by_someone_else_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let squatted = tmp.path().join(format!("locus-{uid}"));
    std::fs::create_dir(&squatted).unwrap();
    let try_default = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_locus"))
            .args(args)
            .env_remove("LOCUS_DIR")
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap()
    };
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cases = vec!["writable by other users (mode 777)"];
    if is_root() {
        std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&squatted, Some(12345), None).unwrap();
        cases = vec!["owned by uid 12345, not by you"];
    }
    for why in cases {
        for args in [&["fs", "up", "--nodes", "1"][..], &["fs", "ls", "/"]] {
            let out = try_default(args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success() && err.contains(why),
                "{args:?}: {err}"
            );
        }
    }
    assert_eq!(std::fs::read_dir(&squatted).unwrap().count(), 0);

    // A link planted at the default path (another user's, as root can
    // make it) to a directory of the planter's choosing is refused, and
    // nothing is written through it.
    std::fs::remove_dir(&squatted).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, &squatted).unwrap();
    if is_root() {
        std::os::unix::fs::lchown(&squatted, Some(12345), None).unwrap();
        std::os::unix::fs::chown(&victim, Some(12345), None).unwrap();
    }
    for args in [&["fs", "up", "--nodes", "1"][..], &["fs", "ls", "/"]] {
        let out = try_default(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("a symbolic link; refusing to use it"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);

    // A run directory holding a user's files is refused, not emptied.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("t.swift");
    std::fs::write(&script, "trace(1);\n").unwrap();
    let mine = dir.path().join("records");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("thesis.tex"), "years of work").unwrap();
    let run = |run_dir: &std::path::Path| {
        locus(&[
            "run",
            "-n",
            "2",
            "--run-dir",
            run_dir.to_str().unwrap(),
            script.to_str().unwrap(),
        ])
    };
    let out = run(dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("not a Locus run directory"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("thesis.tex")).unwrap(),
        "years of work"
    );
    // A new directory, and then the same one again with --fresh, are fine.
    let fresh = dir.path().join("run");
    assert!(run(&fresh).status.success());
    let again = locus(&[
        "run",
        "--fresh",
        "--run-dir",
        fresh.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    assert!(again.status.success());
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    // Without --run-dir the run says where its directory is.
    let out = locus(&["run", "-n", "2", script.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("locus: run directory "))
        .expect("run directory announced");
    assert!(std::path::Path::new(line).join("run.json").exists());
    let mode = std::fs::metadata(line).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{line}");
    std::fs::remove_dir_all(line).unwrap();
}

/// Resident memory of process `pid`, in bytes.
fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn half_sent_frames_cost_what_was_sent_and_are_cut_off() {
    let c = TestCluster::up(1);
    let spec = locus_fs::ClusterSpec::load(c.path()).unwrap();
    let secret = Secret::load(&c.path().join("secret")).unwrap();
    let pid = c.pid(0);
    let before = rss(pid);
    let mut conns = Vec::new();
    for _ in 0..100 {
        let mut s = TcpStream::connect(spec.nodes[0].addr).unwrap();
        auth::connect(&mut s, &secret, Channel::Rpc).unwrap();
        // Announces a 16 MiB frame, sends 4 bytes of it and stalls.
        s.write_all(&(16u32 << 20).to_le_bytes()).unwrap();
        s.write_all(&[1, 2, 3, 4]).unwrap();
        conns.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = rss(pid).saturating_sub(before);
    assert!(
        grown < 32 << 20,
        "100 half frames grew the daemon by {grown} bytes"
    );
    // Each is closed once its frame is overdue; the daemon still serves.
    let start = Instant::now();
    for s in &mut conns {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty());
    }
    assert!(start.elapsed() < Duration::from_secs(25));
    rt().block_on(c.client(0).ping(0)).unwrap();
}

/// A replica that missed a write while it was down is brought up to date
/// when it comes back: when the owner is lost afterwards, the replica
/// serves the acknowledged version, and the owner takes that back, not the
/// replica's stale one (before: v1 served, then both versions gone).
#[test]
fn a_replica_that_was_down_never_hands_back_a_stale_record() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let cl = c.client_with(ClientOptions {
        node: 2,
        timeout: Duration::from_millis(800),
        ..ClientOptions::default()
    });
    let (p, q) = (owned_by(&cl, 0, "p"), owned_by(&cl, 0, "q"));
    rt.block_on(async {
        cl.put(&p, b"v1").await.unwrap();
        c.signal(1, libc::SIGKILL);
        cl.put(&p, b"version 2").await.unwrap();
        cl.put(&q, b"made while the replica was down")
            .await
            .unwrap();
        c.restart();
        c.signal(0, libc::SIGKILL);
        assert_eq!(cl.get(&p).await.unwrap(), b"version 2", "from the replica");
        assert_eq!(
            cl.get(&q).await.unwrap(),
            b"made while the replica was down"
        );
        c.restart();
        assert_eq!(cl.get(&p).await.unwrap(), b"version 2", "from the owner");
        assert_eq!(
            cl.get(&q).await.unwrap(),
            b"made while the replica was down"
        );
        assert_eq!(cl.stat(&p).await.unwrap().size, 9);
    });
}

/// `locus bench kills` as a user runs it, shortened: new files put by three
/// clients while one daemon at a time is killed for a second and started
/// again, with one copy and with two; every acknowledged put is read back
/// and found in its directory (the command fails otherwise).
#[test]
fn no_acknowledged_put_is_lost_while_daemons_are_killed_and_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("kills");
    let out = locus(&[
        "bench",
        "kills",
        "--repetitions",
        "1",
        "--seconds",
        "6",
        "--replicas",
        "1,2",
        "--dir",
        work.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for r in ["R=1", "R=2"] {
        let line = text.lines().find(|l| l.starts_with(r)).expect(r);
        assert!(line.contains(" 0 lost, 0 wrong"), "{line}");
        assert!(
            !line.starts_with(&format!("{r} repetition 1: 0 acknowledged")),
            "{line}"
        );
    }
}

/// A damaged metadata file — emptied, deleted, cut short, overwritten with
/// garbage — is a clean error naming it, never a panic nor an empty node
/// taken for a new one; `fs up` starts the healthy daemons all the same, and
/// the node comes back whole once its file does.
#[test]
fn a_damaged_metadata_file_is_an_error_and_the_healthy_nodes_start() {
    let c = TestCluster::up(2);
    let rt = rt();
    let cl = c.client(1);
    let names: Vec<String> = (0..30)
        .map(|i| owned_by(&cl, 0, &format!("k{i}-")))
        .collect();
    // And files in directories, some of whose records and names node 0
    // keeps, written from both nodes.
    let deep: Vec<String> = (0..12)
        .map(|i| format!("/d{}/e{i}/f{i}.txt", i % 3))
        .collect();
    for n in names.iter().chain(&deep) {
        rt.block_on(cl.put(n, n.as_bytes())).unwrap();
    }
    for n in &deep {
        rt.block_on(c.client(0).put(n, format!("{n} again").as_bytes()))
            .unwrap();
    }
    let meta = c.node_dir(0).join("meta.redb");
    c.signal(0, libc::SIGKILL);
    let good = std::fs::read(&meta).unwrap();
    let damages: [(&str, Option<Vec<u8>>); 4] = [
        ("emptied", Some(Vec::new())),
        ("deleted", None),
        ("cut to 4 KiB", Some(good[..4096.min(good.len())].to_vec())),
        ("garbage", Some(vec![0x5a; good.len()])),
    ];
    for (what, bytes) in damages {
        match bytes {
            Some(b) => std::fs::write(&meta, b).unwrap(),
            None => std::fs::remove_file(&meta).unwrap(),
        }
        c.signal(1, libc::SIGKILL);
        let out = locus(&["fs", "up", "--dir", c.path_str()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: started");
        assert!(err.contains("meta.redb"), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
        rt.block_on(cl.ping(1))
            .unwrap_or_else(|e| panic!("{what}: node 1 not started: {e}"));
    }
    // Made again from what the stores hold: every name and file is back.
    let out = locus(&["fs", "repair", "--dir", c.path_str(), "--node", "0"]);
    let said = ok(&out);
    assert!(said.contains("node 0: made again from"), "{said}");
    let cl = c.client(1); // node 0 may be back on another port
    for n in &names {
        assert_eq!(rt.block_on(cl.get(n)).unwrap(), n.as_bytes());
    }
    for n in &deep {
        assert_eq!(
            rt.block_on(cl.get(n)).unwrap(),
            format!("{n} again").as_bytes()
        );
    }
    let root = rt.block_on(common::names(&cl, "/"));
    for n in &names {
        assert!(root.contains(&n[1..].to_string()), "{n} listed");
    }
    for i in 0..12 {
        let dir = format!("/d{}/e{i}", i % 3);
        assert_eq!(
            rt.block_on(common::names(&cl, &dir)),
            vec![format!("f{i}.txt")]
        );
    }
    // A running node is not repaired.
    let out = locus(&["fs", "repair", "--dir", c.path_str(), "--node", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("daemon runs"));
}

/// What a key may hold after the operations a client logged: acknowledged
/// ones fix it, failed ones leave either state.
type Possible = Vec<Option<Vec<u8>>>;

#[test]
fn acknowledged_operations_survive_daemons_killed_while_clients_work() {
    survive_kills(&[]);
}

/// The same with two copies of every key: what a replica acknowledged while
/// the owner was down is kept when the owner comes back, and a replica that
/// was down does not hand stale keys back.
#[test]
fn with_replicas_acknowledged_operations_survive_daemons_killed_while_clients_work() {
    survive_kills(&["--replicas", "2"]);
}

fn survive_kills(extra: &[&str]) {
    let c = TestCluster::up_with(3, extra);
    let rt = rt();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = |node| ClientOptions {
        node,
        timeout: Duration::from_millis(800),
        lease: Duration::from_secs(1),
        ..ClientOptions::default()
    };
    // Each client works on its own keys, so its log alone says what they hold.
    let workers: Vec<_> = (0..3u32)
        .map(|n| {
            let cl = c.client_with(opts(n));
            let stop = stop.clone();
            rt.spawn(async move {
                let mut possible: HashMap<String, Possible> = HashMap::new();
                let key = |k: u64| format!("/c{n}-k{k}");
                let mut seq = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    seq += 1;
                    let k = key(seq % 6);
                    let before = possible.entry(k.clone()).or_insert(vec![None]).clone();
                    match seq % 4 {
                        0 | 1 => {
                            let data = format!("{k} #{seq}").into_bytes();
                            let r = cl.put(&k, &data).await;
                            let mut now = if r.is_ok() { vec![] } else { before.clone() };
                            if r.is_err() && before.contains(&None) {
                                // A name it created and could not remove again.
                                now.push(Some(Vec::new()));
                            }
                            now.push(Some(data));
                            possible.insert(k, now);
                        }
                        2 => {
                            let r = cl.unlink(&k).await;
                            let mut now = if r.is_ok() { vec![] } else { before };
                            now.push(None);
                            possible.insert(k, now);
                        }
                        _ => {
                            let to = key((seq + 1) % 6);
                            let to_before =
                                possible.entry(to.clone()).or_insert(vec![None]).clone();
                            match cl.rename(&k, &to).await {
                                Ok(()) => {
                                    possible.insert(k, vec![None]);
                                    possible.insert(to, before);
                                }
                                Err(e) if e.code == Errno::ENOENT && before == vec![None] => {}
                                Err(_) => {
                                    let mut from_now = before.clone();
                                    from_now.push(None);
                                    // A replaced target goes before the source moves.
                                    let mut to_now = to_before;
                                    to_now.extend(before);
                                    to_now.push(None);
                                    possible.insert(k, from_now);
                                    possible.insert(to, to_now);
                                }
                            }
                        }
                    }
                }
                possible
            })
        })
        .collect();
    // Kill a daemon every so often, and start it again: at least 10 times
    // and for 6 s (a loaded machine restarts daemons more slowly).
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(6);
    while kills < 10 || Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(400));
        c.signal(kills % 3, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(150));
        c.restart();
        kills += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let logs: Vec<HashMap<String, Possible>> = workers
        .into_iter()
        .map(|w| rt.block_on(w).unwrap())
        .collect();
    let cl = c.client(0);
    std::thread::sleep(Duration::from_millis(1200)); // every lease ends
    let mut checked = 0;
    for log in &logs {
        for (k, possible) in log {
            let got = match rt.block_on(cl.get(k)) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.code == Errno::ENOENT => None,
                Err(e) => panic!("{k}: {e}"),
            };
            assert!(
                possible.contains(&got),
                "{k}: holds {got:?}, the log allows {possible:?}"
            );
            if got.is_some() {
                // Readable and writable: no lock outlived its writer.
                let w = rt.block_on(cl.open_write(k, false)).unwrap();
                rt.block_on(w.abort());
            }
            checked += 1;
        }
    }
    assert!(checked >= 18, "{checked} keys, {kills} kills");
}

/// Writes `/o/kept.txt` (kept) and a removed file on a 2-node cluster, and
/// puts in its stores what failed writes and versions replaced while a
/// daemon was down leave: copies no record names. Returns the kept file's
/// copy and the orphans.
fn plant_orphans(
    c: &TestCluster,
    rt: &tokio::runtime::Runtime,
) -> (std::path::PathBuf, [std::path::PathBuf; 3]) {
    let cl = c.client(0);
    let kept = rt.block_on(cl.put("/o/kept.txt", b"current")).unwrap();
    let old = rt.block_on(cl.put("/o/gone.txt", b"removed")).unwrap();
    rt.block_on(cl.unlink("/o/gone.txt")).unwrap();
    let orphans = [
        c.stored(0, "/o/kept.txt", kept.stamp ^ 1),
        c.stored(1, "/o/gone.txt", old.stamp),
        c.stored(1, "/o/never.txt", 7),
    ];
    for o in &orphans {
        std::fs::create_dir_all(o.parent().unwrap()).unwrap();
        std::fs::write(o, b"orphan").unwrap();
    }
    (c.stored(0, "/o/kept.txt", kept.stamp), orphans)
}

#[test]
fn repair_drops_the_copies_no_record_names_and_keeps_the_current_ones() {
    let c = TestCluster::up_with(2, &["--scan-orphans-every", "0"]);
    let rt = rt();
    let cl = c.client(0);
    let (current, orphans) = plant_orphans(&c, &rt);
    // Too young to be judged by default (a write in progress).
    let out = locus(&["fs", "repair", "--dir", c.path_str(), "--orphans"]);
    assert!(ok(&out).contains("0 dropped"), "{}", ok(&out));
    assert!(orphans.iter().all(|o| o.exists()));
    let out = locus(&[
        "fs",
        "repair",
        "--dir",
        c.path_str(),
        "--orphans",
        "--older-than",
        "0",
    ]);
    let said = ok(&out);
    assert!(said.contains("3 dropped (18 bytes)"), "{said}");
    assert!(orphans.iter().all(|o| !o.exists()));
    assert!(current.exists());
    assert_eq!(rt.block_on(cl.get("/o/kept.txt")).unwrap(), b"current");
    // Nothing to say what to repair is a one-line error.
    let out = locus(&["fs", "repair", "--dir", c.path_str()]);
    assert!(!out.status.success());
}

#[test]
fn every_daemon_drops_on_its_own_the_copies_no_record_names() {
    let c = TestCluster::up_with(
        2,
        &["--scan-orphans-every", "1", "--orphans-older-than", "1"],
    );
    let rt = rt();
    let (current, orphans) = plant_orphans(&c, &rt);
    eventually_within(Duration::from_secs(30), "the orphans dropped", || {
        orphans.iter().all(|o| !o.exists())
    });
    assert!(current.exists());
    assert_eq!(
        rt.block_on(c.client(1).get("/o/kept.txt")).unwrap(),
        b"current"
    );
}

#[test]
fn repair_removes_a_name_whose_record_is_gone() {
    let c = TestCluster::up(2);
    let rt = rt();
    let cl = c.client(0);
    // Named by node 0 (its directory), its record on node 1.
    let (dir, path) = (0..200)
        .map(|i| (format!("/n{i}"), format!("/n{i}/x.txt")))
        .find(|(d, p)| cl.owner(d) == 0 && cl.owner(p) == 1)
        .unwrap();
    rt.block_on(cl.mkdir(&dir)).unwrap();
    // Node 1's metadata as it was before the file was made: the name
    // stays on node 0, its record is gone (as after a create that failed
    // between the two).
    let meta = c.node_dir(1).join("meta.redb");
    c.signal(1, libc::SIGKILL);
    let before = std::fs::read(&meta).unwrap();
    c.restart();
    let cl = c.client(0);
    rt.block_on(cl.put(&path, b"x")).unwrap();
    c.signal(1, libc::SIGKILL);
    std::fs::write(&meta, before).unwrap();
    c.restart();
    let cl = c.client(0);
    assert_eq!(
        rt.block_on(common::names(&cl, &dir)),
        vec!["x.txt".to_string()]
    );
    assert_eq!(rt.block_on(cl.stat(&path)).unwrap_err().code, Errno::ENOENT);
    let out = locus(&["fs", "repair", "--dir", c.path_str(), "--orphans"]);
    let said = ok(&out);
    assert!(said.contains("1 names without a record removed"), "{said}");
    assert!(rt.block_on(common::names(&cl, &dir)).is_empty());
}
