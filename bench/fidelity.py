#!/usr/bin/python3
"""bench/fidelity.py -- how far bfeed's opt-in shortcuts move pixels from the
exact pipeline, measured on real images (printed, never asserted).

  bench/fidelity.py eval-decode SAMPLE_DUMP DATA_DIR [SIZES]
      eval_decode=fast (Pillow's draft scale) against the default, which is
      torchvision's pipeline exactly: per size, the share of images whose
      mean abs error is over 0.5 grey levels, the mean and the worst.
  bench/fidelity.py train-decode SAMPLE_DUMP DATA_DIR [SIZES [SEEDS]]
      train_decode=fast (crops of at least 4x the output at a reduced IDCT
      scale) against the default, exact (torchvision's RandomResizedCrop on
      the full decode): the daemon's own crops (sample_load's draws for
      seeds 0..SEEDS-1 and each image's index) at both, per size: the share
      of crops fast changed, the mean abs difference per crop over all and
      over the changed ones, and the largest pixel difference.
  bench/fidelity.py pack SAMPLE_DUMP BFEED DATA_DIR [MAX_SIDES [QUALITY]]
      `bfeed pack` at several --max-side values, raw and JPEG: for the same
      train crop boxes in relative coordinates and for eval at 224, the mean
      abs error (grey levels) of what bfeed makes from the pack against the
      exact pipeline on the originals, and the pack's size beside theirs.
      MAX_SIDES: a comma list of --max-side values; -N stands for
      --short-side N (and no --max-side).

The reference is always the user's: Image.open(f).convert("RGB"), then
Resize(round(S*256/224)) + CenterCrop(S) for eval, img.crop(box).resize((S,
S), BILINEAR) for a train crop; bfeed's side comes from SAMPLE_DUMP
(tests/daemon/sample_dump.c), the daemon's own sample path.
"""
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "daemon"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from image_oracle import Dump  # noqa: E402
from pack_reader import read_pack  # noqa: E402
from oracle_util import eval_geometry, pillow_eval  # noqa: E402


def images(root):
    """The JPEGs of an ImageFolder tree in the folder kind's sample order
    (class folders sorted, files sorted within each)."""
    out = []
    for d in sorted(os.listdir(root)):
        sub = os.path.join(root, d)
        if os.path.isdir(sub):
            out += [os.path.join(sub, f) for f in sorted(os.listdir(sub)) if f.lower().endswith((".jpg", ".jpeg"))]
    return out


def mae(got, ref):
    return float(np.abs(got.reshape(ref.shape).astype(np.int16) - ref.astype(np.int16)).mean())


def summary(errs):
    a = np.array(errs)
    return "%5.1f%% over 0.5, mean %.3f, worst %.2f" % (100.0 * (a > 0.5).mean(), a.mean(), a.max())


def eval_decode(dump_exe, data, sizes=(224, 160, 128)):
    dump = Dump(dump_exe)
    files = images(data)
    print("eval_decode=fast against torchvision's eval (mean abs error per image, grey levels), %d JPEGs in %s"
          % (len(files), data))
    for size in sizes:
        errs = []
        for p in files:
            rw, rh, left, top = eval_geometry(*Image.open(p).size, size)
            exact = dump.ask("eval %d 0 %d %d %d %d %s" % (size, rw, rh, left, top, p))
            fast = dump.ask("eval %d 1 %d %d %d %d %s" % (size, rw, rh, left, top, p))
            ref = pillow_eval(p, size)
            assert mae(exact, ref) == 0, "%s: the default eval is not exact" % p
            errs.append(mae(fast, ref))
        print("  size %3d: %s" % (size, summary(errs)))
    dump.close()


def train_decode(dump_exe, data, sizes=(224, 176), seeds=10):
    dump = Dump(dump_exe)
    files = images(data)
    print("train_decode=fast against the default (exact) on the same crops, %d JPEGs in %s, %d crops each "
          "(seeds 0..%d)" % (len(files), data, seeds, seeds - 1))
    for size in sizes:
        means, worst = [], 0
        for i, p in enumerate(files):
            for seed in range(seeds):
                exact = dump.ask("load %d 0 train %d %d %s" % (size, seed, i, p))
                box = dump.crop
                fast = dump.ask("load %d 1 train %d %d %s" % (size, seed, i, p))
                assert box == dump.crop, "%s: the two loads drew different crops" % p
                d = np.abs(exact.astype(np.int16) - fast.astype(np.int16))
                means.append(float(d.mean()))
                worst = max(worst, int(d.max()))
        a = np.array(means)
        changed = a[a > 0]
        print("  size %3d: %5.1f%% of crops changed; mean abs difference %.3f over all crops, %.3f over the changed "
              "(worst crop %.3f); largest pixel difference %d" % (
                  size, 100.0 * changed.size / a.size, a.mean(), changed.mean() if changed.size else 0.0,
                  a.max(), worst))
    dump.close()


