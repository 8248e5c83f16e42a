#!/usr/bin/python3
"""daemon/augment/pil_*.c against torchvision 0.14 and Pillow 9.4, byte for
byte (issue 30): every op of autoaugment.py's _apply_op at every magnitude
bin of AutoAugment(IMAGENET), RandAugment(num_magnitude_bins=31) and
TrivialAugmentWide's spaces (the classes' own _augmentation_space), both
signs of signed ops, NEAREST, BILINEAR and BICUBIC, fill None and a
non-zero fill; ColorJitter's F.adjust_* on a grid of factors and on
float32 draws as ColorJitter makes them; F.affine, F.rotate and
Image.transform on matrices that reach each of Pillow's affine engines;
torchvision's inverse matrix, CPython's round(x, 15) and np.uint8 of the
hue shift, value for value; convert("HSV"), its inverse and convert("L")
over all 2^24 pixels; and that what torchvision refuses is refused.

    augment_oracle.py AUGMENT_PIL_DUMP [IMAGENET_DIR]

Images: synthetic ones (1x1, 1x7, 7x1, 3x5, a 4x4 square, a 64x48
gradient, 33x29 noise, grey as RGB, saturated colours, two levels, a grey
2x1 whose mean is a tie) take every case; with IMAGENET_DIR, 10 of its
JPEGs centre-cropped and resized by Pillow to 176x176 and 224x224 take
every other op and magnitude (the rest on the next image), a geometric one
with one interpolation and fill (the next one on the next image), and
ColorJitter's grid, finer on some (so that the run stays short). The
oracles are only Pillow, torchvision and numpy. Each mismatch prints the
case and its first differing pixel; any mismatch fails.
"""
import collections
import math
import os
import random
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision.transforms.autoaugment as AA
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode

GEOMETRIC = ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")
MODES = [(m, int(F.pil_modes_mapping[m])) for m in
         (InterpolationMode.NEAREST, InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)]
# (what torchvision gets, the bytes _parse_fill makes of it: int() of each)
FILLS = [(None, (0, 0, 0)), ([17.9, 128.0, 250.5], (17, 128, 250))]
COMBOS = [(m, f) for m in MODES for f in FILLS]
# _apply_op's colour ops: the command, and the argument torchvision passes on.
COLOUR = {
    "Brightness": ("brightness", lambda m: 1.0 + m), "Color": ("saturation", lambda m: 1.0 + m),
    "Contrast": ("contrast", lambda m: 1.0 + m), "Sharpness": ("sharpness", lambda m: 1.0 + m),
    "Posterize": ("posterize", int), "Solarize": ("solarize", lambda m: m),
    "AutoContrast": ("autocontrast", None), "Equalize": ("equalize", None), "Invert": ("invert", None),
}
JITTER = {"brightness": F.adjust_brightness, "contrast": F.adjust_contrast, "saturation": F.adjust_saturation,
          "sharpness": F.adjust_sharpness, "hue": F.adjust_hue}

counts = collections.Counter()   # category -> cases compared
failures = collections.Counter()  # category -> mismatches


def arg(v):
    """A number as the tool reads it: ints in decimal, floats exactly."""
    return str(v) if isinstance(v, int) else float(v).hex()


class Tool:
    """augment_pil_dump over a pipe: send() a command, recv() its answer."""

    def __init__(self, path):
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(self, *words, payload=b""):
        self.p.stdin.write((" ".join(arg(w) if not isinstance(w, str) else w for w in words) + "\n").encode())
        self.p.stdin.write(payload)
        self.p.stdin.flush()

    def recv(self):
        head = self.p.stdout.read(8)
        if len(head) != 8:
            raise RuntimeError("augment_pil_dump died (rc %s)" % self.p.poll())
        rc, n = struct.unpack("<iI", head)
        return rc, self.p.stdout.read(n)

    def load(self, arr):
        h, w, _ = arr.shape
        self.send("load", w, h, payload=np.ascontiguousarray(arr, dtype=np.uint8).tobytes())
        assert self.recv()[0] == 0

    def close(self):
        self.p.stdin.close()
        return self.p.wait()


