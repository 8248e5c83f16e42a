/*
 * failshim.c -- an LD_PRELOAD library that makes chosen calloc and open
 * calls fail, and file I/O hang as on a hung NFS server or FUSE mount.
 * Loaded into bfeedd by test_faults.c to reach the daemon's paths for a
 * send that cannot allocate, a file that cannot be opened for the moment,
 * a load that takes long and a worker stuck in a read, which no client can
 * force from outside.
 *
 *   FAILSHIM_SIZE=N   calloc calls of nmemb * size == N are counted
 *   FAILSHIM_SKIP=K   the first K of them succeed, the next one fails
 *   FAILSHIM_OPEN=S   open calls of a path containing S fail with EMFILE,
 *   FAILSHIM_OPEN_TIMES=T   the first T of them (all when unset)
 *   FAILSHIM_HOLD=S   an open of a path containing S waits first:
 *   FAILSHIM_HOLD_UNTIL=F   until the file F exists (for ever when unset)
 *   FAILSHIM_HANG=S   read and pread on a descriptor opened from a path
 *                     containing S never return
 *
 * Every failure or stall it injects is written to stderr ("failshim:
 * failed ...", "failshim: holding open of PATH", "failshim: read of
 * descriptor N hangs"), so a test can tell that the shim hit something: a
 * test whose fault was never injected has tested nothing.
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
#include <time.h>
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

static void failshim_say(const char *what, const char *path) {
  char line[512];
  int n = snprintf(line, sizeof line, "failshim: %s %s\n", what, path);
  if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) {
    /* as above */
  }
}

static int failshim_matches(const char *var, const char *path) {
  const char *want = getenv(var);
  return want && *want && path && strstr(path, want);
}

static void failshim_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Before an open of path: wait as FAILSHIM_HOLD and FAILSHIM_HOLD_UNTIL say. */
static void failshim_hold(const char *path) {
  if (!failshim_matches("FAILSHIM_HOLD", path)) return;
  failshim_say("holding open of", path);
  const char *until = getenv("FAILSHIM_HOLD_UNTIL");
  while (!until || !*until || access(until, F_OK) != 0) failshim_sleep_ms(10);
  failshim_say("releasing open of", path);
}

#define FAILSHIM_MAX_FD 4096
static atomic_char failshim_hangs[FAILSHIM_MAX_FD]; /* descriptors whose reads hang */

static int failshim_opened(const char *path, int fd) {
  if (fd >= 0 && fd < FAILSHIM_MAX_FD) atomic_store(&failshim_hangs[fd], (char)failshim_matches("FAILSHIM_HANG", path));
  return fd;
}

/* A read on a descriptor marked to hang never returns (nor do signals end
 * it, as they would not end an uninterruptible NFS read). */
static void failshim_before_read(int fd) {
  if (fd < 0 || fd >= FAILSHIM_MAX_FD || !atomic_load(&failshim_hangs[fd])) return;
  char what[64];
  snprintf(what, sizeof what, "read of descriptor %d", fd);
  failshim_say(what, "hangs");
  for (;;) failshim_sleep_ms(1000);
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
    failshim_hold(path);                                                            \
    if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);     \
    return failshim_opened(path, real(path, flags, mode));                          \
  }
FAILSHIM_OPEN_FN(open)
FAILSHIM_OPEN_FN(open64)

/* pread and pread64 likewise. */
#define FAILSHIM_PREAD_FN(name)                                                     \
  ssize_t name(int fd, void *buf, size_t n, off_t off) {                            \
    static ssize_t (*real)(int, void *, size_t, off_t);                             \
    failshim_before_read(fd);                                                       \
    if (!real) real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, #name); \
    return real(fd, buf, n, off);                                                   \
  }
FAILSHIM_PREAD_FN(pread)
FAILSHIM_PREAD_FN(pread64)

ssize_t read(int fd, void *buf, size_t n) {
  static ssize_t (*real)(int, void *, size_t);
  failshim_before_read(fd);
  if (!real) real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
  return real(fd, buf, n);
}

/* A descriptor closed forgets its mark: its number is reused by sockets. */
int close(int fd) {
  static int (*real)(int);
  if (fd >= 0 && fd < FAILSHIM_MAX_FD) atomic_store(&failshim_hangs[fd], 0);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "close");
  return real(fd);
}
