#!/usr/bin/python3
"""First contact with the command line: what a new user types first.

Each subcommand is one ctest test and drives the real binaries; the ones
that need a daemon start bfeedd on a make-demo dataset over a Unix socket.

    test_cli.py BUILD_DIR SUBCOMMAND

help      every command and subcommand takes --help (stdout, rc 0) and
          --version; option errors name the command that was run
messages  a batch larger than the dataset names --keep-partial; --size over
          the frame limit says which batch and size fit (computed here from
          the tensor sizes); make-demo on a non-empty folder names --force
json      bench --json: stdout is one JSON document, the summary on stderr
resume    the position after an epoch's last batch is the next epoch's
          batch 0, byte for byte (compared with numpy)
loop      client/examples/loop.c reads one epoch, and fails cleanly (no
          crash) without a daemon or with a wrong dataset name
docs      bfeed(1) names every option --help does; the manual pages render
          without warnings; the README's C block is loop.c's; its Python view
          of fetch's '<u2' files as torch.bfloat16 matches torch's own cast
text_batch  a text batch larger than PROTOCOL.md used to allow at size 224
"""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from oracle_util import Daemon as BfeeddChild, check, main, write_table  # noqa: E402

BUILD, CMD = sys.argv[1:3]
BIN = os.path.join(BUILD, "bin")
BFEED, BFEEDD = os.path.join(BIN, "bfeed"), os.path.join(BIN, "bfeedd")
TRAIN, TRAIN_BENCH = os.path.join(BIN, "bfeed-train"), os.path.join(BIN, "bfeed-train-bench")
LOOP = os.path.join(BUILD, "examples", "loop")
TMP = tempfile.mkdtemp(prefix="bfeed-cli-")
TRAIN_PER_CLASS, CLASSES = 10, 8  # make-demo: 8 classes


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


class Daemon(BfeeddChild):
    """bfeedd serving a make-demo dataset as `a` on a Unix socket."""

    def __init__(self):
        self.demo = os.path.join(TMP, "demo")
        if not os.path.isdir(self.demo):
            r = run([BFEED, "make-demo", self.demo, "--train", str(TRAIN_PER_CLASS), "--val", "2"])
            assert r.returncode == 0, r.stderr
        super().__init__(BFEEDD, TMP, ["a=" + os.path.join(self.demo, "train")])

    def stop(self):
        why = super().stop()
        check(why is None, "bfeedd exits 0 on SIGTERM" + (f": {why}" if why else ""))


# ---------------------------------------------------------------------------

VERSION = re.compile(r"^(bfeed|bfeedd|bfeed-train|bfeed-train-bench) \d+\.\d+\.\d+ \(protocol \d+\)\n$")


def test_help():
    commands = [[BFEED], [BFEED, "bench"], [BFEED, "fetch"], [BFEED, "stats"], [BFEED, "top"], [BFEED, "make-demo"],
                [BFEED, "version"], [BFEEDD], [TRAIN], [TRAIN_BENCH]]
    for c in commands:
        name = " ".join(os.path.basename(x) for x in c)
        r = run(c + ["--help"])
        check(r.returncode == 0 and r.stdout.startswith("usage: ") and r.stderr == "",
              f"{name} --help: usage on stdout, rc 0 (rc {r.returncode}, stderr {r.stderr[:80]!r})")
        r = run(c + ["--version"])
        check(r.returncode == 0 and VERSION.match(r.stdout) is not None,
              f"{name} --version: one version line, rc 0 ({r.stdout!r})")
    # A subcommand's help is its own, with the stream options where it takes them.
    for sub, own in [("bench", "--batches"), ("fetch", "--batch-index"), ("stats", "--json"),
                     ("top", "--interval"), ("make-demo", "--force")]:
        out = run([BFEED, sub, "--help"]).stdout
        check(own in out and out.startswith(f"usage: bfeed {sub}"), f"bfeed {sub} --help describes {own}")
        check(("--keep-partial" in out) == (sub in ("bench", "fetch")),
              f"bfeed {sub} --help lists the stream options only where they apply")
    # --help wins even without the required options, and after others.
    r = run([BFEED, "bench", "--batch", "8", "--help"])
    check(r.returncode == 0 and "usage: bfeed bench" in r.stdout, "bench --batch 8 --help still helps")
    # Option errors name the program and command that was run.
    for args, prefix in [([BFEED, "bench", "--batch", "0"], "bfeed bench: --batch 0:"),
                         ([BFEED, "fetch", "--shard", "3/2"], "bfeed fetch: --shard 3/2:"),
                         ([BFEED, "bench", "--codec", "brotli"], "bfeed bench: --codec brotli:"),
                         ([TRAIN, "--batch", "0"], "bfeed-train: --batch 0:"),
                         ([TRAIN, "--mode", "test"], "bfeed-train: --mode test:"),
                         ([TRAIN_BENCH, "--batch", "0"], "bfeed-train-bench: --batch 0:")]:
        r = run(args)
        check(r.returncode == 2 and r.stderr.startswith(prefix),
              f"{' '.join(os.path.basename(a) for a in args)}: rc 2, '{prefix}' ({r.stderr.strip()[:100]!r})")
    r = run([BFEED, "bench", "--frobnicate"])
    check(r.returncode == 2 and "unknown option --frobnicate" in r.stderr and "bfeed bench --help" in r.stderr,
          "an unknown option points at the command's own --help")


