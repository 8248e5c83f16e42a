"""The training loop as PyTorch users hold it (issue 29): persistent
workers follow set_epoch and load_state_dict, a new pass after a `break`
starts the next epoch (torch's StatefulDataLoader rule) unless a state was
loaded, an evaluation pass always covers the whole epoch, len() and the
class names are known before iterating, a collate_fn may return a tuple,
and a misspelt keyword fails when the Dataset is made. Judged by facts
that do not come from bfeed's state code: which dataset indices arrive
(compared with fresh single-process runs), how often, and torchvision's
own ImageFolder for the class names."""
import os

import pytest
import torch
import torchvision

import bfeed
import bfeed.torch

DEMO = 80  # conftest: make-demo --train 10 (8 classes x 10)
OPTS = dict(batch=4, size=16, seed=3)  # 20 batches an epoch


def _loader(ds, workers, **kw):
    if workers:
        kw.setdefault("timeout", 60)  # torch 1.13 allows a timeout with workers only
    return bfeed.torch.DataLoader(ds, num_workers=workers, **kw)


def _indices(batches):
    return [i for b in batches for i in b["index"].tolist()]


def _epoch(addr, epoch, start=0, **opts):
    """The indices of an epoch from batch `start` on, from a fresh
    Dataset in this process: the reference every other run must equal."""
    ds = bfeed.torch.Dataset(addr, "demo", **dict(OPTS, **opts))
    ds.load_state_dict({"epoch": epoch, "batch": start})
    return _indices(list(ds))


def _take(loader, n=None):
    out = []
    for b in loader:
        out.append(b)
        if n is not None and len(out) == n:
            break
    return _indices(out)


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_epochs_with_set_epoch_equal_fresh_runs(daemon, workers, persistent):
    """Two epochs by set_epoch, in distinct orders, each equal to the same
    epoch read alone: persistent workers no longer repeat epoch 0."""
    ds = bfeed.torch.Dataset(daemon.addr, "demo", **OPTS)
    loader = _loader(ds, workers, persistent_workers=persistent)
    got = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        got.append(_take(loader))
    want = [_epoch(daemon.addr, e) for e in range(2)]
    assert want[0] != want[1] and sorted(want[0]) == sorted(want[1]) == list(range(DEMO))
    assert got == want
    assert loader.state_dict()["epoch"] == 2


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_a_new_pass_after_a_break_starts_the_next_epoch(daemon, workers, persistent):
    """Break after 4 batches: the state says batch 4; a new iter() starts
    epoch 1 at batch 0 (as torch's StatefulDataLoader); a loaded state
    resumes where it says, also with persistent workers."""
    ds = bfeed.torch.Dataset(daemon.addr, "demo", **OPTS)
    loader = _loader(ds, workers, persistent_workers=persistent)
    first = _take(loader, 4)
    assert first == _epoch(daemon.addr, 0)[:16]
    saved = loader.state_dict()
    assert saved["epoch"] == 0 and saved["batch"] == 4
    second = _take(loader, 2)
    assert second == _epoch(daemon.addr, 1)[:8]
    loader.load_state_dict(saved)
    assert _take(loader) == _epoch(daemon.addr, 0, start=4)
    assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["batch"] == 0
    # A whole pass leaves the state at the next epoch's start: no skip.
    assert _take(loader) == _epoch(daemon.addr, 1)


def test_set_epoch_keeps_a_loaded_state_and_restarts_otherwise(daemon):
    """set_epoch(e) after load_state_dict in epoch e keeps its batch (the
    README's resume loop); set_epoch(e) after a partial pass of e restarts
    e from its first batch, as DistributedSampler.set_epoch would."""
    ds = bfeed.torch.Dataset(daemon.addr, "demo", **OPTS)
    ds.load_state_dict({"epoch": 1, "batch": 5})
    ds.set_epoch(1)
    assert _take(ds, 2) == _epoch(daemon.addr, 1, start=5)[:8]
    ds.set_epoch(1)
    assert _take(ds, 1) == _epoch(daemon.addr, 1)[:4]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("pad", ["mask", "none"])
