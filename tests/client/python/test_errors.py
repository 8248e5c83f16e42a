"""Errors: bfeed.Error subclasses carrying the code and the daemon's or the
library's message; bad option names, values and types; closed objects."""
import pytest

import bfeed


def test_connect_refused(tmp_path):
    with pytest.raises(bfeed.ConnectError) as e:
        bfeed.connect("unix:%s/none.sock" % tmp_path)
    assert e.value.code == -4 and "none.sock" in e.value.message
    assert isinstance(e.value, bfeed.Error)
    with pytest.raises(bfeed.InvalidError):
        bfeed.connect("nowhere")


def test_daemon_errors(daemon):
    with bfeed.connect(daemon.addr) as c:
        with pytest.raises(bfeed.NoDatasetError) as e:
            c.stream("nope")
        assert e.value.code == -10 and "nope" in str(e.value) and e.value.message.startswith("bfeedd:")
        with pytest.raises(bfeed.InvalidError) as e:
            c.stream("demo", batch=8, start_batch=10 ** 6)
        assert "past the epoch" in e.value.message
        with pytest.raises(bfeed.DatasetError):
            c.stream("npy", batch=10, shard=(0, 4))  # 5 samples per shard < one batch
        with pytest.raises(bfeed.InvalidError):
            c.stream("demo", pool="mean")  # text options on images


def test_option_errors(daemon):
    with bfeed.connect(daemon.addr) as c:
        for opts, words in [({"batch": 0}, "batch 0"), ({"mode": "test"}, "expected one of train eval"),
                            ({"shard": (3, 2)}, "shard 3/2"), ({"codec": "brotli"}, "codec brotli"),
                            ({"bogus": 1}, "unknown stream option 'bogus'")]:
            with pytest.raises(ValueError) as e:  # InvalidError is a ValueError
                c.stream("demo", **opts)
            assert isinstance(e.value, bfeed.InvalidError) and words in e.value.message, opts
        # A float is an option's text (hflip=0.5): a whole-number option
        # refuses it by name; a value that is no number nor text is a TypeError.
        with pytest.raises(bfeed.InvalidError) as e:
            c.stream("demo", batch=2.5)
        assert "batch 2.5" in e.value.message
        # Three or four numbers are one option's text (mean=, color_jitter=):
        # a whole-number option refuses them by name.
        with pytest.raises(bfeed.InvalidError) as e:
            c.stream("demo", batch=[1, 2, 3])
        assert "batch 1,2,3" in e.value.message
        for bad in ([1, 2, 3, 4, 5], ["a", "b", "c"], {"a": 1}):
            with pytest.raises(TypeError):
                c.stream("demo", batch=bad)


def test_options_reach_the_daemon(daemon):
    """shard=(i, n), keep_partial, codec, start_batch by name: zstd gives the
    bytes of codec none; the shards of 3 and the partial batch count right."""
    with bfeed.connect(daemon.addr) as c:
        with c.stream("npy", batch=3, shard=(1, 3), keep_partial=True, shuffle="off", epochs=1) as s:
            idx = [i for b in s for i in b.torch("index").tolist()]
        assert idx == list(range(1, 21, 3))  # positions p*3+1, p < 7: 7 samples, batches 3+3+1
        plain = [bytes(memoryview(b["image"])) for b in c.stream("demo", batch=2, size=16, start_batch=3, epochs=1)]
        zstd = [bytes(memoryview(b["image"])) for b in c.stream("demo", batch=2, size=16, start_batch=3, epochs=1,
                                                               codec="zstd:5")]
        assert plain == zstd and len(plain) > 0


def test_stats(daemon):
    with bfeed.connect(daemon.addr) as c, c.stream("npy", batch=2, epochs=1) as s:
        taken = [next(s) for _ in range(3)]
        mine = s.stats()
        groups = c.stats()
    assert mine["batches_per_epoch"] == s.batches_per_epoch == 11 and mine["samples_per_epoch"] == 23
    assert mine["batches"] >= len(taken)
    kinds = {(g["kind"], g["id"]) for g in groups}
    assert ("dataset", "npy") in kinds and any(k == "daemon" for k, _ in kinds)
    assert any(k == "stream" and i.endswith(":npy") for k, i in kinds)


def test_closed_objects(daemon):
    c = bfeed.connect(daemon.addr)
    s = c.stream("demo", batch=2, size=16)
    b = next(s)
    c.close()
    assert c.closed
    with pytest.raises(ValueError):
        next(s)
    with pytest.raises(ValueError):
        c.stream("demo")
    assert b.torch("image").shape == (2, 3, 16, 16)  # batches outlive their stream


