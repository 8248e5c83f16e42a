#!/usr/bin/python3
"""bfeed-train's acceptance run, shortened: make-demo data, the real daemon
on a Unix socket, training in bf16 and in f32 with the same seed.

Checks, from the --json last line of each run:
  - bf16 reaches the eval accuracy threshold and stays within a few points
    of f32 (the eval split is small: one sample is 1.25 points);
  - the memory it reports is what the model's shape implies, recomputed
    here from the JSON's layer sizes (bf16 adds working copies and halves
    activations; Adafactor keeps r + c floats per r x c matrix);
  - --accumulate and --memory-budget are accepted and reported;
  - a bad option is a usage error (exit 2), an unknown dataset an error (1).

Then the text half: a labelled text demo dataset (bfeed make-demo --text)
whose words come from 50-d GloVe vectors (the team's test_glove.txt in
SHARED_WORDVEC_DIR, or a generated table of the same shape when it is
absent), served as mean-pooled bf16 word vectors, trained in bf16 and f32
to the same threshold.

usage: train_accept.py BFEED BFEEDD BFEED_TRAIN SHARED_WORDVEC_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oracle_util import Daemon, glove_table  # noqa: E402

EPOCHS = 12
THRESHOLD = 0.90
SLACK = 0.05  # bf16 within 5 points of f32 on 80 eval samples


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def train(exe, addr, *extra, data=("train", "val"), shape=("--size", "32")):
    cmd = [exe, "--connect", addr, "--dataset", data[0], "--eval-dataset", data[1], *shape,
           "--batch", "32", "--seed", "3", "--epochs", str(EPOCHS), "--json", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    print("$", " ".join(cmd[1:]))
    print(r.stdout, end="")
    if r.returncode != 0:
        fail("exit %d: %s" % (r.returncode, r.stderr))
    lines = r.stdout.strip().splitlines()
    if len(lines) < EPOCHS + 2:
        fail("expected a memory table and %d epoch lines before the JSON" % EPOCHS)
    if sum(1 for l in lines if l.startswith("epoch ")) != EPOCHS:
        fail("expected %d epoch lines" % EPOCHS)
    j = json.loads(lines[-1])
    for k in ("eval_accuracy", "final_loss", "samples_per_s", "precision", "backend", "optimizer", "memory_bytes"):
        if k not in j:
            fail("JSON lacks %s" % k)
    for k in ("weights", "working", "activations", "optimizer"):
        if k not in j["memory_bytes"]:
            fail("memory_bytes lacks %s" % k)
    if not (j["samples_per_s"] > 0 and j["final_loss"] == j["final_loss"]):
        fail("no throughput or a NaN loss")
    return j


def expected_memory(j, precision, optimizer):
    """Bytes of each kind for the run's shape, counted independently."""
    dims = [j["inputs"], *j["hidden"], j["classes"]]
    batch, es = j["batch"], 2 if precision == "bf16" else 4
    params = sum(dims[l] * dims[l + 1] + dims[l + 1] for l in range(len(dims) - 1))
    widest = max(dims[1:])
    act = batch * (sum(dims[:-1]) * es + widest * (4 + es) + dims[-1] * 4)
    if optimizer == "adam":
        opt = 2 * params
    elif optimizer == "sgd":
        opt = params
    else:
        # r + c per matrix, full vectors for biases, one scratch row
        opt = sum((dims[l] + dims[l + 1]) + dims[l + 1] for l in range(len(dims) - 1)) + max(dims)
    return {"weights": 4 * params, "working": 2 * params if precision == "bf16" else 0,
            "gradients": 4 * params, "activations": act, "optimizer": 4 * opt}


def check_memory(j, precision, optimizer):
    want = expected_memory(j, precision, optimizer)
    got = {k: j["memory_bytes"][k] for k in want}
    if got != want:
        fail("%s + %s memory: reported %s, expected %s" % (precision, optimizer, got, want))
    base = expected_memory(j, "f32", "adam")
    got = {k: j["baseline_memory_bytes"][k] for k in base}
    if got != base:
        fail("baseline memory: reported %s, expected %s" % (got, base))


