"""The stream option crop_scale (RandomResizedCrop's scale=) from Python to
the daemon's crops, against Pillow.

With scale=(1, 1) every try asks for the image's whole area at a random
aspect ratio r in 3/4..4/3: w = round(sqrt(A r)), h = round(sqrt(A / r))
fits only for the few r near the image's own ratio, and otherwise
torchvision falls back to the centre crop clamped to ratios 3/4..4/3 (the
whole image when its ratio is in that range). So whatever the draws, the
box is one of a handful, enumerated here from torchvision's rule (a dense
sweep of r, every offset a fitting size allows, and the fallback), and
each train sample must be Pillow's crop of one of them resized to S x S
(BILINEAR, as RandomResizedCrop does), mirrored or not (the flip). The
default range (0.08, 1) gives other crops. The option is
also in the fingerprint (test_select checks the C side), and refused out
of range with a message naming it."""
import math

import numpy as np
import pytest
import torchvision.transforms as T
from PIL import Image

import bfeed

SIZE = 160  # train decodes at full size (train_decode exact, the default): Pillow-exact


def whole_area_boxes(w, h):
    """Every (left, top, cw, ch) RandomResizedCrop(scale=(1, 1)) can give a
    w x h image: the tries' sizes that fit (r swept densely over its log
    range, as the draw is log-uniform) at each offset, and the fallback."""
    area, sizes = w * h, set()
    for k in range(200001):
        r = math.exp(math.log(3 / 4) + (math.log(4 / 3) - math.log(3 / 4)) * k / 200000)
        cw, ch = int(round(math.sqrt(area * r))), int(round(math.sqrt(area / r)))
        if 0 < cw <= w and 0 < ch <= h:
            sizes.add((cw, ch))
    boxes = {(left, top, cw, ch) for cw, ch in sizes for left in range(w - cw + 1) for top in range(h - ch + 1)}
    ratio = w / h  # the fallback, as torchvision writes it
    cw, ch = (w, int(round(w / (3 / 4)))) if ratio < 3 / 4 else (int(round(h * 4 / 3)), h) if ratio > 4 / 3 else (w, h)
    return boxes | {((w - cw) // 2, (h - ch) // 2, cw, ch)}


def whole_area_refs(paths):
    """Each fixture's possible samples: Pillow's crop of each possible box
    resized to S x S, as uint8 HWC."""
    refs = {}
    for i, p in enumerate(paths):
        img = Image.open(p).convert("RGB")
        boxes = whole_area_boxes(*img.size)
        assert len(boxes) <= 8, "%s: scale=(1, 1) allows %d boxes" % (p, len(boxes))
        for _ in range(300):  # torchvision itself never gives a box outside them
            top, left, ch, cw = T.RandomResizedCrop.get_params(img, [1.0, 1.0], [3 / 4, 4 / 3])
            assert (left, top, cw, ch) in boxes, "%s: torchvision gave %s" % (p, (left, top, cw, ch))
        refs[i] = [np.asarray(img.crop((x, y, x + cw, y + ch)).resize((SIZE, SIZE), Image.BILINEAR))
                   for x, y, cw, ch in sorted(boxes)]
    return refs


def served(client, scale, seed):
    opts = dict(mode="train", batch=1, size=SIZE, normalize="none", layout="nhwc", seed=seed, epochs=1,
                shuffle="off")
    if scale is not None:
        opts["crop_scale"] = scale
    with client.stream("fx", **opts) as s:
        return {int(b.numpy("index")[0]): np.asarray(b.torch("image").float().numpy()[0], dtype=np.uint8)
                for b in s}


def test_whole_area_crops(daemon, data):
    refs = whole_area_refs(data["images"])
    assert len(refs) >= 4
    flips = 0
    with bfeed.connect(daemon.addr) as c:
        for seed in (1, 2, 3):
            got = served(c, (1, 1), seed)
            for i, candidates in refs.items():
                same = any(np.array_equal(got[i], r) for r in candidates)
                mirrored = any(np.array_equal(got[i], r[:, ::-1]) for r in candidates)
                assert same or mirrored, "sample %d seed %d: none of the %d whole-area crops (best mean abs %.2f)" % (
                    i, seed, len(candidates), min(np.abs(got[i].astype(int) - r).mean() for r in candidates))
                flips += mirrored and not same
            # The default range crops: most samples are none of those.
            default = served(c, None, seed)
            assert sum(not any(np.array_equal(default[i], r) or np.array_equal(default[i], r[:, ::-1])
                               for r in refs[i]) for i in refs) >= len(refs) // 2
    assert 0 < flips < 3 * len(refs), "the flip draw still runs: some mirrored, some not"


def test_crop_scale_spellings_and_refusals(daemon):
    with bfeed.connect(daemon.addr) as c:
        for scale in ("0.5,1", (0.5, 1.0), [0.25, 0.75], "1/1"):
            with c.stream("fx", batch=2, size=32, crop_scale=scale) as s:
                assert next(s).torch("image").shape == (2, 3, 32, 32)
        for bad in ("0,1", "0.6,0.5", (0.5, 2), "0.5"):
            with pytest.raises(bfeed.InvalidError) as e:
                c.stream("fx", crop_scale=bad)
            assert "crop-scale" in e.value.message
