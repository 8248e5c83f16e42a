#!/usr/bin/python3
"""Several hosts on one machine: network namespaces joined by veth links,
one bfeedd per namespace on TCP, a client in a namespace of its own that
spreads one stream over the three (--connect A,B,C). Mid-epoch one daemon
is killed (SIGKILL) and later started again; the batches the client took
must be those of one daemon alone, byte for byte (a hash per batch), none
missing, none twice, and the restarted daemon must serve again.

The namespaces (bfeed-c, bfeed-d0..2, with a suffix of this process's id)
and their links are made here and removed at the end, also on failure.
Each link is a point-to-point /30 in 127.100.K.0: loopback-range addresses
that exist inside these namespaces only (route_localnet lets them travel
over the veth links), so nothing outside the test can reach them or be
reached. Where namespaces cannot be made (no CAP_NET_ADMIN, no `ip`), the
test says why and exits 77, which ctest reports as skipped.

usage: netns_failover.py BUILD_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import check, failures, wait_for  # noqa: E402

BUILD = sys.argv[1]
BIN = os.path.join(BUILD, "bin")
TAG = str(os.getpid())
CLIENT = "bfeed-c" + TAG
DAEMONS = ["bfeed-d%d-%s" % (k, TAG) for k in range(3)]
PORT = 7070
BATCH, SIZE, WINDOW = 8, 32, 4
SKIP = 77


def addr(k):
    return "127.100.%d.2:%d" % (k, PORT)


def sh(*argv, ok=True):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if ok and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), r.stderr.strip()))
    return r


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns] + list(argv)


def make_namespaces():
    """The client namespace and one per daemon, a veth link to each."""
    for ns in [CLIENT] + DAEMONS:
        sh("ip", "netns", "add", ns)
        sh(*in_ns(ns, ["ip", "link", "set", "lo", "up"]))
        sh(*in_ns(ns, ["sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"]))
    for k, ns in enumerate(DAEMONS):
        c, d = "bfc%d-%s" % (k, TAG[-6:]), "bfd%d-%s" % (k, TAG[-6:])
        sh("ip", "link", "add", c, "netns", CLIENT, "type", "veth", "peer", "name", d, "netns", ns)
        for side, dev, ip in ((CLIENT, c, "127.100.%d.1/30" % k), (ns, d, "127.100.%d.2/30" % k)):
            sh(*in_ns(side, ["sysctl", "-qw", "net.ipv4.conf.%s.route_localnet=1" % dev]))
            sh(*in_ns(side, ["ip", "addr", "add", ip, "dev", dev]))
            sh(*in_ns(side, ["ip", "link", "set", dev, "up"]))


def remove_namespaces():
    for ns in [CLIENT] + DAEMONS:
        sh("ip", "netns", "del", ns, ok=False)


class Daemon:
    def __init__(self, k, data, tmp):
        self.k, self.data, self.tmp = k, data, tmp
        self.proc = None

    def start(self):
        log = open(os.path.join(self.tmp, "bfeedd-%d.log" % self.k), "ab")
        argv = in_ns(DAEMONS[self.k], [os.path.join(BIN, "bfeedd"), "--listen", addr(self.k), "--workers", "1",
                                       "--dataset", "demo=" + self.data, "--log-level", "notice"])
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        wait_for(lambda: self.proc.poll() is not None or stats(self.k) is not None, 20, "bfeedd %d" % self.k)
        check(self.proc.poll() is None, "daemon %d (namespace %s) listens on %s" % (self.k, DAEMONS[self.k],
                                                                                 addr(self.k)))

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def stats(k):
    """The daemon's report (bfeed stats --json), asked from the client
    namespace, or None when it does not answer."""
    r = subprocess.run(in_ns(CLIENT, [os.path.join(BIN, "bfeed"), "stats", "--connect", addr(k), "--json"]),
                       capture_output=True, text=True, timeout=30)
    return json.loads(r.stdout) if r.returncode == 0 else None


def batches_served(k):
    """Batches of "demo" the daemon has served since it started."""
    report = stats(k) or {}
    return report.get("datasets", {}).get("demo", {}).get("batches", 0)


class Reader:
    """tests/service/stream_hash in the client namespace: one line per
    batch, "EPOCH INDEX HASH"; "next N" on its stdin asks for N more."""

    def __init__(self, address, first):
        argv = in_ns(CLIENT, [os.path.join(BIN, "stream_hash"), address, "demo", "--batch", str(BATCH), "--size",
                              str(SIZE), "--window", str(WINDOW), "--seed", "5", "--first", str(first)])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines = []
        opened = self.proc.stdout.readline().strip()
        check(opened == "open", "the stream opens over %s (%s)" % (address, opened))
        self.read(first)

    def read(self, n):
        for _ in range(n):
            line = self.proc.stdout.readline().strip()
            if not line or line.startswith("error"):
                check(False, "a batch came (%r)" % line)
                return
            self.lines.append(line)

    def next(self, n):
        self.proc.stdin.write("next %d\n" % n)
        self.proc.stdin.flush()
        self.read(n)

    def stats(self):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def run(data, tmp):
    daemons = [Daemon(k, data, tmp) for k in range(3)]
    for d in daemons:
        d.start()
    n = 80  # make-demo --train 10: 80 images, 10 batches of 8 an epoch; 80 batches are 8 epochs

    ref = Reader(addr(0), n)
    ref.close()
    check(len(ref.lines) == n, "the reference: %d batches from daemon 0 alone" % len(ref.lines))

    t0 = time.monotonic()
    fan = Reader(",".join(addr(k) for k in range(3)), 25)
    print("fan-out: %d batches taken; member counters: %s" % (len(fan.lines), fan.stats()), flush=True)
    daemons[1].kill()
    print("%.1f s: daemon 1 killed (SIGKILL)" % (time.monotonic() - t0), flush=True)
    fan.next(25)
    print("%.1f s: %d batches taken without daemon 1; %s" % (time.monotonic() - t0, len(fan.lines), fan.stats()),
          flush=True)
    daemons[1].start()
    print("%.1f s: daemon 1 started again" % (time.monotonic() - t0), flush=True)
    # The client tries a lost member again with backoff (at most about a
    # second apart): give it time to rejoin, then read the rest.
    time.sleep(3)
    fan.next(n - len(fan.lines))
    print("%.1f s: %d batches in all; %s" % (time.monotonic() - t0, len(fan.lines), fan.stats()), flush=True)
    fan.close()
    served = batches_served(1)
    print("daemon 1 served %d batches after its restart" % served, flush=True)
    for d in daemons:
        d.kill()

    check(len(fan.lines) == n, "%d batches taken over the three daemons" % len(fan.lines))
    same = sum(a == b for a, b in zip(ref.lines, fan.lines))
    check(fan.lines == ref.lines, "they are one daemon's batches, in its order, byte for byte (%d of %d equal)"
          % (same, n))
    keys = [tuple(line.split()[:2]) for line in fan.lines]
    check(len(set(keys)) == len(keys), "no batch twice")
    check(served > 0, "the restarted daemon rejoined: it served %d batches" % served)


def main():
    if not shutil.which("ip"):
        print("skipped: no `ip` command (iproute2) to make network namespaces")
        return SKIP
    probe = "bfeed-probe" + TAG
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        print("skipped: network namespaces cannot be made here: %s" % r.stderr.strip())
        return SKIP
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    tmp = tempfile.mkdtemp(prefix="bfeed-netns-")
    try:
        demo = os.path.join(tmp, "demo")
        sh(os.path.join(BIN, "bfeed"), "make-demo", demo, "--train", "10", "--val", "1")
        make_namespaces()
        run(os.path.join(demo, "train"), tmp)
    except Exception as e:  # a failure, with its reason, and the namespaces still go
        check(False, "the test ran: %r" % e)
    finally:
        remove_namespaces()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d check(s) failed" % len(failures) if failures else "all passed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
