"""TFRecord and WebDataset tar datasets through the real daemon and `bfeed fetch`.

The same images (the fixture JPEGs, PNGs and a WebP Pillow makes from one,
and imagenet-100 when present) are served as an ImageFolder, as TFRecord shards written by an independent encoder
(Google's protobuf runtime from a .proto compiled by protoc here, CRC-32C
from crcmod: tests/daemon/shard_writer.py) and as tar shards written by
Python's tarfile. Every batch fetched from the shards must equal the
folder's byte for byte (image, label, index), in train and eval modes and
both layouts, including from shards that hold damage (a garbage Example,
a bad data CRC, a truncated last record, a tar sample without a label),
which is skipped when indexing and logged with file and byte offset.
Also: custom keys and label_offset from a [dataset] section with
cache_dir; float features served as bf16 equal to torch's rounding; index
caches reused on restart and rebuilt when a shard's mtime changes; a CRC
that goes bad after indexing caught when the record is read (skipped,
logged, replaced by the next sample); a GZIP shard refused with a clear
message while the other datasets serve; unknown keys refused.

usage: shards_fetch_oracle.py BFEEDD BFEED SHARD_WRITER_DIR FIXTURE_DIR [IMAGENET_DIR]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import gzip

import numpy as np
import torch

sys.path.insert(0, sys.argv[3])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import shard_writer as w  # noqa: E402
from oracle_util import Daemon, wait_for  # noqa: E402
from oracle_util import check, failures  # noqa: E402


def start(bfeedd, tmp, datasets, conf):
    return Daemon(bfeedd, tmp, datasets, extra=["--config", conf])


def stop(d):
    err = d.stop()
    check(err is None, err or "")


def fetch(bfeed, d, ds, out, opts):
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if "--batch-index" not in opts:
        opts = opts + ["--batch-index", "0"]
    r = subprocess.run([bfeed, "fetch", "--connect", d.addr, "--dataset", ds, "--out", out] + opts,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return None, r.stderr
    return {n: open(os.path.join(out, n + ".npy"), "rb").read() for n in ("image", "label", "index")
            if os.path.exists(os.path.join(out, n + ".npy"))}, r.stderr


def build_folder(root, fixtures, imagenet):
    """An ImageFolder; returns [(class, path)] in the folder's sample order."""
    fx = sorted(f for f in os.listdir(fixtures) if f.lower().endswith((".jpeg", ".jpg")))
    for i, f in enumerate(fx):  # two classes, each file four times under four names
        for copy in range(4):
            d = os.path.join(root, "fixture_%d" % (i % 2))
            os.makedirs(d, exist_ok=True)
            shutil.copy(os.path.join(fixtures, f), os.path.join(d, "%d_%s" % (copy, f)))
    # PNG (palette, RGBA, 16-bit gray) and WebP too: shards carry whatever
    # bytes the folder holds, and both go through the same decoder.
    from PIL import Image
    src = Image.open(os.path.join(fixtures, fx[0])).convert("RGB").resize((160, 120))
    d = os.path.join(root, "fixture_other")
    os.makedirs(d)
    src.convert("P").save(os.path.join(d, "a_palette.png"))
    src.convert("RGBA").save(os.path.join(d, "b_rgba.png"))
    Image.fromarray((np.asarray(src.convert("L"), dtype=np.uint16) * 257)).save(os.path.join(d, "c_gray16.png"))
    src.save(os.path.join(d, "d_lossy.webp"), quality=80)
    if imagenet and os.path.isdir(imagenet):
        for c in sorted(os.listdir(imagenet)):
            src = os.path.join(imagenet, c)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(root, c))
    samples = []
    for ci, c in enumerate(sorted(os.listdir(root))):
        for f in sorted(os.listdir(os.path.join(root, c))):
            samples.append((ci, os.path.join(root, c, f)))
    return samples


