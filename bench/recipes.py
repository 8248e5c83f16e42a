#!/usr/bin/python3
"""Recipes (issue 30): torchvision's classification reference recipe (the
IMAGENET1K_V2 weights': train crop 176, TrivialAugmentWide bilinear,
RandomErasing 0.1, MixUp 0.2 or CutMix 1.0 per batch), served by bfeed and
by a PyTorch DataLoader running the same torchvision transforms (2 workers,
the mix in the main process as the reference's collate_fn does, ending in
bf16); beside them bfeed's plain train at the same size, and eval at 224
after Resize(232, bicubic) against Resize(256, bilinear).

Rounds alternate the cases (ABCDE, BCDEA, ...); medians are quoted, with
the ratios the issue asks for. Run it alone: it prints the load average
and the busiest processes before and after.

    bench/recipes.py BUILD_BIN DATASET_DIR [--rounds 5] [--batch 50] [--epochs 10]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_util import quiet_report, start_daemon

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
RECIPE = ["--auto-augment", "ta_wide", "--aa-interpolation", "bilinear", "--random-erase", "0.1",
          "--mixup-alpha", "0.2", "--cutmix-alpha", "1"]


def peer(root, batch, epochs, workers):
    """The DataLoader with the reference recipe; prints one JSON line."""
    import torch
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset
    from torchvision import transforms as T

    class Folder(Dataset):
        def __init__(self):
            self.files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs
                                if f.lower().endswith((".jpg", ".jpeg")))
            self.labels = [0] * len(self.files)
            self.tf = T.Compose([T.RandomResizedCrop(176, interpolation=T.InterpolationMode.BILINEAR),
                                 T.RandomHorizontalFlip(0.5),
                                 T.TrivialAugmentWide(interpolation=T.InterpolationMode.BILINEAR),
                                 T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
                                 T.RandomErasing(0.1)])

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            with open(self.files[i], "rb") as fh:
                return self.tf(Image.open(fh).convert("RGB")), i % 100

    def mix(batch, target):
        """references/classification/transforms.py RandomMixup(0.2) /
        RandomCutmix(1.0), p = 1, one chosen per batch (RandomChoice)."""
        import math
        target = torch.nn.functional.one_hot(target, 100).to(batch.dtype)
        lam = float(torch._sample_dirichlet(torch.tensor([0.2, 0.2] if torch.rand(1) < 0.5 else [1.0, 1.0]))[0])
        xr, yr = batch.roll(1, 0), target.roll(1, 0)
        if torch.rand(1) < 0.5:
            batch.mul_(lam).add_(xr.mul_(1.0 - lam))
        else:
            H, W = batch.shape[-2:]
            rx, ry = int(torch.randint(W, (1,))), int(torch.randint(H, (1,)))
            r = 0.5 * math.sqrt(1.0 - lam)
            x1, y1 = max(rx - int(r * W), 0), max(ry - int(r * H), 0)
            x2, y2 = min(rx + int(r * W), W), min(ry + int(r * H), H)
            batch[:, :, y1:y2, x1:x2] = xr[:, :, y1:y2, x1:x2]
            lam = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        target.mul_(lam).add_(yr.mul_(1.0 - lam))
        return batch, target

    def collate(samples):
        from torch.utils.data import default_collate
        x, y = mix(*default_collate(samples))
        return x.to(torch.bfloat16), y

    torch.set_num_threads(1)
    dl = DataLoader(Folder(), batch_size=batch, num_workers=workers, drop_last=True, shuffle=True,
                    persistent_workers=workers > 0, collate_fn=collate)
    n, t0 = 0, None
    for ep in range(epochs + 1):  # epoch 0 warms the workers up
        if ep == 1:
            t0, n = time.perf_counter(), 0
        for x, y in dl:
            assert x.dtype == torch.bfloat16 and x.shape[1:] == (3, 176, 176) and y.shape[1] == 100
            n += x.shape[0]
    print(json.dumps({"samples": n, "samples_per_s": n / (time.perf_counter() - t0)}))


def run_bench(binp, addr, batch, epochs, opts):
    out = subprocess.run([os.path.join(binp, "bfeed"), "bench", "--connect", addr, "--dataset", "imagenet",
                          "--batch", str(batch), "--epochs", str(epochs), "--json"] + opts,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError("bfeed bench %s: %s" % (" ".join(opts), out.stderr))
    return json.loads(out.stdout)["samples_per_s"]


def run_peer(root, batch, epochs):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "peer", root, "--batch", str(batch),
                          "--epochs", str(epochs)], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError("torch peer: %s" % out.stderr)
    return json.loads(out.stdout)["samples_per_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin", help='the build\'s bin/ ("peer": run the DataLoader alone, as the rounds do)')
    ap.add_argument("dataset")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=10, help="bfeed's epochs per run")
    ap.add_argument("--peer-epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.bin == "peer":
        return peer(a.dataset, a.batch, a.epochs, a.workers)
    quiet_report()
    d, addr = start_daemon(a.bin, a.dataset, a.workers, "bfeed-recipes-bench-")
    B, E = a.batch, a.epochs
    cases = [
        ("bfeed train 176", lambda: run_bench(a.bin, addr, B, E, ["--mode", "train", "--size", "176"])),
        ("bfeed recipe 176", lambda: run_bench(a.bin, addr, B, E, ["--mode", "train", "--size", "176"] + RECIPE)),
        ("torch recipe 176", lambda: run_peer(a.dataset, B, a.peer_epochs)),
        ("bfeed eval 224 @256 bilinear", lambda: run_bench(a.bin, addr, B, E, ["--mode", "eval", "--size", "224"])),
        ("bfeed eval 224 @232 bicubic", lambda: run_bench(a.bin, addr, B, E, ["--mode", "eval", "--size", "224",
                                                                             "--resize", "232",
                                                                             "--interpolation", "bicubic"])),
    ]
    res = {name: [] for name, _ in cases}
    try:
        run_bench(a.bin, addr, B, 1, ["--size", "176"])  # the page cache
        for r in range(a.rounds):
            order = cases[r % len(cases):] + cases[:r % len(cases)]
            for name, run in order:
                res[name].append(run())
                print("round %d  %-30s %8.1f samples/s" % (r + 1, name, res[name][-1]), flush=True)
    finally:
        d.terminate()
        d.wait()
    med = {name: statistics.median(v) for name, v in res.items()}
    print("\nmedians over %d rounds (batches of %d; bfeedd --workers %d; the peer %d workers):" %
          (a.rounds, B, a.workers, a.workers))
    for name, _ in cases:
        print("%-30s %8.1f samples/s  (%s)" % (name, med[name], ", ".join("%.1f" % x for x in res[name])))
    def ratio(a, b):
        """The median of the round-by-round ratios, and the ratio of the medians."""
        return statistics.median(x / y for x, y in zip(res[a], res[b])), med[a] / med[b]
    for what, a, b in (("recipe: bfeed / torch", "bfeed recipe 176", "torch recipe 176"),
                       ("recipe: bfeed recipe / bfeed plain train", "bfeed recipe 176", "bfeed train 176"),
                       ("eval: 232 bicubic / 256 bilinear", "bfeed eval 224 @232 bicubic",
                        "bfeed eval 224 @256 bilinear")):
        print("%s: %.2f by round (median), %.2f of the medians" % ((what,) + ratio(a, b)))
    quiet_report()


if __name__ == "__main__":
    sys.exit(main())
