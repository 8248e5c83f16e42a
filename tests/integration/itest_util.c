/* itest_util.c -- see itest_util.h: messages, waiting, temporary folders
 * and whole files. */
#define _GNU_SOURCE /* nftw, which glibc hides behind X/Open */
#include "itest_util.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int itest_fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

void itest_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

int itest_poll(int (*done)(void *arg), void *arg, int timeout_ms, int step_ms) {
  for (int waited = 0;; waited += step_ms) {
    int r = done(arg);
    if (r != 0 || waited >= timeout_ms) return r;
    itest_sleep_ms(step_ms);
  }
}

/* ------------------------------------------------------------------ */
/* Files                                                               */

int itest_tmpdir(char *out, size_t cap) {
  const char *base = getenv("TMPDIR");
  /* Unix socket paths must fit sun_path (108 bytes), so a deep TMPDIR is
   * not used. */
  if (!base || !*base || strlen(base) > 60) base = "/tmp";
  if ((size_t)snprintf(out, cap, "%s/bfeed-itest-XXXXXX", base) >= cap) return -1;
  return mkdtemp(out) ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void itest_rmtree(const char *dir) {
  if (dir && *dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *itest_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break; /* end of file (or an error, checked below) */
    char *b = realloc(buf, cap * 2);
    if (!b) free(buf);
    buf = b;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

int itest_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, len, f);
  return fclose(f) == 0 && w == len ? 0 : -1;
}