def largest(fits, lo, hi):
    """The largest v in [lo, hi] with fits(v), by linear search downwards."""
    v = hi
    while v >= lo and not fits(v):
        v -= 1
    return v


def test_messages():
    full = os.path.join(TMP, "full")
    os.makedirs(full)
    open(os.path.join(full, "keep.txt"), "w").close()
    r = run([BFEED, "make-demo", full])
    check(r.returncode == 1 and "not empty" in r.stderr and "--force" in r.stderr,
          f"make-demo on a non-empty folder names --force ({r.stderr.strip()!r})")
    r = run([BFEED, "make-demo", full, "--force", "--train", "2", "--val", "1"])
    check(r.returncode == 0 and os.path.isdir(os.path.join(full, "train")), "and --force writes there")

    d = Daemon()
    n = TRAIN_PER_CLASS * CLASSES
    r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", str(n + 1), "--size", "16"])
    check(r.returncode == 1 and "--keep-partial" in r.stderr and f"{n} samples" in r.stderr,
          f"a batch larger than the dataset names --keep-partial ({r.stderr.strip()!r})")
    r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", str(n + 1), "--size", "16",
             "--keep-partial", "--batches", "1", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout)["samples"] == n, "and with --keep-partial it serves them all")

    # The frame limit is 2^30 bytes: image bf16 [B,3,S,S] + label i32 [B] + index i64 [B], each 64-byte
    # aligned, plus the frame's own header and tensor descriptors (under 4 KiB here).
    limit, slack = 1 << 30, 4096

    def frame(b, s):
        align = lambda x: (x + 63) // 64 * 64
        return align(b * 3 * s * s * 2) + align(b * 4) + b * 8 + slack

    batch, size = 64, 4096
    want_size = largest(lambda s: frame(batch, s) <= limit, 8, size)
    want_batch = largest(lambda b: frame(b, size) <= limit, 1, batch)
    r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", str(batch), "--size", str(size)])
    m = re.search(r"batch (\d+) fits at size 4096, or size (\d+) at batch 64", r.stderr)
    check(r.returncode == 1 and "frame limit" in r.stderr and m is not None,
          f"--size {size} over the frame limit says what would fit ({r.stderr.strip()!r})")
    if m:
        got_batch, got_size = int(m.group(1)), int(m.group(2))
        check(got_batch == want_batch, f"the batch that fits: {got_batch} (computed {want_batch})")
        check(got_size == want_size, f"the size that fits: {got_size} (computed {want_size})")
        r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", str(batch), "--size",
                 str(got_size + 1)])
        check(r.returncode == 1 and "frame limit" in r.stderr, "one pixel more is refused")
    d.stop()


def test_json():
    d = Daemon()
    r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", "8", "--size", "16",
             "--batches", "3", "--json"])
    try:
        doc = json.loads(r.stdout)  # the whole of stdout, not its last line
    except ValueError:
        doc = None
    check(r.returncode == 0 and isinstance(doc, dict), f"bench --json: stdout is one JSON document ({r.stdout!r})")
    check(doc is not None and doc["batches"] == 3 and doc["samples"] == 24, "with the counts asked for")
    check("samples/s" in r.stderr, "the human summary goes to stderr")
    r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", "8", "--size", "16",
             "--batches", "2"])
    check(r.returncode == 0 and "samples/s" in r.stdout and "{" not in r.stdout,
          "without --json the summary is on stdout, no JSON")
    d.stop()


def fetch(d, out, *opts):
    r = run([BFEED, "fetch", "--connect", d.addr, "--dataset", "a", "--batch", "16", "--size", "16",
             "--seed", "5", "--out", out] + list(opts))
    return r


