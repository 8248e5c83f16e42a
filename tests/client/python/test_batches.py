"""bfeed.Batch and bfeed.Tensor against independent oracles: torchvision's
eval transform on Pillow's decode, NumPy for the .npy and text datasets,
and the library's own buffer addresses for zero copy."""
import ctypes
import gc
import weakref

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

import bfeed

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def test_import_needs_neither_torch_nor_numpy():
    import subprocess
    import sys
    code = ("import sys, bfeed; bfeed.option_names(); "
            "sys.exit(1 if 'torch' in sys.modules or 'numpy' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_eval_batch_equals_torchvision_on_pillow(daemon, data):
    """Resize(256), CenterCrop(224), ToTensor, Normalize on ImageFolder's
    Pillow decode, in float32: every bfeed value is that value rounded to bf16, i.e. within
    half a bf16 step (2^(e-8) for a value in [2^e, 2^(e+1))) of it."""
    ref = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
    n = len(data["images"])
    with bfeed.connect(daemon.addr) as c, c.stream("fx", mode="eval", batch=n, size=224, epochs=1) as s:
        batches = list(s)
    assert len(batches) == 1
    b = batches[0]
    img, label, index = b.torch("image"), b.torch("label"), b.torch("index")
    assert img.dtype == torch.bfloat16 and img.shape == (n, 3, 224, 224)
    assert label.dtype == torch.int64 and index.dtype == torch.int64
    assert index.tolist() == list(range(n)) and label.tolist() == list(range(n))
    for i, path in enumerate(data["images"]):
        want = ref(Image.open(path).convert("RGB"))
        err = (img[i].float() - want).abs()
        half_step = torch.exp2(torch.floor(torch.log2(want.abs().clamp_min(2 ** -100))) - 8)
        worst = (err / half_step).max().item()
        assert worst <= 1 + 1e-6, "%s: an error of %.2f half bf16 steps (mean abs error %.5f)" % (
            path, worst, err.mean().item())


def test_zero_copy_and_alignment(daemon):
    with bfeed.connect(daemon.addr) as c, c.stream("demo", batch=4, size=32, epochs=1) as s:
        b = next(s)
        assert b.names() == ["image", "label", "index"] and "image" in b and "nope" not in b
        for name in b.names():
            t = b[name]
            assert t.data_ptr % 64 == 0, name
            assert torch.from_dlpack(t).data_ptr() == t.data_ptr
            assert b.numpy(name).ctypes.data == t.data_ptr
            assert t.__dlpack_device__() == (1, 0)
        assert b.torch("image").data_ptr() == b["image"].data_ptr  # bf16: no copy
        assert b.torch("index").data_ptr() == b["index"].data_ptr  # int64: no copy
        assert np.from_dlpack(b["index"]).ctypes.data == b["index"].data_ptr
        raw = (ctypes.c_char * b["image"].nbytes).from_buffer(b["image"])  # a plain-bytes buffer request
        assert ctypes.addressof(raw) == b["image"].data_ptr
        del raw
        bits = b.numpy("image")
        assert bits.dtype == np.uint16  # no ml_dtypes here: uint16 bit patterns
        assert np.array_equal(bits, b.torch("image").view(torch.int16).numpy().view(np.uint16))
        assert b.torch("label").tolist() == b.numpy("label").tolist()
        with pytest.raises(KeyError):
            b["nope"]


def test_memory_lives_while_a_consumer_does(daemon):
    with bfeed.connect(daemon.addr) as c, c.stream("demo", batch=2, size=16) as s:
        b = next(s)
        img = b.torch("image")
        arr = b.numpy("index")
        copy = img.clone()
        alive = weakref.ref(b)
        del b
        gc.collect()
        assert alive() is not None  # the torch tensor and the array hold it
        for _ in range(8):  # the pool may hand the memory to new batches only when freed
            next(s)
        assert torch.equal(img, copy)
        del img
        gc.collect()
        assert alive() is not None  # the array still does
        del arr
        gc.collect()
        assert alive() is None


def test_no_growth_over_10000_batches(daemon):
    freed = []
    with bfeed.connect(daemon.addr) as c, c.stream("demo", batch=1, size=8, window=16) as s:
        def run(n):
            for _ in range(n):
                b = next(s)
                weakref.finalize(b, freed.append, 1)
                x, y = b.torch("image"), b.torch("label")
                assert x.shape == (1, 3, 8, 8) and y.dtype == torch.int64
                b.numpy("index")
        run(1000)
        before = _rss()
        run(10000)
        gc.collect()
        grown = _rss() - before
    assert len(freed) == 11000  # every batch released
    assert grown < 4 << 20, "RSS grew by %d bytes over 10,000 batches" % grown


def _rss():
    with open("/proc/self/statm") as f:
        import resource
        return int(f.read().split()[1]) * resource.getpagesize()


def test_npy_features_as_numpy(daemon, data):
    with bfeed.connect(daemon.addr) as c, c.stream("npy", batch=5, mode="eval", epochs=1, keep_partial=True) as s:
        assert s.samples == 23 and s.batches_per_epoch == 5
        got = [(b.torch("features").float(), b.torch("index")) for b in s]
    feats = torch.cat([f for f, _ in got])
    index = torch.cat([i for _, i in got])
    assert index.tolist() == list(range(23))
    want = torch.from_numpy(data["features"]).to(torch.bfloat16).float()
    assert torch.equal(feats, want)  # x/8 is exact in bf16 only when rounding right


def test_text_tokens_pooled_and_length(daemon, data):
    table, lines = data["table"], data["lines"]
    with bfeed.connect(daemon.addr) as c:
        with c.stream("txt", batch=4, shuffle="off", epochs=1) as s:
            b = next(s)
            tok, length, index = b.torch("tokens"), b.torch("length"), b.torch("index")
        with c.stream("txt", batch=4, shuffle="off", epochs=1, pool="mean") as s:
            pooled = next(s).torch("pooled")
    assert tok.dtype == torch.bfloat16 and pooled.dtype == torch.bfloat16
    assert length.dtype == torch.int64 and index.dtype == torch.int64
    for row, i in enumerate(index.tolist()):
        words = lines[i]
        assert length[row].item() == len(words)
        want = torch.from_numpy(np.stack([table[w] for w in words])).to(torch.bfloat16)
        assert torch.equal(tok[row, :len(words)], want)
        assert torch.all(tok[row, len(words):] == 0)
        mean = torch.from_numpy(np.stack([table[w] for w in words])).mean(0)
        assert torch.allclose(pooled[row].float(), mean, atol=2 ** -7, rtol=2 ** -7)


@pytest.mark.parametrize("codec", ["u8", "u8+zstd:1", "u8+zstd:5"])
@pytest.mark.parametrize("opts", [dict(mode="train", seed=3), dict(mode="eval", layout="nhwc"),
                                  dict(mode="train", seed=9, layout="nhwc", normalize="none"),
                                  dict(mode="eval", normalize="none")])
def test_u8_codec_equals_none(daemon, codec, opts):
    """Codec u8 expands 8-bit pixels through the stream's table in libbfeed:
    every tensor (names, dtypes, shapes, bytes) as codec none has it, at
    about half the wire bytes (plus the table), still 64-byte aligned."""
    def run(c):
        # the socket: a shared-memory stream carries every codec raw (PROTOCOL.md)
        with bfeed.connect(daemon.addr, shm=False) as cl, cl.stream("fx", batch=3, size=40, epochs=2, codec=c,
                                                          keep_partial=True, **opts) as s:
            out = []
            for b in s:
                assert all(b[n].data_ptr % 64 == 0 for n in b.names())
                out.append((b.wire_bytes, [(n, b[n].dtype, b[n].shape, b.numpy(n).tobytes()) for n in b.names()]))
            return out
    ref, got = run("none"), run(codec)
    assert len(ref) == len(got) > 2
    for (wr, r), (wg, g) in zip(ref, got):
        assert r == g
        # a byte instead of two per image value, plus the head and table (PROTOCOL.md)
        u8_wire = wr - len(r[0][3]) // 2 + 1540
        assert wg == u8_wire if codec == "u8" else wg < u8_wire


def test_shm_equals_socket(daemon):
    """On a unix: address batches come from a shared-memory ring (no socket
    copies): the torch tensors are those the socket brings, and a tensor
    kept past its stream and client stays valid (the mapping lives while a
    batch in it does)."""
    def run(shm):
        with bfeed.connect(daemon.addr, shm=shm) as c, c.stream("fx", batch=1, size=24, epochs=2, seed=5) as s:
            out = [(b.epoch, b.index, b.torch("image"), b.torch("label").clone()) for b in s]
            counters = s.stats()
        return out, counters
    got, shm_ctr = run(True)
    ref, sock_ctr = run(False)
    # every batch is kept here, so once all slots are held the rest come
    # over the socket (PROTOCOL.md "Shared memory"): both kinds are checked
    assert 0 < shm_ctr["shm_batches"] < len(got)
    assert sock_ctr["shm_batches"] == 0 and 0 < shm_ctr["kernel_copy_bytes"] < sock_ctr["kernel_copy_bytes"]
    assert len(got) == len(ref) > 2
    for (e1, i1, x1, y1), (e2, i2, x2, y2) in zip(got, ref):
        assert (e1, i1) == (e2, i2)
        assert x1.dtype == torch.bfloat16 and torch.equal(x1, x2) and torch.equal(y1, y2)
