"""Recipes end to end (README "Recipes"): the daemon's ColorJitter,
AutoAugment / RandAugment / TrivialAugmentWide, RandomErasing, MixUp and
CutMix, served through the real daemon, replayed with torchvision's own
functional ops on the fixtures' PIL images from what each batch's `explain`
tensor says was drawn, and compared bit for bit after .to(bfloat16).

The draws themselves come from bfeed's Philox streams, not torch's
generator: no one can reproduce torch's numbers, so what is checked is that
the pixels are torchvision's for the drawn parameters (here), that the
draws follow torchvision's distributions (the C test augment_draws, and
the frequencies below), and that a batch is a pure function of its seed,
epoch and index (below)."""
import json
import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms.autoaugment import _apply_op

import bfeed

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
INTERP = {"nearest": T.InterpolationMode.NEAREST, "bilinear": T.InterpolationMode.BILINEAR,
          "bicubic": T.InterpolationMode.BICUBIC}


def explain(b):
    """What the batch drew, through Batch.params and Batch.mix; the raw
    tensor is that JSON."""
    raw = json.loads(bytes(b.numpy("explain")).decode())
    assert raw["samples"] == b.params and raw["mix"] == b.mix and (raw["epoch"], raw["index"]) == (b.epoch, b.index)
    return {"samples": b.params, "mix": b.mix}


def replay_sample(path, s, size, opts):
    """One sample's float32 CHW tensor, as the reference recipe computes
    it for the parameters the daemon drew."""
    img = Image.open(path).convert("RGB")
    top, left, h, w = s["crop"]
    img = F.resized_crop(img, top, left, h, w, list(size), INTERP[opts.get("interpolation", "bilinear")])
    if s["flip"]:
        img = F.hflip(img)
    for name, f in s.get("jitter", []):
        img = getattr(F, "adjust_" + name)(img, f)
    fill = list(opts["aa_fill"]) if "aa_fill" in opts else None
    for name, m in s.get("ops", []):
        img = _apply_op(img, name, m, interpolation=INTERP[opts.get("aa_interpolation", "nearest")], fill=fill)
    x = F.normalize(F.to_tensor(img), list(MEAN), list(STD))
    if s.get("erase"):
        i, j, h, w = s["erase"]
        v = torch.tensor(opts.get("erase_value", (0.0, 0.0, 0.0)), dtype=torch.float32)[:, None, None]
        x = F.erase(x, i, j, h, w, v)
    return x


def replay_batch(paths, e, size, opts, classes, labels):
    """The batch and its targets as RandomMixup / RandomCutmix of
    references/classification/transforms.py compute them for lam and the box."""
    x = torch.stack([replay_sample(paths[s["index"]], s, size, opts) for s in e["samples"]])
    y = torch.nn.functional.one_hot(torch.tensor(labels), classes).to(torch.float32)
    mix = e.get("mix")
    if mix and mix["kind"] == "mixup":
        lam = mix["lam"]
        xr, yr = x.roll(1, 0), y.roll(1, 0)
        xr.mul_(1.0 - lam)
        x.mul_(lam).add_(xr)
        yr.mul_(1.0 - lam)
        y.mul_(lam).add_(yr)
    elif mix and mix["kind"] == "cutmix":
        y1, y2, x1, x2 = mix["box"]
        xr, yr = x.roll(1, 0), y.roll(1, 0)
        x[:, :, y1:y2, x1:x2] = xr[:, :, y1:y2, x1:x2]
        lam = float(1.0 - (x2 - x1) * (y2 - y1) / (size[0] * size[1]))
        assert lam == mix["lam"]
        yr.mul_(1.0 - lam)
        y.mul_(lam).add_(yr)
    return x.to(torch.bfloat16), y


def same_bits(a, b):
    return torch.equal(a.view(torch.int16), b.view(torch.int16))


