"""bfeed.torch: a bfeed stream as a torch.utils.data.IterableDataset.

    ds = bfeed.torch.Dataset("unix:/tmp/bfeed.sock", "demo", batch=64, seed=42)
    loader = bfeed.torch.DataLoader(ds, num_workers=4)   # bfeed batches
    for epoch in range(ds.epoch, epochs):
        ds.set_epoch(epoch)
        for b in loader:        # {"image": bf16, "label": int64, "index": int64, "position": int64}
            ...
            torch.save({"model": ..., "data": loader.state_dict()}, path)

Each iteration connects (in the process that iterates: each DataLoader worker,
with any start method, fork included) and serves one epoch. A rank reads
shard `rank` of `world_size` (from torch.distributed when it is initialised,
else from the RANK and WORLD_SIZE environment variables, or the rank= and
world_size= arguments): position p of the shard is position p * world_size +
rank of the epoch's order. Its DataLoader workers split the rank's batches in
turn (worker w of W takes batches w, w + W, ...: select="stride:W"), so the
loader yields the same batches in the same order with 0, 1 or 4 workers.

Training (the default): all ranks get floor(N / world_size) samples (up to
world_size - 1 are left out per epoch, different ones each shuffled epoch),
like DistributedSampler(drop_last=True) without padding.

Evaluation (mode="eval"): every sample exactly once across all ranks. By
default a rank takes its shard with keep_partial (its last batch may be
short) and then, when rank < N mod world_size, the one sample the shards
leave out, as a batch of one: ranks differ by at most one sample and one
batch. With eval_pad="mask" every rank gets the same number of batches of the
same size, the daemon padding the shards, and each batch has `valid` (bool
[B], False for padding): an all_reduce per batch cannot hang, and metrics
counted over `valid` count every sample exactly once.

Position and state: every batch carries "position", int64 [7] (Position
names them): the epoch, the batch's index in the rank's stream of it, the
rank, the world size, the stream's batches per epoch, the samples of the
epoch consumed before the stream began (start_sample) and the batch size.
state_dict() is {"epoch", "batch", "samples", "world_size", "start_sample"}:
the batches of the epoch this rank has received, and "samples", the
positions of the epoch's order all ranks together have consumed (every rank
at the same step, as synchronous data-parallel training is). After an
epoch's last batch it is {"epoch": e + 1, "batch": 0, "samples": 0, ...}.
The Dataset follows the batches it yields itself (num_workers=0);
bfeed.torch.DataLoader follows the batches the loop receives, so with
workers too the main process's loader.state_dict() (the Dataset's) is right;
with torch's own DataLoader call ds.state_dict(last_batch).

load_state_dict() continues there. On the same world size: the same
batches, byte for byte (start_batch). On another (elastic: a job saved on 8
ranks resumed on 6): the epoch's positions from "samples" on are divided
among the new ranks (start_sample), so across the two runs every sample of
the epoch is served at most once (all of them when the sizes divide), and
the next epochs are those of a fresh run on the new world size.
Evaluation streams are not meant to be resumed mid-way.

Passes (each iter() of the Dataset in the main process, or of a
bfeed.torch.DataLoader), as torch's StatefulDataLoader: a pass starts where
the state stands, except that a new pass after one that stopped mid-epoch
(a `break`) starts the next epoch, unless load_state_dict or set_epoch
said where to start since. An evaluation pass always starts at the
epoch's first batch. Where a pass starts lives in a small shared-memory
block that DataLoader workers read as they begin it, so
persistent_workers=True follows set_epoch and load_state_dict as fresh
workers do. (With torch's own DataLoader and workers the block is set by
set_epoch, load_state_dict and the Dataset's own iteration in the main
process; the rule for a pass after a break is bfeed.torch.DataLoader's.)

One job: every stream of a Dataset (each worker's, each epoch's) carries
its `job` id (random, or job=), so `bfeed stats` and `bfeed top` show the
loader as one line; bfeed.torch.DataLoader reports the loop's own wait
(loader.stats()) to the daemon for it, and the verdict is the loop's.

Recipes (README "Recipes"): transform= takes the torchvision transforms a
recipe holds (a Compose of RandomResizedCrop, RandomHorizontalFlip,
ColorJitter, AutoAugment / RandAugment / TrivialAugmentWide, ToTensor,
Normalize, RandomErasing; or Resize + CenterCrop; or a weights enum's
.transforms()) and compiles them into the stream's options, which the daemon
runs bit for bit as torchvision would; anything else is refused by name
when the Dataset is made. mixup_alpha= and cutmix_alpha= mix each batch as
torchvision's reference recipe does; its soft labels are "target", float32
[B, num_classes] (num_classes= widens it past the dataset's classes).
explain=True adds "params" (what each sample drew) and "mix".

Sizes known before iterating, in the main process: len(ds) (and so
len(loader)) is the batches a whole pass of this rank yields, ds.classes
the dataset's class names and ds.num_classes their number (asked of the
daemon once, over a stream that builds nothing). Options are checked when
the Dataset is made: a misspelt keyword fails there, naming the nearest
valid one.
"""
import collections
import difflib
import os
import random as _random
import time as _time

