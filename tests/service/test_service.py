#!/usr/bin/python3
"""Service tests for bfeedd: systemd units, readiness, socket activation,
configuration, reload, metrics, installation. Each subcommand is one ctest
test; each starts the real daemon and talks to it over real sockets.

    test_service.py BUILD_DIR SOURCE_DIR DEMO_DIR SUBCOMMAND
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import accepts, check, failures, wait_for  # noqa: E402

BUILD, SRC, DEMO, CMD = sys.argv[1:5]
BIN = os.path.join(BUILD, "bin")
BFEEDD, BFEED = os.path.join(BIN, "bfeedd"), os.path.join(BIN, "bfeed")
HASH = os.path.join(BIN, "stream_hash")
TMP = tempfile.mkdtemp(prefix="bfeed-svc-")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Daemon:
    """bfeedd with its log in a file; stop() checks a clean exit. Every one
    started is killed at the end if still running (a test that failed)."""

    started = []

    def __init__(self, args, env=None, name="d"):
        self.log = os.path.join(TMP, name + ".log")
        self.proc = subprocess.Popen([BFEEDD] + args, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     env=env)
        Daemon.started.append(self.proc)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait_log(self, pattern, timeout=10.0):
        wait_for(lambda: re.search(pattern, self.text()) or self.proc.poll() is not None, timeout, pattern)
        if not re.search(pattern, self.text()):
            raise AssertionError(f"daemon exited before logging {pattern!r}:\n{self.text()}")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=10)
        check(rc == 0, f"daemon exits 0 on SIGTERM (got {rc})")


def config(path, extra_daemon="", datasets=None):
    datasets = datasets or {"a": os.path.join(DEMO, "train")}
    text = "[bfeedd]\nlisten = unix:%s\nworkers = 2\n%s\n" % (os.path.join(TMP, "s.sock"), extra_daemon)
    for name, p in datasets.items():
        text += "[dataset %s]\npath = %s\n\n" % (name, p)
    write(path, text)
    return "unix:" + os.path.join(TMP, "s.sock")


class Hasher:
    """stream_hash, driven line by line."""

    def __init__(self, addr, dataset, *opts):
        self.p = subprocess.Popen([HASH, addr, dataset, "--size", "32", "--batch", "16", "--window", "1",
                                   "--seed", "7"] + list(opts), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.first = self.p.stdout.readline().strip()

    def take(self, n):
        self.p.stdin.write(f"next {n}\n")
        self.p.stdin.flush()
        return [self.p.stdout.readline().strip() for _ in range(n)]

    def close(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        return self.p.wait(timeout=10)


# ---------------------------------------------------------------------------

def test_verify():
    out = subprocess.run(["systemd-analyze", "verify", "--man=no", os.path.join(BUILD, "systemd/verify/bfeedd.service"),
                          os.path.join(BUILD, "systemd/verify/bfeedd.socket")], capture_output=True, text=True)
    check(out.returncode == 0, "systemd-analyze verify exits 0")
    noise = (out.stdout + out.stderr).strip()
    check(noise == "", "systemd-analyze verify has nothing to say" + (f": {noise}" if noise else ""))
    unit = open(os.path.join(BUILD, "systemd/bfeedd.service")).read()
    for key in ["Type=notify", "ExecReload=", "DynamicUser=yes", "ProtectSystem=strict", "ProtectHome=yes",
                "PrivateTmp=yes", "NoNewPrivileges=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
                "ReadOnlyPaths=", "RuntimeDirectory=bfeed", "WatchdogSec=", "LimitNOFILE="]:
        check(key in unit, f"bfeedd.service has {key}")
    sock = open(os.path.join(BUILD, "systemd/bfeedd.socket")).read()
    for key in ["SocketMode=0660\n", "SocketGroup=bfeed\n"]:
        check(key in sock, f"bfeedd.socket has {key.strip()}")
    check("0666" not in sock and "\nListenStream=0.0.0.0" not in sock, "bfeedd.socket is neither world-writable nor on every interface")


def test_notify():
    nsock = os.path.join(TMP, "notify.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    srv.bind(nsock)
    srv.settimeout(15)
    env = dict(os.environ, NOTIFY_SOCKET=nsock, WATCHDOG_USEC="400000")
    addr = "unix:" + os.path.join(TMP, "n.sock")
    d = Daemon(["--listen", addr, "--dataset", "a=" + os.path.join(DEMO, "train")], env=env)

    def recv_until(word):
        seen = []
        while True:
            msg = srv.recv(4096).decode()
            seen.append(msg)
            if word in msg.split("\n"):
                return seen

    msgs = recv_until("READY=1")
    check(any("STATUS=" in m for m in msgs), "READY=1 comes with a STATUS= line")
    check(os.path.exists(addr[5:]), "the socket is listening when READY=1 arrives")
    r = subprocess.run([BFEED, "bench", "--connect", addr, "--dataset", "a", "--batches", "2", "--size", "32"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "a client is served right after READY=1")
    t0 = time.time()
    recv_until("WATCHDOG=1")
    check(time.time() - t0 < 1.0, "WATCHDOG=1 pings come within the interval")
    d.proc.send_signal(signal.SIGHUP)
    msgs = recv_until("READY=1")
    check(any("RELOADING=1" in m for m in msgs), "SIGHUP gives RELOADING=1, then READY=1")
    d.proc.send_signal(signal.SIGTERM)
    recv_until("STOPPING=1")
    check(d.proc.wait(timeout=10) == 0, "STOPPING=1 on SIGTERM, then exit 0")


def test_activate():
    path = os.path.join(TMP, "act.sock")
    port = free_port()
    act = subprocess.Popen(["systemd-socket-activate", "-l", path, "-l", f"127.0.0.1:{port}", BFEEDD,
                            "--dataset", "a=" + os.path.join(DEMO, "train"), "--listen", "unix:/nonexistent/x.sock"],
                           stdout=open(os.path.join(TMP, "act.log"), "w"), stderr=subprocess.STDOUT)
    # The path exists once bound, before it listens: wait until it takes a
    # connection (which starts the daemon), or a client may be refused.
    wait_for(lambda: accepts(path), 10, "activation socket")
    for addr in ["unix:" + path, f"127.0.0.1:{port}"]:
        r = subprocess.run([BFEED, "bench", "--connect", addr, "--dataset", "a", "--batches", "3", "--size", "32",
                            "--json"], capture_output=True, text=True, timeout=60)
        ok = r.returncode == 0 and json.loads(r.stdout.strip().splitlines()[-1])["batches"] == 3
        check(ok, f"socket-activated daemon serves {addr}" + ("" if ok else ": " + r.stderr))
    log = open(os.path.join(TMP, "act.log")).read()
    check("using 2 socket(s) from systemd" in log, "the daemon took both sockets from systemd, ignoring --listen")
    act.send_signal(signal.SIGTERM)
    check(act.wait(timeout=10) == 0, "socket-activated daemon exits 0 on SIGTERM")


def check_config_error(text, *needles):
    path = os.path.join(TMP, "bad.conf")
    write(path, text)
    r = subprocess.run([BFEEDD, "--check-config", path], capture_output=True, text=True, timeout=60)
    msg = r.stdout + r.stderr
    ok = r.returncode != 0 and all(n in msg for n in needles)
    check(ok, f"--check-config refuses and names {needles}" + ("" if ok else f": rc {r.returncode}, {msg!r}"))


def test_config():
    good = os.path.join(TMP, "good.conf")
    config(good)
    r = subprocess.run([BFEEDD, "--check-config", good], capture_output=True, text=True)
    check(r.returncode == 0, "--check-config accepts a good file")
    d = os.path.join(DEMO, "train")
    check_config_error(f"[bfeedd]\nworkers = 2\nfrobnicate = 1\n[dataset a]\npath = {d}\n", "bad.conf:3", "frobnicate")
    check_config_error(f"[bfeedd]\n\nworkers = many\n[dataset a]\npath = {d}\n", "bad.conf:3", "workers", "many")
    check_config_error("[bfeedd]\nworkers = 1\n[dataset a]\npath = /nonexistent/data\n", "bad.conf:4",
                       "/nonexistent/data")
    check_config_error(f"[bfeedd]\n[dataset a]\npath = {d}\ncolour = red\n", "bad.conf:4", "colour")
    check_config_error(f"[nosuch]\nx = 1\n[dataset a]\npath = {d}\n", "bad.conf:2", "nosuch")
    check_config_error(f"[bfeedd\nworkers = 1\n[dataset a]\npath = {d}\n", "bad.conf:2", "outside any section", "']' missing")
    check_config_error(f"[bfeedd]\nsocket_mode = 0999\n[dataset a]\npath = {d}\n", "bad.conf:2", "socket_mode", "octal")
    check_config_error(f"[bfeedd]\nhandshake_timeout = -1\n[dataset a]\npath = {d}\n", "bad.conf:2", "handshake_timeout")
    # A number past 2^64 is refused, not taken as 2^64 - 1.
    check_config_error(f"[bfeedd]\nmax_memory = 99999999999999999999\n[dataset a]\npath = {d}\n", "bad.conf:2",
                       "max_memory", "99999999999999999999")
    check_config_error(f"[bfeedd]\nmax_memory = 17179869184G\n[dataset a]\npath = {d}\n", "bad.conf:2", "max_memory")
    # A line longer than the parser takes is named, not misread as the next line's problem.
    check_config_error(f"[bfeedd]\n[dataset {'x' * 4000}]\npath = {d}\n", "bad.conf:2", "longer than")
    # A value longer than the parser's 200-byte line (issue 31: a path that
    # works with --dataset was refused in the file), with a comment after it.
    deep = os.path.join(TMP, "p" * 120, "q" * 120)
    os.makedirs(deep, exist_ok=True)
    if not os.path.islink(os.path.join(deep, "train")):
        os.symlink(d, os.path.join(deep, "train"))
    longp = os.path.join(deep, "train")
    write(os.path.join(TMP, "long.conf"), f"[bfeedd]\nworkers = 1\n[dataset a]\npath = {longp}   ; the demo\n")
    r = subprocess.run([BFEEDD, "--check-config", os.path.join(TMP, "long.conf")], capture_output=True, text=True)
    check(len(longp) > 250 and r.returncode == 0, f"a {len(longp)}-byte path is taken from the file ({r.stderr.strip()!r})")
    check_config_error(f"[bfeedd]\n[dataset a]\npath = {longp}/nonexistent  ; x\n", "bad.conf:3", longp + "/nonexistent")
    # Errors about flags name the flag as it is typed.
    r = subprocess.run([BFEEDD, "--check-config", good, "--max-memory", "99999999999999999999"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and "--max-memory" in r.stderr and "--max_memory" not in r.stderr,
          f"a flag's error names --max-memory ({r.stderr.strip()!r})")
    # Every dataset that cannot be served is named, not only the first: a
    # folder with a cycle of links (told as a cycle) and a missing path.
    cyc = os.path.join(TMP, "cycle")
    os.makedirs(os.path.join(cyc, "a"), exist_ok=True)
    if not os.path.islink(os.path.join(cyc, "a", "up")):
        os.symlink("..", os.path.join(cyc, "a", "up"))
    check_config_error(f"[bfeedd]\n[dataset a]\npath = {d}\n[dataset cyc]\npath = {cyc}\n[dataset gone]\n"
                       "path = /nonexistent/data\n", "a cycle of links", "/nonexistent/data",
                       "2 of 3 dataset(s) cannot be served")
    # A diamond of links (issue 31: 24 levels of two links to the next is
    # 2^24 walks of one tree; the walk never ended, RSS grew 6 MB/s): a
    # folder reached twice is named with both paths, at once.
    dia = os.path.join(TMP, "diamond")
    os.makedirs(os.path.join(dia, "c"), exist_ok=True)
    for lvl in range(24):
        here = os.path.join(dia, "l%02d" % lvl)
        os.makedirs(here, exist_ok=True)
        for name in ("x", "y"):
            if not os.path.islink(os.path.join(here, name)):
                os.symlink(os.path.join(dia, "l%02d" % (lvl + 1)), os.path.join(here, name))
    os.makedirs(os.path.join(dia, "l24"), exist_ok=True)
    img = next(os.path.join(r, f) for r, _, fs in sorted(os.walk(d)) for f in sorted(fs) if f.endswith((".jpg", ".png")))
    shutil.copy(img, os.path.join(dia, "l24", "img" + os.path.splitext(img)[1]))
    if not os.path.islink(os.path.join(dia, "c", "deep")):
        os.symlink(os.path.join(dia, "l00"), os.path.join(dia, "c", "deep"))
    t0 = time.monotonic()
    check_config_error(f"[bfeedd]\n[dataset dia]\npath = {dia}\n", "/c/deep/x/x/x/x", "/y is ", "/x again",
                       "links reach it twice")
    check(time.monotonic() - t0 < 30, "the diamond is refused at once (%.1f s)" % (time.monotonic() - t0))
    # A dataset's max_samples bounds what a walk may list, named.
    check_config_error(f"[bfeedd]\n[dataset a]\npath = {d}\nmax_samples = 3\n", "more than max_samples (3) files")
    # Flags override the file: max_window 2 in the file, 8 on the command line.
    path = os.path.join(TMP, "w.conf")
    addr = config(path, "max_window = 2")
    dm = Daemon(["--config", path])
    dm.wait_log("ready")
    h = Hasher(addr, "a", "--window", "4")
    check(h.first.startswith("error -12") and "max_window" in h.first,
          f"the file's max_window refuses a larger window ({h.first})")
    h.p.wait(timeout=10)
    dm.stop()
    dm = Daemon(["--config", path, "--max-window", "8"])
    dm.wait_log("ready")
    h = Hasher(addr, "a", "--window", "4")
    check(h.first == "open", "--max-window on the command line overrides the file")
    h.close()
    h = Hasher(addr, "a", "--batch", "65536", "--size", "224")
    check(h.first.startswith("error -1 ") and "frame limit" in h.first,
          f"an image batch too large for one frame is refused at open, saying why ({h.first[:120]})")
    h.p.wait(timeout=10)
    dm.stop()


def test_reload():
    path = os.path.join(TMP, "r.conf")
    train, val = os.path.join(DEMO, "train"), os.path.join(DEMO, "val")
    addr = config(path, datasets={"a": train, "b": val})
    d = Daemon(["--config", path])
    d.wait_log("ready")
    ref = Hasher(addr, "a")
    expected = ref.take(8)
    ref.close()
    live = Hasher(addr, "a")
    got = live.take(3)
    # b removed, c added, a unchanged.
    config(path, datasets={"a": train, "c": val})
    d.proc.send_signal(signal.SIGHUP)
    d.wait_log("reloaded")
    got += live.take(5)
    check(got == expected, "a stream open across a reload goes on with exactly the batches it would have had")
    c = Hasher(addr, "c")
    check(c.first == "open", "a dataset added by the reload is served")
    c.close()
    b = Hasher(addr, "b")
    check(b.first.startswith("error -10"), f"a dataset removed by the reload is gone ({b.first})")
    b.p.wait(timeout=10)
    # A bad configuration is refused; everything keeps running.
    write(path, open(path).read() + "\n[dataset d]\npath = /nonexistent\n")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_log("reload refused")
    more = live.take(2)
    check(all(re.match(r"^\d+ \d+ [0-9a-f]{16}$", l) for l in more), "the stream goes on after a refused reload")
    c = Hasher(addr, "c")
    check(c.first == "open", "the old settings stay in force after a refused reload")
    c.close()
    live.close()
    d.stop()


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""


def test_metrics():
    port = free_port()
    path = os.path.join(TMP, "m.conf")
    addr = config(path, f"metrics_listen = 127.0.0.1:{port}")
    d = Daemon(["--config", path])
    d.wait_log("metrics on")
    r = subprocess.run([BFEED, "bench", "--connect", addr, "--dataset", "a", "--batches", "6", "--size", "32",
                        "--batch", "16", "--window", "2", "--json"], capture_output=True, text=True)
    check(r.returncode == 0, "bench runs")
    status, ctype, body = get(f"http://127.0.0.1:{port}/metrics")
    check(status == 200 and ctype.startswith("text/plain; version=0.0.4"), "GET /metrics: 200, Prometheus text")
    values = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    batches = values.get('bfeed_batches_total{dataset="a"}', -1)
    check(6 <= batches <= 8, f"batches_total counts what was sent (6 taken, window 2): {batches}")
    check(values.get('bfeed_samples_total{dataset="a"}') == batches * 16, "samples_total = batches x 16")
    for h in ["bfeed_batch_latency_seconds", "bfeed_sample_seconds"]:
        buckets = [v for k, v in values.items() if k.startswith(h + "_bucket")]
        check(buckets == sorted(buckets) and len(buckets) == 13, f"{h}: 13 cumulative buckets")
        check(values.get(f'{h}_count{{dataset="a"}}') == buckets[-1], f"{h}: +Inf bucket = count")
    # Latency is observed per batch sent; sample time per batch built (the
    # window may have built up to 2 more than were sent).
    check(values.get('bfeed_batch_latency_seconds_count{dataset="a"}') == batches, "one latency per batch sent")
    built = values.get('bfeed_sample_seconds_count{dataset="a"}', -1)
    check(batches <= built <= batches + 2, f"one sample-time observation per batch built: {built}")
    for name in ["bfeed_clients", "bfeed_streams", "bfeed_workers", "bfeed_queue_depth", "bfeed_workers_busy",
                 'bfeed_skipped_files_total{dataset="a"}', 'bfeed_worker_busy_seconds_total{dataset="a"}']:
        check(name in values, f"metrics have {name}")
    check(get(f"http://127.0.0.1:{port}/nope")[0] == 404, "other paths: 404")
    # Scrapers at once are capped: 16 silent connections hold every slot,
    # the 17th is hung up on at once; once they go, /metrics answers again.
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
    extra = socket.create_connection(("127.0.0.1", port))
    extra.settimeout(3)
    try:
        hung_up = extra.recv(1) == b""
    except (socket.timeout, ConnectionResetError) as e:
        hung_up = isinstance(e, ConnectionResetError)
    check(hung_up, "a 17th /metrics connection is closed at once")
    for c in idle + [extra]:
        c.close()
    def answers():
        try:
            return get(f"http://127.0.0.1:{port}/metrics")[0] == 200
        except OSError:  # hung up on: the slots are not free yet
            return False
    wait_for(answers, 10, "/metrics after the idle scrapers left")
    st = subprocess.run([BFEED, "stats", "--connect", addr, "--json"], capture_output=True, text=True)
    s = json.loads(st.stdout)
    check(s["datasets"]["a"]["batches"] == batches and s["daemon"]["workers"] == 2,
          "bfeed stats --json agrees with the metrics")
    d.stop()


def test_install():
    stage = os.path.join(TMP, "stage")
    env = dict(os.environ, DESTDIR=stage)
    r = subprocess.run(["cmake", "--install", BUILD], env=env, capture_output=True, text=True)
    check(r.returncode == 0, "cmake --install into a staging folder" + ("" if r.returncode == 0 else r.stderr))
    files = [os.path.relpath(os.path.join(dp, f), stage) for dp, _, fs in os.walk(stage) for f in fs]
    for want in ["bin/bfeedd", "bin/bfeed", "include/bfeed.h", "libbfeed.so", "libbfeed.a", "pkgconfig/bfeed.pc",
                 "systemd/system/bfeedd.service", "systemd/system/bfeedd.socket", "bfeed/bfeedd.conf",
                 "man1/bfeed.1", "man5/bfeedd.conf.5", "man8/bfeedd.8"]:
        check(any(f.endswith(want) for f in files), f"installed {want}")
    pc = [os.path.join(stage, f) for f in files if f.endswith("pkgconfig/bfeed.pc")][0]
    penv = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc), PKG_CONFIG_SYSROOT_DIR=stage)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "bfeed"], env=penv, capture_output=True,
                           text=True).stdout.split()
    prog = os.path.join(TMP, "user.c")
    write(prog, r'''
#include <bfeed.h>
#include <stdio.h>
int main(int argc, char **argv) {
  bfeed_client *c; bfeed_stream *s; bfeed_batch *b; bfeed_error e; bfeed_stream_opts o; bfeed_tensor t;
  bfeed_stream_opts_init(&o); o.batch = 4; o.size = 16;
  if (bfeed_connect(argv[1], &c, &e) || bfeed_stream_open(c, "a", &o, &s, &e) || bfeed_stream_next(s, &b, &e))
    return fprintf(stderr, "%s\n", e.message), 1;
  bfeed_batch_find(b, "image", &t);
  printf("%s %s %lld %lld %lld %lld\n", t.name, bfeed_dtype_name(t.dtype), (long long)t.shape[0],
         (long long)t.shape[1], (long long)t.shape[2], (long long)t.shape[3]);
  bfeed_batch_release(b); bfeed_stream_close(s); bfeed_close(c); return 0;
}
''')
    exe = os.path.join(TMP, "user")
    r = subprocess.run(["cc", "-Wall", "-Werror", prog, "-o", exe] + flags, capture_output=True, text=True)
    check(r.returncode == 0, "a program builds against bfeed.pc" + ("" if r.returncode == 0 else r.stderr))
    path = os.path.join(TMP, "i.conf")
    addr = config(path)
    d = Daemon(["--config", path])
    d.wait_log("ready")
    libdir = os.path.dirname([os.path.join(stage, f) for f in files if f.endswith("libbfeed.so")][0])
    r = subprocess.run([exe, addr], env=dict(os.environ, LD_LIBRARY_PATH=libdir), capture_output=True, text=True)
    check(r.stdout.strip() == "image bf16 4 3 16 16", f"and runs against the installed libbfeed.so: {r.stdout!r}")
    r = subprocess.run(["ldd", exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir), capture_output=True, text=True)
    check(libdir in r.stdout, "it links the staged shared library")
    d.stop()


def test_logs():
    addr = "unix:" + os.path.join(TMP, "l.sock")
    args = ["--listen", addr, "--dataset", "a=" + os.path.join(DEMO, "train"), "--dataset",
            "gone=" + os.path.join(TMP, "nothing-here")]
    # Under journald (JOURNAL_STREAM set) lines carry syslog priorities.
    d = Daemon(args, env=dict(os.environ, JOURNAL_STREAM="8:1234"), name="j")
    # A dataset that cannot load is left out (it used to stop the start).
    d.wait_log("ready")
    check("dataset gone is left out" in d.text(), "a dataset that cannot load is left out, the daemon serves the rest")
    d.stop()
    lines = d.text().splitlines()
    check(lines and all(re.match(r"^<[0-7]>", l) for l in lines), f"journald lines start with <N>: {lines[:2]}")
    check(any(l.startswith("<3>") and "nothing-here" in l for l in lines), "the error is <3> and names the folder")
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    d = Daemon(args[:4] + ["--log-level", "warning"], env=env, name="p")
    time.sleep(0.5)
    d.proc.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    d.stop()
    text = d.text()
    check("info" not in text, "--log-level warning drops info lines")
    env["JOURNAL_STREAM"] = ""
    d = Daemon(args[:4], env={k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}, name="t")
    d.wait_log("ready")
    d.stop()
    first = d.text().splitlines()[0]
    check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z bfeedd info: ", first) is not None,
          f"elsewhere lines have a UTC timestamp and level: {first!r}")


def test_listen():
    """Listen failures name the address as it was given, and the real cause."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    data = ["--dataset", "a=" + os.path.join(DEMO, "train")]

    def start_error(*args):
        r = subprocess.run([BFEEDD] + data + list(args), capture_output=True, text=True, timeout=30)
        return r.returncode, r.stderr

    for asked in [f"127.0.0.1:{port}", f"localhost:{port}"]:
        rc, err = start_error("--listen", asked)
        ok = rc == 1 and f"cannot listen on {asked}: address already in use" in err
        check(ok, f"a busy port names the address asked for, {asked}" + ("" if ok else f": rc {rc}, {err!r}"))
    rc, err = start_error("--listen", "unix:" + os.path.join(TMP, "s.sock"), "--metrics-listen", f"127.0.0.1:{port}")
    ok = rc == 1 and f"metrics_listen 127.0.0.1:{port}: address already in use" in err
    check(ok, "a busy metrics port names the metrics_listen address" + ("" if ok else f": rc {rc}, {err!r}"))
    missing = os.path.join(TMP, "no-such-folder")
    rc, err = start_error("--listen", f"unix:{missing}/x.sock")
    ok = rc == 1 and f"folder {missing} does not exist" in err and "permission denied" not in err
    check(ok, "a Unix socket in a missing folder says the folder does not exist" + ("" if ok else f": rc {rc}, {err!r}"))
    busy.close()


TESTS = {"listen": test_listen, "verify": test_verify, "notify": test_notify, "activate": test_activate, "config": test_config,
         "reload": test_reload, "metrics": test_metrics, "install": test_install, "logs": test_logs}

if __name__ == "__main__":
    try:
        TESTS[CMD]()
    except Exception as e:  # a crash is a failure, with its reason
        import traceback
        traceback.print_exc()
        failures.append(f"{CMD}: {e}")
    finally:
        for proc in Daemon.started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(TMP, ignore_errors=True)
    print(f"{CMD}: {len(failures)} failed" if failures else f"{CMD}: all passed")
    sys.exit(1 if failures else 0)
