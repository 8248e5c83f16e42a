"""Fixtures for the Python client's tests: the real bfeedd on a Unix socket,
serving the JPEG fixtures (one class per file), a make-demo dataset, a
float32 .npy table and a small text dataset. ctest passes the binaries in
BFEEDD and BFEED, and PYTHONPATH=<build>/python."""
import os
import signal
import socket
import subprocess
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.environ.get("BFEED_FIXTURES", os.path.join(HERE, "..", "..", "fixtures", "images"))
NPY_ROWS = 23  # prime: shards of 2, 3, 4 readers all leave samples out
WORDS = ["the", "of", "and", "to", "in", "was", "said", "people", "fire", "police", "year", "city"]


def _binary(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail("%s is not set (run these tests through ctest)" % name)
    return path


class Daemon:
    """bfeedd with the test datasets; stop() checks it exits 0 on SIGTERM."""

    def __init__(self, tmp, datasets):
        self.sock = os.path.join(tmp, "d.sock")
        self.addr = "unix:" + self.sock
        self.log = os.path.join(tmp, "bfeedd.log")
        args = [_binary("BFEEDD"), "--listen", self.addr, "--workers", "2"]
        for d in datasets:
            args += ["--dataset", d]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("bfeedd exited at start:\n" + self.read_log())
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.sock)
                return
            except OSError:
                time.sleep(0.01)
            finally:
                s.close()
        self.proc.kill()
        raise RuntimeError("bfeedd did not listen within 10 s")

    def read_log(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def _fixture_images(root):
    files = sorted(f for f in os.listdir(FIXTURES) if f.lower().endswith((".jpeg", ".jpg")))
    for f in files:  # one class per file: sample i is files[i], label i
        os.makedirs(os.path.join(root, os.path.splitext(f)[0]))
        os.symlink(os.path.join(os.path.abspath(FIXTURES), f), os.path.join(root, os.path.splitext(f)[0], f))
    return [os.path.join(FIXTURES, f) for f in files]


def _text(tmp):
    """A GloVe-style table (word v1..v4) and a TSV dataset: line i has
    1 + i % 5 words."""
    vec = os.path.join(tmp, "vectors.txt")
    rng = np.random.default_rng(7)
    table = {w: rng.standard_normal(4).astype(np.float32) for w in WORDS}
    with open(vec, "w") as f:
        for w, v in table.items():
            f.write(w + " " + " ".join("%.6f" % x for x in v) + "\n")
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
    d = Daemon(os.path.join(data["tmp"]), data["datasets"])
    yield d
    assert d.stop() == 0, d.read_log()


@pytest.fixture
def own_daemon(data, tmp_path):
    """A daemon of the test's own, for tests that stop or kill it."""
    d = Daemon(str(tmp_path), data["datasets"])
    yield d
    d.stop()
