//! Faults and bad input on a real local cluster: crashes, strangers, dead
//! daemons, malformed frames, and the CLI's one-line errors.

mod common;

use common::{is_root, locus, names, rt, SmallDisk, TestCluster};
use locus_fs::ClientOptions;
use locus_proto::auth::{self, Channel, Secret};
use locus_proto::fs::{Envelope, Request, Response};
use locus_proto::{frame, Errno};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn kill_9_keeps_acknowledged_metadata() {
    let c = TestCluster::up(3);
    let rt = rt();
    rt.block_on(async {
        let cl = c.client(1);
        cl.mkdir("/keep").await.unwrap();
        let mut set = tokio::task::JoinSet::new();
        for i in 0..300 {
            let cl = cl.clone();
            set.spawn(async move { cl.create_empty(&format!("/keep/f{i}")).await.unwrap() });
        }
        while let Some(r) = set.join_next().await {
            r.unwrap();
        }
        cl.put("/keep/data.txt", b"payload").await.unwrap();
        cl.rename("/keep/f0", "/keep/renamed").await.unwrap();
        cl.unlink("/keep/f1").await.unwrap();
        cl.mkdir("/gone").await.unwrap();
        cl.rmdir("/gone").await.unwrap();
    });
    drop(rt);
    for n in 0..3 {
        c.signal(n, libc::SIGKILL);
    }
    c.restart();
    let rt = common::rt();
    rt.block_on(async {
        let cl = c.client(0);
        let names = names(&cl, "/keep").await;
        assert_eq!(names.len(), 300);
        assert!(names.contains(&"renamed".to_string()));
        assert!(!names.contains(&"f0".to_string()) && !names.contains(&"f1".to_string()));
        assert_eq!(cl.stat("/keep/f1").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(cl.stat("/gone").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(cl.stat("/keep/f299").await.unwrap().size, 0);
        assert_eq!(cl.get("/keep/data.txt").await.unwrap(), b"payload");
    });
}

#[test]
fn connection_without_the_secret_is_refused() {
    let c = TestCluster::up(1);
    let spec = locus_fs::ClusterSpec::load(c.path()).unwrap();
    let addr = spec.nodes[0].addr;

    // A wrong key: the handshake is refused and the connection closed.
    let mut s = TcpStream::connect(addr).unwrap();
    let err = auth::connect(&mut s, &Secret::generate(), Channel::Rpc).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);

    // No handshake at all: a request frame is answered by a closed connection.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = frame::encode(&Envelope {
        id: 1,
        body: Request::Status,
    })
    .unwrap();
    let mut padded = req.clone();
    padded.resize(64, 0);
    let _ = s.write_all(&padded);
    let mut hello = [0u8; 36];
    s.read_exact(&mut hello).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    // At most the one byte saying it was refused.
    assert!(rest.len() <= 1, "the daemon answered a stranger: {rest:?}");

    // The client library reports EACCES with the wrong secret file.
    let wrong = tempfile::tempdir().unwrap();
    std::fs::copy(
        c.path().join("cluster.json"),
        wrong.path().join("cluster.json"),
    )
    .unwrap();
    Secret::generate()
        .save(&wrong.path().join("secret"))
        .unwrap();
    let stranger = locus_fs::Client::open(wrong.path(), ClientOptions::default()).unwrap();
    let e = rt().block_on(stranger.ping(0)).unwrap_err();
    assert_eq!(e.code, Errno::EACCES);
}

#[test]
fn malformed_frames_close_only_that_connection() {
    let c = TestCluster::up(1);
    let spec = locus_fs::ClusterSpec::load(c.path()).unwrap();
    let secret = Secret::load(&c.path().join("secret")).unwrap();
    let addr = spec.nodes[0].addr;
    let bad_streams: [&[u8]; 3] = [
        &[0xff, 0xff, 0xff, 0x7f],                   // absurd length
        &[5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff], // body that does not decode
        &[100, 0, 0, 0, 1, 2, 3],                    // truncated frame, then EOF
    ];
    for bad in bad_streams {
        let mut s = TcpStream::connect(addr).unwrap();
        auth::connect(&mut s, &secret, Channel::Rpc).unwrap();
        s.write_all(bad).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }
    // The daemon still serves a well-behaved connection.
    let mut s = TcpStream::connect(addr).unwrap();
    auth::connect(&mut s, &secret, Channel::Rpc).unwrap();
    s.write_all(
        &frame::encode(&Envelope {
            id: 7,
            body: Request::Ping,
        })
        .unwrap(),
    )
    .unwrap();
    let mut buf = Vec::new();
    assert!(frame::read_sync(&mut s, &mut buf).unwrap());
    let env: Envelope<Response> = frame::decode(&buf).unwrap();
    assert_eq!(env.id, 7);
    assert!(matches!(env.body, Response::Ok));
    rt().block_on(c.client(0).ping(0)).unwrap();
}

