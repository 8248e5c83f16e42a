"""The cases of test_inplace.py, each run in a process of its own so that a
crash (SIGSEGV: a write into a read-only mapping) fails its test instead of
ending pytest:

    inplace_child.py ADDR CASE DATASET[,DATASET...] SHM [WORKERS]

CASE is one of:
  ops        in-place ops on every tensor of every batch of an epoch, each
             against the same op out of place on a copy taken before
  isolation  a write into every batch (one of them held while later ones
             come), then many batches through the same slots: each equal,
             byte for byte, to the batch fetched over the socket
  loader     bfeed.torch.DataLoader with WORKERS workers whose Dataset
             writes into its batches in place (in the worker, where the
             tensors are the ring's): each equal to the op applied to the
             socket's batch at the same position
  shared     two clients' identical streams read one ring (issue 29): the
             same memfd mapped twice, no batch copied into a ring after the
             first few; one client's writes never reach the other's batch;
             a batch held past its stream's close keeps its bytes while the
             other stream goes on through the ring

SHM is 1 (shared memory, libbfeed's default on a Unix socket) or 0 (the
socket). Exit status 0 when every check held; an assertion's message
otherwise.
"""
import sys

import numpy as np
import torch

import bfeed
import bfeed.torch

# Stream options of each dataset of conftest.py's daemon (small batches:
# many of them go through each slot).
OPTS = {"fx": dict(batch=2, size=32, seed=5), "demo": dict(batch=4, size=32, seed=5),
        "npy": dict(batch=4, seed=5), "txt": dict(batch=3, seed=5)}


def op(x):
    """Writes in place into x; returns x. bf16: relu then an affine map
    (rounded as out-of-place ops round); integers: add and negate; bool: not."""
    if x.dtype == torch.bool:
        return x.logical_not_()
    if x.is_floating_point():
        return x.relu_().mul_(-1.5).add_(0.25)
    return x.add_(7).neg_()


def op_oracle(x):
    """The same values as op(x), computed out of place on a copy."""
    y = x.clone()
    if y.dtype == torch.bool:
        return torch.logical_not(y)
    if y.is_floating_point():
        return torch.relu(y) * -1.5 + 0.25
    return -(y + 7)


def raw(t):
    """A tensor's bytes, copied (bf16 through its int16 bit patterns)."""
    x = t.detach()
    if x.dtype == torch.bfloat16:
        x = x.view(torch.int16)
    return x.contiguous().numpy().tobytes()


def case_ops(addr, name, shm):
    n = 0
    with bfeed.connect(addr, shm=shm) as c, c.stream(name, epochs=1, **OPTS[name]) as s:
        for b in s:
            got = b.torch()
            assert got, "a batch with no tensors"
            for tname, x in got.items():
                want = op_oracle(x)
                same = op(x) is x
                assert same and torch.equal(x, want), "%s %s: the in-place result differs from the op on a copy" % (
                    name, tname)
                if tname not in ("label", "length"):  # those are int64 copies of int32: a fresh view is the batch's
                    assert torch.equal(b.torch(tname), want), "%s %s: a new view does not see the write" % (
                        name, tname)
            if "image" in got:  # torch.nn's in-place ReLU, and NumPy through the buffer protocol
                img = b.torch("image")
                want = torch.relu(img.clone())
                torch.nn.ReLU(inplace=True)(img)
                assert torch.equal(b.torch("image"), want), "nn.ReLU(inplace=True)"
            a = b.numpy("index")
            want = a.copy() + 5
            a += 5
            assert np.array_equal(b.numpy("index"), want) and torch.equal(b.torch("index"), torch.from_numpy(want)), \
                "numpy's += on index"
            n += 1
        st = s.stats()
    assert n > 0, "no batch"
    assert (st["shm_batches"] > 0) == bool(shm), "shm_batches %d with shm=%d" % (st["shm_batches"], shm)
    print("ops %s shm=%d: %d batches" % (name, shm, n))


def case_isolation(addr, name, shm):
    """Writes into batch k (and into one held while later ones arrive) never
    reach batch k + slots, k + 2 slots, ... of the same ring."""
    opts = dict(OPTS[name], window=2, epochs=6)  # 4 slots: each reused many times
    with bfeed.connect(addr, shm=shm) as c, bfeed.connect(addr, shm=False) as ref, \
            c.stream(name, **opts) as s, ref.stream(name, **opts) as r:
        held, n = None, 0
        for b, want in zip(s, r):
            assert (b.epoch, b.index) == (want.epoch, want.index)
            for tname in want.names():
                got, exp = raw(b.torch(tname)), raw(want.torch(tname))
                assert got == exp, "%s batch %d (epoch %d, index %d) %s differs from the socket's" % (
                    name, n, b.epoch, b.index, tname)
            for tname in b.names():  # garbage in every byte this batch's tensors have
                x = b.torch(tname)
                if tname in ("label", "length"):
                    b.numpy(tname)[...] = -1  # int32: torch's view is a copy, NumPy's is not
                elif x.dtype == torch.bfloat16:
                    x.view(torch.int16).fill_(-21846)  # 0xaaaa
                else:
                    x.fill_(-6148914691236517206)  # 0xaaaa...
            if n % 5 == 0:
                held = b  # kept while the next ones come, written again, then let go
            elif held is not None and n % 5 == 3:
                for tname in held.names():
                    held.numpy(tname).view(np.uint8)[...] = 0x55
                held = None
            n += 1
        assert n == s.batches_per_epoch * 6, "%d batches of %d" % (n, s.batches_per_epoch * 6)
        st = s.stats()
    assert (st["shm_batches"] > 0) == bool(shm), "shm_batches %d with shm=%d" % (st["shm_batches"], shm)
    print("isolation %s shm=%d: %d batches byte-identical to the socket's" % (name, shm, n))


