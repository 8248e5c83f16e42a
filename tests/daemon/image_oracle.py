"""Oracle for the image pipeline: bfeed's sample_dump against Pillow.

The reference is what torchvision 0.14 does to a PIL image, spelled out with
Pillow and numpy: Image.open(f).convert("RGB"), then for eval
Resize(round(size*256/224)) + CenterCrop(size), and for train
img.crop(box).resize((size, size), BILINEAR) and a left-right transpose.

Eval (DCT 0, the daemon's default) must equal that bit for bit: the
full decode, as torchvision's ImageFolder gives it to Resize. With DCT 1
(the stream option eval_decode=fast) it must equal Pillow after
Image.draft("RGB", (rw, rh)), which picks the same libjpeg scale
(oracle_util.pillow_eval), and on the large JPEGs (shorter side >= 600)
it must differ from torchvision's pixels: the option is not exact. Train
without IDCT scaling must equal Pillow's bit for bit; with it (large
crops), the mean absolute error per image must stay <= 1.5 levels.
Corrupt, truncated and non-JPEG input must give an error that names the
problem. Pillow and numpy are required: their absence is a failure.

The recipes' geometry (check_recipes), against torchvision's own functions
on the PIL image, bit for bit: train crops (F.resized_crop, then F.hflip)
with every interpolation (bilinear, bicubic, nearest) at outputs of 64,
176, 224 and 300 and non-square 160x224 and 224x160, from small crops
(upscaled) and large ones (reduced, the JPEG at full size: train_decode
exact); sample_load's own draws with other ratios and flip p 0 and 1; eval
as T.Resize(N, interpolation) + T.CenterCrop((H, W)) for Resize(232,
BICUBIC) + CenterCrop(224), Resize(256) + CenterCrop(224) bilinear and
nearest, non-square crops, and a crop larger than the resized image (F.center_crop's
zero padding); eval_decode=fast with each filter against Pillow's
Image.draft then the same resize.

usage: image_oracle.py SAMPLE_DUMP FIXTURE_DIR [IMAGENET_DIR]
"""
import io
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import eval_geometry, pillow_eval  # noqa: E402

MAE_LIMIT = 1.5
EVAL_SIZES = (224, 160, 64, 32)  # 1/1, 1/2, 1/4 and 1/8 on ImageNet sizes


class Dump:
    """One sample_dump process, fed commands over a pipe."""

    def __init__(self, exe):
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, cmd):
        self.p.stdin.write((cmd + "\n").encode())
        self.p.stdin.flush()
        head = self.p.stdout.readline().decode()
        if not head:
            raise RuntimeError("sample_dump died on: " + cmd)
        kind, rest = head.rstrip("\n").split(" ", 1)
        if kind == "err":
            return rest
        fields = [int(v) for v in rest.split()]
        data = np.frombuffer(self.p.stdout.read(fields[0]), np.uint8)
        self.crop = fields[1:]  # the crop a train "load" drew, else []
        return data

    def close(self):
        self.p.stdin.close()
        if self.p.wait() != 0:
            raise RuntimeError("sample_dump exited with %d" % self.p.returncode)


def dct_scale(src_w, src_h, out_w, out_h):
    """The documented rule: smallest M/8 (M in 1, 2, 4) leaving >= 2x the
    output pixels in each direction, else no scaling."""
    for m in (1, 2, 4):
        if src_w * m >= 16 * out_w and src_h * m >= 16 * out_h:
            return m
    return 8


