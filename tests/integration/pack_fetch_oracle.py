"""`bfeed pack` against its sources and an independent reader, through the real daemon.

Sources (folder with JPEG, PNG, WebP and a corrupt file; a list of the
same files; TFRecord shards with float features, written by protobuf and
crcmod; tar shards written by tarfile) are packed with --images original
and served by bfeedd beside the sources: every batch (train and eval,
several seeds, epoch 1, a --shard 1/2, the whole epoch in one batch) must
equal the source's byte for byte, features too. Each pack is read back by
pack_reader.py (struct and crcmod, from PACK_FORMAT.md alone): CRCs,
labels, the stored bytes equal to the originals. A raw pack's pixels must
equal Pillow's convert("RGB") resized with BILINEAR to the thumbnail size
(or as they are within the cap); a JPEG pack's payloads decode with
Pillow at that size, a JPEG within the cap kept byte for byte. The corrupt
source file: stored by original (and skipped by the daemon like the
folder's), skipped and named by raw. Also `bfeed pack` (the CLI) running
bfeed-pack, a manifest (text) source refused, and a raw pack with
--short-side 73, from which eval at 64 must be torchvision's eval of the
originals bit for bit.

usage: pack_fetch_oracle.py BFEEDD BFEED BFEED_PACK SHARD_WRITER_DIR FIXTURE_DIR
"""
import io
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, sys.argv[4])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shard_writer as w  # noqa: E402
import pack_reader as pr  # noqa: E402
from fetch_oracle import bf16_to_f32  # noqa: E402
from oracle_util import Daemon, check, eval_geometry, pillow_eval  # noqa: E402
from oracle_util import main as oracle_main  # noqa: E402
from PIL import Image  # noqa: E402

BFEEDD, BFEED, PACK, _, FIXTURES = sys.argv[1:6]


def build_folder(root):
    """Returns [(class, path)] in the folder's sample order."""
    fx = sorted(f for f in os.listdir(FIXTURES) if f.lower().endswith((".jpeg", ".jpg")))
    for i, f in enumerate(fx):
        for copy in range(2):
            d = os.path.join(root, "c%d" % (i % 2))
            os.makedirs(d, exist_ok=True)
            shutil.copy(os.path.join(FIXTURES, f), os.path.join(d, "%d_%s" % (copy, f)))
    src = Image.open(os.path.join(FIXTURES, fx[0])).convert("RGB")
    d = os.path.join(root, "c_other")
    os.makedirs(d)
    src.resize((40, 30)).save(os.path.join(d, "a_small.png"))  # within the caps below
    src.resize((160, 120)).convert("RGBA").save(os.path.join(d, "b_rgba.png"))
    src.resize((90, 200)).save(os.path.join(d, "c_tall.webp"), quality=80)
    open(os.path.join(d, "d_corrupt.jpg"), "wb").write(b"\xff\xd8\xff\xe0 not a JPEG at all")
    return [(ci, os.path.join(root, c, f)) for ci, c in enumerate(sorted(os.listdir(root)))
            for f in sorted(os.listdir(os.path.join(root, c)))]


def pack(src, out, *opts, expect=0):
    r = subprocess.run([PACK, src, out] + list(opts), capture_output=True, text=True, timeout=300)
    check(r.returncode == expect, "bfeed-pack %s %s %s exits %d: %s" % (src, os.path.basename(out), " ".join(opts),
                                                                        r.returncode, (r.stderr + r.stdout)[-600:]))
    return r


