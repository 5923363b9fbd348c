//! `locus fs mount`: real FUSE mounts of a real local cluster, used by
//! unmodified programs.

mod common;

use common::{is_root, ok, rt, TestCluster};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A mount of one node, unmounted (lazily, so a failed test cannot hang
/// on it) when dropped.
struct Mount {
    point: PathBuf,
    cluster: PathBuf,
    _dir: tempfile::TempDir,
}

impl Mount {
    fn of(c: &TestCluster, node: u32) -> Mount {
        let dir = tempfile::tempdir().unwrap();
        let point = dir.path().join("locus");
        std::fs::create_dir(&point).unwrap();
        let n = node.to_string();
        let p = point.to_str().unwrap();
        ok(&c.fs(&["mount", "--node", &n, p]));
        Mount {
            point,
            cluster: c.path().to_path_buf(),
            _dir: dir,
        }
    }

    fn at(&self, path: &str) -> PathBuf {
        self.point.join(path.trim_start_matches('/'))
    }

    fn mounted(&self) -> bool {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let p = self.point.to_str().unwrap();
        table.lines().any(|l| l.split(' ').nth(4) == Some(p))
    }

    fn umount(&self) -> std::process::Output {
        common::locus(&["fs", "umount", self.point.to_str().unwrap()])
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for e in std::fs::read_dir(&self.cluster).into_iter().flatten() {
                let p = e.unwrap().path();
                if p.to_string_lossy().ends_with(".log") {
                    eprintln!("{}:\n{}", p.display(), std::fs::read_to_string(&p).unwrap());
                }
            }
        }
        if self.mounted() {
            common::locus(&["fs", "umount", "--lazy", self.point.to_str().unwrap()]);
        }
    }
}

/// Mounts need root and /dev/fuse; without them these tests say so and pass.
fn can_mount() -> bool {
    let can = is_root() && Path::new("/dev/fuse").exists();
    if !can {
        eprintln!("skipped: mounting needs root and /dev/fuse");
    }
    can
}

fn sh(dir: &Path, script: &str) -> String {
    let out = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    ok(&out)
}

#[test]
fn fusionfs_visibility_through_mounts_of_different_nodes() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(3);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    let client = c.client(2);
    let rt = rt();

    // Written on node 0: every mount sees it; it lives on node 0.
    std::fs::create_dir(m0.at("/d")).unwrap();
    std::fs::write(m0.at("/d/f.txt"), "first").unwrap();
    assert_eq!(std::fs::read_to_string(m1.at("/d/f.txt")).unwrap(), "first");
    let rec = rt.block_on(client.stat("/d/f.txt")).unwrap();
    assert_eq!((rec.version, rec.holders.clone()), (1, vec![0, 1]));
    let names: Vec<_> = std::fs::read_dir(m1.at("/d"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["f.txt"]);

    // Rewritten longer on node 1: node 0 reads all of the new version at
    // once (no stale size cuts it short), node 1 is the only holder.
    std::fs::write(m1.at("/d/f.txt"), "second, and longer").unwrap();
    assert_eq!(
        std::fs::read_to_string(m0.at("/d/f.txt")).unwrap(),
        "second, and longer"
    );
    assert_eq!(std::fs::metadata(m0.at("/d/f.txt")).unwrap().len(), 18);
    let rec = rt.block_on(client.stat("/d/f.txt")).unwrap();
    assert_eq!(rec.version, 2);
    assert_eq!(rec.holders[0], 1);

    // A reader keeps the version it opened while a new one is published.
    let reader = std::fs::File::open(m0.at("/d/f.txt")).unwrap();
    std::fs::write(m1.at("/d/f.txt"), "third").unwrap();
    let mut old = String::new();
    std::io::Read::read_to_string(&mut &reader, &mut old).unwrap();
    assert_eq!(old, "second, and longer");
    assert_eq!(std::fs::read_to_string(m0.at("/d/f.txt")).unwrap(), "third");

    // Writes through the client library show in the mounts, and back.
    rt.block_on(client.put("/d/g.txt", b"from the library"))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(m1.at("/d/g.txt")).unwrap(),
        "from the library"
    );
    assert_eq!(
        rt.block_on(client.get("/d/f.txt")).unwrap(),
        b"third".to_vec()
    );

    // Renamed and removed on one node: gone on the other.
    std::fs::rename(m1.at("/d/g.txt"), m1.at("/d/h.txt")).unwrap();
    assert_eq!(
        std::fs::read_to_string(m0.at("/d/h.txt")).unwrap(),
        "from the library"
    );
    std::fs::remove_file(m0.at("/d/h.txt")).unwrap();
    std::fs::remove_file(m0.at("/d/f.txt")).unwrap();
    let gone = std::fs::metadata(m1.at("/d/f.txt")).unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::NotFound);
    std::fs::remove_dir(m1.at("/d")).unwrap();
    assert!(rt.block_on(client.readdir("/")).unwrap().is_empty());
}