def test_daemon_shutdown_mid_stream(own_daemon):
    # Not reconnecting: the shutdown itself is what the caller sees (test_reconnect.py: the default)
    with bfeed.connect(own_daemon.addr, reconnect=False) as c, c.stream("demo", batch=2, size=16, window=2) as s:
        next(s)
        assert own_daemon.stop() is None  # SIGTERM: clients told, exit 0
        with pytest.raises((bfeed.ShutdownError, bfeed.ClosedError)) as e:
            for _ in range(1000):
                next(s)
        assert e.value.code in (-15, -5) and e.value.message


def test_forked_error_from_the_one_list():
    """The code added for a client used after fork (bfeed_errors.h): its
    class, its strerror, exported like every other."""
    assert bfeed.strerror(-20) == "BFEED_EFORKED: client used after fork"
    assert issubclass(bfeed.ForkedError, bfeed.Error) and "ForkedError" in bfeed.__all__


def test_unsupported_error_from_the_one_list():
    """The code for a call the daemon predates (class names from an older
    bfeedd; test_classes.c has that daemon), the last one so far."""
    assert bfeed.strerror(-21) == "BFEED_EUNSUPPORTED: not served by this daemon"
    assert issubclass(bfeed.UnsupportedError, bfeed.Error) and "UnsupportedError" in bfeed.__all__
    assert bfeed.strerror(-22).startswith("BFEED_E?")


def test_no_dataset_lists_whole_names(data, tmp_path):
    """40 datasets with long names: the message lists whole names and says
    how many more there are; none is cut off (issue 29: "..., v_hpbin, )")."""
    import os
    import re
    from conftest import _binary
    from oracle_util import Daemon
    root = next(d.split("=", 1)[1] for d in data["datasets"] if d.startswith("demo="))
    names = ["dataset_number_%02d_of_forty" % i for i in range(40)]
    d = Daemon(_binary("BFEEDD"), str(tmp_path), ["%s=%s" % (n, root) for n in names], workers=1)
    try:
        with bfeed.connect(d.addr) as c, pytest.raises(bfeed.NoDatasetError) as e:
            c.stream("nope")
        m = re.search(r"this daemon serves: (.*), and (\d+) more\)$", e.value.message)
        assert m, e.value.message
        listed = m.group(1).split(", ")
        assert listed == names[:len(listed)] and len(listed) + int(m.group(2)) == 40
    finally:
        d.kill()
    assert os.path.exists(d.log_path)


def test_list_log_says_absolute_paths(data, tmp_path):
    """A list of absolute paths is logged as such, not as "relative paths
    from DIR"; one with relative paths says how many and from where."""
    from conftest import _binary
    from oracle_util import Daemon
    absolute = tmp_path / "abs.tsv"
    absolute.write_text("".join("%s\t%d\n" % (p, i) for i, p in enumerate(data["images"])))
    rel_dir = tmp_path / "rel"
    rel_dir.mkdir()
    import os
    for i, p in enumerate(data["images"]):
        os.symlink(p, rel_dir / ("%d.jpg" % i))
    relative = rel_dir / "rel.tsv"
    relative.write_text("".join("%d.jpg\t%d\n" % (i, i) for i in range(len(data["images"]))))
    d = Daemon(_binary("BFEEDD"), str(tmp_path), ["a=list:%s" % absolute, "r=list:%s" % relative], workers=1)
    try:
        log = d.log()
    finally:
        d.kill()
    a_line = next(line for line in log.splitlines() if "dataset a:" in line)
    r_line = next(line for line in log.splitlines() if "dataset r:" in line)
    assert "absolute paths" in a_line and "relative" not in a_line, a_line
    assert "%d relative paths from %s" % (len(data["images"]), rel_dir) in r_line, r_line


def test_the_last_epoch_does_not_wrap(daemon):
    """Epochs are numbered up to 2^64 - 1 (issue 31: a stream opened at
    epoch 2^64 - 1 went on with epoch 0): a stream of every epoch ends
    after that one, and a range past it is refused naming it."""
    last = 2 ** 64 - 1
    with bfeed.connect(daemon.addr) as c:
        with c.stream("fx", batch=2, size=16, epoch=last) as s:  # epochs 0: every epoch from there
            got = [(b.epoch, b.index) for _, b in zip(range(3), s)]  # 3 at most: it wrapped, once
        assert got == [(last, 0), (last, 1)]
        with c.stream("fx", batch=2, size=16, epoch=last - 1, epochs=2) as s:
            assert [b.epoch for b in s] == [last - 1, last - 1, last, last]
        with pytest.raises(bfeed.InvalidError) as e:
            c.stream("fx", batch=2, size=16, epoch=last, epochs=2)
        assert "epoch %d with epochs 2" % last in e.value.message
