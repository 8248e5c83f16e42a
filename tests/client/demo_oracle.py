#!/usr/bin/python3
"""Oracle for the demo dataset (client/make_demo.c), judged by Pillow and numpy.

usage: demo_oracle.py TEST_MAKE_DEMO_BINARY

Generates the default dataset with `TEST_MAKE_DEMO_BINARY --generate DIR`
and checks what make_demo.h promises:
  * layout: train/ and val/ hold the same 8 class folders, 80 and 20 JPEGs
    each, and Pillow decodes every file;
  * variety: sizes and aspect ratios vary within 96..320, some files are
    grayscale (only in the gray classes), some progressive, and no image is
    a flat colour or a copy of another;
  * learnable: a least-squares linear classifier on ImageNet-normalised
    32x32 centre crops, fitted on train, gets >= 90% on val;
  * not trivial: a nearest-centroid classifier on each image's mean colour
    cannot tell the orientations apart, so it stays far below that.

Missing Pillow or numpy is a failure, not a skip: the test must not pass
without having looked.
"""
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import check, failures  # noqa: E402

CLASSES = [f"{c}_{o}" for c in ("red", "green", "blue", "gray")
           for o in ("horizontal", "vertical")]
COUNTS = {"train": 80, "val": 20}
SIDE_MIN, SIDE_MAX = 96, 320
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def centre_crop_32(img):
    """torchvision's eval transform at 32: Resize(36) on the short side,
    CenterCrop(32), ToTensor, Normalize."""
    w, h = img.size
    if w <= h:
        nw, nh = 36, int(36 * h / w)
    else:
        nw, nh = int(36 * w / h), 36
    img = img.convert("RGB").resize((nw, nh), Image.BILINEAR)
    left, top = (nw - 32) // 2, (nh - 32) // 2
    a = np.asarray(img.crop((left, top, left + 32, top + 32)), np.float32) / 255
    return ((a - MEAN) / STD).reshape(-1)


def load_split(root, split):
    feats, means, labels, info = [], [], [], []
    check(sorted(os.listdir(os.path.join(root, split))) == sorted(CLASSES),
          f"{split}: class folders are {sorted(os.listdir(os.path.join(root, split)))}")
    for label, cls in enumerate(CLASSES):
        d = os.path.join(root, split, cls)
        names = sorted(os.listdir(d))
        check(names == [f"{i:04d}.jpg" for i in range(COUNTS[split])],
              f"{d}: holds {len(names)} files, expected {COUNTS[split]} numbered .jpg")
        for name in names:
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                raw = f.read()
            img = Image.open(path)
            check(img.format == "JPEG", f"{path}: format {img.format}")
            img.load()  # a truncated or corrupt file fails here
            a = np.asarray(img.convert("RGB"), np.float32)
            feats.append(centre_crop_32(img))
            means.append(a.reshape(-1, 3).mean(0))
            labels.append(label)
            info.append({"path": path, "mode": img.mode, "size": img.size,
                         "progressive": bool(img.info.get("progressive") or
                                             img.info.get("progression")),
                         "std": float(a.std()), "sha": hashlib.sha256(raw).hexdigest(),
                         "cls": cls})
    return np.array(feats), np.array(means), np.array(labels), info


def fit_linear(x, y, ridge=300.0):
    """Least squares to one-hot targets, in the dual (640 samples << 3072
    features), with a bias column. With more features than samples plain
    least squares interpolates the training noise; the ridge term (300, where
    squared feature norms are near 5000) keeps the fit to what is shared."""
    x = np.hstack([x, np.ones((len(x), 1), np.float32)]).astype(np.float64)
    t = np.eye(len(CLASSES))[y]
    alpha = np.linalg.solve(x @ x.T + ridge * np.eye(len(x)), t)
    return x.T @ alpha


def predict_linear(w, x):
    x = np.hstack([x, np.ones((len(x), 1), np.float32)]).astype(np.float64)
    return (x @ w).argmax(1)


def nearest_centroid(xtr, ytr, xva):
    cents = np.array([xtr[ytr == k].mean(0) for k in range(len(CLASSES))])
    return ((xva[:, None, :] - cents[None]) ** 2).sum(-1).argmin(1)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "demo")
        subprocess.run([sys.argv[1], "--generate", root], check=True)
        xtr, mtr, ytr, itr = load_split(root, "train")
        xva, mva, yva, iva = load_split(root, "val")
    info = itr + iva
    if failures:
        sys.exit(f"{len(failures)} failures")

    sizes = {i["size"] for i in info}
    ws = [s[0] for s in sizes]
    hs = [s[1] for s in sizes]
    aspects = [w / h for w, h in sizes]
    print(f"{len(info)} files, {len(sizes)} distinct sizes, aspect "
          f"{min(aspects):.2f}..{max(aspects):.2f}")
    check(min(ws) >= SIDE_MIN and max(ws) <= SIDE_MAX and
          min(hs) >= SIDE_MIN and max(hs) <= SIDE_MAX, "a side is outside 96..320")
    check(len(sizes) > len(info) // 2, "sizes barely vary")
    check(min(aspects) < 0.6 and max(aspects) > 1.6, "aspect ratios barely vary")

    gray = [i for i in info if i["mode"] == "L"]
    prog = [i for i in info if i["progressive"]]
    print(f"{len(gray)} grayscale, {len(prog)} progressive")
    check(len(gray) > 0 and all(i["cls"].startswith("gray_") for i in gray),
          "grayscale files missing or outside the gray classes")
    check(all(i["mode"] in ("L", "RGB") for i in info), "unexpected image modes")
    check(0 < len(prog) < len(info) // 4, "progressive files missing or too many")
    check(min(i["std"] for i in info) > 10, "some image is (nearly) a flat colour")
    check(len({i["sha"] for i in info}) == len(info), "some files are identical")

    w = fit_linear(xtr, ytr)
    acc_lin = float((predict_linear(w, xva) == yva).mean())
    acc_col = float((nearest_centroid(mtr, ytr, mva) == yva).mean())
    # Colour alone still tells the colours apart: orientation is what it lacks.
    colour_only = float((nearest_centroid(mtr, ytr, mva) // 2 == yva // 2).mean())
    print(f"val accuracy: linear on 32x32 crops {acc_lin:.3f}, "
          f"mean colour {acc_col:.3f} (colour part right {colour_only:.3f})")
    check(acc_lin >= 0.90, f"linear classifier gets {acc_lin:.3f} < 0.90: not learnable")
    check(acc_col <= 0.70, f"mean colour alone gets {acc_col:.3f}: the task is trivial")
    check(colour_only >= 0.90, f"colours are not told apart by mean colour ({colour_only:.3f})")

    if failures:
        sys.exit(f"{len(failures)} failures")
    print("demo_oracle: ok")


if __name__ == "__main__":
    main()
