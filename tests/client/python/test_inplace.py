"""In-place ops on the tensors bfeed hands out (issue 29): torch and NumPy
take them as writable, over shared memory as over the socket. Each case
runs in a process of its own (inplace_child.py says what it checks), so a
crash fails the case with its signal instead of ending the test run:

  - every tensor of every batch (image, label, index, npy features, text
    tokens and lengths) written in place equals the same op applied to a
    copy taken before;
  - a write into a batch, held or not, never shows in a later batch of the
    same ring slot: those equal the socket's batches byte for byte;
  - bfeed.torch.DataLoader with 0 and 2 workers whose Dataset writes into
    its batches in the worker yields the op of the socket's batches;
  - two clients' identical streams read one ring, copying nothing: one's
    writes never reach the other, and a batch held past its stream's close
    keeps its bytes.
"""
import os
import signal
import subprocess
import sys

import pytest

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inplace_child.py")
DATASETS = ["fx", "demo", "npy", "txt"]


def run_child(daemon, *args):
    p = subprocess.run([sys.executable, CHILD, daemon.addr] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=240)
    if p.returncode < 0:
        why = "killed by %s" % signal.Signals(-p.returncode).name
    else:
        why = "exit status %d" % p.returncode
    assert p.returncode == 0, "inplace_child.py %s: %s\n%s%s" % (" ".join(map(str, args)), why, p.stdout,
                                                                  p.stderr[-3000:])
    return p.stdout


@pytest.mark.parametrize("shm", [1, 0])
def test_inplace_ops_on_every_tensor(daemon, shm):
    out = run_child(daemon, "ops", ",".join(DATASETS), shm)
    assert out.count("batches") == len(DATASETS), out


@pytest.mark.parametrize("shm", [1, 0])
def test_writes_never_reach_later_batches(daemon, shm):
    out = run_child(daemon, "isolation", ",".join(DATASETS), shm)
    assert out.count("byte-identical") == len(DATASETS), out


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("shm", [1, 0])
def test_loader_writing_in_its_workers(daemon, shm, workers):
    out = run_child(daemon, "loader", "demo,npy,txt", shm, workers)
    assert out.count("batches") == 3, out


def test_identical_streams_share_one_ring(daemon):
    out = run_child(daemon, "shared", "demo,npy", 1)
    assert out.count("read by both clients from one ring") == 2, out
