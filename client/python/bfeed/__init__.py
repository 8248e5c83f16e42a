"""bfeed: bf16 batches from bfeedd in Python training loops, without a copy.

    import bfeed
    with bfeed.connect("unix:/tmp/bfeed.sock") as c, c.stream("demo", batch=64, seed=42) as s:
        for b in s:
            x, y = b.torch("image"), b.torch("label")    # torch.bfloat16, torch.int64

A Batch's tensors are views of the buffer libbfeed received (64-byte
aligned); it is released when the last Batch, bfeed.Tensor, torch tensor or
NumPy array on it is gone. Importing bfeed needs neither torch nor NumPy;
bfeed.torch.Dataset is the PyTorch IterableDataset (imports torch).

Errors are bfeed.Error subclasses with .code (BFEED_E*, negative) and
.message: ConnectError, NoDatasetError, InvalidError (also a ValueError),
BusyError (a tfrecord or tar dataset still being indexed: retry),
ForkedError (a Client made before os.fork() used in the child: connect
again there), ...
"""
from . import _bfeed
from ._bfeed import (  # noqa: F401
    Batch, Client, Error, Stream, Tensor, check_options, connect, option_names, strerror, __version__,
)

# One class per BFEED_E* code (InvalidError, NoMemoryError, ...): the C
# module makes them from the library's one list of errors (bfeed_errors.h).
globals().update({_name: getattr(_bfeed, _name) for _name in _bfeed.error_classes})
__all__ = ["Batch", "Client", "Error", "Stream", "Tensor", "check_options", "connect", "option_names", "strerror",
           *_bfeed.error_classes]