#[test]
fn dead_or_hung_daemon_gives_eio_promptly() {
    let c = TestCluster::up(3);
    let rt = rt();
    let cl = c.client_with(ClientOptions {
        node: 0,
        timeout: Duration::from_secs(1),
        ..ClientOptions::default()
    });
    // A path whose metadata lives on node 2.
    let path = (0..)
        .map(|i| format!("/p{i}"))
        .find(|p| cl.owner(p) == 2)
        .unwrap();
    rt.block_on(cl.put(&path, b"x")).unwrap();

    c.signal(2, libc::SIGSTOP);
    let t = Instant::now();
    let e = rt.block_on(cl.stat(&path)).unwrap_err();
    assert_eq!(e.code, Errno::EIO);
    assert!(e.subject.contains("node 2"), "{e}");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    c.signal(2, libc::SIGCONT);
    rt.block_on(cl.stat(&path)).unwrap();

    c.signal(2, libc::SIGKILL);
    let t = Instant::now();
    let e = rt.block_on(cl.stat(&path)).unwrap_err();
    assert_eq!(e.code, Errno::EIO);
    assert!(e.to_string().contains("node 2"), "{e}");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );

    // The CLI says the same in one line, promptly, and the others still serve.
    let t = Instant::now();
    let out = c.fs(&["stat", &path]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("locus: EIO: node 2"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(8));
    let status = c.fs(&["status"]);
    assert!(!status.status.success());
    assert!(String::from_utf8_lossy(&status.stdout).contains("down"));
    c.restart();
    rt.block_on(cl.stat(&path)).unwrap();
}