def ring_inodes():
    """The inodes of the bfeed-ring memfds this process maps, each with how
    many mappings of it there are."""
    count = {}
    with open("/proc/self/maps") as f:
        for line in f:
            if "bfeed-ring" in line:
                ino = int(line.split()[4])
                count[ino] = count.get(ino, 0) + 1
    return count


def garbage(b):
    """Writes into every byte of b's tensors."""
    for tname in b.names():
        b.numpy(tname).view(np.uint8)[...] = 0xAA


def case_shared(addr, name, shm):
    opts = dict(OPTS[name], window=2, epochs=12)
    assert shm, "shared needs shared memory"
    with bfeed.connect(addr) as ca, bfeed.connect(addr) as cb, bfeed.connect(addr, shm=False) as ref, \
            cb.stream(name, **opts) as b, ref.stream(name, **opts) as r:
        a = ca.stream(name, **opts)
        ia, ib, ir = iter(a), iter(b), iter(r)
        bpe = a.batches_per_epoch
        n, kept, kept_bytes = 0, None, None
        for want in ir:
            y = next(ib)
            exp = {t: raw(want.torch(t)) for t in want.names()}
            if n < 4 * bpe:  # both streams
                x = next(ia)
                assert {t: raw(x.torch(t)) for t in x.names()} == exp, "%s batch %d: a differs" % (name, n)
                garbage(x)  # into a's batch: b's, in the same slot of the same memfd, must not see it
                if n == 4 * bpe - 1:  # held past the close of its stream and client
                    kept, kept_bytes = next(ia), None
                    kept_bytes = {t: raw(kept.torch(t)) for t in kept.names()}
                    st_a = a.stats()
                    shared = [ino for ino, k in ring_inodes().items() if k >= 2]
                    assert shared, "no ring mapped by both clients: %s" % ring_inodes()
                    a.close()
            assert {t: raw(y.torch(t)) for t in y.names()} == exp, "%s batch %d: b differs (a's write?)" % (name, n)
            n += 1
        st_b = b.stats()
    raw_batch = sum(len(v) for v in exp.values())
    for who, st in (("a", st_a), ("b", st_b)):
        assert st["shm_batches"] > 0 and st["shm_copy_bytes"] <= 6 * raw_batch, \
            "%s: %d bytes copied into its ring (a batch is %d)" % (who, st["shm_copy_bytes"], raw_batch)
    assert {t: raw(kept.torch(t)) for t in kept.names()} == kept_bytes, "a batch held past its close changed"
    print("shared %s: %d batches, %d of them read by both clients from one ring; copied %d and %d bytes" % (
        name, n, 4 * bpe, st_a["shm_copy_bytes"], st_b["shm_copy_bytes"]))


class WritingDataset(bfeed.torch.Dataset):
    """Each batch written in place (op) where it is made: in the worker."""

    def __iter__(self):
        for b in super().__iter__():
            for k, x in b.items():
                if k != "position":
                    op(x)
            yield b


def case_loader(addr, name, shm, workers):
    ds = WritingDataset(addr, name, connect_opts={"shm": bool(shm)}, **OPTS[name])
    ref = bfeed.torch.Dataset(addr, name, connect_opts={"shm": False}, **OPTS[name])
    n = 0
    for epoch in range(2):
        ds.set_epoch(epoch)
        ref.set_epoch(epoch)
        got = list(bfeed.torch.DataLoader(ds, num_workers=workers))
        want = list(bfeed.torch.DataLoader(ref, num_workers=0))
        assert len(got) == len(want) > 0, "%d batches, %d over the socket" % (len(got), len(want))
        for g, w in zip(got, want):
            assert torch.equal(g["position"], w["position"]), "positions %s and %s" % (g["position"], w["position"])
            for k in w:
                if k != "position":
                    assert torch.equal(g[k], op_oracle(w[k])), "%s epoch %d %s: not the op of the socket's batch" % (
                        name, epoch, k)
            n += 1
    print("loader %s shm=%d workers=%d: %d batches" % (name, shm, workers, n))


def main():
    addr, case, names, shm = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
    for name in names:
        if case == "ops":
            case_ops(addr, name, shm)
        elif case == "isolation":
            case_isolation(addr, name, shm)
        elif case == "loader":
            case_loader(addr, name, shm, int(sys.argv[5]))
        elif case == "shared":
            case_shared(addr, name, shm)
        else:
            sys.exit("unknown case %r" % case)


if __name__ == "__main__":
    main()
