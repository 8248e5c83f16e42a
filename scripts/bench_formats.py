"""Samples/s of the same images served from a folder, TFRecord shards and tar
shards, and the time to index a shard. Run by scripts/bench_formats.sh.

The images of DATA (an ImageFolder) are repeated COPIES times (folder:
symlinks under new names; shards: the bytes) so that an epoch is long
enough to time, then written as 8 TFRecord shards (tests/daemon's
shard_writer: protobuf + crcmod) and 8 tar shards (tarfile), all in the
folder's sample order. One bfeedd serves the three; each round runs `bfeed
bench` on each dataset in a rotated order (E+1 epochs, the first as
warm-up), and the medians over rounds are printed with their ratios. Then
the index of one TPU-ImageNet-sized shard (1251 records) and one tar shard
of as many samples is timed: built from nothing (cache deleted) and reused
from the cache, each the median of ROUNDS daemon starts.

usage: bench_formats.py BFEEDD BFEED SHARD_BENCH DATA COPIES EPOCHS ROUNDS WORKERS
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "daemon"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import shard_writer as w  # noqa: E402
from oracle_util import Daemon, wait_for  # noqa: E402

BATCH = 64


def stop(d):
    err = d.stop()
    if err:
        sys.exit(err)


def index_seconds(bfeedd, tmp, kind, path, rounds, cached):
    """Median seconds the daemon reports for indexing the shard at path."""
    times = []
    for r in range(rounds):
        if not cached:
            for f in os.listdir(os.path.dirname(path)):
                if f.endswith(".bfidx"):
                    os.unlink(os.path.join(os.path.dirname(path), f))
        d = Daemon(bfeedd, tmp, ["big=%s:%s" % (kind, path)], workers=1)
        m = wait_for(lambda: re.search(r"indexed in ([0-9.]+) ms", d.log()), 120, "the shard to be indexed")
        stop(d)
        times.append(float(m.group(1)) / 1e3)
    return statistics.median(times)


def main():
    bfeedd, bfeed, shard_bench, data = sys.argv[1:5]
    copies, epochs, rounds, workers = (int(v) for v in sys.argv[5:9])
    tmp = tempfile.mkdtemp(prefix="bfeed-bench-formats-")
    try:
        samples = []
        for c, cls in enumerate(sorted(os.listdir(data))):
            src = os.path.join(data, cls)
            if not os.path.isdir(src):
                continue
            os.makedirs(os.path.join(tmp, "folder", cls))
            for k in range(copies):
                for f in sorted(os.listdir(src)):
                    if f.lower().endswith((".jpg", ".jpeg")):
                        dst = os.path.join(tmp, "folder", cls, "%03d_%s" % (k, f))
                        os.symlink(os.path.abspath(os.path.join(src, f)), dst)
        for c, cls in enumerate(sorted(os.listdir(os.path.join(tmp, "folder")))):
            for f in sorted(os.listdir(os.path.join(tmp, "folder", cls))):
                samples.append((c, os.path.join(tmp, "folder", cls, f)))
        n = len(samples)
        os.makedirs(os.path.join(tmp, "tf"))
        os.makedirs(os.path.join(tmp, "tar"))
        for s in range(8):
            part = samples[s * n // 8:(s + 1) * n // 8]
            w.write_tfrecord(os.path.join(tmp, "tf", "train-%05d-of-00008" % s),
                             [w.example(open(p, "rb").read(), c + 1) for c, p in part])
            members = []
            for i, (c, p) in enumerate(part):
                members += [("%06d.jpg" % i, open(p, "rb").read()), ("%06d.cls" % i, b"%d" % c)]
            w.write_tar(os.path.join(tmp, "tar", "train-%05d.tar" % s), members)
        mb = sum(os.path.getsize(p) for _, p in samples) / 1e6
        print("%d samples (%.1f MB of JPEG) from %s x %d; %d workers, batch %d, train 224, %d epochs + 1 warm-up, %d rounds"
              % (n, mb, data, copies, workers, BATCH, epochs, rounds))
        d = Daemon(bfeedd, tmp, ["folder=" + os.path.join(tmp, "folder"), "tfrecord=tfrecord:%s/tf/train-*" % tmp,
                                 "tar=tar:%s/tar/train-*" % tmp], workers=workers)
        order = ["folder", "tfrecord", "tar"]
        res = {k: [] for k in order}
        busy = {k: [] for k in order}  # worker microseconds per sample, less sensitive to other load
        cpu = {k: [] for k in order}   # the daemon's CPU microseconds per sample: the least sensitive

        def cpu_s():
            f = open("/proc/%d/stat" % d.proc.pid).read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

        def counters(ds):
            out = subprocess.run([bfeed, "stats", "--connect", d.addr, "--json"], capture_output=True,
                                 text=True, check=True).stdout
            row = json.loads(out)["datasets"].get(ds, {})
            return row.get("samples", 0), row.get("worker_busy_us", 0)
        try:
            for r in range(rounds):
                for ds in order[r % 3:] + order[:r % 3]:
                    s0, b0 = counters(ds)
                    c0 = cpu_s()
                    out = subprocess.run([bfeed, "bench", "--connect", d.addr, "--dataset", ds, "--mode", "train",
                                          "--size", "224", "--batch", str(BATCH), "--epochs", str(epochs + 1),
                                          "--warmup", str(n // BATCH), "--seed", str(r), "--json"],
                                         capture_output=True, text=True, check=True).stdout
                    res[ds].append(json.loads(out.strip().splitlines()[-1])["samples_per_s"])
                    s1, b1 = counters(ds)
                    busy[ds].append((b1 - b0) / max(1, s1 - s0))
                    cpu[ds].append((cpu_s() - c0) * 1e6 / max(1, s1 - s0))
        finally:
            stop(d)
        base = statistics.median(res["folder"])
        for ds in order:
            m = statistics.median(res[ds])
            print("%-9s samples/s: %s  median %.1f  (%.3f of folder)" % (ds, ", ".join("%.1f" % v for v in res[ds]), m, m / base))
        for name, table in [("worker us/sample", busy), ("daemon CPU us/sample", cpu)]:
            b = statistics.median(table["folder"])
            for ds in order:
                m = statistics.median(table[ds])
                print("%-9s %s: %s  median %.0f  (%.3f of folder)" % (ds, name, ", ".join("%.0f" % v for v in table[ds]),
                                                                      m, m / b))


        # Index timing on one ImageNet-sized shard of each format.
        os.makedirs(os.path.join(tmp, "big"))
        recs = [samples[i % n] for i in range(1251)]
        big_tf = os.path.join(tmp, "big", "train-00000-of-01024")
        w.write_tfrecord(big_tf, [w.example(open(p, "rb").read(), c + 1) for c, p in recs])
        big_tar = os.path.join(tmp, "big", "shard-000000.tar")
        members = []
        for i, (c, p) in enumerate(recs):
            members += [("%06d.jpg" % i, open(p, "rb").read()), ("%06d.cls" % i, b"%d" % c)]
        w.write_tar(big_tar, members)
        for kind, path in [("tfrecord", big_tf), ("tar", big_tar)]:
            cold = index_seconds(bfeedd, tmp, kind, path, rounds, cached=False)
            warm = index_seconds(bfeedd, tmp, kind, path, rounds, cached=True)
            size = os.path.getsize(path) / 1e6
            print("index one %s shard of 1251 samples (%.0f MB, page cache warm): built %.1f ms (%.0f MB/s), "
                  "from its cache %.2f ms" % (kind, size, cold * 1e3, size / cold, warm * 1e3))
        r = subprocess.run([shard_bench, big_tf, "3"] + [p for _, p in recs], capture_output=True, text=True)
        print(r.stdout + r.stderr, end="")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
