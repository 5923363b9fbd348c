"""docs/python.md's walk through, run as a notebook user would run it: its
Python blocks in order, against a cluster of four nodes started as the page
says (`locus fs up --nodes 4`)."""

import re
import subprocess
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "python.md"


def test_the_walk_through_runs(locus_bin, tmp_path, monkeypatch):
    text = DOC.read_text()
    walk = text[text.index("## A walk through"):text.index("## The file API")]
    blocks = re.findall(r"```python\n(.*?)```", walk, re.S)
    assert len(blocks) == 4
    cluster = tmp_path / "cluster"
    subprocess.run([locus_bin, "fs", "up", "--dir", str(cluster), "--nodes", "4"],
                   check=True, stdout=subprocess.DEVNULL)
    monkeypatch.setenv("LOCUS_DIR", str(cluster))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    # The run's directory (a new one under $TMPDIR) is the test's too.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    page = {}
    try:
        for k, block in enumerate(blocks):
            exec(compile(block, f"{DOC}:python block {k + 1}", "exec"), page)
    finally:
        subprocess.run([locus_bin, "fs", "down", "--dir", str(cluster)], check=True,
                       stdout=subprocess.DEVNULL)
    tasks = page["tasks"]
    assert len(tasks) == 12 and set(tasks["function"]) == {"count"}
    assert set(tasks["node"]) == {"node0", "node1", "node2", "node3"}
    assert sorted(page["counts"].values()) == [4000 * (i + 1) for i in range(12)]
    assert (tmp_path / "tasks-per-node.png").stat().st_size > 0
    assert (tmp_path / "report.html").stat().st_size > 0
    assert len(list((tmp_path / "counts").iterdir())) == 12
