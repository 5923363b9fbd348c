//! Every byte verified: a stored copy whose bytes changed on disk (flipped,
//! cut short, grown, removed) is never handed to a reader. With another
//! good copy the right bytes come back and the bad copy is replaced;
//! without one the read fails with `EIO` naming the path and the node.

mod common;

use common::{rt, Run, TestCluster};
use locus_proto::Errno;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// What is done to a stored copy.
#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip,
    Truncate,
    Extend,
    Remove,
}

const ALL: [Damage; 4] = [
    Damage::Flip,
    Damage::Truncate,
    Damage::Extend,
    Damage::Remove,
];

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn damage(copy: &Path, how: Damage) {
    let len = std::fs::metadata(copy).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(copy);
    match how {
        Damage::Flip => {
            // Four bytes (fewer in a smaller file) from its middle.
            let at = len / 2;
            let mut four = vec![0u8; (len - at).min(4) as usize];
            std::fs::File::open(copy)
                .unwrap()
                .read_exact_at(&mut four, at)
                .unwrap();
            let flipped: Vec<u8> = four.iter().map(|b| b ^ 0x5a).collect();
            f.unwrap().write_all_at(&flipped, at).unwrap();
        }
        Damage::Truncate => f.unwrap().set_len(len / 2).unwrap(),
        Damage::Extend => f.unwrap().write_all_at(b"more", len).unwrap(),
        Damage::Remove => std::fs::remove_file(copy).unwrap(),
    }
}

/// Writes `bytes` at `path` from node 0 and waits for all its copies;
/// returns its record then.
fn put_settled(
    c: &TestCluster,
    rt: &tokio::runtime::Runtime,
    path: &str,
    bytes: &[u8],
) -> locus_proto::fs::Record {
    let w = c.client(0);
    rt.block_on(async {
        w.put(path, bytes).await.unwrap();
        w.settled().await;
        w.stat(path).await.unwrap()
    })
}

/// Files in the node's `quarantine/`.
fn set_aside(c: &TestCluster, node: u32) -> usize {
    std::fs::read_dir(c.node_dir(node).join("quarantine")).map_or(0, std::iter::Iterator::count)
}

#[test]
fn without_another_copy_a_damaged_copy_is_an_error_naming_path_and_node() {
    let c = TestCluster::up(2);
    let rt = rt();
    let writer = c.client(0);
    for (i, how) in ALL.into_iter().enumerate() {
        let path = format!("/d/{how:?}.bin");
        let bytes = content(300_000 + i);
        let rec = rt.block_on(writer.put(&path, &bytes)).unwrap();
        assert!(
            rec.sum.is_some(),
            "a version's hash is made as it is written"
        );
        damage(&c.stored(0, &path, rec.stamp), how);
        // On its node (the CLI), and fetched by another node (the library).
        let out = c.fs(&["cat", "--node", "0", &path]);
        assert!(!out.status.success(), "{how:?}: served");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("EIO") && err.contains(&path) && err.contains("node 0"),
            "{how:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{how:?}: bytes handed out");
        let e = rt.block_on(c.client(1).get(&path)).unwrap_err();
        assert_eq!(e.code, Errno::EIO, "{how:?}: {e}");
        // It stays an error: no later read takes the record's holders
        // being gone for an empty file.
        let e = rt.block_on(c.client(0).get(&path)).unwrap_err();
        assert_eq!(e.code, Errno::EIO, "{how:?}: {e}");
    }
    assert_eq!(
        set_aside(&c, 0),
        3,
        "the damaged copies (not the removed one)"
    );
}

#[test]
fn with_a_good_copy_left_the_right_bytes_come_back_and_the_bad_copy_is_replaced() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let writer = c.client(0);
    for (i, how) in ALL.into_iter().enumerate() {
        let path = format!("/r/{how:?}.bin");
        let bytes = content(2_000_000 + i);
        let rec = put_settled(&c, &rt, &path, &bytes);
        assert_eq!(rec.holders.len(), 2, "{how:?}: {rec:?}");
        let bad = rec.holders[0];
        let copy = c.stored(bad, &path, rec.stamp);
        damage(&copy, how);
        // Read on the damaged copy's node: from the other holder.
        let out = c.fs(&["cat", "--node", &bad.to_string(), &path]);
        assert!(
            out.status.success(),
            "{how:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, bytes, "{how:?}");
        // Replaced by a good copy, and named a holder again.
        assert_eq!(std::fs::read(&copy).unwrap(), bytes, "{how:?}");
        let now = rt.block_on(writer.stat(&path)).unwrap();
        assert!(now.holders.len() >= 2, "{how:?}: {now:?}");
        assert!(now.holders.contains(&bad), "{how:?}: {now:?}");
    }
    let (aside, bad_nodes): (usize, usize) = (0..3).fold((0, 0), |(n, k), node| {
        let here = set_aside(&c, node);
        (n + here, k + usize::from(here > 0))
    });
    assert_eq!(aside, 3, "the damaged copies were set aside");
    assert!(bad_nodes >= 1);
}

