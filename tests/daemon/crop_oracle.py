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
   scale ranges (the stream option crop_scale, RandomResizedCrop's scale=).
4. Resize(round(size*256/224)) + CenterCrop(size): torchvision's transforms
   applied to tensor images whose pixels hold their coordinates, so the
   resized size and the crop offset are read off the output.
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


def torchvision_crop(w, h, ks, scale=SCALE):
    d = Draws(ks)
    img = torch.empty((1, h, w), dtype=torch.uint8)
    fake_uniform = lambda self, a=0.0, b=1.0: d.uniform_(self, a, b)  # noqa: E731
    with mock.patch.object(torch.Tensor, "uniform_", fake_uniform), \
            mock.patch("torch.randint", d.randint), mock.patch("torch.rand", d.rand):
        i, j, ch, cw = T.RandomResizedCrop.get_params(img, list(scale), list(RATIO))
        flip = int(T.RandomHorizontalFlip(0.5)(FLIP_PROBE)[0, 0, 0].item() == 1)
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
                check_eval(tool))
    print("FAIL" if failures else "OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
