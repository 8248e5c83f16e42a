"""Identical streams share their batches (issue 20, daemon/serve/share.h),
against the oracle of the same stream alone: each stream's batches, hashed
by tests/service/stream_hash, equal those of the stream opened alone with
share=off, batch for batch, whatever joins beside it.

  identity  8 streams joining at different times and positions, over
            shared memory, the Unix socket and TCP (codecs none and u8),
            one in u8+zstd (its own class); the daemon says batches were
            shared, and each stream's built + shared is what it received
  apart     streams with another seed or size, or share=off, never share
  slow      one consumer slow beside three fast ones: the fast ones finish
            while the slow one is not halfway (never stalled by it), and it
            builds its own once they are gone; its bytes are unchanged
  reload    a SIGHUP while four shared streams run changes no byte
  metrics   /metrics has the share counters

    share_oracle.py BFEEDD BFEED STREAM_HASH PART|all
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import Daemon, check, wait_for  # noqa: E402
from oracle_util import main as oracle_main  # noqa: E402

BFEEDD, BFEED, STREAM_HASH = sys.argv[1:4]
TMP = tempfile.mkdtemp(prefix="bfeed-share-")
OPTS = ["--batch", "16", "--size", "64", "--seed", "3", "--window", "4"]
BPE = 800 // 16  # make-demo's 800 training images


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Hasher:
    """One stream_hash client: lines "EPOCH INDEX HASH", read as asked."""

    def __init__(self, addr, opts, first=0, shm=1, sleep_ms=0):
        argv = [STREAM_HASH, addr, "demo"] + list(opts) + ["--first", str(first), "--shm", str(shm)]
        if sleep_ms:
            argv += ["--sleep-ms", str(sleep_ms)]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.opened = self.p.stdout.readline().strip()
        self.lines = []
        self.take_lines(first)

    def take_lines(self, n):
        for _ in range(n):
            line = self.p.stdout.readline().strip()
            if not line or line.startswith("error"):
                raise RuntimeError("stream_hash: %r" % line)
            e, i, h = line.split()
            self.lines.append(((int(e), int(i)), h))

    def ask(self, n):
        self.p.stdin.write("next %d\n" % n)
        self.p.stdin.flush()
        self.asked = n

    def next(self, n):
        self.ask(n)
        self.take_lines(n)

    def stats(self):
        self.p.stdin.write("stats\n")
        self.p.stdin.flush()
        return dict(kv.split("=") for kv in self.p.stdout.readline().split())

    def quit(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        return self.p.wait(60)


def run_together(hs, n):
    """Every client asks for n batches before any is read: they run at once."""
    for h in hs:
        h.ask(n)
    for h in hs:
        h.take_lines(n)


def daemon(name, extra=()):
    """bfeedd on make-demo's training images, on a Unix socket and TCP."""
    global TCP
    demo = os.path.join(TMP, "demo")
    if not os.path.isdir(demo):
        subprocess.run([BFEED, "make-demo", demo], check=True, stdout=subprocess.DEVNULL)
    where = os.path.join(TMP, name)
    os.makedirs(where)
    TCP = "127.0.0.1:%d" % free_port()
    return Daemon(BFEEDD, where, ["demo=" + os.path.join(demo, "train")], extra=["--listen", TCP] + list(extra))


TCP = None


def reference(d, opts, n):
    """The stream alone, share=off: {(epoch, index): hash}."""
    h = Hasher(d.addr, opts + ["--share", "off"], first=n, shm=0)
    s = h.stats()
    h.quit()
    check(s.get("batches_shared") == "0" and s.get("share") == "0",
          "a share=off stream takes nothing built for another (%s shared)" % s.get("batches_shared"))
    return dict(h.lines)


def same(h, ref, what):
    bad = [k for k, v in h.lines if ref.get(k) != v]
    return check(h.lines and not bad, "%s: %d batches equal the stream alone's%s" %
                 (what, len(h.lines), "" if not bad else " (%d differ, first %s)" % (len(bad), bad[0])))


def report(d):
    r = subprocess.run([BFEED, "stats", "--connect", d.addr, "--json"], capture_output=True, text=True, timeout=30)
    return json.loads(r.stdout)


def test_identity():
    d = daemon("identity")
    try:
        ref = reference(d, OPTS, 2 * BPE)
        joins = [  # (address, extra options, shm, delay before opening)
            (d.addr, [], 1, 0.0),
            (d.addr, [], 0, 0.0),
            (TCP, ["--codec", "u8", "--start-batch", "3"], 0, 0.05),
            (TCP, ["--codec", "none", "--start-batch", "7"], 0, 0.1),
            (d.addr, ["--epoch", "1"], 1, 0.2),
            (TCP, ["--codec", "u8+zstd"], 0, 0.3),
            (d.addr, [], 0, 0.5),
            (TCP, ["--codec", "u8", "--start-batch", "10"], 0, 0.6),
        ]
        hs = []
        for addr, extra, shm, delay in joins:  # each reads 8 while the next joins
            time.sleep(delay)
            hs.append(Hasher(addr, OPTS + extra, first=0, shm=shm))
            hs[-1].ask(8)
        for h in hs:
            h.take_lines(8)
        run_together(hs, 22)
        stats = [h.stats() for h in hs]
        for h in hs:
            h.quit()
        for k, (h, (addr, extra, shm, _)) in enumerate(zip(hs, joins)):
            same(h, ref, "stream %d (%s%s%s)" % (k, "tcp" if addr == TCP else "unix", " shm" if shm else "",
                                                  " " + " ".join(extra) if extra else ""))
            s = stats[k]
            check(int(s["batches_built"]) + int(s["batches_shared"]) == int(s["batches"]),
                  "stream %d: built %s + shared %s = the %s batches it was sent" %
                  (k, s["batches_built"], s["batches_shared"], s["batches"]))
        shared = sum(int(s["batches_shared"]) for s in stats)
        check(shared >= 60, "the streams took %d batches built for another (of %d)" % (shared, 30 * len(hs)))
        built = report(d)["daemon"]["share_builds"]
        check(built < 30 * len(hs), "the daemon built %d shared batches for the %d it sent" % (built, 30 * len(hs)))
        check(int(stats[5]["batches_shared"]) == 0, "the u8+zstd stream is a class of its own: shared nothing")
        rep = report(d)["daemon"]
        check(rep["batches_shared"] >= shared and rep["share_bytes_saved"] > 0,
              "the daemon counts them: %d batches, %d bytes saved" % (rep["batches_shared"], rep["share_bytes_saved"]))
        wait_for(lambda: report(d)["daemon"]["share_batches_held"] == 0, 10, "shared batches freed after the streams")
        check(True, "every shared batch is freed once its streams are gone")
    finally:
        check(d.stop() is None, "the daemon stops")


