#!/usr/bin/env python3
"""Samples/s of a Python loop taking b.torch(TENSOR) beside `bfeed bench` on
the same stream: same dataset, options, seed and batches, in alternating
rounds (Python, C, Python, C, ...), medians of each and their ratio. A
benchmark that prints, never a test that asserts.

    PYTHONPATH=build/python python3 client/python/bench/bench_python.py \\
        --bfeed build/bin/bfeed --connect unix:/tmp/bfeed.sock --dataset demo \\
        --batches 300 --rounds 5 -- --batch 64 --size 224

Options after `--` are stream options in the command line's spelling, given
to both (`--keep-partial` for a flag); the tensor taken is --tensor (image).
"""
import argparse
import json
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


def python_round(a, kw):
    with bfeed.connect(a.connect) as c, c.stream(a.dataset, **kw) as s:
        for _ in range(a.warmup):
            next(s).torch(a.tensor)
        n = 0
        t0 = time.perf_counter()
        for _ in range(a.batches):
            x = next(s).torch(a.tensor)
            n += x.shape[0]
            del x
        return n / (time.perf_counter() - t0)


def c_round(a, cli):
    r = subprocess.run([a.bfeed, "bench", "--connect", a.connect, "--dataset", a.dataset, "--batches",
                        str(a.batches), "--warmup", str(a.warmup), "--json"] + cli,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return json.loads(r.stdout.decode().strip().splitlines()[-1])["samples_per_s"]


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
        py.append(python_round(a, kw))
        c.append(c_round(a, cli))
        print("round %d: python %.1f samples/s, bfeed bench %.1f samples/s" % (r + 1, py[-1], c[-1]), flush=True)
    mp, mc = statistics.median(py), statistics.median(c)
    print("median: python b.torch(%r) %.1f samples/s, bfeed bench %.1f samples/s, python/C = %.3f (%+.1f%%)" % (
        a.tensor, mp, mc, mp / mc, (mp / mc - 1) * 100))


if __name__ == "__main__":
    main()
