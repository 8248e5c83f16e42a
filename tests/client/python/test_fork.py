"""A client after fork() (README, bfeed.h "After fork"): in a forked child
every call on a Client or Stream made before the fork raises
bfeed.ForkedError at once, never hangs; the child may still read a batch
taken before the fork, close what it inherited (nothing is sent to the
daemon) and connect again; the parent streams on undisturbed, byte for
byte, without a reconnect. A DataLoader with the fork start method works
after the parent has used a client and the Dataset (bfeed.torch.Dataset
connects in each worker), and a Dataset of the user's that holds a Client
made in the parent fails with ForkedError instead of hanging."""
import ast
import os
import select
import signal
import time

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

import bfeed
import bfeed.torch

OPTS = dict(batch=2, size=16, seed=9, epochs=1, window=3)  # demo: 40 batches
CHILD_S = 10  # the child's alarm: none of its calls may block


def blobs(b):
    return (b.epoch, b.index) + tuple(bytes(memoryview(b[name])) for name in ("image", "label", "index"))


def forked_calls(c, s):
    """What each call on the parent's client and stream does in the child."""
    out = {}
    for name, call in [("next", lambda: next(s)), ("stats", s.stats), ("stream", lambda: c.stream("demo", **OPTS)),
                       ("daemon stats", c.stats)]:
        try:
            call()
            out[name] = "returned"
        except bfeed.ForkedError as e:
            out[name] = (e.code, "fork" in e.message)
        except Exception as e:  # noqa: BLE001: reported to the parent
            out[name] = repr(e)
    return out


def child(w, addr, shm, c, s, held, held_blobs, ref):
    """The forked child: reports a dict on w, then ends without returning."""
    try:
        signal.alarm(CHILD_S)
        out = forked_calls(c, s)
        out["held"] = blobs(held) == held_blobs
        del held  # the child's copy only: nothing told to the daemon
        s.close()
        c.close()
        with bfeed.connect(addr, shm=shm) as c2, c2.stream("demo", **OPTS) as s2:
            out["own"] = [blobs(next(s2)) for _ in range(3)] == ref[:3]
        os.write(w, repr(out).encode())
    finally:
        os._exit(0)


def wait_child(pid, r):
    """The child's report, read within CHILD_S + 10 s, and its exit status."""
    deadline = time.monotonic() + CHILD_S + 10
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([r], [], [], 0.1)
        if ready:
            chunk = os.read(r, 65536)
            if not chunk:
                break
            data += chunk
    os.close(r)
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    return data.decode(), status


@pytest.mark.parametrize("way", ["socket", "shm", "fanout"])
def test_forked_child_gets_forked_error(daemon, request, way):
    addr = daemon.addr
    if way == "fanout":
        addr = ",".join(d.addr for d in request.getfixturevalue("two_daemons"))
    shm = way == "shm"
    with bfeed.connect(addr) as c, c.stream("demo", **OPTS) as s:
        ref = [blobs(b) for b in s]
    with bfeed.connect(addr, shm=shm) as c, c.stream("demo", **OPTS) as s:
        got = [blobs(next(s)) for _ in range(5)]
        held = next(s)  # released by the child (its copy), then by the parent
        got.append(blobs(held))
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(w, addr, shm, c, s, held, got[-1], ref)
        os.close(w)
        got += [blobs(next(s)) for _ in range(3)]  # while the child runs
        report, status = wait_child(pid, r)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (
            "the child %s" % ("hung" if os.WIFSIGNALED(status) else "failed"), status, report)
        forked = (-20, True)  # BFEED_EFORKED, and the message says fork
        assert ast.literal_eval(report or "None") == {"next": forked, "stats": forked, "stream": forked, "daemon stats": forked,
                                "held": True, "own": True}
        assert blobs(held) == got[5]
        del held
        got += [blobs(b) for b in s]
        s.stats()
        assert c.reconnects == 0  # nothing in the child shut the parent's connection down
    assert got == ref


def test_kept_batch_stays_the_parents(daemon):
    """A batch an interrupt left to the next next() (test_interrupts.py) is
    the parent's: the child gets ForkedError, the parent the batch."""
    import sys

    def hook(frame, event, arg):
        if event == "c_return" and arg is next:
            raise KeyboardInterrupt

    with bfeed.connect(daemon.addr) as c, c.stream("demo", **OPTS) as s:
        first = next(s).index
        sys.setprofile(hook)
        try:
            next(s)
        except KeyboardInterrupt:
            pass
        finally:
            sys.setprofile(None)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                signal.alarm(CHILD_S)
                os.write(w, repr(forked_calls(c, s)["next"]).encode())
            finally:
                os._exit(0)
        os.close(w)
        report, status = wait_child(pid, r)
        assert report == "(-20, True)", (report, status)
        assert next(s).index == first + 1


def _key(b):
    return (tuple(b["index"].tolist()), b["image"].view(torch.int16).numpy().tobytes())


def test_dataloader_fork_after_the_parent_used_a_client(daemon):
    """DataLoader(num_workers=2, fork) while the parent holds a client mid-stream
    (its reader thread running) and an iterator of the same Dataset
    mid-epoch: the workers' batches continue the round-robin where the
    Dataset's state stands (the batches the Dataset alone gives), and the parent's stream and iterator go on as
    if nothing had forked."""
    opts = dict(batch=4, size=16, seed=3)  # 20 batches an epoch
    alone = [_key(b) for b in bfeed.torch.Dataset(daemon.addr, "demo", **opts)]
    with bfeed.connect(daemon.addr) as c, c.stream("demo", **OPTS) as s:
        raw = [blobs(next(s)) for _ in range(3)]
        ds = bfeed.torch.Dataset(daemon.addr, "demo", **opts)
        it = iter(ds)
        head = [_key(next(it)) for _ in range(3)]  # ds.state_dict(): batch 3
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork", timeout=60)
        assert [_key(b) for b in loader] == alone[3:]  # 2 workers: the same batches as none
        assert head + [_key(b) for b in it] == alone
        raw += [blobs(b) for b in s]
        assert c.reconnects == 0
    with bfeed.connect(daemon.addr) as c, c.stream("demo", **OPTS) as s:
        assert raw == [blobs(b) for b in s]


class ParentsClient(IterableDataset):
    """A Dataset of the user's that keeps a Client made in the parent."""

    def __init__(self, addr):
        self.c = bfeed.connect(addr)
        self.s = self.c.stream("demo", **OPTS)
        next(self.s)

    def __iter__(self):
        for b in self.s:
            yield b.torch()


def test_dataloader_worker_with_the_parents_client_fails_clearly(daemon):
    ds = ParentsClient(daemon.addr)
    loader = DataLoader(ds, batch_size=None, num_workers=1, multiprocessing_context="fork", timeout=20)
    with pytest.raises(bfeed.ForkedError, match="fork"):
        next(iter(loader))
    assert next(ds.s).index == 1 and ds.c.reconnects == 0  # the parent's stream goes on
    ds.c.close()