#[test]
fn a_fetch_never_keeps_a_damaged_copy_as_a_replica() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let bytes = content(1_500_000);
    let rec = put_settled(&c, &rt, "/f.bin", &bytes);
    let reader = (0..3).find(|n| !rec.holders.contains(n)).unwrap();
    // The first holder, the one a fetch asks first, is damaged.
    damage(&c.stored(rec.holders[0], "/f.bin", rec.stamp), Damage::Flip);
    let got = rt.block_on(c.client(reader).get("/f.bin")).unwrap();
    assert_eq!(got, bytes);
    let kept = std::fs::read(c.stored(reader, "/f.bin", rec.stamp)).unwrap();
    assert_eq!(kept, bytes, "the cached replica is the good bytes");
    let now = rt.block_on(c.client(reader).stat("/f.bin")).unwrap();
    assert!(!now.holders.contains(&rec.holders[0]), "{now:?}");
}

#[test]
fn a_copy_out_by_the_nodes_skips_a_damaged_copy() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let bytes = content(700_000);
    let rec = put_settled(&c, &rt, "/e.bin", &bytes);
    let other = (0..3).find(|n| !rec.holders.contains(n)).unwrap();
    damage(
        &c.stored(rec.holders[0], "/e.bin", rec.stamp),
        Damage::Truncate,
    );
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("e.bin");
    let n = rt
        .block_on(c.client(other).export("/e.bin", &dest))
        .unwrap();
    assert_eq!(n, bytes.len() as u64);
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    // With both copies bad, nothing is copied out.
    damage(&c.stored(rec.holders[1], "/e.bin", rec.stamp), Damage::Flip);
    let dest2 = out.path().join("e2.bin");
    let e = rt
        .block_on(c.client(other).export("/e.bin", &dest2))
        .unwrap_err();
    assert_eq!(e.code, Errno::EIO, "{e}");
    assert!(!dest2.exists());
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        1,
        "no temporary left"
    );
}

#[test]
fn a_task_reading_a_damaged_input_fails_naming_it() {
    let c = TestCluster::up(2);
    let rt = rt();
    let rec = rt
        .block_on(c.client(0).put("/in/x.txt", b"the input\n"))
        .unwrap();
    damage(&c.stored(0, "/in/x.txt", rec.stamp), Damage::Flip);
    let script = "app (file o) copy(file i) { \"cp\" i o }\n\
        file o<\"/locus/out.txt\"> = copy(input(\"/locus/in/x.txt\"));\n";
    let run = Run::new(&["-n", "2", "--retries", "0", "--fs", c.path_str()], script);
    assert!(!run.out.status.success());
    let err = String::from_utf8_lossy(&run.out.stderr);
    assert!(
        err.contains("/locus/in/x.txt") && err.contains("every copy found bad"),
        "{err}"
    );
    let e = rt.block_on(c.client(1).get("/out.txt")).unwrap_err();
    assert_eq!(e.code, Errno::ENOENT);
}

#[test]
fn scrub_repairs_every_damaged_copy_among_a_thousand_files_and_reports_the_lost_ones() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let body = |i: usize| format!("file {i}\n").repeat(40).into_bytes();
    let recs = rt.block_on(async {
        let writers = [c.client(0), c.client(1), c.client(2)];
        let puts = (0..1000).map(|i| {
            let w = writers[i % 3].clone();
            async move { w.put(&format!("/s/f{i}.txt"), &body(i)).await.unwrap() }
        });
        let recs = futures_util::future::join_all(puts).await;
        for w in &writers {
            w.settled().await;
        }
        let mut now = Vec::new();
        for (i, _) in recs.iter().enumerate() {
            now.push(writers[0].stat(&format!("/s/f{i}.txt")).await.unwrap());
        }
        now
    });
    // One copy damaged of 30 files (repaired), both copies of 5 (lost).
    for (i, rec) in recs.iter().enumerate().take(35) {
        assert_eq!(rec.holders.len(), 2, "{rec:?}");
        let path = format!("/s/f{i}.txt");
        let hows = if i < 30 {
            &rec.holders[..1]
        } else {
            &rec.holders[..]
        };
        for &h in hows {
            damage(&c.stored(h, &path, rec.stamp), ALL[i % 3]);
        }
    }
    let out = c.fs(&["scrub"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert_eq!(counted_in(&said, "repaired /s/"), 30, "{said}");
    // A lost file is reported by each node that held a damaged copy.
    let lost: std::collections::BTreeSet<&str> = said
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("lost ")?.split(':').next())
        .collect();
    let expected: std::collections::BTreeSet<String> =
        (30..35).map(|i| format!("/s/f{i}.txt")).collect();
    assert_eq!(
        lost,
        expected.iter().map(String::as_str).collect(),
        "{said}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("5 file(s) with no good copy left"),
        "{err}\n{said}"
    );
    // `fs status` tells each node's last scrub, and the files it lost.
    let status = String::from_utf8_lossy(&c.fs(&["status"]).stdout).to_string();
    let scrubs = status
        .lines()
        .filter(|l| l.contains(": last scrub "))
        .count();
    assert_eq!(scrubs, 3, "{status}");
    let told: std::collections::BTreeSet<&str> = status
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("lost "))
        .collect();
    assert_eq!(
        told,
        expected.iter().map(String::as_str).collect(),
        "{status}"
    );
    rt.block_on(async {
        let reader = c.client(0);
        for i in 0..1000 {
            let path = format!("/s/f{i}.txt");
            let got = reader.get(&path).await;
            if (30..35).contains(&i) {
                assert_eq!(got.unwrap_err().code, Errno::EIO, "{path}");
            } else {
                assert_eq!(got.unwrap(), body(i), "{path}");
            }
        }
    });
    // A second scrub finds nothing more to repair.
    let again = c.fs(&["scrub"]);
    let said = String::from_utf8_lossy(&again.stdout);
    assert_eq!(counted_in(&said, "repaired "), 0, "{said}");
}

