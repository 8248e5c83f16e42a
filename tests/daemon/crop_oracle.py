"""transform.c's crop choices against torchvision's own code.

Usage: crop_oracle.py CROP_DUMP_TOOL

1. The draw mapping. Our draws are 24-bit uniforms u = K * 2^-24; torch's
   float32 uniform_(a, b) turns its 24 random bits x into fma(x, b - a, a)
   in float32. That claim is checked first against real torch: seed torch's
   mt19937, reproduce its raw words with numpy's MT19937, and compare.
2. The aspect ratio for all 2^24 draws: the tool's value against torch.exp
   of the mapped float32 log-ratio draw.
3. RandomResizedCrop.get_params, run for real with torch.Tensor.uniform_,
   torch.randint and torch.rand patched to consume our draws (randint(0, n)
   gets floor(u * n), as transform.c defines), then RandomHorizontalFlip for
   real on a 2-pixel image, for many image sizes (tiny, extreme aspect
   ratios that reach the fallback, 500x375) and draw vectors; and with other
   scale ranges (the stream option crop_scale, RandomResizedCrop's scale=),
   and with other ratio ranges and flip probabilities (crop_ratio, hflip:
   RandomResizedCrop's ratio=, RandomHorizontalFlip(p)).
4. torch.log of a float32, which get_params takes of the ratio bounds: the
   tool's SLEEF logf_u10 against torch.log over a sweep of float32 values.
5. Resize(round(size*256/224)) + CenterCrop(size), and Resize(N) +
   CenterCrop((H, W)) (the options resize and size H,W), padding included:
   torchvision's transforms applied to tensor images whose pixels hold their
   coordinates plus one, so the resized size and the crop offset are read
   off the output (0: F.center_crop's padding).
Every mismatch is printed; any mismatch fails.
"""
import math
import random
import subprocess
import sys
from fractions import Fraction
from unittest import mock

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F

ONE = 1 << 24
MAX_DRAWS = 23
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)


def f32(x):
    return np.float32(x)


def fma_f32(x, m, a):
    """float32 fma(x, m, a), exactly: one rounding of the exact value."""
    exact = Fraction(float(x)) * Fraction(float(m)) + Fraction(float(a))
    near = f32(float(exact))  # within one float32 ulp; pick the nearest exactly
    cands = [np.nextafter(near, f32(-np.inf)), near, np.nextafter(near, f32(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - exact),
                                     int(np.array(c).view(np.uint32)) & 1))
    return best


def fma_f32_vec(x, m, a):
    """fma over arrays: the product of two float32 is exact in double, and the
    sum here spans under 64 bits, so long double holds it exactly and the
    cast to float32 is the only rounding. Checked against fma_f32."""
    return (x.astype(np.longdouble) * np.longdouble(m) + np.longdouble(a)).astype(np.float32)


def uniform_value(u, a, b):
    """torch.empty(1).uniform_(a, b) when its 24 random bits are u * 2^24."""
    lo, hi = f32(float(a)), f32(float(b))
    return fma_f32(f32(u), f32(hi - lo), lo)


def check_mapping():
    """Claim 1 against real torch."""
    seed, n = 1234, 4000
    torch.manual_seed(seed)
    log_ratio = torch.log(torch.tensor(RATIO))
    specs = [SCALE if i % 2 == 0 else (float(log_ratio[0]), float(log_ratio[1])) for i in range(n)]
    got = [torch.empty(1).uniform_(a, b).item() for a, b in specs]
    bg = np.random.MT19937(0)
    bg._legacy_seeding(seed)  # torch seeds its mt19937 the same way (init_genrand)
    raw = bg.random_raw(n)
    bad = 0
    for (a, b), g, r in zip(specs, got, raw):
        want = uniform_value((int(r) & (ONE - 1)) / ONE, a, b)
        if f32(g) != want:
            bad += 1
            if bad <= 5:
                print(f"MAPPING MISMATCH raw {int(r):08x} range ({a}, {b}): torch {g!r} ours {want!r}")
    print(f"draw mapping: {n} torch uniform_ values, {bad} mismatches")
    return bad


