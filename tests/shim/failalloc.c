/*
 * failalloc.c -- an LD_PRELOAD library that makes one allocation fail, for
 * failalloc_sweep (and by hand: LD_PRELOAD=build/lib/libfailalloc.so).
 *
 *   FAILALLOC_N=K        the K-th call (from 1) to malloc, calloc, realloc,
 *                        posix_memalign, aligned_alloc or memalign returns
 *                        NULL (ENOMEM); 0 or unset: none fails, only counted
 *   FAILALLOC_SPAN=M     fail M calls from the K-th on (default 1)
 *   FAILALLOC_PROC=NAME  act only in a process whose program name is NAME
 *                        (e.g. bfeedd, when a whole test runs preloaded)
 *   FAILALLOC_REPORT=F   at exit, write the number of calls counted to F
 *   FAILALLOC_SPARE=LIB  never fail a call made from a library whose file
 *                        name holds LIB (e.g. libuv, which aborts by design
 *                        when its own allocations fail: uv__io_start):
 *                        the failure moves on to the next call
 *
 * When it fails a call it writes "failalloc: failing allocation K" and the
 * caller's stack to stderr, so that a crash that follows can be traced to
 * the allocation that caused it.
 *
 * Each call is forwarded to the next definition (glibc's, or ASan's when
 * the program is built with -fsanitize=address: run it with
 * ASAN_OPTIONS=verify_asan_link_order=0). dlsym itself may allocate before
 * the real functions are known: those few calls are served from a static
 * arena, which free() then ignores.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_alloc_fn)(size_t, size_t);

static malloc_fn real_malloc;
static calloc_fn real_calloc;
static realloc_fn real_realloc;
static free_fn real_free;
static posix_memalign_fn real_posix_memalign;
static aligned_alloc_fn real_aligned_alloc, real_memalign;

static _Atomic long failalloc_n;
static long failalloc_span = 1;
static const char *failalloc_spare; /* FAILALLOC_SPARE, or NULL */
static int failalloc_active; /* this process counts and fails */
static _Atomic long failalloc_calls;
static __thread int failalloc_inside; /* in our own reporting: never fail */

/* The arena for allocations made while dlsym runs. */
static _Alignas(64) char failalloc_arena[16384];
static size_t failalloc_arena_used;
static int failalloc_resolving;

static void *failalloc_arena_take(size_t n) {
  n = (n + 63) & ~(size_t)63;
  if (failalloc_arena_used + n > sizeof failalloc_arena) return NULL;
  void *p = failalloc_arena + failalloc_arena_used;
  failalloc_arena_used += n;
  return p; /* static storage: already zero, as calloc promises */
}

static int failalloc_in_arena(const void *p) {
  return (const char *)p >= failalloc_arena && (const char *)p < failalloc_arena + sizeof failalloc_arena;
}

static void failalloc_resolve(void) {
  if (real_malloc || failalloc_resolving) return;
  failalloc_resolving = 1;
  real_calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
  real_free = (free_fn)dlsym(RTLD_NEXT, "free");
  real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
  real_posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = (aligned_alloc_fn)dlsym(RTLD_NEXT, "aligned_alloc");
  real_memalign = (aligned_alloc_fn)dlsym(RTLD_NEXT, "memalign");
  real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
  failalloc_resolving = 0;
}

/* Whether the call returning to `caller` comes from a spared library. */
static int failalloc_spared(const void *caller) {
  Dl_info info;
  return failalloc_spare && dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, failalloc_spare);
}

/* 1 when this call (returning to caller) is to fail. */
static int failalloc_should_fail(const void *caller) {
  if (!failalloc_active || failalloc_inside) return 0;
  long k = atomic_fetch_add(&failalloc_calls, 1) + 1, n = atomic_load(&failalloc_n);
  if (n <= 0 || k < n || k >= n + failalloc_span) return 0;
  if (failalloc_spared(caller)) return atomic_fetch_add(&failalloc_n, 1), 0; /* the next call fails instead */
  failalloc_inside = 1;
  char line[64];
  int len = snprintf(line, sizeof line, "failalloc: failing allocation %ld\n", k);
  if (write(2, line, (size_t)len) < 0) { /* nothing to do about it */ }
  void *frames[32];
  backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  failalloc_inside = 0;
  errno = ENOMEM;
  return 1;
}

void *malloc(size_t n) {
  failalloc_resolve();
  if (!real_malloc) return failalloc_arena_take(n);
  return failalloc_should_fail(__builtin_return_address(0)) ? NULL : real_malloc(n);
}

void *calloc(size_t n, size_t size) {
  failalloc_resolve();
  if (!real_calloc) return size && n > SIZE_MAX / size ? NULL : failalloc_arena_take(n * size);
  return failalloc_should_fail(__builtin_return_address(0)) ? NULL : real_calloc(n, size);
}

void *realloc(void *p, size_t n) {
  failalloc_resolve();
  if (failalloc_in_arena(p)) { /* rare: move it out of the arena */
    void *q = malloc(n);
    size_t left = (size_t)(failalloc_arena + sizeof failalloc_arena - (char *)p);
    if (q) memcpy(q, p, n < left ? n : left);
    return q;
  }
  if (!real_realloc) return failalloc_arena_take(n);
  return failalloc_should_fail(__builtin_return_address(0)) ? NULL : real_realloc(p, n);
}

void free(void *p) {
  if (!p || failalloc_in_arena(p)) return;
  failalloc_resolve();
  real_free(p);
}

int posix_memalign(void **out, size_t align, size_t n) {
  failalloc_resolve();
  if (failalloc_should_fail(__builtin_return_address(0))) return ENOMEM;
  return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n) {
  failalloc_resolve();
  return failalloc_should_fail(__builtin_return_address(0)) ? NULL : real_aligned_alloc(align, n);
}

void *memalign(size_t align, size_t n) {
  failalloc_resolve();
  return failalloc_should_fail(__builtin_return_address(0)) ? NULL : real_memalign(align, n);
}

static long failalloc_env(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : dflt;
}

__attribute__((constructor)) static void failalloc_init(void) {
  failalloc_resolve();
  const char *proc = getenv("FAILALLOC_PROC");
  failalloc_active = !proc || !*proc || strcmp(proc, program_invocation_short_name) == 0;
  failalloc_n = failalloc_env("FAILALLOC_N", 0);
  failalloc_spare = getenv("FAILALLOC_SPARE");
  if (failalloc_spare && !*failalloc_spare) failalloc_spare = NULL;
  failalloc_span = failalloc_env("FAILALLOC_SPAN", 1);
  /* backtrace() loads libgcc_s on first use, which allocates: do it now,
   * where it cannot be the failing call. */
  void *frames[2];
  failalloc_inside = 1;
  backtrace(frames, 2);
  failalloc_inside = 0;
}

__attribute__((destructor)) static void failalloc_fini(void) {
  const char *path = getenv("FAILALLOC_REPORT");
  if (!failalloc_active || !path || !*path) return;
  failalloc_inside = 1;
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "%ld\n", (long)atomic_load(&failalloc_calls));
  fclose(f);
}
