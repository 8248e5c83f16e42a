"""Oracle for `bfeed make-demo --format tfrecord|tar`.

The three formats are written with the same options; the folder's JPEGs,
in its sample order ((class, path) sorted, labels the sorted class
indices), must be exactly the images of the TFRecord shards (every frame's
masked CRC-32C checked with crcmod, every record parsed as a
tf.train.Example by Google's protobuf runtime: image/encoded, and
image/class/label counted from 1) and of the tar shards (Python's tarfile:
KEY.jpg and KEY.cls, labels from 0), in shard-name order. The writers are
also deterministic: a second run writes the same bytes.

usage: demo_shards_oracle.py BFEED SHARD_WRITER_DIR
"""
import filecmp
import os
import struct
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, sys.argv[2])
import shard_writer as w  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import check, failures  # noqa: E402


def read_tfrecord(path):
    out, data, at = [], open(path, "rb").read(), 0
    while at < len(data):
        n = struct.unpack_from("<Q", data, at)[0]
        check(struct.unpack_from("<I", data, at + 8)[0] == w.masked_crc(data[at:at + 8]), "%s@%d length CRC" % (path, at))
        rec = data[at + 12:at + 12 + n]
        check(struct.unpack_from("<I", data, at + 12 + n)[0] == w.masked_crc(rec), "%s@%d data CRC" % (path, at))
        ex = w.example_module().Example()
        ex.ParseFromString(rec)
        f = ex.features.feature
        out.append((f["image/encoded"].bytes_list.value[0], f["image/class/label"].int64_list.value[0] - 1))
        at += 12 + n + 4
    return out


def main():
    bfeed = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="bfeed-demo-shards-") as tmp:
        def make(fmt, d):
            r = subprocess.run([bfeed, "make-demo", os.path.join(tmp, d), "--format", fmt, "--train", "6", "--val", "2"],
                               capture_output=True, text=True)
            check(r.returncode == 0, "make-demo --format %s: %s" % (fmt, r.stderr))
        for fmt in ("folder", "tfrecord", "tar"):
            make(fmt, fmt)
        make("tfrecord", "tfrecord2")
        make("tar", "tar2")
        for split, tf_split, tar_split, nshards in [("train", "train", "train", 4), ("val", "validation", "val", 1)]:
            root = os.path.join(tmp, "folder", split)
            want = []
            for c, cls in enumerate(sorted(os.listdir(root))):
                for f in sorted(os.listdir(os.path.join(root, cls))):
                    want.append((open(os.path.join(root, cls, f), "rb").read(), c))
            tfs = sorted(f for f in os.listdir(os.path.join(tmp, "tfrecord")) if f.startswith(tf_split + "-"))
            check(tfs == ["%s-%05d-of-%05d" % (tf_split, i, nshards) for i in range(nshards)], "tfrecord names %s" % tfs)
            got = [s for f in tfs for s in read_tfrecord(os.path.join(tmp, "tfrecord", f))]
            check(got == want, "%s: TFRecord images and labels are the folder's, in its order" % split)
            tars = sorted(f for f in os.listdir(os.path.join(tmp, "tar")) if f.startswith(tar_split + "-"))
            check(tars == ["%s-%06d.tar" % (tar_split, i) for i in range(nshards)], "tar names %s" % tars)
            got = []
            for f in tars:
                with tarfile.open(os.path.join(tmp, "tar", f)) as t:
                    ms = t.getmembers()
                    for jpg, cls in zip(ms[0::2], ms[1::2]):
                        check(jpg.name.endswith(".jpg") and cls.name == jpg.name[:-4] + ".cls", "member pair %s" % jpg.name)
                        got.append((t.extractfile(jpg).read(), int(t.extractfile(cls).read())))
            check(got == want, "%s: tar images and labels are the folder's, in its order" % split)
        for a, b in [("tfrecord", "tfrecord2"), ("tar", "tar2")]:
            names = sorted(os.listdir(os.path.join(tmp, a)))
            match, mismatch, errors = filecmp.cmpfiles(os.path.join(tmp, a), os.path.join(tmp, b), names, shallow=False)
            check(not mismatch and not errors and len(match) == len(names), "%s: a second run writes the same bytes" % a)
        r = subprocess.run([bfeed, "make-demo", os.path.join(tmp, "x"), "--format", "zip"], capture_output=True, text=True)
        check(r.returncode == 2 and "expected folder, tfrecord or tar" in r.stderr, "--format zip refused")
    print("%d failure(s)" % len(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