def test_eval_pass_after_a_partial_one_counts_every_sample(daemon, workers, pad):
    """Two batches as a sanity check, then a full validation pass: every
    sample exactly once (issue 29: 168 of 200 with the mask before)."""
    ds = bfeed.torch.Dataset(daemon.addr, "demo", batch=7, size=16, mode="eval", eval_pad=pad)
    loader = _loader(ds, workers)
    assert len(_take(loader, 2)) == 14
    seen = []
    for b in loader:
        keep = b["valid"] if pad == "mask" else torch.ones(len(b["index"]), dtype=torch.bool)
        seen += b["index"][keep].tolist()
    assert sorted(seen) == list(range(DEMO))
    again = [i for b in loader for i in b["index"].tolist()]
    assert len(again) >= DEMO


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("world,opts", [
    (1, dict(batch=4)), (3, dict(batch=4)), (3, dict(batch=5, mode="eval")),
    (3, dict(batch=4, mode="eval", eval_pad="mask")), (1, dict(batch=7, mode="eval"))])
def test_len_is_the_batches_a_pass_yields(daemon, workers, world, opts):
    """len(ds) and len(loader), asked before iterating, equal the batches
    every rank's pass then yields (npy: 23 rows, a prime)."""
    for rank in range(world):
        ds = bfeed.torch.Dataset(daemon.addr, "npy", rank=rank, world_size=world, size=16, **opts)
        loader = _loader(ds, workers)
        n = len(loader)
        assert n == len(ds)
        assert n == sum(1 for _ in loader)


def test_classes_before_iterating(daemon, data):
    """ds.classes and ds.num_classes from the daemon, before any batch:
    torchvision's ImageFolder names the same classes in the same order."""
    root = next(d.split("=", 1)[1] for d in data["datasets"] if d.startswith("fx="))
    folder = torchvision.datasets.ImageFolder(root)
    ds = bfeed.torch.Dataset(daemon.addr, "fx", batch=1, size=16)
    assert ds.classes == folder.classes
    assert ds.num_classes == len(folder.classes)
    demo = bfeed.torch.Dataset(daemon.addr, "demo", **OPTS)
    assert demo.num_classes == 8 and len(demo.classes) == 8
    npy = bfeed.torch.Dataset(daemon.addr, "npy", batch=4)
    assert npy.num_classes == len(npy.classes)


@pytest.mark.parametrize("workers", [0, 2])
def test_collate_fn_returning_a_tuple(daemon, workers):
    """A collate_fn gets each batch's dict and returns (x, y): the loop
    receives the tuples, and the state still follows them."""
    ds = bfeed.torch.Dataset(daemon.addr, "demo", **OPTS)
    loader = _loader(ds, workers, collate_fn=lambda b: (b["image"].float(), b["label"], b["index"]))
    got = []
    for x, y, i in loader:
        assert x.dtype == torch.float32 and x.shape == (4, 3, 16, 16) and y.shape == (4,)
        got += i.tolist()
        if len(got) == 12:
            break
    assert got == _epoch(daemon.addr, 0)[:12]
    assert loader.state_dict()["batch"] == 3


def test_misspelt_keyword_fails_at_construction():
    """No daemon is needed to be told: the keyword, the nearest valid one."""
    with pytest.raises(TypeError, match=r"'sise'.*did you mean 'size'"):
        bfeed.torch.Dataset("unix:/nonexistent.sock", "demo", sise=64)
    with pytest.raises(bfeed.InvalidError, match="size"):
        bfeed.torch.Dataset("unix:/nonexistent.sock", "demo", size=3)
    with pytest.raises(bfeed.InvalidError, match="mode"):
        bfeed.torch.Dataset("unix:/nonexistent.sock", "demo", mode="evl")
    with pytest.raises(bfeed.InvalidError, match=r"did you mean 'size'"):
        bfeed.check_options(sise=64)