def test_resume():
    d = Daemon()
    bpe = TRAIN_PER_CLASS * CLASSES // 16
    end = fetch(d, os.path.join(TMP, "end"), "--epoch", "0", "--batch-index", str(bpe))
    check(end.returncode == 0, f"--batch-index {bpe} (the end of epoch 0) is accepted ({end.stderr.strip()!r})")
    nxt = fetch(d, os.path.join(TMP, "next"), "--epoch", "1", "--batch-index", "0")
    last = fetch(d, os.path.join(TMP, "last"), "--epoch", "0", "--batch-index", str(bpe - 1))
    check(nxt.returncode == 0 and last.returncode == 0, "the neighbouring batches are fetched")
    meta = json.load(open(os.path.join(TMP, "end", "meta.json")))
    check(meta["epoch"] == 1 and meta["batch_index"] == 0, f"it is epoch 1's batch 0 ({meta['epoch']}, "
          f"{meta['batch_index']})")
    for t in ["image", "label", "index"]:
        a, b = np.load(os.path.join(TMP, "end", t + ".npy")), np.load(os.path.join(TMP, "next", t + ".npy"))
        check(a.dtype == b.dtype and np.array_equal(a, b), f"{t}: identical to asking for (1, 0)")
    a, c = np.load(os.path.join(TMP, "end", "index.npy")), np.load(os.path.join(TMP, "last", "index.npy"))
    check(not np.array_equal(a, c), "and not a repeat of epoch 0's last batch")
    # With --epochs 1 counted from epoch 0, the end of epoch 0 leaves nothing: the stream ends at once.
    r = run([BFEED, "bench", "--connect", d.addr, "--dataset", "a", "--batch", "16", "--size", "16",
             "--start-batch", str(bpe), "--epochs", "1", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout or "{}").get("batches") == 0,
          f"a stream resumed at its last epoch's end ends at once, empty ({r.stdout.strip()!r})")
    r = fetch(d, os.path.join(TMP, "past"), "--epoch", "0", "--batch-index", str(bpe + 1))
    check(r.returncode == 1 and f"past the epoch's {bpe} batches" in r.stderr,
          f"one further is still refused, saying why ({r.stderr.strip()!r})")
    # --out makes the folders it needs (mkdir -p), and says which it cannot.
    deep = os.path.join(TMP, "deep", "a", "b")
    r = fetch(d, deep, "--batch-index", "0")
    check(r.returncode == 0 and os.path.isfile(os.path.join(deep, "image.npy")),
          f"--out a/b/c is made with its parents ({r.returncode}, {r.stderr.strip()!r})")
    open(os.path.join(TMP, "plainfile"), "w").close()
    r = fetch(d, os.path.join(TMP, "plainfile", "x"), "--batch-index", "0")
    check(r.returncode == 1 and "plainfile" in r.stderr, f"a file in the way is named ({r.stderr.strip()!r})")
    d.stop()


def test_loop():
    check(os.access(LOOP, os.X_OK), f"the example is built: {LOOP}")
    r = run([LOOP, "unix:" + os.path.join(TMP, "nothing.sock"), "a"])
    check(r.returncode == 1 and r.stderr.startswith("loop: connect:") and "nothing.sock" in r.stderr,
          f"without a daemon: rc 1 and the reason ({r.returncode}, {r.stderr.strip()!r})")
    r = run([LOOP])
    check(r.returncode == 2 and "usage" in r.stderr, "without arguments: usage, rc 2")
    d = Daemon()
    r = run([LOOP, d.addr, "nosuch"])
    check(r.returncode == 1 and r.stderr.startswith("loop: open:") and "nosuch" in r.stderr,
          f"a wrong dataset name: rc 1 and the reason ({r.returncode}, {r.stderr.strip()!r})")
    r = run([LOOP, d.addr, "a"])
    n = TRAIN_PER_CLASS * CLASSES
    batches = n // 64
    check(r.returncode == 0, f"one epoch: rc 0 ({r.stderr.strip()!r})")
    check(f"epoch done: {batches} batches, {batches * 64} samples" in r.stdout,
          f"it reads the epoch's {batches} batch(es) and ends: {r.stdout.strip().splitlines()[-1:]}")
    check("image bf16 [64, 3, 224, 224]" in r.stdout and "label i32 [64]" in r.stdout,
          "and says what the batches hold")
    d.stop()