def fetch(d, ds, out, opts):
    r = subprocess.run([BFEED, "fetch", "--connect", d.addr, "--dataset", ds, "--out", out] + opts,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return None, r.stderr
    return {n: open(os.path.join(out, n + ".npy"), "rb").read() for n in ("image", "label", "index", "features")
            if os.path.exists(os.path.join(out, n + ".npy"))}, r.stderr


def check_original(out, samples, labels, what):
    """The pack's records are the source's files, in order, labelled."""
    meta, shards = pr.read_pack(out)
    recs = [r for s in shards for r in s["records"]]
    check(meta["images"] == "original" and meta["samples"] == len(samples) and meta["skipped"] == 0,
          "%s: metadata: original, %d samples: %s" % (what, len(samples), {k: meta[k] for k in ("images", "samples")}))
    check([r["bytes"] for r in recs] == [open(p, "rb").read() for _, p in samples],
          "%s: each record is its source file's bytes, in sample order" % what)
    check([r["label"] for r in recs] == labels, "%s: labels in the index" % what)
    return meta, recs


def check_capped(out, samples, cap, mode):
    """Raw: Pillow's pixels at the thumbnail size; jpeg: decodable at it."""
    meta, shards = pr.read_pack(out)
    recs = [r for s in shards for r in s["records"]]
    good = [(c, p) for c, p in samples if not p.endswith("d_corrupt.jpg")]
    check(meta["samples"] == len(good) and meta["skipped"] == 1 and meta["max_side"] == cap,
          "%s: the corrupt image left out, counted: %d records, skipped %d" % (mode, meta["samples"], meta["skipped"]))
    check([r["label"] for r in recs] == [c for c, _ in good], "%s: labels follow the packed samples" % mode)
    for r, (_, p) in zip(recs, good):
        img = Image.open(p).convert("RGB")
        tw, th = pr.thumbnail_size(img.size[0], img.size[1], cap)
        ref = img if (tw, th) == img.size else img.resize((tw, th), Image.BILINEAR)
        name = os.path.basename(p)
        if mode == "raw":
            rw, rh, px = pr.raw_pixels(r["bytes"])
            check((rw, rh) == (tw, th) and px == ref.tobytes(),
                  "raw %s: %dx%d pixels equal Pillow's (%dx%d -> %dx%d)" % (name, rw, rh, img.size[0], img.size[1], tw, th))
        else:
            got = Image.open(io.BytesIO(r["bytes"]))
            kept = p.lower().endswith((".jpeg", ".jpg")) and (tw, th) == img.size
            check(got.format == "JPEG" and got.size == (tw, th) and (not kept or r["bytes"] == open(p, "rb").read()),
                  "jpeg %s: a %s JPEG of %s%s" % (name, got.format, got.size, ", the original bytes" if kept else ""))
            if not kept:
                diff = np.abs(np.asarray(got.convert("RGB"), np.int16) - np.asarray(ref, np.int16)).mean()
                check(diff < 6, "jpeg %s: close to Pillow's resize (mean abs diff %.2f)" % (name, diff))


def check_short_eval(d, tmp, good):
    """Eval at 64 from the --short-side 73 pack: torchvision's pixels of
    the originals, bit for bit."""
    got, err = fetch(d, "p_short", os.path.join(tmp, "o", "short"), [
        "--mode", "eval", "--size", "64", "--batch", str(len(good)), "--normalize", "none", "--keep-partial",
        "--batch-index", "0"])
    if not check(got is not None, "p_short eval fetch: %s" % err):
        return
    img = np.load(io.BytesIO(got["image"]))
    vals = bf16_to_f32(img).astype(np.int16)
    for i, p in enumerate(good):
        ref = pillow_eval(p, 64).transpose(2, 0, 1).astype(np.int16)
        check(np.array_equal(vals[i], ref), "short-side pack, eval 64 of %s: torchvision's pixels of the original"
              " (max abs diff %d)" % (os.path.basename(p), int(np.abs(vals[i] - ref).max())))


def run(tmp):
    root = os.path.join(tmp, "folder")
    samples = build_folder(root)
    n = len(samples)
    labels = [c for c, _ in samples]
    with open(os.path.join(tmp, "list.tsv"), "w") as f:
        f.writelines("%s\t%d\n" % (os.path.relpath(p, tmp), c) for c, p in samples)
    feats = np.random.default_rng(3).standard_normal((n, 5)).astype(np.float32) * 100
    os.makedirs(os.path.join(tmp, "tf"))
    for s, (a, b) in enumerate([(0, n // 2), (n // 2, n)]):
        w.write_tfrecord(os.path.join(tmp, "tf", "train-%d" % s),
                         [w.example(open(samples[i][1], "rb").read(), labels[i] + 1, features=feats[i])
                          for i in range(a, b)])
    os.makedirs(os.path.join(tmp, "tar"))
    w.write_tar(os.path.join(tmp, "tar", "s-0.tar"),
                [m for i, (c, p) in enumerate(samples)
                 for m in (("%06d%s" % (i, os.path.splitext(p)[1]), open(p, "rb").read()),
                           ("%06d.cls" % i, b"%d" % c))])
    sources = {"folder": root, "list": "list:%s/list.tsv" % tmp,
               "tfrecord": "tfrecord:%s/tf/train-*,image_key=image/encoded,features_key=features" % tmp,
               "tar": "tar:%s/tar/*.tar" % tmp}
    for name, src in sources.items():
        pack(src, os.path.join(tmp, "p_" + name), "--images", "original", "--shard-samples", "4", "--jobs", "2")
    for name in sources:
        meta, recs = check_original(os.path.join(tmp, "p_" + name), samples, labels, name)
    meta = pr.read_meta(os.path.join(tmp, "p_tfrecord", "bfeed-pack.meta"))
    check(meta["features"] == 5 and all(np.array_equal(np.float32(r["features"]), feats[i]) for i, r in enumerate(
        pr.read_pack(os.path.join(tmp, "p_tfrecord"))[1][0]["records"])), "tfrecord: features stored as float32")
    check(pr.read_meta(os.path.join(tmp, "p_folder", "bfeed-pack.meta"))["class_names"] == ["c0", "c1", "c_other"],
          "folder: class names in the metadata")
    # The CLI runs bfeed-pack (beside it in the build's bin/).
    r = subprocess.run([BFEED, "pack", root, os.path.join(tmp, "p_cli"), "--images", "raw", "--max-side", "64",
                        "--jobs", "1", "--shard-samples", "3"], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0 and "skipping %s" % samples[-1][1] in r.stderr and "1 sample(s) skipped" in r.stdout,
          "bfeed pack runs bfeed-pack; the corrupt image named and counted: " + (r.stderr + r.stdout)[-400:])
    check_capped(os.path.join(tmp, "p_cli"), samples, 64, "raw")
    pack(root, os.path.join(tmp, "p_jpeg"), "--images", "jpeg", "--max-side", "100", "--quality", "92")
    check_capped(os.path.join(tmp, "p_jpeg"), samples, 100, "jpeg")
    pack(root, os.path.join(tmp, "p_jpeg0"), "--images", "jpeg", "--max-side", "0")
    m0, sh0 = pr.read_pack(os.path.join(tmp, "p_jpeg0"))
    jp = [p for _, p in samples if p.endswith(".JPEG")]
    check(all(any(r["bytes"] == open(p, "rb").read() for s in sh0 for r in s["records"]) for p in jp),
          "jpeg without a cap keeps every JPEG's original bytes")
    r = pack(root, os.path.join(tmp, "p_bad"), "--images", "original", "--max-side", "64", expect=2)
    check("original" in r.stderr, "--max-side with --images original refused")
    mf = os.path.join(tmp, "m.tsv")
    open(mf, "w").write("%s\t0\ta cat\n" % samples[0][1])
    from oracle_util import write_table
    vec = write_table(os.path.join(tmp, "vec.txt"))
    r = pack("manifest:%s,vectors=%s" % (mf, vec), os.path.join(tmp, "p_manifest"), expect=1)
    check("text" in r.stderr and not os.path.exists(os.path.join(tmp, "p_manifest", "bfeed-pack.meta")),
          "a manifest (captions) refused clearly: " + r.stderr.strip())

    # --short-side 73 = round(64 * 256 / 224): eval at 64 from the pack is
    # torchvision's eval of the originals (checked through the daemon below).
    pack(root, os.path.join(tmp, "p_short"), "--images", "raw", "--short-side", "73")
    good = [p for _, p in samples if not p.endswith("d_corrupt.jpg")]
    sizes = [pr.raw_pixels(r["bytes"])[:2] for s in pr.read_pack(os.path.join(tmp, "p_short"))[1] for r in s["records"]]
    want = [eval_geometry(*Image.open(p).size, 64)[:2] if min(Image.open(p).size) > 73 else Image.open(p).size
            for p in good]
    check(sizes == want, "--short-side 73: each image as torchvision's Resize(73) sizes it: %s" % sizes)

    datasets = ["s_%s=%s" % (k, v) for k, v in sources.items()] + \
               ["p_%s=pack:%s/p_%s" % (k, tmp, k) for k in sources] + ["p_short=pack:%s/p_short" % tmp]
    optsets = [["--mode", "train", "--seed", "7", "--batch", "4", "--batch-index", "1"],
               ["--mode", "train", "--seed", "9", "--batch", "4", "--batch-index", "0", "--layout", "nhwc"],
               ["--mode", "train", "--seed", "9", "--batch", "4", "--batch-index", "2", "--epoch", "1"],
               ["--mode", "train", "--seed", "5", "--batch", "2", "--batch-index", "1", "--shard", "1/2"],
               ["--mode", "eval", "--batch", "4", "--batch-index", "1", "--size", "96"],
               ["--mode", "train", "--seed", "3", "--batch", str(n), "--batch-index", "0", "--size", "64"]]
    d = Daemon(BFEEDD, tmp, datasets)
    try:
        for name in sources:
            for k, opts in enumerate(optsets):
                ref, e1 = fetch(d, "s_" + name, os.path.join(tmp, "o", "s_%s%d" % (name, k)), opts)
                got, e2 = fetch(d, "p_" + name, os.path.join(tmp, "o", "p_%s%d" % (name, k)), opts)
                if check(ref is not None and got is not None, "%s fetches: %s %s" % (name, e1, e2)):
                    check(sorted(got) == sorted(ref) and all(got[t] == ref[t] for t in ref),
                          "%s %s: pack's %s equal the source's byte for byte" % (name, " ".join(opts), sorted(ref)))
        check_short_eval(d, tmp, good)
        last = "p_folder/shard-%06d.bfpack: record %d" % ((n - 1) // 4, (n - 1) % 4)
        check("d_corrupt.jpg" in d.log() and last in d.log(),
              "the corrupt image skipped by the daemon in the source and in its pack, both named")
    finally:
        stopped = d.stop()
    check(stopped is None, stopped or "the daemon stops cleanly")



if __name__ == "__main__":
    TMP = tempfile.mkdtemp(prefix="bfeed-pack-")
    oracle_main({"all": lambda: run(TMP)}, "all", TMP)  # exits 1 on a failed check
