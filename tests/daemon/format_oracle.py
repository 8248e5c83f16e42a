"""Oracle for PNG, WebP and CMYK/YCCK JPEG decoding: sample_dump against Pillow.

Every decoded image must equal Image.open(f).convert("RGB") exactly:
  - PNGs of every colour type and bit depth (gray 1/2/4/8/16, RGB 8/16,
    palette 1/2/4/8 with and without tRNS and with indices past the PLTE,
    gray+alpha 8/16, RGBA 8/16), plain and Adam7-interlaced, rows filtered
    with all five PNG filters, written by png_bytes below (zlib and struct,
    nothing shared with libspng), plus the modes Pillow itself writes;
  - WebP lossy and lossless, with and without alpha, written by Pillow;
  - CMYK JPEGs written by Pillow and YCCK JPEGs written by ycck_write.
Then the whole sample path (eval resize + centre crop, train crops and
flips) on a PNG, a WebP and a YCCK JPEG, exactly as image_oracle.py checks
JPEGs; the pixel limit (a small file whose header claims a huge image is
refused by name, for PNG, WebP and JPEG; the limit is inclusive);
corrupt PNG and WebP files and animated WebP refused with a reason; and deterministic
mutations of good files: never a crash, a reason for every refusal, and
Pillow's pixels whenever both decode the damaged file.

usage: format_oracle.py SAMPLE_DUMP YCCK_WRITE FIXTURE_DIR
"""
import io
import os
import random
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib

import numpy as np
from PIL import Image

