"""bfeed.connect over several daemons (issue 14): "A,B" fans one stream out
over two daemons, and it yields exactly one daemon's batches, byte for
byte, in its order; both daemons serve, and the stream's stats carry the
per-member counts. bfeed.torch.Dataset with shard=(rank, world) per rank
over the same pool: each rank gets what it gets from one daemon."""
import pytest

import bfeed

OPTS = dict(batch=2, size=16, seed=5, epochs=2, window=4)  # demo: 80 samples, 40 batches an epoch


def blobs(b):
    return (b.epoch, b.index) + tuple(bytes(memoryview(b[name])) for name in ("image", "label", "index"))


def test_two_daemons_one_stream(two_daemons):
    a, b = two_daemons
    with bfeed.connect(a.addr) as c, c.stream("demo", **OPTS) as s:
        ref = [blobs(x) for x in s]
    assert len(ref) == 80
    with bfeed.connect(a.addr + "," + b.addr) as c, c.stream("demo", **OPTS) as s:
        got = [blobs(next(s)) for _ in range(40)]
        stats = s.stats()
        got += [blobs(x) for x in s]
    assert [g[:2] for g in got] == [r[:2] for r in ref]  # none missing, none twice, in order
    assert got == ref  # the same bytes
    served = [stats["member%d_batches" % k] for k in range(2)]
    assert sum(served) >= 40 and all(n > 0 for n in served), stats


def test_torch_ranks_over_a_pool(two_daemons):
    torch = pytest.importorskip("torch")
    import bfeed.torch

    a, b = two_daemons
    opts = dict(batch=4, size=16, seed=3)

    def ranks(addr):
        out = []
        for rank in range(2):
            ds = bfeed.torch.Dataset(addr, "demo", rank=rank, world_size=2, **opts)
            out.append([(tuple(x["index"].tolist()), x["image"].view(torch.int16).numpy().tobytes()) for x in ds])
        return out

    one, pool = ranks(a.addr), ranks(a.addr + "," + b.addr)
    assert pool == one
    assert len(one[0]) == 10 and not set(i for k, _ in one[0] for i in k) & set(i for k, _ in one[1] for i in k)
