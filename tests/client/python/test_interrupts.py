"""Ctrl-C loses no batch (README): a KeyboardInterrupt that lands anywhere in
next() -- while it waits, while it takes the batch, or as it returns and
before the caller has stored what it returned -- leaves the batch to the
following next(). The batches of an interrupted run are compared, position
and bytes, with an uninterrupted run of the same stream: all there, in
order, exactly once. Over the socket, through shared memory (the default on
a unix: address) and fanned out over two daemons.

The interrupts come as real SIGINTs from another thread at random small
intervals. The handler raises KeyboardInterrupt only while the loop is
inside next() (`armed`): the test's own bookkeeping around next() is then
not interrupted, which plain Python code cannot protect itself from and is
not what is tested; inside next() the handler raises exactly where
signal.default_int_handler would."""
import os
import random
import signal
import sys
import threading

import pytest

import bfeed

OPTS = dict(batch=2, size=16, seed=5, window=1)  # demo: 80 samples, 40 batches an epoch
MIN_INTERRUPTS = 20  # a run that saw fewer tested too little


def blobs(b):
    return (b.epoch, b.index) + tuple(bytes(memoryview(b[name])) for name in ("image", "label", "index"))


def reference(addr, epochs):
    with bfeed.connect(addr) as c, c.stream("demo", epochs=epochs, **OPTS) as s:
        return [blobs(b) for b in s]


class Interrupter:
    """SIGINT to this process every 0 to 1.5 ms from a thread, counted when
    the handler raises; signals that come while disarmed are let go."""

    def __init__(self):
        self.armed = False
        self.raised = 0
        self.stop = threading.Event()
        self.old = None

    def handler(self, signum, frame):
        if self.armed:
            self.raised += 1
            raise KeyboardInterrupt

    def send(self):
        rng = random.Random(1)
        while not self.stop.wait(rng.uniform(0, 0.0015)):
            os.kill(os.getpid(), signal.SIGINT)

    def __enter__(self):
        self.old = signal.signal(signal.SIGINT, self.handler)
        self.th = threading.Thread(target=self.send, daemon=True)
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join()
        self.armed = False
        signal.signal(signal.SIGINT, self.old)


def interrupted_run(s, irq):
    """Every batch of s through next(), which is interrupted again and again."""
    got = []
    while True:
        irq.armed = True
        try:
            b = next(s)
        except KeyboardInterrupt:
            irq.armed = False  # the handler raised: no more until the next try
            continue
        except StopIteration:
            irq.armed = False
            return got
        irq.armed = False  # nothing between the store of b and here checks for signals
        got.append(blobs(b))
        del b  # its slot goes back to the ring (shared memory)


@pytest.mark.parametrize("way", ["socket", "shm", "fanout"])
def test_sigint_flood_loses_no_batch(daemon, request, way):
    addr = daemon.addr
    if way == "fanout":
        addr = ",".join(d.addr for d in request.getfixturevalue("two_daemons"))
    epochs = 4
    ref = reference(daemon.addr, epochs)
    assert len(ref) == 40 * epochs
    with bfeed.connect(addr, shm=way == "shm") as c, c.stream("demo", epochs=epochs, **OPTS) as s:
        with Interrupter() as irq:
            got = interrupted_run(s, irq)
        if way == "shm":
            assert s.stats()["shm_batches"] > 0
    assert irq.raised >= MIN_INTERRUPTS, "only %d interrupts: the run tested too little" % irq.raised
    assert [g[:2] for g in got] == [r[:2] for r in ref], "%d interrupts" % irq.raised  # none lost, none twice
    assert got == ref  # and the same bytes


def test_interrupt_as_next_returns(daemon):
    """The narrowest place: the KeyboardInterrupt is raised after next() has
    returned the batch and before the caller's code has it (the interpreter
    then drops the value it was handed). A profile hook raises it exactly
    there, at next()'s c_return, every other call; the batch comes with the
    following call."""
    ref = reference(daemon.addr, 1)
    got, raised = [], 0

    def hook(frame, event, arg):
        if event == "c_return" and arg is next:
            raise KeyboardInterrupt

    with bfeed.connect(daemon.addr) as c, c.stream("demo", epochs=1, **OPTS) as s:
        for k in range(len(ref) * 2 + 1):
            sys.setprofile(hook if k % 2 == 0 else None)  # a hook that raised is unset by Python itself
            try:
                b = next(s)
            except KeyboardInterrupt:
                raised += 1
                continue
            except StopIteration:
                break
            finally:
                sys.setprofile(None)
            got.append(blobs(b))
    assert raised == len(ref)  # every other call (the end of the stream is no return)
    assert got == ref


def test_interrupt_after_the_caller_has_it(daemon):
    """The other side of exactly once: a batch its caller has stored is
    not given again, however the interrupt then unwinds -- a loop body, or
    a frame left with the batch in a local it never used."""
    ref = [r[:2] for r in reference(daemon.addr, 1)]

    def take_and_raise(s, k, seen):
        b = next(s)
        if k % 3:  # some are never looked at
            seen.append((b.epoch, b.index))
        raise KeyboardInterrupt

    got, seen = [], []
    with bfeed.connect(daemon.addr) as c, c.stream("demo", epochs=1, **OPTS) as s:
        while len(got) < 10:
            try:
                for b in s:
                    got.append((b.epoch, b.index))
                    raise KeyboardInterrupt
            except KeyboardInterrupt:
                pass
        for k in range(10):
            try:
                take_and_raise(s, k, seen)
            except KeyboardInterrupt:
                pass
        got += [(b.epoch, b.index) for b in s]
    assert got == ref[:10] + ref[20:]  # the ten take_and_raise took are not given again
    assert seen == [r for k, r in enumerate(ref[10:20]) if k % 3]
