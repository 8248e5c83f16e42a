"""A folder of mixed JPEG, PNG and WebP served by the real bfeedd, against Pillow.

An ImageFolder holds JPEGs (YCbCr, grayscale, CMYK), PNGs (RGB, 16-bit
RGBA, palette with tRNS, interlaced, an upper-case .PNG), WebPs (lossy,
lossless with alpha) and files that cannot be served: a truncated PNG, a
PNG whose header claims 100000 x 100000 pixels, garbage named .webp, and a
real 400 x 300 WebP. Files with other extensions (.gif, .txt) are not
samples. bfeedd reads max_pixels = 100000 from its configuration file;
`bfeed fetch --mode eval --normalize none --shuffle off` must then give,
for every position, the first servable sample from there on (the order's
replacement rule), with exactly Pillow's pixels for torchvision's eval
transform of Image.open(f).convert("RGB"), its label and index; the log
must name every skipped file and why, and the stream statistics count
them over one epoch. Run again with --max-pixels 200000, the flag must win over the file
and the 400 x 300 WebP be served. A bad max_pixels names file, line and key.

usage: format_fetch_oracle.py BFEEDD BFEED FIXTURE_DIR
"""
import io
import zlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
from fetch_oracle import bf16_to_f32, finish, reference  # noqa: E402
from format_oracle import png_bytes  # noqa: E402
from oracle_util import Daemon  # noqa: E402

SIZE = 64  # small beside the images: eval must still decode them at full size


def save(img, fmt, **opts):
    buf = io.BytesIO()
    img.save(buf, fmt, **opts)
    return buf.getvalue()


def make_tree(fixtures, root):
    """Returns [(relative path, label, servable with max_pixels 100000)]."""
    clock = Image.open(os.path.join(fixtures, "n03196217_digital_clock.JPEG")).convert("RGB")
    gray = Image.open(os.path.join(fixtures, "n03908714_pencil_sharpener.JPEG"))
    photo = clock.resize((300, 225), Image.BICUBIC)
    rgba = photo.copy()
    rgba.putalpha(Image.linear_gradient("L").resize(photo.size))
    rng = np.random.default_rng(4)
    rgba16 = rng.integers(0, 65536, (150, 200, 4))
    pal = photo.convert("P", palette=Image.ADAPTIVE, colors=64)
    truncated = save(photo, "PNG")
    huge = bytearray(save(photo.resize((20, 10)), "PNG"))
    huge[16:24] = (100000).to_bytes(4, "big") * 2
    huge[29:33] = zlib.crc32(bytes(huge[12:29])).to_bytes(4, "big")
    files = [
        ("a_jpeg/0_photo.jpg", save(photo, "JPEG", quality=90), True),
        ("a_jpeg/1_gray.jpeg", save(gray.resize((150, 225)), "JPEG"), True),
        ("a_jpeg/2_cmyk.jpg", save(photo.convert("CMYK"), "JPEG"), True),
        ("b_png/0_rgb.png", save(photo, "PNG"), True),
        ("b_png/1_rgba16.png", png_bytes(rgba16, 6, 16), True),
        ("b_png/2_bad_truncated.png", truncated[: len(truncated) // 2], False),
        ("b_png/3_huge_header.png", bytes(huge), False),
        ("b_png/4_p_trns.png", save(pal, "PNG", transparency=5), True),
        ("b_png/5_adam7.png", png_bytes(np.asarray(photo)[:100, :120], 2, 8, interlace=True), True),
        ("b_png/6_upper.PNG", save(photo.convert("L"), "PNG"), True),
        ("c_webp/0_lossy.webp", save(photo, "WEBP", quality=80), True),
        ("c_webp/1_bad_garbage.webp", b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(range(200)), False),
        ("c_webp/2_big_400x300.webp", save(clock.resize((400, 300)), "WEBP", quality=80), False),
        ("c_webp/3_lossless_alpha.webp", save(rgba, "WEBP", lossless=True), True),
    ]
    for rel, data, _ in files:
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)
    for rel in ("a_jpeg/zz_anim.gif", "c_webp/notes.txt"):  # not samples
        with open(os.path.join(root, rel), "wb") as f:
            f.write(save(photo, "GIF") if rel.endswith(".gif") else b"hello\n")
    labels = {"a_jpeg": 0, "b_png": 1, "c_webp": 2}
    return [(rel, labels[rel.split("/")[0]], ok) for rel, _, ok in files]


def fetch_all(bfeed, addr, out, n):
    cmd = [bfeed, "fetch", "--connect", addr, "--dataset", "fx", "--mode", "eval", "--normalize", "none",
           "--shuffle", "off", "--size", str(SIZE), "--batch", str(n), "--keep-partial", "--batch-index", "0",
           "--out", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode()))
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    return {t["name"]: np.load(os.path.join(out, t["file"])) for t in meta["tensors"]}


