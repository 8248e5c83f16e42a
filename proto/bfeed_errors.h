/*
 * bfeed_errors.h -- every BFEED_E* error code, in one list.
 * Included by bfeed_types.h (the enum); expanded again by proto/names.c
 * (bfeed_strerror's text) and the Python module (its exception classes).
 * Installed beside bfeed.h.
 *
 * The codes travel on the wire in ERROR frames, so the numbers are fixed:
 * a new code is a row appended here, with the next number, and nothing
 * else to edit (EFORKED is libbfeed's own and never travels, but is
 * numbered the same way). Columns: X(NAME, number, Python class, bfeed_strerror's
 * words, what it means).
 */
#ifndef BFEED_ERRORS_H
#define BFEED_ERRORS_H

#define BFEED_ERRORS(X)                                                                                         \
  X(EINVAL, -1, InvalidError, "invalid argument", "an argument or option is out of range")                    \
  X(ENOMEM, -2, NoMemoryError, "out of memory", "out of memory")                                             \
  X(EIO, -3, IOError, "input/output error", "socket or file I/O failed (see message)")                       \
  X(ECONNECT, -4, ConnectError, "cannot connect", "cannot connect to the daemon's address")                  \
  X(ECLOSED, -5, ClosedError, "connection closed by peer", "the peer closed the connection")                 \
  X(EPROTO, -6, ProtocolError, "protocol error", "malformed frame or message from the peer")                 \
  X(ECHECKSUM, -7, ChecksumError, "frame checksum mismatch", "frame payload checksum mismatch")              \
  X(ETOOBIG, -8, TooBigError, "length exceeds limit", "a length exceeds a limit")                            \
  X(EVERSION, -9, VersionError, "no common protocol version", "no protocol version in common")               \
  X(ENODATASET, -10, NoDatasetError, "no such dataset", "the daemon serves no dataset of that name")         \
  X(EDATASET, -11, DatasetError, "dataset unusable", "the dataset is unusable (empty, unreadable)")          \
  X(ELIMIT, -12, LimitError, "daemon limit reached", "a daemon limit (clients, streams, memory)")            \
  X(EEOF, -13, EndOfStreamError, "end of stream", "the stream has delivered all it was asked for")           \
  X(ECODEC, -14, CodecError, "compression error", "compression or decompression failed")                     \
  X(ESHUTDOWN, -15, ShutdownError, "daemon shutting down", "the daemon is shutting down")                    \
  X(EINTERNAL, -16, InternalError, "internal error", "a bug: please report it with the message")             \
  X(EAUTH, -17, AuthError, "access refused", "the daemon refused access (missing or wrong token)")           \
  X(ETIMEDOUT, -18, TimedOutError, "timed out", "the peer was silent too long (handshake, idle)")            \
  X(EBUSY, -19, BusyError, "dataset not ready yet (indexing)",                                                 \
    "the dataset is not ready yet (its shards are being indexed): retry")                                     \
  X(EFORKED, -20, ForkedError, "client used after fork",                                                      \
    "the client was connected before this process forked: a child connects again")                            \
  X(EUNSUPPORTED, -21, UnsupportedError, "not served by this daemon",                                          \
    "the daemon predates what was asked (class names, ...): upgrade bfeedd")

#endif