import torch
import torch.utils.data as _data

import bfeed
from bfeed._looptime import LoopTiming

_RESERVED = ("shard", "epoch", "start_batch", "epochs", "select", "start_sample")

#: The fields of a batch's "position" tensor, in order.
Position = collections.namedtuple(
    "Position", "epoch batch rank world_size batches_per_epoch start_sample batch_size")


def position(batch):
    """The Position of a batch this module yielded (its "position" tensor)."""
    return Position(*(int(x) for x in batch["position"].tolist()))


def _check_options(opts):
    """Stream options as Client.stream would take them, checked here (no
    connection): unknown names with the nearest valid one, then values."""
    names = sorted({n.replace("-", "_") for n in bfeed.option_names()} - set(_RESERVED))
    for k in opts:
        if k not in names:
            near = difflib.get_close_matches(k, names, n=1)
            raise TypeError("bfeed.torch.Dataset: unknown option %r%s; the options are %s" % (
                k, " (did you mean %r?)" % near[0] if near else "", ", ".join(names)))
    bfeed.check_options(**opts)


def _with_recipe(transform, opts):
    """opts with a torchvision transform's (bfeed._recipe): the two may
    say the same thing, never different things."""
    from bfeed._recipe import compile_transform
    recipe = compile_transform(transform)
    for k, v in recipe.items():
        if k in opts and opts[k] != v:
            raise ValueError("bfeed.torch.Dataset: %s=%r differs from the transform's %s=%r"
                             % (k, opts[k], k, v))
    return dict(recipe, **opts)


def _batch_dict(b):
    """A batch as the dict the Dataset yields: its tensors, with explain's
    JSON as "params" (one dict per sample) and "mix" (explain=True)."""
    out = b.torch()
    if "explain" in out:
        del out["explain"]
        out["params"], out["mix"] = b.params, b.mix
    return out


# The state fields a pass starts from, in the shared block (_Dataset._control).
_CONTROL = ("epoch", "batch", "samples", "start_sample", "saved_world")