#[test]
fn unmodified_tools_give_byte_exact_results() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    let src = env!("CARGO_MANIFEST_DIR");
    sh(
        &m0.point,
        &format!(
            "cp -r {src}/src tree\n\
             seq 5000 -1 1 > nums && sort -n nums > sorted\n\
             tar cf tree.tar tree\n\
             sha256sum tree/*.rs > sums\n\
             printf 'appended\\n' >> sums\n\
             chmod 600 sums && touch -d 2020-02-02 sums\n\
             python3 -c \"import sys; open(sys.argv[1], 'w').write(open(sys.argv[2]).read().upper())\" upper sorted"
        ),
    );
    // Read through the other node's mount.
    let sorted = std::fs::read_to_string(m1.at("/sorted")).unwrap();
    let want: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(sorted, want);
    assert_eq!(std::fs::read_to_string(m1.at("/upper")).unwrap(), want);
    let diff = Command::new("diff")
        .args(["-r", &format!("{src}/src")])
        .arg(m1.at("/tree"))
        .status()
        .unwrap();
    assert!(diff.success(), "copied tree differs");
    let listed = sh(&m1.point, "tar tf tree.tar | sort | head -1");
    assert_eq!(listed.trim(), "tree/");
    let checked = sh(
        &m1.point,
        "head -n -1 sums | sha256sum -c --quiet && echo ok",
    );
    assert_eq!(checked.trim(), "ok");
    let meta = std::fs::metadata(m1.at("/sums")).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert_eq!(
        meta.mtime(),
        1_580_601_600 - i64::from(local_offset_s()),
        "touch -d"
    );

    // git: init, commit on one node; log, status and fsck on the other.
    sh(
        &m0.point,
        "mkdir repo && cd repo && git init -q . && echo content > f && git add f && \
         git -c user.email=t@example.org -c user.name=t commit -qm first",
    );
    let log = sh(
        &m1.at("/repo"),
        "git log --format=%s && git status --short && git fsck 2>&1",
    );
    assert_eq!(log.trim(), "first");
}

/// Seconds east of UTC of the local time zone (`touch -d` reads local time).
fn local_offset_s() -> i32 {
    let out = Command::new("date").arg("+%z").output().unwrap();
    let z = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let sign = if z.starts_with('-') { -1 } else { 1 };
    let (h, m): (i32, i32) = (z[1..3].parse().unwrap(), z[3..5].parse().unwrap());
    sign * (h * 3600 + m * 60)
}

#[test]
fn a_second_writer_gets_ebusy_and_readers_see_the_last_closed_version() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    std::fs::write(m0.at("/f"), "v1").unwrap();
    let mut w = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(m0.at("/f"))
        .unwrap();
    w.write_all(b"v2, being written").unwrap();
    for m in [&m0, &m1] {
        let e = std::fs::OpenOptions::new()
            .append(true)
            .open(m.at("/f"))
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBUSY), "{e}");
        assert_eq!(std::fs::read_to_string(m.at("/f")).unwrap(), "v1");
    }
    // The writer sees its size; others, the last closed version's.
    assert_eq!(w.metadata().unwrap().len(), 17);
    assert_eq!(std::fs::metadata(m1.at("/f")).unwrap().len(), 2);
    drop(w);
    assert_eq!(
        std::fs::read_to_string(m1.at("/f")).unwrap(),
        "v2, being written"
    );
    let mut again = std::fs::OpenOptions::new()
        .append(true)
        .open(m1.at("/f"))
        .unwrap();
    again.write_all(b", then more").unwrap();
    drop(again);
    assert_eq!(
        std::fs::read_to_string(m0.at("/f")).unwrap(),
        "v2, being written, then more"
    );
}

