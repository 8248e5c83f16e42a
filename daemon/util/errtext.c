/* errtext.c -- see errtext.h */
#include "errtext.h"

#include <errno.h>
#include <stdio.h>

#include "bfeed_types.h"

int errtext_vset(char *err, size_t errlen, int code, const char *where, const char *fmt, va_list ap) {
  int n = snprintf(err, errlen, "%s", where);
  if (n >= 0 && (size_t)n < errlen) vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  return code;
}

int errtext_set(char *err, size_t errlen, int code, const char *where, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  errtext_vset(err, errlen, code, where, fmt, ap);
  va_end(ap);
  return code;
}

int errtext_errno_code(int e) {
  return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS || e == EAGAIN || e == EIO || e == EINTR
             ? BFEED_EIO
             : BFEED_EDATASET;
}