def test_docs():
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    man = {m: open(os.path.join(src, "man", m)).read() for m in ["bfeed.1", "bfeedd.conf.5", "bfeedd.8"]}
    # Every option bfeed's help names is in bfeed(1), spelt as groff writes it.
    helps = run([BFEED, "--help"]).stdout + run([BFEED, "make-demo", "--help"]).stdout
    for sub in ["bench", "fetch", "stats", "top"]:
        helps += run([BFEED, sub, "--help"]).stdout
    opts = sorted(set(re.findall(r"--[a-z][a-z-]+", helps)))
    missing = [o for o in opts if o.replace("-", "\\-") not in man["bfeed.1"]]
    check(len(opts) > 25 and not missing, f"bfeed(1) describes all {len(opts)} options of --help; missing {missing}")
    for word in ["make\\-demo", "\\-\\-text", "version", "layout", "codec", "shuffle", "torch.bfloat16"]:
        check(word in man["bfeed.1"], f"bfeed(1) covers {word}")
    check("\\(<->" not in man["bfeedd.conf.5"] and "\\(<>" in man["bfeedd.conf.5"],
          "bfeedd.conf(5) writes the two-way arrow as \\(<>")
    if shutil.which("man"):
        for m in man:
            r = run(["man", "--warnings", "-l", os.path.join(src, "man", m)],
                    env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80"))
            check(r.returncode == 0 and r.stderr == "", f"man {m} renders without warnings ({r.stderr.strip()!r})")
            check("\u2190>" not in r.stdout, f"man {m} has no stray arrow")
    # The README's C example is loop.c's own lines, so the two cannot drift.
    readme = open(os.path.join(src, "README.md")).read()
    block = re.search(r"### In a training loop \(C\).*?```c\n(.*?)```", readme, re.S).group(1)
    loop = [l.strip() for l in open(os.path.join(src, "client", "examples", "loop.c"))]
    stray = [l for l in block.splitlines() if l.strip() and not l.strip().startswith("/*") and l.strip() not in loop]
    check(not stray, f"the README's C block is taken from client/examples/loop.c (not there: {stray})")
    check("pkg-config --cflags --libs bfeed" in readme and "pkg-config --static" in readme,
          "the README shows the pkg-config compile line, and --static for libbfeed.a")
    # The README's Python for fetch's '<u2' files gives the tensor torch's own cast gives.
    import torch
    d = Daemon()
    out = os.path.join(TMP, "b0")
    r = run([BFEED, "fetch", "--connect", d.addr, "--dataset", "a", "--batch", "4", "--size", "16", "--out", out,
             "--batch-index", "0"])
    d.stop()
    check(r.returncode == 0, "fetch writes a batch")
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1).replace("/tmp/batch0", out)
    ns = {}
    exec(code, ns)
    x, f = ns["x"], ns["f"]
    check(x.dtype == torch.bfloat16 and tuple(x.shape) == (4, 3, 16, 16), f"the README's view is bf16 {tuple(x.shape)}")
    check(torch.equal(x, torch.from_numpy(f).to(torch.bfloat16)) and torch.equal(x.float(), torch.from_numpy(f)),
          "and equals its float32 values cast by torch")


def test_text_batch():
    """PROTOCOL.md said a text batch over 3566 samples needs a smaller --size; it does not."""
    words = [f"w{i}" for i in range(20)]
    rng = np.random.default_rng(3)
    vec = write_table(os.path.join(TMP, "v.txt"), dim=8, words=words)
    txt = os.path.join(TMP, "t.txt")
    with open(txt, "w") as fh:
        for i in range(4100):
            fh.write(f"__label__{'ab'[i % 2]} " + " ".join(rng.choice(words, 3)) + "\n")
    d = BfeeddChild(BFEEDD, TMP, [f"t=text:{txt},vectors={vec}"])
    addr = d.addr
    r = run([BFEED, "bench", "--connect", addr, "--dataset", "t", "--batch", "4000", "--size", "224",
             "--batches", "1", "--json"])
    check(r.returncode == 0 and json.loads(r.stdout)["samples"] == 4000,
          f"a text batch of 4000 at --size 224 is served ({r.stderr.strip()[-200:]!r})")
    check(d.stop() is None, "bfeedd exits 0")


def test_train_token():
    """bfeed-train takes the connection options: with --token-file it trains
    on a daemon that asks TCP clients for a token; without, it is refused,
    saying so."""
    d = Daemon()
    d.stop()
    tok = os.path.join(TMP, "token")
    with open(tok, "w") as f:
        f.write("train-token\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = BfeeddChild(BFEEDD, TMP, ["a=" + os.path.join(d.demo, "train")],
                    extra=["--listen", "127.0.0.1:%d" % port, "--auth-token-file", tok])
    args = [TRAIN, "--connect", "127.0.0.1:%d" % port, "--dataset", "a", "--epochs", "1", "--batch", "16",
            "--size", "16", "--hidden", "8"]
    r = run(args + ["--token-file", tok, "--json"])
    check(r.returncode == 0 and json.loads(r.stdout.strip().split("\n")[-1] or "{}"),
          f"bfeed-train --token-file trains over TCP ({r.stderr.strip()[-200:]!r})")
    r = run(args + ["--no-reconnect"], env=dict(os.environ, BFEED_TOKEN_FILE=""))
    check(r.returncode == 1 and "token" in r.stderr, f"and without the token it is refused ({r.stderr.strip()!r})")
    check(d.stop() is None, "bfeedd exits 0")


TESTS = {"train_token": test_train_token, "docs": test_docs, "text_batch": test_text_batch, "help": test_help, "messages": test_messages, "json": test_json, "resume": test_resume,
         "loop": test_loop}

if __name__ == "__main__":
    main(TESTS, CMD, TMP)
