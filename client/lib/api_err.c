/*
 * api_err.c -- libbfeed's errors. Internal functions write their message
 * into a caller's buffer (api_err); a public call turns its buffer into
 * the caller's bfeed_error here and nowhere else (api_err_public), plus
 * bfeed_strerror over proto's names.
 */
#include <stdarg.h>
#include <stdio.h>

#include "api.h"
#include "names.h"

int api_err(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && errlen) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

int api_err_public(bfeed_error *pub, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (pub && code < 0) { /* a call that succeeded leaves the caller's bfeed_error as it was */
    pub->code = code;
    vsnprintf(pub->message, sizeof pub->message, fmt, ap);
  }
  va_end(ap);
  return code;
}

BFEED_API const char *bfeed_strerror(int code) { return names_errcode(code); }
