//! Staging trees in and out with `locus fs put`/`get` on a local cluster.

mod common;

use common::{ok, rt, TestCluster};
use locus_proto::Errno;

#[test]
fn trees_stage_in_spread_over_the_nodes_and_out_byte_exact() {
    let c = TestCluster::up(4);
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("inputs");
    for d in 0..10 {
        let dir = src.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let body = format!("file {d}/{f}\n").repeat(f + 1);
            std::fs::write(dir.join(format!("f{f}.txt")), body).unwrap();
        }
    }
    let src_s = src.to_str().unwrap();
    // A new destination becomes the copy; `/locus/…` as in scripts.
    let put = c.fs(&[
        "put",
        "-r",
        "--placement",
        "round-robin",
        src_s,
        "/locus/in",
    ]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    assert!(String::from_utf8_lossy(&put.stdout).starts_with("1000 files, "));
    let rt = rt();
    let cl = c.client(0);
    let mut per_node = [0; 4];
    rt.block_on(async {
        for d in 0..10 {
            for e in cl.readdir(&format!("/in/d{d}")).await.unwrap() {
                let holders = cl.locate(&format!("/in/d{d}/{}", e.name)).await.unwrap();
                per_node[holders[0] as usize] += 1;
            }
        }
    });
    assert_eq!(per_node, [250; 4], "round-robin over one command's files");
    // An existing directory receives the tree under its own name.
    rt.block_on(cl.mkdir("/into")).unwrap();
    assert!(c.fs(&["put", "-r", src_s, "/into"]).status.success());
    assert_eq!(rt.block_on(cl.readdir("/into/inputs")).unwrap().len(), 10);
    // Out again, byte-exact.
    let out = host.path().join("out");
    let got = c.fs(&["get", "-r", "/locus/in", out.to_str().unwrap()]);
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    for d in 0..10 {
        for f in 0..100 {
            let rel = format!("d{d}/f{f}.txt");
            assert_eq!(
                std::fs::read(out.join(&rel)).unwrap(),
                std::fs::read(src.join(&rel)).unwrap(),
                "{rel}"
            );
        }
    }
    // The same through this command's node instead of by the nodes.
    let put = c.fs(&["put", "-r", "--via", "client", src_s, "/viaclient"]);
    assert!(String::from_utf8_lossy(&put.stdout).starts_with("1000 files, "));
    let out2 = host.path().join("out2");
    let got = c.fs(&[
        "get",
        "-r",
        "--via",
        "client",
        "/viaclient",
        out2.to_str().unwrap(),
    ]);
    assert!(got.status.success());
    for rel in ["d0/f0.txt", "d9/f99.txt"] {
        assert_eq!(
            std::fs::read(out2.join(rel)).unwrap(),
            std::fs::read(src.join(rel)).unwrap(),
            "{rel}"
        );
    }
    // One file to stdout; a directory without -r is refused and creates nothing.
    let cat = c.fs(&["get", "/locus/in/d3/f0.txt", "-"]);
    assert_eq!(cat.stdout, b"file 3/0\n");
    let refused = c.fs(&["put", src_s, "/single"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("put -r"));
    assert_eq!(
        rt.block_on(cl.stat("/single")).unwrap_err().code,
        Errno::ENOENT
    );
    let missing = c.fs(&["put", "/nonexistent/file", "/single"]);
    assert!(!missing.status.success());
    assert_eq!(
        rt.block_on(cl.stat("/single")).unwrap_err().code,
        Errno::ENOENT
    );
    let refused = c.fs(&["get", "/locus/in", host.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("get -r"));
    // One file into an existing directory lands there under its own name,
    // both ways, as cp puts it.
    let one = src.join("d4/f5.txt");
    assert!(c
        .fs(&["put", one.to_str().unwrap(), "/into"])
        .status
        .success());
    let body = "file 4/5\n".repeat(6).into_bytes();
    assert_eq!(rt.block_on(cl.get("/into/f5.txt")).unwrap(), body);
    let got = c.fs(&["get", "/into/f5.txt", out2.to_str().unwrap()]);
    assert!(got.status.success());
    assert_eq!(std::fs::read(out2.join("f5.txt")).unwrap(), body);
}

#[test]
fn a_stopped_file_system_is_read_offline_and_a_running_one_is_not() {
    let c = TestCluster::up(2);
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("results/sub")).unwrap();
    std::fs::write(src.path().join("results/a.txt"), "alpha\n").unwrap();
    std::fs::write(src.path().join("results/sub/b.txt"), "beta\n").unwrap();
    let results = src.path().join("results");
    ok(&c.fs(&[
        "put",
        "-r",
        "--placement",
        "round-robin",
        results.to_str().unwrap(),
        "/results",
    ]));
    // While it runs, --offline is refused (it reads only a stopped one).
    let running = c.fs(&["ls", "--offline", "/results"]);
    assert!(!running.status.success());
    assert!(String::from_utf8_lossy(&running.stderr).contains("is running"));
    ok(&c.fs(&["down"]));
    // Stopped: the usual read says how to start it, or to read offline.
    let stopped = c.fs(&["cat", "/results/a.txt"]);
    let said = String::from_utf8_lossy(&stopped.stderr);
    assert!(said.contains("--offline"), "{said}");
    assert_eq!(
        ok(&c.fs(&["ls", "--offline", "/locus/results"])),
        "a.txt\nsub/\n"
    );
    assert_eq!(
        ok(&c.fs(&["cat", "--offline", "/results/sub/b.txt"])),
        "beta\n"
    );
    let out = tempfile::tempdir().unwrap();
    let said = ok(&c.fs(&[
        "get",
        "-r",
        "--offline",
        "/results",
        out.path().to_str().unwrap(),
    ]));
    assert_eq!(said, "2 files, 11 bytes\n");
    let got = std::fs::read_to_string(out.path().join("results/sub/b.txt")).unwrap();
    assert_eq!(got, "beta\n");
    // Nothing was started.
    let status = c.fs(&["status"]);
    assert!(!String::from_utf8_lossy(&status.stdout).contains(" up "));
}
