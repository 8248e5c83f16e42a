"""The stream option crop_scale (RandomResizedCrop's scale=) from Python to
the daemon's crops, against Pillow.

With scale=(1, 1) every try asks for the image's whole area at a random
aspect ratio; only a ratio that rounds to the image's own fits, and
otherwise torchvision falls back to the centre crop clamped to ratios
3/4..4/3 (the whole image when its ratio is in that range). Either way the
box is the same whatever the draws, so torchvision's own get_params gives
it, and each train sample must be Pillow's crop of that box resized to
S x S (BILINEAR, as torchvision's RandomResizedCrop does), mirrored or not
(the flip). The default range (0.08, 1) gives other crops. The option is
also in the fingerprint (test_select checks the C side), and refused out
of range with a message naming it."""
import numpy as np
import pytest
import torchvision.transforms as T
from PIL import Image

import bfeed

SIZE = 160  # the fixtures' shorter sides are under 4 x 160: no IDCT scaling, Pillow-exact


def whole_area_refs(paths):
    """torchvision's box for scale=(1, 1) on each fixture, cropped and
    resized by Pillow, as uint8 HWC."""
    refs = {}
    for i, p in enumerate(paths):
        img = Image.open(p).convert("RGB")
        boxes = {T.RandomResizedCrop.get_params(img, [1.0, 1.0], [3 / 4, 4 / 3]) for _ in range(20)}
        assert len(boxes) == 1, "%s: scale=(1, 1) gave several boxes %s" % (p, boxes)
        top, left, h, w = boxes.pop()
        assert min(w, h) < 4 * SIZE  # no IDCT scaling: Pillow-exact
        refs[i] = np.asarray(img.crop((left, top, left + w, top + h)).resize((SIZE, SIZE), Image.BILINEAR))
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
            for i, ref in refs.items():
                same, mirrored = np.array_equal(got[i], ref), np.array_equal(got[i], ref[:, ::-1])
                assert same or mirrored, "sample %d seed %d: not Pillow's whole-image resize (mean abs %.2f)" % (
                    i, seed, np.abs(got[i].astype(int) - ref).mean())
                flips += mirrored and not same
            # The default range crops: most samples differ from the whole image.
            default = served(c, None, seed)
            assert sum(not np.array_equal(default[i], refs[i]) and not np.array_equal(default[i], refs[i][:, ::-1])
                       for i in refs) >= len(refs) // 2
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