class Dataset(_data.IterableDataset):
    """Batches of a bfeed stream as dicts of torch tensors; use it with
    bfeed.torch.DataLoader(ds) or DataLoader(ds, batch_size=None). Options
    are Client.stream's (eval_pad="mask" with mode="eval"); connect_opts, a
    dict of bfeed.connect's keywords (reconnect, reconnect_deadline, token,
    token_file, shm)."""

    def __init__(self, addr, dataset, *, rank=None, world_size=None, connect_opts=None, transform=None,
                 num_classes=None, **opts):
        if transform is not None:
            opts = _with_recipe(transform, opts)
        if num_classes is not None:  # the mixed target's width (mix_classes)
            opts["mix_classes"] = int(num_classes)
        bad = [k for k in _RESERVED if k in opts]
        if bad:
            raise TypeError("bfeed.torch.Dataset sets %s itself (use set_epoch/load_state_dict)" % ", ".join(bad))
        _check_options(opts)
        if opts.get("eval_pad") not in (None, "none") and opts.get("mode") != "eval":
            raise ValueError("eval_pad=%r pads evaluation: it needs mode=\"eval\"" % (opts["eval_pad"],))
        super().__init__()
        # One job to the daemon: every stream of this Dataset (each
        # worker's, each epoch's) carries it, so bfeed stats and top show
        # one line, judged by the loop's wait (bfeed.torch.DataLoader).
        opts.setdefault("job", _random.SystemRandom().getrandbits(63) + 1)
        self.job = opts["job"]
        self.addr, self.dataset, self.opts = addr, dataset, dict(opts)
        self.connect_opts = dict(connect_opts or {})
        self.rank, self.world_size = rank, world_size
        self.epoch, self.batch, self.samples, self.start_sample = 0, 0, 0, 0
        self._saved_world = None  # the world size of a loaded state
        self.batches_per_epoch = None  # known once a stream has opened
        self._told = False  # load_state_dict or set_epoch said where the next pass starts
        self._loaded = False  # ... and it was a loaded state (set_epoch keeps its position)
        self._begun = False  # a pass's start is decided and not yet taken by __iter__
        self._described = {}  # (rank, world) -> what the daemon said of the stream (_describe)
        # What workers start a pass from: shared memory, so that persistent
        # workers (made once, iterated every pass) see the main process's
        # set_epoch and load_state_dict. Pickled to spawned workers by handle.
        self._control = torch.zeros(len(_CONTROL), dtype=torch.int64).share_memory_()
        self._publish()

    def _is_eval(self):
        return self.opts.get("mode") == "eval"

    def _publish(self):
        """Where the next pass starts, into the block its workers read as
        they begin it (set_epoch, load_state_dict and a pass's start)."""
        world = -1 if self._saved_world is None else self._saved_world
        self._control.copy_(torch.tensor([self.epoch, self.batch, self.samples, self.start_sample, world]))

    def _adopt(self):
        """A worker's pass starts from the main process's state."""
        self.epoch, self.batch, self.samples, self.start_sample, world = (int(x) for x in self._control.tolist())
        self._saved_world = None if world < 0 else world

    def _begin_pass(self):
        """Decide where a pass of the main process starts (module docstring
        "Passes"), and publish it for the workers."""
        if self._is_eval():
            self.batch, self.samples, self.start_sample = 0, 0, 0
        elif not self._told and self.batch > 0:  # the last pass stopped mid-epoch
            self.epoch, self.batch, self.samples, self.start_sample = self.epoch + 1, 0, 0, 0
        self._told = self._loaded = False
        self._begun = True
        self._publish()

    def set_epoch(self, epoch):
        """Serve epoch `epoch` next, from its start (unless a state loaded
        and not yet iterated is in that epoch: it keeps its position), like
        DistributedSampler.set_epoch."""
        if not (self._loaded and int(epoch) == self.epoch):
            self.epoch, self.batch, self.samples, self.start_sample = int(epoch), 0, 0, 0
            self._loaded = False
        self._told = True
        self._publish()

    def state_dict(self, last_batch=None):
        """Where the loop stands: after the batches this Dataset (or
        bfeed.torch.DataLoader) saw, or after `last_batch`, the last batch
        the loop received (torch's own DataLoader with workers)."""
        if last_batch is not None:
            self._note(position(last_batch))
        world = self._saved_world if self._saved_world is not None else self._ranks()[1]
        return {"epoch": self.epoch, "batch": self.batch, "samples": self.samples, "world_size": world,
                "start_sample": self.start_sample}

    def load_state_dict(self, state):
        """Continue where `state` (a state_dict()) stands: the next pass starts there."""
        self.epoch, self.batch = int(state["epoch"]), int(state["batch"])
        self.start_sample = int(state.get("start_sample", 0))
        self.samples = int(state.get("samples", 0))
        # A state from before world_size was recorded is this world's.
        self._saved_world = int(state["world_size"]) if "world_size" in state else None
        self._told = self._loaded = True
        self._publish()

    def _note(self, p, publish=False):
        """The state after the loop received the batch at position p (an
        evaluation pass has no state within its epoch: each starts anew).
        Published only for a Dataset iterated in the main process (no
        workers run then): otherwise the block keeps where the pass began,
        which a worker that starts late must still read."""
        if self._is_eval():
            return
        self._saved_world = p.world_size
        if p.batch + 1 >= p.batches_per_epoch:
            self.epoch, self.batch, self.samples, self.start_sample = p.epoch + 1, 0, 0, 0
        else:
            self.epoch, self.batch, self.start_sample = p.epoch, p.batch + 1, p.start_sample
            self.samples = p.start_sample + (p.batch + 1) * p.batch_size * p.world_size
        if publish:
            self._publish()

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

    def _describe(self):
        """What the daemon says of this rank's stream, asked once per
        (rank, world) over streams that build nothing (select on-demand,
        no batch requested) on a connection of their own: batches of a
        whole pass, samples, class count and names."""
        rank, world = self._ranks()
        d = self._described.get((rank, world))
        if d is not None:
            return d
        opts = dict(self.opts, select="on-demand", epochs=1)
        del opts["job"]  # asking is not the job's reading
        eval_plain = self._is_eval() and opts.get("eval_pad", "none") == "none"
        if eval_plain:
            opts["keep_partial"] = True
        with bfeed.connect(self.addr, **dict(self.connect_opts, shm=False)) as c:
            with c.stream(self.dataset, **opts) as whole:
                n, classes, batches = whole.samples, whole.classes, whole.batches_per_epoch
                try:
                    names = whole.class_names()
                except bfeed.UnsupportedError:  # a daemon that predates class names
                    names = []
            if world > 1:
                try:
                    with c.stream(self.dataset, shard=(rank, world), **opts) as per:
                        batches = per.batches_per_epoch
                except (bfeed.DatasetError, bfeed.InvalidError):
                    batches = 0  # fewer samples than ranks
        if eval_plain and rank < n % world:
            batches += 1  # the sample the equal shards leave out, as a batch of one (_eval)
        d = {"batches": batches, "samples": n, "num_classes": classes,
             "classes": list(names) if names else [str(i) for i in range(classes)]}
        self._described[(rank, world)] = d
        return d

    def __len__(self):
        """Batches a whole pass of this rank yields (len(loader) too)."""
        return self._describe()["batches"]

    @property
    def num_classes(self):
        """The dataset's number of classes (0 when it has no labels), or
        num_classes= when it was given (the mixed target's width)."""
        return self.opts.get("mix_classes") or self._describe()["num_classes"]

    @property
    def classes(self):
        """The dataset's class names, in label order, as ImageFolder's
        classes (a folder's sub-folders; "0", "1", ... where labels are
        plain numbers)."""
        return self._describe()["classes"]

    def _resume_point(self, world):
        """(start_sample, start_batch) of this epoch on `world` ranks: a
        saved state's own on its world size, else its samples re-divided."""
        if self._saved_world is None or self._saved_world == world or self.samples == 0:
            return self.start_sample, self.batch
        return self.samples, 0

    def __iter__(self):
        rank, world = self._ranks()
        info = _data.get_worker_info()
        w, nw = (info.id, info.num_workers) if info else (0, 1)
        if info is not None:
            self._adopt()
        elif not self._begun:  # iterated directly (or by torch's DataLoader without workers)
            self._begin_pass()
        self._begun = False
        # Here, not in __init__: a client is its process's (after fork a
        # worker could not use the parent's; bfeed.ForkedError).
        client = bfeed.connect(self.addr, **self.connect_opts)
        try:
            if self.opts.get("mode") == "eval" and self.opts.get("eval_pad", "none") == "none":
                yield from self._eval(client, rank, world, w, nw)
            else:
                start_sample, k = self._resume_point(world)
                yield from self._read(client, rank, world, w, nw, start_sample, k, counting=info is None)
        finally:
            client.close()

    def _yield(self, b, rank, world, bpe, start_sample, counting):
        out = _batch_dict(b)
        p = Position(b.epoch, b.index, rank, world, bpe, start_sample, out["index"].shape[0])
        out["position"] = torch.tensor(p, dtype=torch.int64)
        if counting:  # num_workers=0: this object is the main process's
            self._note(p, publish=True)
        return out

    def _read(self, client, rank, world, w, nw, start_sample, k, counting):
        epoch = self.epoch
        extra = {"start_sample": start_sample} if start_sample else {}
        if nw > 1:
            extra["select"] = "stride:%d" % nw
        try:
            s = client.stream(self.dataset, shard=(rank, world), epoch=epoch, start_batch=k + w, epochs=1,
                              **extra, **self.opts)
        except bfeed.InvalidError:
            if k + w == 0:
                raise
            return  # this worker's batches were all before the resume point
        except bfeed.DatasetError:
            if not start_sample:
                raise
            return  # resumed so near the epoch's end that the new ranks get no whole batch
        with s:
            self.batches_per_epoch = s.batches_per_epoch
            for b in s:
                yield self._yield(b, rank, world, s.batches_per_epoch, start_sample, counting)

    def _eval(self, client, rank, world, w, nw):
        opts = dict(self.opts, keep_partial=True)
        if nw > 1:
            opts["select"] = "stride:%d" % nw
        try:
            s = client.stream(self.dataset, shard=(rank, world), epoch=self.epoch, start_batch=w, epochs=1,
                              **opts)
        except (bfeed.DatasetError, bfeed.InvalidError):
            s = None  # fewer samples than ranks, or than this worker's turn
        per_shard, bpe = 0, 0
        if s is not None:
            with s:
                per_shard, bpe = s.samples, s.batches_per_epoch
                for b in s:
                    yield self._yield(b, rank, world, bpe, 0, False)
        elif w > 0:
            return
        # The sample the equal-length shards leave out for this rank, if
        # any, from the worker whose turn batch bpe is: position
        # per_shard*world + rank of the unsharded epoch order, which is
        # batch per_shard*world + rank of a stream of batches of one.
        # (bucket off: with batches of one it would reorder other runs.)
        if bpe % nw != w:
            return
        one = dict(self.opts, keep_partial=True, batch=1, window=1, bucket=None)
        try:
            s = client.stream(self.dataset, epoch=self.epoch, start_batch=per_shard * world + rank, epochs=1, **one)
        except bfeed.InvalidError:
            return  # rank >= N mod world: no sample left for this rank
        with s:  # empty when that position is the end of the epoch
            b = next(iter(s), None)
            if b is not None:
                out = _batch_dict(b)
                p = Position(self.epoch, bpe, rank, world, bpe + 1, 0, 1)
                out["position"] = torch.tensor(p, dtype=torch.int64)
                yield out


