"""A job's streams are one in the daemon's eyes (issue 29, item 9): the
streams opened with the same job= on any connection, epoch after epoch (a
DataLoader's workers), are one group in `bfeed stats` (text and --json),
`bfeed top` and /metrics, with the loop's timing that an anchor stream
reports (Stream.report_timing) and a verdict that agrees with it. The
oracles: each stream's own counters in the daemon's raw report (their sums,
closed streams included) and the figures the test reported itself."""
import json
import os
import random
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

import bfeed
from oracle_util import Daemon, wait_for

# What a job sums of its streams' counters; stable once the streams ended.
SUMMED = ("samples", "batches", "raw_bytes", "wire_bytes", "skipped", "worker_busy_us", "kernel_copy_bytes",
          "shm_batches", "batches_dropped_idle", "batches_built", "batches_shared", "bytes_saved", "read_us",
          "decode_us", "resize_us", "augment_us", "batch_us", "memory_wait_us")
# The loop's timing the anchor reports: whole microseconds, exact in binary.
LOOP = dict(batches=39, wait_s=1.5, step_s=4.5, wait_p50_s=0.03125, wait_p99_s=0.25, first_wait_s=0.5)
LOOP_US = {"client_batches": 39, "client_wait_us": 1500000, "client_step_us": 4500000,
           "client_wait_p50_us": 31250, "client_wait_p99_us": 250000, "client_first_wait_us": 500000,
           "wait_fraction_ppm": 250000, "loop": 1}
