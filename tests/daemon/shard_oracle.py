"""Oracle for bfeed's TFRecord and tar indexing (daemon/sources/tfrecord.c,
tf_example.c, tar_shards.c), through tools/shard_dump.

Shards are written by shard_writer.py (Google's protobuf runtime, crcmod,
Python's tarfile) and the index bfeed builds is compared with what was
written: offsets, lengths, labels, float features (float32 exactly) and
the image bytes as served. Damage is checked too: a record with a bad data
CRC, a garbage Example, a record whose feature has the wrong kind, a
missing image, a truncated shard, a bad length CRC, a GZIP shard; a tar
sample without a label, with a non-integer label, without an image, and
GNU and PAX headers (long names). Each bad record must be skipped, counted
and logged with its file and byte offset; the rest must be indexed.

usage: shard_oracle.py SHARD_DUMP FIXTURE_DIR
"""
import gzip
import os
import struct
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shard_writer as w  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import check, failures  # noqa: E402


def dump(tool, args, outdir):
    p = subprocess.run([tool] + args + [outdir], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr
    lines = p.stdout.splitlines()
    skipped = int(lines[0].split()[1])
    rows = []
    for ln in lines[1:]:
        f = ln.split()
        rows.append((int(f[0]), int(f[1]), None if f[2] == "none" else int(f[2]), [float(v) for v in f[3:]]))
    return (skipped, rows), p.stderr


def served(outdir, i):
    with open(os.path.join(outdir, "%d.bin" % i), "rb") as f:
        return f.read()


def test_tfrecord(tool, images, tmp):
    out = tempfile.mkdtemp(dir=tmp)
    feats = [np.float32([0.5, -1.25, 3.0e-7]), np.float32([1e30, -0.0, 7.75])]
    recs = [
        w.example(images[0], 1, features=feats[0]),                       # 0 good, packed
        w.example(images[1], 2, features=feats[1], packed=False),         # 1 good, unpacked
        b"\x0a\x05garbage-not-an-example",                                # 2 garbage
        w.example(images[2], 3, features=feats[0]),                       # 3 bad data CRC (below)
        w.example(None, 4, features=feats[0]),                            # 4 no image
        None,                                                             # 5 label as bytes (below)
        w.example(images[3], 5, features=feats[1]),                       # 6 good
    ]
    # Record 5: a label stored as a bytes_list.
    m = w.example_module()
    ex = m.Example()
    ex.features.feature["image/encoded"].bytes_list.value.append(images[3])
    ex.features.feature["image/class/label"].bytes_list.value.append(b"7")
    ex.features.feature["features"].float_list.value.extend(feats[0])
    recs[5] = ex.SerializeToString()
    path = os.path.join(tmp, "train-00000-of-00001")
    offs = w.write_tfrecord(path, recs)
    data = bytearray(open(path, "rb").read())
    data[offs[3] + 12 + 5] ^= 0x40  # inside record 3's data: its data CRC no longer matches
    open(path, "wb").write(data)
    res, log = dump(tool, ["tfrecord", path, "image/encoded", "image/class/label", "features"], out)
    check(res is not None, "tfrecord dump ran: " + log)
    if res is None:
        return
    skipped, rows = res
    want = [0, 1, 6]
    check(skipped == 4, "4 bad records skipped (got %d)" % skipped)
    check([r[0] for r in rows] == [offs[i] for i in want], "good records' offsets %s" % [r[0] for r in rows])
    check([r[1] for r in rows] == [len(recs[i]) for i in want], "good records' lengths")
    check([r[2] for r in rows] == [1, 2, 5], "labels as stored")
    for k, (i, f) in enumerate(zip(want, [feats[0], feats[1], feats[1]])):
        check(np.array_equal(np.float32(rows[k][3]), f), "record %d float features exact" % i)
    for k, i in enumerate(want):
        img = images[{0: 0, 1: 1, 6: 3}[i]]
        check(served(out, k) == img, "record %d image bytes served as written" % i)
    for i, why in [(2, "not a tf.train.Example"), (3, "bad data CRC-32C"), (4, "no feature 'image/encoded'"),
                   (5, "feature 'image/class/label' is a bytes_list, not an int64_list")]:
        check("%s: record at byte offset %d: %s" % (path, offs[i], why) in log,
              "log names file, offset %d and '%s'" % (offs[i], why))

    # Features only: no image key, features of differing length skipped.
    path2 = os.path.join(tmp, "feat.tfrecord")
    offs2 = w.write_tfrecord(path2, [w.example(None, 0, features=feats[0]), w.example(None, 1, features=[1.0]),
                                     w.example(None, 2, features=feats[1], packed=False)])
    res, log = dump(tool, ["tfrecord", path2, "-", "image/class/label", "features"], out)
    check(res is not None and res[0] == 1 and [r[2] for r in res[1]] == [0, 2], "features-only shard")
    check("%s: record at byte offset %d" % (path2, offs2[1]) in log, "a features length mismatch is logged")

    # Truncated shard: the records before the cut stay.
    path3 = os.path.join(tmp, "trunc.tfrecord")
    offs3 = w.write_tfrecord(path3, [w.example(images[0], 1), w.example(images[1], 2), w.example(images[2], 3)])
    size = os.path.getsize(path3)
    with open(path3, "r+b") as f:
        f.truncate(size - 100)
    res, log = dump(tool, ["tfrecord", path3, "image/encoded", "image/class/label", "-"], out)
    check(res is not None and res[0] == 1 and [r[0] for r in res[1]] == offs3[:2], "truncated shard keeps 2")
    check("%s: record at byte offset %d: truncated record" % (path3, offs3[2]) in log, "truncation logged")

    # A bad length CRC: nothing after it can be framed.
    data = bytearray(open(path3 + "", "rb").read())
    path4 = os.path.join(tmp, "badlen.tfrecord")
    offs4 = w.write_tfrecord(path4, [w.example(images[0], 1), w.example(images[1], 2)])
    data = bytearray(open(path4, "rb").read())
    data[offs4[1] + 8] ^= 1
    open(path4, "wb").write(data)
    res, log = dump(tool, ["tfrecord", path4, "image/encoded", "image/class/label", "-"], out)
    check(res is not None and res[0] == 1 and len(res[1]) == 1, "bad length CRC: one record kept")
    check("record at byte offset %d: bad length CRC-32C" % offs4[1] in log, "bad length CRC logged")

    # GZIP: refused, naming the file.
    path5 = os.path.join(tmp, "gz.tfrecord")
    with gzip.open(path5, "wb") as f:
        f.write(w.frame(w.example(images[0], 1)))
    res, log = dump(tool, ["tfrecord", path5, "image/encoded", "image/class/label", "-"], out)
    check(res is None and path5 in log and "GZIP" in log, "GZIP shard refused clearly: " + log.strip())


def test_tar(tool, images, tmp):
    out = tempfile.mkdtemp(dir=tmp)
    long_dir = "d" * 120 + "/"
    members = [
        ("s/000000.jpg", images[0]), ("s/000000.cls", b"3\n"),          # 0 good
        ("s/000001.cls", b" 7 "), ("s/000001.jpeg", images[1]),         # 1 good, label first
        ("s/000002.jpg", images[2]),                                    # 2 no label
        ("s/000003.jpg", images[3]), ("s/000003.cls", b"cat"),          # 3 bad label
        ("s/000004.cls", b"1"), ("s/000004.txt", b"hello"),             # 4 no image
        (long_dir + "000005.jpg", images[0]), (long_dir + "000005.cls", b"0"),  # 5 good, long name
    ]
    for fmt, tag in [(tarfile.PAX_FORMAT, "pax"), (tarfile.GNU_FORMAT, "gnu")]:
        path = os.path.join(tmp, "shard-%s.tar" % tag)
        offs = w.write_tar(path, members, fmt)
        res, log = dump(tool, ["tar", path, "cls"], out)
        check(res is not None, "tar dump ran: " + log)
        if res is None:
            continue
        skipped, rows = res
        check(skipped == 3, "%s: 3 samples skipped (got %d)" % (tag, skipped))
        check([r[0] for r in rows] == [offs["s/000000.jpg"], offs["s/000001.jpeg"], offs[long_dir + "000005.jpg"]],
              "%s: image offsets are tarfile's offset_data" % tag)
        check([r[2] for r in rows] == [3, 7, 0], "%s: labels from .cls" % tag)
        for k, img in enumerate([images[0], images[1], images[0]]):
            check(served(out, k) == img, "%s: sample %d bytes" % (tag, k))
        for key, first, why in [("s/000002", "s/000002.jpg", "no .cls label member"),
                                ("s/000003", "s/000003.jpg", "label member holds 'cat', not an integer"),
                                ("s/000004", "s/000004.cls", "no image member")]:
            check("%s: sample '%s' (member at byte offset %d): %s" % (path, key, offs[first], why) in log,
                  "%s: logged: %s %s" % (tag, key, why))
    # Compressed tar: refused.
    path = os.path.join(tmp, "c.tar.gz")
    with tarfile.open(path, "w:gz") as t:
        ti = tarfile.TarInfo("a.jpg")
        ti.size = 3
        import io
        t.addfile(ti, io.BytesIO(b"abc"))
    res, log = dump(tool, ["tar", path, "cls"], out)
    check(res is None and "compressed" in log and path in log, "compressed tar refused: " + log.strip())


def main():
    tool, fixtures = sys.argv[1], sys.argv[2]
    names = sorted(os.listdir(fixtures))
    images = [open(os.path.join(fixtures, n), "rb").read() for n in names if n.lower().endswith(".jpeg")]
    with tempfile.TemporaryDirectory() as tmp:
        test_tfrecord(tool, images, tmp)
        test_tar(tool, images, tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
