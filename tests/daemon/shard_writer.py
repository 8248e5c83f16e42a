"""Independent writers of TFRecord and WebDataset tar shards, for the tests.

TFRecords: tf.train.Example messages built with Google's protobuf runtime
(python3-protobuf) from a .proto written here and compiled by `protoc` at
test time (never bfeed's own .proto or code), framed with CRC-32C from
crcmod. Two variants of the message set are compiled: the published one
(repeated scalars packed, as TensorFlow writes them) and one with
[packed=false], so that both wire encodings of repeated fields are tested.
Tars: Python's tarfile.
"""
import importlib
import io
import os
import struct
import subprocess
import sys
import tarfile
import tempfile

import crcmod.predefined

_crc32c = crcmod.predefined.mkCrcFun("crc-32c")

PROTO = """
syntax = "proto3";
package %(pkg)s;
message BytesList { repeated bytes value = 1; }
message FloatList { repeated float value = 1 %(packed)s; }
message Int64List { repeated int64 value = 1 %(packed)s; }
message Feature {
  oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; }
}
message Features { map<string, Feature> feature = 1; }
message Example { Features features = 1; }
"""

_modules = {}


def example_module(packed=True):
    """The compiled message classes (packed or unpacked repeated scalars)."""
    key = "packed" if packed else "unpacked"
    if key in _modules:
        return _modules[key]
    d = tempfile.mkdtemp(prefix="bfeed-proto-")
    name = "tfex_%s" % key
    with open(os.path.join(d, name + ".proto"), "w") as f:
        f.write(PROTO % {"pkg": name, "packed": "" if packed else "[packed = false]"})
    subprocess.run(["protoc", "-I", d, "--python_out", d, name + ".proto"], check=True)
    sys.path.insert(0, d)
    _modules[key] = importlib.import_module(name + "_pb2")
    return _modules[key]


def masked_crc(data):
    c = _crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def example(image=None, label=None, features=None, packed=True, image_key="image/encoded",
            label_key="image/class/label", features_key="features"):
    """A serialized tf.train.Example with the given fields."""
    m = example_module(packed)
    ex = m.Example()
    if image is not None:
        ex.features.feature[image_key].bytes_list.value.append(image)
    if label is not None:
        ex.features.feature[label_key].int64_list.value.append(label)
    if features is not None:
        ex.features.feature[features_key].float_list.value.extend(features)
    return ex.SerializeToString()


def frame(data):
    """One TFRecord: length, masked CRC of the length, data, masked CRC of the data."""
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked_crc(n)) + data + struct.pack("<I", masked_crc(data))


def write_tfrecord(path, records):
    """Write framed records; returns each record's byte offset."""
    offsets, at = [], 0
    with open(path, "wb") as f:
        for r in records:
            b = frame(r)
            offsets.append(at)
            f.write(b)
            at += len(b)
    return offsets


def write_tar(path, members, fmt=tarfile.PAX_FORMAT):
    """members: (name, bytes) in order. Returns {name: data offset}."""
    with tarfile.open(path, "w", format=fmt) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            t.addfile(ti, io.BytesIO(data))
    with tarfile.open(path) as t:
        return {m.name: m.offset_data for m in t.getmembers()}
