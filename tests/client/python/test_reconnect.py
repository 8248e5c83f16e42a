"""bfeed.connect's options: a stream that resumes exactly across a kill -9
and restart of the daemon (the default), the deadline, reconnect=False,
the access token's sources and refusals, bfeed.torch.Dataset passing them
on. The batches are compared byte for byte with an uninterrupted run."""
import os
import pathlib

import pytest

import bfeed
from conftest import _binary
from oracle_util import Daemon

OPTS = dict(batch=4, size=16, seed=3, epochs=2, window=3)  # demo: 80 samples, 20 batches an epoch


def blobs(b):
    """A batch as its position and every tensor's bytes."""
    return (b.epoch, b.index) + tuple(bytes(memoryview(b[name])) for name in ("image", "label", "index"))


def test_kill9_resume_exact(data, own_daemon, tmp_path):
    with bfeed.connect(own_daemon.addr) as c, c.stream("demo", **OPTS) as s:
        ref = [blobs(b) for b in s]
    assert len(ref) == 40
    d = own_daemon
    with bfeed.connect(d.addr) as c, c.stream("demo", **OPTS) as s:
        got = [blobs(next(s)) for _ in range(17)]
        d.kill()
        d = Daemon(_binary("BFEEDD"), str(tmp_path), data["datasets"])  # the same socket
        try:
            got += [blobs(b) for b in s]
            assert c.reconnects == 1
        finally:
            d.kill()
    assert [g[:2] for g in got] == [r[:2] for r in ref]  # none missing, none twice
    assert got == ref  # and the same bytes


def test_deadline_and_no_reconnect(own_daemon):
    with pytest.raises(bfeed.InvalidError, match="reconnect_deadline"):
        bfeed.connect(own_daemon.addr, reconnect_deadline=0)
    with bfeed.connect(own_daemon.addr, reconnect=False) as c, c.stream("demo", **OPTS) as s:
        next(s)
        own_daemon.kill()
        with pytest.raises((bfeed.ClosedError, bfeed.IOError)):
            for _ in range(100):
                next(s)
        assert c.reconnects == 0


def test_deadline_expires(own_daemon):
    with bfeed.connect(own_daemon.addr, reconnect_deadline=0.3) as c, c.stream("demo", **OPTS) as s:
        next(s)
        own_daemon.kill()
        with pytest.raises(bfeed.ConnectError, match="could not reconnect within 0.3 s"):
            for _ in range(100):
                next(s)
        assert c.reconnects == 1


def test_token_sources(daemon, tmp_path, monkeypatch):
    monkeypatch.delenv("BFEED_TOKEN_FILE", raising=False)
    # A daemon without auth_token_file ignores a token: each source is read and sent.
    tok = tmp_path / "tok"
    tok.write_text("s3cret\n")
    for kw in (dict(token="s3cret"), dict(token_file=str(tok)), dict(token_file=tok)):
        with bfeed.connect(daemon.addr, **kw) as c:
            assert c.reconnects == 0
    missing = tmp_path / "none"
    with pytest.raises(bfeed.InvalidError, match=str(missing)):
        bfeed.connect(daemon.addr, token_file=missing)
    monkeypatch.setenv("BFEED_TOKEN_FILE", str(missing))
    with pytest.raises(bfeed.InvalidError, match="BFEED_TOKEN_FILE"):
        bfeed.connect(daemon.addr)
    with bfeed.connect(daemon.addr, token="given wins"):
        pass
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(bfeed.InvalidError, match="first line"):
        bfeed.connect(daemon.addr, token_file=os.fspath(tmp_path / "empty"))
    with pytest.raises(bfeed.InvalidError):
        bfeed.connect(daemon.addr, token="x" * 300)
    with pytest.raises(TypeError):
        bfeed.connect(daemon.addr, 1)  # keywords only


def test_dataset_passes_connect_opts(daemon):
    torch = pytest.importorskip("torch")
    import bfeed.torch as bt

    ds = bt.Dataset(daemon.addr, "demo", batch=4, size=16, connect_opts=dict(reconnect_deadline=0))
    with pytest.raises(bfeed.InvalidError, match="reconnect_deadline"):
        next(iter(torch.utils.data.DataLoader(ds, batch_size=None)))
    ds = bt.Dataset(daemon.addr, "demo", batch=4, size=16, connect_opts=dict(token="t"))
    assert next(iter(torch.utils.data.DataLoader(ds, batch_size=None)))["image"].shape == (4, 3, 16, 16)


def test_path_token_file_is_fs_path(daemon, tmp_path):
    p = pathlib.Path(tmp_path) / "tök"
    p.write_text("t\n")
    with bfeed.connect(daemon.addr, token_file=p):
        pass