def runs(n, k):
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def write_tfrecords(dirname, samples, nshards, damage=False, keys=None, offset=1):
    os.makedirs(dirname, exist_ok=True)
    keys = keys or {}
    bad = []
    for s, (a, b) in enumerate(runs(len(samples), nshards)):
        recs = []
        for i in range(a, b):
            c, p = samples[i]
            recs.append(w.example(open(p, "rb").read(), c + offset, packed=i % 2 == 0, **keys))
            if damage and i % 5 == 2:
                recs.append(b"\x0a\xff\x01garbage")          # a malformed Example
            if damage and i % 7 == 3:
                recs.append(("crc", w.example(b"\xff\xd8", 0)))  # data CRC made bad below
        if damage and s == nshards - 1:
            recs.append(("cut", w.example(open(samples[0][1], "rb").read(), 1)))
        path = os.path.join(dirname, "train-%05d-of-%05d" % (s, nshards))
        plain = [r[1] if isinstance(r, tuple) else r for r in recs]
        offs = w.write_tfrecord(path, plain)
        data = bytearray(open(path, "rb").read())
        for r, o in zip(recs, offs):
            if isinstance(r, tuple) and r[0] == "crc":
                data[o + 12 + 3] ^= 0x10
                bad.append((path, o, "bad data CRC-32C"))
            elif isinstance(r, tuple) and r[0] == "cut":
                data = data[:o + 12 + 40]
                bad.append((path, o, "truncated record"))
            elif r.startswith(b"\x0a\xff\x01garbage"):
                bad.append((path, o, "not a tf.train.Example"))
        open(path, "wb").write(bytes(data))
    return bad


def write_tars(dirname, samples, nshards, damage=False):
    os.makedirs(dirname, exist_ok=True)
    bad = []
    for s, (a, b) in enumerate(runs(len(samples), nshards)):
        members = []
        for i in range(a, b):
            c, p = samples[i]
            ext = os.path.splitext(p)[1].lower()
            members += [("%06d%s" % (i, ext), open(p, "rb").read()), ("%06d.cls" % i, b"%d" % c)]
            if damage and i % 4 == 1:
                members.append(("%06dx%s" % (i, ext), open(p, "rb").read()))  # no label
        path = os.path.join(dirname, "shard-%03d.tar" % s)
        w.write_tar(path, members)
        if damage:
            bad += [(path, "sample '%06dx'" % i) for i in range(a, b) if i % 4 == 1]
    return bad


