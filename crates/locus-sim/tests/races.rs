//! Races the simulation found, pinned down in process: each loops over
//! the interleavings that broke a promise before its fix.

mod common;

use common::{rt, Cluster, Gate, Pick};
use locus_fs::{Client, ClientOptions, Transport};
use locus_proto::fs::Request;
use locus_proto::{Errno, FsResult};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

fn client(c: &Cluster, node: u32) -> Client {
    c.client_with(ClientOptions {
        node,
        timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    })
}

/// A name in `dir` whose record the daemon keeping `dir`'s entries keeps
/// too (`same`), or another one does.
fn name_in(c: &Client, dir: &str, same: bool) -> String {
    (0..64)
        .map(|i| format!("{dir}/f{i}"))
        .find(|p| (c.owner(p) == c.owner(dir)) == same)
        .expect("a name of each kind among 64")
}

async fn create_whole(c: &Client, path: &str, data: &[u8]) -> FsResult<()> {
    let mut w = c.create(path).await?;
    w.write_all(data).expect("write to a local file");
    w.close().await.map(drop)
}

#[test]
fn an_unlink_racing_a_create_of_the_name_leaves_the_new_file_whole_or_none() {
    let cluster = Cluster::with(2, 1);
    let c = client(&cluster, 1);
    rt().block_on(async {
        c.mkdir("/d").await.unwrap();
        for same in [false, true] {
            let path = name_in(&c, "/d", same);
            for i in 0..60u64 {
                c.put(&path, b"old").await.unwrap();
                let unlink = {
                    let (c, path) = (c.clone(), path.clone());
                    tokio::spawn(async move { c.unlink(&path).await })
                };
                tokio::time::sleep(Duration::from_micros(i % 6 * 300)).await;
                let made = if i % 2 == 0 {
                    create_whole(&c, &path, b"new").await
                } else {
                    c.put(&path, b"new").await.map(drop)
                };
                unlink.await.unwrap().unwrap();
                let listed = c
                    .readdir("/d")
                    .await
                    .unwrap()
                    .iter()
                    .any(|e| path.ends_with(&e.name));
                let read = c.get(&path).await.map_err(|e| e.code);
                match made {
                    // After the unlink: the new file, whole and named.
                    Ok(()) => {
                        assert_eq!((listed, read), (true, Ok(b"new".to_vec())), "{path} #{i}");
                    }
                    // Refused while the old file was there or being
                    // removed (its lock held by the unlink): none left.
                    Err(e) => {
                        assert!(
                            matches!(e.code, Errno::EEXIST | Errno::EBUSY),
                            "{path} #{i}: {e}"
                        );
                        assert_eq!((listed, read), (false, Err(Errno::ENOENT)), "{path} #{i}");
                    }
                }
                let _ = c.unlink(&path).await;
            }
        }
    });
}

#[test]
fn an_unlink_racing_a_rename_or_a_put_of_the_file_leaves_one_of_their_orders() {
    let cluster = Cluster::with(2, 1);
    let (c, other) = (client(&cluster, 0), client(&cluster, 1));
    rt().block_on(async {
        c.mkdir("/d").await.unwrap();
        let from = name_in(&c, "/d", false);
        let to = format!("{from}-renamed");
        for i in 0..40u64 {
            c.put(&from, b"old").await.unwrap();
            let unlink = {
                let (c, from) = (other.clone(), from.clone());
                tokio::spawn(async move { c.unlink(&from).await.map_err(|e| e.code) })
            };
            tokio::time::sleep(Duration::from_micros(i % 8 * 250)).await;
            let read = |p: String| {
                let c = c.clone();
                async move { c.get(&p).await.map_err(|e| e.code) }
            };
            if i % 2 == 0 {
                let renamed = c.rename(&from, &to).await.map_err(|e| e.code);
                let unlinked = unlink.await.unwrap();
                let (at_from, at_to) = (read(from.clone()).await, read(to.clone()).await);
                match (renamed, unlinked) {
                    // Renamed, then the unlink found nothing or the lock.
                    (Ok(()), Err(Errno::ENOENT | Errno::EBUSY)) => {
                        assert_eq!(at_to, Ok(b"old".to_vec()), "#{i}");
                    }
                    // Unlinked first: nothing anywhere.
                    (Err(Errno::ENOENT | Errno::EBUSY), Ok(())) => {
                        assert_eq!(at_to, Err(Errno::ENOENT), "#{i}: unlinked, yet renamed");
                    }
                    other => panic!("#{i}: rename and unlink answered {other:?}"),
                }
                assert_eq!(at_from, Err(Errno::ENOENT), "#{i}");
                let _ = c.unlink(&to).await;
            } else {
                // A put onto a name being unlinked makes it anew.
                c.put(&from, b"new").await.unwrap();
                let unlinked = unlink.await.unwrap();
                let listed = c
                    .readdir("/d")
                    .await
                    .unwrap()
                    .iter()
                    .any(|e| from.ends_with(&e.name));
                let at_from = read(from.clone()).await;
                match unlinked {
                    Ok(()) | Err(Errno::EBUSY) if listed => {
                        assert_eq!(at_from, Ok(b"new".to_vec()), "#{i}");
                    }
                    Ok(()) => assert_eq!(at_from, Err(Errno::ENOENT), "#{i}"),
                    other => panic!("#{i}: unlink answered {other:?}, listed: {listed}"),
                }
            }
        }
    });
}

