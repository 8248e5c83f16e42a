#!/usr/bin/python3
"""bfeed's augmentation draws against torchvision 0.14's own samplers
(issue 30): the policies' magnitude tables bit for bit (torch.linspace in
float32 and Posterize's arange), and, over 20,000 draws per policy from
bfeed's Philox stream and from torchvision's classes with a fixed torch
seed, the same distributions by a chi-square test of homogeneity: the ops
and magnitudes of AutoAugment(IMAGENET), RandAugment(2, 9) and
TrivialAugmentWide, ColorJitter's order and factors, RandomErasing's boxes,
and the reference recipe's MixUp/CutMix choice, lambda and box.

    augment_draws.py AUG_DRAW_DUMP
"""
import collections
import math
import subprocess
import sys

import torch
import torchvision.transforms as T
import torchvision.transforms.autoaugment as AA

N = 20000
ALPHA = 1e-4  # a test of homogeneity fails only below this p-value
FAILS = []


def dump(*args):
    out = subprocess.run([sys.argv[1], *map(str, args)], capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILS.append(what)


# ---- chi-square test of homogeneity (no scipy in Debian's torch stack) ----

def _gamma_q(a, x):
    """The regularised upper incomplete gamma Q(a, x) (Numerical Recipes:
    series below a + 1, Lentz's continued fraction above)."""
    if x <= 0:
        return 1.0
    lg = math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(10000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return 1.0 - total * math.exp(-x + a * math.log(x) - lg)
    b, c, d = x + 1 - a, 1e300, 1 / (x + 1 - a)
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - lg) * h


def homogeneous(ours, theirs, what):
    """Two samples of categories: one distribution? Categories rarer than
    5 expected in either sample are pooled."""
    a, b = collections.Counter(ours), collections.Counter(theirs)
    na, nb = sum(a.values()), sum(b.values())
    cells, pool = [], [0, 0]
    for k in set(a) | set(b):
        if (a[k] + b[k]) * min(na, nb) / (na + nb) < 5:
            pool[0] += a[k]
            pool[1] += b[k]
        else:
            cells.append((a[k], b[k]))
    if sum(pool):
        cells.append(tuple(pool))
    chi = sum((x * math.sqrt(nb / na) - y * math.sqrt(na / nb)) ** 2 / (x + y) for x, y in cells if x + y)
    df = max(1, len(cells) - 1)
    p = _gamma_q(df / 2, chi / 2)
    check(p > ALPHA, "%s: chi2 %.1f on %d df, p = %.3g (%d categories)" % (what, chi, df, p, len(cells)))


def binned(values, lo, hi, bins=20):
    return [min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins))) for v in values]


# ---- magnitudes, bit for bit ----

def bits(t):
    return ["%08x" % (x & 0xFFFFFFFF) for x in t.float().contiguous().view(torch.int32).tolist()]


def spaces():
    for kind, cls in (("auto", AA.AutoAugment()), ("rand", AA.RandAugment()), ("wide", AA.TrivialAugmentWide())):
        for bins in ([10] if kind == "auto" else [2, 3, 5, 8, 10, 11, 16, 17, 24, 31, 32, 33, 50, 64, 100, 255]):
            for h, w in ((176, 176), (224, 224), (160, 224), (37, 291), (8, 8)):
                space = cls._augmentation_space(bins) if kind == "wide" else cls._augmentation_space(bins, (h, w))
                want = [(name, int(signed), bits(m) if m.ndim > 0 else []) for name, (m, signed) in space.items()]
                got = [(line.split()[0], int(line.split()[1]), line.split()[2:]) for line in dump("space", kind, bins, h, w)]
                if got != want:
                    bad = next((g, x) for g, x in zip(got, want) if g != x)
                    check(False, "space %s bins %d %dx%d: ours %s, torchvision %s" % (kind, bins, h, w, bad[0], bad[1]))
                    return
    check(True, "magnitude tables of AutoAugment, RandAugment and TrivialAugmentWide equal torchvision's, bit for bit")


# ---- the policies' draws ----

def torch_ops(policy, n):
    """(op, magnitude) tuples per call of the policy's forward, recorded
    by a stand-in for autoaugment._apply_op."""
    seen, calls = [], []
    real = AA._apply_op

    def record(img, op_name, magnitude, interpolation, fill):
        calls.append("%s:%r" % (op_name, float(magnitude)))
        return img

    AA._apply_op = record
    try:
        torch.manual_seed(0)
        img = torch.zeros(3, 176, 176, dtype=torch.uint8)
        for _ in range(n):
            calls.clear()
            policy(img)
            seen.append(" ".join(calls))
    finally:
        AA._apply_op = real
    return seen


def ours_ops(kind, num_ops, magnitude, bins):
    return [" ".join("%s:%r" % (o.split(":")[0], float(o.split(":")[1])) for o in line.split())
            for line in dump("policy", kind, num_ops, magnitude, bins, 176, 176, N, 7)]


def policies():
    for kind, policy, args in (("auto", AA.AutoAugment(), (2, 9, 31)), ("rand", AA.RandAugment(2, 9), (2, 9, 31)),
                               ("wide", AA.TrivialAugmentWide(), (1, 0, 31)),
                               ("rand", AA.RandAugment(3, 14, num_magnitude_bins=20), (3, 14, 20))):
        ours, theirs = ours_ops(kind, *args), torch_ops(policy, N)
        homogeneous(ours, theirs, "%s: whole draws per sample" % policy)
        homogeneous([o for s in ours for o in s.split()], [o for s in theirs for o in s.split()],
                    "%s: each op and magnitude" % policy)
        check(set(o for s in ours for o in s.split()) <= set(o for s in theirs for o in s.split()) |
              set(o for s in ours for o in s.split() if o.startswith("Identity")),
              "%s: every (op, magnitude) drawn is one torchvision draws" % policy)


