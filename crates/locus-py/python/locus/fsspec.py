"""``locus://`` for fsspec (and so pandas, xarray, dask): ``locus:///data/x.csv``
is Locus file ``/data/x.csv`` of the user's default cluster (``$LOCUS_DIR``);
``storage_options={"dir": …, "node": …}`` choose another."""

from __future__ import annotations

import datetime
import os
import posixpath
from typing import Any, Dict, List, Optional, Union

from fsspec.spec import AbstractFileSystem

from . import _locus
from .files import connect


def _is_pattern(path: str) -> bool:
    """Whether fsspec expands ``path`` as a glob."""
    return any(c in path for c in "*?[")


class _PerCluster(type(AbstractFileSystem)):  # type: ignore[misc]
    """fsspec keeps one instance per constructor arguments: the cluster is
    named in them as found at construction ($LOCUS_DIR may change), so an
    instance never serves another cluster's URLs."""

    def __call__(cls, *args: Any, dir: Optional[str] = None, **kwargs: Any) -> Any:
        found = os.fspath(_locus.default_dir() if dir is None else dir)
        return super().__call__(*args, dir=found, **kwargs)


class LocusFileSystem(AbstractFileSystem, metaclass=_PerCluster):
    protocol = "locus"
    root_marker = "/"

    def __init__(self, dir: Optional[str] = None, node: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(dir=dir, node=node, **kwargs)
        self.client = connect(dir, node)

    @classmethod
    def _strip_protocol(cls, path: Union[str, List[str]]) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("locus://"):
            path = path[len("locus://") :]
        # Scripts' spelling of the same files.
        if path == "/locus" or path.startswith("/locus/"):
            path = path[len("/locus") :]
        path = "/" + path.strip("/")
        return path

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> List[Any]:
        return self.client.ls(self._strip_protocol(path), detail=detail)

    def info(self, path: str, **kwargs: Any) -> Dict[str, Any]:
        return self.client.stat(self._strip_protocol(path))

    def exists(self, path: str, **kwargs: Any) -> bool:
        return self.client.exists(self._strip_protocol(path))

    def _made_parent(self, path: str) -> str:
        """``path``, its directory made if missing (fsspec writes into new
        directories, as object stores let them)."""
        parent = posixpath.dirname(path)
        if parent != "/":
            self.client.mkdir(parent, parents=True)
        return path

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, autocommit: bool = True,
              cache_options: Any = None, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        if "r" not in mode:
            self._made_parent(path)
        return self.client.open(path, mode)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.client.mkdir(self._strip_protocol(path), parents=create_parents)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        path = self._strip_protocol(path)
        if self.exists(path):
            if not exist_ok:
                raise FileExistsError(path)
            return
        self.client.mkdir(path, parents=True)

    def rmdir(self, path: str) -> None:
        self.client.rmdir(self._strip_protocol(path))

    def rm_file(self, path: str) -> None:
        # fsspec removes a tree path by path, its directories among them.
        path = self._strip_protocol(path)
        try:
            self.client.rm(path)
        except IsADirectoryError:
            self.client.rmdir(path)

    _rm = rm_file

    def rm(self, path: Any, recursive: bool = False, maxdepth: Optional[int] = None) -> None:
        paths = path if isinstance(path, list) else [path]
        for p in paths:
            if recursive and maxdepth is None and not _is_pattern(p):
                self.client.rm(self._strip_protocol(p), recursive=True)
            else:
                super().rm(p, recursive=recursive, maxdepth=maxdepth)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: Optional[int] = None,
           **kwargs: Any) -> None:
        if isinstance(path1, str) and isinstance(path2, str) and not _is_pattern(path1):
            # One rename: a tree moves whole, as a directory's rename does.
            src, dst = self._strip_protocol(path1), self._strip_protocol(path2)
            if self.isdir(dst) and not self.isdir(src):
                dst = dst.rstrip("/") + "/" + os.path.basename(src)
            self.client.mv(src, dst)
        else:
            super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        src, dst = self._strip_protocol(path1), self._strip_protocol(path2)
        if self.isdir(src):
            self.makedirs(dst, exist_ok=True)
            return
        with self.client.open(src, "rb") as f, self.client.open(self._made_parent(dst), "wb") as g:
            while True:
                block = f.read(1 << 20)
                if not block:
                    break
                g.write(block)

    def cat_file(self, path: str, start: Optional[int] = None, end: Optional[int] = None,
                 **kwargs: Any) -> bytes:
        path = self._strip_protocol(path)
        if (start is not None and start < 0) or (end is not None and end < 0):
            size = self.client.stat(path)["size"]
            start = size + start if start is not None and start < 0 else start
            end = size + end if end is not None and end < 0 else end
        start = max(start or 0, 0)
        if end is not None and end <= start:
            return b""
        return self.client.cat(path, start, end)

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if mode == "create" and self.exists(path):
            raise FileExistsError(path)
        with self.client.open(self._made_parent(path), "wb") as f:
            f.write(value)

    def put_file(self, lpath: str, rpath: str, callback: Any = None, mode: str = "overwrite",
                 **kwargs: Any) -> None:
        rpath = self._strip_protocol(rpath)
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        if mode == "create" and self.exists(rpath):
            raise FileExistsError(rpath)
        with open(lpath, "rb") as f, self.client.open(self._made_parent(rpath), "wb") as g:
            while True:
                block = f.read(1 << 20)
                if not block:
                    break
                g.write(block)

    def get_file(self, rpath: str, lpath: str, callback: Any = None, outfile: Any = None,
                 **kwargs: Any) -> None:
        rpath = self._strip_protocol(rpath)
        if self.isdir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        os.makedirs(os.path.dirname(os.path.abspath(lpath)), exist_ok=True)
        self.client.get(rpath, lpath)

    def created(self, path: str) -> datetime.datetime:
        return self.modified(path)

    def modified(self, path: str) -> datetime.datetime:
        mtime = self.client.stat(self._strip_protocol(path))["mtime"]
        return datetime.datetime.fromtimestamp(mtime, tz=datetime.timezone.utc)

    def ukey(self, path: str) -> str:
        info = self.client.stat(self._strip_protocol(path))
        return f"{info['name']}@{info['version']}"
