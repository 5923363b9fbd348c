//! File-system semantics on a cluster inside the test process (FusionFS
//! scenarios): what the client library promises, daemon by daemon.

mod common;

use common::{eventually, names, rt, Cluster};
use locus_fs::{ClientOptions, Placement};
use locus_proto::fs::Kind;
use locus_proto::Errno;
use std::io::Write;

#[test]
fn fusionfs_visibility_across_nodes() {
    let c = Cluster::up(4);
    let rt = rt();
    let clients: Vec<_> = (0..4).map(|n| c.client(n)).collect();
    rt.block_on(async {
        // Create on node 1: visible from every node, held by node 1.
        clients[1].put("/f.txt", b"from node 1").await.unwrap();
        for cl in &clients {
            assert_eq!(cl.get("/f.txt").await.unwrap(), b"from node 1");
            assert_eq!(names(cl, "/").await, vec!["f.txt"]);
        }
        // Readers cached replicas: every node holds it now, node 1 first.
        let holders = clients[0].locate("/f.txt").await.unwrap();
        assert_eq!(holders[0], 1);
        assert_eq!(holders.len(), 4);

        // Modify on the last node: visible everywhere, the writer is now the only holder.
        let before = clients[0].stat("/f.txt").await.unwrap();
        let mut w = clients[3].open_write("/f.txt", false).await.unwrap();
        w.write_all(b", changed on node 3").unwrap();
        w.close().await.unwrap();
        let after = clients[0].stat("/f.txt").await.unwrap();
        assert_eq!(after.version, before.version + 1);
        assert_eq!(after.holders, vec![3]);
        for cl in &clients {
            assert_eq!(
                cl.get("/f.txt").await.unwrap(),
                b"from node 1, changed on node 3"
            );
            assert_eq!(cl.stat("/f.txt").await.unwrap().size, 30);
        }
        // Node 1 fetched the new version beside its stale copy, which the
        // write dropped once it was published.
        assert_eq!(
            std::fs::read(c.stored(1, "/f.txt", after.stamp)).unwrap(),
            b"from node 1, changed on node 3"
        );
        assert!(!c.stored(1, "/f.txt", before.stamp).exists());

        // Remove on node 1: gone everywhere, stored copies deleted.
        let stamp = clients[1].stat("/f.txt").await.unwrap().stamp;
        clients[1].unlink("/f.txt").await.unwrap();
        for cl in &clients {
            assert_eq!(cl.stat("/f.txt").await.unwrap_err().code, Errno::ENOENT);
            assert!(cl.readdir("/").await.unwrap().is_empty());
        }
        for n in 0..4 {
            assert!(
                !c.stored(n, "/f.txt", stamp).exists(),
                "copy left on node {n}"
            );
        }

        // Directories likewise.
        clients[1].mkdir("/d").await.unwrap();
        for cl in &clients {
            assert_eq!(cl.stat("/d").await.unwrap().kind, Kind::Dir);
        }
        clients[3].rmdir("/d").await.unwrap();
        for cl in &clients {
            assert_eq!(cl.stat("/d").await.unwrap_err().code, Errno::ENOENT);
        }
    });
}