def jitter():
    amounts = (0.4, 0.3, 0.2, 0.1)
    ours = [line.split() for line in dump("jitter", *amounts, N, 3)]
    cj = T.ColorJitter(*amounts)
    torch.manual_seed(0)
    theirs = []
    for _ in range(N):
        idx, b, c, s, h = cj.get_params(cj.brightness, cj.contrast, cj.saturation, cj.hue)
        f = [b, c, s, h]
        theirs.append(["%s:%r" % (("brightness", "contrast", "saturation", "hue")[i], f[i]) for i in idx.tolist()])
    homogeneous([" ".join(x.split(":")[0] for x in s) for s in ours], [" ".join(x.split(":")[0] for x in s) for s in theirs],
                "ColorJitter: the order")
    for k, name in enumerate(("brightness", "contrast", "saturation", "hue")):
        lo, hi = (1 - amounts[k], 1 + amounts[k]) if k < 3 else (-amounts[k], amounts[k])
        o = [float(x.split(":")[1]) for s in ours for x in s if x.startswith(name)]
        t = [float(x.split(":")[1]) for s in theirs for x in s if x.startswith(name)]
        homogeneous(binned(o, lo, hi), binned(t, lo, hi), "ColorJitter: the %s factor" % name)
        check(min(o) >= lo and max(o) <= hi, "ColorJitter: %s factors in [%g, %g]" % (name, lo, hi))


def erase():
    for h, w, p, scale, ratio in ((176, 176, 0.5, (0.02, 0.33), (0.3, 3.3)), (224, 160, 1.0, (0.1, 0.9), (0.5, 2.0))):
        ours = [tuple(map(int, line.split())) for line in dump("erase", p, *scale, *ratio, h, w, N, 5)]
        torch.manual_seed(0)
        img = torch.zeros(3, h, w)
        theirs = []
        for _ in range(N):
            if torch.rand(1) < p:
                i, j, hh, ww, v = T.RandomErasing.get_params(img, scale=scale, ratio=ratio, value=[0.0])
                theirs.append((0, 0, 0, 0, 0) if v is img else (1, i, j, hh, ww))
            else:
                theirs.append((0, 0, 0, 0, 0))
        what = "RandomErasing(p=%g, scale=%s, ratio=%s) on %dx%d" % (p, scale, ratio, h, w)
        homogeneous([o[0] for o in ours], [t[0] for t in theirs], what + ": erased or not")
        for k, name, top in ((3, "height", h), (4, "width", w), (1, "top", h), (2, "left", w)):
            homogeneous(binned([o[k] for o in ours if o[0]], 0, top), binned([t[k] for t in theirs if t[0]], 0, top),
                        what + ": the box's " + name)
        check(all(o[1] + o[3] <= h and o[2] + o[4] <= w and o[3] < h and o[4] < w for o in ours if o[0]),
              what + ": every box inside the image")


def reference_mix(mixup_alpha, cutmix_alpha, h, w, n):
    """The reference recipe's draws (references/classification/train.py and
    transforms.py): RandomChoice of RandomMixup(p=1) and RandomCutmix(p=1)."""
    import random
    random.seed(0)
    torch.manual_seed(0)
    out = []
    kinds = ([1] if mixup_alpha > 0 else []) + ([2] if cutmix_alpha > 0 else [])
    for _ in range(n):
        kind = random.choice(kinds)
        alpha = mixup_alpha if kind == 1 else cutmix_alpha
        lam = float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0])
        if kind == 1:
            out.append((1, lam, 0, 0, 0, 0))
            continue
        r_x, r_y = torch.randint(w, (1,)), torch.randint(h, (1,))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * w), int(r * h)
        x1, y1 = int(torch.clamp(r_x - r_w_half, min=0)), int(torch.clamp(r_y - r_h_half, min=0))
        x2, y2 = int(torch.clamp(r_x + r_w_half, max=w)), int(torch.clamp(r_y + r_h_half, max=h))
        out.append((2, float(1.0 - (x2 - x1) * (y2 - y1) / (w * h)), y1, y2, x1, x2))
    return out


def mix():
    for ma, ca in ((0.2, 1.0), (0.8, 0.0), (0.0, 1.0)):
        ours = [tuple(float(x) for x in line.split()) for line in dump("mix", ma, ca, 176, 160, N, 9)]
        theirs = reference_mix(ma, ca, 176, 160, N)
        what = "mixup_alpha %g cutmix_alpha %g" % (ma, ca)
        homogeneous([int(o[0]) for o in ours], [t[0] for t in theirs], what + ": which")
        for kind in (1, 2):
            o = [x[1] for x in ours if x[0] == kind]
            t = [x[1] for x in theirs if x[0] == kind]
            if t:
                homogeneous(binned(o, 0, 1), binned(t, 0, 1), what + ": lam of " + ("mixup", "cutmix")[kind - 1])
        cut = [x for x in ours if x[0] == 2]
        check(all(abs(x[1] - (1 - (x[5] - x[4]) * (x[3] - x[2]) / (176 * 160))) < 1e-15 for x in cut),
              what + ": cutmix's lam is 1 - box area / image area")


def main():
    spaces()
    policies()
    jitter()
    erase()
    mix()
    if FAILS:
        print("%d failed" % len(FAILS))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
