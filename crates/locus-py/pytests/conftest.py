"""A cluster of two emulated nodes started the way a user starts one
(`locus fs up`), shared by the tests of a session and stopped after them."""

import os
import shutil
import subprocess

import pytest

import locus

LOCUS = os.environ.get("LOCUS_BIN") or shutil.which("locus")


@pytest.fixture(scope="session")
def locus_bin():
    if LOCUS is None:
        pytest.fail("the tests start clusters and runs with the locus program: set LOCUS_BIN")
    return LOCUS


@pytest.fixture(scope="session")
def cluster(locus_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster") / "c"
    subprocess.run([locus_bin, "fs", "up", "--dir", str(d), "--nodes", "2"],
                   check=True, stdout=subprocess.DEVNULL)
    yield d
    subprocess.run([locus_bin, "fs", "down", "--dir", str(d)], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture
def fs(cluster):
    return locus.connect(cluster)


@pytest.fixture
def fresh_dir(fs, request):
    """A directory of this test's own in the cluster."""
    d = "/t/" + request.node.name.replace("[", "-").replace("]", "")
    if fs.exists(d):
        fs.rm(d, recursive=True)
    fs.mkdir(d, parents=True)
    return d