def test_stream_keyword_misspelt_names_the_nearest(daemon):
    with bfeed.connect(daemon.addr) as c:
        with pytest.raises(bfeed.InvalidError, match=r"'keep_partal'.*did you mean 'keep-partial'"):
            c.stream("demo", keep_partal=True)


def _readme_loop():
    """The README's training-loop block, as written."""
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")
    text = open(readme).read()
    at = text.index("### In a training loop (Python)")
    start = text.index("```python\n", at) + len("```python\n")
    return text[start:text.index("```", start)]


def test_readme_loop_runs(daemon, tmp_path):
    """The README's loop runs as written, on the test's daemon and a small
    size (the address, sizes and checkpoint path replaced, nothing else):
    persistent workers, a bf16 batch into a float32 model under autocast,
    the class count from the daemon, a checkpoint of model and data."""
    code = _readme_loop()
    for old, new in (('"unix:/tmp/bfeed.sock"', repr(daemon.addr)), ("size=224", "size=32"),
                     ("batch=64", "batch=8"), ('"ckpt.pt"', repr(str(tmp_path / "ckpt.pt")))):
        assert old in code, "the README's loop no longer has %s" % old
        code = code.replace(old, new)
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", code + "\nprint('steps', loader.state_dict())\n"], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    state = torch.load(str(tmp_path / "ckpt.pt"))["data"]
    assert state["epoch"] == 2 and state["batch"] == 0  # two whole epochs, the last checkpoint after them


@pytest.mark.parametrize("step_s", [0.0, 0.02])
def test_job_verdict_with_workers_agrees_with_the_loader(daemon, step_s):
    """A loader with 2 workers over two epochs is one job to the daemon:
    every worker's stream of both epochs in it, and its wait fraction and
    verdict those of loader.stats(), measured in this process."""
    import json
    import subprocess
    import time
    ds = bfeed.torch.Dataset(daemon.addr, "demo", **OPTS)
    loader = _loader(ds, 2)
    for epoch in range(2):
        ds.set_epoch(epoch)
        for _ in loader:
            time.sleep(step_s)  # the training step
    st = loader.stats()
    assert st["batches"] == 2 * 19  # each pass's first apart
    out = subprocess.run([os.environ["BFEED"], "stats", "--connect", daemon.addr, "--json"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    key = "%016x:demo" % ds.job
    job = report["jobs"][key]
    assert job["loop"] == 1 and job["client_batches"] == st["batches"]
    assert job["streams_total"] == 4 + 2  # 2 workers x 2 epochs, and each pass's anchor
    assert abs(job["wait_fraction_ppm"] / 1e6 - st["wait_fraction"]) <= 0.1
    verdict = report["verdicts"][key]
    if st["wait_fraction"] < 0.1:
        assert verdict.startswith("trainer-bound"), (verdict, st)
    else:
        assert verdict.startswith("input-bound %d%%" % round(st["wait_fraction"] * 100)), (verdict, st)
    assert not any(str(ds.job) in k for k in report.get("streams", {})), "a job's streams are folded into it"


def test_example_train_torch_kill_and_resume(daemon, tmp_path):
    """client/python/examples/train_torch.py as its docstring runs it: the
    class count from the daemon, killed (SIGKILL) after 3 steps and run
    again, it resumes at the checkpoint's batch and ends the same epochs."""
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "..", "client", "python", "examples",
                           "train_torch.py")
    argv = [sys.executable, example, "--connect", daemon.addr, "--dataset", "demo", "--ckpt",
            str(tmp_path / "ckpt.pt"), "--batch", "16", "--size", "32", "--ckpt-every", "2", "--epochs", "2"]
    killed = subprocess.run(argv + ["--kill-after", "3"], capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resumed from %s: step 2, epoch 0, batch 2" % (tmp_path / "ckpt.pt") in again.stdout, again.stdout
    assert "done: 10 steps" in again.stdout  # 80 samples / 16 = 5 steps an epoch
