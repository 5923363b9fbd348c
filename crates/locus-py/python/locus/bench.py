"""``python -m locus.bench``: Locus from Python beside same-run baselines.

* reading a Locus file held on this node through ``open().readinto``,
  beside Python reading the same bytes from a host file;
* reading one held on another node (fetched first), beside ``locus fs cat``
  of it;
* ``stat`` from Python, beside the same client's ``stat`` made from Rust;
* ``Run.records()`` of a run of a million tasks, beside reading its record
  files' bytes.

Starts a two-node cluster of its own (``locus fs up``) in a temporary
directory and removes it. Needs the ``locus`` program (``$LOCUS_BIN`` or
``PATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, List

import locus
from locus import _locus
from locus.runs import _locus_binary


def _timed(f: Callable[[], object]) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def _read_all(f, buf: bytearray) -> int:
    total = 0
    while n := f.readinto(buf):
        total += n
    return total


def _write_host_file(path: Path, size: int) -> None:
    block = bytearray(os.urandom(1 << 20))
    with open(path, "wb") as f:
        for i in range(size >> 20):
            block[:8] = i.to_bytes(8, "little")
            f.write(block)


def _median_pairs(rounds: int, ours: Callable[[int], float], base: Callable[[int], float]):
    """Both measured in turn, ``rounds`` times (a busy spell falls on both)."""
    a: List[float] = []
    b: List[float] = []
    for r in range(rounds):
        b.append(base(r))
        a.append(ours(r))
    return statistics.median(a), statistics.median(b)


def _report(name: str, ours: float, base: float, unit: str, base_name: str, target: str) -> None:
    print(f"{name:<44} {ours:>10.1f} {unit}   {base_name:<28} {base:>10.1f} {unit}   "
          f"ratio {ours / base:5.2f} (target {target})")


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m locus.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=1024, help="size of the file read (MiB)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--stats", type=int, default=10_000)
    p.add_argument("--tasks", type=int, default=1_000_000, help="records of the synthetic run")
    a = p.parse_args()
    program = _locus_binary()
    with tempfile.TemporaryDirectory(prefix="locus-bench-py-") as tmp:
        root = Path(tmp)
        cluster = root / "cluster"
        subprocess.run([program, "fs", "up", "--dir", str(cluster), "--nodes", "2"],
                       check=True, stdout=subprocess.DEVNULL)
        try:
            _files(program, root, cluster, a)
        finally:
            subprocess.run([program, "fs", "down", "--dir", str(cluster)],
                           check=True, stdout=subprocess.DEVNULL)
        _records(root, a)


def _files(program: str, root: Path, cluster: Path, a: argparse.Namespace) -> None:
    size = a.size_mib << 20
    host = root / "host.bin"
    _write_host_file(host, size)
    here, there = locus.connect(cluster, node=0), locus.connect(cluster, node=1)
    here.mkdir("/bench/stat", parents=True)
    here.put(host, "/bench/local.bin")
    buf = bytearray(4 << 20)
    mib = size / (1 << 20)

    def locus_local(_: int) -> float:
        with here.open("/bench/local.bin", "rb", buffering=0) as f:
            return mib / _timed(lambda: _read_all(f, buf))

    def host_read(_: int) -> float:
        with open(host, "rb", buffering=0) as f:
            return mib / _timed(lambda: _read_all(f, buf))

    print(f"machine: {os.cpu_count()} cores; file {a.size_mib} MiB; medians of {a.rounds}")
    ours, base = _median_pairs(a.rounds, locus_local, host_read)
    _report("local file, open().readinto", ours, base, "MiB/s", "host file, readinto", ">= 0.90")

    # A new file on node 0 each time, so node 1 has no copy yet.
    def fresh(name: str) -> str:
        path = f"/bench/{name}"
        here.put(host, path)
        return path

    def locus_remote(r: int) -> float:
        path = fresh(f"py-{r}")
        t = _timed(lambda: _read_whole(there, path, buf))
        here.rm(path)
        return mib / t

    def cat_remote(r: int) -> float:
        path = fresh(f"cat-{r}")
        t = _timed(lambda: subprocess.run(
            [program, "fs", "cat", "--dir", str(cluster), "--node", "1", path],
            check=True, stdout=subprocess.DEVNULL))
        here.rm(path)
        return mib / t

    ours, base = _median_pairs(a.rounds, locus_remote, cat_remote)
    _report("remote file (fetched), open().readinto", ours, base, "MiB/s", "locus fs cat --node 1", ">= 0.90")

    paths = []
    for i in range(100):
        path = f"/bench/stat/{i}"
        with here.open(path, "wb") as f:
            f.write(b"x")
        paths.append(path)
    rounds = max(1, a.stats // len(paths))
    calls = rounds * len(paths)

    def python_stats(_: int) -> float:
        return calls / _timed(lambda: [here.stat(p) for _ in range(rounds) for p in paths])

    def rust_stats(_: int) -> float:
        return calls / _locus.stats_from_rust(here._c, paths, rounds)

    ours, base = _median_pairs(a.rounds, python_stats, rust_stats)
    _report(f"{calls} stat from Python", ours, base, "op/s", "the same from Rust", ">= 0.50")


def _read_whole(client: locus.Client, path: str, buf: bytearray) -> int:
    with client.open(path, "rb", buffering=0) as f:
        return _read_all(f, buf)


def _records(root: Path, a: argparse.Namespace) -> None:
    """A run's records directory of ``a.tasks`` tasks across 8 worker
    ranks, shaped as workers write them (an app's record of a real run as
    the model), then read as a frame."""
    model = root / "model"
    script = root / "one.swift"
    script.write_text('app (file o) touch() { "touch" o; }\nfile f <"/locus/one"> = touch();\n')
    locus.run(script, workers=1, mount=False, run_dir=model)
    [record] = [json.loads(line) for f in (model / "records").glob("*.jsonl") for line in open(f)]
    run = root / "million"
    (run / "records").mkdir(parents=True)
    (run / "run.json").write_bytes((model / "run.json").read_bytes())
    ranks = 8
    for rank in range(ranks):
        with open(run / "records" / f"rank-{rank}.jsonl", "w") as f:
            for i in range(rank, a.tasks, ranks):
                record.update(id=i, rank=rank, start_us=record["start_us"] + 1, end_us=record["end_us"] + 1)
                f.write(json.dumps(record) + "\n")
    files = list((run / "records").glob("*.jsonl"))
    size = sum(f.stat().st_size for f in files) / (1 << 20)
    view = locus.Run.__new__(locus.Run)
    view.run_dir = run

    def frame(_: int) -> float:
        return _timed(view.records)

    def raw(_: int) -> float:
        return _timed(lambda: [f.read_bytes() for f in files])

    ours, base = _median_pairs(a.rounds, frame, raw)
    print(f"{'records() of ' + str(a.tasks) + ' tasks':<44} {ours:>10.2f} s       "
          f"{'reading their ' + f'{size:.0f} MiB':<28} {base:>10.2f} s       (target < 5 s)")


if __name__ == "__main__":
    main()