def compare(category, label, want, rc, got):
    """want: torchvision's PIL image (or array); got: the tool's bytes."""
    counts[category] += 1
    want = np.asarray(want, dtype=np.uint8)
    if rc == 0 and len(got) == want.size and got == want.tobytes():
        return True
    failures[category] += 1
    if failures[category] <= 10:
        if rc != 0 or len(got) != want.size:
            print(f"MISMATCH {category}: {label}: rc {rc}, {len(got)} bytes for {want.size}")
        elif want.ndim == 1:  # a value's bytes
            print(f"MISMATCH {category}: {label}: torchvision {want.tobytes().hex()} ours {got.hex()}")
        else:
            g = np.frombuffer(got, dtype=np.uint8).reshape(want.shape)
            bad = np.argwhere(g != want)
            y, x = bad[0][:2]
            diff = np.abs(g.astype(int) - want).max()
            print(f"MISMATCH {category}: {label}: first at (x={x}, y={y}): torchvision {want[y, x].tolist()} "
                  f"ours {g[y, x].tolist()}; {len(bad)} bytes differ, by up to {diff}")
    return False


def run(tool, category, label, words, reference):
    """One case, overlapped: the tool works while torchvision does."""
    tool.send(*words)
    want = reference()
    rc, got = tool.recv()
    return compare(category, label, want, rc, got)


# ---- the cases ----

def space_magnitudes(h, w):
    """{(op, magnitude bits): label} over the three policies' spaces, each
    signed op's magnitudes negated too (magnitude *= -1.0, so 0.0 gives
    -0.0), as _apply_op receives them."""
    spaces = [("AutoAugment", AA.AutoAugment(AA.AutoAugmentPolicy.IMAGENET)._augmentation_space(10, (h, w))),
              ("RandAugment", AA.RandAugment(num_magnitude_bins=31)._augmentation_space(31, (h, w))),
              ("TrivialAugmentWide", AA.TrivialAugmentWide(num_magnitude_bins=31)._augmentation_space(31))]
    out = {}
    for policy, space in spaces:
        for op, (mags, signed) in space.items():
            values = [float(v) for v in mags.reshape(-1).tolist()] if mags.ndim > 0 else [0.0]
            for i, m in enumerate(values):
                for sign in ((1.0, -1.0) if signed else (1.0,)):
                    mag = m * sign
                    out.setdefault((op, struct.pack("<d", mag)),
                                   f"{policy} {op} bin {i}{' negated' if sign < 0 else ''} magnitude {mag!r}")
    return out


