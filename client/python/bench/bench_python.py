#!/usr/bin/env python3
"""Samples/s of a Python loop taking b.torch(TENSOR) beside `bfeed bench` on
the same stream: same dataset, options, seed and batches, in alternating
rounds (Python, C, C, Python, ...), medians of each and their ratio, and the
client's CPU time per batch in each (what the Python layer costs, which a
busy machine does not blur as it blurs samples/s). A benchmark that prints,
never a test that asserts.

    PYTHONPATH=build/python python3 client/python/bench/bench_python.py \\
        --bfeed build/bin/bfeed --connect unix:/tmp/bfeed.sock --dataset demo \\
        --batches 300 --rounds 5 -- --batch 64 --size 224

Options after `--` are stream options in the command line's spelling, given
to both (`--keep-partial` for a flag); the tensor taken is --tensor (image).
"""
import argparse
import json
import resource
import statistics
import subprocess
import time

import bfeed


def stream_kwargs(cli):
    """['--batch', '64', '--keep-partial'] -> {'batch': '64', 'keep_partial': True}."""
    out, i = {}, 0
    while i < len(cli):
        name = cli[i][2:].replace("-", "_")
        if bfeed.option_names().count(cli[i][2:]) == 0:
            raise SystemExit("unknown stream option %s" % cli[i])
        flag = i + 1 == len(cli) or cli[i + 1].startswith("--")
        out[name] = True if flag else cli[i + 1]
        i += 1 if flag else 2
    return out


def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def python_round(a, kw):
    """(samples/s, client CPU seconds per batch over the whole round: the
    interpreter's thread and libbfeed's reader thread)."""
    c0 = cpu(resource.RUSAGE_SELF)
    with bfeed.connect(a.connect) as c, c.stream(a.dataset, **kw) as s:
        for _ in range(a.warmup):
            next(s).torch(a.tensor)
        n = 0
        t0 = time.perf_counter()
        for _ in range(a.batches):
            x = next(s).torch(a.tensor)
            n += x.shape[0]
            del x
        rate = n / (time.perf_counter() - t0)
    return rate, (cpu(resource.RUSAGE_SELF) - c0) / (a.batches + a.warmup)


def c_round(a, cli):
    c0 = cpu(resource.RUSAGE_CHILDREN)
    r = subprocess.run([a.bfeed, "bench", "--connect", a.connect, "--dataset", a.dataset, "--batches",
                        str(a.batches), "--warmup", str(a.warmup), "--json"] + cli,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    rate = json.loads(r.stdout.decode().strip().splitlines()[-1])["samples_per_s"]
    return rate, (cpu(resource.RUSAGE_CHILDREN) - c0) / (a.batches + a.warmup)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bfeed", required=True, help="the bfeed command line (build/bin/bfeed)")
    ap.add_argument("--connect", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--tensor", default="image")
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("stream", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cli = [x for x in a.stream if x != "--"]
    kw = stream_kwargs(cli)
    py, c = [], []
    for r in range(a.rounds):
        if r % 2 == 0:  # who goes first alternates too: neither always meets a rested daemon
            py.append(python_round(a, kw))
            c.append(c_round(a, cli))
        else:
            c.append(c_round(a, cli))
            py.append(python_round(a, kw))
        print("round %d: python %.1f samples/s (%.1f us CPU/batch), bfeed bench %.1f samples/s (%.1f us CPU/batch)" % (
            r + 1, py[-1][0], py[-1][1] * 1e6, c[-1][0], c[-1][1] * 1e6), flush=True)
    mp, mc = statistics.median(x[0] for x in py), statistics.median(x[0] for x in c)
    cp, cc = statistics.median(x[1] for x in py), statistics.median(x[1] for x in c)
    print("median: python b.torch(%r) %.1f samples/s, bfeed bench %.1f samples/s, python/C = %.3f (%+.1f%%)" % (
        a.tensor, mp, mc, mp / mc, (mp / mc - 1) * 100))
    # On a shared machine wall-clock rates are noisy; the client's CPU per
    # batch is what the Python layer adds, whatever the daemon's speed.
    print("median client CPU per batch: python %.1f us, bfeed bench %.1f us, python - C = %+.1f us" % (
        cp * 1e6, cc * 1e6, (cp - cc) * 1e6))


if __name__ == "__main__":
    main()
