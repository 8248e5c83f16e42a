"""bfeed.torch: a bfeed stream as a torch.utils.data.IterableDataset.

    ds = bfeed.torch.Dataset("unix:/tmp/bfeed.sock", "demo", batch=64, seed=42)
    loader = torch.utils.data.DataLoader(ds, batch_size=None)   # bfeed batches
    for epoch in range(ds.epoch, epochs):
        ds.set_epoch(epoch)
        for b in loader:                      # {"image": bf16, "label": int64, "index": int64}
            ...
            torch.save({"model": ..., "data": ds.state_dict()}, path)

Each iteration connects (in the process that iterates: each DataLoader worker,
with any start method, fork included) and serves one epoch (`epoch`, from
`start_batch`), read in shards:
reader r of n = rank * num_workers + worker, n = world_size * num_workers,
with the rank and world size from torch.distributed when it is initialised,
else from the RANK and WORLD_SIZE environment variables (or the rank= and
world_size= arguments).

Training (the default): the daemon's shards, `--shard r/n`: all readers get
floor(N/n) samples (up to n-1 are left out per epoch, different ones each
shuffled epoch), like DistributedSampler(drop_last=True) without padding.

Evaluation (mode="eval"): every sample exactly once across all readers. A
reader takes its shard with keep_partial (so its last batch may be short) and
then, when r < N mod n, the one sample p = floor(N/n)*n + r that the shards
leave out, as a batch of one. DistributedSampler instead pads the last
shards with repeated samples so that every rank has the same length: here
ranks differ by at most one sample and nothing is counted twice, so the
readers' batch counts may differ (do not all_reduce per batch in eval).

Resuming: state_dict() is {"epoch", "batch"}: the epoch and the number of
batches of it this rank has consumed; after an epoch's last batch it is
{"epoch": e + 1, "batch": 0}. load_state_dict() continues exactly there: the
same batches, in the same order, byte for byte. With num_workers=0 the Dataset
counts by itself. With workers the counting happens in the worker processes,
so the main process's state_dict() only follows set_epoch/load_state_dict:
count the batches your loop consumed (k) and save {"epoch": e, "batch": k}.
Loading that gives worker w shard (k + w) mod W from batch (k + w) div W, which
continues the in-order DataLoader's round-robin exactly in training (equal
shards); a worker whose shard is already done yields nothing. Evaluation
streams are not meant to be resumed mid-way.
"""
import os

import torch.utils.data as _data

import bfeed

_RESERVED = ("shard", "epoch", "start_batch", "epochs")


class Dataset(_data.IterableDataset):
    """Batches of a bfeed stream as dicts of torch tensors; use it with
    DataLoader(ds, batch_size=None). Options are Client.stream's;
    connect_opts, a dict of bfeed.connect's keywords (reconnect,
    reconnect_deadline, token, token_file, shm)."""

    def __init__(self, addr, dataset, *, rank=None, world_size=None, connect_opts=None, **opts):
        bad = [k for k in _RESERVED if k in opts]
        if bad:
            raise TypeError("bfeed.torch.Dataset sets %s itself (use set_epoch/load_state_dict)" % ", ".join(bad))
        super().__init__()
        self.addr, self.dataset, self.opts = addr, dataset, dict(opts)
        self.connect_opts = dict(connect_opts or {})
        self.rank, self.world_size = rank, world_size
        self.epoch, self.batch = 0, 0
        self.batches_per_epoch = None  # known once a stream has opened

    def set_epoch(self, epoch):
        """Serve epoch `epoch` next (from batch 0 unless it is the epoch a
        loaded state is in), like DistributedSampler.set_epoch."""
        if int(epoch) != self.epoch:
            self.epoch, self.batch = int(epoch), 0

    def state_dict(self):
        return {"epoch": self.epoch, "batch": self.batch}

    def load_state_dict(self, state):
        self.epoch, self.batch = int(state["epoch"]), int(state["batch"])

    def _ranks(self):
        rank, world = self.rank, self.world_size
        if rank is None or world is None:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                r, w = dist.get_rank(), dist.get_world_size()
            else:
                r, w = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
            rank = r if rank is None else rank
            world = w if world is None else world
        if not 0 <= rank < world:
            raise ValueError("rank %d is not in 0..world_size-1 (world_size %d)" % (rank, world))
        return rank, world

    def __iter__(self):
        rank, world = self._ranks()
        info = _data.get_worker_info()
        w, nw = (info.id, info.num_workers) if info else (0, 1)
        # Here, not in __init__: a client is its process's (after fork a
        # worker could not use the parent's; bfeed.ForkedError).
        client = bfeed.connect(self.addr, **self.connect_opts)
        try:
            if self.opts.get("mode") == "eval":
                yield from self._eval(client, rank * nw + w, world * nw)
            else:
                k = self.batch
                shard = rank * nw + (k + w) % nw
                yield from self._train(client, shard, world * nw, (k + w) // nw, counting=info is None)
        finally:
            client.close()

    def _train(self, client, shard, nshards, start, counting):
        epoch = self.epoch
        try:
            s = client.stream(self.dataset, shard=(shard, nshards), epoch=epoch, start_batch=start, epochs=1,
                              **self.opts)
        except bfeed.InvalidError:
            if start == 0:
                raise
            return  # this worker's shard was finished before the resume point
        with s:
            self.batches_per_epoch = s.batches_per_epoch
            for b in s:
                if counting:  # num_workers=0: this object is the main process's
                    self.batch += 1
                    if self.batch >= s.batches_per_epoch:
                        self.epoch, self.batch = epoch + 1, 0
                yield b.torch()

    def _eval(self, client, r, n):
        opts = dict(self.opts, keep_partial=True)
        try:
            s = client.stream(self.dataset, shard=(r, n), epoch=self.epoch, epochs=1, **opts)
        except bfeed.DatasetError:
            s = None  # fewer samples than readers: only the left-out ones below
        per_shard = 0
        if s is not None:
            with s:
                per_shard = s.samples
                for b in s:
                    yield b.torch()
        # The sample the equal-length shards leave out for this reader, if
        # any: position per_shard*n + r of the unsharded epoch order, which
        # is batch per_shard*n + r of a stream of batches of one.
        # (bucket off: with batches of one it would reorder other runs.)
        one = dict(opts, batch=1, window=1, bucket=None)
        try:
            s = client.stream(self.dataset, epoch=self.epoch, start_batch=per_shard * n + r, epochs=1, **one)
        except bfeed.InvalidError:
            return  # r >= N mod n: no sample left for this reader
        with s:  # empty when that position is the end of the epoch
            b = next(iter(s), None)
            if b is not None:
                yield b.torch()