def test_apart():
    d = daemon("apart")
    try:
        variants = [["--seed", "1"], ["--seed", "2"], ["--seed", "1", "--size", "72"], ["--seed", "1", "--share", "off"]]
        hs = [Hasher(d.addr, OPTS + v, first=0, shm=0) for v in variants]
        run_together(hs, 20)
        stats = [h.stats() for h in hs]
        for h in hs:
            h.quit()
        for v, s in zip(variants, stats):
            check(s["batches_shared"] == "0" and s["batches_built"] == s["batches"],
                  "%s beside the others: all its %s batches built for it (%s shared)" %
                  (" ".join(v), s["batches"], s["batches_shared"]))
        check(report(d)["daemon"]["batches_shared"] == 0, "the daemon shared none")
    finally:
        check(d.stop() is None, "the daemon stops")


def test_slow():
    d = daemon("slow")
    try:
        n = 2 * BPE
        ref = reference(d, OPTS, n)
        slow = Hasher(d.addr, OPTS, first=1, shm=1, sleep_ms=60)
        fast = [Hasher(d.addr, OPTS, first=1, shm=k % 2) for k in range(3)]
        slow.ask(n - 1)
        run_together(fast, n - 1)
        fstats = [h.stats() for h in fast]
        for h in fast:
            h.quit()
        # The slow one has been reading all along; how far it is now:
        done_fast = time.monotonic()
        slow.take_lines(n - 1)
        taken_after = time.monotonic() - done_fast
        sstats = slow.stats()
        slow.quit()
        check(taken_after > 0.3 * n * 0.060,
              "the fast streams finished %d batches while the slow one (60 ms a batch) still had %.1f s to go" %
              (n, taken_after))
        for k, h in enumerate(fast):
            same(h, ref, "fast stream %d" % k)
        same(slow, ref, "the slow stream")
        check(sum(int(s["batches_shared"]) for s in fstats) >= n, "the fast streams shared: %s of their %d" %
              ([s["batches_shared"] for s in fstats], 3 * n))
        check(int(sstats["batches_built"]) > 0, "the slow stream fell back to building its own (%s built, %s shared)" %
              (sstats["batches_built"], sstats["batches_shared"]))
    finally:
        check(d.stop() is None, "the daemon stops")


def test_reload():
    d = daemon("reload")
    try:
        ref = reference(d, OPTS, 40)
        hs = [Hasher(d.addr if k % 2 else TCP, OPTS, first=0, shm=k % 2) for k in range(4)]
        run_together(hs, 10)
        d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded" in d.log(), 10, "the reload")
        run_together(hs, 30)
        stats = [h.stats() for h in hs]
        for h in hs:
            h.quit()
        for k, h in enumerate(hs):
            same(h, ref, "stream %d across a reload" % k)
        check(sum(int(s["batches_shared"]) for s in stats) > 0, "they shared across it")
    finally:
        check(d.stop() is None, "the daemon stops")


def test_metrics():
    mport = free_port()
    d = daemon("metrics", ["--metrics-listen", "127.0.0.1:%d" % mport])
    try:
        hs = [Hasher(d.addr, OPTS, first=6, shm=0) for _ in range(2)]
        for h in hs:
            h.quit()
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport, timeout=10).read().decode()
        vals = {}
        for line in text.splitlines():
            if line.startswith("bfeed_share") or line.startswith("bfeed_batches_shared"):
                name, v = line.rsplit(" ", 1)
                vals[name] = float(v)
        check(vals.get("bfeed_share_builds_total", 0) > 0, "bfeed_share_builds_total counts the builds (%s)" %
              vals.get("bfeed_share_builds_total"))
        check('bfeed_batches_shared_total{dataset="demo"}' in vals and 'bfeed_share_bytes_saved_total{dataset="demo"}'
              in vals and "bfeed_share_held_bytes" in vals, "the per-dataset share counters and the held gauge are there")
    finally:
        check(d.stop() is None, "the daemon stops")


TESTS = {"identity": test_identity, "apart": test_apart, "slow": test_slow, "reload": test_reload,
         "metrics": test_metrics}


def run_all():
    for name, t in TESTS.items():
        print("-- %s" % name, flush=True)
        t()


if __name__ == "__main__":
    part = sys.argv[4] if len(sys.argv) > 4 else "all"
    oracle_main(dict(TESTS, all=run_all), part, TMP)
