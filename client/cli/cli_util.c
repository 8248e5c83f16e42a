/* cli_util.c -- see cli_util.h */
#include "cli_util.h"
#include "clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int cli_fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

double cli_now_s(void) { return clock_now_s(); }

int cli_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