def skipped_count(bfeed, addr, n):
    """The stream's own count over exactly one epoch (a fetch's stream may
    run ahead into the next one before it closes)."""
    r = subprocess.run([bfeed, "bench", "--connect", addr, "--dataset", "fx", "--mode", "eval", "--shuffle", "off",
                        "--size", str(SIZE), "--batch", str(n), "--keep-partial", "--epochs", "1", "--warmup", "0",
                        "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("bfeed bench failed (%d): %s" % (r.returncode, r.stderr.decode()))
    return json.loads(r.stdout.decode().strip().splitlines()[-1])["skipped"]


def check_run(bfeedd, bfeed, tmp, root, files, extra, servable, fail):
    daemon = Daemon(bfeedd, tmp, ["fx=" + root], extra=extra)
    addr = daemon.addr
    try:
        got = fetch_all(bfeed, addr, os.path.join(tmp, "out%d" % len(extra)), len(files))
        n = len(files)
        if got["index"].shape != (n,):
            fail("%s: %d samples served, expected %d (the .gif and .txt are not samples)" % (extra, got["index"].size, n))
            return
        values = bf16_to_f32(got["image"])
        for p in range(n):
            want = p
            while not servable(want):
                want = (want + 1) % n
            rel, label = files[want][0], files[want][1]
            if got["index"][p] != want or got["label"][p] != label:
                fail("%s position %d: index %d label %d, expected %d (%s) label %d" % (
                    extra, p, got["index"][p], got["label"][p], want, rel, label))
                continue
            ref = reference(os.path.join(root, rel), SIZE).astype(np.float32)
            diff = np.abs(values[p] - ref)
            if diff.max() != 0:
                fail("%s %s: not Pillow's pixels (mean abs error %.3f, max %d)" % (extra, rel, diff.mean(), diff.max()))
        # Each bad file counts once in the epoch, at its own position (issue 31:
        # counting every file each position passed over to find a servable
        # one gave 164,316 for 24 samples served).
        want = sum(not servable(p) for p in range(n))
        skipped = skipped_count(bfeed, addr, n)
        if skipped != want:
            fail("%s: statistics count %s skipped files, expected %d" % (extra, skipped, want))
    finally:
        err = daemon.stop()
        if err:
            fail(err)
    log = daemon.log()
    for i, (rel, _, _) in enumerate(files):
        named = [l for l in log.splitlines() if "skipping " + os.path.join(root, rel) + ": " in l]
        if servable(i) and named:
            fail("%s: %s served but logged as skipped: %s" % (extra, rel, named[0]))
        if not servable(i) and not named:
            fail("%s: no log line names the skipped %s; log:\n%s" % (extra, rel, log))
        if "huge_header" in rel and named and "over the max_pixels limit of" not in named[0]:
            fail("%s: the huge PNG is refused for another reason: %s" % (extra, named[0]))
        if "big_400x300" in rel and named and "WebP of 400x300 = 120000 pixels, over the max_pixels limit of 100000" not in named[0]:
            fail("%s: the 400x300 WebP's log line does not say why: %s" % (extra, named[0]))
    return log


def main():
    bfeedd, bfeed, fixtures = sys.argv[1:4]
    failures = []
    fail = failures.append
    with tempfile.TemporaryDirectory(prefix="bfeed-format-fetch-") as tmp:
        root = os.path.join(tmp, "data")
        files = make_tree(fixtures, root)
        conf = os.path.join(tmp, "bfeedd.conf")
        with open(conf, "w") as f:
            f.write("[bfeedd]\nmax_pixels = 100000\n")
        # The file's limit: the 400x300 WebP is skipped.
        check_run(bfeedd, bfeed, tmp, root, files, ["--config", conf], lambda i: files[i][2], fail)
        # The flag wins over the file: now it is served (a new log).
        big = [i for i, f in enumerate(files) if "big_400x300" in f[0]][0]
        check_run(bfeedd, bfeed, tmp, root, files, ["--config", conf, "--max-pixels", "200000"],
                  lambda i: files[i][2] or i == big, fail)
        with open(conf, "w") as f:
            f.write("[bfeedd]\n\nmax_pixels = lots\n")
        r = subprocess.run([bfeedd, "--config", conf, "--check-config", conf, "--dataset", "fx=" + root],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        msg = r.stdout.decode()
        if r.returncode == 0 or "bfeedd.conf:3" not in msg or "max_pixels" not in msg:
            fail("a bad max_pixels is not refused naming file, line and key (%d): %s" % (r.returncode, msg))
    return finish("format_fetch_oracle", "%d files" % len(files), failures)


if __name__ == "__main__":
    sys.exit(main())
