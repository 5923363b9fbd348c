"""The file system: a client on one node, and real file objects."""

from __future__ import annotations

import io
import os
from typing import IO, Any, Dict, List, Optional, Tuple, Union

from . import _locus

PathLike = Union[str, "os.PathLike[str]"]


class _Publishing(io.FileIO):
    """The private file a writer fills; closing it publishes the bytes as the
    Locus file's new version (an ``OSError`` if that fails: the file keeps
    its earlier version)."""

    def __init__(self, writer: _locus.Writer, path: str) -> None:
        self._writer = writer
        try:
            super().__init__(writer.fileno(), "wb", closefd=False)
            self.name = path
        except BaseException:
            writer.abort()
            raise

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        self._writer.close()


class _Reading(io.FileIO):
    """A local copy of one version of a Locus file, open for reading."""

    def __init__(self, fd: int, path: str) -> None:
        super().__init__(fd, "rb", closefd=True)
        self.name = path


class Client:
    """A client of one Locus cluster, acting on one of its nodes.

    Paths are Locus paths, as the file system names them (``/data/x``) or as
    scripts write them (``/locus/data/x``). Errors are ``OSError`` of the
    POSIX errno (``FileNotFoundError``, ``IsADirectoryError``,
    ``FileExistsError``, ``PermissionError``, …) carrying Locus's message.
    """

    def __init__(self, inner: _locus.Client) -> None:
        self._c = inner

    @property
    def node(self) -> int:
        """The node this client acts on (its writes are stored there)."""
        return self._c.node

    @property
    def dir(self) -> str:
        """The cluster's directory."""
        return str(self._c.dir)

    @property
    def diskless(self) -> bool:
        """Whether this host has no node of the cluster (all bytes cross the network)."""
        return self._c.diskless

    def open(
        self,
        path: str,
        mode: str = "rb",
        buffering: int = -1,
        encoding: Optional[str] = None,
        errors: Optional[str] = None,
        newline: Optional[str] = None,
    ) -> IO[Any]:
        """Opens ``path`` as Python's ``open`` does: ``rb`` (seekable; the
        version current at opening, fetched to this node if it is elsewhere),
        ``wb`` (from empty, created if missing), ``ab`` (from its end) or
        ``xb`` (a new file); the same without ``b`` for text. What is written is seen by others when
        the file is closed."""
        kind = mode.replace("b", "").replace("t", "")
        if kind not in ("r", "w", "a", "x") or ("b" in mode and "t" in mode):
            raise ValueError(f"invalid mode: {mode!r} (r, w, a or x, with b for bytes)")
        size = io.DEFAULT_BUFFER_SIZE if buffering in (-1, 1) else buffering
        raw: io.FileIO
        if kind == "r":
            raw = _Reading(self._c.read_fd(path), path)
        else:
            raw = _Publishing(self._c.open_writer(path, kind), path)
        if buffering == 0:
            if "b" not in mode:
                raise ValueError("can't have unbuffered text I/O")
            return raw
        buffered: Union[io.BufferedReader, io.BufferedWriter]
        if kind == "r":
            buffered = io.BufferedReader(raw, size)
        else:
            buffered = io.BufferedWriter(raw, size)
        if "b" in mode:
            return buffered
        return io.TextIOWrapper(buffered, encoding, errors, newline, line_buffering=buffering == 1)

    def stat(self, path: str) -> Dict[str, Any]:
        """``name``, ``type`` (``file`` or ``directory``), ``size``, ``mode``,
        ``mtime`` (seconds), ``version``, ``holders`` (nodes with its data),
        ``copies`` and ``locked`` (a writer has it)."""
        return self._c.stat(path)

    def ls(self, path: str = "/", detail: bool = False) -> List[Any]:
        """The full paths in directory ``path`` (or the file itself); with
        ``detail``, each one's ``stat``."""
        return self._c.ls(path, detail)

    def exists(self, path: str) -> bool:
        try:
            self._c.stat(path)
        except FileNotFoundError:
            return False
        return True

    def mkdir(self, path: str, parents: bool = False) -> None:
        """Makes directory ``path`` (and its missing parents, with ``parents``)."""
        self._c.mkdir(path, parents)

    def rm(self, path: str, recursive: bool = False) -> None:
        """Removes file ``path``; a directory and everything in it only with ``recursive``."""
        self._c.rm(path, recursive)

    def rmdir(self, path: str) -> None:
        """Removes empty directory ``path``."""
        self._c.rmdir(path)

    def mv(self, src: str, dst: str) -> None:
        """Renames ``src`` to ``dst`` (a file there is replaced)."""
        self._c.mv(src, dst)

    def locate(self, path: str) -> List[int]:
        """The nodes holding file ``path``'s data."""
        return self._c.locate(path)

    def place(self, path: str, node: int) -> None:
        """Has file ``path``, not made yet, stored on ``node`` whoever writes it."""
        self._c.place(path, node)

    def put(self, local: PathLike, path: str, recursive: bool = False) -> Tuple[int, int]:
        """Copies host file ``local`` (a tree, with ``recursive``) in as
        ``path``; an existing directory receives it under its own name, as
        ``cp`` does. Returns (files, bytes)."""
        return self._c.put(os.fspath(local), path, recursive)

    def get(self, path: str, local: PathLike, recursive: bool = False) -> Tuple[int, int]:
        """Copies file ``path`` (a tree, with ``recursive``) out to host path
        ``local``. Returns (files, bytes)."""
        return self._c.get(path, os.fspath(local), recursive)

    def cat(self, path: str, start: int = 0, end: Optional[int] = None) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of file ``path``."""
        return bytes(self._c.cat(path, start, end))

    def df(self) -> List[Dict[str, Any]]:
        """Each node's ``name``, ``files``, ``stored`` and ``free`` bytes;
        ``up`` false (and ``error``) for a node whose daemon does not answer."""
        return self._c.df()

    def status(self) -> Dict[str, Any]:
        """The cluster as this client sees it: its directory, this client's
        node, and how many nodes are up of how many."""
        nodes = self._c.df()
        return {
            "dir": self.dir,
            "node": self.node,
            "diskless": self.diskless,
            "nodes": len(nodes),
            "up": sum(1 for n in nodes if n["up"]),
        }

    def __repr__(self) -> str:
        return f"locus.Client(dir={self.dir!r}, node={self.node})"


def connect(dir: Optional[PathLike] = None, node: Optional[int] = None) -> Client:
    """A client of the cluster in ``dir`` (default: ``$LOCUS_DIR``, else the
    user's default cluster, as the ``locus`` command finds it), acting on
    ``node`` (default: this host's node; on a host of no node of a deployed
    cluster, a client with no store of its own)."""
    return Client(_locus.connect(None if dir is None else os.fspath(dir), node))
