/* names.c -- see names.h */
#include "names.h"

const char *names_errcode(int code) {
  switch (code) {
    case BFEED_OK: return "BFEED_OK: success";
    case BFEED_EINVAL: return "BFEED_EINVAL: invalid argument";
    case BFEED_ENOMEM: return "BFEED_ENOMEM: out of memory";
    case BFEED_EIO: return "BFEED_EIO: input/output error";
    case BFEED_ECONNECT: return "BFEED_ECONNECT: cannot connect";
    case BFEED_ECLOSED: return "BFEED_ECLOSED: connection closed by peer";
    case BFEED_EPROTO: return "BFEED_EPROTO: protocol error";
    case BFEED_ECHECKSUM: return "BFEED_ECHECKSUM: frame checksum mismatch";
    case BFEED_ETOOBIG: return "BFEED_ETOOBIG: length exceeds limit";
    case BFEED_EVERSION: return "BFEED_EVERSION: no common protocol version";
    case BFEED_ENODATASET: return "BFEED_ENODATASET: no such dataset";
    case BFEED_EDATASET: return "BFEED_EDATASET: dataset unusable";
    case BFEED_ELIMIT: return "BFEED_ELIMIT: daemon limit reached";
    case BFEED_EEOF: return "BFEED_EEOF: end of stream";
    case BFEED_ECODEC: return "BFEED_ECODEC: compression error";
    case BFEED_ESHUTDOWN: return "BFEED_ESHUTDOWN: daemon shutting down";
    case BFEED_EINTERNAL: return "BFEED_EINTERNAL: internal error";
    case BFEED_EAUTH: return "BFEED_EAUTH: access refused";
    case BFEED_ETIMEDOUT: return "BFEED_ETIMEDOUT: timed out";
    case BFEED_EBUSY: return "BFEED_EBUSY: dataset not ready yet (indexing)";
    default: return "BFEED_E?: unknown error code";
  }
}

size_t names_dtype_size(int dtype) {
  switch (dtype) {
    case BFEED_DTYPE_BF16: return 2;
    case BFEED_DTYPE_F32: return 4;
    case BFEED_DTYPE_I32: return 4;
    case BFEED_DTYPE_I64: return 8;
    case BFEED_DTYPE_U8: return 1;
    default: return 0;
  }
}

const char *names_dtype(int dtype) {
  switch (dtype) {
    case BFEED_DTYPE_BF16: return "bf16";
    case BFEED_DTYPE_F32: return "f32";
    case BFEED_DTYPE_I32: return "i32";
    case BFEED_DTYPE_I64: return "i64";
    case BFEED_DTYPE_U8: return "u8";
    default: return "?";
  }
}
