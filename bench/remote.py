#!/usr/bin/python3
"""bench/remote.py -- samples/s of the same tar shards from local disk, from
an S3 server and from nginx, cold and warm, in alternating rounds.
Run by hand (never by the tests), alone on the machine.

    /usr/bin/python3 bench/remote.py IMAGE_FOLDER [ROUNDS] [COPIES] [LATENCY_MS]

The shards: every image of IMAGE_FOLDER (an ImageFolder tree, e.g.
../shared/data/imagenet-100) COPIES times (default 9), in 8 tar shards.
The servers, on loopback (tests/integration/remote/): s3rver behind the
SigV4-verifying proxy, nginx, and in front of each a FaultProxy that adds
LATENCY_MS (default 20) to every response, as a far region would. The
proxies and s3rver run on the same two cores as the daemon: what they
cost is printed (their CPU seconds per epoch).

Each contender is a fresh daemon (2 workers, train, 224, batch 64) whose
shard indexes are already in its dataset's cache_dir (a restart, or a
second host with the indexes) and whose block cache is empty: epoch 1 is
cold (every block fetched through the latency), epoch 2 warm (from the
memory cache); local disk is measured the same way (page cache warm). In
each round the contenders take turns; the medians and ratios to local
disk are printed, with the cache's hit rate over the two epochs.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "remote"))
from remote_env import FaultProxy, Nginx, s3_stack, upload  # noqa: E402

BIN = os.environ.get("BFEED_BIN", os.path.join(ROOT, "build", "bin"))
AK, SK = "AKIDBENCH", "bench-secret"
NSHARDS = 8


def write_shards(folder, copies, out):
    classes = sorted(c for c in os.listdir(folder) if os.path.isdir(os.path.join(folder, c)))
    samples = [(ci, os.path.join(folder, c, f)) for ci, c in enumerate(classes)
               for f in sorted(os.listdir(os.path.join(folder, c)))]
    samples = samples * copies
    os.makedirs(out)
    for s in range(NSHARDS):
        with tarfile.open(os.path.join(out, "shard-%03d.tar" % s), "w") as t:
            for i in range(s, len(samples), NSHARDS):
                c, p = samples[i]
                t.add(p, "%06d.jpg" % i)
                info = tarfile.TarInfo("%06d.cls" % i)
                data = b"%d" % c
                info.size = len(data)
                import io
                t.addfile(info, io.BytesIO(data))
    return len(samples)


def load():
    top = subprocess.run(["top", "-b", "-n", "1", "-o", "%CPU"], capture_output=True, text=True).stdout
    return open("/proc/loadavg").read().strip(), "\n".join(top.splitlines()[6:12])


class Run:
    """A fresh daemon serving one dataset; two epochs measured."""

    def __init__(self, tmp, name, spec, env, idx):
        self.dir = os.path.join(tmp, "run-" + name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        conf = os.path.join(self.dir, "bfeedd.conf")
        kind, path = spec.split(":", 1)
        with open(conf, "w") as f:
            f.write("[bfeedd]\ncache_max_bytes = 1G\n[dataset bench]\nkind = %s\npath = %s\ncache_dir = %s\n"
                    % (kind, path, idx))
        self.addr = "unix:" + os.path.join(self.dir, "d.sock")
        self.proc = subprocess.Popen([os.path.join(BIN, "bfeedd"), "--listen", self.addr, "--workers", "2",
                                      "--config", conf], env=env, stdout=open(os.path.join(self.dir, "log"), "w"),
                                     stderr=subprocess.STDOUT)

    def wait_ready(self):
        for _ in range(600):
            log = open(os.path.join(self.dir, "log")).read()
            if "samples in" in log:
                return
            if "left out" in log or self.proc.poll() is not None:
                raise RuntimeError(log)
            time.sleep(0.1)
        raise RuntimeError("not indexed in 60 s")

    def epoch(self, e):
        r = subprocess.run([os.path.join(BIN, "bfeed"), "bench", "--connect", self.addr, "--dataset", "bench",
                            "--mode", "train", "--size", "224", "--epoch", str(e), "--epochs", "1", "--json"],
                           capture_output=True, text=True, timeout=900)
        if r.returncode:
            raise RuntimeError(r.stderr)
        return json.loads(r.stdout)["samples_per_s"]

    def remote(self):
        r = subprocess.run([os.path.join(BIN, "bfeed"), "stats", "--connect", self.addr, "--json"],
                           capture_output=True, text=True)
        return json.loads(r.stdout).get("remote", {})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def cpu_s(pids):
    total = 0.0
    for pid in pids:
        try:
            f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def main():
    folder = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    latency = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    tmp = tempfile.mkdtemp(prefix="bfeed-remote-bench-")
    try:
        shards = os.path.join(tmp, "shards")
        n = write_shards(folder, copies, shards)
        size = sum(os.path.getsize(os.path.join(shards, f)) for f in os.listdir(shards))
        print("%d samples in %d tar shards, %.1f MB; latency added %d ms per response" % (n, NSHARDS, size / 1e6,
                                                                                        latency))
        avg, top = load()
        print("load average: %s\n%s" % (avg, top))
        with s3_stack(os.path.join(tmp, "s3"), AK, SK) as (s3, sig, faults), Nginx(shards) as web, \
                FaultProxy(web.base_url) as web_slow:
            upload(sig.endpoint, "bench", {f: os.path.join(shards, f) for f in os.listdir(shards)}, AK, SK)
            env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_ENDPOINT_URL=faults.endpoint)
            faults.latency_ms = web_slow.latency_ms = latency
            contenders = {
                "local": "tar:%s/shard-*.tar" % shards,
                "s3": "tar:s3://bench/shard-*.tar",
                "nginx": "tar:%s/shard-{000..%03d}.tar" % (web_slow.endpoint, NSHARDS - 1),
            }
            helpers = [s3.proc.pid, os.getpid(), web.proc.pid]
            results = {k: {"cold": [], "warm": [], "hit": [], "helper_cpu": []} for k in contenders}
            for name, spec in contenders.items():  # the indexes, once, outside the rounds
                idx = os.path.join(tmp, "idx-" + name)
                os.makedirs(idx)
                r = Run(tmp, name + "-index", spec, env, idx)
                r.wait_ready()
                r.stop()
            for rnd in range(rounds):
                order = list(contenders)[rnd % 3:] + list(contenders)[:rnd % 3]
                for name in order:
                    r = Run(tmp, name, contenders[name], env, os.path.join(tmp, "idx-" + name))
                    try:
                        r.wait_ready()
                        c0 = cpu_s(helpers)
                        cold = r.epoch(0)
                        c1 = cpu_s(helpers)
                        s1 = r.remote()
                        warm = r.epoch(1)
                        s2 = r.remote()
                    finally:
                        r.stop()
                    # A block read is a hit when this epoch fetched nothing
                    # for it: reads less the blocks fetched (by the reader
                    # or ahead of it), over both epochs.
                    def reads(st):
                        return st.get("cache_hits", 0) + st.get("cache_misses", 0) + st.get("cache_disk_hits", 0)

                    def fetched(st):
                        return st.get("cache_misses", 0) + st.get("prefetched", 0)
                    res = results[name]
                    res["cold"].append(cold)
                    res["warm"].append(warm)
                    res["hit"].append(1 - fetched(s2) / reads(s2) if reads(s2) else float("nan"))
                    res["helper_cpu"].append(c1 - c0)
                    print("round %d %-6s cold %7.1f/s  warm %7.1f/s  block reads %s, fetched %s (epoch 1) + %s "
                          "(epoch 2): hit rate over 2 epochs %.3f; servers' CPU in the cold epoch %.1f s" %
                          (rnd + 1, name, cold, warm, reads(s2) if s2 else "-", fetched(s1) if s1 else "-",
                           fetched(s2) - fetched(s1) if s2 else "-", res["hit"][-1], c1 - c0), flush=True)
            avg, top = load()
            print("load average after: %s" % avg)
            base = {k: statistics.median(results["local"][k]) for k in ("cold", "warm")}
            print("\nmedians (ratio to local disk, same epoch):")
            for name, res in results.items():
                cold, warm = statistics.median(res["cold"]), statistics.median(res["warm"])
                print("  %-6s epoch 1 (cold) %7.1f/s %.3fx   epoch 2 (warm) %7.1f/s %.3fx   hit rate %.3f" %
                      (name, cold, cold / base["cold"], warm, warm / base["warm"], statistics.median(res["hit"])))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