#[test]
fn a_remote_open_fetches_once_then_reads_locally() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(m0.at("/big"), &data).unwrap();
    let rt = rt();
    let client = c.client(0);
    assert_eq!(rt.block_on(client.locate("/big")).unwrap(), vec![0]);
    assert_eq!(std::fs::read(m1.at("/big")).unwrap(), data);
    let rec = rt.block_on(client.stat("/big")).unwrap();
    assert_eq!(rec.holders, vec![0, 1], "node 1 cached a replica");
    let replica = c.stored(1, "/big", rec.stamp);
    let first = std::fs::metadata(&replica).unwrap().ino();
    assert_eq!(std::fs::read(m1.at("/big")).unwrap(), data);
    assert_eq!(
        std::fs::metadata(&replica).unwrap().ino(),
        first,
        "read again from the same replica"
    );
}

#[test]
fn unmounting_leaves_nothing_even_after_the_daemon_or_the_mount_died() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let m1 = Mount::of(&c, 1);
    std::fs::write(m1.at("/f"), "x").unwrap();
    c.signal(0, libc::SIGKILL);
    c.signal(1, libc::SIGKILL);
    let start = Instant::now();
    let e = std::fs::read(m1.at("/f")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    assert!(start.elapsed() < Duration::from_secs(10), "no hang");
    ok(&m1.umount());
    assert!(!m1.mounted());
    // Ends, not lingers (within 5 s alone; slower beside other tests).
    common::eventually_within(Duration::from_secs(30), "the mount's process ends", || {
        common::processes_with(m1.point.to_str().unwrap()).is_empty()
    });

    // The mount's own process killed: access fails at once, umount works.
    c.restart();
    let m0 = Mount::of(&c, 0);
    let pids = common::processes_with(m0.point.to_str().unwrap());
    assert_eq!(pids.len(), 1, "one process serves the mount");
    // SAFETY: a plain signal to a process this test started.
    unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    common::eventually("the mount's process is gone", || {
        common::processes_with(m0.point.to_str().unwrap()).is_empty()
    });
    let e = std::fs::metadata(m0.at("/f")).unwrap_err();
    let dead = [libc::ENOTCONN, libc::ECONNABORTED];
    assert!(dead.contains(&e.raw_os_error().unwrap()), "{e}");
    ok(&m0.umount());
    assert!(!m0.mounted());

    // What cannot be mounted or unmounted says so in one line.
    let out = m0.umount();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no Locus file system is mounted there"),
        "{err}"
    );
    let out = c.fs(&["mount", "/nonexistent/locus"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.lines().count() == 1, "{err}");
}

