"""Conversions of bfeed.Tensor to torch and NumPy, imported on first use so
that `import bfeed` needs neither (called by Batch.torch and Batch.numpy)."""

_bf16 = []


def torch(t):
    """A torch tensor on the batch's memory: bf16 -> torch.bfloat16 through
    DLPack (no copy). int32 tensors (label, length) become int64, as PyTorch
    losses and indexing expect: a copy of B numbers, never of image data.
    `valid` (eval_pad="mask", u8 0/1) becomes torch.bool, a mask to index with."""
    import torch as _torch
    x = _torch.from_dlpack(t)
    if x.dtype == _torch.int32:
        return x.to(_torch.int64)
    return x.to(_torch.bool) if t.name == "valid" else x


def numpy(t):
    """A NumPy array on the batch's memory (the buffer protocol, no copy).
    NumPy has no bfloat16: bf16 is ml_dtypes.bfloat16 when ml_dtypes is
    installed, else uint16 bit patterns (the float is bits << 16)."""
    import numpy as _np
    a = _np.asarray(t)
    if t.dtype == "bf16":
        if not _bf16:
            try:
                import ml_dtypes
                _bf16.append(ml_dtypes.bfloat16)
            except ImportError:
                _bf16.append(None)
        if _bf16[0] is not None:
            a = a.view(_bf16[0])
    return a


def explain(t):
    """The `explain` tensor (a stream with explain=True): its JSON as a
    dict, {"epoch", "index", "mix", "samples": [one dict per sample]}.
    Batch.params is its samples, Batch.mix its mix (README "Recipes")."""
    import json
    return json.loads(bytes(memoryview(t)))
