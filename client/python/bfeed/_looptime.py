"""What a training loop waited for its batches, measured where the step
runs (bfeed.torch.DataLoader's main process), and handed to the daemon as
the loop of the loader's job (Stream.report_timing on an anchor stream that
builds nothing), so that `bfeed stats` and `bfeed top` judge the job by the
wait loader.stats() shows, not by its workers' streams.

Waits go into the histogram libbfeed keeps (api_timing.c): bins of 1 us
below 16 us, then 8 per power of two (12.5% wide), so the quantiles are
within 1/16 of the truth, in constant memory whatever the run's length.
"""
import time as _time

import bfeed

_BINS = 256
_REPORT_S = 0.25  # as libbfeed's TIMING: at most this often, and at each pass's end


def _bin(us):
    if us < 16:
        return int(us)
    e = us.bit_length() - 1  # 4..
    b = 16 + (e - 4) * 8 + ((us >> (e - 3)) & 7)
    return min(b, _BINS - 1)


def _mid(b):
    """The middle of bin b, in microseconds."""
    if b < 16:
        return b
    e, sub = (b - 16) // 8 + 4, (b - 16) % 8
    return (1 << e) + (sub << (e - 3)) + (1 << (e - 3)) // 2


class LoopTiming:
    """The waits and steps of every batch a loader yielded (the first of
    each pass apart: the workers starting, kept as first_wait_s once)."""

    def __init__(self):
        self.batches, self.wait_s, self.step_s, self.first_wait_s = 0, 0.0, 0.0, None
        self.hist = [0] * _BINS
        self._returned = None
        self._anchor = None  # (client, stream) of the job's loop, while a pass runs
        self._reported = 0.0

    def start_pass(self):
        self._returned = None

    def took(self, asked, got):
        """A batch asked for at `asked` came at `got` (perf_counter)."""
        if self._returned is None:
            if self.first_wait_s is None:
                self.first_wait_s = got - asked
        else:
            self.step_s += asked - self._returned
            self.wait_s += got - asked
            self.batches += 1
            self.hist[_bin(int((got - asked) * 1e6))] += 1
        self._returned = _time.perf_counter()

    def _quantile(self, q):
        if not self.batches:
            return 0.0
        want, seen = max(1, int(q * self.batches + 0.999999)), 0
        for b, n in enumerate(self.hist):
            seen += n
            if seen >= want:
                return _mid(b) * 1e-6
        return _mid(_BINS - 1) * 1e-6

    def stats(self):
        total = self.wait_s + self.step_s
        return {"batches": self.batches, "wait_s": self.wait_s, "step_s": self.step_s,
                "wait_fraction": self.wait_s / total if total > 0 else 0.0,
                "batches_per_s": self.batches / total if total > 0 else 0.0,
                "wait_p50_s": self._quantile(0.50), "wait_p99_s": self._quantile(0.99),
                "first_wait_s": self.first_wait_s or 0.0}

    def report(self, ds, force=False):
        """The totals to the daemon as the loop of ds's job: at most every
        _REPORT_S, or now (force). The anchor is a stream of the job that
        builds nothing (on-demand, nothing requested), on a connection of
        its own without shared memory; a failure to report never stops the
        loop (the daemon is the workers' to reach)."""
        now = _time.perf_counter()
        if not force and now - self._reported < _REPORT_S:
            return
        self._reported = now
        try:
            if self._anchor is None:
                c = bfeed.connect(ds.addr, **dict(ds.connect_opts, shm=False))
                try:
                    s = c.stream(ds.dataset, job=ds.job, select="on-demand", batch=1, window=1, epochs=1)
                except bfeed.Error:
                    c.close()
                    raise
                self._anchor = (c, s)
            st = self.stats()
            self._anchor[1].report_timing(st["batches"], st["wait_s"], st["step_s"], st["wait_p50_s"],
                                          st["wait_p99_s"], first_wait_s=st["first_wait_s"])
        except bfeed.Error:
            self.close()

    def close(self):
        if self._anchor is not None:
            c, _ = self._anchor
            self._anchor = None
            c.close()
