"""A torchvision recipe as bfeed stream options: bfeed.torch.Dataset(...,
transform=T.Compose([...])) reads the transform objects it is handed and
compiles them into the options the daemon runs (README "Recipes").

The daemon runs a recipe in one order: the geometry (RandomResizedCrop for
training; Resize then CenterCrop for evaluation), RandomHorizontalFlip,
ColorJitter, one of AutoAugment(IMAGENET) / RandAugment /
TrivialAugmentWide, the conversion to float (ToTensor, or PILToTensor and
ConvertImageDtype(torch.float)), Normalize, RandomErasing: the order
torchvision's reference recipes and weights presets use. A transform bfeed
cannot run, or one out of that order, is refused here, by name, with what
is supported.
"""
import numbers

__all__ = ["compile_transform", "SUPPORTED"]

SUPPORTED = ("Compose", "RandomResizedCrop", "Resize", "CenterCrop", "RandomHorizontalFlip", "ColorJitter",
             "AutoAugment(IMAGENET)", "RandAugment", "TrivialAugmentWide", "ToTensor", "PILToTensor",
             "ConvertImageDtype(torch.float)", "Normalize", "RandomErasing",
             "ImageClassification (a weights enum's .transforms())")

# The stages, in the one order the daemon runs them.
_STAGES = ("geometry", "flip", "jitter", "policy", "tensor", "dtype", "normalize", "erase")


def _interp(mode):
    """torchvision's InterpolationMode as the stream's choice."""
    name = getattr(mode, "value", mode)
    if name in ("nearest", "bilinear", "bicubic"):
        return name
    raise ValueError("interpolation %r: bfeed runs nearest, bilinear and bicubic" % (name,))


def _pair(x, what):
    if isinstance(x, numbers.Number):
        return int(x), int(x)
    if isinstance(x, (list, tuple)) and len(x) == 1:
        return int(x[0]), int(x[0])
    if isinstance(x, (list, tuple)) and len(x) == 2:
        return int(x[0]), int(x[1])
    raise ValueError("%s %r: expected a size or (height, width)" % (what, x))


def _size_opt(h, w):
    return h if h == w else (h, w)


def _fill(fill, name):
    """A policy's fill as PIL gets it: ints per channel (None is 0)."""
    if fill is None:
        return None
    if isinstance(fill, numbers.Number):
        fill = [fill] * 3
    if len(fill) != 3:
        raise ValueError("%s fill %r: expected a number or three" % (name, fill))
    return tuple(float(int(x)) for x in fill)


def _jitter(t):
    """ColorJitter's ranges as the single amounts bfeed takes: (1-b, 1+b)
    clipped at 0 for the first three, (-h, h) for hue."""
    out = []
    for name in ("brightness", "contrast", "saturation", "hue"):
        r = getattr(t, name)
        if r is None:
            out.append(0.0)
            continue
        lo, hi = float(r[0]), float(r[1])
        amount = hi if name == "hue" else round(hi - 1, 12)
        want = (-amount, amount) if name == "hue" else (max(0.0, 1 - amount), 1 + amount)
        if not all(abs(a - b) <= 1e-12 for a, b in zip((lo, hi), want)):  # 1 +- x in doubles, not exact
            raise ValueError("ColorJitter %s range (%g, %g): bfeed takes the symmetric form of a single number "
                             "(%s=x gives %s)" % (name, lo, hi, name, "(-x, x)" if name == "hue" else "(1-x, 1+x)"))
        out.append(amount)
    return tuple(out)


def _policy(t, T, AA):
    name = type(t).__name__
    opts = {"aa_interpolation": _interp(t.interpolation)}
    fill = _fill(t.fill, name)
    if fill is not None:
        opts["aa_fill"] = fill
    if isinstance(t, AA.AutoAugment):
        if t.policy != AA.AutoAugmentPolicy.IMAGENET:
            raise ValueError("AutoAugment(%s): bfeed runs the IMAGENET policy" % t.policy)
        opts["auto_augment"] = "imagenet"
    elif isinstance(t, AA.RandAugment):
        opts.update(auto_augment="rand", aa_num_ops=t.num_ops, aa_magnitude=t.magnitude,
                    aa_bins=t.num_magnitude_bins)
    else:
        opts.update(auto_augment="ta_wide", aa_bins=t.num_magnitude_bins)
    return opts


def _erase(t):
    opts = {"random_erase": float(t.p), "erase_scale": tuple(map(float, t.scale)),
            "erase_ratio": tuple(map(float, t.ratio))}
    if isinstance(t.value, str):
        opts["erase_random"] = True
    elif isinstance(t.value, numbers.Number):
        opts["erase_value"] = (float(t.value),) * 3
    elif len(t.value) in (1, 3):
        opts["erase_value"] = tuple(float(v) for v in (list(t.value) * 3)[:3])
    else:
        raise ValueError("RandomErasing value %r: expected a number, three, or 'random'" % (t.value,))
    return opts


def _flatten(t, T):
    if isinstance(t, T.Compose):
        return [x for s in t.transforms for x in _flatten(s, T)]
    return [t]


def _refuse(t):
    raise TypeError("bfeed cannot run %s in the daemon; it runs: %s" % (type(t).__name__, ", ".join(SUPPORTED)))


