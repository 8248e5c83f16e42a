#!/usr/bin/python3
"""Identical streams sharing their batches (issue 20): 1, 2, 4 and 8 train
streams of one dataset with the same options and seed, each its own
`bfeed bench` process started together; then 4 with different seeds, and
4 identical ones with share=off (what every job cost before sharing).

For each case: the aggregate samples/s (all samples delivered / wall time
from the first start to the last exit), its ratio to one job's rate, and
the daemon's CPU time per 1000 samples delivered (/proc utime + stime).
Rounds alternate the cases (ABCD, BCDA, ...); medians are quoted. Run it
alone: it prints the load average and the busiest processes first.

    bench/share.py BUILD_BIN DATASET_DIR [--rounds 3] [--epochs 6] [--batch 20]
                   [--case "4 identical" --case "8 identical" ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_util import quiet_report, start_daemon


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def run_case(binp, addr, n, opts_of, epochs, batch, dpid, env=None):
    """n bfeed bench processes at once; (samples/s aggregate, daemon CPU s per 1000 samples)."""
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), cpu_ticks(dpid)
    procs = [subprocess.Popen([os.path.join(binp, "bfeed"), "bench", "--connect", addr, "--dataset", "imagenet",
                               "--batch", str(batch), "--epochs", str(epochs), "--json"] + opts_of(k),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=dict(os.environ, **(env or {}))) for k in range(n)]
    samples = 0
    for p in procs:
        out, _ = p.communicate(timeout=900)
        if p.returncode != 0:
            raise RuntimeError("bfeed bench exited %d" % p.returncode)
        samples += json.loads(out)["samples"]
    wall, cpu = time.monotonic() - t0, (cpu_ticks(dpid) - c0) / hz
    return samples / wall, cpu * 1000 / samples


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("dataset")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--case", action="append", help="a case to run, by name (repeat it; default: all; '1 job' always runs)")
    a = ap.parse_args()
    quiet_report()
    d, addr = start_daemon(a.bin, a.dataset, a.workers, "bfeed-share-bench-")
    same = lambda k: ["--seed", "1"]  # noqa: E731
    # Shared memory (libbfeed's default on a Unix socket): each stream gets
    # a copy of a shared batch in its ring. Over the socket (BFEED_SHM=0)
    # the daemon copies nothing itself: the kernel does, into each socket.
    sock = {"BFEED_SHM": "0"}
    cases = [("1 job", 1, same, None), ("2 identical", 2, same, None), ("4 identical", 4, same, None),
             ("8 identical", 8, same, None), ("4, seeds 1..4", 4, lambda k: ["--seed", str(k + 1)], None),
             ("4 identical, share=off", 4, lambda k: ["--seed", "1", "--share", "off"], None),
             ("1 job, socket", 1, same, sock), ("4 identical, socket", 4, same, sock),
             ("8 identical, socket", 8, same, sock)]
    if a.case:
        want = set(a.case) | {"1 job"}
        unknown = want - {c[0] for c in cases}
        if unknown:
            ap.error("unknown cases: %s" % ", ".join(sorted(unknown)))
        cases = [c for c in cases if c[0] in want]
    res = {name: [] for name, _, _, _ in cases}
    try:
        run_case(a.bin, addr, 1, same, 1, a.batch, d.pid)  # warm the page cache
        for r in range(a.rounds):
            order = cases[r % len(cases):] + cases[:r % len(cases)]
            for name, n, opts_of, env in order:
                res[name].append(run_case(a.bin, addr, n, opts_of, a.epochs, a.batch, d.pid, env))
                print("round %d  %-24s %8.1f samples/s  %.3f daemon CPU s / 1000 samples" %
                      ((r + 1, name) + res[name][-1]), flush=True)
    finally:
        d.terminate()
        d.wait()
    one = statistics.median(x[0] for x in res["1 job"])
    print("\nmedians over %d rounds (each job %d epochs, batches of %d; %d workers):" %
          (a.rounds, a.epochs, a.batch, a.workers))
    print("%-24s %12s %10s %22s" % ("case", "samples/s", "x 1 job", "daemon CPU s/1000"))
    for name, _, _, _ in cases:
        rate = statistics.median(x[0] for x in res[name])
        cpu = statistics.median(x[1] for x in res[name])
        print("%-24s %12.1f %10.2f %22.3f" % (name, rate, rate / one, cpu))
    quiet_report()


if __name__ == "__main__":
    sys.exit(main())
