"""The file API against a real cluster: round trips, errors as Python's
OSError subclasses, a large file, readers in threads."""

import errno
import hashlib
import io
import os
import threading

import pytest

import locus


def test_bytes_written_are_read_back_by_any_node(cluster, fs, fresh_dir):
    path = fresh_dir + "/a.bin"
    with fs.open(path, "wb") as f:
        assert f.write(b"hello ") == 6
        f.write(b"world")
    other = locus.connect(cluster, node=1)
    assert other.node == 1
    with other.open(path, "rb") as f:
        assert f.read() == b"hello world"
        assert f.name == path
    # The script's spelling names the same file.
    assert fs.stat("/locus" + path)["size"] == 11


def test_append_text_and_exclusive_modes(fs, fresh_dir):
    path = fresh_dir + "/t.txt"
    with fs.open(path, "w") as f:
        f.write("één\n")
    with fs.open(path, "a") as f:
        f.write("twee\n")
    with fs.open(path, "ab") as f:
        f.write(b"drie\n")
    with fs.open(path) as f:
        assert f.read() == b"\xc3\xa9\xc3\xa9n\ntwee\ndrie\n"
    with fs.open(path, "r", encoding="utf-8") as f:
        assert f.readlines() == ["één\n", "twee\n", "drie\n"]
    with pytest.raises(FileExistsError):
        fs.open(path, "xb")
    with fs.open(fresh_dir + "/new", "xb") as f:
        f.write(b"x")
    assert fs.cat(fresh_dir + "/new") == b"x"
    with pytest.raises(ValueError):
        fs.open(path, "rw")


def test_reads_seek_and_readinto(fs, fresh_dir):
    path = fresh_dir + "/s"
    data = bytes(range(256)) * 64
    with fs.open(path, "wb") as f:
        f.write(data)
    with fs.open(path, "rb") as f:
        assert f.seekable()
        f.seek(1000)
        assert f.read(4) == data[1000:1004]
        f.seek(-10, io.SEEK_END)
        assert f.tell() == len(data) - 10
        buf = bytearray(10)
        assert f.readinto(buf) == 10
        assert bytes(buf) == data[-10:]
    assert fs.cat(path, 5, 9) == data[5:9]
    assert fs.cat(path, len(data) - 3) == data[-3:]


def test_a_reader_keeps_the_version_it_opened(fs, fresh_dir):
    path = fresh_dir + "/v"
    with fs.open(path, "wb") as f:
        f.write(b"first")
    r = fs.open(path, "rb")
    with fs.open(path, "wb") as f:
        f.write(b"second")
    assert r.read() == b"first"
    r.close()
    assert fs.cat(path) == b"second"


def test_an_unclosed_writer_publishes_nothing_until_closed(fs, fresh_dir):
    path = fresh_dir + "/w"
    f = fs.open(path, "wb")
    f.write(b"pending")
    f.flush()
    assert fs.stat(path)["size"] == 0
    assert fs.stat(path)["locked"]
    f.close()
    assert fs.cat(path) == b"pending"
    assert not fs.stat(path)["locked"]


def test_errors_are_oserrors_of_their_errno(fs, fresh_dir):
    with pytest.raises(FileNotFoundError) as e:
        fs.open(fresh_dir + "/missing")
    assert e.value.errno == errno.ENOENT
    assert "missing: no such file or directory" in str(e.value)
    with pytest.raises(IsADirectoryError):
        fs.open(fresh_dir, "wb")
    with pytest.raises(FileExistsError):
        fs.mkdir(fresh_dir)
    fs.mkdir(fresh_dir + "/d")
    with fs.open(fresh_dir + "/d/f", "wb") as f:
        f.write(b"1")
    with pytest.raises(OSError) as e:
        fs.rmdir(fresh_dir + "/d")
    assert e.value.errno == errno.ENOTEMPTY
    assert fs.ls(fresh_dir + "/d/f") == [fresh_dir + "/d/f"]
    with pytest.raises(IsADirectoryError):
        fs.rm(fresh_dir + "/d")
    # Held by a writer: another writer is refused at once.
    w = fs.open(fresh_dir + "/d/f", "ab")
    with pytest.raises(OSError) as e:
        fs.open(fresh_dir + "/d/f", "wb")
    assert e.value.errno == errno.EBUSY
    w.close()
    with pytest.raises(FileNotFoundError):
        locus.connect(fresh_dir + "-no-cluster")


