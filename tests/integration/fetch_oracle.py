"""Oracle for `bfeed fetch`: the whole path (bfeedd, the wire, libbfeed, the
.npy writer) against Pillow doing torchvision 0.14's eval transform.

A temporary ImageFolder holds the fixture JPEGs, one class folder per file
(so sample i has label i). bfeedd serves it; `bfeed fetch --mode eval
--normalize none --shuffle off --keep-partial` writes batches 0 and 1 (the
second one short) as .npy files, and each image is compared with

    Image.open(f).convert("RGB")          # ImageFolder's loader, no draft
    .resize((w', h'), Image.BILINEAR)     # shorter side round(S*256/224),
                                          # longer side int(r*long/short)
    then a centre crop of S x S at top = int(round((H - S) / 2.0))

as torchvision's Resize + CenterCrop do. Every pixel must be exact; labels and indices too;
meta.json must describe the files; the NHWC fetch must equal the NCHW one
transposed. On a large JPEG the default must still be exact and
--eval-decode fast must not (it is Image.draft's pixels). Pillow and numpy are required: their absence is a failure.

usage: fetch_oracle.py BFEEDD BFEED FIXTURE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import Daemon, pillow_eval  # noqa: E402

SIZE = 224
BATCH = 3
STOP_TIMEOUT = 5.0


def reference(path, size):
    """torchvision Resize(round(size*256/224)) + CenterCrop(size) on
    ImageFolder's decode (oracle_util.pillow_eval), as a uint8 array [3,
    size, size]."""
    return pillow_eval(path, size).transpose(2, 0, 1)


def bf16_to_f32(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def fetch(bfeed, addr, out, index, layout, dataset="fx", extra=()):
    cmd = [bfeed, "fetch", "--connect", addr, "--dataset", dataset, "--mode", "eval", "--normalize", "none",
           "--shuffle", "off", "--size", str(SIZE), "--batch", str(BATCH), "--keep-partial",
           "--layout", layout, "--batch-index", str(index), "--out", out] + list(extra)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode()))
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    arrays = {t["name"]: np.load(os.path.join(out, t["file"])) for t in meta["tensors"]}
    return meta, arrays


def finish(name, what, failures):
    """Print the failures and a summary line; the exit status."""
    for f in failures:
        print("FAIL: " + f)
    print("%s: %s, %s" % (name, what, "FAILED" if failures else "ok"))
    return 1 if failures else 0


def check_meta(meta, arrays, index, layout, count, fail):
    want = {"dataset": "fx", "epoch": 0, "batch_index": index, "mode": "eval", "size": SIZE,
            "layout": layout.upper(), "normalize": "none", "seed": 0, "shard": [0, 1]}
    for k, v in want.items():
        if meta.get(k) != v:
            fail("batch %d %s: meta.json %s is %r, expected %r" % (index, layout, k, meta.get(k), v))
    image_shape = [count, 3, SIZE, SIZE] if layout == "nchw" else [count, SIZE, SIZE, 3]
    tensors = [("image", "bfloat16", "<u2", image_shape), ("label", "i32", "<i4", [count]),
               ("index", "i64", "<i8", [count])]
    got = [(t["name"], t["dtype"], t["npy_dtype"], t["shape"]) for t in meta["tensors"]]
    if got != tensors:
        fail("batch %d %s: meta.json tensors %r, expected %r" % (index, layout, got, tensors))
    for name, _, npy, shape in tensors:
        a = arrays.get(name)
        if a is None or a.dtype != np.dtype(npy) or list(a.shape) != shape:
            fail("batch %d %s: %s.npy is %s %s, expected %s %s" % (
                index, layout, name, None if a is None else a.dtype, None if a is None else a.shape, npy, shape))


def check_large(bfeed, addr, tmp, path, fail):
    """A large JPEG (shorter side >= 600), where Pillow's draft would
    decode at 1/4: the default eval is torchvision's pixels exactly;
    eval_decode=fast is Image.draft's, and so not torchvision's."""
    exact = reference(path, SIZE).astype(np.float32)
    drafted = pillow_eval(path, SIZE, draft=True).transpose(2, 0, 1).astype(np.float32)
    _, default = fetch(bfeed, addr, os.path.join(tmp, "big"), 0, "nchw", "big")
    _, fast = fetch(bfeed, addr, os.path.join(tmp, "bigfast"), 0, "nchw", "big", ["--eval-decode", "fast"])
    got, got_fast = bf16_to_f32(default["image"])[0], bf16_to_f32(fast["image"])[0]
    err = float(np.abs(got_fast - exact).mean())
    print("large image: default max abs error %d; eval-decode fast mean abs error %.3f against torchvision"
          % (int(np.abs(got - exact).max()), err))
    if not np.array_equal(got, exact):
        fail("large image: the default eval is not torchvision's pixels")
    if not np.array_equal(got_fast, drafted):
        fail("large image: eval-decode fast is not Image.draft's pixels")
    if np.array_equal(got_fast, exact):
        fail("large image: eval-decode fast gave torchvision's pixels (no draft scale?)")


def large_jpeg(fixtures, files, root):
    """A 1600x1200 JPEG made from the first fixture, alone in a folder."""
    os.makedirs(os.path.join(root, "big"))
    path = os.path.join(root, "big", "big.jpg")
    Image.open(os.path.join(fixtures, files[0])).convert("RGB").resize((1600, 1200), Image.BICUBIC).save(
        path, quality=92)
    return path


def main():
    bfeedd, bfeed, fixtures = sys.argv[1:4]
    files = sorted(f for f in os.listdir(fixtures) if f.lower().endswith((".jpeg", ".jpg")))
    if len(files) < 2:
        print("fetch_oracle: need at least 2 fixture JPEGs in %s" % fixtures)
        return 1
    failures = []
    fail = failures.append

    with tempfile.TemporaryDirectory(prefix="bfeed-fetch-oracle-") as tmp:
        root = os.path.join(tmp, "data")
        for f in files:  # one class per file: sample i is files[i], label i
            os.makedirs(os.path.join(root, os.path.splitext(f)[0]))
            os.symlink(os.path.join(os.path.abspath(fixtures), f),
                       os.path.join(root, os.path.splitext(f)[0], f))
        big = large_jpeg(fixtures, files, os.path.join(tmp, "large"))
        daemon = Daemon(bfeedd, tmp, ["fx=" + root, "big=" + os.path.join(tmp, "large")])
        addr = daemon.addr
        try:
            nbatches = (len(files) + BATCH - 1) // BATCH
            for index in range(nbatches):
                first = index * BATCH
                count = min(BATCH, len(files) - first)
                meta, nchw = fetch(bfeed, addr, os.path.join(tmp, "nchw%d" % index), index, "nchw")
                check_meta(meta, nchw, index, "nchw", count, fail)
                meta, nhwc = fetch(bfeed, addr, os.path.join(tmp, "nhwc%d" % index), index, "nhwc")
                check_meta(meta, nhwc, index, "nhwc", count, fail)
                if failures:
                    break
                if not np.array_equal(nhwc["image"], nchw["image"].transpose(0, 2, 3, 1)):
                    fail("batch %d: the NHWC image is not the NCHW one transposed" % index)
                for name in ("label", "index"):
                    if not np.array_equal(nhwc[name], nchw[name]):
                        fail("batch %d: %s differs between the NCHW and NHWC fetches" % (index, name))
                want = np.arange(first, first + count)
                if not np.array_equal(nchw["index"], want):
                    fail("batch %d: indices %s, expected %s" % (index, nchw["index"].tolist(), want.tolist()))
                if not np.array_equal(nchw["label"], want):
                    fail("batch %d: labels %s, expected %s" % (index, nchw["label"].tolist(), want.tolist()))
                values = bf16_to_f32(nchw["image"])
                if not (np.all(values == np.round(values)) and values.min() >= 0 and values.max() <= 255):
                    fail("batch %d: normalize none gave values that are not integers 0..255" % index)
                for i in range(count):
                    f = files[first + i]
                    ref = reference(os.path.join(fixtures, f), SIZE).astype(np.float32)
                    diff = np.abs(values[i] - ref)
                    print("%-40s mean abs error %.3f, max %d" % (f, float(diff.mean()), int(diff.max())))
                    if diff.max() != 0:
                        fail("%s: not Pillow's pixels (mean abs error %.3f)" % (f, float(diff.mean())))
            check_large(bfeed, addr, tmp, big, fail)
        finally:
            err = daemon.stop(STOP_TIMEOUT)
            if err:
                fail(err + "; log:\n" + daemon.log())

    return finish("fetch_oracle", "%d images" % len(files), failures)


if __name__ == "__main__":
    sys.exit(main())