def rel_boxes(rnd, n):
    """n RandomResizedCrop-like boxes in relative coordinates (x0, y0, x1, y1)."""
    out = []
    while len(out) < n:
        area = rnd.uniform(0.08, 1.0)
        ratio = np.exp(rnd.uniform(np.log(3 / 4), np.log(4 / 3)))
        w, h = np.sqrt(area * ratio), np.sqrt(area / ratio)
        if w <= 1 and h <= 1:
            x, y = rnd.uniform(0, 1 - w), rnd.uniform(0, 1 - h)
            out.append((x, y, x + w, y + h))
    return out


def pixel_box(box, w, h):
    x0, y0 = int(round(box[0] * w)), int(round(box[1] * h))
    x1, y1 = max(x0 + 1, int(round(box[2] * w))), max(y0 + 1, int(round(box[3] * h)))
    return x0, y0, min(x1, w) - x0, min(y1, h) - y0


def pack_records(bfeed, data, out, images_mode, max_side, quality=90):
    """Pack data and return the records' bytes in sample order (PACK_FORMAT.md)."""
    cap = ["--short-side", str(-max_side), "--max-side", "0"] if max_side < 0 else ["--max-side", str(max_side)]
    if images_mode == "jpeg":
        cap += ["--quality", str(quality)]
    subprocess.run([bfeed, "pack", data, out, "--images", images_mode] + cap, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, shards = read_pack(out)
    return [r["bytes"] for s in shards for r in s["records"]]


def pack(dump_exe, bfeed, data, max_sides=(256, 384, 448, 512, 0, -256, -320), quality=90, boxes_per_image=4):
    files = images(data)
    dump = Dump(dump_exe)
    rnd = random.Random(19)
    boxes = [rel_boxes(rnd, boxes_per_image) for _ in files]
    orig_bytes = sum(os.path.getsize(p) for p in files)
    print("bfeed pack against the exact pipeline on the originals: mean abs error (grey levels) over %d JPEGs,"
          " %d train crops each (same relative boxes) and eval at 224; JPEG quality %d; originals %.1f MB" % (
              len(files), boxes_per_image, quality, orig_bytes / 1e6))
    print("%-6s %10s %10s %10s %12s %12s" % ("images", "cap", "size MB", "x orig", "train MAE", "eval MAE"))
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("raw", "jpeg"):
            for ms in max_sides:
                out = os.path.join(tmp, "%s-%d" % (mode, ms))
                recs = pack_records(bfeed, data, out, mode, ms, quality)
                assert len(recs) == len(files), "%d records for %d images" % (len(recs), len(files))
                size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
                terr, eerr = [], []
                for p, rec, bx in zip(files, recs, boxes):
                    rp = os.path.join(tmp, "rec")
                    with open(rp, "wb") as f:
                        f.write(rec)
                    orig = Image.open(p).convert("RGB")
                    pw, ph = dump_size(dump, rp)
                    for b in bx:
                        x, y, cw, ch = pixel_box(b, *orig.size)
                        ref = np.asarray(orig.crop((x, y, x + cw, y + ch)).resize((224, 224), Image.BILINEAR))
                        x, y, cw, ch = pixel_box(b, pw, ph)
                        got = dump.ask("crop 224 0 %d %d %d %d 0 %s" % (x, y, cw, ch, rp))
                        terr.append(mae(got, ref))
                    rw, rh, left, top = eval_geometry(pw, ph, 224)
                    got = dump.ask("eval 224 0 %d %d %d %d %s" % (rw, rh, left, top, rp))
                    eerr.append(mae(got, pillow_eval(p, 224)))
                print("%-6s %10s %10.1f %10.2f %12.3f %12.3f" % (mode, ("short %d" % -ms) if ms < 0 else (ms or "none"), size / 1e6, size / orig_bytes,
                                                               np.mean(terr), np.mean(eerr)))
    dump.close()


def dump_size(dump, path):
    """The record's full-size width and height, from sample_dump's full decode."""
    dump.ask("full " + path)
    return dump.crop[0], dump.crop[1]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    if sys.argv[1] == "eval-decode":
        sizes = tuple(int(s) for s in sys.argv[4].split(",")) if len(sys.argv) > 4 else (224, 160, 128)
        eval_decode(sys.argv[2], sys.argv[3], sizes)
    elif sys.argv[1] == "train-decode":
        sizes = tuple(int(s) for s in sys.argv[4].split(",")) if len(sys.argv) > 4 else (224, 176)
        train_decode(sys.argv[2], sys.argv[3], sizes, int(sys.argv[5]) if len(sys.argv) > 5 else 10)
    elif sys.argv[1] == "pack" and len(sys.argv) >= 5:
        sides = tuple(int(s) for s in sys.argv[5].split(",")) if len(sys.argv) > 5 else (256, 384, 448, 512, 0, -256, -320)
        pack(sys.argv[2], sys.argv[3], sys.argv[4], sides, int(sys.argv[6]) if len(sys.argv) > 6 else 90)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