def train_crops(w, h, rnd):
    """Random RandomResizedCrop-like boxes plus the edge cases."""
    crops = [(0, 0, w, h), (0, 0, 1, 1), (w - 1, h - 1, 1, 1), (w // 2, 0, w - w // 2, h)]
    if w > 40 and h > 40:
        crops += [(16, 16, w - 32, h - 32), (w - 17, h - 33, 17, 33), (15, 17, 16, 16)]
    for _ in range(6):
        area = w * h * rnd.uniform(0.08, 1.0)
        ratio = np.exp(rnd.uniform(np.log(3 / 4), np.log(4 / 3)))
        cw = int(round(np.sqrt(area * ratio)))
        ch = int(round(np.sqrt(area / ratio)))
        if 0 < cw <= w and 0 < ch <= h:
            crops.append((rnd.randint(0, w - cw), rnd.randint(0, h - ch), cw, ch))
    return crops


class Report:
    def __init__(self):
        self.failures = []
        self.checked = 0
        self.exact = 0
        self.worst_mae = (0.0, "")
        self.worst_max = (0, "")

    def compare(self, what, got, ref, exact):
        self.checked += 1
        if isinstance(got, str):
            self.failures.append("%s: error %s" % (what, got))
            return
        if got.size != ref.size:
            self.failures.append("%s: %d bytes, want %d" % (what, got.size, ref.size))
            return
        diff = np.abs(got.reshape(ref.shape).astype(np.int16) - ref.astype(np.int16))
        mae, mx = float(diff.mean()), int(diff.max())
        if mx == 0:
            self.exact += 1
        if exact and mx != 0:
            self.failures.append("%s: not exact (mae %.3f, max %d)" % (what, mae, mx))
        elif mae > MAE_LIMIT:
            self.failures.append("%s: mae %.3f > %.1f" % (what, mae, MAE_LIMIT))
        if mae > self.worst_mae[0]:
            self.worst_mae = (mae, what)
        if mx > self.worst_max[0]:
            self.worst_max = (mx, what)

    def finish(self):
        """Print the failures; the exit status."""
        for f in self.failures[:40]:
            print("FAIL", f)
        if self.failures:
            print("%d failures" % len(self.failures))
        return 1 if self.failures else 0

    def expect_error(self, what, got, words):
        self.checked += 1
        if not isinstance(got, str):
            self.failures.append("%s: decoded, want an error" % what)
        elif not any(w in got for w in words):
            self.failures.append("%s: error %r names none of %s" % (what, got, words))


def check_image(dump, rep, path, rnd, scalable=True):
    """Every geometry against Pillow. scalable: a JPEG, which the IDCT may
    shrink (then only near Pillow); PNG and WebP must always be exact."""
    img = Image.open(path).convert("RGB")
    w, h = img.size
    name = os.path.basename(path)

    def exact_for(dct, sw, sh, ow, oh):
        return not dct or not scalable or dct_scale(sw, sh, ow, oh) == 8
    # Eval is torchvision's pixels (dct=0), or Image.draft's with dct=1.
    for size in EVAL_SIZES:
        rw, rh, left, top = eval_geometry(w, h, size)
        for dct in (0, 1):
            ref = pillow_eval(path, size, draft=dct == 1)
            got = dump.ask("eval %d %d %d %d %d %d %s" % (size, dct, rw, rh, left, top, path))
            rep.compare("%s eval %d dct=%d" % (name, size, dct), got, ref, True)
    # sample_load itself: eval geometry from transform_eval_params, train crops
    # and flips from the generator.
    for dct in (0, 1):
        got = dump.ask("load 224 %d eval 1 0 %s" % (dct, path))
        rep.compare("%s load eval dct=%d" % (name, dct), got, pillow_eval(path, 224, draft=dct == 1), True)
        for index in range(3):
            got = dump.ask("load 224 %d train 5 %d %s" % (dct, index, path))
            if isinstance(got, str):
                rep.compare("%s load train" % name, got, None, True)
                continue
            x, y, cw, ch, flip = dump.crop
            ref = img.crop((x, y, x + cw, y + ch)).resize((224, 224), Image.BILINEAR)
            ref = np.asarray(ref.transpose(Image.FLIP_LEFT_RIGHT) if flip else ref)
            rep.compare("%s load train %s flip=%d dct=%d" % (name, (x, y, cw, ch), flip, dct), got, ref,
                        exact_for(dct, cw, ch, 224, 224))
    size = 224
    for (x, y, cw, ch) in train_crops(w, h, rnd):
        flip = rnd.randint(0, 1)
        ref = img.crop((x, y, x + cw, y + ch)).resize((size, size), Image.BILINEAR)
        if flip:
            ref = ref.transpose(Image.FLIP_LEFT_RIGHT)
        ref = np.asarray(ref)
        for dct in (0, 1):
            got = dump.ask("crop %d %d %d %d %d %d %d %s" % (size, dct, x, y, cw, ch, flip, path))
            rep.compare("%s crop %s flip=%d dct=%d" % (name, (x, y, cw, ch), flip, dct), got, ref,
                        exact_for(dct, cw, ch, size, size))


INTERPS = [("bilinear", T.InterpolationMode.BILINEAR, Image.BILINEAR),
           ("bicubic", T.InterpolationMode.BICUBIC, Image.BICUBIC),
           ("nearest", T.InterpolationMode.NEAREST, Image.NEAREST)]
SHAPES = [(64, 64), (176, 176), (224, 224), (300, 300), (160, 224), (224, 160)]  # (H, W)
# eval recipes: (resize, interpolation index, (H, W)); resize 0 is round(max(H, W) * 256 / 224)
EVALS = [(232, 1, (224, 224)), (256, 0, (224, 224)), (256, 2, (224, 224)), (0, 0, (160, 224)),
         (0, 1, (224, 160)), (200, 0, (224, 300)), (64, 2, (96, 72))]


def f32_hexes(*xs):
    return " ".join("%08x" % int(np.array(np.float32(x)).view(np.uint32)) for x in xs)


def check_recipes(dump, rep, path, rnd, few=False):
    """The recipes' geometry against torchvision on the PIL image (the
    module docstring); few: a sample of it, for the shared images."""
    img = Image.open(path).convert("RGB")
    w, h = img.size
    name = os.path.basename(path)
    crops = train_crops(w, h, rnd)
    crops = rnd.sample(crops, 2) if few else crops[:3] + crops[-3:]
    shapes = rnd.sample(SHAPES, 2) if few else SHAPES
    for k, (iname, mode, pil) in enumerate(INTERPS):
        dump.ask("geom 0 %d 0" % k)
        for (oh, ow) in shapes:
            dump.ask("geom %d %d 0" % (ow, k))
            for (x, y, cw, ch) in crops:
                flip = rnd.randint(0, 1)
                ref = F.resized_crop(img, y, x, ch, cw, [oh, ow], mode)
                ref = np.asarray(F.hflip(ref) if flip else ref)
                got = dump.ask("crop %d 0 %d %d %d %d %d %s" % (oh, x, y, cw, ch, flip, path))
                rep.compare("%s crop %s -> %dx%d %s flip=%d" % (name, (x, y, cw, ch), ow, oh, iname, flip), got, ref,
                            True)
    # sample_load's own draws: other ratios, p 0 and 1 (the crop it drew comes back)
    for ratio, p, k in (((0.5, 2.0), 0.0, 1), ((0.8, 1.25), 1.0, 2), ((3 / 4, 4 / 3), 0.5, 0)):
        dump.ask("rrcp %s" % f32_hexes(0.08, 1.0, ratio[0], ratio[1], p))
        dump.ask("geom 200 %d 0" % k)
        for index in range(2 if few else 4):
            got = dump.ask("load 176 0 train 11 %d %s" % (index, path))
            if isinstance(got, str):
                rep.compare("%s load train ratio %s" % (name, ratio), got, None, True)
                continue
            x, y, cw, ch, flip = dump.crop
            ref = F.resized_crop(img, y, x, ch, cw, [176, 200], INTERPS[k][1])
            ref = np.asarray(F.hflip(ref) if flip else ref)
            rep.compare("%s load train ratio %s p %g %s" % (name, ratio, p, INTERPS[k][0]), got, ref, True)
            if p in (0.0, 1.0) and flip != p:
                rep.failures.append("%s: hflip p=%g gave flip=%d" % (name, p, flip))
    dump.ask("rrcp %s" % f32_hexes(0.08, 1.0, 3 / 4, 4 / 3, 0.5))
    for resize, k, (oh, ow) in (rnd.sample(EVALS, 2) if few else EVALS):
        dump.ask("geom %d %d %d" % (ow, k, resize))
        n = resize or int(round(max(oh, ow) * 256 / 224))
        ref = np.asarray(T.Compose([T.Resize(n, INTERPS[k][1]), T.CenterCrop((oh, ow))])(img))
        got = dump.ask("load %d 0 eval 1 0 %s" % (oh, path))
        rep.compare("%s eval Resize(%d, %s) CenterCrop(%d, %d)" % (name, n, INTERPS[k][0], oh, ow), got, ref, True)
        # eval_decode=fast: Image.draft for the resized size, then the same
        draft = Image.open(path)
        rh, rw = F._compute_resized_output_size((h, w), [n])
        draft.draft("RGB", (rw, rh))
        ref = np.asarray(T.CenterCrop((oh, ow))(draft.convert("RGB").resize((rw, rh), INTERPS[k][2])))
        got = dump.ask("load %d 1 eval 1 0 %s" % (oh, path))
        rep.compare("%s eval fast Resize(%d, %s) CenterCrop(%d, %d)" % (name, n, INTERPS[k][0], oh, ow), got, ref,
                    True)
    dump.ask("geom 0 0 0")


def check_fast_not_exact(dump, rep, path):
    """A large JPEG: eval_decode=fast (dct=1) must not give torchvision's
    pixels at 224 (Pillow's draft decodes it at a reduced scale), while the
    default (dct=0, checked in check_image) does."""
    rw, rh, left, top = eval_geometry(*Image.open(path).size, 224)
    got = dump.ask("eval 224 1 %d %d %d %d %s" % (rw, rh, left, top, path))
    ref = pillow_eval(path, 224)
    rep.checked += 1
    name = os.path.basename(path)
    if isinstance(got, str) or np.array_equal(got.reshape(ref.shape), ref):
        rep.failures.append("%s eval 224 fast: torchvision's pixels or an error; want draft's, which differ" % name)
    else:
        mae = float(np.abs(got.reshape(ref.shape).astype(np.int16) - ref).mean())
        print("%s (%dx%d) eval 224: fast mean abs error %.3f against torchvision, default exact" % (
            name, *Image.open(path).size, mae))


def jpeg_bytes(img, **opts):
    buf = io.BytesIO()
    img.save(buf, "JPEG", **opts)
    return buf.getvalue()


def make_variants(fixtures, out):
    """Images Pillow writes for us: every colour model, layout and size edge."""
    clock = Image.open(os.path.join(fixtures, "n03196217_digital_clock.JPEG")).convert("RGB")
    home = Image.open(os.path.join(fixtures, "n03776460_mobile_home.JPEG")).convert("RGB")
    gray = Image.open(os.path.join(fixtures, "n03908714_pencil_sharpener.JPEG"))
    good = {
        "cmyk.jpg": jpeg_bytes(clock.convert("CMYK"), quality=90),
        "progressive.jpg": jpeg_bytes(clock, quality=90, progressive=True),
        "progressive_gray.jpg": jpeg_bytes(gray, quality=90, progressive=True),
        "large.jpg": jpeg_bytes(clock.resize((2000, 1500), Image.BICUBIC), quality=92),
        "large_tall_420.jpg": jpeg_bytes(home.resize((1100, 2300), Image.BICUBIC), subsampling=2),
        "s444.jpg": jpeg_bytes(home, quality=95, subsampling=0),
        "s422.jpg": jpeg_bytes(home, quality=95, subsampling=1),
        "s420.jpg": jpeg_bytes(home, quality=95, subsampling=2),
        "odd_420.jpg": jpeg_bytes(home.resize((333, 517), Image.BICUBIC), subsampling=2),
        "tiny_1x1.jpg": jpeg_bytes(clock.resize((1, 1), Image.BILINEAR)),
        "thin_7x300.jpg": jpeg_bytes(home.resize((7, 300), Image.BILINEAR)),
        "flat_300x7.jpg": jpeg_bytes(home.resize((300, 7), Image.BILINEAR), subsampling=2),
    }
    whole = jpeg_bytes(home, quality=95)
    rnd = random.Random(7)
    bad = {
        # (bytes, words the error must contain)
        "truncated.jpg": (whole[: len(whole) // 2], ["truncated"]),
        "truncated_header.jpg": (whole[:200], ["truncated", "corrupt"]),
        "truncated_progressive.jpg": (good["progressive.jpg"][:9000], ["truncated"]),
        "garbage.jpg": (bytes(rnd.getrandbits(8) for _ in range(5000)), ["not a JPEG"]),
        "empty.jpg": (b"", ["not a JPEG"]),
        # The content decides the format, not the name: a PNG signature makes a PNG.
        "png.jpg": (b"\x89PNG\r\n\x1a\n" + bytes(100), ["PNG"]),
        "soi_garbage.jpg": (b"\xff\xd8" + bytes(rnd.getrandbits(8) for _ in range(5000)), ["corrupt"]),
        "bad_entropy.jpg": (corrupt_scan(whole, rnd), ["corrupt"]),
    }
    paths = []
    for name, data in good.items():
        p = os.path.join(out, name)
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    bad_paths = []
    for name, (data, words) in bad.items():
        p = os.path.join(out, name)
        with open(p, "wb") as f:
            f.write(data)
        bad_paths.append((p, words))
    return paths, bad_paths


def corrupt_scan(data, rnd):
    """Overwrite a run of entropy-coded bytes with a marker libjpeg must hit."""
    sos = data.index(b"\xff\xda")
    start = sos + (len(data) - sos) // 3
    out = bytearray(data)
    out[start : start + 4] = b"\xff\xd0\xff\xd0"  # restart markers where none belong
    return bytes(out)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    exe, fixtures = sys.argv[1], sys.argv[2]
    imagenet = sys.argv[3] if len(sys.argv) > 3 else ""
    files = sorted(os.path.join(fixtures, f) for f in os.listdir(fixtures) if f.endswith(".JPEG"))
    if len(files) < 3:
        sys.exit("fixtures missing in %s" % fixtures)
    rnd = random.Random(2024)
    rep = Report()
    dump = Dump(exe)
    with tempfile.TemporaryDirectory() as tmp:
        variants, bad = make_variants(fixtures, tmp)
        for p in files + variants:
            check_image(dump, rep, p, rnd)
            check_recipes(dump, rep, p, rnd)
        for p in variants:
            if min(Image.open(p).size) >= 600:
                check_fast_not_exact(dump, rep, p)
        for p, words in bad:
            # Geometry that needs every row of the 468x315 source: corrupt
            # data in rows a crop does not need is never decoded.
            for cmd in ("eval 224 1 256 256 16 16", "crop 224 0 0 0 468 315 0"):
                rep.expect_error("%s %s" % (os.path.basename(p), cmd.split()[0]), dump.ask(cmd + " " + p), words)
        # after all those errors the decoder must still work
        check_image(dump, rep, files[0], rnd)
    shared = 0
    if imagenet and os.path.isdir(imagenet):
        for d in sorted(os.listdir(imagenet)):
            sub = os.path.join(imagenet, d)
            if not os.path.isdir(sub):
                continue
            for f in sorted(os.listdir(sub)):
                check_image(dump, rep, os.path.join(sub, f), rnd)
                check_recipes(dump, rep, os.path.join(sub, f), rnd, few=True)
                shared += 1
    dump.close()

    print("checked %d outputs (%d files from %s), %d bit-exact" % (rep.checked, shared, imagenet or "-", rep.exact))
    print("worst mean abs error %.3f (%s)" % rep.worst_mae)
    print("worst max abs error %d (%s)" % rep.worst_max)
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
