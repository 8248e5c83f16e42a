"""max_decode_memory: a progressive JPEG whose coefficient buffers would take
more than the limit is skipped and logged, with the file named; under a
larger limit the same file is decoded, and its pixels match Pillow's.

A small file can hold a huge progressive image (this one: 4000 x 4000 of one
colour, a few kB), and libjpeg decodes a progressive image whole into
coefficients first: 2 bytes x 64 per 8x8 block of each component, here
32 MB for Y and 8 MB for each chroma plane at 4:2:0. The daemon checks that
against the limit before libjpeg allocates (and sets libjpeg's own
max_memory_to_use behind it).

usage: decode_memory_oracle.py BFEEDD BFEED
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import Daemon  # noqa: E402

COLOUR = (200, 100, 50)


def fetch(bfeed, addr, out):
    cmd = [bfeed, "fetch", "--connect", addr, "--dataset", "d", "--mode", "eval", "--normalize", "none",
           "--shuffle", "off", "--size", "32", "--batch", "4", "--batch-index", "0", "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr))
    return np.load(os.path.join(out, "index.npy")), np.load(os.path.join(out, "image.npy"))


def main():
    bfeedd, bfeed = sys.argv[1:3]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "data")
        for cls in ("a", "b"):
            os.makedirs(os.path.join(root, cls))
        rng = np.random.default_rng(3)
        for i in range(3):
            Image.fromarray(rng.integers(0, 255, (48, 48, 3), dtype=np.uint8)).save(os.path.join(root, "a", "%d.jpg" % i))
        big = os.path.join(root, "b", "big.jpg")
        Image.new("RGB", (4000, 4000), COLOUR).save(big, progressive=True, quality=90)
        assert Image.open(big).info.get("progressive"), "Pillow wrote a progressive JPEG"

        for limit, served in (("16M", False), ("256M", True)):
            run = os.path.join(tmp, limit)
            os.makedirs(run)
            d = Daemon(bfeedd, run, ["d=" + root], extra=["--max-decode-memory", limit])
            try:
                index, image = fetch(bfeed, d.addr, os.path.join(run, "out"))
            finally:
                err = d.stop()
            log = d.log()
            if err:
                failures.append("limit %s: %s" % (limit, err))
            if served:
                ok = list(index) == [0, 1, 2, 3]
                # bf16 of a uniform colour: every pixel of sample 3 is it.
                px = (image[3].astype(np.uint32) << 16).view(np.float32)  # normalize none: 0..255
                ok = ok and all(abs(float(px[c].mean()) - COLOUR[c]) <= 1.5 for c in range(3))
                if not ok:
                    failures.append("limit %s: the big image was not served as decoded (indices %s, mean %s)"
                                    % (limit, list(index), [float(px[c].mean()) for c in range(3)]))
            else:
                if 3 in list(index):
                    failures.append("limit %s: the over-limit image was served (indices %s)" % (limit, list(index)))
                if "big.jpg" not in log or "max_decode_memory" not in log:
                    failures.append("limit %s: the log does not name the file and the limit:\n%s" % (limit, log))
            print("limit %s: indices %s" % (limit, list(index)))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
