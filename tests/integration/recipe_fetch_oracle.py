"""The recipes' geometry through the whole path (bfeedd on a real socket,
libbfeed, `bfeed fetch`'s .npy files) against torchvision 0.14 itself.

A temporary ImageFolder holds the fixture JPEGs (one class per file) and a
1600x1200 JPEG; torchvision.datasets.ImageFolder over the same folder, with
each reference transform, is the oracle:

- eval with torchvision's weights preset ResNet50_Weights.IMAGENET1K_V2
  .transforms() (ImageClassification: Resize(232, BILINEAR), CenterCrop(224),
  the float conversion and Normalize): the stream is opened with the
  preset's own resize_size, crop_size, interpolation, mean and std, and
  each served bf16 value must be the preset's float32 value cast to
  bfloat16, bit for bit;
- eval Resize(232, BICUBIC) + CenterCrop(224), Resize(200, NEAREST) +
  CenterCrop((160, 224)), and a crop larger than the resized image
  (F.center_crop's zero padding), raw pixels (normalize none), the
  non-square one also through codec u8 over the socket;
- train, the default (train_decode exact) and with the recipe options
  (size H,W, bicubic, crop_ratio, hflip 1): each sample must be
  F.resized_crop of ImageFolder's image with the crop box that
  sample_dump's `load` (sample_load, the same seed, epoch and index: the
  daemon's draws, which crop_oracle.py checks against RandomResizedCrop's
  get_params) reports, and, with hflip 1, mirrored; --train-decode fast must
  equal sample_dump's DCT-scaled crops and differ from torchvision on the
  large JPEG.
Any mismatch fails; torch, torchvision, Pillow and numpy are required.

usage: recipe_fetch_oracle.py BFEEDD BFEED SAMPLE_DUMP FIXTURE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.datasets import ImageFolder
from torchvision.models import ResNet50_Weights

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from image_oracle import Dump  # noqa: E402
from oracle_util import Daemon, check, failures  # noqa: E402

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
         "nearest": T.InterpolationMode.NEAREST}


def fetch(bfeed, addr, out, n, *opts):
    """Batch 0 of a stream of all n samples in dataset order, as arrays."""
    cmd = [bfeed, "fetch", "--connect", addr, "--dataset", "fx", "--batch", str(n), "--shuffle", "off",
           "--batch-index", "0", "--out", out] + [str(o) for o in opts]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode()))
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    return meta, {t["name"]: np.load(os.path.join(out, t["file"])) for t in meta["tensors"]}


def pixels(a):
    """bf16 bit patterns of raw 0..255 values, NCHW, as uint8 NHWC."""
    return (a.astype(np.uint32) << 16).view(np.float32).astype(np.uint8).transpose(0, 2, 3, 1)


def check_preset(bfeed, addr, folder, tmp, n):
    preset = ResNet50_Weights.IMAGENET1K_V2.transforms()
    interp = {v: k for k, v in MODES.items()}[preset.interpolation]
    ds = ImageFolder(folder, transform=preset)
    opts = ["--mode", "eval", "--resize", preset.resize_size[0], "--size", preset.crop_size[0],
            "--interpolation", interp, "--mean", ",".join(repr(m) for m in preset.mean),
            "--std", ",".join(repr(s) for s in preset.std)]
    meta, got = fetch(bfeed, addr, os.path.join(tmp, "preset"), n, *opts)
    want = torch.stack([ds[i][0] for i in range(n)]).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    same = got["image"].shape == want.shape and np.array_equal(got["image"], want)
    check(same, "ResNet50_Weights.IMAGENET1K_V2.transforms() (Resize(%d, %s), CenterCrop(%d), Normalize): %d images, "
          "bf16 bit for bit" % (preset.resize_size[0], interp, preset.crop_size[0], n))
    check(got["label"].tolist() == [ds[i][1] for i in range(n)], "the preset's labels are ImageFolder's")


def check_eval(bfeed, addr, folder, tmp, n):
    cases = [(232, "bicubic", (224, 224), ()), (200, "nearest", (160, 224), ()),
             (200, "nearest", (160, 224), ("--codec", "u8", "--no-shm")), (150, "bilinear", (224, 300), ())]
    for k, (resize, interp, (h, w), extra) in enumerate(cases):
        ref = T.Compose([T.Resize(resize, MODES[interp]), T.CenterCrop((h, w)), T.PILToTensor()])
        ds = ImageFolder(folder, transform=ref)
        meta, got = fetch(bfeed, addr, os.path.join(tmp, "eval%d" % k), n, "--mode", "eval", "--normalize", "none",
                          "--resize", resize, "--interpolation", interp, "--size", "%d,%d" % (h, w), *extra)
        want = torch.stack([ds[i][0] for i in range(n)]).permute(0, 2, 3, 1).numpy()
        img = pixels(got["image"])
        sizes = [F._compute_resized_output_size(Image.open(p).size[::-1], [resize]) for p, _ in ds.samples]
        padded = sum(rh < h or rw < w for rh, rw in sizes)
        check(img.shape == want.shape and np.array_equal(img, want) and meta["width"] == w,
              "eval Resize(%d, %s) + CenterCrop((%d, %d))%s: %d images exact (%d padded)" % (
                  resize, interp, h, w, " " + " ".join(extra) if extra else "", n, padded))
        if resize == 150:
            check(padded == n, "Resize(150) + CenterCrop((224, 300)) pads every image")


def check_train(bfeed, addr, dump, folder, tmp, n):
    paths = [p for p, _ in ImageFolder(folder).samples]
    bits = lambda *xs: " ".join("%08x" % int(np.array(np.float32(x)).view(np.uint32)) for x in xs)  # noqa: E731
    cases = [("default", (64, 64), "bilinear", (3 / 4, 4 / 3), 0.5, 0, ()),
             ("recipe", (160, 224), "bicubic", (0.5, 2.0), 1.0, 0,
              ("--interpolation", "bicubic", "--crop-ratio", "0.5,2", "--hflip", "1")),
             ("fast", (64, 64), "bilinear", (3 / 4, 4 / 3), 0.5, 1, ("--train-decode", "fast"))]
    for name, (h, w), interp, ratio, p, dct, extra in cases:
        _, got = fetch(bfeed, addr, os.path.join(tmp, "train_" + name), n, "--mode", "train", "--seed", 5,
                       "--normalize", "none", "--size", "%d,%d" % (h, w), *extra)
        img = pixels(got["image"])
        dump.ask("geom %d %d 0" % (w, list(MODES).index(interp)))
        dump.ask("rrcp %s" % bits(0.08, 1.0, ratio[0], ratio[1], p))
        same_dump = differs_tv = exact_tv = flips = 0
        for i, path in enumerate(paths):
            ours = dump.ask("load %d %d train 5 %d %s" % (h, dct, i, path))
            x, y, cw, ch, flip = dump.crop
            ref = F.resized_crop(Image.open(path).convert("RGB"), y, x, ch, cw, [h, w], MODES[interp])
            ref = np.asarray(F.hflip(ref) if flip else ref)
            same_dump += np.array_equal(img[i], ours.reshape(h, w, 3))
            exact_tv += np.array_equal(img[i], ref)
            differs_tv += not np.array_equal(img[i], ref)
            flips += flip
        if p == 1.0:
            check(flips == n, "train %s: hflip 1 flipped %d of %d samples" % (name, flips, n))
        check(same_dump == n, "train %s: %d of %d samples are sample_load's (same seed, epoch, index)" % (
            name, same_dump, n))
        if dct:
            check(differs_tv > 0, "train %s: %d of %d samples differ from torchvision (crops at least 4x the "
                  "output, decoded at a reduced IDCT scale)" % (name, differs_tv, n))
        else:
            check(exact_tv == n, "train %s %dx%d %s ratio %s p %g: %d of %d samples are torchvision's "
                  "F.resized_crop (+ hflip) of the crop box" % (name, h, w, interp, ratio, p, exact_tv, n))


def main():
    bfeedd, bfeed, sample_dump, fixtures = sys.argv[1:5]
    files = sorted(f for f in os.listdir(fixtures) if f.lower().endswith((".jpeg", ".jpg")))
    with tempfile.TemporaryDirectory(prefix="bfeed-recipe-oracle-") as tmp:
        folder = os.path.join(tmp, "data")
        for f in files:
            os.makedirs(os.path.join(folder, os.path.splitext(f)[0]))
            os.symlink(os.path.join(os.path.abspath(fixtures), f), os.path.join(folder, os.path.splitext(f)[0], f))
        os.makedirs(os.path.join(folder, "zz_large"))  # large: fast's IDCT scaling shows there
        Image.open(os.path.join(fixtures, files[0])).convert("RGB").resize((1600, 1200), Image.BICUBIC).save(
            os.path.join(folder, "zz_large", "large.jpg"), quality=92)
        n = len(files) + 1
        daemon = Daemon(bfeedd, tmp, ["fx=" + folder])
        dump = Dump(sample_dump)
        try:
            check_preset(bfeed, daemon.addr, folder, tmp, n)
            check_eval(bfeed, daemon.addr, folder, tmp, n)
            check_train(bfeed, daemon.addr, dump, folder, tmp, n)
        except Exception as e:  # a crash is a failure, with its reason
            check(False, "recipe oracle ran: %r" % e)
        finally:
            dump.close()
            err = daemon.stop()
            check(err is None, "bfeedd stopped cleanly%s" % ("" if err is None else ": " + err + "\n" + daemon.log()))
    print("%d check(s) failed" % len(failures) if failures else "recipe_fetch_oracle: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