# convert("RGB") of a palette image with tRNS warns that RGBA would keep it:
# dropping it is what is being checked.
warnings.filterwarnings("ignore", "Palette images with Transparency")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_oracle import Dump, Report, check_image  # noqa: E402

ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def pack_row(samples, depth):
    """One row of samples (already flattened over channels) as PNG bytes."""
    if depth == 16:
        return samples.astype(">u2").tobytes()
    if depth == 8:
        return samples.astype(np.uint8).tobytes()
    per = 8 // depth
    out = bytearray((len(samples) + per - 1) // per)
    for i, v in enumerate(samples):
        out[i // per] |= int(v) << (8 - depth * (i % per + 1))
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def filter_rows(rows, bpp, first_filter):
    """Filter each row with PNG filter (first_filter + row) % 5."""
    out = bytearray()
    prev = bytes(len(rows[0])) if rows else b""
    for r, row in enumerate(rows):
        ft = (first_filter + r) % 5
        f = bytearray(len(row))
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = (0, a, b, (a + b) // 2, paeth(a, b, c))[ft]
            f[i] = (x - pred) & 255
        out += bytes([ft]) + f
        prev = row
    return bytes(out)


def png_bytes(pixels, color_type, depth, palette=None, trns=None, interlace=False):
    """A PNG of pixels ([H, W, channels] ints) written from the spec."""
    h, w, ch = pixels.shape
    assert ch == CHANNELS[color_type]
    bpp = max(1, ch * depth // 8)
    data = bytearray()
    if interlace:
        for p, (x0, y0, dx, dy) in enumerate(ADAM7):
            sub = pixels[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                data += filter_rows([pack_row(r.reshape(-1), depth) for r in sub], bpp, p)
    else:
        data += filter_rows([pack_row(r.reshape(-1), depth) for r in pixels], bpp, 0)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0,
                                                             1 if interlace else 0))
    if palette is not None:
        out += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    z = zlib.compress(bytes(data), 9)
    for i in range(0, len(z), 1000):  # several IDAT chunks
        out += chunk(b"IDAT", z[i:i + 1000])
    return out + chunk(b"IEND", b"")


def spec_pngs(rng):
    """Every colour type and depth the PNG spec allows, and their edges."""
    out = {}
    w, h = 37, 23  # rows that end mid-byte at every depth below 8

    def img(ch, depth, low=None):
        top = (1 << depth) if low is None else low
        return rng.integers(0, top, (h, w, ch))

    for depth in (1, 2, 4, 8, 16):
        out["g%d.png" % depth] = png_bytes(img(1, depth), 0, depth)
        n = 1 << depth if depth <= 8 else 0
        if n:
            pal = rng.integers(0, 256, (n, 3))
            out["p%d.png" % depth] = png_bytes(img(1, depth), 3, depth, pal)
            out["p%d_trns.png" % depth] = png_bytes(img(1, depth), 3, depth, pal,
                                                     bytes(rng.integers(0, 256, n // 2 + 1, dtype=np.uint8)))
    # 16-bit gray: Pillow clips to 255 rather than scaling; mix both sides.
    g16 = np.where(rng.random((h, w, 1)) < 0.5, rng.integers(0, 256, (h, w, 1)), img(1, 16))
    out["g16_low.png"] = png_bytes(g16, 0, 16)
    out["g8_trns.png"] = png_bytes(img(1, 8), 0, 8, trns=struct.pack(">H", 7))
    out["g16_trns.png"] = png_bytes(g16, 0, 16, trns=struct.pack(">H", 300))
    for depth in (8, 16):
        out["rgb%d.png" % depth] = png_bytes(img(3, depth), 2, depth)
        out["ga%d.png" % depth] = png_bytes(img(2, depth), 4, depth)
        out["rgba%d.png" % depth] = png_bytes(img(4, depth), 6, depth)
    out["rgb8_trns.png"] = png_bytes(img(3, 8), 2, 8, trns=struct.pack(">HHH", 1, 2, 3))
    # Indices past a short PLTE: Pillow reads its grey ramp there.
    out["p8_short_plte.png"] = png_bytes(img(1, 8), 3, 8, rng.integers(0, 256, (5, 3)))
    for name, ct, depth in (("g1", 0, 1), ("g4", 0, 4), ("p2", 3, 2), ("rgb8", 2, 8), ("rgba16", 6, 16),
                            ("ga8", 4, 8), ("g16", 0, 16)):
        pal = rng.integers(0, 256, (1 << depth, 3)) if ct == 3 else None
        out["%s_adam7.png" % name] = png_bytes(img(CHANNELS[ct], depth), ct, depth, pal, interlace=True)
    tiny = rng.integers(0, 256, (1, 1, 3))
    out["tiny_adam7.png"] = png_bytes(tiny, 2, 8, interlace=True)  # six empty passes
    out["col_adam7.png"] = png_bytes(rng.integers(0, 256, (9, 1, 3)), 2, 8, interlace=True)
    return out


def pillow_images(fixtures):
    clock = Image.open(os.path.join(fixtures, "n03196217_digital_clock.JPEG")).convert("RGB")
    small = clock.resize((211, 157), Image.BICUBIC)
    alpha = Image.linear_gradient("L").resize(small.size)
    rgba = small.copy()
    rgba.putalpha(alpha)
    return clock, small, rgba


def save(img, fmt, **opts):
    buf = io.BytesIO()
    img.save(buf, fmt, **opts)
    return buf.getvalue()


def pillow_pngs(small, rgba):
    """The PNG modes Pillow writes."""
    return {
        "pil_1.png": save(small.convert("1"), "PNG"),
        "pil_L.png": save(small.convert("L"), "PNG"),
        "pil_LA.png": save(rgba.convert("LA"), "PNG"),
        "pil_P.png": save(small.convert("P", palette=Image.ADAPTIVE, colors=200), "PNG"),
        "pil_P_trns.png": save(small.convert("P", palette=Image.ADAPTIVE, colors=16), "PNG", transparency=3, bits=4),
        "pil_RGB.png": save(small, "PNG"),
        "pil_RGBA.png": save(rgba, "PNG"),
        "pil_I16.png": save(Image.fromarray((np.asarray(small.convert("L"), np.uint16) * 3)), "PNG"),
    }


def webps(small, rgba):
    return {
        "lossy.webp": save(small, "WEBP", quality=80),
        "lossy_alpha.webp": save(rgba, "WEBP", quality=70),
        "lossless.webp": save(small, "WEBP", lossless=True),
        "lossless_alpha.webp": save(rgba, "WEBP", lossless=True),
        "lossless_alpha_exact.webp": save(rgba, "WEBP", lossless=True, exact=True),
        "odd_3x5.webp": save(small.resize((3, 5)), "WEBP", quality=90),
    }


def cmyk_jpegs(ycck_write, small, tmp):
    cmyk = small.convert("CMYK")
    out = {"cmyk.jpg": save(cmyk, "JPEG", quality=90), "cmyk_420.jpg": save(cmyk, "JPEG", quality=75, subsampling=2)}
    stored = 255 - np.asarray(cmyk)  # Adobe's inverted polarity, as Pillow stores CMYK
    for q in (95, 60):
        path = os.path.join(tmp, "ycck_q%d.jpg" % q)
        subprocess.run([ycck_write, str(small.width), str(small.height), str(q), path],
                       input=stored.tobytes(), check=True)
        with open(path, "rb") as f:
            out[os.path.basename(path)] = f.read()
    return out


def huge_headers(png, webp, jpeg):
    """Small files whose headers claim far more pixels than the default limit."""
    big_png = bytearray(png)
    big_png[16:24] = struct.pack(">II", 100000, 100000)  # IHDR width, height
    big_png[29:33] = struct.pack(">I", zlib.crc32(bytes(big_png[12:29])))
    big_webp = bytearray(webp)
    assert big_webp[12:16] == b"VP8L" and big_webp[20] == 0x2F
    bits = struct.unpack("<I", bytes(big_webp[21:25]))[0]
    bits = (bits & ~((1 << 28) - 1)) | 16383 | (16383 << 14)  # 16384 x 16384
    big_webp[21:25] = struct.pack("<I", bits)
    big_jpeg = bytearray(jpeg)
    sof = big_jpeg.index(b"\xff\xc0")
    big_jpeg[sof + 5:sof + 9] = struct.pack(">HH", 60000, 60000)  # height, width
    return {"huge.png": bytes(big_png), "huge.webp": bytes(big_webp), "huge.jpg": bytes(big_jpeg)}


def corrupt(png, webp):
    rnd = random.Random(5)
    idat = png.index(b"IDAT")
    bad_zlib = bytearray(png)
    for i in range(idat + 20, idat + 60):
        bad_zlib[i] = rnd.getrandbits(8)
    bad_crc = bytearray(png)
    bad_crc[29] ^= 0xFF  # IHDR's CRC
    return {
        "truncated.png": (png[: len(png) // 2], ["truncated"]),
        "bad_zlib.png": (bytes(bad_zlib), ["PNG"]),
        "bad_ihdr_crc.png": (bytes(bad_crc), ["PNG"]),
        "signature_only.png": (png[:8], ["PNG"]),
        "truncated.webp": (webp[: len(webp) // 2], ["truncated", "WebP"]),
        "riff_garbage.webp": (webp[:12] + bytes(rnd.getrandbits(8) for _ in range(400)), ["WebP"]),
        "unknown.png": (b"GIF89a" + bytes(64), ["not a JPEG, PNG or WebP"]),
    }


def mutations(data, rnd, n):
    """Deterministic damage: bit flips, bytes overwritten, cuts, splices."""
    for _ in range(n):
        m = bytearray(data)
        kind = rnd.randrange(4)
        if kind == 0:
            for _ in range(rnd.randint(1, 4)):
                m[rnd.randrange(len(m))] ^= 1 << rnd.randrange(8)
        elif kind == 1:
            i = rnd.randrange(len(m))
            m[i:i + 4] = bytes(rnd.choice((0, 0xFF, 0x7F, 0x80)) for _ in range(4))
        elif kind == 2:
            del m[rnd.randrange(8, len(m)):]
        else:
            i, j = sorted(rnd.randrange(len(m)) for _ in range(2))
            m[i:i] = m[j:j + rnd.randint(1, 64)]
        yield bytes(m)


def check_mutations(dump, rep, tmp, seeds, rnd, per_seed):
    """Damaged files never crash the decoder, every refusal says why, and
    whenever both Pillow and bfeed decode one they agree on every pixel."""
    agreed = refused = 0
    path = os.path.join(tmp, "mutant")
    for name in seeds:
        with open(seeds[name], "rb") as f:
            data = f.read()
        for k, m in enumerate(mutations(data, rnd, per_seed)):
            with open(path, "wb") as f:
                f.write(m)
            got = dump.ask("full " + path)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref = np.asarray(Image.open(path).convert("RGB"))
            except Exception:
                ref = None
            if isinstance(got, str):
                refused += 1
                if not got.startswith(path + ": ") or len(got) <= len(path) + 2:
                    rep.failures.append("%s mutant %d: refusal without a reason: %r" % (name, k, got))
            elif ref is not None:
                agreed += 1
                rep.compare("%s mutant %d" % (name, k), got, ref, True)
    print("mutants: %d decoded by both and compared, %d refused by bfeed" % (agreed, refused))


def write_all(tmp, files):
    paths = {}
    for name, data in files.items():
        paths[name] = os.path.join(tmp, name)
        with open(paths[name], "wb") as f:
            f.write(data)
    return paths


def check_full(dump, rep, path):
    ref = np.asarray(Image.open(path).convert("RGB"))
    got = dump.ask("full " + path)
    if not isinstance(got, str) and dump.crop != [ref.shape[1], ref.shape[0]]:
        rep.failures.append("%s: size %s, Pillow %s" % (path, dump.crop, ref.shape[1::-1]))
    rep.compare("%s full" % os.path.basename(path), got, ref, True)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    exe, ycck_write, fixtures = sys.argv[1:4]
    rng = np.random.default_rng(11)
    rep = Report()
    dump = Dump(exe)
    with tempfile.TemporaryDirectory(prefix="bfeed-format-oracle-") as tmp:
        clock, small, rgba = pillow_images(fixtures)
        good = dict(spec_pngs(rng))
        good.update(pillow_pngs(small, rgba))
        good.update(webps(small, rgba))
        good.update(cmyk_jpegs(ycck_write, small, tmp))
        paths = write_all(tmp, good)
        for name in sorted(paths):
            check_full(dump, rep, paths[name])
        # Pillow must agree on what these are, or the test proves nothing.
        kinds = {n: (Image.open(p).format, Image.open(p).mode) for n, p in paths.items()}
        for n, want in (("ycck_q95.jpg", ("JPEG", "CMYK")), ("g16.png", ("PNG", "I")), ("p4.png", ("PNG", "P")),
                        ("lossy_alpha.webp", ("WEBP", "RGBA")), ("ga16.png", ("PNG", "RGBA"))):
            if kinds[n] != want:
                rep.failures.append("%s: Pillow reads %s, expected %s" % (n, kinds[n], want))

        # The whole sample path on larger images of each kind.
        big = {"photo.png": save(clock, "PNG"), "photo_rgba_adam7.png": png_bytes(
                   np.dstack([np.asarray(clock), rng.integers(0, 256, (clock.height, clock.width, 1))]), 6, 8,
                   interlace=True),
               "photo.webp": save(clock, "WEBP", quality=85),
               "photo_lossless_alpha.webp": save(rgba.resize((400, 300)), "WEBP", lossless=True)}
        ycck = write_all(tmp, cmyk_jpegs(ycck_write, clock, tmp))
        prnd = random.Random(3)
        for name, path in sorted(write_all(tmp, big).items()):
            check_image(dump, rep, path, prnd, scalable=False)
        check_image(dump, rep, ycck["ycck_q95.jpg"], prnd, scalable=True)

        # The pixel limit: refused by name from the header; inclusive.
        huge = write_all(tmp, huge_headers(good["rgb8.png"], good["lossless.webp"], good["cmyk.jpg"]))
        for name, path in sorted(huge.items()):
            rep.expect_error(name, dump.ask("full " + path), ["over the max_pixels limit of 178956970"])
            rep.expect_error(name + " eval", dump.ask("eval 224 1 256 256 16 16 " + path), ["max_pixels"])
        pixels = 37 * 23
        dump.ask("limit %d" % (pixels - 1))
        for name in ("rgb8.png", "g1_adam7.png", "cmyk.jpg"):
            if name == "cmyk.jpg":
                dump.ask("limit %d" % (small.width * small.height - 1))
            rep.expect_error(name + " over a lowered limit", dump.ask("full " + paths[name]), ["max_pixels"])
        dump.ask("limit %d" % pixels)
        check_full(dump, rep, paths["rgb8.png"])
        dump.ask("limit 1")
        rep.expect_error("rgb8.png over limit 1", dump.ask("full " + paths["rgb8.png"]), ["max_pixels limit of 1"])
        dump.ask("limit 0")  # 0: no limit (not "nothing")
        check_full(dump, rep, paths["rgb8.png"])
        dump.ask("limit 178956970")

        bad = corrupt(good["rgb8.png"], good["lossy.webp"])
        # Pillow would give the first frame on the canvas; refused here, saying so.
        bad["animated.webp"] = (save(small, "WEBP", save_all=True, append_images=[rgba], duration=100),
                                ["animated WebP"])
        for name, (data, words) in sorted(bad.items()):
            path = write_all(tmp, {name: data})[name]
            rep.expect_error(name, dump.ask("full " + path), words)
            got = dump.ask("crop 224 0 0 0 1 1 0 " + path)
            rep.expect_error(name + " crop", got, words)
            if isinstance(got, str) and not got.startswith(path + ": "):
                rep.failures.append("%s: reason %r does not start with the name" % (name, got))
        check_mutations(dump, rep, tmp, {n: paths[n] for n in (
            "rgb8.png", "p4_trns.png", "g16_adam7.png", "rgba16.png", "lossy.webp", "lossy_alpha.webp",
            "lossless_alpha.webp", "cmyk.jpg", "ycck_q60.jpg")}, random.Random(9), 60)
        # after the errors the decoders still work
        check_full(dump, rep, paths["rgba16.png"])
        check_full(dump, rep, paths["lossy_alpha.webp"])
    dump.close()

    print("checked %d outputs, %d bit-exact" % (rep.checked, rep.exact))
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
