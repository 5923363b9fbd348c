"""Swift scripts: checking them, running them, and reading their records."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _locus

if TYPE_CHECKING:
    import pandas

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Diagnostic:
    """One error in a script, where it is (1-based line and column)."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: error: {self.message}"


class ScriptError(Exception):
    """A script that does not compile; ``diagnostics`` holds each error."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        super().__init__("\n".join(str(d) for d in diagnostics))
        self.diagnostics = list(diagnostics)


# `file:line:col` where an error names the script's position.
_POSITION = re.compile(r"([^\s():]+\.swift):(\d+):(\d+)")


class RunFailed(Exception):
    """A run that ended in failure: its one-line ``message``, its ``kind``
    (``Task``, ``Script``, ``Stall``, …; ``Launch`` for a run that could not
    start, e.g. a ``run_dir`` holding an earlier run without ``resume`` or
    ``fresh``), ``run_dir`` and ``returncode``;
    ``file``, ``line`` and ``col`` where the message names the script's
    position (else ``None``)."""

    def __init__(self, message: str, kind: str, run_dir: Path, returncode: int) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.run_dir = run_dir
        self.returncode = returncode
        found = _POSITION.search(message)
        self.file: Optional[str] = found.group(1) if found else None
        self.line: Optional[int] = int(found.group(2)) if found else None
        self.col: Optional[int] = int(found.group(3)) if found else None


def check(script: PathLike, include: Iterable[PathLike] = ()) -> List[Diagnostic]:
    """The script's errors, as ``locus check`` finds them (empty: it compiles)."""
    found = _locus.check(os.fspath(script), [os.fspath(d) for d in include])
    return [Diagnostic(*d) for d in found]


def _locus_binary() -> str:
    """The ``locus`` program every process of a run is: ``$LOCUS_BIN``, else
    the one on ``PATH``."""
    given = os.environ.get("LOCUS_BIN")
    if given:
        return given
    found = shutil.which("locus")
    if found is None:
        raise FileNotFoundError(
            "the locus program starts a run's processes: put it on PATH or name it in $LOCUS_BIN"
        )
    return found


def _script_args(args: Union[Mapping[str, Any], Sequence[str], None]) -> List[str]:
    """A mapping as ``--key=value`` (for ``argv``), a sequence as given."""
    if args is None:
        return []
    if isinstance(args, Mapping):
        return [f"--{k}={v}" for k, v in args.items()]
    if isinstance(args, str):
        raise TypeError("args is a mapping (--key=value) or a sequence of strings, not a string")
    return [str(a) for a in args]


class Run:
    """A run of a script: started by :func:`run`, going on in this process
    until it ends. Its directory (``run_dir``) holds its records, which
    :meth:`records` reads while it runs and after."""

    def __init__(self, handle: _locus.RunHandle) -> None:
        self._h = handle
        self.run_dir = Path(handle.run_dir)

    @property
    def returncode(self) -> Optional[int]:
        """The run's exit code once it ended (0: succeeded), else ``None``."""
        return self._h.poll()

    @property
    def status(self) -> str:
        """``running``, ``succeeded`` or ``failed``."""
        code = self.returncode
        if code is None:
            return "running"
        return "succeeded" if code == 0 else "failed"

    def wait(self, timeout: Optional[float] = None) -> "Run":
        """Waits for the run to end (at most ``timeout`` seconds: then
        ``TimeoutError``); raises :class:`RunFailed` if it failed. Ctrl-C
        while waiting stops the run."""
        code = self._h.wait(timeout)
        if code is None:
            raise TimeoutError(f"the run in {self.run_dir} is still running after {timeout} s")
        if code != 0:
            launch = self._h.launch_error
            if launch is not None:
                raise RunFailed(launch, "Launch", self.run_dir, code)
            message, kind = _locus.failure(str(self.run_dir)) or (
                f"the run failed (exit {code}); its ranks' output says why",
                "",
            )
            raise RunFailed(message, kind, self.run_dir, code)
        return self

    def cancel(self) -> None:
        """Stops the run: its processes and the file system it started."""
        self._h.cancel()

    def records(self) -> "pandas.DataFrame":
        """One row per task run so far: ``id``, ``function``, ``at`` (its
        call in the script), ``rank``, ``node``, ``start``/``end``
        (timestamps), ``seconds``, ``bytes_local``, ``bytes_fetched``,
        ``bytes_written``, ``placement``, ``target``, ``spilled_from``,
        ``exit``, ``attempts``, ``error``."""
        return _frame(_locus.records_columns(str(self.run_dir)))

    def report(self) -> str:
        """The run's text report (``locus report``)."""
        return _locus.report_text(str(self.run_dir))

    def html(self, path: PathLike) -> Path:
        """Writes the run's HTML report (``locus report --html``) to ``path``."""
        out = Path(path)
        out.write_text(_locus.report_html(str(self.run_dir)))
        return out

    def __repr__(self) -> str:
        return f"locus.Run({str(self.run_dir)!r}, {self.status})"