def check_space(tool, img, name, every_combo, turn):
    """Every op and magnitude of the three spaces on img; unless
    every_combo, each on every other image (by turn), a geometric one with
    one interpolation and fill, the next one on the next image."""
    for k, ((op, bits), label) in enumerate(space_magnitudes(img.height, img.width).items()):
        mag = struct.unpack("<d", bits)[0]
        if not every_combo and (k + turn) % 2:
            continue
        if op in GEOMETRIC:
            combos = COMBOS if every_combo else [COMBOS[(k // 2 + turn) % len(COMBOS)]]
            for (mode, resample), (fill, fill_bytes) in combos:
                run(tool, f"_apply_op {op}", f"{name}: {label}, {mode.name}, fill {fill}",
                    ("geom", op, resample, *fill_bytes, mag),
                    lambda: AA._apply_op(img, op, mag, interpolation=mode, fill=fill))
        elif op in COLOUR:
            cmd, to_arg = COLOUR[op]
            words = (cmd,) if to_arg is None else (cmd, to_arg(mag))
            run(tool, f"_apply_op {op}", f"{name}: {label}", words,
                lambda: AA._apply_op(img, op, mag, interpolation=InterpolationMode.NEAREST, fill=None))


def jitter_factors(seed, grid):
    """ColorJitter's ops: a grid, a few extremes, and float32 draws made as
    ColorJitter makes them (torch.empty(1).uniform_(lo, hi))."""
    g = torch.Generator().manual_seed(seed)
    draw = lambda lo, hi: [float(torch.empty(1).uniform_(lo, hi, generator=g)) for _ in range(8)]
    factors = [i * 2.0 / (grid - 1) for i in range(grid)] + [2.5, 10.0] + draw(0.6, 1.4) + draw(0.0, 2.0)
    hues = [-0.5 + i / (grid - 1) for i in range(grid)] + draw(-0.5, 0.5) + draw(-0.1, 0.1) + [-0.0]
    return [(op, f) for op in ("brightness", "contrast", "saturation", "sharpness") for f in factors] + \
           [("hue", f) for f in hues]


def check_jitter(tool, img, name, grid, seed):
    for op, f in jitter_factors(seed, grid):
        run(tool, f"F.adjust_{op}", f"{name}: factor {f!r}", (op, f), lambda: JITTER[op](img, f))


def check_colour_extra(tool, img, name):
    """The ImageOps ops at every parameter, and in place."""
    for bits in range(9):
        run(tool, "F.posterize", f"{name}: bits {bits}", ("posterize", bits), lambda: F.posterize(img, bits))
    for t in (-1.0, 0.0, 0.5, 1.0, 127.5, 128.0, 128.25, 254.9, 255.0, 256.0, 1e9):
        run(tool, "F.solarize", f"{name}: threshold {t!r}", ("solarize", t), lambda: F.solarize(img, t))
    for words, ref in ((("brightness", 1.7), lambda: F.adjust_brightness(img, 1.7)),
                       (("saturation", 0.3), lambda: F.adjust_saturation(img, 0.3)),
                       (("contrast", 1.9), lambda: F.adjust_contrast(img, 1.9)),
                       (("hue", -0.27), lambda: F.adjust_hue(img, -0.27)),
                       (("equalize",), lambda: F.equalize(img)), (("autocontrast",), lambda: F.autocontrast(img)),
                       (("posterize", 3), lambda: F.posterize(img, 3)), (("invert",), lambda: F.invert(img))):
        run(tool, "in place", f"{name}: {words}", ("inplace", *words), ref)


def random_matrices(rng, w, h):
    """Matrices for each of Pillow's nearest-neighbour engines, and general ones."""
    out = [[rng.uniform(-2, 2), 0.0, rng.uniform(-w, w), 0.0, rng.uniform(-2, 2), rng.uniform(-h, h)]
           for _ in range(4)]  # scale-only: ImagingScaleAffine
    out += [[rng.uniform(-2, 2) for _ in range(2)] + [rng.uniform(-w, 2 * w)] +
            [rng.uniform(-2, 2) for _ in range(2)] + [rng.uniform(-h, 2 * h)] for _ in range(8)]
    out += [[1.0, 0.25, 0.5, -0.0, 1.0, 0.0],  # -0.0 counts as 0 for the scale test
            [1000.0, 0.5, -500.0, 0.0, 1.0, 0.0],  # a corner past 32768: the double fallback
            [0.5, 1e-3, -40000.0, 0.01, 0.5, 2.0],
            [40000.0, 0.5, -20000.0, 0.0, 1.0, 0.0],  # FIX(40000) overflows int on 1-wide images
            [1.0, 0.0, 1e12, 0.0, 1.0, 0.0], [-1.0, 0.0, w, 0.0, -1.0, h]]  # COORD past int; a mirror
    return out


def check_geometry(tool, img, name, rng):
    w, h = img.size
    for m in random_matrices(rng, w, h):
        for (mode, resample), (fill, fill_bytes) in COMBOS:
            kw = {} if fill is None else {"fillcolor": fill_bytes}
            run(tool, "Image.transform", f"{name}: {m} {mode.name} fill {fill}",
                ("transform", resample, *fill_bytes, *m),
                lambda: img.transform((w, h), Image.AFFINE, m, resample, **kw))
    angles = [0.0, 90.0, 180.0, 270.0, -90.0, 360.0, 45.0, 1e-20, -1e-20, 720.5, 33.3, -170.0, 1e6 + 0.1]
    for a in angles + [rng.uniform(-400, 400) for _ in range(4)]:
        for (mode, resample), (fill, fill_bytes) in COMBOS:
            run(tool, "F.rotate", f"{name}: angle {a!r} {mode.name} fill {fill}",
                ("rotate", resample, *fill_bytes, a), lambda: F.rotate(img, a, interpolation=mode, fill=fill))
    for _ in range(6):
        angle, scale = rng.uniform(-180, 180), rng.uniform(0.5, 2.0)
        translate = [rng.randint(-w, w), rng.randint(-h, h)]
        shear = [rng.uniform(-40, 40), rng.uniform(-40, 40)]
        center = None if rng.random() < 0.5 else [rng.randint(0, w), rng.randint(0, h)]
        (mode, resample), (fill, fill_bytes) = rng.choice(COMBOS)
        cwords = ("-", "-") if center is None else center
        run(tool, "F.affine", f"{name}: angle {angle!r} translate {translate} scale {scale!r} shear {shear} "
            f"center {center} {mode.name} fill {fill}",
            ("affine", resample, *fill_bytes, angle, *translate, scale, *shear, *cwords),
            lambda: F.affine(img, angle, translate, scale, shear, mode, fill, center))


# ---- value-for-value checks ----

def check_values(tool, rng):
    """_get_inverse_affine_matrix, round(x, 15) and np.uint8(f * 255)."""
    for _ in range(3000):
        center = [rng.choice([0, rng.randint(0, 300), rng.uniform(0, 300)]) for _ in range(2)]
        angle = rng.choice([0.0, rng.uniform(-180, 180)])
        translate = [rng.choice([0, rng.randint(-200, 200)]) for _ in range(2)]
        scale = rng.choice([1.0, rng.uniform(0.1, 3)])
        shear = [rng.choice([0.0, rng.uniform(-60, 60), math.degrees(math.atan(rng.uniform(-1, 1)))]) for _ in range(2)]
        tool.send("matrix", *center, angle, *translate, scale, *shear)
        want = F._get_inverse_affine_matrix(center, angle, translate, scale, shear)
        compare("inverse matrix", f"center {center} angle {angle!r} translate {translate} scale {scale!r} "
                f"shear {shear}", np.frombuffer(struct.pack("<6d", *want), dtype=np.uint8), *tool.recv())
    xs = [rng.uniform(-1, 1) for _ in range(20000)] + [k / 2e15 for k in range(-40, 41)] + \
         [math.cos(-math.radians(a)) for a in range(-720, 721)] + [math.sin(-math.radians(a / 7)) for a in range(5000)]
    xs += [x + d for x in (0.5e-15, 2.5e-15, -1.5e-15) for d in (0.0, 1e-31, -1e-31)] + [1e-17, -1e-17, 0.0, -0.0]
    for x in xs:
        tool.send("round15", x)
        compare("round(x, 15)", repr(x), np.frombuffer(struct.pack("<d", round(x, 15)), dtype=np.uint8),
                *tool.recv())
    for f in [-0.5 + i / 1000 for i in range(1001)] + [rng.uniform(-0.5, 0.5) for _ in range(1000)] + [-0.0]:
        tool.send("hueshift", f)
        with np.errstate(over="ignore"):
            want = np.uint8(f * 255)
        compare("np.uint8(hue * 255)", repr(f), np.array([want], dtype=np.uint8), *tool.recv())


def check_refusals(tool, img):
    """What torchvision or Pillow refuses, ours refuses too (BFEED_EINVAL)."""
    nan, inf = float("nan"), float("inf")
    cases = [(("posterize", 9), lambda: F.posterize(img, 9)), (("posterize", -1), lambda: F.posterize(img, -1)),
             (("hue", 0.5000001), lambda: F.adjust_hue(img, 0.5000001)), (("hue", nan), lambda: F.adjust_hue(img, nan)),
             (("geom", "TranslateX", 0, 0, 0, 0, inf),
              lambda: AA._apply_op(img, "TranslateX", inf, InterpolationMode.NEAREST, None)),
             (("rotate", 1, 0, 0, 0, 10.0), lambda: img.rotate(10.0, Image.LANCZOS)),
             (("affine", 0, 0, 0, 0, 0.0, 0, 0, 0.0, 0.0, 0.0, "-", "-"),
              lambda: F.affine(img, 0.0, [0, 0], 0.0, [0.0, 0.0]))]
    for words, ref in cases:
        tool.send(*words)
        rc, _ = tool.recv()
        try:
            ref()
            refused = False
        except (ValueError, OverflowError):
            refused = True
        counts["refusals"] += 1
        if not refused or rc != -1:
            failures["refusals"] += 1
            print(f"MISMATCH refusals: {words}: torchvision refused: {refused}, ours: rc {rc}")


def check_all_pixels(tool):
    """convert("HSV"), HSV's convert("RGB") and convert("L") on every pixel."""
    v = np.arange(1 << 24, dtype=np.uint32)
    every = np.stack([v >> 16, (v >> 8) & 255, v & 255], axis=-1).astype(np.uint8).reshape(4096, 4096, 3)
    tool.load(every)
    img = Image.fromarray(every, "RGB")
    run(tool, "convert HSV (2^24 pixels)", "RGB -> HSV", ("tohsv",), lambda: np.asarray(img.convert("HSV")))
    run(tool, "convert HSV (2^24 pixels)", "HSV -> RGB", ("fromhsv",),
        lambda: np.asarray(Image.frombytes("HSV", (4096, 4096), every.tobytes()).convert("RGB")))
    run(tool, "convert L (2^24 pixels)", "RGB -> L", ("luma",), lambda: np.asarray(img.convert("L")))


# ---- images ----

def synthetic_images():
    r = np.random.default_rng(30)
    yy, xx = np.mgrid[0:48, 0:64]
    grad = np.stack([xx * 4, yy * 5, (xx + yy) * 2], axis=-1)
    grey = r.integers(0, 256, (30, 40, 1)).repeat(3, axis=2)
    hue = np.linspace(0, 1, 36, endpoint=False)
    sat = np.stack([np.clip(np.abs(((hue * 6 + k) % 6) - 3) - 1, 0, 1) for k in (0, 4, 2)], axis=-1)
    sat = (np.concatenate([sat * 255, sat * 128, 255 - sat * 255], axis=0)[:, None, :]).repeat(5, axis=1)
    images = {"1x1": r.integers(0, 256, (1, 1, 3)), "1x7": r.integers(0, 256, (7, 1, 3)),
              "7x1": r.integers(0, 256, (1, 7, 3)), "3x5": r.integers(0, 256, (5, 3, 3)),
              "4x4": r.integers(0, 256, (4, 4, 3)), "64x48 gradient": grad, "33x29 noise": r.integers(0, 256, (29, 33, 3)),
              "40x30 grey": grey, "5x108 saturated": np.round(sat),
              "32x32 two levels": np.where(r.random((32, 32, 1)) < 0.9, 40, 200).repeat(3, axis=2),
              "2x1 grey mean 100.5": [[[100] * 3, [101] * 3]]}  # Contrast's int(mean + 0.5) at a tie
    return {k: Image.fromarray(np.asarray(v, dtype=np.uint8), "RGB") for k, v in images.items()}


def real_images(folder):
    if not folder or not os.path.isdir(folder):
        print(f"note: {folder} not found: real images skipped")
        return {}
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs
                   if f.lower().endswith((".jpg", ".jpeg")))
    out = {}
    for path in files[::max(1, len(files) // 10)][:10]:
        with Image.open(path) as im:
            im = im.convert("RGB")
        s = min(im.size)
        sq = im.crop(((im.width - s) // 2, (im.height - s) // 2, (im.width - s) // 2 + s, (im.height - s) // 2 + s))
        for size in (176, 224):
            out[f"{os.path.basename(path)} {size}"] = sq.resize((size, size), Image.BILINEAR)
    return out


def main():
    t0 = time.monotonic()
    tool = Tool(sys.argv[1])
    rng = random.Random(30)
    check_values(tool, rng)
    check_all_pixels(tool)
    for name, img in synthetic_images().items():
        tool.load(np.asarray(img))
        check_space(tool, img, name, True, 0)
        check_jitter(tool, img, name, 101, len(name))
        check_colour_extra(tool, img, name)
        check_geometry(tool, img, name, rng)
    check_refusals(tool, img)
    for turn, (name, img) in enumerate(real_images(sys.argv[2] if len(sys.argv) > 2 else None).items()):
        tool.load(np.asarray(img))
        check_space(tool, img, name, False, turn)
        check_jitter(tool, img, name, 101 if turn % 5 == 0 else 26, turn)
        check_geometry(tool, img, name, rng) if turn % 5 == 0 else None
    if tool.close() != 0:
        failures["tool exit"] += 1
    for cat in sorted(counts):
        print(f"{'FAIL' if failures[cat] else 'ok  '} {cat}: {counts[cat]} cases, {failures[cat]} mismatches")
    print(f"{sum(counts.values())} cases in {time.monotonic() - t0:.1f} s, {sum(failures.values())} mismatches")
    sys.exit(1 if sum(failures.values()) else 0)


if __name__ == "__main__":
    main()
