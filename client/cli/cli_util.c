/* cli_util.c -- see cli_util.h */
#include "cli_util.h"
#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bfeed_types.h"

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

/* mkdir -p: each missing component of path, with mode 0777 (less umask). */
int cli_mkdirs(const char *path, char *err, size_t errlen) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n >= sizeof buf) return cli_fail(err, errlen, BFEED_EINVAL, "%s: path too long", path);
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char keep = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return cli_fail(err, errlen, BFEED_EIO, "%s: cannot create directory: %s", buf,
                       strerror(errno));
    buf[i] = keep;
  }
  struct stat st;
  if (stat(path, &st) != 0)
    return cli_fail(err, errlen, BFEED_EIO, "%s: %s", path, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return cli_fail(err, errlen, BFEED_EIO, "%s: exists and is not a directory", path);
  return 0;
}