_COLUMNS = [
    "id",
    "function",
    "at",
    "rank",
    "node",
    "start",
    "end",
    "seconds",
    "bytes_local",
    "bytes_fetched",
    "bytes_written",
    "placement",
    "target",
    "spilled_from",
    "exit",
    "attempts",
    "error",
]


def _frame(columns: Mapping[str, Tuple[Any, ...]]) -> "pandas.DataFrame":
    """The records' frame from the columns the extension reads."""
    import numpy
    import pandas

    data: dict = {}
    for name, (kind, *parts) in columns.items():
        if kind == "int":
            data[name] = numpy.frombuffer(parts[0], dtype=numpy.int64)
        elif kind == "maybe_int":
            values = numpy.frombuffer(parts[0], dtype=numpy.int64)
            missing = numpy.frombuffer(parts[1], dtype=numpy.bool_)
            data[name] = pandas.arrays.IntegerArray(values.copy(), missing.copy())
        else:
            codes = numpy.frombuffer(parts[0], dtype=numpy.int32)
            data[name] = pandas.Categorical.from_codes(codes, categories=parts[1])
    data["seconds"] = (data["end"] - data["start"]) / 1e6
    for when in ("start", "end"):
        data[when] = pandas.to_datetime(data[when], unit="us", utc=True)
    return pandas.DataFrame(data, columns=_COLUMNS)


def run(
    script: PathLike,
    args: Union[Mapping[str, Any], Sequence[str], None] = None,
    *,
    nodes: int = 1,
    workers: Optional[int] = None,
    servers: int = 1,
    run_dir: Optional[PathLike] = None,
    fs: Optional[PathLike] = None,
    resume: Union[bool, str, None] = None,
    fresh: bool = False,
    keep_going: bool = False,
    retries: int = 0,
    mount: bool = True,
    log: Optional[PathLike] = None,
    include: Iterable[PathLike] = (),
    wait: bool = True,
) -> Run:
    """Runs ``script`` as ``locus run`` does, on this machine: ``workers``
    worker ranks (default: one per core) and ``servers`` servers over
    ``nodes`` emulated nodes, each with a daemon of the run's own file
    system (or the existing cluster ``fs``). ``args`` is a mapping
    (``--key=value`` for ``argv``) or a sequence of arguments. ``resume``
    (``True``, ``"versions"`` or ``"content"``) picks up an earlier run of
    ``run_dir``; ``fresh`` replaces it. ``mount``: workers mount the file
    system at ``/locus`` for their apps where this user may. ``log``: the
    ranks' output goes to that file instead of this process's.

    The script is checked first (:class:`ScriptError`). With ``wait`` (the
    default) this returns once the run succeeded, or raises
    :class:`RunFailed`; without, at once (see :meth:`Run.wait`)."""
    diagnostics = check(script, include)
    if diagnostics:
        raise ScriptError(diagnostics)
    if resume is True:
        resume = "versions"
    request = {
        "locus": _locus_binary(),
        "script": os.fspath(script),
        "args": _script_args(args),
        "include": [os.fspath(d) for d in include],
        "workers": workers,
        "nodes": nodes,
        "servers": servers,
        "run_dir": None if run_dir is None else os.fspath(run_dir),
        "fs": None if fs is None else os.fspath(fs),
        "resume": resume or None,
        "fresh": fresh,
        "keep_going": keep_going,
        "retries": retries,
        "mount": mount,
        "log": None if log is None else os.fspath(log),
    }
    handle = _locus.start_run(request)
    if handle.note:
        warnings.warn(f"apps get their Locus files as store paths, not /locus/ paths: {handle.note}", stacklevel=2)
    started = Run(handle)
    return started.wait() if wait else started
