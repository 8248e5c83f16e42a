/* names.c -- see names.h */
#include "names.h"

#include <stdio.h>

const char *names_errcode(int code) {
  switch (code) {
    case BFEED_OK: return "BFEED_OK: success";
#define NAMES_ERRCODE(name, num, pyclass, words, meaning) \
  case BFEED_##name: return "BFEED_" #name ": " words;
    BFEED_ERRORS(NAMES_ERRCODE)
#undef NAMES_ERRCODE
    default: return "BFEED_E?: unknown error code";
  }
}

int names_fail(char *err, size_t errlen, int code, const char *why) {
  if (err && errlen) snprintf(err, errlen, "%s", why);
  return code;
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