def _one(t, T, AA, presets):
    """(stage, options) of one transform."""
    if presets is not None and isinstance(t, presets.ImageClassification):
        h, w = _pair(t.crop_size, "crop_size")
        return [("geometry", {"mode": "eval", "resize": int(t.resize_size[0]), "size": _size_opt(h, w),
                              "interpolation": _interp(t.interpolation)}),
                ("tensor", {}), ("normalize", {"mean": tuple(t.mean), "std": tuple(t.std)})]
    if isinstance(t, T.RandomResizedCrop):
        h, w = _pair(t.size, "RandomResizedCrop size")
        return [("geometry", {"mode": "train", "size": _size_opt(h, w), "crop_scale": tuple(map(float, t.scale)),
                              "crop_ratio": tuple(map(float, t.ratio)), "interpolation": _interp(t.interpolation)})]
    if isinstance(t, T.Resize):
        if not isinstance(t.size, numbers.Number) and len(t.size) != 1 or t.max_size is not None:
            raise ValueError("Resize(%r, max_size=%r): bfeed resizes the shorter side to one size "
                             "(Resize(N) then CenterCrop)" % (t.size, t.max_size))
        n = t.size if isinstance(t.size, numbers.Number) else t.size[0]
        return [("resize", {"mode": "eval", "resize": int(n), "interpolation": _interp(t.interpolation)})]
    if isinstance(t, T.CenterCrop):
        h, w = _pair(t.size, "CenterCrop size")
        return [("crop", {"size": _size_opt(h, w)})]
    if isinstance(t, T.RandomHorizontalFlip):
        return [("flip", {"hflip": float(t.p)})]
    if isinstance(t, T.ColorJitter):
        return [("jitter", {"color_jitter": _jitter(t)})]
    if isinstance(t, (AA.AutoAugment, AA.RandAugment, AA.TrivialAugmentWide)):
        return [("policy", _policy(t, T, AA))]
    if isinstance(t, T.ToTensor):
        return [("tensor", {})]
    if isinstance(t, T.PILToTensor):  # uint8 until a ConvertImageDtype
        return [("tensor", {"_uint8": True})]
    if isinstance(t, T.ConvertImageDtype):
        import torch
        if t.dtype != torch.float32:
            raise ValueError("ConvertImageDtype(%s): bfeed computes in float32 (ConvertImageDtype(torch.float))"
                             % t.dtype)
        return [("dtype", {"_uint8": False})]
    if isinstance(t, T.Normalize):
        return [("normalize", {"mean": tuple(map(float, t.mean)), "std": tuple(map(float, t.std))})]
    if isinstance(t, T.RandomErasing):
        return [("erase", _erase(t))]
    _refuse(t)


def _geometry(steps):
    """Resize and CenterCrop make one eval geometry; either alone is refused."""
    out, i = [], 0
    while i < len(steps):
        stage, o = steps[i]
        if stage == "resize":
            if i + 1 >= len(steps) or steps[i + 1][0] != "crop":
                raise ValueError("Resize without a CenterCrop after it: bfeed's evaluation is Resize(N) then "
                                 "CenterCrop(size)")
            out.append(("geometry", dict(o, **steps[i + 1][1])))
            i += 2
            continue
        if stage == "crop":
            raise ValueError("CenterCrop without a Resize before it: bfeed's evaluation is Resize(N) then "
                             "CenterCrop(size)")
        out.append((stage, o))
        i += 1
    return out


def compile_transform(transform):
    """The stream options of a torchvision transform (a Compose, a single
    transform, or a weights preset)."""
    import torchvision.transforms as T
    import torchvision.transforms.autoaugment as AA
    try:
        import torchvision.transforms._presets as presets
    except ImportError:  # a torchvision without weights presets
        presets = None
    steps = [s for t in _flatten(transform, T) for s in _one(t, T, AA, presets)]
    steps = _geometry(steps)
    order = [_STAGES.index(stage) for stage, _ in steps]
    for k in range(1, len(order)):
        if order[k] <= order[k - 1]:
            raise ValueError("%s after %s: bfeed runs a recipe in this order, each at most once: %s"
                             % (steps[k][0], steps[k - 1][0], " -> ".join(_STAGES)))
    if not any(stage == "geometry" for stage, _ in steps):
        raise ValueError("a recipe starts with RandomResizedCrop (training) or Resize + CenterCrop (evaluation)")
    if not any(stage == "tensor" for stage, _ in steps):
        raise ValueError("a recipe converts the image to a float tensor (ToTensor, or PILToTensor + "
                         "ConvertImageDtype(torch.float)) before Normalize")
    opts = {}
    for _, o in steps:
        opts.update(o)
    if opts.pop("_uint8", False):  # PILToTensor alone: the 0..255 values, as bf16 holds them exactly
        later = [stage for stage, _ in steps if stage in ("normalize", "erase")]
        if later:
            raise ValueError("PILToTensor then %s: torchvision needs a float tensor there (add "
                             "ConvertImageDtype(torch.float) after PILToTensor)" % later[0])
        opts["normalize"] = "none"
    if opts["mode"] == "eval":
        random = [stage for stage, _ in steps if stage in ("flip", "jitter", "policy", "erase")]
        if random:
            raise ValueError("an evaluation recipe (Resize + CenterCrop) with random transforms (%s): bfeed "
                             "evaluates without them" % ", ".join(random))
    elif "hflip" not in opts:
        opts["hflip"] = 0.0  # no RandomHorizontalFlip: none
    if "mean" not in opts and opts.get("normalize") != "none":  # ToTensor alone: x / 255, as Normalize((0,0,0), (1,1,1))
        opts["mean"], opts["std"] = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    return opts
