"""locus:// through fsspec: pandas with no Locus code, and fsspec's own
abstract tests of the operations it supports."""

import posixpath
import re

import fsspec
import fsspec.tests.abstract as abstract
import pandas
import pytest

from locus.fsspec import LocusFileSystem


def test_pandas_reads_and_writes_locus_urls(cluster, fs):
    options = {"dir": str(cluster)}
    frame = pandas.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    frame.to_csv("locus:///pandas/frame.csv", index=False, storage_options=options)
    assert fs.cat("/pandas/frame.csv") == b"x,y\n1,a\n2,b\n3,c\n"
    back = pandas.read_csv("locus:///pandas/frame.csv", storage_options=options)
    pandas.testing.assert_frame_equal(back, frame)
    # The script's spelling of the path, and $LOCUS_DIR for the cluster.
    with pytest.MonkeyPatch.context() as m:
        m.setenv("LOCUS_DIR", str(cluster))
        assert len(pandas.read_csv("locus:///locus/pandas/frame.csv")) == 3
        with fsspec.open("locus:///pandas/frame.csv", "rt") as f:
            assert f.readline() == "x,y\n"


def test_the_protocol_is_registered_by_entry_point():
    assert fsspec.get_filesystem_class("locus") is LocusFileSystem


class LocusFixtures(abstract.AbstractFixtures):
    @pytest.fixture
    def fs(self, cluster):
        return LocusFileSystem(dir=str(cluster), skip_instance_cache=True)

    @pytest.fixture
    def fs_join(self):
        return posixpath.join

    @pytest.fixture
    def fs_path(self, fs, request):
        # Test ids hold glob characters, which fsspec would expand.
        path = "/fsspec/" + re.sub(r"[^\w-]", "-", request.node.name)
        fs.makedirs(path, exist_ok=True)
        yield path
        fs.rm(path, recursive=True)


class TestLocusCopy(abstract.AbstractCopyTests, LocusFixtures):
    pass


class TestLocusGet(abstract.AbstractGetTests, LocusFixtures):
    pass


class TestLocusPut(abstract.AbstractPutTests, LocusFixtures):
    pass


class TestLocusOpen(abstract.AbstractOpenTests, LocusFixtures):
    pass


class TestLocusPipe(abstract.AbstractPipeTests, LocusFixtures):
    pass


def test_an_instance_serves_the_cluster_named_when_it_was_made(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCUS_DIR", str(cluster))
    assert fsspec.filesystem("locus").client.dir == str(cluster)
    # Another $LOCUS_DIR is another cluster, not the instance made for the first.
    monkeypatch.setenv("LOCUS_DIR", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError):
        fsspec.filesystem("locus")