#[test]
fn creates_in_a_directory_the_mount_made_ask_no_daemon_others_one_look_up_each() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let m = Mount::of(&c, 0);
    let client = c.client(1);
    let rt = rt();
    let answered = || -> u64 {
        (0..2)
            .map(|n| rt.block_on(client.status(n)).unwrap().stats_answered)
            .sum()
    };
    // Made through the mount: lent to it at its first create, so it
    // answers the kernel's look-ups of new names itself, and of the
    // directory (which `mkdir` makes the kernel ask again: fs_mark makes
    // its directory before each file).
    std::fs::create_dir(m.at("/d")).unwrap();
    let before = answered();
    for i in 0..100 {
        let again = std::fs::create_dir(m.at("/d")).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        std::fs::File::create(m.at(&format!("/d/f{i}"))).unwrap();
    }
    let asked = answered() - before;
    assert!(asked <= 2, "{asked} records asked for");
    // Made elsewhere: one look-up per new name; the directory's
    // attributes, which the kernel asks for again after each create, come
    // from the mount.
    rt.block_on(client.mkdir("/e")).unwrap();
    let before = answered();
    for i in 0..100 {
        std::fs::File::create(m.at(&format!("/e/f{i}"))).unwrap();
    }
    let asked = answered() - before;
    assert!((100..=110).contains(&asked), "{asked} records asked for");
    assert_eq!(rt.block_on(client.readdir("/d")).unwrap().len(), 100);

    // Another node's change to the directory shows within the TTL.
    rt.block_on(client.set_attr("/d", Some(0o700), None))
        .unwrap();
    let start = Instant::now();
    let mode = || std::fs::metadata(m.at("/d")).unwrap().permissions().mode() & 0o777;
    while mode() != 0o700 {
        assert!(start.elapsed() < Duration::from_secs(3), "{:o}", mode());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn in_a_directory_lent_to_a_mount_others_see_each_closed_file_and_a_second_writer_gets_ebusy() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(3);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    std::fs::create_dir(m0.at("/lent")).unwrap();
    for i in 0..50 {
        std::fs::write(m0.at(&format!("/lent/f{i}")), format!("file {i}")).unwrap();
    }
    let mut open = std::fs::File::create(m0.at("/lent/open")).unwrap();
    open.write_all(b"being written").unwrap();
    // Another node sees every closed file at once: looking recalls the
    // directory, and the mount publishes what it made first.
    for i in 0..50 {
        let read = std::fs::read_to_string(m1.at(&format!("/lent/f{i}"))).unwrap();
        assert_eq!(read, format!("file {i}"));
    }
    // The file still open was claimed for its writer: a second writer gets
    // EBUSY, readers the last closed version (none: empty).
    let e = std::fs::OpenOptions::new()
        .append(true)
        .open(m1.at("/lent/open"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBUSY), "{e}");
    assert_eq!(std::fs::read_to_string(m1.at("/lent/open")).unwrap(), "");
    drop(open);
    let read = std::fs::read_to_string(m1.at("/lent/open")).unwrap();
    assert_eq!(read, "being written");
    assert_eq!(std::fs::read_dir(m1.at("/lent")).unwrap().count(), 51);

    // A mount that dies holding a directory loses it with its connection:
    // others go on at once, with what it published.
    std::fs::create_dir(m1.at("/orphan")).unwrap();
    std::fs::write(m1.at("/orphan/a"), "a").unwrap();
    let dir = std::fs::File::open(m1.at("/orphan")).unwrap();
    dir.sync_all().unwrap();
    let pids = common::processes_with(m1.point.to_str().unwrap());
    assert_eq!(pids.len(), 1, "one process serves the mount");
    // SAFETY: a plain signal to a process this test started.
    unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    common::eventually("the mount's process is gone", || {
        common::processes_with(m1.point.to_str().unwrap()).is_empty()
    });
    let start = Instant::now();
    let rt = rt();
    let client = c.client(2);
    assert_eq!(rt.block_on(client.get("/orphan/a")).unwrap(), b"a");
    rt.block_on(client.put("/orphan/b", b"b")).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "no recall waited for"
    );

    // `fsync` of the directory puts its new names on disk: daemons killed
    // at once after it keep them all.
    std::fs::create_dir(m0.at("/durable")).unwrap();
    for i in 0..20 {
        std::fs::write(m0.at(&format!("/durable/f{i}")), "kept").unwrap();
    }
    std::fs::File::open(m0.at("/durable"))
        .unwrap()
        .sync_all()
        .unwrap();
    for n in 0..3 {
        c.signal(n, libc::SIGKILL);
    }
    c.restart();
    let kept = rt.block_on(client.readdir("/durable")).unwrap();
    assert_eq!(kept.len(), 20);
    for i in 0..20 {
        let bytes = rt.block_on(client.get(&format!("/durable/f{i}"))).unwrap();
        assert_eq!(bytes, b"kept");
    }
}

#[test]
fn a_new_name_gets_the_mode_asked_for_and_an_existing_file_keeps_its_own() {
    if !can_mount() {
        return;
    }
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let c = TestCluster::up(2);
    let m = Mount::of(&c, 0);
    let client = c.client(1);
    let rt = rt();
    let mode = |p: &str| rt.block_on(client.stat(p)).unwrap().mode & 0o7777;
    std::fs::DirBuilder::new()
        .mode(0o750)
        .create(m.at("/private"))
        .unwrap();
    let open = |p: &str, mode: u32| {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .mode(mode)
            .open(m.at(p))
            .unwrap()
    };
    drop(open("/private/key", 0o600));
    drop(open("/private/script", 0o777));
    // The process's umask applies, as on any file system.
    // SAFETY: umask only swaps the mask; the old one is put back at once.
    let umask = unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old
    };
    assert_eq!(mode("/private"), 0o750 & !umask);
    assert_eq!(mode("/private/key"), 0o600 & !umask);
    assert_eq!(mode("/private/script"), 0o777 & !umask);
    // O_CREAT of a name that exists opens it: its mode stays.
    drop(open("/private/key", 0o666));
    assert_eq!(mode("/private/key"), 0o600 & !umask);
    // Root's mount answers as the kernel's own checks would for root: any
    // file may be written, only one with an execute bit run.
    let checks = sh(
        &m.point,
        "printf '#!/bin/sh\necho ran\n' > private/script && chmod 444 private/key
         echo more >> private/key && test -w private/key && echo writable
         test -x private/key || echo key-not-runnable
         ./private/key 2>/dev/null || echo key-refused
         test -x private/script && ./private/script
         test -x private && echo dir-searchable
         python3 -c \"import os; print([os.access(p, m) for p in ('private/key', 'private/script', 'private') for m in (os.W_OK, os.X_OK)])\"",
    );
    assert_eq!(
        checks,
        "writable\nkey-not-runnable\nkey-refused\nran\ndir-searchable\n\
         [True, False, True, True, True, True]\n"
    );
}

