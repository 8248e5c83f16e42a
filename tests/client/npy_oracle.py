#!/usr/bin/python3
"""Oracle for the .npy writer (client/npy.c), judged by numpy.

usage: npy_oracle.py TEST_NPY_BINARY

Runs `TEST_NPY_BINARY --write DIR`, then reads every file with numpy.load
and checks dtype, shape and each value against the formulas below (the same
as fill() in tests/client/test_npy.c), and that the header is format 1.0 with the
data at a multiple of 64 bytes. Missing numpy is a failure, not a skip.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

# name: (numpy dtype, shape)
CASES = {
    "u8_scalar": ("u1", ()),
    "u8_5": ("u1", (5,)),
    "u8_3x4x5": ("u1", (3, 4, 5)),
    "bf16_2x3": ("<u2", (2, 3)),
    "bf16_2x3x4x5": ("<u2", (2, 3, 4, 5)),
    "f32_scalar": ("<f4", ()),
    "f32_7": ("<f4", (7,)),
    "f32_0x3": ("<f4", (0, 3)),
    "i32_4x2": ("<i4", (4, 2)),
    "i32_3x0x2": ("<i4", (3, 0, 2)),
    "i64_6": ("<i8", (6,)),
    "i64_0": ("<i8", (0,)),
    "i64_8d": ("<i8", (1, 2, 1, 3, 1, 1, 2, 1)),
    "u8_1000x3": ("u1", (1000, 3)),
}


def expected(dtype, shape):
    i = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    if dtype == "u1":
        v = (i * 37 + 11) & 0xFF
    elif dtype == "<u2":
        v = (0x3F80 + i * 0x0123) & 0xFFFF
    elif dtype == "<f4":
        v = (i - 3).astype(np.float32) * np.float32(0.375)
    elif dtype == "<i4":
        v = i * 123456789 - 400000000
    else:
        v = i * 1234567890123 - (1 << 40)
    return v.astype(dtype).reshape(shape)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.argv[1], "--write", tmp], check=True)
        written = sorted(f[:-4] for f in os.listdir(tmp) if f.endswith(".npy"))
        if written != sorted(CASES):
            failures.append(f"files written: {written}")
        for name, (dtype, shape) in CASES.items():
            path = os.path.join(tmp, name + ".npy")
            if not os.path.exists(path):
                continue
            try:
                with open(path, "rb") as f:
                    version = np.lib.format.read_magic(f)
                    hdr_shape, fortran, hdr_dtype = np.lib.format.read_array_header_1_0(f)
                    data_at = f.tell()
                a = np.load(path, allow_pickle=False)
            except ValueError as e:  # numpy rejects the header
                failures.append(f"{name}: {e}")
                continue
            want = expected(dtype, shape)
            problems = []
            if version != (1, 0):
                problems.append(f"version {version}")
            if data_at % 64:
                problems.append(f"data at offset {data_at}, not a multiple of 64")
            if fortran:
                problems.append("fortran_order is True")
            if hdr_shape != shape or a.shape != shape:
                problems.append(f"shape {a.shape}, want {shape}")
            if a.dtype != np.dtype(dtype) or hdr_dtype != np.dtype(dtype):
                problems.append(f"dtype {a.dtype.str}, want {np.dtype(dtype).str}")
            if a.shape == want.shape and not np.array_equal(a, want):
                problems.append("values differ")
            if os.path.getsize(path) != data_at + want.nbytes:
                problems.append(f"size {os.path.getsize(path)}, want {data_at + want.nbytes}")
            if problems:
                failures.append(f"{name}: " + "; ".join(problems))
            else:
                print(f"{name}: {a.dtype.str} {a.shape} ok")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(f"{len(failures)} failures")
    print("npy_oracle: ok")


if __name__ == "__main__":
    main()
