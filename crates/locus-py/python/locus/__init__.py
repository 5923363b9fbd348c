"""Locus from Python: its distributed file system, runs of Swift scripts and
their records.

>>> import locus
>>> fs = locus.connect()                      # this host's node of $LOCUS_DIR
>>> with fs.open("/data/x.csv", "wb") as f:
...     f.write(b"a,b\\n1,2\\n")
>>> run = locus.run("workflow.swift", args={"n": 10})
>>> run.records()                             # one row per task (pandas)

``pandas.read_csv("locus:///data/x.csv")`` works through fsspec.
"""

from .files import Client, connect
from .runs import Diagnostic, Run, RunFailed, ScriptError, check, run

__all__ = [
    "Client",
    "Diagnostic",
    "Run",
    "RunFailed",
    "ScriptError",
    "check",
    "connect",
    "run",
]
