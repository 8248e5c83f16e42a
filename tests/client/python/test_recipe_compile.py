"""bfeed.torch.Dataset(transform=...): torchvision's recipes compiled into
stream options and served, against torchvision itself: the reference
recipe replayed from what each sample drew, the weights' eval presets
bit for bit with no replay; what bfeed cannot run refused by name."""
import os

import pytest
import torch
import torchvision.transforms as T
from PIL import Image
from torchvision.models import ResNet50_Weights, EfficientNet_B0_Weights, ViT_B_16_Weights

import bfeed
import bfeed.torch
from bfeed._recipe import compile_transform

from test_recipes import replay_batch, same_bits

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def reference_train(crop=176, policy=None, erase=0.1):
    """references/classification/presets.py ClassificationPresetTrain for
    the IMAGENET1K_V2 recipe (ta_wide, random_erase 0.1)."""
    t = [T.RandomResizedCrop(crop, interpolation=T.InterpolationMode.BILINEAR), T.RandomHorizontalFlip(0.5)]
    t.append(policy or T.TrivialAugmentWide(interpolation=T.InterpolationMode.BILINEAR))
    t += [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
    if erase:
        t.append(T.RandomErasing(p=erase))
    return T.Compose(t)


def test_reference_recipe_compiles():
    o = compile_transform(reference_train())
    assert o == {"mode": "train", "size": 176, "crop_scale": (0.08, 1.0), "crop_ratio": (3 / 4, 4 / 3),
                 "interpolation": "bilinear", "hflip": 0.5, "aa_interpolation": "bilinear",
                 "auto_augment": "ta_wide", "aa_bins": 31, "mean": MEAN, "std": STD, "random_erase": 0.1,
                 "erase_scale": (0.02, 0.33), "erase_ratio": (0.3, 3.3), "erase_value": (0.0, 0.0, 0.0)}
    ra = compile_transform(reference_train(224, T.RandAugment(2, 9), 0))
    assert (ra["auto_augment"], ra["aa_num_ops"], ra["aa_magnitude"], ra["aa_bins"]) == ("rand", 2, 9, 31)
    aa = compile_transform(T.Compose([T.RandomResizedCrop(224, interpolation=T.InterpolationMode.BICUBIC),
                                      T.AutoAugment(), T.ToTensor()]))
    assert aa["auto_augment"] == "imagenet" and aa["interpolation"] == "bicubic" and aa["hflip"] == 0.0
    assert aa["mean"] == (0.0, 0.0, 0.0) and aa["std"] == (1.0, 1.0, 1.0)  # ToTensor alone: x / 255
    cj = compile_transform(T.Compose([T.RandomResizedCrop((160, 192)), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                                      T.ToTensor()]))
    assert cj["size"] == (160, 192) and cj["color_jitter"] == (0.4, 0.4, 0.4, 0.1)


@pytest.mark.parametrize("weights", [ResNet50_Weights.IMAGENET1K_V2, ResNet50_Weights.IMAGENET1K_V1,
                                     EfficientNet_B0_Weights.IMAGENET1K_V1, ViT_B_16_Weights.IMAGENET1K_V1])
def test_weights_presets_compile(weights):
    t = weights.transforms()
    o = compile_transform(t)
    assert o["mode"] == "eval" and o["resize"] == t.resize_size[0] and o["size"] == t.crop_size[0]
    assert o["interpolation"] == t.interpolation.value


@pytest.mark.parametrize("t, words", [
    (T.Compose([T.RandomResizedCrop(64), T.Lambda(lambda x: x), T.ToTensor()]), "Lambda"),
    (T.Compose([T.RandomResizedCrop(64), T.GaussianBlur(3), T.ToTensor()]), "GaussianBlur"),
    (T.Compose([T.RandomResizedCrop(64), T.RandomVerticalFlip(), T.ToTensor()]), "RandomVerticalFlip"),
    (T.Compose([T.RandomResizedCrop(64), T.ToTensor(), T.RandomHorizontalFlip()]), "flip after tensor"),
    (T.Compose([T.RandomResizedCrop(64), T.AutoAugment(T.AutoAugmentPolicy.CIFAR10), T.ToTensor()]),
     "IMAGENET policy"),
    (T.Compose([T.RandomResizedCrop(64), T.ColorJitter(brightness=(0.5, 1.2)), T.ToTensor()]), "symmetric"),
    (T.Compose([T.Resize(256), T.ToTensor()]), "Resize without a CenterCrop"),
    (T.Compose([T.Resize(256), T.CenterCrop(224), T.RandomErasing(), T.ToTensor()]), "erase after tensor"),
    (T.Compose([T.RandomResizedCrop(64), T.Normalize(MEAN, STD)]), "float tensor"),
    (T.Compose([T.Resize(72), T.CenterCrop(64), T.AutoAugment(), T.ToTensor()]), "evaluation recipe"),
    (T.Compose([T.RandomResizedCrop(64, interpolation=T.InterpolationMode.LANCZOS), T.ToTensor()]), "lanczos"),
])
def test_what_bfeed_cannot_run_is_refused_by_name(t, words):
    with pytest.raises((TypeError, ValueError)) as e:
        compile_transform(t)
    assert words.split()[0] in str(e.value), str(e.value)
    if words[0].isupper() and " " not in words:  # an unknown transform: the list of what runs
        assert "RandomResizedCrop" in str(e.value) and "RandAugment" in str(e.value)


def test_dataset_refuses_at_construction(daemon):
    with pytest.raises(TypeError, match="GaussianBlur"):
        bfeed.torch.Dataset(daemon.addr, "fx", transform=T.Compose([T.RandomResizedCrop(64), T.GaussianBlur(3)]))
    with pytest.raises(TypeError, match="mixup_alpha"):
        bfeed.torch.Dataset(daemon.addr, "fx", transform=reference_train(), mixup_alpah=0.2)
    with pytest.raises(ValueError, match="size=96 differs"):
        bfeed.torch.Dataset(daemon.addr, "fx", transform=reference_train(), size=96)


def test_reference_recipe_served_and_replayed(daemon, data):
    """The reference recipe (crop 176, TrivialAugmentWide, RandomErasing
    0.1, MixUp 0.2 / CutMix 1.0) through bfeed.torch: 4 batches, every
    sample torchvision's pipeline for the drawn parameters, targets the
    reference's; num_classes= widens the target."""
    paths = data["images"]
    n = len(paths)
    ds = bfeed.torch.Dataset(daemon.addr, "fx", transform=reference_train(), mixup_alpha=0.2, cutmix_alpha=1.0,
                             num_classes=6, batch=n, seed=3, explain=True)
    assert ds.num_classes == 6
    opts = compile_transform(reference_train())
    got = 0
    for epoch in range(4):
        ds.set_epoch(epoch)
        for b in bfeed.torch.DataLoader(ds, num_workers=0):
            e = {"samples": b["params"], "mix": b["mix"]}
            want, target = replay_batch(paths, e, (176, 176), opts, 6, b["label"].tolist())
            assert same_bits(b["image"], want)
            assert b["target"].dtype == torch.float32 and torch.equal(b["target"], target)
            assert "explain" not in b
            got += 1
    assert got == 4


@pytest.mark.parametrize("weights", [ResNet50_Weights.IMAGENET1K_V2, EfficientNet_B0_Weights.IMAGENET1K_V1])
def test_weights_preset_eval_is_torchvisions(daemon, data, weights):
    """Eval with a weights enum's transforms (Resize 232 bilinear, or 256
    bicubic, then CenterCrop 224): torchvision's own preset on each PIL
    image, bit for bit after .to(bfloat16), with nothing to replay."""
    preset = weights.transforms()
    want = torch.stack([preset(Image.open(p).convert("RGB")) for p in data["images"]]).to(torch.bfloat16)
    ds = bfeed.torch.Dataset(daemon.addr, "fx", transform=preset, batch=len(data["images"]), shuffle="off")
    (b,) = list(bfeed.torch.DataLoader(ds))
    assert same_bits(b["image"], want)


def test_bicubic_resize_232_eval(daemon, data):
    """Resize(232, BICUBIC) + CenterCrop(224), as a Compose."""
    t = T.Compose([T.Resize(232, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                   T.Normalize(MEAN, STD)])
    want = torch.stack([t(Image.open(p).convert("RGB")) for p in data["images"]]).to(torch.bfloat16)
    ds = bfeed.torch.Dataset(daemon.addr, "fx", transform=t, batch=len(data["images"]), shuffle="off")
    (b,) = list(bfeed.torch.DataLoader(ds))
    assert same_bits(b["image"], want)


SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "shared", "data",
                      "imagenet-100")


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data/imagenet-100 is not beside the checkout")
def test_reference_recipe_on_imagenet_jpegs(tmp_path):
    """The reference recipe on the team's 100 ImageNet JPEGs (one
    grayscale): every sample of 4 batches of 25, replayed from what it drew
    with torchvision on ImageFolder's own images, equals what bfeed served;
    and the weights' eval preset, bit for bit, on all 100."""
    from torchvision.datasets import ImageFolder
    from conftest import _binary
    from oracle_util import Daemon
    folder = ImageFolder(SHARED)
    paths = [p for p, _ in folder.samples]
    d = Daemon(_binary("BFEEDD"), str(tmp_path), ["in=" + SHARED])
    try:
        ds = bfeed.torch.Dataset(d.addr, "in", transform=reference_train(), mixup_alpha=0.2, cutmix_alpha=1.0,
                                 batch=25, seed=1, explain=True)
        opts = compile_transform(reference_train())
        for b in bfeed.torch.DataLoader(ds):
            e = {"samples": b["params"], "mix": b["mix"]}
            want, target = replay_batch(paths, e, (176, 176), opts, ds.num_classes, b["label"].tolist())
            assert same_bits(b["image"], want) and torch.equal(b["target"], target), (b["position"], e["mix"])
        preset = ResNet50_Weights.IMAGENET1K_V2.transforms()
        val = bfeed.torch.Dataset(d.addr, "in", transform=preset, batch=25, shuffle="off")
        for b in bfeed.torch.DataLoader(val):
            want = torch.stack([preset(folder.loader(paths[i])) for i in b["index"].tolist()]).to(torch.bfloat16)
            assert same_bits(b["image"], want), b["index"]
    finally:
        d.kill()