def check_aspects(tool):
    """Claim 2: every log-ratio draw's aspect ratio, C vs torch.exp."""
    run = subprocess.run([tool], input=b"aspects\n", capture_output=True, check=True)
    ours = np.frombuffer(run.stdout, dtype=np.float32)
    if ours.size != ONE:
        print(f"FAIL: tool gave {ours.size} aspect ratios")
        return 1
    log_ratio = torch.log(torch.tensor(RATIO))
    lo, hi = f32(float(log_ratio[0])), f32(float(log_ratio[1]))
    u = (np.arange(ONE, dtype=np.float64) / ONE).astype(np.float32)
    x = fma_f32_vec(u, f32(hi - lo), lo)
    for k in random.Random(5).sample(range(ONE), 2000) + [0, 1, ONE // 2, ONE - 1]:
        if x[k] != uniform_value(float(u[k]), lo, hi):
            print(f"internal: vector fma disagrees with exact fma at K={k}")
            return 1
    theirs = torch.exp(torch.from_numpy(x)).numpy()
    one_by_one = [torch.exp(torch.tensor([x[k]])).item() for k in (0, 12345, ONE - 1)]
    bad = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
    for k in bad[:10]:
        print(f"ASPECT MISMATCH K={k} x={float(x[k]).hex()}: ours {float(ours[k]).hex()} "
              f"torch {float(theirs[k]).hex()}")
    bad1 = sum(f32(v) != theirs[k] for v, k in zip(one_by_one, (0, 12345, ONE - 1)))
    print(f"aspect ratio: {ONE} draws, {bad.size} mismatches with torch.exp "
          f"({bad1} between torch's 1-element and vector exp)")
    return bad.size + bad1


class Draws:
    """Feeds one case's draws to the patched torch calls, in call order."""

    def __init__(self, ks):
        self.u = [k / ONE for k in ks]  # exact float32 values, as doubles
        self.used = 0

    def next(self):
        u = self.u[self.used] if self.used < len(self.u) else 0.0
        self.used += 1
        return u

    def uniform_(self, tensor, a=0.0, b=1.0):
        return tensor.fill_(float(uniform_value(self.next(), a, b)))

    def randint(self, low, high, size, **kw):
        return torch.tensor([low + math.floor(self.next() * (high - low))])

    def rand(self, *size, **kw):
        return torch.tensor([self.next()], dtype=torch.float32)


FLIP_PROBE = torch.tensor([[[0, 1]]], dtype=torch.uint8)


def torchvision_crop(w, h, ks, scale=SCALE, ratio=RATIO, p=0.5):
    d = Draws(ks)
    img = torch.empty((1, h, w), dtype=torch.uint8)
    fake_uniform = lambda self, a=0.0, b=1.0: d.uniform_(self, a, b)  # noqa: E731
    with mock.patch.object(torch.Tensor, "uniform_", fake_uniform), \
            mock.patch("torch.randint", d.randint), mock.patch("torch.rand", d.rand):
        i, j, ch, cw = T.RandomResizedCrop.get_params(img, list(scale), list(ratio))
        flip = int(T.RandomHorizontalFlip(p)(FLIP_PROBE)[0, 0, 0].item() == 1)
    return (j, i, cw, ch, flip, d.used)


def crop_cases():
    rnd = random.Random(20240607)
    sizes = [(500, 375), (375, 500), (1, 1), (2, 1), (1, 2), (2, 3), (3, 2), (7, 5), (17, 13),
             (10, 1000), (1000, 10), (1, 5000), (5000, 1), (30, 41), (41, 30), (224, 224),
             (640, 480), (480, 640), (4000, 3000), (3000, 4000), (333, 500), (500, 333),
             (100, 133), (133, 100), (12000, 50), (2048, 2048)]
    sizes += [(rnd.randint(1, 3000), rnd.randint(1, 3000)) for _ in range(30)]
    top = ONE - 1
    for w, h in sizes:
        yield w, h, [0] * MAX_DRAWS
        yield w, h, [top] * MAX_DRAWS
        for ratio_k in (0, top, ONE // 2):
            # whole area at an extreme ratio: tries fail, some images reach the fallback
            yield w, h, [top, ratio_k] * 10 + [rnd.randrange(ONE) for _ in range(3)]
        for _ in range(300):
            ks = [rnd.randrange(ONE) for _ in range(MAX_DRAWS)]
            if rnd.random() < 0.3:  # large areas and extreme ratios: more failed tries
                for t in range(10):
                    ks[2 * t] = rnd.randrange(ONE - ONE // 8, ONE)
                    ks[2 * t + 1] = rnd.choice([rnd.randrange(ONE // 16), rnd.randrange(ONE - ONE // 16, ONE)])
            yield w, h, ks
        yield w, h, [top, 0] * 3  # too few draws: both sides read the rest as 0
        yield w, h, [0, 0, ONE // 2, ONE // 2, ONE // 2] + [0] * 18  # flip draw exactly 0.5


def compare(tool, what, fields, cases, command, oracle, describe):
    """Send the tool command(*case) for every case and compare each answer (a
    line of integers named by fields) with oracle(*case). The oracle's answers
    and the number of mismatches; (None, 1) when the tool answered a different
    number of lines."""
    cmds = "".join(command(*case) + "\n" for case in cases)
    run = subprocess.run([tool], input=cmds.encode(), capture_output=True, check=True)
    lines = run.stdout.decode().splitlines()
    if len(lines) != len(cases):
        print(f"FAIL: tool answered {len(lines)} of {len(cases)} {what} cases")
        return None, 1
    answers, bad = [], 0
    for case, line in zip(cases, lines):
        ours = tuple(int(v) for v in line.split())
        theirs = oracle(*case)
        answers.append(theirs)
        if ours != theirs:
            bad += 1
            if bad <= 20:
                print(f"{what.upper()} MISMATCH {describe(*case)}: ours ({fields}) {ours} torchvision {theirs}")
    return answers, bad


def check_crops(tool):
    cases = list(crop_cases())
    answers, bad = compare(tool, "crop", "left top w h flip used", cases,
                           lambda w, h, ks: f"rrc {w} {h} {' '.join(map(str, ks))}", torchvision_crop,
                           lambda w, h, ks: f"{w}x{h} draws {ks}")
    if answers is None:
        return bad
    fallbacks = sum(theirs[5] == 2 * 10 + 1 for theirs in answers)  # all ten tries and the flip
    print(f"RandomResizedCrop: {len(cases)} cases ({fallbacks} reached the fallback), {bad} mismatches")
    if fallbacks == 0:
        print("FAIL: no case reached the fallback")
        return 1
    return bad


# scale= ranges a user might pass (the stream option crop_scale "LO,HI"):
# torchvision takes Python floats, uniform_ casts them to float32, as the
# daemon reads the option.
SCALES = [(0.25, 1.0), (0.35, 0.35), (1.0, 1.0), (0.08, 0.5), (0.5, 1.0), (0.01, 0.02)]


def check_crop_scales(tool):
    rnd = random.Random(99)
    sizes = [(500, 375), (375, 500), (224, 224), (1, 1), (10, 1000), (4000, 3000), (333, 500)]
    cases = [(w, h, [rnd.randrange(ONE) for _ in range(MAX_DRAWS)], s) for s in SCALES for w, h in sizes
             for _ in range(60)]
    cases += [(w, h, [ONE - 1] * MAX_DRAWS, s) for s in SCALES for w, h in sizes]
    answers, bad = compare(tool, "crop scale", "left top w h flip used", cases,
                           lambda w, h, ks, s: f"rrcs {s[0]!r} {s[1]!r} {w} {h} {' '.join(map(str, ks))}",
                           torchvision_crop, lambda w, h, ks, s: f"{w}x{h} scale {s} draws {ks}")
    if answers is not None:
        print(f"RandomResizedCrop with scale=: {len(cases)} cases over {len(SCALES)} ranges, {bad} mismatches")
    return bad


# ratio= ranges and flip p's a recipe might pass (crop_ratio "LO,HI", hflip
# P), as Python floats: the daemon gets their float32 (bit patterns here).
RATIOS = [(0.5, 2.0), (1.0, 1.0), (3 / 4, 4 / 3), (0.8, 1.25), (0.25, 0.5), (2.0, 4.0), (0.9, 1.1), (0.3, 3.3)]
FLIPS = [0.0, 1.0, 0.5, 0.2, 0.9]


def f32_hex(x):
    return "%08x" % int(np.array(f32(x)).view(np.uint32))


def check_crop_ratios(tool):
    """RandomResizedCrop(scale=, ratio=) + RandomHorizontalFlip(p) for other
    ratio ranges and flip p's: every try's log-uniform ratio from torch.log
    of the float32 bounds, the fallback's clamp with the Python floats."""
    rnd = random.Random(31)
    sizes = [(500, 375), (375, 500), (224, 224), (1, 1), (10, 1000), (1000, 10), (4000, 3000), (333, 500), (7, 5)]
    top = ONE - 1
    cases = []
    for k, ratio in enumerate(RATIOS):
        for w, h in sizes:
            p, scale = FLIPS[k % len(FLIPS)], SCALES[k % len(SCALES)] if k % 3 == 0 else SCALE
            cases += [(w, h, [rnd.randrange(ONE) for _ in range(MAX_DRAWS)], scale, ratio, p) for _ in range(40)]
            cases += [(w, h, [top, rk] * 10 + [rnd.randrange(ONE) for _ in range(3)], scale, ratio, p)
                      for rk in (0, top)]  # failing tries: the fallback clamps to the ratio range
    for p in FLIPS:  # the flip draw at and around p
        for k in (int(p * ONE) - 1, int(p * ONE), int(p * ONE) + 1, 0, top):
            cases.append((500, 375, [0, 0, ONE // 2, ONE // 2, min(max(k, 0), top)] + [0] * 18, SCALE, RATIO, p))

    def command(w, h, ks, scale, ratio, p):
        bits = " ".join(f32_hex(v) for v in (*scale, *ratio, p))
        return f"rrcp {bits} {w} {h} {' '.join(map(str, ks))}"
    answers, bad = compare(tool, "crop ratio", "left top w h flip used", cases, command, torchvision_crop,
                           lambda w, h, ks, s, r, p: f"{w}x{h} scale {s} ratio {r} p {p} draws {ks}")
    if answers is None:
        return bad
    flips = {p: [a[4] for a, c in zip(answers, cases) if c[5] == p] for p in FLIPS}
    if any(flips[0.0]) or not all(flips[1.0]):
        print("FAIL: p=0 flipped or p=1 did not")
        bad += 1
    fallbacks = sum(a[5] == 21 for a in answers)
    print(f"RandomResizedCrop with ratio= and flip p: {len(cases)} cases over {len(RATIOS)} ratios "
          f"({fallbacks} fallbacks), {bad} mismatches")
    return bad


def check_logs(tool):
    """torch.log of float32 values against the tool's: all of [1/16, 16)
    every 7th bit pattern, and the ratio bounds above."""
    lo, hi = (int(np.array(f32(v)).view(np.uint32)) for v in (1 / 16, 16.0))
    run = subprocess.run([tool], input=f"logs {lo:x} {hi:x}\n".encode(), capture_output=True, check=True)
    ours = np.frombuffer(run.stdout, dtype=np.float32)[::7]
    x = np.arange(lo, hi, dtype=np.uint32).view(np.float32)[::7]
    bad = 0
    for start in range(0, x.size, 1 << 20):  # torch.log on vectors, as on the 2-element ratio tensor
        chunk = slice(start, start + (1 << 20))
        theirs = torch.log(torch.from_numpy(x[chunk].copy())).numpy()
        bad += int(np.count_nonzero(theirs.view(np.uint32) != ours[chunk].view(np.uint32)))
    pairs = [torch.log(torch.tensor(r)).numpy() for r in RATIOS]
    ours_pairs = []
    for r in RATIOS:
        for v in r:
            b = int(np.array(f32(v)).view(np.uint32))
            got = subprocess.run([tool], input=f"logs {b:x} {b + 1:x}\n".encode(), capture_output=True, check=True)
            ours_pairs.append(np.frombuffer(got.stdout, dtype=np.float32)[0])
    bad_pairs = int(np.count_nonzero(np.concatenate(pairs).view(np.uint32) != np.array(ours_pairs).view(np.uint32)))
    rounded = np.log(x.astype(np.float64)).astype(np.float32)
    print(f"torch.log: {x.size} float32 values in [1/16, 16), {bad} mismatches ({bad_pairs} on the ratio bounds); "
          f"{int(np.count_nonzero(rounded != ours))} of them are not the correctly rounded log")
    return bad + bad_pairs


def torchvision_eval_geometry(w, h, resize, ow, oh):
    """Resize(resize or the default) + CenterCrop((oh, ow)) read off
    coordinate images: the resized size from the function T.Resize calls,
    the window's offset from T.CenterCrop run on coordinates plus one (0 is
    its padding, so an offset below 0 is read from the first pixel that is
    not)."""
    short = resize or int(round(max(ow, oh) * 256 / 224))
    rh, rw = F._compute_resized_output_size((h, w), [short])
    xs = (torch.arange(rw) + 1).expand(1, rh, rw)
    ys = (torch.arange(rh) + 1).unsqueeze(1).expand(1, rh, rw)
    crop = T.CenterCrop((oh, ow))
    row, col = crop(xs)[0].amax(0), crop(ys)[0].amax(1)  # a padded row or column is all 0
    left = next(int(v) - 1 - i for i, v in enumerate(row.tolist()) if v)
    top = next(int(v) - 1 - i for i, v in enumerate(col.tolist()) if v)
    return (rw, rh, left, top)


def check_eval_geometry(tool):
    rnd = random.Random(17)
    sizes = [(500, 375), (375, 500), (224, 224), (1, 1), (10, 1000), (1000, 10), (640, 480), (183, 183), (299, 1)]
    sizes += [(rnd.randint(1, 2500), rnd.randint(1, 2500)) for _ in range(25)]
    shapes = [(224, 224), (160, 224), (224, 160), (300, 64), (7, 9)]  # (W, H) of the crop
    resizes = [0, 232, 256, 176, 64, 200, 1]  # 200, 176, 64, 1: crops larger than the image are padded
    cases = [(w, h, r, ow, oh) for w, h in sizes for r in resizes for ow, oh in shapes]
    answers, bad = compare(tool, "eval geometry", "rw rh left top", cases,
                           lambda w, h, r, ow, oh: f"evalg {w} {h} {r} {ow} {oh}", torchvision_eval_geometry,
                           lambda w, h, r, ow, oh: f"{w}x{h} resize {r} crop {ow}x{oh}")
    if answers is not None:
        padded = sum(a[2] < 0 or a[3] < 0 for a in answers)
        print(f"Resize(N)+CenterCrop((H, W)): {len(cases)} cases ({padded} padded), {bad} mismatches")
        if not padded:
            print("FAIL: no case padded")
            return bad + 1
    return bad


def torchvision_eval(w, h, size):
    """Resize's output size from the function T.Resize calls, cross-checked
    by running T.Resize itself where the output is small; the crop offset by
    running T.CenterCrop on (broadcast, allocation-free) coordinate images."""
    short = int(round(size * 256 / 224))
    rh, rw = F._compute_resized_output_size((h, w), [short])
    if rh * rw <= 1 << 20:
        resized = T.Resize(short, interpolation=T.InterpolationMode.NEAREST)(torch.zeros((1, h, w)))
        if tuple(resized.shape[-2:]) != (rh, rw):
            raise AssertionError(f"T.Resize gave {tuple(resized.shape)} for {w}x{h}, expected {(rh, rw)}")
    xs = torch.arange(rw).expand(1, rh, rw)
    ys = torch.arange(rh).unsqueeze(1).expand(1, rh, rw)
    crop = T.CenterCrop(size)
    return (rw, rh, int(crop(xs)[0, 0, 0]), int(crop(ys)[0, 0, 0]))


def check_eval(tool):
    rnd = random.Random(7)
    sizes = [(500, 375), (375, 500), (375, 503), (503, 375), (224, 224), (256, 256), (1, 1),
             (10, 1000), (1000, 10), (1, 3000), (640, 480), (4000, 3000), (183, 183), (299, 1)]
    sizes += [(rnd.randint(1, 2500), rnd.randint(1, 2500)) for _ in range(60)]
    crop_sizes = [224, 160, 128, 96, 7, 1, 299, 384]
    cases = [(w, h, s) for w, h in sizes for s in crop_sizes]
    answers, bad = compare(tool, "eval", "rw rh left top", cases, lambda w, h, s: f"eval {w} {h} {s}",
                           torchvision_eval, lambda w, h, s: f"{w}x{h} size {s}")
    if answers is not None:
        print(f"Resize+CenterCrop: {len(cases)} cases, {bad} mismatches")
    return bad


def main():
    tool = sys.argv[1]
    # transform.c follows torch's AVX2/AVX-512 kernels (FMA uniform_, SLEEF
    # exp); torch's "default" kernels round differently and would fail here.
    cap = [l for l in torch.__config__.show().splitlines() if "CPU capability" in l]
    print(f"torch {torch.__version__}: {cap[0].strip() if cap else 'CPU capability unknown'}")
    failures = (check_mapping() + check_aspects(tool) + check_crops(tool) + check_crop_scales(tool) +
                check_crop_ratios(tool) + check_logs(tool) + check_eval(tool) + check_eval_geometry(tool))
    print("FAIL" if failures else "OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