OPTS = dict(batch=4, size=32, seed=7)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bfeed(*args):
    p = subprocess.run([os.environ["BFEED"], *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _stats_json(addr):
    return json.loads(_bfeed("stats", "--connect", addr, "--json"))


def _job_streams(client, job):
    """The raw report's stream groups of the job (the oracle: each stream's own counters)."""
    return [g["counters"] for g in client.stats() if g["kind"] == "stream" and g["counters"].get("job") == job]


def _read_all(stream):
    return sum(1 for _ in stream)


@pytest.fixture
def jobs_daemon(data, tmp_path):
    port = _free_port()
    d = Daemon(os.environ["BFEEDD"], str(tmp_path), ["demo=" + data["datasets"][1].split("=", 1)[1]],
               extra=["--metrics-listen", "127.0.0.1:%d" % port])
    d.metrics = "http://127.0.0.1:%d/metrics" % port
    yield d
    assert d.stop() is None, d.log()


def test_a_jobs_streams_are_one_group(jobs_daemon):
    """Two streams on two connections and an anchor reporting the loop:
    one job group, the sums of the streams' counters, the loop's timing
    exactly; it outlives a stream's close, the next epoch's stream joins
    it, and a stream without a job is shown as before."""
    addr = jobs_daemon.addr
    job = random.getrandbits(64) | 1
    rid = "%016x:demo" % job
    with bfeed.connect(addr) as c1, bfeed.connect(addr) as c2, bfeed.connect(addr) as c3:
        anchor = c3.stream("demo", select="on-demand", job=job, **OPTS)  # builds nothing
        s1 = c1.stream("demo", epochs=1, job=job, **OPTS)
        s2 = c2.stream("demo", epochs=1, job=job, share="off", **OPTS)
        n1, n2 = _read_all(s1), _read_all(s2)
        assert n1 == n2 == 20  # make-demo's 80 train images in 4s
        anchor.report_timing(**LOOP)
        assert anchor.stats()["client_wait_us"] == 1500000  # on its connection: the daemon has it
        own = _job_streams(c1, job)
        assert len(own) == 3
        js = _stats_json(addr)
        assert list(js["jobs"]) == [rid], js["jobs"]
        assert js["streams"] == {}, js["streams"]  # folded into the job
        g = js["jobs"][rid]
        for k in SUMMED:
            assert g[k] == sum(o[k] for o in own), k
        assert g["samples"] == 2 * 80 and g["batches"] == 40
        for k, v in LOOP_US.items():
            assert g[k] == v, (k, g[k])
        assert g["job"] == job and g["streams"] == 3 and g["streams_total"] == 3
        assert g["stream_time_us"] >= max(o["age_us"] for o in own)
        assert js["verdicts"][rid].startswith("input-bound 25%: "), js["verdicts"]
        assert list(js["verdicts"]) == [rid]

        text = _bfeed("stats", "--connect", addr)
        assert "\njob %s\n" % rid in "\n" + text, text
        assert not re.search(r"^stream ", text, re.M), text
        verdicts = [l for l in text.splitlines() if l.startswith("verdict ")]
        assert len(verdicts) == 1 and verdicts[0].startswith("verdict %s input-bound 25%%: " % rid), verdicts

        # A stream's close folds it in: the sums stay, one stream fewer open.
        s1.close()
        g = _stats_json(addr)["jobs"][rid]
        for k in SUMMED:
            assert g[k] == sum(o[k] for o in own), k
        assert g["streams"] == 2 and g["streams_total"] == 3
        # The next epoch's stream, on the first connection again, joins it.
        s3 = c1.stream("demo", epoch=1, epochs=1, job=job, **OPTS)
        assert _read_all(s3) == 20
        g = _stats_json(addr)["jobs"][rid]
        assert g["samples"] == 3 * 80 and g["streams_total"] == 4 and g["streams"] == 3
        for k in ("client_wait_us", "client_step_us"):
            assert g[k] == LOOP_US[k]  # still the loop's, not the streams' own

        # job=0: its own stream group and verdict, as before.
        s0 = c2.stream("demo", **OPTS)
        next(s0)
        js = _stats_json(addr)
        assert len(js["streams"]) == 1 and "job" not in next(iter(js["streams"].values()))
        assert set(js["verdicts"]) == {rid, next(iter(js["streams"]))}
        assert list(js["jobs"]) == [rid]

        metrics = urllib.request.urlopen(jobs_daemon.metrics, timeout=10).read().decode()
        assert re.search(r'^bfeed_job_wait_fraction\{job="%016x",dataset="demo"\} 0\.250000$' % job, metrics, re.M)
        assert re.search(r'^bfeed_job_client_wait_seconds_total\{job="%016x",dataset="demo"\} 1\.500000$' % job,
                         metrics, re.M), metrics
        assert len(re.findall(r"^bfeed_stream_wait_fraction\{", metrics, re.M)) == 4  # every open stream still

        # bfeed top off a terminal: one line for the job, one for the stream without one.
        frame = _bfeed("top", "--connect", addr, "--count", "1")
        lines = frame.splitlines()
        at = [i for i, l in enumerate(lines) if l.startswith("  job    %s " % rid)]
        assert len(at) == 1, frame
        assert re.search(r"stall +25%  p99 wait 250\.0 ms  streams 3 ", lines[at[0]]), frame
        assert lines[at[0] + 1].startswith("    input-bound 25%: "), frame
        assert sum(l.startswith("  stream ") for l in lines) == 1, frame
        for s in (s0, s2, s3, anchor):
            s.close()


def test_without_a_loop_the_streams_own_timing_adds_up(jobs_daemon):
    """No anchor: the job's wait and step are its streams' own, summed."""
    job = random.getrandbits(64) | 1
    with bfeed.connect(jobs_daemon.addr) as c1, bfeed.connect(jobs_daemon.addr) as c2:
        s1 = c1.stream("demo", epochs=1, job=job, **OPTS)
        s2 = c2.stream("demo", epochs=1, job=job, **OPTS)
        for s in (s1, s2):
            for _ in range(11):
                next(s)
        time.sleep(0.3)  # the next batch takes the totals to the daemon (every 250 ms): 10 batches each
        _read_all(s1), _read_all(s2)
        s1.stats(), s2.stats()  # STATS on each stream's connection: after its last TIMING
        own = _job_streams(c1, job)
        g = _stats_json(jobs_daemon.addr)["jobs"]["%016x:demo" % job]
    assert g["loop"] == 0 and g["client_batches"] >= 20
    for k in ("client_batches", "client_wait_us", "client_step_us"):
        assert g[k] == sum(o[k] for o in own), k
    assert g["client_wait_p99_us"] == max(o["client_wait_p99_us"] for o in own)


def test_report_timing_refuses_what_is_not_a_time(jobs_daemon):
    with bfeed.connect(jobs_daemon.addr) as c, c.stream("demo", select="on-demand", job=5, **OPTS) as s:
        with pytest.raises(ValueError, match="wait_s must be seconds"):
            s.report_timing(1, -1.0, 0.0, 0.0, 0.0)
        with pytest.raises(ValueError, match="step_s"):
            s.report_timing(1, 0.0, float("nan"), 0.0, 0.0)
        with pytest.raises(ValueError, match="batches"):
            s.report_timing(-1, 0.0, 0.0, 0.0, 0.0)
        with pytest.raises(TypeError):
            s.report_timing(1.5, 0.0, 0.0, 0.0, 0.0)
        s.report_timing(batches=2, wait_s=0.25, step_s=0.75, wait_p50_s=0.125, wait_p99_s=0.125)
        st = s.stats()  # what the stream sends now: the loop's
        assert st["client_wait_us"] == 250000 and st["client_step_us"] == 750000 and st["wait_fraction_ppm"] == 250000


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed (scripts/deps.sh --test installs it)")
def test_top_on_a_terminal_shows_the_job(jobs_daemon):
    """bfeed top in a tmux pane while a loop reports a quarter of its time
    waiting, report after report: one line for the job, judged from the
    loop's figures (each interval's as the whole: 25%), none for its
    streams."""
    job = random.getrandbits(64) | 1
    rid = "%016x:demo" % job
    stop = threading.Event()
    session = "bfeed-top-jobs-%d" % os.getpid()
    with bfeed.connect(jobs_daemon.addr) as c, bfeed.connect(jobs_daemon.addr) as w:
        anchor = c.stream("demo", select="on-demand", job=job, **OPTS)
        worker = w.stream("demo", job=job, **OPTS)
        next(worker)

        def loop():  # 4 batches a report: 0.25 s waited, 0.75 s stepped
            k = 0
            while not stop.is_set():
                k += 1
                anchor.report_timing(4 * k, 0.25 * k, 0.75 * k, 0.0625, 0.125)
                stop.wait(0.05)

        t = threading.Thread(target=loop)
        t.start()
        try:
            subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "30",
                            "%s top --connect %s --interval 0.3" % (os.environ["BFEED"], jobs_daemon.addr)],
                           check=True)

            def pane():
                return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                      text=True).stdout

            def judged():  # a frame after the first: judged over an interval
                p = pane()
                return p if "  job    " + rid in p and "input-bound 25%" in p and "stall  25%" in p else None

            screen = wait_for(judged, 20, "bfeed top's job line")
            lines = [l for l in screen.splitlines() if l.strip()]
            at = [i for i, l in enumerate(lines) if l.startswith("  job    " + rid)]
            assert len(at) == 1 and "streams 2" in lines[at[0]], screen
            assert lines[at[0] + 1].startswith("    input-bound 25%: "), screen
            assert not any(l.startswith("  stream ") for l in lines), screen
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
            stop.set()
            t.join()
        worker.close()
        anchor.close()


def test_an_ended_job_is_forgotten_after_idle_timeout(data, tmp_path):
    d = Daemon(os.environ["BFEEDD"], str(tmp_path), ["demo=" + data["datasets"][1].split("=", 1)[1]],
               extra=["--idle-timeout", "1"])
    try:
        with bfeed.connect(d.addr) as c, c.stream("demo", select="on-demand", job=77, **OPTS):
            assert list(_stats_json(d.addr)["jobs"]) == ["%016x:demo" % 77]
        wait_for(lambda: _stats_json(d.addr)["jobs"] == {}, 30, "the ended job to be forgotten", step=0.2)
    finally:
        assert d.stop() is None, d.log()