def bf16_bits(f32):
    return torch.from_numpy(np.asarray(f32, dtype=np.float32)).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def main():
    bfeedd, bfeed, _, fixtures = sys.argv[1:5]
    imagenet = sys.argv[5] if len(sys.argv) > 5 else None
    with tempfile.TemporaryDirectory(prefix="bfeed-shards-") as tmp:
        root = os.path.join(tmp, "folder")
        samples = build_folder(root, fixtures, imagenet)
        n = len(samples)
        print("%d samples in %d classes" % (n, samples[-1][0] + 1))
        write_tfrecords(os.path.join(tmp, "tf"), samples, 3)
        tf_bad = write_tfrecords(os.path.join(tmp, "tfbad"), samples, 2, damage=True)
        write_tfrecords(os.path.join(tmp, "tfcfg"), samples, 2, offset=0,
                        keys={"image_key": "jpeg", "label_key": "cls"})
        write_tars(os.path.join(tmp, "tar"), samples, 2)
        tar_bad = write_tars(os.path.join(tmp, "tarbad"), samples, 3, damage=True)
        rng = np.random.default_rng(5)
        feats = rng.standard_normal((n, 7)).astype(np.float32) * 1000
        os.makedirs(os.path.join(tmp, "feat"))
        w.write_tfrecord(os.path.join(tmp, "feat", "f-0"),
                         [w.example(None, c + 1, features=feats[i], packed=i % 2 == 1) for i, (c, _) in enumerate(samples)])
        for gz in ("gz", "gzc"):  # gz is fixed later in the test, gzc stays compressed
            os.makedirs(os.path.join(tmp, gz))
            with gzip.open(os.path.join(tmp, gz, "train-0.gz"), "wb") as f:
                f.write(w.frame(w.example(b"\xff\xd8", 1)))
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache)
        conf = os.path.join(tmp, "bfeedd.conf")
        with open(conf, "w") as f:
            f.write("[dataset tcfg]\nkind = tfrecord\npath = %s/tfcfg/train-*\nimage_key = jpeg\n"
                    "label_key = cls\nlabel_offset = 0\ncache_dir = %s\n" % (tmp, cache))
        datasets = ["f=" + root, "t=tfrecord:%s/tf/train-*" % tmp, "tbad=tfrecord:%s/tfbad/train-*,label_offset=-1" % tmp,
                    "w=tar:%s/tar/*.tar" % tmp, "wbad=tar:%s/tarbad/shard-*.tar,label_ext=cls" % tmp,
                    "feat=tfrecord:%s/feat/f-*,features_key=features" % tmp, "gz=tfrecord:%s/gz/*" % tmp]
        B = 4
        optsets = [["--mode", "train", "--seed", "7", "--batch", str(B), "--batch-index", "1"],
                   ["--mode", "train", "--seed", "9", "--batch", str(B), "--batch-index", "0", "--layout", "nhwc"],
                   ["--mode", "eval", "--batch", str(B), "--batch-index", "1", "--size", "96"],
                   # the whole epoch in one batch: every sample, PNG and WebP included
                   ["--mode", "train", "--seed", "3", "--batch", str(n), "--size", "64"]]

        def compare_all(d, names, tag):
            for k, opts in enumerate(optsets):
                ref, e = fetch(bfeed, d, "f", os.path.join(tmp, "o", tag, "f%d" % k), opts)
                if not check(ref is not None, "folder fetch: " + e):
                    continue
                if str(n) in opts:  # the whole epoch: nothing skipped, so every image decoded
                    idx = np.load(os.path.join(tmp, "o", tag, "f%d" % k, "index.npy"))
                    check(sorted(idx.tolist()) == list(range(n)), "%s: every sample decodes (PNG, WebP too)" % tag)
                for ds in names:
                    got, e = fetch(bfeed, d, ds, os.path.join(tmp, "o", tag, "%s%d" % (ds, k)), opts)
                    if check(got is not None, "%s: fetch %s failed: %s" % (tag, ds, e)):
                        for t in ("image", "label", "index"):
                            check(got[t] == ref[t], "%s: %s %s %s equals the folder's byte for byte" % (tag, ds, opts, t))

        d = start(bfeedd, tmp, datasets, conf)
        try:
            compare_all(d, ["t", "tbad", "tcfg", "w", "wbad"], "first")
            log = d.log()
            for path, off, why in tf_bad:
                check("%s: record at byte offset %d: %s" % (path, off, why) in log, "logged: %s @%d %s" % (path, off, why))
            for path, what in tar_bad:
                check("%s: %s" % (path, what) in log and "no .cls label member" in log, "logged: %s %s" % (path, what))
            check("dataset tbad: %d samples" % n in log and "%d record(s) skipped" % len(tf_bad) in log,
                  "tbad: %d samples, %d skipped, counted in the log" % (n, len(tf_bad)))
            r = subprocess.run([bfeed, "stats", "--connect", d.addr, "--json"], capture_output=True, text=True)
            st = json.loads(r.stdout)["datasets"] if r.returncode == 0 else {}
            check(st.get("tbad", {}).get("records_skipped") == len(tf_bad) and st["tbad"].get("indexing") == 0,
                  "bfeed stats counts tbad's %d skipped records: %s" % (len(tf_bad), st.get("tbad")))
            check(st.get("wbad", {}).get("records_skipped") == len(tar_bad), "bfeed stats counts wbad's skipped samples")
            # Features: bf16 of the float32 stored, in dataset order.
            os.makedirs(os.path.join(tmp, "o", "feat"), exist_ok=True)
            r = subprocess.run([bfeed, "fetch", "--connect", d.addr, "--dataset", "feat", "--shuffle", "off",
                                "--batch", "5", "--batch-index", "1", "--out", os.path.join(tmp, "o", "feat", "x")],
                               capture_output=True, text=True)
            if check(r.returncode == 0, "features fetch: " + r.stderr):
                got = np.load(os.path.join(tmp, "o", "feat", "x", "features.npy"))
                check(np.array_equal(got.view(np.uint16), bf16_bits(feats[5:10])), "features are torch's bf16 of the stored floats")
                lab = np.load(os.path.join(tmp, "o", "feat", "x", "label.npy"))
                check(lab.tolist() == [samples[i][0] for i in range(5, 10)], "features dataset labels")
            # GZIP: refused clearly; the others keep serving.
            got, e = fetch(bfeed, d, "gz", os.path.join(tmp, "o", "gz"), ["--batch", "1"])
            check(got is None and "GZIP" in e and "train-0.gz" in e, "gz dataset refused naming the file: " + e.strip())
            got, e = fetch(bfeed, d, "t", os.path.join(tmp, "o", "after-gz"), ["--batch", "2"])
            check(got is not None, "t still serves next to the failed gz dataset")
            # The shard fixed, SIGHUP: the failed dataset is indexed again and serves.
            os.unlink(os.path.join(tmp, "gz", "train-0.gz"))
            shutil.copy(os.path.join(tmp, "tf", "train-00000-of-00003"), os.path.join(tmp, "gz", "train-0"))
            d.proc.send_signal(signal.SIGHUP)
            got = wait_for(lambda: fetch(bfeed, d, "gz", os.path.join(tmp, "o", "gz-fixed"), ["--batch", "2"])[0],
                           20, "the fixed gz dataset to serve after SIGHUP")
            check(got["label"] and got["index"], "after SIGHUP the fixed gz dataset serves")
        finally:
            stop(d)
        check(os.path.exists(os.path.join(tmp, "tf", ".train-00000-of-00003.bfidx")), "index cache beside the shard")
        check(any(f.startswith("train-00000-of-00002.") and f.endswith(".bfidx") for f in os.listdir(cache)),
              "tcfg's index cache in its cache_dir")
        check(not any(f.endswith(".bfidx") for f in os.listdir(os.path.join(tmp, "tfcfg"))), "none beside tcfg's shards")

        # Restart: every index reused. Then one shard touched: rebuilt.
        d = start(bfeedd, tmp, datasets, conf)
        try:
            compare_all(d, ["t", "w"], "cached")
            log = d.log()
            check("dataset t: %d samples in" % n in log and "(3 index(es) reused from cache" in log, "t reused 3 caches")
            check("dataset w: %d samples in" % n in log and "(2 index(es) reused from cache" in log, "w reused 2 caches")
        finally:
            stop(d)
        shard = os.path.join(tmp, "tf", "train-00001-of-00003")
        st = os.stat(shard)
        os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
        d = start(bfeedd, tmp, datasets, conf)
        try:
            compare_all(d, ["t"], "rebuilt")
            log = d.log()
            check("%s: rebuilding the index: " % shard in log and "size or mtime changed" in log, "touched shard re-indexed")
            check("(2 index(es) reused from cache" in log, "the other two reused")
        finally:
            stop(d)

        # A record damaged after indexing, its mtime put back: the cache is
        # reused, and the read-time CRC check catches it.
        shard = os.path.join(tmp, "tf", "train-00000-of-00003")
        st = os.stat(shard)
        offs, at, data = [], 0, bytearray(open(shard, "rb").read())
        while at < len(data):
            offs.append(at)
            at += 12 + int.from_bytes(data[at:at + 8], "little") + 4
        victim = 1
        data[offs[victim] + 12 + 100] ^= 0x01
        open(shard, "wb").write(bytes(data))
        os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
        d = start(bfeedd, tmp, datasets, conf)
        try:
            out = os.path.join(tmp, "o", "crc")
            got, e = fetch(bfeed, d, "t", out, ["--shuffle", "off", "--mode", "eval", "--batch", "4", "--size", "64"])
            if check(got is not None, "fetch after damage: " + e):
                idx = np.load(os.path.join(out, "index.npy")).tolist()
                check(idx == [0, 2, 2, 3], "the damaged sample 1 replaced by the next, as a bad file is (got %s)" % idx)
            check("skipping %s: record at byte offset %d: bad data CRC-32C" % (shard, offs[victim]) in d.log(),
                  "read-time CRC failure logged with file and offset")
        finally:
            stop(d)

        # Configuration errors, named; --check-config waits for the index.
        for spec, want, what in [("tfrecord:%s/tf/*,bogus=1", "unknown key 'bogus'", "unknown key refused"),
                                 ("tfrecord:%s/gzc/*", "GZIP", "--check-config indexes and reports GZIP"),
                                 ("tfrecord:%s/tf/*,label_offset=-2", "outside 0..", "a negative label refused"),
                                 ("tar:%s/nothing-*.tar", "matches no file", "an empty glob refused")]:
            r = subprocess.run([bfeedd, "--check-config", conf, "--dataset", "x=" + spec % tmp],
                               capture_output=True, text=True)
            check(r.returncode == 2 and want in r.stderr, what + ": " + r.stderr.strip())
    print("%d failure(s)" % len(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
