"""Helpers the Python oracles share: waiting, a real bfeedd child on a Unix
socket, and a word-vector table that exists with or without the team's
../shared data.

Used by integration/fetch_oracle.py, integration/format_fetch_oracle.py,
integration/wordvec_fetch_oracle.py, integration/shards_fetch_oracle.py,
scripts/bench_formats.py, client/train_accept.py,
client/wordvec_demo_oracle.py, client/python/conftest.py,
service/test_service.py, client/test_cli.py, service/test_firstrun.py,
client/demo_oracle.py, client/demo_shards_oracle.py and
daemon/shard_oracle.py, which put this folder on sys.path. check() is a
named check that carries on after a failure; main() runs one subcommand per
ctest test.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback

failures = []


def check(cond, what):
    """Print ok/FAIL and the claim; remember a failure and carry on."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def main(tests, cmd, tmp):
    """Run tests[cmd] (a crash is a failure, with its reason), remove tmp,
    and exit 1 if any check failed."""
    try:
        tests[cmd]()
    except Exception as e:
        traceback.print_exc()
        failures.append(repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures), flush=True)
        sys.exit(1)


def wait_for(pred, timeout=10.0, what="condition", step=0.01):
    """Call pred() until it returns something true, and return that; raise
    AssertionError naming what after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        r = pred()
        if r:
            return r
        if time.monotonic() >= end:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(step)


def accepts(path):
    """True when a Unix socket at path takes a connection."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class Daemon:
    """bfeedd serving datasets ("NAME=SPEC" strings) on tmp/d.sock, with
    any extra flags, its stdout and stderr in tmp/bfeedd.log. Raises
    RuntimeError, quoting the log, when it exits or does not listen within
    timeout seconds."""

    def __init__(self, bfeedd, tmp, datasets, workers=2, timeout=20.0, extra=()):
        self.sock = os.path.join(tmp, "d.sock")
        self.log_path = os.path.join(tmp, "bfeedd.log")
        self.addr = "unix:" + self.sock
        argv = [bfeedd, "--listen", self.addr]
        if workers:
            argv += ["--workers", str(workers)]
        for d in datasets:
            argv += ["--dataset", d]
        argv += list(extra)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            wait_for(lambda: self.proc.poll() is not None or accepts(self.sock), timeout, "bfeedd to listen")
        except AssertionError:
            self.kill()
            raise RuntimeError("bfeedd did not accept connections in %.0f s; log:\n%s" % (timeout, self.log()))
        if self.proc.returncode is not None:
            raise RuntimeError("bfeedd exited with %d at start; log:\n%s" % (self.proc.returncode, self.log()))

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, timeout=10.0):
        """SIGTERM; None when it exits 0 in time, else what went wrong
        (it is killed then)."""
        if self.proc.poll() is not None:
            return "bfeedd had already exited with %d" % self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return "bfeedd did not exit within %.0f s of SIGTERM" % timeout
        return None if rc == 0 else "bfeedd exited with status %d after SIGTERM" % rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# Words of the generated table: lowercase ASCII, so that make-demo --text
# takes every one as a candidate, and some common English ones so that the
# oracles' hand-written texts find them.
COMMON_WORDS = ["the", "of", "and", "a", "in", "to", "was", "said", "city", "cat", "hat", "north", "it", "is"]


def write_table(path, nwords=400, dim=50, seed=7, words=None):
    """A GloVe-format table ("word v1 ... vD" lines, no header): words (or
    COMMON_WORDS and then w0, w1, ... up to nwords) with standard normal
    vectors from seed, written with 5 decimals."""
    import numpy as np  # here, so that the service tests need no numpy

    rng = np.random.default_rng(seed)
    if words is None:
        words = COMMON_WORDS + ["w%d" % i for i in range(nwords - len(COMMON_WORDS))]
    with open(path, "w", encoding="utf-8") as f:
        for w in words:
            f.write(w + " " + " ".join("%.5f" % x for x in rng.standard_normal(dim)) + "\n")
    return path


def glove_table(shared_dir, tmp):
    """The team's test_glove.txt (50-d) when shared_dir has it, else a
    generated 50-d table of the same kind in tmp."""
    shared = os.path.join(shared_dir, "test_glove.txt") if shared_dir else ""
    if shared and os.path.isfile(shared):
        return shared
    print("no %s: using a generated 50-d table" % (shared or "shared table"))
    return write_table(os.path.join(tmp, "generated_glove.txt"))


def eval_geometry(w, h, size):
    """torchvision 0.14's Resize(round(size*256/224)) + CenterCrop(size) on a
    w x h image: the resized (rw, rh) and the crop's (left, top)."""
    r = int(round(size * 256 / 224))
    short, long_ = (w, h) if w <= h else (h, w)
    new_short, new_long = r, int(r * long_ / short)
    rw, rh = (new_short, new_long) if w <= h else (new_long, new_short)
    return rw, rh, int(round((rw - size) / 2.0)), int(round((rh - size) / 2.0))


def pillow_eval(path, size, draft=False):
    """torchvision's eval for the image at path, as a uint8 array [size,
    size, 3]: ImageFolder's Image.open(f).convert("RGB"), Resize((rw, rh))
    (BILINEAR, antialiased) and CenterCrop -- what bfeedd's eval serves by
    default. draft=True is the stream option eval_decode=fast instead:
    Image.draft("RGB", (rw, rh)) first, which lets libjpeg's IDCT shrink a
    JPEG by 1/2, 1/4 or 1/8 when the resized image is at most half the
    source in both directions (a no-op for other formats). Geometry comes
    from the full-size image."""
    import numpy as np
    from PIL import Image
    img = Image.open(path)
    rw, rh, left, top = eval_geometry(img.size[0], img.size[1], size)
    if draft:
        img.draft("RGB", (rw, rh))
    img = img.convert("RGB").resize((rw, rh), Image.BILINEAR)
    return np.asarray(img.crop((left, top, left + size, top + size)), dtype=np.uint8)