#[test]
fn cli_round_trip_and_one_line_errors() {
    let c = TestCluster::up(3);
    let ok = |args: &[&str]| {
        let out = c.fs(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let host = c.path().join("input.txt");
    std::fs::write(&host, "hello locus\n").unwrap();
    ok(&["mkdir", "-p", "/a/b"]);
    ok(&["put", "--node", "1", host.to_str().unwrap(), "/a/b/in.txt"]);
    assert_eq!(
        ok(&["locate", "/a/b/in.txt"]).split_whitespace().next(),
        Some("1")
    );
    assert_eq!(ok(&["cat", "--node", "2", "/a/b/in.txt"]), "hello locus\n");
    assert!(ok(&["locate", "/a/b/in.txt"])
        .lines()
        .any(|l| l.starts_with("2 node2")));
    ok(&["place", "/a/later.txt", "2"]);
    ok(&["put", host.to_str().unwrap(), "/a/later.txt"]);
    assert!(ok(&["locate", "/a/later.txt"]).starts_with("2 node2 127.0.0.3"));
    ok(&["mv", "/a/b/in.txt", "/a/moved.txt"]);
    let copy = c.path().join("copy.txt");
    ok(&["get", "/a/moved.txt", copy.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "hello locus\n");
    assert_eq!(ok(&["ls", "/a"]), "b/\nlater.txt\nmoved.txt\n");
    // A name holding a newline or a terminal escape is quoted as `ls`
    // quotes it, never printed raw.
    ok(&["put", host.to_str().unwrap(), "/a/x\ny\x1b[2J"]);
    assert_eq!(
        ok(&["ls", "/a"]),
        "b/\nlater.txt\nmoved.txt\n'x'$'\\n''y'$'\\033''[2J'\n"
    );
    ok(&["rm", "/a/x\ny\x1b[2J"]);
    let stat = ok(&["stat", "/a/moved.txt"]);
    assert!(stat.contains("size: 12"), "{stat}");
    // Its time as people read it (RFC 3339, UTC).
    let mtime = stat
        .lines()
        .find_map(|l| l.strip_prefix("mtime: "))
        .unwrap();
    assert!(
        mtime.len() == 30 && mtime.ends_with('Z') && mtime.as_bytes()[10] == b'T',
        "{stat}"
    );
    assert!(ok(&["df"]).lines().count() == 4);

    for (args, expect) in [
        (
            vec!["stat", "/missing"],
            "locus: ENOENT: /missing: no such file or directory",
        ),
        (
            vec!["rm", "-d", "/a"],
            "locus: ENOTEMPTY: /a: directory not empty",
        ),
        (vec!["rm", "/a"], "locus: EISDIR: /a: is a directory"),
        (vec!["mkdir", "/a"], "locus: EEXIST: /a: file exists"),
        (
            vec!["cat", "/a/../etc/passwd"],
            "locus: EINVAL: /a/../etc/passwd: invalid argument",
        ),
        (
            vec!["ls", "--node", "7", "/"],
            "locus: EINVAL: node 7: invalid argument",
        ),
    ] {
        let out = c.fs(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(expect), "{args:?}: {err}");
    }
    ok(&["rm", "-r", "/a"]);
    assert_eq!(ok(&["ls", "/"]), "");

    // Without a cluster: a clear line, not a panic.
    let out = locus(&["fs", "ls", "--dir", "/nonexistent-locus-dir"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("locus fs up"), "{err}");
}

#[test]
fn a_full_disk_where_a_file_is_fetched_is_that_nodes_error_not_a_lost_holder() {
    if !is_root() {
        eprintln!("skipped: mounting a small disk needs root");
        return;
    }
    let c = TestCluster::up(2);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    let tcp = c.tcp_client(1);
    let data = vec![7u8; 4 << 20];
    rt.block_on(a.put("/big", &data)).unwrap();
    // Node 1 makes fetched copies in its `tmp`: 1 MiB of room there.
    let full = SmallDisk::over(&c.path().join("node-1/tmp"), "1m");
    for (how, client) in [("same host", &b), ("TCP", &tcp)] {
        let e = rt.block_on(client.local_path("/big")).unwrap_err();
        assert_eq!(e.code, Errno::ENOSPC, "{how}: {e}");
        assert!(!e.is_unreachable(), "{how}: {e}");
    }
    // Node 0 was never thought lost, and with room again the fetch works.
    drop(full);
    assert_eq!(rt.block_on(tcp.get("/big")).unwrap(), data);
    assert_eq!(rt.block_on(b.get("/big")).unwrap(), data);
}

#[test]
fn fetches_after_a_holder_restarted_open_new_streams() {
    let c = TestCluster::up(2);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    let tcp = c.tcp_client(1);
    rt.block_on(async {
        for f in ["/one", "/two"] {
            a.put(f, &vec![3u8; 3 << 20]).await.unwrap();
        }
        // Streams to node 0 are pooled by both readers.
        assert_eq!(b.get("/one").await.unwrap().len(), 3 << 20);
        assert_eq!(tcp.get("/one").await.unwrap().len(), 3 << 20);
    });
    c.signal(0, libc::SIGKILL);
    c.restart();
    rt.block_on(async {
        assert_eq!(b.get("/two").await.unwrap().len(), 3 << 20);
        assert_eq!(tcp.get("/two").await.unwrap().len(), 3 << 20);
    });
}

#[test]
fn a_stopped_file_system_says_so_and_how_to_start_it() {
    // As after a run whose own file system stopped with it: every command
    // says in one line that it is not running and the command that starts
    // it; started again, the files are there.
    let c = TestCluster::up(2);
    let host = c.path().join("kept.txt");
    std::fs::write(&host, "kept\n").unwrap();
    assert!(c
        .fs(&["put", host.to_str().unwrap(), "/kept.txt"])
        .status
        .success());
    assert!(locus(&["fs", "down", "--dir", c.path_str()])
        .status
        .success());
    let start = format!("start it with `locus fs up --dir {}`", c.path_str());
    let out_copy = c.path().join("out.txt");
    for args in [
        vec!["ls", "/"],
        vec!["cat", "/kept.txt"],
        vec!["get", "/kept.txt", out_copy.to_str().unwrap()],
        vec!["stat", "/kept.txt"],
    ] {
        let out = c.fs(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("is not running") && err.contains(&start),
            "{args:?}: {err}"
        );
    }
    let status = locus(&["fs", "status", "--dir", c.path_str()]);
    let err = String::from_utf8(status.stderr).unwrap();
    assert!(!status.status.success() && err.contains(&start), "{err}");
    c.restart();
    let cat = c.fs(&["cat", "/kept.txt"]);
    assert_eq!(String::from_utf8(cat.stdout).unwrap(), "kept\n");
}
