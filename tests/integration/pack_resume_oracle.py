"""`bfeed pack` interrupted, rerun, refused, and its packs damaged.

Resume: the writer dies after 2 shards (BFEED_PACK_EXIT_AFTER, exiting as
a kill -9 would, without cleanup) and once by a real SIGKILL mid-run; a
rerun finishes, keeping the complete shards, and every file equals an
uninterrupted pack's byte for byte -- with --jobs 1, 2 and 3, in raw and
jpeg modes (the writer is deterministic). A rerun with other options is
refused without --force, and replaces the pack with it.

Damage, served by bfeedd: a flipped byte in a record is a checksum error
naming shard and record, that sample skipped and the rest of the epoch
served; a truncated shard, a shard of another pack and bad metadata
refuse the dataset at load, saying why, while the others serve.

usage: pack_resume_oracle.py BFEEDD BFEED BFEED_PACK FIXTURE_DIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pack_reader as pr  # noqa: E402
from oracle_util import Daemon, check  # noqa: E402
from oracle_util import main as oracle_main  # noqa: E402
from PIL import Image  # noqa: E402

BFEEDD, BFEED, PACK, FIXTURES = sys.argv[1:5]
TMP = tempfile.mkdtemp(prefix="bfeed-pack-resume-")  # removed by oracle_main


def build_folder(root, copies):
    fx = sorted(f for f in os.listdir(FIXTURES) if f.lower().endswith((".jpeg", ".jpg")))
    for i, f in enumerate(fx):
        img = Image.open(os.path.join(FIXTURES, f)).convert("RGB")
        for c in range(copies):  # distinct images: a shard mixed up with another shows
            d = os.path.join(root, "c%d" % (i % 3))
            os.makedirs(d, exist_ok=True)
            img.resize((120 + c, 90 + 2 * c)).save(os.path.join(d, "%03d_%s.png" % (c, f)))


def run(*args, env=None, expect=0):
    r = subprocess.run([PACK] + list(args), capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    check(r.returncode == expect, "bfeed-pack %s exits %d (%d): %s" % (" ".join(a.split("/")[-1] for a in args),
                                                                       expect, r.returncode, r.stderr[-300:]))
    return r


def files(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


def fetch(d, ds, out, opts):
    r = subprocess.run([BFEED, "fetch", "--connect", d.addr, "--dataset", ds, "--out", out, "--batch-index", "0"] + opts,
                       capture_output=True, text=True, timeout=120)
    return r.returncode == 0, r.stderr


def resume_all(tmp):
    root = os.path.join(tmp, "folder")
    build_folder(root, 6)
    common = ["--shard-samples", "3", "--max-side", "100"]
    for mode in ("raw", "jpeg"):
        ref = os.path.join(tmp, "ref_" + mode)
        run(root, ref, "--images", mode, "--jobs", "1", *common)
        want = files(ref)
        check(len(want) > 5 and "bfeed-pack.meta" in want, "%s: %d files in the uninterrupted pack" % (mode, len(want)))
        for jobs in ("2", "3"):
            out = os.path.join(tmp, "j%s_%s" % (jobs, mode))
            run(root, out, "--images", mode, "--jobs", jobs, *common)
            check(files(out) == want, "%s --jobs %s: every file equals --jobs 1's" % (mode, jobs))
        out = os.path.join(tmp, "cut_" + mode)
        run(root, out, "--images", mode, "--jobs", "1", *common, env={"BFEED_PACK_EXIT_AFTER": "2"}, expect=137)
        left = files(out)
        check("bfeed-pack.meta" not in left and sum(f.endswith(".bfpack") for f in left) == 2,
              "%s: killed after 2 shards: no metadata, 2 complete shards: %s" % (mode, sorted(left)))
        r = run(root, out, "--images", mode, "--jobs", "2", *common)
        check("(2 shard(s) kept" in r.stdout, "%s: the rerun keeps the 2 complete shards: %s" % (mode, r.stdout.strip()))
        check(files(out) == want, "%s: resumed pack equals the uninterrupted one byte for byte" % mode)
    # A real SIGKILL mid-run (a big enough job), then a rerun.
    big = os.path.join(tmp, "big")
    build_folder(big, 40)
    out = os.path.join(tmp, "killed")
    p = subprocess.Popen([PACK, big, out, "--images", "raw", "--max-side", "0", "--jobs", "1",
                          "--shard-samples", "4"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.time()

    def shards_there():
        return os.path.isdir(out) and any(f.endswith(".bfpack") for f in os.listdir(out))
    while time.time() - t0 < 60 and not shards_there():
        time.sleep(0.005)
    running = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    check(running and not os.path.exists(os.path.join(out, "bfeed-pack.meta")),
          "SIGKILL mid-run (%s shards written): no metadata yet" % len(os.listdir(out)))
    run(big, out, "--images", "raw", "--max-side", "0", "--jobs", "2", "--shard-samples", "4")
    run(big, os.path.join(tmp, "big_ref"), "--images", "raw", "--max-side", "0", "--jobs", "2", "--shard-samples", "4")
    check(files(out) == files(os.path.join(tmp, "big_ref")), "after SIGKILL and a rerun: equal to an uninterrupted pack")
    # Other options on an existing pack: refused, then --force.
    r = run(root, os.path.join(tmp, "ref_raw"), "--images", "raw", "--max-side", "50", "--shard-samples", "3",
            expect=1)
    check("--force" in r.stderr and files(os.path.join(tmp, "ref_raw")) == files(os.path.join(tmp, "j2_raw")),
          "other options refused, the pack untouched: " + r.stderr.strip())
    run(root, os.path.join(tmp, "ref_raw"), "--images", "raw", "--max-side", "50", "--shard-samples", "5", "--force")
    meta, _ = pr.read_pack(os.path.join(tmp, "ref_raw"))
    check(meta["max_side"] == 50 and meta["shard_samples"] == 5 and
          sorted(f for f in os.listdir(os.path.join(tmp, "ref_raw")) if f.endswith(".bfpack")) ==
          ["shard-%06d.bfpack" % k for k in range(meta["shards"])], "--force replaced the pack, no stale shard left")

    # Damage.
    good = os.path.join(tmp, "j2_raw")
    meta, shards = pr.read_pack(good)
    n = meta["samples"]
    flip, trunc, other, badmeta, classes, shardn = (os.path.join(tmp, x) for x in ("flip", "trunc", "other", "badmeta",
                                                                                   "classes", "shardn"))
    for x in (flip, trunc, other, badmeta, classes, shardn):
        shutil.copytree(good, x)
    rec = shards[1]["records"][2]
    path = os.path.join(flip, "shard-000001.bfpack")
    data = bytearray(open(path, "rb").read())
    data[rec["off"] + 40] ^= 0x01
    open(path, "wb").write(bytes(data))
    path = os.path.join(trunc, "shard-000002.bfpack")
    open(path, "r+b").truncate(os.path.getsize(path) - 10)
    shutil.copy(os.path.join(tmp, "ref_raw", "shard-000000.bfpack"), os.path.join(other, "shard-000000.bfpack"))
    mp = os.path.join(badmeta, "bfeed-pack.meta")
    text = open(mp).read()
    open(mp, "w").write(text.replace("samples %d\n" % n, "samples %d\n" % (n + 1), 1))
    # A count the file cannot hold (issue 31: "classes 1000000000" took 6.5 GB
    # before the daemon listened): refused before anything is allocated.
    mp = os.path.join(classes, "bfeed-pack.meta")
    text = open(mp).read()
    open(mp, "w").write(re.sub(r"\nclasses \d+\n", "\nclasses 1000000000\n", text, count=1))
    msize = os.path.getsize(mp)
    # So can a shard count that agrees with forged sample counts (2^32 - 1
    # shards of 1): the table grows with the shards found, and the first
    # that does not fit is named (before: a calloc of ~275 GB, "out of memory").
    mp = os.path.join(shardn, "bfeed-pack.meta")
    text = open(mp).read()
    for key, v in (("source_samples", 2**32 - 1), ("shard_samples", 1), ("shards", 2**32 - 1)):
        text = re.sub(r"\n%s \d+\n" % key, "\n%s %d\n" % (key, v), text, count=1)
    open(mp, "w").write(text)
    d = Daemon(BFEEDD, tmp, ["good=pack:" + good, "flip=pack:" + flip, "trunc=pack:" + trunc,
                             "other=pack:" + other, "badmeta=pack:" + badmeta, "classes=pack:" + classes,
                             "shardn=pack:" + shardn])
    try:
        ok, e = fetch(d, "flip", os.path.join(tmp, "o", "flip"), ["--batch", str(n), "--shuffle", "off", "--size", "32"])
        idx = np.load(os.path.join(tmp, "o", "flip", "index.npy")).tolist() if ok else []
        bad = 3 + 2
        check(ok and bad not in idx and len(idx) == n and sorted(set(idx)) == [i for i in range(n) if i != bad],
              "flipped byte: sample %d skipped, the rest of the epoch served (%s)" % (bad, e.strip()))
        check("shard-000001.bfpack: record 2: bad CRC-32C" in d.log(), "checksum error names shard and record")
        ok, e = fetch(d, "good", os.path.join(tmp, "o", "good"), ["--batch", str(n), "--shuffle", "off", "--size", "32"])
        check(ok and np.load(os.path.join(tmp, "o", "good", "index.npy")).tolist() == list(range(n)),
              "the undamaged pack serves every sample")
        for ds, why in (("trunc", "shard-000002.bfpack: no footer at the end (truncated"), ("other", "shard-000000.bfpack: shard 0 of key"),
                        ("badmeta", "bfeed-pack.meta: %d shards of 3 samples for %d samples (%d packed)" % (meta["shards"], n, n + 1)),
                        ("classes", "classes 1000000000: more than the %d-byte file can name" % msize),
                        ("shardn", "No such file or directory (the pack lists 4294967295 shards)")):
            ok, e = fetch(d, ds, os.path.join(tmp, "o", ds), ["--batch", "2"])
            check(not ok and why in e, "%s refused at load: %s" % (ds, e.strip()))
    finally:
        err = d.stop()
        check(err is None, err or "daemon stopped")


if __name__ == "__main__":
    oracle_main({"all": lambda: resume_all(TMP)}, "all", TMP)  # exits 1 on a failed check
