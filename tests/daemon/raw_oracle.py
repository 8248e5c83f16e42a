"""Raw image records (bfeed pack --images raw) through the daemon's sample
path (sample_dump), against Pillow on the same pixels, bit for bit.

Records are written here from PACK_FORMAT.md's layout (struct), from
Pillow's convert("RGB") of the fixtures and of odd sizes (1x1, 7x300,
333x517); sample_dump decodes them as image_decode's fourth format:
full decode, eval (resize + centre crop), train crops with flips, and the
sample path's own load, each equal to Pillow's BILINEAR on the image the
record holds. Bad records (short, 4 channels, sizes that do not match the
bytes, zero width) are refused naming what is wrong.

usage: raw_oracle.py SAMPLE_DUMP FIXTURE_DIR
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_oracle import Dump  # noqa: E402
from oracle_util import check, eval_geometry  # noqa: E402
from oracle_util import main as oracle_main  # noqa: E402


def record(img):
    return struct.pack("<6sHII", b"BFRAW1", 3, img.size[0], img.size[1]) + img.tobytes()


def same(got, ref):
    return not isinstance(got, str) and got.tobytes() == np.asarray(ref, np.uint8).tobytes()


def run(tmp):
    exe, fixtures = sys.argv[1:3]
    rnd = random.Random(11)
    dump = Dump(exe)
    imgs = {}
    for f in sorted(os.listdir(fixtures)):
        if f.lower().endswith((".jpeg", ".jpg")):
            imgs[f] = Image.open(os.path.join(fixtures, f)).convert("RGB")
    base = next(iter(imgs.values()))
    for w, h in ((1, 1), (7, 300), (333, 517), (300, 7)):
        imgs["%dx%d" % (w, h)] = base.resize((w, h), Image.BILINEAR)
    for name, img in imgs.items():
        path = os.path.join(tmp, name + ".raw")
        open(path, "wb").write(record(img))
        w, h = img.size
        got = dump.ask("full " + path)
        check(same(got, img) and dump.crop == [w, h], "%s: full decode equals the pixels stored" % name)
        for size in (32, 224):
            rw, rh, left, top = eval_geometry(w, h, size)
            ref = img.resize((rw, rh), Image.BILINEAR).crop((left, top, left + size, top + size))
            for dct in (0, 1):
                got = dump.ask("eval %d %d %d %d %d %d %s" % (size, dct, rw, rh, left, top, path))
                check(same(got, ref), "%s: eval %d dct=%d equals Pillow" % (name, size, dct))
        for _ in range(4):
            cw, ch = rnd.randint(1, w), rnd.randint(1, h)
            x, y, flip = rnd.randint(0, w - cw), rnd.randint(0, h - ch), rnd.randint(0, 1)
            ref = img.crop((x, y, x + cw, y + ch)).resize((64, 64), Image.BILINEAR)
            ref = ref.transpose(Image.FLIP_LEFT_RIGHT) if flip else ref
            got = dump.ask("crop 64 1 %d %d %d %d %d %s" % (x, y, cw, ch, flip, path))
            check(same(got, ref), "%s: crop %s flip=%d equals Pillow" % (name, (x, y, cw, ch), flip))
        got = dump.ask("load 96 1 train 5 3 " + path)
        if check(not isinstance(got, str), "%s: load train" % name):
            x, y, cw, ch, flip = dump.crop
            ref = img.crop((x, y, x + cw, y + ch)).resize((96, 96), Image.BILINEAR)
            check(same(got, ref.transpose(Image.FLIP_LEFT_RIGHT) if flip else ref),
                  "%s: the sample path's own train crop equals Pillow" % name)
    good = record(base.resize((20, 10)))
    bad = {"short.raw": (good[:10], "shorter than its 16-byte header"),
           "chan.raw": (good[:6] + b"\x04\x00" + good[8:], "4 channels, not 3"),
           "cut.raw": (good[:-1], "holds 599 pixel bytes, not 600"),
           "long.raw": (good + b"\0", "holds 601 pixel bytes, not 600"),
           "zero.raw": (struct.pack("<6sHII", b"BFRAW1", 3, 0, 10), "0x10 pixels")}
    for name, (data, why) in bad.items():
        path = os.path.join(tmp, name)
        open(path, "wb").write(data)
        got = dump.ask("full " + path)
        check(isinstance(got, str) and why in got, "%s refused: %s" % (name, got))
    open(os.path.join(tmp, "big.raw"), "wb").write(record(base.resize((100, 100))))
    dump.ask("limit 9999")
    got = dump.ask("full " + os.path.join(tmp, "big.raw"))
    check(isinstance(got, str) and "max_pixels" in got, "a raw record over max_pixels refused: %s" % got)
    dump.close()



if __name__ == "__main__":
    TMP = tempfile.mkdtemp(prefix="bfeed-raw-")
    oracle_main({"all": lambda: run(TMP)}, "all", TMP)  # exits 1 on a failed check