def test_namespace_operations(fs, fresh_dir, tmp_path):
    fs.mkdir(fresh_dir + "/a/b/c", parents=True)
    # Placed before it is made: its data goes to node 1, written from node 0.
    fs.place(fresh_dir + "/a/y", 1)
    for name in ("x", "y"):
        with fs.open(f"{fresh_dir}/a/{name}", "wb") as f:
            f.write(name.encode() * 3)
    assert sorted(fs.ls(fresh_dir + "/a")) == [fresh_dir + "/a/" + n for n in ("b", "x", "y")]
    detail = {d["name"]: d for d in fs.ls(fresh_dir + "/a", detail=True)}
    assert detail[fresh_dir + "/a/b"]["type"] == "directory"
    assert detail[fresh_dir + "/a/x"]["size"] == 3
    fs.mv(fresh_dir + "/a/x", fresh_dir + "/a/b/x2")
    assert not fs.exists(fresh_dir + "/a/x")
    assert fs.cat(fresh_dir + "/a/b/x2") == b"xxx"
    assert fs.locate(fresh_dir + "/a/y") == [1]
    assert fs.locate(fresh_dir + "/a/b/x2") == [0]
    # Trees in and out.
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "one").write_bytes(b"1")
    (src / "sub" / "two").write_bytes(b"22")
    assert fs.put(src, fresh_dir + "/tree", recursive=True) == (2, 3)
    assert fs.cat(fresh_dir + "/tree/sub/two") == b"22"
    with pytest.raises(IsADirectoryError):
        fs.put(src, fresh_dir + "/tree2")
    assert fs.get(fresh_dir + "/tree", tmp_path / "back", recursive=True) == (2, 3)
    assert (tmp_path / "back" / "sub" / "two").read_bytes() == b"22"
    fs.rm(fresh_dir + "/a", recursive=True)
    assert not fs.exists(fresh_dir + "/a")
    nodes = fs.df()
    assert [n["node"] for n in nodes] == [0, 1] and all(n["up"] for n in nodes)
    assert fs.status()["up"] == 2


def test_a_100_mib_file_through_open(fs, fresh_dir):
    path = fresh_dir + "/big"
    block = os.urandom(1 << 20)
    digest = hashlib.sha256()
    with fs.open(path, "wb") as f:
        for i in range(100):
            chunk = block[i:] + block[:i]
            digest.update(chunk)
            f.write(chunk)
    assert fs.stat(path)["size"] == 100 << 20
    other = locus.connect(fs.dir, node=1)
    for client in (fs, other):
        got = hashlib.sha256()
        buf = bytearray(4 << 20)
        with client.open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                got.update(memoryview(buf)[:n])
        assert got.digest() == digest.digest()


def test_concurrent_readers_from_threads(fs, fresh_dir):
    files = {}
    for i in range(4):
        data = os.urandom(256 << 10) + bytes([i])
        with fs.open(f"{fresh_dir}/r{i}", "wb") as f:
            f.write(data)
        files[f"{fresh_dir}/r{i}"] = data
    remote = locus.connect(fs.dir, node=1)
    wrong = []

    def read(client, path):
        for _ in range(5):
            with client.open(path, "rb") as f:
                if f.read() != files[path]:
                    wrong.append(path)

    threads = [threading.Thread(target=read, args=(c, p))
               for p in files for c in (fs, remote, fs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
