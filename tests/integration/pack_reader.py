"""An independent reader of bfeed's pack format, from PACK_FORMAT.md
alone: struct for the layout, crcmod's CRC-32C (never bfeed's code).

read_pack(OUT) -> (meta dict, [shard dict]) and raises PackError naming
what does not hold: magic, version, sizes, alignment, order, the index
CRC and every record's CRC.
"""
import os
import struct

import crcmod.predefined

crc32c = crcmod.predefined.mkCrcFun("crc-32c")

HEADER = struct.Struct("<8sIIQII")      # magic, version, dim, key, number, reserved
ENTRY = struct.Struct("<QIiII")         # off, len, label, crc, reserved
FOOTER = struct.Struct("<QIIQ8s")       # index_off, n, crc, size, magic
RAW = struct.Struct("<6sHII")           # magic, channels, width, height


class PackError(Exception):
    pass


def read_meta(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines[0] != "bfeed-pack 1" or "end" not in lines:
        raise PackError("%s: not a complete version-1 metadata file" % path)
    meta, classes = {}, []
    for ln in lines[1:lines.index("end")]:
        key, _, value = ln.partition(" ")
        if key == "class":
            classes.append(value)
        else:
            meta[key] = value
    for k in ("samples", "source_samples", "shards", "shard_samples", "skipped", "features", "labelled",
              "max_side", "short_side", "quality", "classes"):
        meta[k] = int(meta[k])
    for k in ("key", "source_fingerprint"):
        meta[k] = int(meta[k], 16)
    meta["class_names"] = classes
    return meta


def read_shard(path):
    data = open(path, "rb").read()
    if len(data) < HEADER.size + FOOTER.size:
        raise PackError("%s: too short" % path)
    magic, version, dim, key, number, reserved = HEADER.unpack_from(data, 0)
    index_off, n, crc, size, end_magic = FOOTER.unpack_from(data, len(data) - FOOTER.size)
    if magic != b"BFPACK\r\n" or end_magic != b"BFPKEND\n" or version != 1 or reserved != 0:
        raise PackError("%s: bad magic or version" % path)
    if size != len(data) or index_off % 8:
        raise PackError("%s: footer size %d, file %d" % (path, size, len(data)))
    feat_bytes = n * dim * 4
    if index_off + n * ENTRY.size + ((feat_bytes + 7) & ~7) + FOOTER.size != len(data):
        raise PackError("%s: index does not fill the tail" % path)
    covered = data[:HEADER.size] + data[index_off:len(data) - FOOTER.size]
    if crc32c(covered) != crc:
        raise PackError("%s: index CRC" % path)
    records, end = [], HEADER.size
    for k in range(n):
        off, ln, label, rcrc, res = ENTRY.unpack_from(data, index_off + k * ENTRY.size)
        if off % 8 or off < end or off + ln > index_off or res != 0:
            raise PackError("%s: record %d out of place" % (path, k))
        body = data[off:off + ln]
        if crc32c(body) != rcrc:
            raise PackError("%s: record %d CRC" % (path, k))
        if any(data[off + ln:(off + ln + 7) & ~7]):
            raise PackError("%s: record %d padding not zero" % (path, k))
        records.append({"off": off, "bytes": body, "label": label})
        end = off + ln
    feats = struct.unpack_from("<%df" % (n * dim), data, index_off + n * ENTRY.size) if dim else ()
    for k, r in enumerate(records):
        r["features"] = feats[k * dim:(k + 1) * dim]
    return {"number": number, "key": key, "dim": dim, "records": records}


def read_pack(out):
    meta = read_meta(os.path.join(out, "bfeed-pack.meta"))
    shards = [read_shard(os.path.join(out, "shard-%06d.bfpack" % k)) for k in range(meta["shards"])]
    for k, s in enumerate(shards):
        if s["number"] != k or s["key"] != meta["key"] or s["dim"] != meta["features"]:
            raise PackError("shard %d: number, key or features differ from the metadata" % k)
    if sum(len(s["records"]) for s in shards) != meta["samples"]:
        raise PackError("record count differs from the metadata")
    return meta, shards


def raw_pixels(body):
    """(width, height, HWC bytes) of a raw record."""
    magic, ch, w, h = RAW.unpack_from(body, 0)
    if magic != b"BFRAW1" or ch != 3 or len(body) != RAW.size + w * h * 3:
        raise PackError("not a raw record of its size")
    return w, h, body[RAW.size:]


def raw_record(img):
    """The raw record of a Pillow RGB image, written from the layout."""
    return RAW.pack(b"BFRAW1", 3, img.size[0], img.size[1]) + img.tobytes()


def thumbnail_size(w, h, cap):
    """Pillow's Image.thumbnail((cap, cap)) size rule (its round_aspect),
    on a w x h image; unchanged within the cap."""
    import math
    if cap == 0 or (w <= cap and h <= cap):
        return w, h
    aspect = w / h
    x, y = cap, cap

    def round_aspect(number, key):
        return max(min(math.floor(number), math.ceil(number), key=key), 1)
    if x / y >= aspect:
        x = round_aspect(y * aspect, key=lambda n: abs(aspect - n / y))
    else:
        y = round_aspect(x / aspect, key=lambda n: 0 if n == 0 else abs(aspect - x / n))
    return x, y