#[test]
fn large_directories_list_whole_and_statfs_reports_the_node() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let m = Mount::of(&c, 1);
    let client = c.client(0);
    let rt = rt();
    // More than two of the daemon's 10,000-entry pages.
    let n = 20_005;
    rt.block_on(async {
        client.mkdir("/big").await.unwrap();
        let names: Vec<String> = (0..n).map(|i| format!("/big/f{i:05}")).collect();
        for chunk in names.chunks(256) {
            let creates: Vec<_> = chunk
                .iter()
                .map(|p| {
                    let (client, p) = (client.clone(), p.clone());
                    tokio::spawn(async move { client.create_empty(&p).await })
                })
                .collect();
            for t in creates {
                t.await.unwrap().unwrap();
            }
        }
    });
    let mut listed: Vec<String> = std::fs::read_dir(m.at("/big"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listed.sort();
    let want: Vec<String> = (0..n).map(|i| format!("f{i:05}")).collect();
    assert_eq!(listed, want);

    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let p = std::ffi::CString::new(m.point.to_str().unwrap()).unwrap();
    // SAFETY: a valid path and a zeroed statvfs to fill.
    assert_eq!(unsafe { libc::statvfs(p.as_ptr(), &mut st) }, 0);
    assert!(
        st.f_blocks > 0 && st.f_bavail <= st.f_blocks,
        "{}",
        st.f_blocks
    );
}

#[test]
fn apps_get_the_scripts_paths_by_default_as_root_and_as_any_user() {
    if !can_mount() {
        return;
    }
    let script = r#"import files;
app (file o) count(file i) { "wc" "-w" i @stdout=o; }
file a<"/locus/in/a.txt"> = write("one two three\n");
file o<"/locus/out/a.count"> = count(a);
trace(read(o));
"#;
    let counted = "trace: 3 /locus/in/a.txt\n";
    let run = common::Run::new(&["-n", "3"], script).ok();
    assert!(run.stdout().contains(counted), "{}", run.stdout());
    assert_eq!(
        run.records("count")[0].argv.last().map(String::as_str),
        Some("/locus/in/a.txt")
    );
    // Chosen off: the store path, which the records still name by the
    // script's path.
    let run = common::Run::new(&["-n", "3", "--no-mount"], script).ok();
    assert!(!run.stdout().contains(counted), "{}", run.stdout());
    assert!(run.stdout().contains("/data/in/"), "{}", run.stdout());

    // An ordinary user (as `setpriv` makes one: no capabilities) mounts in
    // a user namespace of its own, on the /locus an administrator made.
    std::fs::create_dir_all("/locus").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = dir.path().join("t.swift");
    std::fs::write(&file, script).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_locus"))
        .args(["run", "-n", "3", "--run-dir"])
        .arg(dir.path().join("run"))
        .arg(&file)
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(counted), "{stdout}{stderr}");
    assert!(!stderr.contains("store paths"), "{stderr}");
}