#[test]
fn posix_errors_change_nothing() {
    let c = Cluster::up(3);
    let rt = rt();
    let cl = c.client(0);
    rt.block_on(async {
        cl.mkdir("/d").await.unwrap();
        cl.put("/d/a", b"x").await.unwrap();
        assert_eq!(cl.mkdir("/d").await.unwrap_err().code, Errno::EEXIST);
        assert_eq!(cl.create("/d/a").await.err().unwrap().code, Errno::EEXIST);
        assert_eq!(cl.rmdir("/d").await.unwrap_err().code, Errno::ENOTEMPTY);
        assert_eq!(cl.unlink("/d").await.unwrap_err().code, Errno::EISDIR);
        assert_eq!(cl.rmdir("/d/a").await.unwrap_err().code, Errno::ENOTDIR);
        assert_eq!(cl.readdir("/d/a").await.unwrap_err().code, Errno::ENOTDIR);
        assert_eq!(cl.mkdir("/d/a/b").await.unwrap_err().code, Errno::ENOTDIR);
        assert_eq!(cl.mkdir("/nope/b").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(cl.unlink("/nope").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(cl.get("/d").await.unwrap_err().code, Errno::EISDIR);
        assert_eq!(
            cl.open_write("/d", false).await.err().unwrap().code,
            Errno::EISDIR
        );
        assert_eq!(
            cl.rename("/d", "/d/inside").await.unwrap_err().code,
            Errno::EINVAL
        );
        for bad in ["/d/../etc/passwd", "relative", "/a\0b"] {
            assert_eq!(
                cl.stat(bad).await.unwrap_err().code,
                Errno::EINVAL,
                "{bad:?}"
            );
            assert_eq!(
                cl.put(bad, b"x").await.unwrap_err().code,
                Errno::EINVAL,
                "{bad:?}"
            );
        }
        // Nothing changed.
        assert_eq!(names(&cl, "/d").await, vec!["a"]);
        assert_eq!(cl.get("/d/a").await.unwrap(), b"x");
        assert_eq!(cl.readdir("/").await.unwrap().len(), 1);
    });
}

#[test]
fn second_writer_gets_ebusy() {
    let c = Cluster::up(2);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    rt.block_on(async {
        a.put("/f", b"v1").await.unwrap();
        let mut w = a.open_write("/f", true).await.unwrap();
        let err = b.open_write("/f", true).await.err().unwrap();
        assert_eq!(err.code, Errno::EBUSY);
        assert_eq!(b.rename("/f", "/g").await.unwrap_err().code, Errno::EBUSY);
        // Readers see the last closed version while the write is open.
        w.write_all(b"v2").unwrap();
        assert_eq!(b.get("/f").await.unwrap(), b"v1");
        w.close().await.unwrap();
        assert_eq!(b.get("/f").await.unwrap(), b"v2");
        // The lock is free again; a writer that gives up releases it too.
        let w = b.open_write("/f", false).await.unwrap();
        drop(w);
        for _ in 0..100 {
            match a.open_write("/f", false).await {
                Ok(w) => {
                    w.close().await.unwrap();
                    return;
                }
                Err(e) => assert_eq!(e.code, Errno::EBUSY),
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the dropped writer's lock was never released");
    });
}

#[test]
fn concurrent_creators_in_one_directory() {
    let c = Cluster::up(2);
    let rt = rt();
    rt.block_on(async {
        c.client(0).mkdir("/shared").await.unwrap();
        let mut tasks = Vec::new();
        for k in 0..4u32 {
            let cl = c.client(k % 2);
            tasks.push(tokio::spawn(async move {
                let mut inner = tokio::task::JoinSet::new();
                for chunk in 0..16 {
                    let cl = cl.clone();
                    inner.spawn(async move {
                        for i in (chunk..2000).step_by(16) {
                            cl.create_empty(&format!("/shared/c{k}-{i}")).await.unwrap();
                        }
                    });
                }
                while let Some(r) = inner.join_next().await {
                    r.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        // The same names again: every one is EEXIST, nothing is added.
        let cl = c.client(1);
        assert_eq!(
            cl.create_empty("/shared/c3-1999").await.unwrap_err().code,
            Errno::EEXIST
        );
        let entries = cl.readdir("/shared").await.unwrap();
        assert_eq!(entries.len(), 8000);
        let mut names: Vec<_> = entries.iter().map(|e| e.name.clone()).collect();
        names.dedup();
        assert_eq!(names.len(), 8000);
        // Paging: pages of 3,000 cover the same names in order.
        let mut paged = Vec::new();
        loop {
            let (page, more) = cl
                .readdir_page("/shared", paged.last().map(String::as_str), 3000)
                .await
                .unwrap();
            paged.extend(page.into_iter().map(|e| e.name));
            if !more {
                break;
            }
        }
        assert_eq!(paged, names);
    });
}

#[test]
fn rename_files_and_directories() {
    let c = Cluster::up(3);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(2));
    rt.block_on(async {
        a.mkdir_all("/src/sub").await.unwrap();
        a.put("/src/one.txt", b"1").await.unwrap();
        b.put("/src/sub/two.txt", b"2").await.unwrap();
        a.put("/target.txt", b"old").await.unwrap();

        // A file replaces an existing file; its data keeps its node.
        let stamp = a.stat("/src/one.txt").await.unwrap().stamp;
        a.rename("/src/one.txt", "/target.txt").await.unwrap();
        assert_eq!(b.get("/target.txt").await.unwrap(), b"1");
        assert_eq!(
            b.stat("/src/one.txt").await.unwrap_err().code,
            Errno::ENOENT
        );
        assert!(c.stored(0, "/target.txt", stamp).exists());
        let old = c.stored(0, "/src/one.txt", stamp);
        eventually("old name's copy deleted", || !old.exists());

        // A directory tree moves whole.
        a.rename("/src", "/dst").await.unwrap();
        assert_eq!(a.get("/dst/sub/two.txt").await.unwrap(), b"2");
        assert_eq!(a.stat("/src").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(names(&a, "/").await, vec!["dst", "target.txt"]);
        assert_eq!(
            a.rename("/dst", "/target.txt").await.unwrap_err().code,
            Errno::ENOTDIR
        );
        assert_eq!(
            a.rename("/target.txt", "/dst").await.unwrap_err().code,
            Errno::EISDIR
        );
        a.remove_all("/dst").await.unwrap();
        assert_eq!(a.readdir("/").await.unwrap().len(), 1);

        // A holder that lost its copy: the rename fails and changes nothing.
        let lost = b.put("/lost.txt", b"x").await.unwrap();
        std::fs::remove_file(c.stored(2, "/lost.txt", lost.stamp)).unwrap();
        assert_eq!(
            a.rename("/lost.txt", "/found.txt").await.unwrap_err().code,
            Errno::ENOENT
        );
        assert_eq!(a.stat("/found.txt").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(a.stat("/lost.txt").await.unwrap().holders, vec![2]);
        assert_eq!(names(&a, "/").await, vec!["lost.txt", "target.txt"]);
    });
}

/// Two identical renames at once, from two nodes and from one: exactly one
/// wins, the other fails cleanly, and the file is under the new name alone
/// with its bytes (before: both names and the bytes could be gone).
#[test]
fn concurrent_renames_of_one_file_leave_it_under_exactly_one_name() {
    let c = Cluster::up(2);
    let rt = rt();
    let clients = [c.client(0), c.client(1), c.client(0)];
    rt.block_on(async {
        for trial in 0..100 {
            let (from, to) = (format!("/r{trial}"), format!("/s{trial}"));
            let body = format!("the bytes of trial {trial}");
            let made = clients[trial % 2]
                .put(&from, body.as_bytes())
                .await
                .unwrap();
            let other = &clients[1 + trial % 2];
            let (a, b) = tokio::join!(clients[0].rename(&from, &to), other.rename(&from, &to));
            assert!(a.is_ok() || b.is_ok(), "trial {trial}: {a:?} {b:?}");
            for e in [a, b].into_iter().filter_map(Result::err) {
                assert!(
                    matches!(e.code, Errno::EBUSY | Errno::ENOENT),
                    "trial {trial}: {e}"
                );
            }
            for cl in &clients {
                assert_eq!(cl.stat(&from).await.unwrap_err().code, Errno::ENOENT);
                assert_eq!(cl.get(&to).await.unwrap(), body.as_bytes(), "trial {trial}");
            }
            let rec = clients[0].stat(&to).await.unwrap();
            assert_eq!((rec.stamp, rec.lock), (made.stamp, None));
        }
        let listed = names(&clients[1], "/").await;
        assert_eq!(listed.len(), 100);
        assert!(listed.iter().all(|n| n.starts_with('s')), "{listed:?}");
    });
}

/// Clients renaming the same files to new names at once, as fast as they
/// can: no file is lost or doubled, whatever order the renames win in.
#[test]
fn racing_renames_to_new_names_lose_no_file() {
    let c = Cluster::up(3);
    let rt = rt();
    let clients: Vec<_> = (0..3).map(|n| c.client(n)).collect();
    rt.block_on(async {
        clients[0].mkdir("/m").await.unwrap();
        for f in 0..4 {
            clients[f % 3]
                .put(&format!("/m/f{f}-0"), format!("file {f}").as_bytes())
                .await
                .unwrap();
        }
        let movers = clients.iter().enumerate().map(|(id, cl)| async move {
            for round in 0..40 {
                for name in names(cl, "/m").await {
                    let file = name.split('-').next().unwrap().to_string();
                    let to = format!("/m/{file}-{id}.{round}");
                    match cl.rename(&format!("/m/{name}"), &to).await {
                        Ok(()) => {}
                        Err(e) if matches!(e.code, Errno::EBUSY | Errno::ENOENT) => {}
                        Err(e) => panic!("{name} -> {to}: {e}"),
                    }
                }
            }
        });
        futures_util::future::join_all(movers).await;
        let left = names(&clients[0], "/m").await;
        assert_eq!(left.len(), 4, "{left:?}");
        for name in left {
            let file = name.split('-').next().unwrap()[1..].to_string();
            for cl in &clients {
                let got = cl.get(&format!("/m/{name}")).await.unwrap();
                assert_eq!(got, format!("file {file}").as_bytes());
            }
        }
    });
}

/// A rename onto a file being written waits for no one and changes
/// nothing (`EBUSY`); `rename_noreplace` never replaces.
#[test]
fn rename_onto_a_busy_or_taken_name_changes_nothing() {
    let c = Cluster::up(2);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    rt.block_on(async {
        a.put("/x", b"x").await.unwrap();
        b.put("/y", b"y").await.unwrap();
        let w = b.open_write("/y", true).await.unwrap();
        assert_eq!(a.rename("/x", "/y").await.unwrap_err().code, Errno::EBUSY);
        w.abort().await;
        assert_eq!(a.get("/x").await.unwrap(), b"x");
        assert_eq!(a.get("/y").await.unwrap(), b"y");
        assert_eq!(
            a.rename_noreplace("/x", "/y").await.unwrap_err().code,
            Errno::EEXIST
        );
        assert_eq!(a.get("/x").await.unwrap(), b"x");
        a.rename_noreplace("/x", "/z").await.unwrap();
        a.rename("/z", "/y").await.unwrap();
        assert_eq!(names(&b, "/").await, vec!["y"]);
        assert_eq!(b.get("/y").await.unwrap(), b"x");
        // The writer's lock on /x is free again and /y is unlocked.
        assert_eq!(b.stat("/y").await.unwrap().lock, None);
        b.open_write("/y", false).await.unwrap().abort().await;
    });
}

#[test]
fn placement_policies_and_hints() {
    let c = Cluster::up(4);
    let rt = rt();
    rt.block_on(async {
        // place() fixes the node of a file not yet created.
        let w0 = c.client(0);
        w0.place("/placed", 2).await.unwrap();
        let placed = w0.put("/placed", b"p").await.unwrap();
        assert_eq!(w0.locate("/placed").await.unwrap(), vec![2]);
        assert!(c.stored(2, "/placed", placed.stamp).exists());
        assert!(!c.stored(0, "/placed", placed.stamp).exists());
        assert_eq!(
            w0.place("/placed", 1).await.unwrap_err().code,
            Errno::EEXIST
        );
        assert_eq!(w0.place("/other", 9).await.unwrap_err().code, Errno::EINVAL);

        // round-robin spreads a client's new files evenly over the nodes.
        let rr = c.client_with(ClientOptions {
            node: 1,
            placement: Some(Placement::RoundRobin),
            ..ClientOptions::default()
        });
        let mut per_node = [0; 4];
        for i in 0..40 {
            let p = format!("/rr{i}");
            rr.put(&p, b"r").await.unwrap();
            per_node[rr.locate(&p).await.unwrap()[0] as usize] += 1;
        }
        assert_eq!(per_node, [10; 4]);

        // hash: a path's node does not depend on the writer.
        let h = |node| {
            c.client_with(ClientOptions {
                node,
                placement: Some(Placement::Hash),
                ..ClientOptions::default()
            })
        };
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..20 {
            let p = format!("/h{i}");
            h(i % 4).put(&p, b"h").await.unwrap();
            let at = w0.locate(&p).await.unwrap()[0];
            assert_eq!(at, locus_fs::hash_node(&p, 4));
            seen.insert(at);
        }
        assert!(seen.len() > 1);

        // A program's output registered with commit follows the policy too:
        // its bytes move to the hashed node and leave the writer's store.
        let writer = 3;
        let p = (0..)
            .map(|i| format!("/out{i}"))
            .find(|p| locus_fs::hash_node(p, 4) != writer)
            .unwrap();
        let home = locus_fs::hash_node(&p, 4);
        let out = h(writer).output(&p).unwrap();
        assert!(out.local.ends_with(&p[1..]));
        std::fs::write(&out.local, b"hashed output").unwrap();
        let rec = h(writer).commit(&out).await.unwrap();
        assert_eq!((rec.size, rec.holders.clone()), (13, vec![home]));
        assert!(!out.local.exists());
        assert_eq!(
            std::fs::read(c.stored(home, &p, rec.stamp)).unwrap(),
            b"hashed output"
        );
        // Rewriting it keeps it on the writer, as open_write does, and the
        // replaced version's copy goes.
        let again = h(writer).output(&p).unwrap();
        std::fs::write(&again.local, b"again").unwrap();
        let rec2 = h(writer).commit(&again).await.unwrap();
        assert_eq!(rec2.holders, vec![writer]);
        assert_eq!(w0.get(&p).await.unwrap(), b"again");
        assert!(!c.stored(home, &p, rec.stamp).exists());
    });
}

#[test]
fn local_path_and_commit_for_programs() {
    let c = Cluster::up(2);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    rt.block_on(async {
        // A program on node 1 writes in a private place in its store (the
        // file name kept); commit publishes it.
        let out = b.output("/results/out.dat").unwrap();
        assert!(out.local.starts_with(c.node_dir(1)) && out.local.ends_with("out.dat"));
        a.mkdir("/results").await.unwrap();
        std::fs::write(&out.local, b"computed").unwrap();
        let rec = b.commit(&out).await.unwrap();
        assert_eq!((rec.size, rec.holders.clone()), (8, vec![1]));
        let stored = b.local_path("/results/out.dat").await.unwrap();
        assert!(stored.ends_with("results/out.dat") || stored.ends_with("out.dat"));
        // A reader on node 0 gets a local path holding the bytes, and a replica is recorded.
        let p = a.local_path("/results/out.dat").await.unwrap();
        assert!(p.starts_with(c.node_dir(0)));
        assert_eq!(std::fs::read(&p).unwrap(), b"computed");
        assert_eq!(a.locate("/results/out.dat").await.unwrap(), vec![1, 0]);
        // Committing again after the program rewrote it bumps the version.
        let out = b.output("/results/out.dat").unwrap();
        std::fs::write(&out.local, b"recomputed").unwrap();
        let rec2 = b.commit(&out).await.unwrap();
        assert_eq!(rec2.version, rec.version + 1);
        assert_eq!(a.get("/results/out.dat").await.unwrap(), b"recomputed");
        // A file created but never written reads as empty.
        a.create_empty("/results/empty").await.unwrap();
        assert_eq!(b.get("/results/empty").await.unwrap(), b"");
        // Commit and put make the missing parents of what they publish; a
        // parent that is a file is refused and publishes nothing.
        let out = b.output("/deep/er/out.dat").unwrap();
        std::fs::write(&out.local, b"nested").unwrap();
        b.commit(&out).await.unwrap();
        assert_eq!(a.get("/deep/er/out.dat").await.unwrap(), b"nested");
        assert_eq!(a.stat("/deep/er").await.unwrap().kind, Kind::Dir);
        a.put("/other/side/x", b"x").await.unwrap();
        assert_eq!(b.get("/other/side/x").await.unwrap(), b"x");
        let out = b.output("/results/empty/out.dat").unwrap();
        std::fs::write(&out.local, b"nowhere").unwrap();
        let e = b.commit(&out).await.unwrap_err();
        assert_eq!(e.code, Errno::ENOTDIR, "{e}");
        b.discard(&out);
        assert_eq!(a.get("/results/empty").await.unwrap(), b"");
    });
}

#[test]
fn a_diskless_client_moves_every_byte_over_the_network() {
    let c = Cluster::up(1);
    let rt = rt();
    let scratch = tempfile::tempdir().unwrap();
    let node = c.client(0);
    let remote = c.client_with(ClientOptions {
        node: 0,
        scratch: Some(scratch.path().to_path_buf()),
        ..ClientOptions::default()
    });
    rt.block_on(async {
        // Written through the diskless client: stored on the node, not in the scratch.
        let rec = remote.put("/w.dat", b"written").await.unwrap();
        assert_eq!(
            std::fs::read(c.stored(0, "/w.dat", rec.stamp)).unwrap(),
            b"written"
        );
        assert!(!scratch
            .path()
            .join("data")
            .join(format!("@{:016x}", rec.stamp))
            .exists());
        // Read: staged in the scratch, never recorded as a holder; read
        // again from there while it is as it was checked (a task's mount
        // opening what its worker staged), else staged again.
        node.put("/r.dat", b"on the node").await.unwrap();
        let copy = remote.local_copy("/r.dat").await.unwrap();
        assert!(copy.fetched && copy.path.starts_with(scratch.path()));
        assert_eq!(std::fs::read(&copy.path).unwrap(), b"on the node");
        assert_eq!(remote.locate("/r.dat").await.unwrap(), vec![0]);
        let again = remote.local_copy("/r.dat").await.unwrap();
        assert!(!again.fetched && again.path == copy.path);
        std::fs::remove_file(&copy.path).unwrap();
        assert!(remote.local_copy("/r.dat").await.unwrap().fetched);
        // A program's output is pushed to the node on commit and leaves the scratch.
        let out = remote.output("/prog.out").unwrap();
        std::fs::write(&out.local, b"program output").unwrap();
        let rec = remote.commit(&out).await.unwrap();
        assert_eq!((rec.size, rec.holders), (14, vec![0]));
        assert!(!out.local.exists());
        assert_eq!(node.get("/prog.out").await.unwrap(), b"program output");
    });
}

#[test]
fn large_files_fetch_intact_over_parallel_streams_and_same_host_copies() {
    let c = Cluster::up(3);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    // Node 2 fetches over TCP although its holders share this host.
    let tcp = c.tcp_client(2);
    // Bytes that differ everywhere, so a misplaced range cannot go unnoticed.
    let data: Vec<u8> = (0..(20u64 << 20) + 12_345)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    rt.block_on(async {
        a.put("/big.bin", &data).await.unwrap();
        assert!(
            b.get("/big.bin").await.unwrap() == data,
            "bytes copied from a holder on this host differ"
        );
        assert!(
            tcp.get("/big.bin").await.unwrap() == data,
            "bytes fetched over TCP streams differ"
        );
        assert_eq!(a.locate("/big.bin").await.unwrap(), vec![0, 1, 2]);
        // Appending on the remote node fetches the current bytes first.
        let mut w = b.open_write("/big.bin", false).await.unwrap();
        w.write_all(b"tail").unwrap();
        w.close().await.unwrap();
        let got = a.get("/big.bin").await.unwrap();
        assert_eq!(got.len(), data.len() + 4);
        assert!(got[..data.len()] == data[..] && got.ends_with(b"tail"));
        assert_eq!(a.locate("/big.bin").await.unwrap(), vec![1, 0]);
    });
}

#[test]
fn nodes_stage_files_themselves_and_a_failed_copy_changes_nothing() {
    let c = Cluster::up(2);
    let host = tempfile::tempdir().unwrap();
    let src = host.path().join("src.bin");
    std::fs::write(&src, vec![7u8; 300_000]).unwrap();
    let rt = rt();
    // Round-robin from node 0: every other file is read in by node 1.
    let cl = c.client_with(ClientOptions {
        node: 0,
        placement: Some(Placement::RoundRobin),
        ..ClientOptions::default()
    });
    rt.block_on(async {
        cl.mkdir("/imp").await.unwrap();
        let mut holders = Vec::new();
        for i in 0..4 {
            let rec = cl.import(&format!("/imp/{i}"), &src).await.unwrap();
            assert_eq!(rec.size, 300_000);
            holders.push(rec.holders[0]);
            let out = host.path().join(format!("out{i}"));
            assert_eq!(
                cl.export(&format!("/imp/{i}"), &out).await.unwrap(),
                300_000
            );
            assert_eq!(std::fs::read(&out).unwrap(), vec![7u8; 300_000]);
        }
        holders.sort();
        assert_eq!(holders, [0, 0, 1, 1]);

        cl.put("/kept", b"acknowledged").await.unwrap();
        let missing = host.path().join("missing");
        for path in ["/kept", "/new"] {
            let err = cl.import(path, &missing).await.unwrap_err();
            assert_eq!(err.code, Errno::ENOENT, "{err}");
        }
        assert_eq!(cl.get("/kept").await.unwrap(), b"acknowledged");
        assert_eq!(cl.stat("/new").await.unwrap_err().code, Errno::ENOENT);
        // Nothing stays locked or half-made.
        cl.put("/kept", b"v2").await.unwrap();
        let nowhere = host.path().join("no/such/dir/out");
        assert_eq!(
            cl.export("/kept", &nowhere).await.unwrap_err().code,
            Errno::ENOENT
        );
        assert!(!nowhere.parent().unwrap().exists());
    });
}

#[test]
fn a_version_is_fetched_once_per_node_however_many_clients_want_it() {
    let c = Cluster::up(2);
    let rt = rt();
    let data: Vec<u8> = (0..24u32 << 20).map(|i| (i % 253) as u8).collect();
    rt.block_on(c.client(0).put("/shared.bin", &data)).unwrap();
    // Three clients of node 1 (as three tasks' processes would be) open it
    // at once: one fetches, the others wait for it and use its copy.
    let readers: Vec<_> = (0..3).map(|_| c.client(1)).collect();
    let copies = rt.block_on(async {
        let (a, b, d) = tokio::join!(
            readers[0].local_copy("/shared.bin"),
            readers[1].local_copy("/shared.bin"),
            readers[2].local_copy("/shared.bin")
        );
        [a.unwrap(), b.unwrap(), d.unwrap()]
    });
    let fetched = copies.iter().filter(|c| c.fetched).count();
    assert_eq!(fetched, 1, "{copies:?}");
    assert!(copies.iter().all(|c| c.path == copies[0].path));
    assert_eq!(std::fs::read(&copies[0].path).unwrap(), data);
    let holders = rt.block_on(c.client(0).locate("/shared.bin")).unwrap();
    assert_eq!(holders, vec![0, 1]);
}

#[test]
fn a_copy_made_from_a_record_read_earlier_follows_what_changed_since() {
    let c = Cluster::up(3);
    let (zero, one, two) = (c.client(0), c.client(1), c.client(2));
    rt().block_on(async {
        let old = one.put("/moved.txt", b"first").await.unwrap();
        // Rewritten from another node: the first version's copies are gone.
        zero.put("/moved.txt", b"second").await.unwrap();
        eventually("the old copy is dropped", || {
            !c.stored(1, "/moved.txt", old.stamp).exists()
        });
        let copy = two.local_copy_from("/moved.txt", Some(&old)).await.unwrap();
        assert_ne!(copy.stamp, old.stamp);
        assert_eq!(std::fs::read(&copy.path).unwrap(), b"second");
        // A record that still leads to the bytes is used as it is.
        let now = two.stat("/moved.txt").await.unwrap();
        let again = two.local_copy_from("/moved.txt", Some(&now)).await.unwrap();
        assert_eq!((again.stamp, again.fetched), (now.stamp, false));
    });
}

#[test]
fn a_programs_outputs_are_registered_together_each_with_its_own_answer() {
    let c = Cluster::up(3);
    let client = c.client(0);
    rt().block_on(async {
        client.put("/batch/old.txt", b"old").await.unwrap();
        // New files in new directories (kept by any daemon), a rewrite, and
        // a directory where a file was expected.
        let mut paths: Vec<String> = (0..12).map(|i| format!("/batch/d{}/f{i}", i % 3)).collect();
        paths.push("/batch/old.txt".into());
        paths.push("/batch/dir".into());
        let outs: Vec<_> = paths.iter().map(|p| client.output(p).unwrap()).collect();
        for (o, p) in outs.iter().zip(&paths) {
            match p.ends_with("dir") {
                true => std::fs::create_dir(&o.local).unwrap(),
                false => std::fs::write(&o.local, p.as_bytes()).unwrap(),
            }
        }
        let results = client.commit_all(&outs).await;
        assert_eq!(results.len(), paths.len());
        for (r, p) in results.iter().zip(&paths) {
            if p.ends_with("dir") {
                assert_eq!(r.as_ref().unwrap_err().code, Errno::EISDIR);
                continue;
            }
            let rec = r.as_ref().unwrap();
            let want = if p.ends_with("old.txt") { 2 } else { 1 };
            assert_eq!((rec.version, rec.size), (want, p.len() as u64), "{p}");
            assert_eq!(c.client(2).get(p).await.unwrap(), p.as_bytes());
        }
        assert_eq!(names(&client, "/batch/d1").await, ["f1", "f10", "f4", "f7"]);
    });
}

/// Closes `w` as a mount does in a lent directory: at once, published after.
async fn close_later(w: locus_fs::Writer) -> locus_proto::fs::Record {
    match w.close_later().await {
        Ok(rec) => rec,
        Err(_) => panic!("not a new file of a lent directory"),
    }
}

#[test]
fn a_lent_directory_answers_for_its_names_and_every_closed_file_is_seen_elsewhere() {
    let c = Cluster::up(3);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    rt.block_on(async {
        a.mkdir("/d").await.unwrap();
        assert!(a.delegate("/d").await.unwrap());
        assert!(!b.delegate("/d").await.unwrap(), "lent to one client");
        a.mkdir("/full").await.unwrap();
        a.put("/full/x", b"x").await.unwrap();
        assert!(!a.delegate("/full").await.unwrap(), "only empty ones");
        for i in 0..20 {
            let mut w = a
                .create_with_mode(&format!("/d/f{i}"), 0o600)
                .await
                .unwrap();
            write!(w, "file {i}").unwrap();
            let rec = close_later(w).await;
            assert_eq!((rec.size, rec.mode), (6 + u64::from(i >= 10), 0o600));
            // The holder answers for its names, published or not.
            assert_eq!(a.stat(&format!("/d/f{i}")).await.unwrap().stamp, rec.stamp);
        }
        assert_eq!(a.stat("/d/none").await.unwrap_err().code, Errno::ENOENT);
        assert_eq!(a.create("/d/f3").await.err().unwrap().code, Errno::EEXIST);
        // Another node sees every closed file (close-to-open): looking
        // recalls the directory, and the holder publishes first; none is
        // ever seen named but empty (the last ones are still in flight).
        for i in (0..20).rev() {
            assert_eq!(
                b.get(&format!("/d/f{i}")).await.unwrap(),
                format!("file {i}").as_bytes()
            );
            assert_eq!(b.stat(&format!("/d/f{i}")).await.unwrap().mode, 0o600);
        }
        assert_eq!(names(&b, "/d").await.len(), 20);
        // Given back: the holder's new names go the usual way again.
        let w = a.create("/d/late").await.unwrap();
        assert_eq!(b.stat("/d/late").await.unwrap().size, 0);
        w.close().await.unwrap();
        // Lent again once empty; the holder's own listing gives it back.
        a.mkdir("/e").await.unwrap();
        assert!(a.delegate("/e").await.unwrap());
        for i in 0..5 {
            close_later(a.create(&format!("/e/g{i}")).await.unwrap()).await;
        }
        assert_eq!(names(&a, "/e").await.len(), 5);
        assert!(b.delegate("/e").await.is_ok_and(|lent| !lent));
    });
}

#[test]
fn empty_files_are_names_of_one_stored_file_and_their_spares_are_written_again() {
    use std::os::unix::fs::MetadataExt;
    let c = Cluster::up(2);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    let ino_on = |node, path: &str, stamp| {
        let stored = c.stored(node, path, stamp);
        std::fs::metadata(stored).unwrap().ino()
    };
    let ino = |path: &str, stamp| ino_on(0, path, stamp);
    // The lent directory's empty files made ahead, in node 0's tmp/: by
    // name, with their inodes.
    let spares = || -> std::collections::BTreeMap<std::path::PathBuf, u64> {
        let tmp = walkdir(&c.node_dir(0).join("tmp"));
        tmp.into_iter()
            .map(|f| (f.clone(), std::fs::metadata(f).unwrap().ino()))
            .collect()
    };
    rt.block_on(async {
        a.mkdir("/d").await.unwrap();
        assert!(a.delegate("/d").await.unwrap());
        close_later(a.create("/d/first").await.unwrap()).await;
        a.settle_dir("/d").await.unwrap();
        // Made ahead by a thread of their own: until no more come.
        let settled = || {
            let n = spares().len();
            std::thread::sleep(std::time::Duration::from_millis(200));
            n >= 64 && spares().len() == n
        };
        eventually("empty files made ahead", settled);
        let made = spares();
        // Empty files take spares and give them back once published (no
        // more are made: half the spares are left), then written ones are
        // written in them.
        let mut empty = Vec::new();
        for i in 0..30 {
            let path = format!("/d/e{i}");
            let rec = close_later(a.create(&path).await.unwrap()).await;
            empty.push((path, rec.stamp));
        }
        a.settle_dir("/d").await.unwrap();
        assert_eq!(spares(), made);
        let mut written = Vec::new();
        for i in 0..30 {
            let path = format!("/d/w{i}");
            let mut w = a.create(&path).await.unwrap();
            write!(w, "{path}").unwrap();
            written.push((path.clone(), close_later(w).await.stamp));
        }
        a.settle_dir("/d").await.unwrap();
        assert_eq!(spares().len(), made.len() - 30);
        let shared = ino(&empty[0].0, empty[0].1);
        assert!(empty.iter().all(|(p, s)| ino(p, *s) == shared));
        let mut inodes: Vec<u64> = written.iter().map(|(p, s)| ino(p, *s)).collect();
        inodes.sort_unstable();
        inodes.dedup();
        assert_eq!(inodes.len(), written.len());
        assert!(inodes.iter().all(|i| made.values().any(|m| m == i)));
        // Read elsewhere, an empty file is not fetched: it is a name of
        // that node's own empty file.
        for (path, _) in &empty {
            assert_eq!(b.get(path).await.unwrap(), b"");
        }
        let theirs = ino_on(1, &empty[0].0, empty[0].1);
        assert!(empty.iter().all(|(p, s)| ino_on(1, p, *s) == theirs));
        for (path, _) in &written {
            assert_eq!(b.get(path).await.unwrap(), path.as_bytes());
        }
    });
}

/// The files under `dir`, at any depth.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        match entry.file_type().unwrap().is_dir() {
            true => files.extend(walkdir(&entry.path())),
            false => files.push(entry.path()),
        }
    }
    files
}

#[test]
fn a_file_open_in_a_lent_directory_is_claimed_when_another_node_looks() {
    let c = Cluster::up(3);
    let rt = rt();
    let (a, b) = (c.client(0), c.client(1));
    rt.block_on(async {
        a.mkdir("/d").await.unwrap();
        assert!(a.delegate("/d").await.unwrap());
        let mut names_open = Vec::new();
        let mut writers = Vec::new();
        for i in 0..6 {
            let path = format!("/d/open{i}");
            let mut w = a.create(&path).await.unwrap();
            w.write_all(b"being written").unwrap();
            writers.push(w);
            names_open.push(path);
        }
        // Looking recalls the directory: the open files are named, locked
        // by their writers, and empty until closed.
        for path in &names_open {
            let rec = b.stat(path).await.unwrap();
            assert_eq!((rec.size, rec.version), (0, 0));
            assert_eq!(
                b.open_write(path, true).await.err().unwrap().code,
                Errno::EBUSY
            );
            assert_eq!(b.create(path).await.err().unwrap().code, Errno::EEXIST);
        }
        for w in writers {
            // A claimed file is closed as any other.
            let Err(w) = w.close_later().await else {
                panic!("closed later although claimed");
            };
            w.close().await.unwrap();
        }
        for path in &names_open {
            assert_eq!(b.get(path).await.unwrap(), b"being written");
        }
        let mut w = a.create("/d/open0x").await.unwrap();
        w.write_all(b"after").unwrap();
        w.close().await.unwrap();
        assert_eq!(b.get("/d/open0x").await.unwrap(), b"after");
    });
}

#[test]
fn a_stopped_cluster_is_read_from_its_stores_as_it_was_and_nothing_is_written() {
    let mut c = Cluster::up(3);
    let rt = rt();
    let stamp = rt.block_on(async {
        let (a, b) = (c.client(0), c.client(2));
        a.mkdir_all("/out/sub").await.unwrap();
        a.put("/out/a.txt", b"alpha").await.unwrap();
        b.put("/out/sub/b.txt", b"beta on node 2").await.unwrap();
        b.put("/out/empty", b"").await.unwrap();
        a.put("/bad.txt", b"will be changed on disk")
            .await
            .unwrap()
            .stamp
    });
    for n in 0..3 {
        c.c.crash(n).unwrap();
    }
    let spec = c.c.spec().unwrap();
    // What each node keeps, to see that reading wrote nothing.
    let kept = |n: u32| {
        let dir = c.node_dir(n);
        let meta = std::fs::read(dir.join(locus_fs::META_FILE)).unwrap();
        (
            meta,
            std::fs::metadata(dir.join("data"))
                .unwrap()
                .modified()
                .unwrap(),
        )
    };
    let before: Vec<_> = (0..3).map(kept).collect();
    let fs = locus_fs::Offline::open(&spec).unwrap();
    let names: Vec<_> = (fs.readdir("/out").unwrap().into_iter())
        .map(|e| (e.name, e.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("a.txt".to_string(), Kind::File),
            ("empty".to_string(), Kind::File),
            ("sub".to_string(), Kind::Dir)
        ]
    );
    let read = |p: &str| {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut fs.open_read(p).unwrap(), &mut s).unwrap();
        s
    };
    assert_eq!(read("/out/sub/b.txt"), "beta on node 2");
    assert_eq!(read("/out/empty"), "");
    assert_eq!(fs.stat("/nope").unwrap_err().code, Errno::ENOENT);
    assert_eq!(fs.open_read("/out").unwrap_err().code, Errno::EISDIR);
    // A tree out, as `cp -r` names it.
    let dest = tempfile::tempdir().unwrap();
    assert_eq!(fs.get_tree("/out", dest.path()).unwrap(), (3, 19));
    let got = std::fs::read_to_string(dest.path().join("out/sub/b.txt")).unwrap();
    assert_eq!(got, "beta on node 2");
    // Changed bytes on disk are not served.
    let copy = c.stored(0, "/bad.txt", stamp);
    std::fs::write(&copy, b"will be chanGed on disk").unwrap();
    let e = fs.open_read("/bad.txt").unwrap_err();
    assert_eq!(e.code, Errno::EIO);
    assert!(e.to_string().contains("no good copy"), "{e}");
    std::fs::write(&copy, b"will be changed on disk").unwrap();
    assert_eq!(read("/bad.txt"), "will be changed on disk");
    drop(fs);
    assert_eq!((0..3).map(kept).collect::<Vec<_>>(), before);
}
