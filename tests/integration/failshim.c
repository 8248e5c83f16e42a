/*
 * failshim.c -- an LD_PRELOAD library that makes chosen calloc and open calls fail.
 * Loaded into bfeedd by test_faults.c to reach the daemon's paths for a
 * send that cannot allocate and a file that cannot be opened for the
 * moment, which no client can force from outside.
 *
 *   FAILSHIM_SIZE=N   calloc calls of nmemb * size == N are counted
 *   FAILSHIM_SKIP=K   the first K of them succeed, the next one fails
 *   FAILSHIM_OPEN=S   open calls of a path containing S fail with EMFILE,
 *   FAILSHIM_OPEN_TIMES=T   the first T of them (all when unset)
 *
 * Every failure it injects is written to stderr ("failshim: failed ..."),
 * so a test can tell that the shim hit something: a test whose fault was
 * never injected has tested nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*failshim_real)(size_t, size_t);
static atomic_long failshim_seen;

/* dlsym may itself call calloc: serve it from a static arena meanwhile. */
static unsigned char failshim_arena[4096];
static size_t failshim_arena_used;

static long failshim_env(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? atol(v) : dflt;
}

void *calloc(size_t nmemb, size_t size) {
  if (!failshim_real) {
    static int resolving;
    if (resolving) {
      size_t n = (nmemb * size + 15) & ~(size_t)15;
      if (failshim_arena_used + n > sizeof failshim_arena) return NULL;
      void *p = failshim_arena + failshim_arena_used;
      failshim_arena_used += n;
      return p;
    }
    resolving = 1;
    failshim_real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    resolving = 0;
  }
  long want = failshim_env("FAILSHIM_SIZE", -1);
  if (want >= 0 && nmemb * size == (size_t)want &&
      atomic_fetch_add(&failshim_seen, 1) == failshim_env("FAILSHIM_SKIP", 0)) {
    char line[96];
    int n = snprintf(line, sizeof line, "failshim: failed calloc of %zu bytes\n", nmemb * size);
    if (write(2, line, (size_t)n) < 0) {
      /* nothing to do: the test then sees no injection and says so */
    }
    return NULL;
  }
  return failshim_real(nmemb, size);
}

static atomic_long failshim_opens;

/* 1 if this open is one to fail (and says so on stderr). */
static int failshim_open_fails(const char *path) {
  const char *want = getenv("FAILSHIM_OPEN");
  if (!want || !*want || !strstr(path, want)) return 0;
  long n = atomic_fetch_add(&failshim_opens, 1), times = failshim_env("FAILSHIM_OPEN_TIMES", -1);
  if (times >= 0 && n >= times) return 0;
  char line[64];
  int k = snprintf(line, sizeof line, "failshim: failed open #%ld\n", n + 1);
  if (write(2, line, (size_t)k) < 0) {
    /* as above */
  }
  errno = EMFILE;
  return 1;
}

/* open and open64 are one function on 64-bit glibc but two symbols. */
#define FAILSHIM_OPEN_FN(name)                                                      \
  int name(const char *path, int flags, ...) {                                      \
    static int (*real)(const char *, int, ...);                                     \
    mode_t mode = 0;                                                                \
    if (flags & (O_CREAT | O_TMPFILE)) {                                            \
      va_list ap;                                                                   \
      va_start(ap, flags);                                                          \
      mode = va_arg(ap, mode_t);                                                    \
      va_end(ap);                                                                   \
    }                                                                               \
    if (failshim_open_fails(path)) return -1;                                       \
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);     \
    return real(path, flags, mode);                                                 \
  }
FAILSHIM_OPEN_FN(open)
FAILSHIM_OPEN_FN(open64)
