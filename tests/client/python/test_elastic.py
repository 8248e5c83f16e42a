"""The training loop's side (issue 21): elastic resume on another number of
ranks (start_sample), the state taken from the batches the loop received
with 0, 1 or 4 DataLoader workers, equal-length evaluation (eval_pad mask,
a prime number of samples, 3 ranks x 2 workers) and the subsets of a
stream's batches libbfeed follows (select stride and residue), judged by
the facts that do not come from bfeed: which dataset indices arrive, how
often, and the npy table's own values."""
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import bfeed
import bfeed.torch

DEMO = 80  # conftest: make-demo --train 10 (8 classes x 10)


def _loader(ds, workers):
    # torch 1.13 allows a timeout with workers only
    return bfeed.torch.DataLoader(ds, num_workers=workers, **(dict(timeout=60) if workers else {}))


def _indices(batches):
    return [i for b in batches for i in b["index"].tolist()]


def _run(addr, world, state=None, steps=None, workers=0, epoch=0, **opts):
    """Every rank of a world of `world` from `state` for `steps` batches
    (None: to the end of the epoch): (indices per rank, states per rank)."""
    got, states = [], []
    for rank in range(world):
        ds = bfeed.torch.Dataset(addr, "demo", rank=rank, world_size=world, **opts)
        if state is not None:
            ds.load_state_dict(state)
        ds.set_epoch(epoch)
        loader = _loader(ds, workers)
        seen = []
        for b in loader:
            seen.append(b)
            if steps is not None and len(seen) == steps:
                break
        got.append(_indices(seen))
        states.append(loader.state_dict())
        del loader
    return got, states


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("after", [3, 5])
def test_elastic_resume_covers_the_epoch_once(daemon, workers, after):
    """4 ranks x 5 steps of batch 1, then 3 (or 5) ranks to the epoch's
    end: 20 + 60 samples, every index of the epoch exactly once. With
    DataLoader workers in both runs (2, then 3)."""
    opts = dict(batch=1, size=16, seed=11)
    first, states = _run(daemon.addr, 4, steps=5, workers=workers, **opts)
    assert all(len(g) == 5 for g in first)
    assert all(s == states[0] for s in states)  # every rank at the same step saves the same state
    assert states[0] == {"epoch": 0, "batch": 5, "samples": 20, "world_size": 4, "start_sample": 0}
    rest, ends = _run(daemon.addr, after, state=states[0], workers=workers + 1, **opts)
    assert all(len(g) == 60 // after for g in rest)
    union = [i for g in first + rest for i in g]
    assert sorted(union) == list(range(DEMO)), "not the epoch once: %s" % sorted(union)
    assert all(e["epoch"] == 1 and e["batch"] == 0 for e in ends)
    # The next epoch is a fresh run's on the new world size.
    nxt, _ = _run(daemon.addr, after, state=ends[0], steps=4, epoch=1, **opts)
    fresh, _ = _run(daemon.addr, after, steps=4, epoch=1, **opts)
    assert nxt == fresh


def test_elastic_state_of_an_elastic_run(daemon):
    """Resumed on 5 ranks, saved again after 2 steps and resumed on 2: the
    state carries start_sample, and the three runs still see each index of
    the epoch at most once and all but the (80 - 30) mod 2 = 0 left over."""
    opts = dict(batch=2, size=16, seed=4)
    a, sa = _run(daemon.addr, 4, steps=2, **opts)  # 16 samples
    b, sb = _run(daemon.addr, 5, state=sa[0], steps=1, **opts)  # 10 more
    assert sb[0] == {"epoch": 0, "batch": 1, "samples": 26, "world_size": 5, "start_sample": 16}
    # The same world size resumes the elastic run itself, batch for batch.
    b2, _ = _run(daemon.addr, 5, state=sa[0], steps=3, **opts)
    b3, _ = _run(daemon.addr, 5, state=sb[0], steps=2, **opts)
    assert [x[:2] for x in b2] == b and [x[2:] for x in b2] == b3
    c, _ = _run(daemon.addr, 3, state=sb[0], **opts)  # 54 left: 3 x 9 = 27 batches of 2 -> 3 x 18
    union = [i for g in a + b + c for i in g]
    assert len(union) == len(set(union)) == 16 + 10 + 54


@pytest.mark.parametrize("workers", [0, 1, 4])
def test_state_from_the_main_process(daemon, workers):
    """bfeed.torch.DataLoader's state after k batches (mid-epoch, the last,
    across the epoch's end) is the same with 0, 1 or 4 workers, and loading
    it continues the uninterrupted sequence (checked with 2 workers)."""
    opts = dict(batch=4, size=16, seed=3)  # 20 batches an epoch
    ref = bfeed.torch.Dataset(daemon.addr, "demo", **opts)
    whole = [_key(b) for e in (0, 1) for b in (ref.set_epoch(e) or ref)]
    assert len(whole) == 40
    for k in (7, 19, 20):
        ds = bfeed.torch.Dataset(daemon.addr, "demo", **opts)
        loader = _loader(ds, workers)
        seen = []
        for b in loader:
            seen.append(_key(b))
            if len(seen) == k:
                break
        state = loader.state_dict()
        want = (1, 0, 0) if k == 20 else (0, k, 4 * k)
        assert (state["epoch"], state["batch"], state["samples"]) == want, (k, state)
        assert seen == whole[:k]
        del loader
        again = bfeed.torch.Dataset(daemon.addr, "demo", **opts)
        again.load_state_dict(state)
        rest = []
        for e in (state["epoch"], 1) if state["epoch"] == 0 else (1,):
            again.set_epoch(e)
            rest += [_key(b) for b in bfeed.torch.DataLoader(again, num_workers=2, timeout=60)]
        assert seen + rest == whole, k


def test_state_dict_of_the_last_batch_with_torchs_loader(daemon):
    """torch's own DataLoader with workers: ds.state_dict(last_batch)."""
    opts = dict(batch=4, size=16, seed=3)
    ds = bfeed.torch.Dataset(daemon.addr, "demo", **opts)
    last = None
    for i, b in enumerate(DataLoader(ds, batch_size=None, num_workers=2, timeout=60)):
        last = b
        if i == 8:
            break
    assert bfeed.torch.position(last) == (0, 8, 0, 1, 20, 0, 4)
    assert ds.state_dict(last) == {"epoch": 0, "batch": 9, "samples": 36, "world_size": 1, "start_sample": 0}


def _key(b):
    return (tuple(b["index"].tolist()), b["image"].view(torch.int16).numpy().tobytes())


@pytest.mark.parametrize("workers", [0, 2])
def test_eval_mask_equal_length(daemon, data, workers):
    """23 samples (prime), 3 ranks x `workers`, batches of 2: every rank
    steps ceil(ceil(23 / 3) / 2) = 4 times with full batches; the valid
    rows are every sample exactly once, with the table's own values."""
    table = torch.from_numpy(data["features"]).to(torch.bfloat16)  # torch's RNE cast: the oracle
    counts, valid_idx, sizes = [], [], set()
    for rank in range(3):
        ds = bfeed.torch.Dataset(daemon.addr, "npy", rank=rank, world_size=3, batch=2, mode="eval", eval_pad="mask")
        batches = list(_loader(ds, workers))
        counts.append(len(batches))
        for b in batches:
            assert b["valid"].dtype == torch.bool and b["valid"].shape == (2,)
            sizes.add(b["index"].shape[0])
            idx = b["index"][b["valid"]]
            valid_idx += idx.tolist()
            assert torch.equal(b["features"][b["valid"]].view(torch.int16), table[idx].view(torch.int16))
    assert counts == [4, 4, 4] and sizes == {2}
    assert sorted(valid_idx) == list(range(23))


def test_eval_mask_one_rank_pads_the_last_batch(daemon):
    with bfeed.connect(daemon.addr) as c, c.stream("npy", batch=5, mode="eval", eval_pad="mask", epochs=1) as s:
        got = [(b.numpy("index").tolist(), b.numpy("valid").tolist()) for b in s]
    assert [v for _, v in got] == [[1] * 5] * 4 + [[1, 1, 1, 0, 0]]
    assert [i for idx, v in got for i, ok in zip(idx, v) if ok] == list(range(23))
    assert got[-1][0][3:] == [0, 1]  # the padding wraps round to the order's start


def test_eval_without_mask_has_no_valid(daemon):
    ds = bfeed.torch.Dataset(daemon.addr, "npy", batch=4, mode="eval")
    assert all("valid" not in b for b in ds)


def test_refusals_name_the_option(daemon):
    with bfeed.connect(daemon.addr) as c:
        for opts, words in ((dict(start_sample=5), "epochs 1"),
                            (dict(start_sample=23, epochs=1), "start_sample 23 is not below the 23 samples"),
                            (dict(eval_pad="mask"), "needs mode eval")):
            with pytest.raises(bfeed.InvalidError) as e:
                c.stream("npy", batch=2, **opts)
            assert words in e.value.message, e.value.message
    with pytest.raises(ValueError, match="eval_pad"):
        bfeed.torch.Dataset(daemon.addr, "npy", eval_pad="mask")


def test_start_sample_continues_the_order(daemon):
    """start_sample C on shard r of n: position C + p*n + r of the epoch's
    order; with C = k*B*n it is start_batch k of the same shard, byte for
    byte."""
    opts = dict(batch=2, size=16, seed=9, epochs=1)
    with bfeed.connect(daemon.addr) as c:
        whole = [b.numpy("index").tolist() for b in c.stream("demo", batch=1, size=16, seed=9, epochs=1)]
        order = [i for x in whole for i in x]
        for r in range(3):
            got = [i for b in c.stream("demo", shard=(r, 3), start_sample=10, **opts) for i in b.numpy("index")]
            assert got == [order[10 + p * 3 + r] for p in range(len(got))]
            assert len(got) == (70 // 3) // 2 * 2
        a = [bytes(memoryview(b["image"])) for b in c.stream("demo", shard=(1, 2), start_batch=3, **opts)]
        b = [bytes(memoryview(b["image"])) for b in c.stream("demo", shard=(1, 2), start_sample=12, **opts)]
        assert a == b


@pytest.mark.parametrize("select,first,step", [("stride:3", 2, 3), ("residue:1/3", 4, 3), ("stride:1", 2, 1)])
def test_subsets_libbfeed_follows(daemon, select, first, step):
    """select residue and stride through libbfeed's own stream (residue
    was refused with a protocol error before: the library expected every
    batch), across an epoch's end."""
    opts = dict(batch=4, size=16, seed=3, epochs=2)  # 20 batches an epoch
    with bfeed.connect(daemon.addr) as c:
        every = [(b.epoch, b.index, b.numpy("index").tolist()) for b in c.stream("demo", start_batch=2, **opts)]
        got = [(b.epoch, b.index, b.numpy("index").tolist())
               for b in c.stream("demo", start_batch=2, select=select, **opts)]
    g = [e * 20 + i for e, i, _ in every]
    assert got == [every[k] for k in range(len(every)) if g[k] >= first and (g[k] - first) % step == 0]


def test_stride_over_two_daemons(two_daemons):
    a, b = two_daemons
    opts = dict(batch=4, size=16, seed=3, epochs=1, start_batch=1)
    with bfeed.connect(a.addr) as c:
        every = [(x.epoch, x.index, bytes(memoryview(x["image"]))) for x in c.stream("demo", **opts)]
    with bfeed.connect(a.addr + "," + b.addr) as c:
        got = [(x.epoch, x.index, bytes(memoryview(x["image"]))) for x in c.stream("demo", select="stride:4", **opts)]
    assert got == every[::4]
    with bfeed.connect(a.addr + "," + b.addr) as c:
        got = [(x.epoch, x.index) for x in c.stream("demo", select="residue:3/4", **opts)]
    assert got == [(0, i) for i in range(3, 20, 4)]


def test_numpy_view_of_valid(daemon):
    with bfeed.connect(daemon.addr) as c, c.stream("npy", batch=4, mode="eval", eval_pad="mask", shard=(2, 3)) as s:
        b = next(s)
        assert b.numpy("valid").dtype == np.uint8