RECIPES = {
    "jitter": dict(color_jitter=(0.4, 0.4, 0.4, 0.1)),
    "jitter-brightness-hue": dict(color_jitter=(0.8, 0.0, 0.0, 0.5)),
    "autoaugment": dict(auto_augment="imagenet"),
    "randaugment": dict(auto_augment="rand", aa_num_ops=3, aa_magnitude=12, aa_bins=31),
    "randaugment-bilinear-fill": dict(auto_augment="rand", aa_num_ops=2, aa_magnitude=9,
                                      aa_interpolation="bilinear", aa_fill=(128.0, 64.0, 0.0)),
    "trivialaugment": dict(auto_augment="ta_wide"),
    "trivialaugment-bicubic": dict(auto_augment="ta_wide", aa_interpolation="bicubic", aa_bins=11),
    "erase": dict(random_erase=0.9, erase_value=(0.5, -1.0, 2.0)),
    "mixup": dict(mixup_alpha=0.2, random_erase=0.5),
    "cutmix": dict(cutmix_alpha=1.0),
    "everything": dict(color_jitter=(0.3, 0.3, 0.3, 0.05), auto_augment="ta_wide", random_erase=0.25,
                       mixup_alpha=0.2, cutmix_alpha=1.0),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_replays_bit_exact(daemon, data, name):
    """Each recipe over 6 epochs of the fixtures at 56 x 72, NCHW: every
    served value is the reference's for the drawn parameters, and the
    targets too when the batch is mixed."""
    opts = RECIPES[name]
    paths = data["images"]
    n, size = len(paths), (56, 72)
    mixed = "mixup_alpha" in opts or "cutmix_alpha" in opts
    kinds = set()
    with bfeed.connect(daemon.addr) as c:
        with c.stream("fx", batch=n, size=size, seed=11, explain=True, epochs=6, **opts) as s:
            for b in s:
                e = explain(b)
                labels = b.torch("label").tolist()
                assert labels == [s["index"] for s in e["samples"]]  # one class per file
                want, target = replay_batch(paths, e, size, opts, n, labels)
                got = b.torch("image")
                assert same_bits(got, want), (name, e, (got.float() - want.float()).abs().max())
                if mixed:
                    kinds.add(e["mix"]["kind"])
                    assert torch.equal(b.torch("target"), target), (e["mix"], b.torch("target"), target)
                else:
                    assert "target" not in b.names() and e["mix"] == {"kind": None, "lam": 1.0, "box": None}
    if name == "everything":
        assert kinds == {"mixup", "cutmix"}  # one of the two per batch, both seen in 6


def test_nhwc_and_mix_classes(daemon, data):
    """NHWC is the NCHW batch permuted, value for value; mix_classes widens
    the target with zero columns."""
    opts = dict(auto_augment="rand", random_erase=0.7, cutmix_alpha=1.0, mixup_alpha=0.5, seed=5, epochs=1)
    n = len(data["images"])
    with bfeed.connect(daemon.addr) as c:
        with c.stream("fx", batch=n, size=48, **opts) as s:
            a = next(s)
        with c.stream("fx", batch=n, size=48, layout="nhwc", mix_classes=10, **opts) as s:
            b = next(s)
    assert same_bits(b.torch("image").permute(0, 3, 1, 2), a.torch("image"))
    assert b.torch("target").shape == (n, 10)
    assert torch.equal(b.torch("target")[:, :n], a.torch("target"))
    assert not b.torch("target")[:, n:].any()


def test_same_batch_whatever_the_worker_transport_and_daemons(daemon, data, two_daemons):
    """A recipe's batch is a pure function of (options, seed, epoch, batch
    index): the same bytes and targets from 2 workers or 1, over shared
    memory or the socket, zstd on the wire, spread over two daemons, and
    from a stream that starts at a later epoch; and an identical stream
    beside it (shared batches) gets them too."""
    opts = dict(color_jitter=(0.4, 0.4, 0.4, 0.1), auto_augment="imagenet", random_erase=0.5, erase_random=True,
                mixup_alpha=0.2, cutmix_alpha=1.0, batch=2, size=40, seed=9, explain=True)
    a, b = two_daemons

    def read(addr, connect=None, **kw):
        with bfeed.connect(addr, **(connect or {})) as c, c.stream("fx", **dict(opts, **kw)) as s:
            return [(x.epoch, x.index, x.torch("image").view(torch.int16).clone(), x.torch("target").clone(),
                     x.mix, x.params) for x in s]

    want = read(daemon.addr, epochs=3)
    assert len(want) == 6
    for got in (read(a.addr, epochs=3), read(daemon.addr, dict(shm=False), epochs=3),
                read(daemon.addr, dict(shm=False), epochs=3, codec="zstd"),
                read(daemon.addr, dict(shm=False), epochs=3, codec="lz4"),
                read(a.addr + "," + b.addr, epochs=3)):
        assert len(got) == 6
        for x, y in zip(want, got):
            assert x[:2] == y[:2] and torch.equal(x[2], y[2]) and torch.equal(x[3], y[3]) and x[4:] == y[4:]
    later = read(daemon.addr, epoch=2, epochs=1)
    for x, y in zip(want[4:], later):
        assert x[:2] == y[:2] and torch.equal(x[2], y[2]) and torch.equal(x[3], y[3])
    with bfeed.connect(daemon.addr) as c, c.stream("fx", epochs=3, **opts) as s1, \
            c.stream("fx", epochs=3, **opts) as s2:
        for x in want:
            for s in (s1, s2):
                y = next(s)
                assert torch.equal(x[2], y.torch("image").view(torch.int16)) and torch.equal(x[3], y.torch("target"))
        shared = s1.stats()["batches_shared"] + s2.stats()["batches_shared"]
    assert shared > 0


def test_codec_u8_carries_the_policy(daemon, data):
    """Codec u8 sends the 8-bit pixels after the crop, flip, jitter and
    policy (before Normalize): expanded, the same bf16 as codec none."""
    opts = dict(batch=4, size=48, seed=1, color_jitter=(0.3, 0.3, 0.3, 0.1), auto_augment="ta_wide", epochs=2)
    with bfeed.connect(daemon.addr, shm=False) as c:
        with c.stream("fx", codec="none", **opts) as s:
            none = [x.torch("image").view(torch.int16).clone() for x in s]
        with c.stream("fx", codec="u8", **opts) as s:
            u8 = [x.torch("image").view(torch.int16).clone() for x in s]
    assert len(none) == 2 and all(torch.equal(x, y) for x, y in zip(none, u8))


def test_random_erase_values_are_standard_normal(daemon, data):
    """erase_random: the box holds standard normal values (as normal_()'s
    distribution; its numbers no one can reproduce), everything outside it
    is the reference's."""
    paths, n, size = data["images"], len(data["images"]), (64, 64)
    opts = dict(random_erase=1.0, erase_random=True, erase_scale=(0.3, 0.4))
    inside = []
    with bfeed.connect(daemon.addr) as c, c.stream("fx", batch=n, size=size, seed=2, explain=True, epochs=4,
                                                   **opts) as s:
        for b in s:
            e = explain(b)
            got = b.torch("image").float()
            for k, smp in enumerate(e["samples"]):
                i, j, h, w = smp["erase"]
                want = replay_sample(paths[smp["index"]], dict(smp, erase=None), size, opts).to(torch.bfloat16)
                mask = torch.ones(size, dtype=torch.bool)
                mask[i:i + h, j:j + w] = False
                assert same_bits(got[k][:, mask].to(torch.bfloat16), want[:, mask])
                inside.append(got[k][:, i:i + h, j:j + w].flatten())
    v = torch.cat(inside).double()
    assert v.numel() > 20000
    assert abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05, (v.mean(), v.std())


def test_draw_frequencies(daemon):
    """Over 1600 samples: flips at hflip's p, boxes erased at most at p
    (get_params gives up after 10 tries), RandomErasing's area in its
    scale range, the MixUp / CutMix choice even, lam's mean that of
    Beta(a, a) (1/2) for MixUp."""
    flips = erased = batches = cut = 0
    lams = []
    with bfeed.connect(daemon.addr) as c, c.stream("fx", batch=4, size=32, seed=4, epochs=400, hflip=0.3,
                                                   random_erase=0.6, mixup_alpha=0.4, cutmix_alpha=0.4,
                                                   explain=True) as s:
        for b in s:
            e = explain(b)
            batches += 1
            cut += e["mix"]["kind"] == "cutmix"
            if e["mix"]["kind"] == "mixup":
                lams.append(e["mix"]["lam"])
            for smp in e["samples"]:
                flips += smp["flip"]
                if smp["erase"]:
                    erased += 1
                    _, _, h, w = smp["erase"]
                    assert 0.02 * 32 * 32 * 0.5 <= h * w <= 0.33 * 32 * 32 * 1.5
    n = batches * 4
    sd = math.sqrt(n * 0.3 * 0.7)
    assert abs(flips - 0.3 * n) < 4.5 * sd, (flips, n)
    assert 0.45 * n < erased <= 0.6 * n + 4.5 * math.sqrt(n * 0.24), (erased, n)
    assert abs(cut - batches / 2) < 4.5 * math.sqrt(batches / 4), (cut, batches)
    assert abs(np.mean(lams) - 0.5) < 4.5 * math.sqrt(1 / (4 * (2 * 0.4 + 1)) / len(lams)), np.mean(lams)


def test_refusals_name_the_option(daemon):
    """Recipe options a stream cannot take: InvalidError naming them."""
    with bfeed.connect(daemon.addr) as c:
        with c.stream("fx", batch=2, size=32, auto_augment="rand") as s:
            with pytest.raises(AttributeError, match="explain=True"):
                next(s).params
        for kw, words in ((dict(mode="eval", auto_augment="rand"), "train transforms"),
                          (dict(auto_augment="rand", aa_magnitude=31), "aa-magnitude 31"),
                          (dict(codec="u8", random_erase=0.5), "codec u8"),
                          (dict(mixup_alpha=0.2, mix_classes=2), "mix-classes 2"),
                          (dict(color_jitter=(0.1, 0.1, 0.1, 0.6)), "color-jitter")):
            with pytest.raises(bfeed.InvalidError) as e:
                c.stream("fx", **kw)
            assert words in e.value.message, e.value.message
        with pytest.raises(bfeed.InvalidError) as e:
            c.stream("npy", mixup_alpha=0.2)
        assert "mixup-alpha" in e.value.message and "npy" in e.value.message, e.value.message


def test_augment_stage_is_timed(daemon):
    """The recipe's time is the stream's augment stage (bfeed top, stats):
    some with a policy, none without one."""
    with bfeed.connect(daemon.addr) as c:
        for opts, timed in ((dict(auto_augment="imagenet", random_erase=0.5, mixup_alpha=0.2), True), ({}, False)):
            with c.stream("fx", batch=4, size=96, epochs=20, **opts) as s:
                for _ in s:
                    pass
                st = s.stats()
            assert (st["augment_us"] > 0) == timed, st
            assert st["read_us"] > 0 and st["batch_us"] > 0


def test_preview_contact_sheet(daemon, tmp_path):
    """bfeed preview writes a PNG (decoded here by Pillow): each cell is the
    batch's sample un-normalised, (x * std + mean) * 255 rounded, as the
    same stream serves it; under it one caption line per thing drawn
    (crop and flip, jitter, each op, the box), ink on exactly those lines."""
    import os
    import subprocess
    opts = ["--batch", "2", "--size", "48,64", "--seed", "7", "--auto-augment", "rand", "--aa-num-ops", "3",
            "--color-jitter", "0.4,0.4,0.4,0.1", "--random-erase", "0.6", "--cutmix-alpha", "1"]
    out = tmp_path / "sheet.png"
    r = subprocess.run([os.environ["BFEED"], "preview", "--connect", daemon.addr, "--dataset", "fx", *opts,
                        "--batch-index", "1", "--columns", "2", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    sheet = np.asarray(Image.open(out).convert("RGB"))
    with bfeed.connect(daemon.addr) as c, c.stream("fx", batch=2, size=(48, 64), seed=7, auto_augment="rand",
                                                   aa_num_ops=3, color_jitter=(0.4, 0.4, 0.4, 0.1),
                                                   random_erase=0.6, cutmix_alpha=1.0, explain=True,
                                                   start_batch=1) as s:
        b = next(s)
    x = b.torch("image").float()
    mean, std = torch.tensor(MEAN)[:, None, None], torch.tensor(STD)[:, None, None]
    want = ((x * std + mean) * 255).clamp(0, 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    pad, line, cw, H, W = 6, 9, 240, 48, 64
    lines = max(1 + ("jitter" in p) + len(p["ops"]) + bool(p["erase"]) for p in b.params)
    top, ch = line + 2 * pad, H + pad + lines * line + pad
    assert sheet.shape == (top + ch, pad + 2 * (cw + pad), 3)
    assert (sheet[pad:pad + 7] < 128).any()  # the header: epoch, batch, cutmix lam
    for i, p in enumerate(b.params):
        x0, y0 = pad + i * (cw + pad), top
        assert np.array_equal(sheet[y0:y0 + H, x0:x0 + W], want[i]), i
        n = 1 + ("jitter" in p) + len(p["ops"]) + bool(p["erase"])
        for k in range(lines):
            y = y0 + H + pad + k * line
            assert (sheet[y:y + 7, x0:x0 + cw] < 128).any() == (k < n), (i, k, n, p)
    r = subprocess.run([os.environ["BFEED"], "preview", "--connect", daemon.addr, "--dataset", "npy", "--batch", "4",
                        "--batch-index", "0", "--out", str(tmp_path / "npy.png")], capture_output=True, text=True)
    assert r.returncode == 1 and "image" in r.stderr, r.stderr


def test_packs_serve_the_same_recipe(data, tmp_path):
    """A recipe on `bfeed pack`'s packs (raw pixels, original JPEGs): the
    folder's batches, byte for byte."""
    import subprocess
    from conftest import _binary
    from oracle_util import Daemon
    fx = data["datasets"][0].split("=", 1)[1]
    for images in ("raw", "original"):
        subprocess.run([_binary("BFEED"), "pack", fx, str(tmp_path / images), "--images", images], check=True,
                       capture_output=True)
    d = Daemon(_binary("BFEEDD"), str(tmp_path), ["fx=" + fx, "raw=pack:%s" % (tmp_path / "raw"),
                                                  "jpeg=pack:%s" % (tmp_path / "original")])
    opts = dict(color_jitter=(0.4, 0.4, 0.4, 0.1), auto_augment="rand", random_erase=0.5, mixup_alpha=0.2,
                cutmix_alpha=1.0, batch=2, size=40, seed=9, epochs=3)
    try:
        got = {}
        with bfeed.connect(d.addr) as c:
            for name in ("fx", "raw", "jpeg"):
                with c.stream(name, **opts) as s:
                    got[name] = [(x.torch("image").view(torch.int16).clone(), x.torch("target").clone()) for x in s]
    finally:
        d.kill()
    assert len(got["fx"]) == 6
    for name in ("raw", "jpeg"):
        assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(got["fx"], got[name])), name