class _Positioned:
    """A collated batch and the position of the bfeed batch it came from:
    what a user's collate_fn returns (a tuple, say) need not carry it. Goes
    through torch's worker queues and pin_memory as the batch would."""

    def __init__(self, pos, value):
        self.pos, self.value = pos, value

    def pin_memory(self):
        from torch.utils.data._utils.pin_memory import pin_memory
        return _Positioned(self.pos, pin_memory(self.value))


class _CollateKeepingPosition:
    """The user's collate_fn, with the batch's position kept beside its result."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, batch):
        return _Positioned(position(batch), self.fn(batch))


class DataLoader(_data.DataLoader):
    """torch.utils.data.DataLoader for a bfeed.torch.Dataset (batch_size
    None: bfeed makes the batches) that follows the batches the loop
    receives, so that state_dict() is right with any num_workers (also
    persistent ones), mid-epoch and at an epoch's end:
    torch.save({"data": loader.state_dict()}, path), then
    loader.load_state_dict(saved["data"]). A collate_fn gets each batch's
    dict and may return anything (an (x, y) tuple): the position travels
    beside it. len(loader) is the batches of a pass."""

    def __init__(self, dataset, **kwargs):
        if not isinstance(dataset, Dataset):
            raise TypeError("bfeed.torch.DataLoader takes a bfeed.torch.Dataset")
        if kwargs.setdefault("batch_size", None) is not None:
            raise ValueError("bfeed.torch.DataLoader: the batch size is the stream's (batch=); leave batch_size None")
        if kwargs.get("collate_fn") is not None:
            kwargs["collate_fn"] = _CollateKeepingPosition(kwargs["collate_fn"])
        super().__init__(dataset, **kwargs)
        self._timing = LoopTiming()

    def __iter__(self):
        self.dataset._begin_pass()  # before the workers (new or persistent) start theirs
        self._timing.start_pass()
        it = super().__iter__()
        try:
            while True:
                asked = _time.perf_counter()
                try:
                    b = next(it)
                except StopIteration:
                    return
                self._timing.took(asked, _time.perf_counter())
                if isinstance(b, _Positioned):
                    self.dataset._note(b.pos)
                    b = b.value
                else:
                    self.dataset._note(position(b))
                self._timing.report(self.dataset)
                yield b
        finally:  # the pass's end, or a break: the daemon has the loop's last figures
            self._timing.report(self.dataset, force=True)
            self._timing.close()

    def stats(self):
        """Is the loop input-bound? Measured here, in the main process, where
        the training step runs (with workers, each worker's stream only sees
        its own waits): the time the loop waited for batches and the time
        between them, over every batch this loader yielded (the first of each
        iteration's wait apart: the workers starting; the very first is
        first_wait_s). wait_fraction is wait_s / (wait_s + step_s), as
        libbfeed's; the quantiles are within 1/16, as libbfeed's. The daemon
        has the same figures, for the Dataset's job (bfeed stats, bfeed top)."""
        return self._timing.stats()

    def state_dict(self):
        return self.dataset.state_dict()

    def load_state_dict(self, state):
        self.dataset.load_state_dict(state)