fn counted_in(said: &str, word: &str) -> usize {
    said.lines()
        .filter(|l| l.trim_start().starts_with(word))
        .count()
}

#[test]
fn a_run_makes_again_a_file_of_its_own_whose_only_copy_went_bad() {
    // `make`'s output is damaged on disk while `both` waits for `slow`:
    // `both` finds it bad, `make` runs again, and the run completes right.
    let script = "app (file o) make() { \"sh\" \"-c\" \"echo made > $0\" o }\n\
        app (file o) slow() { \"sh\" \"-c\" \"sleep 3; echo waited > $0\" o }\n\
        app (file o) both(file a, file b) { \"sh\" \"-c\" \"cat $1 $2 > $0\" o a b }\n\
        file a<\"/locus/m/a.txt\"> = make();\n\
        file b<\"/locus/m/b.txt\"> = slow();\n\
        file c<\"/locus/m/c.txt\"> = both(a, b);\n";
    let dir = tempfile::tempdir().unwrap();
    let fs_dir = dir.path().join("run/fs");
    let damaging = {
        let fs_dir = fs_dir.clone();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::time::Instant::now() < deadline {
                for node in 0..2 {
                    let stamps = fs_dir.join(format!("node-{node}/data/m"));
                    for stamp in std::fs::read_dir(&stamps).into_iter().flatten().flatten() {
                        let copy = stamp.path().join("a.txt");
                        if copy.exists() {
                            damage(&copy, Damage::Flip);
                            return true;
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            false
        })
    };
    let run = Run::in_dir(dir, &["-n", "3", "--nodes", "2", "--keep-fs"], script);
    // Dropped before `run`, whose directory holds the daemons' pid files.
    let _down = common::FsDown(fs_dir.clone());
    assert!(damaging.join().unwrap(), "a.txt was never stored");
    assert!(
        run.out.status.success(),
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let made = run.records("make");
    assert_eq!(made.len(), 2, "made, then made again");
    assert!(made.iter().any(|r| r.remade));
    let client = locus_fs::Client::open(&fs_dir, Default::default()).unwrap();
    let out = rt().block_on(client.get("/m/c.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out), "made\nwaited\n");
}

/// Flips four bytes of `copy` at `at`.
fn flip_at(copy: &Path, at: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(copy)
        .unwrap();
    let mut four = [0u8; 4];
    f.read_exact_at(&mut four, at).unwrap();
    f.write_all_at(&four.map(|b| b ^ 0x5a), at).unwrap();
}

const MIB: usize = 1 << 20;

#[test]
fn a_damaged_chunk_of_a_big_file_is_found_by_a_read_of_that_range_alone() {
    let c = TestCluster::up(2);
    let rt = rt();
    let bytes = content(100 * MIB + 5);
    let rec = rt.block_on(c.client(0).put("/big.bin", &bytes)).unwrap();
    flip_at(&c.stored(0, "/big.bin", rec.stamp), 50 * MIB as u64 + 100);
    // A new client remembers no check: a range elsewhere reads right,
    // which it could not if the whole file were checked.
    let reader = c.client(0);
    let elsewhere = rt
        .block_on(reader.read_range("/big.bin", 10 * MIB as u64 - 7, 4096))
        .unwrap();
    assert_eq!(elsewhere, bytes[10 * MIB - 7..][..4096]);
    let tail = rt
        .block_on(reader.read_range("/big.bin", 100 * MIB as u64, 100))
        .unwrap();
    assert_eq!(tail, bytes[100 * MIB..], "fewer bytes at the end");
    let out = c.fs(&[
        "cat", "--node", "0", "--offset", "1048576", "--length", "10", "/big.bin",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, bytes[MIB..][..10]);
    // The damaged range: EIO naming the path, the node and the chunk.
    let e = rt
        .block_on(reader.read_range("/big.bin", 50 * MIB as u64 + 90, 64))
        .unwrap_err();
    assert_eq!(e.code, Errno::EIO, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("/big.bin") && msg.contains("node 0") && msg.contains("50..51 MiB"),
        "{msg}"
    );
    let out = c.fs(&[
        "cat", "--node", "0", "--offset", "52428800", "--length", "200", "/big.bin",
    ]);
    assert!(!out.status.success(), "damaged bytes served");
    assert!(out.stdout.is_empty());
    assert_eq!(set_aside(&c, 0), 1);
}

#[test]
fn a_damaged_chunk_read_by_its_range_is_read_from_another_copy_and_replaced() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    let bytes = content(20 * MIB + 3);
    let rec = put_settled(&c, &rt, "/big.bin", &bytes);
    let bad = rec.holders[0];
    let copy = c.stored(bad, "/big.bin", rec.stamp);
    flip_at(&copy, 7 * MIB as u64 + 1);
    let got = rt
        .block_on(c.client(bad).read_range("/big.bin", 7 * MIB as u64, 4096))
        .unwrap();
    assert_eq!(got, bytes[7 * MIB..][..4096]);
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        bytes,
        "a good copy in its place"
    );
    assert_eq!(set_aside(&c, bad), 1);
    let now = rt.block_on(c.client(bad).stat("/big.bin")).unwrap();
    assert!(
        now.holders.contains(&bad) && now.holders.len() >= 2,
        "{now:?}"
    );
}

#[test]
fn a_fetch_over_the_network_checks_what_each_of_its_streams_receives() {
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let rt = rt();
    // Under and over the size fetched by several streams at once.
    for len in [700_000, 20 * MIB + 3] {
        for how in ALL {
            let path = format!("/tcp/{how:?}-{len}.bin");
            let bytes = content(len);
            let rec = put_settled(&c, &rt, &path, &bytes);
            let reader = (0..3).find(|n| !rec.holders.contains(n)).unwrap();
            damage(&c.stored(rec.holders[0], &path, rec.stamp), how);
            let got = rt.block_on(c.tcp_client(reader).get(&path)).unwrap();
            assert_eq!(got, bytes, "{how:?}, {len} bytes");
            let kept = std::fs::File::open(c.stored(reader, &path, rec.stamp)).unwrap();
            let version = locus_fs::sums::Content {
                size: rec.size,
                sum: rec.sum.unwrap(),
            };
            let chunks = locus_fs::sums::kept(&kept, version);
            assert_eq!(
                chunks.is_some(),
                len > MIB,
                "{how:?}: its chunks' hashes kept"
            );
        }
    }
}

#[test]
fn a_lost_output_of_a_run_is_listed_with_the_task_that_made_it() {
    let script = "app (file o) make() { \"sh\" \"-c\" \"echo made > $0\" o }\n\
        file a<\"/locus/m/a.txt\"> = make();\n";
    let dir = tempfile::tempdir().unwrap();
    let fs_dir = dir.path().join("run/fs");
    let run = Run::in_dir(dir, &["--keep-fs"], script).ok();
    let _down = common::FsDown(fs_dir.clone());
    let client = locus_fs::Client::open(&fs_dir, Default::default()).unwrap();
    let rec = rt().block_on(client.stat("/m/a.txt")).unwrap();
    let made_by = rec.made_by.clone().expect("the record names its task");
    assert!(
        made_by.starts_with("app 'make' at ")
            && made_by.contains("t.swift:2:")
            && made_by.ends_with(&format!("in run {}", run.run_dir().display())),
        "{made_by}"
    );
    let node = rec.holders[0];
    let copy = locus_fs::Store::open(&fs_dir.join(format!("node-{node}")))
        .unwrap()
        .data_path("/m/a.txt", rec.stamp);
    damage(&copy, Damage::Flip);
    let fs = |args: &[&str]| {
        let dir = fs_dir.to_str().unwrap();
        common::locus(&[&["fs"], args, &["--dir", dir]].concat())
    };
    let scrub = fs(&["scrub"]);
    let said = String::from_utf8_lossy(&scrub.stdout);
    assert!(!scrub.status.success(), "{said}");
    assert!(
        said.contains("lost /m/a.txt: ") && said.contains(&made_by),
        "{said}"
    );
    let status = fs(&["status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        said.contains(&format!("  lost /m/a.txt (made by {made_by})")),
        "{said}"
    );
}