def main():
    bfeed, bfeedd, trainer, shared = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix="bfeed-train-")
    daemon = None
    try:
        glove = glove_table(shared, tmp)
        demo, text = os.path.join(tmp, "demo"), os.path.join(tmp, "text")
        subprocess.run([bfeed, "make-demo", demo, "--train", "40", "--val", "10"], check=True,
                       capture_output=True, timeout=120)
        subprocess.run([bfeed, "make-demo", text, "--text", glove], check=True, capture_output=True, timeout=120)
        vec = ",vectors=" + glove + ",cache_dir=" + tmp
        daemon = Daemon(bfeedd, tmp, ["train=" + os.path.join(demo, "train"), "val=" + os.path.join(demo, "val"),
                                      "text-train=text:" + os.path.join(text, "train.txt") + vec,
                                      "text-val=text:" + os.path.join(text, "val.txt") + vec], workers=None)
        addr = daemon.addr

        bf16 = train(trainer, addr, "--precision", "bf16")
        f32 = train(trainer, addr, "--precision", "f32")
        print("eval accuracy: bf16 %.4f, f32 %.4f" % (bf16["eval_accuracy"], f32["eval_accuracy"]))
        if bf16["precision"] != "bf16" or f32["precision"] != "f32":
            fail("precision not reported as asked")
        if bf16["eval_accuracy"] < THRESHOLD:
            fail("bf16 eval accuracy %.4f < %.2f" % (bf16["eval_accuracy"], THRESHOLD))
        if abs(bf16["eval_accuracy"] - f32["eval_accuracy"]) > SLACK:
            fail("bf16 and f32 differ by more than %.0f points" % (100 * SLACK))
        check_memory(bf16, "bf16", "adam")
        check_memory(f32, "f32", "adam")

        # Adafactor, two micro-batches per step, a budget: a shorter run,
        # where only the report is checked.
        global EPOCHS
        EPOCHS = 2
        af = train(trainer, addr, "--optimizer", "adafactor", "--accumulate", "2", "--hidden", "64,32",
                   "--memory-budget", "16M")
        check_memory(af, "bf16", "adafactor")
        if af["accumulate"] != 2 or af["hidden"] != [64, 32] or af["optimizer"] != "adafactor":
            fail("options not reported as given")
        if not (af["memory_budget"] == 16 << 20 and af["max_batch"] > af["baseline_max_batch"] > 0):
            fail("bf16 + adafactor should fit a larger batch than f32 + adam in the budget")

        # The text half: pooled word vectors, a bag-of-words MLP.
        EPOCHS = 10
        runs = {p: train(trainer, addr, "--precision", p, data=("text-train", "text-val"), shape=("--pool", "mean"))
                for p in ("bf16", "f32")}
        print("text eval accuracy: bf16 %.4f, f32 %.4f" % (runs["bf16"]["eval_accuracy"], runs["f32"]["eval_accuracy"]))
        if runs["bf16"]["inputs"] != 50:
            fail("the text model should see 50-d pooled vectors, saw %s" % runs["bf16"]["inputs"])
        if runs["bf16"]["eval_accuracy"] < THRESHOLD:
            fail("text: bf16 eval accuracy %.4f < %.2f" % (runs["bf16"]["eval_accuracy"], THRESHOLD))
        if abs(runs["bf16"]["eval_accuracy"] - runs["f32"]["eval_accuracy"]) > SLACK:
            fail("text: bf16 and f32 differ by more than %.0f points" % (100 * SLACK))

        r = subprocess.run([trainer, "--connect", addr, "--dataset", "train", "--epochs", "1",
                            "--precision", "f16"], capture_output=True, text=True, timeout=30)
        if r.returncode != 2 or "--precision f16" not in r.stderr:
            fail("a bad --precision should be a usage error: %d %s" % (r.returncode, r.stderr))
        r = subprocess.run([trainer, "--connect", addr, "--dataset", "nope", "--epochs", "1"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 1 or "nope" not in r.stderr:
            fail("an unknown dataset should fail with its name: %d %s" % (r.returncode, r.stderr))

        err = daemon.stop(20)
        daemon = None
        if err:
            fail(err)
        print("2 passed, 0 failed")
    finally:
        if daemon is not None:
            daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