#[test]
fn an_unlink_answered_before_its_daemon_crashed_stays_done_on_the_replica() {
    let rt = rt();
    for i in 0..16u64 {
        let cluster = Cluster::with(3, 2);
        let (writer, reader) = (client(&cluster, 2), client(&cluster, 1));
        let keeper = writer.owner("/d");
        let cluster = Arc::new(Mutex::new(cluster));
        rt.block_on(async {
            writer.mkdir("/d").await.unwrap();
            let path = name_in(&writer, "/d", false);
            writer.put(&path, b"x").await.unwrap();
            let unlink = {
                let (c, path) = (writer.clone(), path.clone());
                tokio::spawn(async move { c.unlink(&path).await })
            };
            tokio::time::sleep(Duration::from_micros(i * 150)).await;
            let crash = cluster.clone();
            tokio::task::spawn_blocking(move || crash.lock().unwrap().c.crash(keeper).unwrap())
                .await
                .unwrap();
            if unlink.await.unwrap().is_ok() {
                let names = reader.readdir("/d").await.unwrap();
                assert!(names.is_empty(), "#{i}: {path} listed again: {names:?}");
            }
        });
    }
}

/// One whole version of the overwrite test's file: `version N` on
/// 1 + N % 50 lines.
fn version(i: u32) -> String {
    format!("version {i}\n").repeat(1 + i as usize % 50)
}

fn is_whole_version(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some(i) = text
        .strip_prefix("version ")
        .and_then(|t| t.split('\n').next()?.parse::<u32>().ok())
    else {
        return false;
    };
    text == version(i)
}

#[test]
fn readers_racing_overwrites_see_the_old_or_the_new_version_never_no_file() {
    use std::sync::atomic::{AtomicU32, Ordering};
    const READS: u32 = 10_000;
    let cluster = Cluster::with(3, 1);
    let writers = [client(&cluster, 0), client(&cluster, 1)];
    rt().block_on(async {
        writers[0].mkdir("/d").await.unwrap();
        writers[0].put("/d/f", version(0).as_bytes()).await.unwrap();
        let reads = Arc::new(AtomicU32::new(0));
        // Readers on the writers' nodes (whose copies are dropped as they
        // read them) and on another, each reading as `get`, `open_read`
        // and `read_range` do.
        let readers: Vec<_> = (0..3)
            .map(|node| {
                let (r, reads) = (client(&cluster, node), reads.clone());
                tokio::spawn(async move {
                    loop {
                        let n = reads.fetch_add(1, Ordering::Relaxed);
                        if n >= READS {
                            return;
                        }
                        let got = match n % 3 {
                            0 => r.get("/d/f").await,
                            1 => r.read_range("/d/f", 0, u64::MAX).await,
                            _ => r.open_read("/d/f").await.and_then(|mut f| {
                                let mut bytes = Vec::new();
                                std::io::Read::read_to_end(&mut f, &mut bytes)
                                    .map(|_| bytes)
                                    .map_err(|e| locus_proto::FsError::io("/d/f", &e))
                            }),
                        };
                        let got = got.unwrap_or_else(|e| panic!("read #{n} on node {node}: {e}"));
                        assert!(is_whole_version(&got), "read #{n} on node {node}: {got:?}");
                    }
                })
            })
            .collect();
        let mut i = 1;
        // (A reader that failed stops the writes too.)
        while reads.load(Ordering::Relaxed) < READS
            && !readers.iter().any(tokio::task::JoinHandle::is_finished)
        {
            let w = &writers[i as usize % 2];
            w.put("/d/f", version(i).as_bytes()).await.unwrap();
            i += 1;
        }
        for r in readers {
            r.await.unwrap();
        }
    });
}

#[test]
fn a_file_made_in_a_directory_named_but_not_yet_recorded_is_made() {
    // Where two daemons keep a directory's name and its record, `mkdir`
    // adds the name first: a create inside it meanwhile (`mkdir -p d &&
    // echo > d/f` run by two tasks at once) waits for the record.
    let cluster = Cluster::up(2);
    let plain = client(&cluster, 0);
    let dir = (0..64)
        .map(|i| format!("/d{i}"))
        .find(|d| plain.owner(d) != plain.owner("/"))
        .expect("a directory kept apart from its name among 64");
    let (held, open) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let gated = |hold: Pick, opens: Pick| {
        let (held, open) = (held.clone(), open.clone());
        let opts = ClientOptions::default();
        let wrap = |inner| -> Arc<dyn Transport> {
            Arc::new(Gate {
                inner,
                hold,
                opens,
                held,
                open,
            })
        };
        cluster.c.client_over(opts, wrap).expect("client")
    };
    let d = dir.clone();
    let maker = gated(
        Box::new(move |r| matches!(r, Request::CreateRecord { path, .. } if *path == d)),
        Box::new(|_| false),
    );
    // The record is let through once the other client asks for it.
    let d = dir.clone();
    let other = gated(
        Box::new(|_| false),
        Box::new(move |r| matches!(r, Request::GetRecord { path } if *path == d)),
    );
    rt().block_on(async {
        let mkdir = {
            let dir = dir.clone();
            tokio::spawn(async move { maker.mkdir(&dir).await })
        };
        held.notified().await;
        let made = create_whole(&other, &format!("{dir}/f"), b"x").await;
        open.notify_one();
        made.expect("a file in a directory being made");
        mkdir.await.unwrap().expect("the mkdir");
        other.mkdir_all(&dir).await.expect("mkdir -p of it after");
        assert_eq!(plain.get(&format!("{dir}/f")).await.unwrap(), b"x");
    });
}
