"""The recipes' geometry options as Python keywords (size=(H, W),
interpolation=, resize=, crop_ratio=, hflip=, train_decode=), end to end
against torchvision on the fixtures' PIL images; the refusals name the
option. (tests/integration/recipe_fetch_oracle.py checks the same through
`bfeed fetch`, with the ResNet50 preset; the daemon's oracles sweep it.)"""
import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

import bfeed


def test_size_pair_and_eval_recipe(daemon, data):
    """size=(160, 224) with resize=200, nearest: T.Resize(200, NEAREST) +
    T.CenterCrop((160, 224)) on each image, padding where the resized
    image is narrower than 224, in both layouts."""
    ref = T.Compose([T.Resize(200, T.InterpolationMode.NEAREST), T.CenterCrop((160, 224)), T.PILToTensor()])
    want = torch.stack([ref(Image.open(p).convert("RGB")) for p in data["images"]])
    n = len(data["images"])
    with bfeed.connect(daemon.addr) as c:
        for layout in ("nchw", "nhwc"):
            with c.stream("fx", mode="eval", batch=n, size=(160, 224), resize=200, interpolation="nearest",
                          normalize="none", layout=layout, epochs=1) as s:
                img = next(s).torch("image").float().to(torch.uint8)
            assert img.shape == ((n, 3, 160, 224) if layout == "nchw" else (n, 160, 224, 3))
            assert torch.equal(img if layout == "nchw" else img.permute(0, 3, 1, 2), want)


def test_train_options_are_refused_by_name(daemon):
    """Out-of-range values: InvalidError naming the option and the value."""
    bad = {"size": (160, 4097), "interpolation": "lanczos", "crop_ratio": (2, 1), "hflip": 1.5,
           "train_decode": "quick", "resize": -1}
    with bfeed.connect(daemon.addr) as c:
        for name, value in bad.items():
            with pytest.raises(bfeed.InvalidError) as e:
                c.stream("fx", **{name: value})
            assert name.replace("_", "-") in e.value.message or name in e.value.message, e.value.message
        with c.stream("fx", batch=2, size=(48, 64), crop_ratio=(0.5, 2.0), hflip=0.0, interpolation="bicubic",
                      train_decode="fast") as s:
            assert next(s).torch("image").shape == (2, 3, 48, 64)


def test_hflip_zero_and_one(daemon, data):
    """hflip=0 never mirrors and hflip=1 always does: with the same seed
    (the same crops), the p=1 samples are the p=0 ones mirrored."""
    n = len(data["images"])
    with bfeed.connect(daemon.addr) as c:
        got = {}
        for p in (0.0, 1.0):
            with c.stream("fx", batch=n, size=(40, 56), seed=3, shuffle="off", hflip=p, normalize="none",
                          layout="nhwc", epochs=1) as s:
                got[p] = next(s).torch("image").float().numpy()
    assert np.array_equal(got[1.0], got[0.0][:, :, ::-1, :])
