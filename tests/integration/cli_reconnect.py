"""`bfeed bench` across a daemon crash: the connection options of the
command line, and the reconnects it reports.

A make-demo folder is served by one bfeedd worker at 224x224, so that a
bench of 200 batches takes seconds. Once the daemon has served a few of its
batches, bench is stopped (SIGSTOP), the daemon killed (-9) and started
again on the same socket, and bench continued: it must finish with all 200
batches (200 x 16 samples), exit 0 and report 1 reconnect, in its text and
--json output. With --no-reconnect the same crash ends bench with exit 1
and the reason. Bad --reconnect-deadline values and a token file that
cannot be read are refused, named.

usage: cli_reconnect.py BFEEDD BFEED
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import Daemon, wait_for  # noqa: E402

BATCHES = 200
BATCH = 16


def stream_batches(bfeed, addr):
    """Batches the daemon has sent on its open streams (None: no stream)."""
    r = subprocess.run([bfeed, "stats", "--connect", addr, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    streams = json.loads(r.stdout)["streams"]
    return sum(s["batches"] for s in streams.values()) if streams else None


def crash_during_bench(bfeedd, bfeed, tmp, data, extra):
    """Run bench, kill -9 the daemon in the middle and start it again;
    bench's exit status, stdout and stderr."""
    d = Daemon(bfeedd, tmp, ["demo=" + data], workers=1)
    argv = [bfeed, "bench", "--connect", d.addr, "--dataset", "demo", "--batches", str(BATCHES),
            "--batch", str(BATCH), "--size", "224", "--window", "2"] + extra
    bench = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (stream_batches(bfeed, d.addr) or 0) >= 3, 30, "bench to be under way")
        bench.send_signal(signal.SIGSTOP)
        n = stream_batches(bfeed, d.addr)
        assert n is not None and n < BATCHES, "bench was not in the middle of its run (%r)" % n
        d.kill()
        d = Daemon(bfeedd, tmp, ["demo=" + data], workers=1)
        bench.send_signal(signal.SIGCONT)
        out, err = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            bench.send_signal(signal.SIGCONT)
            bench.kill()
            bench.wait()
        d.kill()
    return bench.returncode, out, err


def main():
    bfeedd, bfeed = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="bfeed-cli-reconnect-") as tmp:
        subprocess.run([bfeed, "make-demo", os.path.join(tmp, "demo"), "--train", "4", "--val", "1"], check=True,
                       capture_output=True)
        data = os.path.join(tmp, "demo", "train")

        rc, out, err = crash_during_bench(bfeedd, bfeed, tmp, data, ["--json", "--reconnect-deadline", "30"])
        assert rc == 0, "bench failed across the crash (%d): %s" % (rc, err)
        # With --json, stdout is the JSON document alone; the summary goes to stderr.
        assert "reconnects: 1 " in err, err
        res = json.loads(out)
        assert res["reconnects"] == 1, res
        assert res["batches"] == BATCHES and res["samples"] == BATCHES * BATCH, res

        rc, out, err = crash_during_bench(bfeedd, bfeed, tmp, data, ["--no-reconnect"])
        assert rc == 1, "bench --no-reconnect survived a crash (%d): %s" % (rc, out)
        # The reason depends on which side met the crash first: the reader
        # thread (EOF or a read error) or the ACK after a batch (a failed write).
        reasons = ("closed the connection", "reading from the daemon", "sending ACK to the daemon")
        assert any(r in err for r in reasons), err

        d = Daemon(bfeedd, tmp, ["demo=" + data], workers=1)
        try:
            r = subprocess.run([bfeed, "bench", "--connect", d.addr, "--dataset", "demo", "--batches", "2",
                                "--batch", "8", "--size", "32", "--json"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout.strip().splitlines()[-1])["reconnects"] == 0, r.stdout
            for bad in ["0", "-1", "soon", ""]:
                r = subprocess.run([bfeed, "bench", "--connect", d.addr, "--dataset", "demo",
                                    "--reconnect-deadline", bad], capture_output=True, text=True)
                assert r.returncode == 2 and "--reconnect-deadline" in r.stderr, (bad, r.stderr)
            missing = os.path.join(tmp, "no-such-token")
            for cmd in (["bench", "--dataset", "demo"], ["stats"], ["fetch", "--dataset", "demo", "--batch-index",
                                                                    "0", "--out", os.path.join(tmp, "out")]):
                r = subprocess.run([bfeed] + cmd + ["--connect", d.addr, "--token-file", missing],
                                   capture_output=True, text=True)
                assert r.returncode == 1 and missing in r.stderr, (cmd, r.stderr)
            env = dict(os.environ, BFEED_TOKEN_FILE=missing)
            r = subprocess.run([bfeed, "stats", "--connect", d.addr], capture_output=True, text=True, env=env)
            assert r.returncode == 1 and "BFEED_TOKEN_FILE" in r.stderr, r.stderr
        finally:
            d.kill()
    print("cli_reconnect: ok")


if __name__ == "__main__":
    main()
