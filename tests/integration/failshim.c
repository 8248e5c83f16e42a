/*
 * failshim.c -- an LD_PRELOAD library that makes one chosen calloc fail.
 * Loaded into bfeedd by test_faults.c to reach the daemon's paths for a
 * send that cannot allocate, which no client can force from outside.
 *
 *   FAILSHIM_SIZE=N   calloc calls of nmemb * size == N are counted
 *   FAILSHIM_SKIP=K   the first K of them succeed, the next one fails
 *
 * Every failure it injects is written to stderr ("failshim: failed ..."),
 * so a test can tell that the shim hit something: a test whose fault was
 * never injected has tested nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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
