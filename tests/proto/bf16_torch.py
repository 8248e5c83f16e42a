"""bf16_from_f32_array against torch's float32 -> bfloat16 cast.

Usage: bf16_torch.py BF16_DUMP_TOOL

Feeds a few million random float32 bit patterns (uniform over all 2^32, plus
a band around the subnormals, plus the special cases) through the C tool and
through torch.Tensor.to(torch.bfloat16), and requires equal bits for every
non-NaN input. For NaN inputs only NaN-ness is compared: torch canonicalises
NaNs (0x7fc0 in its scalar path, 0xffff in its vector path) while bf16.h
keeps the sign and top payload bits, which test_bf16 checks exhaustively.
torch is required: a missing torch is an error, not a skip.
"""
import subprocess
import sys

import numpy as np
import torch  # noqa: E402  -- must be installed; ImportError fails the test

SPECIALS = [
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
    0x7F800001, 0x7FA00000, 0xFF812345, 0x7FFFFFFF, 0x3F800000, 0x3F808000,
    0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7F0000, 0x7F7F7FFF, 0x7F7F8000,
    0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x00008000, 0x00008001, 0x00018000,
    0x00010000, 0x807FFFFF, 0x007F8000, 0x00800000, 0x3EAAAAAB, 0xC0490FDB,
]


def main():
    tool = sys.argv[1]
    rng = np.random.default_rng(20240607)
    parts = [
        np.array(SPECIALS, dtype=np.uint32),
        rng.integers(0, 1 << 32, size=4_000_000, dtype=np.uint64).astype(np.uint32),
        # subnormals and the smallest normals, both signs
        (rng.integers(0, 1 << 24, size=500_000, dtype=np.uint64)
         | (rng.integers(0, 2, size=500_000, dtype=np.uint64) << 31)).astype(np.uint32),
        # exact ties (low 16 bits 0x8000) over all exponents
        ((rng.integers(0, 1 << 16, size=500_000, dtype=np.uint64) << 16) | 0x8000).astype(np.uint32),
    ]
    bits = np.concatenate(parts)
    src = bits.view(np.float32)

    run = subprocess.run([tool], input=src.tobytes(), capture_output=True, check=True)
    sys.stderr.write(run.stderr.decode())
    ours = np.frombuffer(run.stdout, dtype=np.uint16)
    if ours.size != src.size:
        print(f"FAIL: tool returned {ours.size} values for {src.size} inputs")
        return 1

    theirs = torch.from_numpy(src.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    # the 1-element path of torch too, for the specials
    scalar_theirs = np.array(
        [torch.tensor([v], dtype=torch.float32).to(torch.bfloat16).view(torch.int16).item() & 0xFFFF
         for v in src[:len(SPECIALS)]], dtype=np.uint16)

    nan_in = np.isnan(src)
    ours_nan = (ours & 0x7FFF) > 0x7F80
    theirs_nan = (theirs & 0x7FFF) > 0x7F80
    bad = np.flatnonzero(np.where(nan_in, ours_nan != theirs_nan, ours != theirs) | (ours_nan != nan_in))
    k = len(SPECIALS)
    bad_scalar = np.flatnonzero(np.where(nan_in[:k], ~((scalar_theirs & 0x7FFF) > 0x7F80),
                                         ours[:k] != scalar_theirs))
    for i in bad[:20]:
        print(f"MISMATCH f32 {bits[i]:08x}: ours {ours[i]:04x} torch {theirs[i]:04x}")
    for i in bad_scalar[:20]:
        print(f"MISMATCH (1-element) f32 {bits[i]:08x}: ours {ours[i]:04x} torch {scalar_theirs[i]:04x}")
    print(f"{src.size} inputs ({int(nan_in.sum())} NaN), {bad.size} mismatches vs torch, "
          f"{bad_scalar.size} vs torch's 1-element cast")
    return 1 if bad.size or bad_scalar.size else 0


if __name__ == "__main__":
    sys.exit(main())