#[test]
fn with_run_mount_apps_open_locus_files_by_path() {
    if !can_mount() {
        return;
    }
    // The app is given only the list; it opens the files the list names.
    let script = r#"import files;
app (file o) gather(file list) { "sh" "-c" "cat $(cat $1)" "gather" list @stdout=o; }
file a<"/locus/data/a.txt"> = write("alpha\n");
file b<"/locus/data/b.txt"> = write("beta\n");
file list<"/locus/cfg/list.txt"> = write("/locus/data/a.txt /locus/data/b.txt\n");
wait (a, b) {
  file o<"/locus/out/all.txt"> = gather(list);
  trace(read(o));
}
"#;
    let run = common::Run::new(&["-n", "3", "--mount"], script).ok();
    assert!(
        run.stdout().contains("trace: alpha\nbeta"),
        "{}",
        run.stdout()
    );
    let gather = run.records("gather");
    assert_eq!(gather.len(), 1);
    // The declared input is passed by its Locus path, not a store path.
    assert_eq!(
        gather[0].argv.last().map(String::as_str),
        Some("/locus/cfg/list.txt")
    );
    // The mounts were the ranks' own: none is left on the host.
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!table.contains(" /locus "), "{table}");
    // Without the mount, the list's paths cannot be opened.
    let without = common::Run::new(&["-n", "3", "--no-mount"], script);
    assert!(!without.out.status.success());

    // What an attempt that fails wrote through /locus is dropped; what the
    // attempt that succeeds wrote is published.
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("tried");
    let script = format!(
        r#"import files;
app (file o) scribble(string marker) {{
  "sh" "-c" "if [ -e $0 ]; then echo second > /locus/side2.txt; echo done > $1; exit 0; fi; touch $0; echo partial > /locus/side.txt; exit 1" marker o;
}}
file o<"/locus/o.txt"> = scribble("{}");
wait (o) {{
  trace(file_exists("/locus/side.txt"), read(o), read(input("/locus/side2.txt")));
}}
"#,
        marker.display()
    );
    let run = common::Run::new(&["-n", "2", "--mount", "--retries", "1"], &script).ok();
    assert!(
        run.stdout().contains("trace: 0,done\n,second\n"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_joined_daemon_mounts_its_cluster_until_it_stops() {
    if !can_mount() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cluster, point) = (dir.path().join("cluster"), dir.path().join("locus"));
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_locus"))
        .args(["fs", "serve", "--join"])
        .arg(&cluster)
        .args(["--expect", "1", "--store"])
        .arg(dir.path())
        .arg("--mount")
        .arg(&point)
        .spawn()
        .unwrap();
    let m = Mount {
        point: point.clone(),
        cluster: cluster.clone(),
        _dir: tempfile::tempdir().unwrap(),
    };
    common::eventually("the cluster is mounted", || m.mounted());
    std::fs::write(m.at("/x.txt"), "through the host's mount").unwrap();
    let got = ok(&common::locus(&[
        "fs",
        "cat",
        "--dir",
        cluster.to_str().unwrap(),
        "/x.txt",
    ]));
    assert_eq!(got, "through the host's mount");
    ok(&common::locus(&[
        "fs",
        "down",
        "--dir",
        cluster.to_str().unwrap(),
    ]));
    assert!(daemon.wait().unwrap().success());
    assert!(!m.mounted(), "unmounted when the daemon stopped");
}

fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let (from, to) = (c(from), c(to));
    // SAFETY: two NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[test]
fn o_excl_fsync_and_rename_noreplace_behave_as_listed() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    let excl = |m: &Mount, p: &str| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(m.at(p))
    };
    // O_EXCL: a new name is made; an existing one is EEXIST on any node.
    let mut w = excl(&m0, "/x").unwrap();
    w.write_all(b"synced").unwrap();
    // fsync flushes the private file being written; it is published only
    // at close: until then other nodes read the last closed version (none).
    w.sync_all().unwrap();
    assert_eq!(std::fs::read(m1.at("/x")).unwrap(), b"");
    drop(w);
    assert_eq!(std::fs::read(m1.at("/x")).unwrap(), b"synced");
    for m in [&m0, &m1] {
        let e = excl(m, "/x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    }
    // RENAME_NOREPLACE: refused onto an existing name, both left as they
    // were; onto a free name, a rename.
    std::fs::write(m1.at("/y"), "y").unwrap();
    let e = rename_noreplace(&m0.at("/x"), &m0.at("/y")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
    assert_eq!(std::fs::read(m0.at("/x")).unwrap(), b"synced");
    assert_eq!(std::fs::read(m0.at("/y")).unwrap(), b"y");
    rename_noreplace(&m0.at("/x"), &m0.at("/z")).unwrap();
    assert_eq!(std::fs::read(m1.at("/z")).unwrap(), b"synced");
    assert!(!m0.at("/x").exists());
}

#[test]
fn bytes_an_app_fetches_by_undeclared_opens_are_in_its_record() {
    if !can_mount() {
        return;
    }
    // The data is made on node 1; the app on node 0 opens it by the paths
    // a list gives, without declaring it.
    let script = r#"import files;
app (file o) make(int n) { "head" "-c" n "/dev/zero" @stdout=o; }
app (file o) gather(file list) { "sh" "-c" "cat $(cat $1) | wc -c" "gather" list @stdout=o; }
file a<"/locus/data/a.bin"> = @location=location(2, HARD, NODE) make(3000);
file b<"/locus/data/b.bin"> = @location=location(2, HARD, NODE) make(5000);
file list<"/locus/cfg/list.txt"> = write("/locus/data/a.bin /locus/data/b.bin\n");
wait (a, b) {
  file o<"/locus/out/n.txt"> = @location=location(0, HARD, NODE) gather(list);
  trace(read(o));
}
"#;
    let opts = ["-n", "5", "--nodes", "2", "--mount"];
    let run = common::Run::new(&opts, script).ok();
    assert!(run.stdout().contains("trace: 8000"), "{}", run.stdout());
    let gather = run.records("gather");
    assert_eq!(gather[0].node, "node0");
    assert!(gather[0].remote_bytes >= 8000, "{:?}", gather[0]);
}

#[test]
fn calls_it_does_not_serve_answer_as_listed_and_log_nothing() {
    if !can_mount() {
        return;
    }
    let c = TestCluster::up(2);
    let (m0, m1) = (Mount::of(&c, 0), Mount::of(&c, 1));
    // Python asks `isatty` (an ioctl) on every open; the rest as listed in
    // docs/semantics.md. Each prints what it got.
    let script = r#"
import errno, os
def err(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open("f", os.O_WRONLY | os.O_CREAT, 0o644)
print(os.isatty(fd))
os.posix_fallocate(fd, 0, 1 << 20)
os.close(fd)
print(err(lambda: os.mkfifo("fifo")))
print(err(lambda: os.mknod("dev", 0o600 | 0o020000, os.makedev(1, 3))))
print(err(lambda: os.setxattr("f", "user.k", b"v")))
print(err(lambda: os.removexattr("f", "user.k")))
d = os.open(".", os.O_RDONLY)
print(err(lambda: os.fsync(d)))
"#;
    let out = sh(&m0.point, &format!("python3 -c '{script}'"));
    let want = ["False", "EPERM", "EPERM", "ENOTSUP", "ENODATA", "ok"];
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
    // The space fallocate took is the published version's size.
    assert_eq!(std::fs::metadata(m1.at("/f")).unwrap().len(), 1 << 20);
    for e in std::fs::read_dir(c.path()).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".log") {
            let log = std::fs::read_to_string(&p).unwrap();
            assert!(!log.contains("Not Implemented"), "{}:\n{log}", p.display());
        }
    }
}

#[test]
fn a_task_reads_back_what_it_wrote_through_the_mount() {
    if !can_mount() {
        return;
    }
    // Each app writes a side file, appends to it, then reads it back by
    // size, by listing and by content (its writes are held until it ends,
    // yet are its own to read); the next task reads what the first
    // published; a removed held file is gone at once and at the end.
    let script = r#"import files;
app (file o) scribe(int i) {
  "sh" "-c" "mkdir -p /locus/side && echo line $0 > /locus/side/s$0.txt && echo more >> /locus/side/s$0.txt && echo gone > /locus/side/t$0.txt && rm /locus/side/t$0.txt && { wc -c < /locus/side/s$0.txt; ls /locus/side | grep -c t$0.txt; cat /locus/side/s$0.txt; } > $1" i o;
}
app (file o) reread(file prev, int i) {
  "sh" "-c" "cat /locus/side/s$0.txt > $1" i o;
}
foreach i in [1:4] {
  file o<sprintf("/locus/out/o%i.txt", i)> = scribe(i);
  file r<sprintf("/locus/out/r%i.txt", i)> = reread(o, i);
  wait (r) {
    trace(i, read(o), read(r), read(input(sprintf("/locus/side/s%i.txt", i))),
          file_exists(sprintf("/locus/side/t%i.txt", i)));
  }
}
"#;
    let run = common::Run::new(&["-n", "3", "--mount"], script).ok();
    for i in 1..=4 {
        let want =
            format!("trace: {i},12\n0\nline {i}\nmore\n,line {i}\nmore\n,line {i}\nmore\n,0");
        assert!(run.stdout().contains(&want), "{want}\n{}", run.stdout());
    }

    // A script the task wrote is made executable and run; its output is
    // renamed (taking its bytes along) and given a time, seen at once.
    let script = r#"import files;
app (file o) tool(int i) {
  "sh" "-c" "d=/locus/w$0; mkdir -p $d && printf '#!/bin/sh\necho ran %s\n' $0 > $d/run.sh && chmod +x $d/run.sh && $d/run.sh > $d/a.txt && mv $d/a.txt $d/b.txt && touch -d 2001-01-01 $d/b.txt && { cat $d/b.txt; date -r $d/b.txt +%Y; } > $1" i o;
}
foreach i in [1:2] {
  file o<sprintf("/locus/out/t%i.txt", i)> = tool(i);
  trace(i, read(o));
}
"#;
    let run = common::Run::new(&["-n", "3", "--mount"], script).ok();
    for i in 1..=2 {
        let want = format!("trace: {i},ran {i}\n2001\n");
        assert!(run.stdout().contains(&want), "{want}\n{}", run.stdout());
    }
}

/// Flips four bytes in the middle of the stored copy `copy`.
fn damage(copy: &Path) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(copy)
        .unwrap();
    let at = f.metadata().unwrap().len() / 2;
    let mut four = [0u8; 4];
    f.read_exact_at(&mut four, at).unwrap();
    f.write_all_at(&four.map(|b| b ^ 0x5a), at).unwrap();
}

