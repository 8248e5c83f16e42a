"""Fixtures for the Python client's tests: the real bfeedd on a Unix socket,
serving the JPEG fixtures (one class per file), a make-demo dataset, a
float32 .npy table and a small text dataset. ctest passes the binaries in
BFEEDD and BFEED, and PYTHONPATH=<build>/python."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # tests/: oracle_util
from oracle_util import Daemon, write_table  # noqa: E402

FIXTURES = os.environ.get("BFEED_FIXTURES", os.path.join(HERE, "..", "..", "fixtures", "images"))
NPY_ROWS = 23  # prime: shards of 2, 3, 4 readers all leave samples out
WORDS = ["the", "of", "and", "to", "in", "was", "said", "people", "fire", "police", "year", "city"]


def _binary(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail("%s is not set (run these tests through ctest)" % name)
    return path


def _fixture_images(root):
    files = sorted(f for f in os.listdir(FIXTURES) if f.lower().endswith((".jpeg", ".jpg")))
    for f in files:  # one class per file: sample i is files[i], label i
        os.makedirs(os.path.join(root, os.path.splitext(f)[0]))
        os.symlink(os.path.join(os.path.abspath(FIXTURES), f), os.path.join(root, os.path.splitext(f)[0], f))
    return [os.path.join(FIXTURES, f) for f in files]


def _text(tmp):
    """A GloVe-style table of WORDS (4-d, read back as the oracle's values)
    and a TSV dataset: line i has 1 + i % 5 words."""
    vec = write_table(os.path.join(tmp, "vectors.txt"), dim=4, words=WORDS)
    with open(vec) as f:
        table = {w: np.array(v, dtype=np.float32) for w, *v in (line.split() for line in f)}
    lines = [[WORDS[(i + k) % len(WORDS)] for k in range(1 + i % 5)] for i in range(12)]
    txt = os.path.join(tmp, "train.tsv")
    with open(txt, "w") as f:
        for i, words in enumerate(lines):
            f.write("c%d\t%s\n" % (i % 3, " ".join(words)))
    return txt, vec, table, lines


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("bfeed-py"))
    images = _fixture_images(os.path.join(tmp, "fx"))
    demo = os.path.join(tmp, "demo")
    subprocess.run([_binary("BFEED"), "make-demo", demo, "--train", "10", "--val", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    features = np.arange(NPY_ROWS * 6, dtype=np.float32).reshape(NPY_ROWS, 6) / 8
    np.save(os.path.join(tmp, "f.npy"), features)
    txt, vec, table, lines = _text(tmp)
    return {"tmp": tmp, "images": images, "features": features, "table": table, "lines": lines,
            "datasets": ["fx=" + os.path.join(tmp, "fx"), "demo=" + os.path.join(demo, "train"),
                         "npy=npy:" + os.path.join(tmp, "f.npy"),
                         "txt=text:%s,vectors=%s,cache=0" % (txt, vec)]}


@pytest.fixture(scope="session")
def daemon(data):
    d = Daemon(_binary("BFEEDD"), data["tmp"], data["datasets"])
    yield d
    err = d.stop()
    assert err is None, err + "; log:\n" + d.log()


@pytest.fixture
def own_daemon(data, tmp_path):
    """A daemon of the test's own, for tests that stop (SIGSTOP) or end it."""
    d = Daemon(_binary("BFEEDD"), str(tmp_path), data["datasets"])
    yield d
    if d.proc.poll() is None:
        d.proc.send_signal(signal.SIGCONT)
    d.kill()


@pytest.fixture
def two_daemons(data, tmp_path):
    """Two daemons of the test's own serving the same datasets, for a
    client over several daemons ("A,B")."""
    ds = []
    try:
        for k in range(2):
            os.makedirs(tmp_path / str(k))
            ds.append(Daemon(_binary("BFEEDD"), str(tmp_path / str(k)), data["datasets"], workers=1))
        yield ds
    finally:
        for d in ds:
            d.kill()
