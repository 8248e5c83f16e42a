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
BusyError (a tfrecord or tar dataset still being indexed: retry), ...
"""
from ._bfeed import (  # noqa: F401
    Batch, Client, Error, Stream, Tensor, connect, option_names, strerror,
    InvalidError, NoMemoryError, IOError, ConnectError, ClosedError, ProtocolError, ChecksumError,
    TooBigError, VersionError, NoDatasetError, DatasetError, LimitError, EndOfStreamError, CodecError,
    ShutdownError, InternalError, BusyError, AuthError, TimedOutError,
)

__version__ = "0.1.0"