#[test]
fn a_damaged_copy_is_never_read_through_the_mount() {
    if !can_mount() {
        return;
    }
    let rt = rt();
    let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    // One copy: the open fails with EIO, no byte handed out.
    let c = TestCluster::up(2);
    let rec = rt.block_on(c.client(0).put("/m/bad.bin", &bytes)).unwrap();
    damage(&c.stored(0, "/m/bad.bin", rec.stamp));
    let m = Mount::of(&c, 0);
    let e = std::fs::read(m.at("/m/bad.bin")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    drop(m);
    // Two copies: the right bytes, from the good one.
    let c = TestCluster::up_with(3, &["--replicas", "2"]);
    let w = c.client(0);
    let rec = rt.block_on(async {
        w.put("/m/bad.bin", &bytes).await.unwrap();
        w.settled().await;
        w.stat("/m/bad.bin").await.unwrap()
    });
    let bad = rec.holders[0];
    damage(&c.stored(bad, "/m/bad.bin", rec.stamp));
    let m = Mount::of(&c, bad);
    assert_eq!(std::fs::read(m.at("/m/bad.bin")).unwrap(), bytes);
}

#[test]
fn opens_racing_overwrites_on_another_node_see_the_old_or_the_new_version() {
    if !can_mount() {
        return;
    }
    const OPENS: u32 = 10_000;
    let c = TestCluster::up(2);
    let m1 = Mount::of(&c, 1);
    let (rt, writer) = (rt(), c.client(0));
    // One whole version: `version N` on 1 + N % 50 lines.
    let version = |i: u32| format!("version {i}\n").repeat(1 + i as usize % 50);
    rt.block_on(writer.put("/f", version(0).as_bytes()))
        .unwrap();
    let opens = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| loop {
                    let n = opens.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if n >= OPENS {
                        return;
                    }
                    let text = std::fs::read_to_string(m1.at("/f"))
                        .unwrap_or_else(|e| panic!("open #{n}: {e}"));
                    let first = text.lines().next().unwrap_or_default();
                    let i: u32 = first.trim_start_matches("version ").parse().unwrap();
                    assert_eq!(text, version(i), "open #{n}: a whole version");
                })
            })
            .collect();
        let mut i = 1;
        while opens.load(std::sync::atomic::Ordering::Relaxed) < OPENS
            && !readers
                .iter()
                .any(std::thread::ScopedJoinHandle::is_finished)
        {
            rt.block_on(writer.put("/f", version(i).as_bytes()))
                .unwrap();
            i += 1;
        }
        for r in readers {
            r.join().unwrap();
        }
    });
}
