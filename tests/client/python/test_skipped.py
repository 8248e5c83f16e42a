"""Which samples were skipped (issue 21): a folder with good JPEGs, two
truncated ones (corrupt) and an image over --max-pixels (too_large), all
written here with Pillow, so the oracle is what the test made bad. After an
epoch the daemon lists exactly those, with their reasons, in its report
(`bfeed stats --skipped`, text and JSON), counts them by reason in
/metrics, and has appended one line each to --skipped-log; a reload
(SIGHUP) opens the log afresh where it was moved away (rotation)."""
import json
import os
import signal
import socket
import subprocess
import urllib.request

import pytest
from PIL import Image

import bfeed
from oracle_util import Daemon, wait_for


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def bad_folder(tmp_path):
    root = tmp_path / "imgs"
    want = {}
    for c in range(3):
        os.makedirs(root / ("c%d" % c))
        for k in range(4):
            Image.new("RGB", (40 + k, 30), (60 * c, 20 * k, 90)).save(root / ("c%d" % c) / ("%d.jpg" % k), quality=90)
    for rel in ("c0/1.jpg", "c2/3.jpg"):  # truncated: the header survives, the scan does not
        data = (root / rel).read_bytes()
        (root / rel).write_bytes(data[: len(data) // 3])
        want[rel] = "corrupt"
    Image.new("RGB", (1200, 1000), (1, 2, 3)).save(root / "c1" / "2.jpg")  # 1.2 Mpx > --max-pixels 1000000
    want["c1/2.jpg"] = "too_large"
    return root, want


def _bfeed(*args):
    p = subprocess.run([os.environ["BFEED"], *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_skipped_listed_counted_and_logged(bad_folder, tmp_path):
    root, want = bad_folder
    log = tmp_path / "skipped.tsv"
    port = _free_port()
    d = Daemon(os.environ["BFEEDD"], str(tmp_path), ["bad=%s" % root],
               extra=["--max-pixels", "1000000", "--skipped-log", str(log), "--metrics-listen", "127.0.0.1:%d" % port])
    try:
        with bfeed.connect(d.addr) as c:
            for epoch in range(2):  # the second epoch finds nothing new
                for b in c.stream("bad", batch=3, size=16, mode="eval", epoch=epoch, epochs=1):
                    pass
        report = json.loads(_bfeed("stats", "--connect", d.addr, "--skipped", "--json"))["skipped"]["bad"]
        got = {os.path.relpath(e["name"], root) if os.path.isabs(e["name"]) else e["name"]: e for e in report}
        assert {k: e["reason"] for k, e in got.items()} == want, report
        assert "over the max_pixels limit of 1000000" in got["c1/2.jpg"]["message"]
        assert sorted(e["index"] for e in report) == [1, 6, 11]  # (class, file) order: c0/1, c1/2, c2/3
        text = _bfeed("stats", "--connect", d.addr, "--skipped")
        assert "dataset bad: 3 skipped (corrupt 2, too_large 1, unreadable 0)" in text, text
        assert "corrupt" in text.splitlines()[1] and "c0/1.jpg" in text.splitlines()[1]
        plain = _bfeed("stats", "--connect", d.addr)
        assert "skipped_corrupt" in plain and "c0/1.jpg" not in plain  # the list only with --skipped
        metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
        for reason, n in (("corrupt", 2), ("too_large", 1), ("unreadable", 0)):
            line = 'bfeed_skipped_samples_total{dataset="bad",reason="%s"} %d' % (reason, n)
            assert line in metrics, metrics
        lines = [l.split("\t") for l in log.read_text().splitlines()]
        assert len(lines) == 3, lines  # once each, though two epochs replaced them
        assert {(f[1], f[3]) for f in lines} == {("bad", r) for r in want.values()}
        assert sorted(int(f[2]) for f in lines) == [1, 6, 11]
        assert all(f[0].endswith("Z") and len(f) == 6 for f in lines)
        # Rotation: moved away, SIGHUP, the daemon writes to a new file there.
        os.rename(log, tmp_path / "skipped.tsv.1")
        d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: log.exists(), 10, "the skipped log to be opened again")
    finally:
        err = d.stop()
    assert err is None, err + d.log()


def test_skipped_listing_is_in_index_order(bad_folder, tmp_path):
    """`bfeed stats --skipped` lists a dataset's skipped samples by index,
    whatever order the workers met them in (issue 31: a shuffled epoch, or
    two workers, listed them as found, so the listing changed from run to
    run). A train epoch meets them in its shuffled order."""
    root, want = bad_folder
    d = Daemon(os.environ["BFEEDD"], str(tmp_path), ["bad=%s" % root], workers=1, extra=["--max-pixels", "1000000"])
    try:
        with bfeed.connect(d.addr) as c:
            for b in c.stream("bad", batch=12, size=16, seed=1, epochs=1):
                found = b.torch("index").tolist()
        report = json.loads(_bfeed("stats", "--connect", d.addr, "--skipped", "--json"))["skipped"]["bad"]
        text = _bfeed("stats", "--connect", d.addr, "--skipped").splitlines()
    finally:
        d.kill()
    assert [e["index"] for e in report] == [1, 6, 11], (report, found)
    assert ["c0/1.jpg" in text[1], "c1/2.jpg" in text[2], "c2/3.jpg" in text[3]] == [True] * 3, text


def test_skipped_counts_each_sample_once_per_epoch(tmp_path):
    """A stream's `skipped` counts each bad sample once per epoch (issue 31:
    a folder of mostly corrupt files counted 164,316 for 24 samples, since
    every position whose search for a replacement walked past a bad file
    counted it again). Oracle: the bad files this test wrote, served twice."""
    root = tmp_path / "mostly-bad" / "c0"
    os.makedirs(root)
    bad = 0
    for k in range(24):
        path = root / ("%02d.jpg" % k)
        if k % 8 == 7:
            Image.new("RGB", (20, 20), (k, 2 * k, 3 * k)).save(path, quality=90)
        else:
            path.write_bytes(b"not a jpeg at all %d" % k)
            bad += 1
    d = Daemon(os.environ["BFEEDD"], str(tmp_path), ["bad=%s" % root.parent], workers=1)
    try:
        with bfeed.connect(d.addr) as c:
            for epoch in range(2):
                s = c.stream("bad", batch=4, size=16, mode="eval", epoch=epoch, epochs=1, keep_partial=True)
                served = sum(len(b.torch("index")) for b in s)
                counted = s.stats()["skipped"]
                assert served == 24 and counted == bad, (epoch, served, counted, bad)
    finally:
        d.kill()


def test_hostile_file_names_forge_no_log_line(tmp_path):
    """File names are the dataset owner's to choose, not the log reader's
    (issue 31): a name with a newline and a forged log line after it, one
    with ESC (a terminal's escape sequences) and one that is not UTF-8 are
    written to the daemon's log and to the skipped log escaped, one line
    each; a name in UTF-8 is kept as it is."""
    root = tmp_path / "hostile" / "c0"
    os.makedirs(root)
    forged = "2026-01-01T00:00:00.000Z bfeedd error: FAKE"
    names = [b"z\n" + forged.encode() + b".jpg", b"esc\x1b[31mred.jpg", b"bad\xff\xfeutf8.jpg", "caf\u00e9.jpg".encode()]
    for n in names:  # none decodes: each is skipped, named in both logs
        with open(os.path.join(os.fsencode(root), n), "wb") as f:
            f.write(b"not an image")
    Image.new("RGB", (20, 20), (1, 2, 3)).save(root / "good.jpg")
    log = tmp_path / "skipped.tsv"
    d = Daemon(os.environ["BFEEDD"], str(tmp_path), ["h=%s" % root.parent], workers=1, extra=["--skipped-log", str(log)])
    try:
        with bfeed.connect(d.addr) as c:
            for b in c.stream("h", batch=5, size=16, mode="eval", epochs=1, keep_partial=True):
                pass
    finally:
        d.kill()
    with open(d.log_path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    assert not any(l.startswith(forged.encode()) for l in lines), raw.decode(errors="replace")
    assert b"\x1b" not in raw and raw.decode("utf-8")  # no ESC; all of it UTF-8 (raises if not)
    assert b"z\\x0a" + forged.encode() in raw and b"esc\\x1b[31mred.jpg" in raw and b"bad\\xff\\xfeutf8.jpg" in raw, raw
    assert "caf\u00e9.jpg".encode() in raw
    tsv = log.read_bytes()
    rows = tsv.decode("utf-8").splitlines()
    assert len(rows) == 4 and all(len(r.split("\t")) == 6 for r in rows), rows
