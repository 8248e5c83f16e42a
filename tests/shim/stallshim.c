/*
 * stallshim.c -- an LD_PRELOAD library that makes file I/O hang, as a
 * hung NFS server or a FUSE file does, for the tests of a daemon that must
 * keep serving (and stop) around such I/O: test_faults.c's slow reload and
 * stuck worker.
 *
 *   STALLSHIM_OPEN=S    an open/openat of a path containing S waits first:
 *   STALLSHIM_UNTIL=F   until the file F exists (polled every 10 ms), or
 *                       for ever when unset
 *   STALLSHIM_READ=S    read/pread on a descriptor opened from a path
 *                       containing S never returns
 *
 * Each stall it begins is written to stderr ("stallshim: holding open of
 * PATH", "stallshim: read of PATH hangs"), so a test can tell that it hit
 * what it meant to: a stall never injected has tested nothing. It never
 * allocates: it runs inside the daemon's allocator-sensitive paths.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STALLSHIM_MAX_FD 4096

static atomic_char stallshim_hangs[STALLSHIM_MAX_FD]; /* descriptors whose reads hang */

static void stallshim_say(const char *what, const char *path) {
  char line[512];
  int n = snprintf(line, sizeof line, "stallshim: %s %s\n", what, path);
  if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) {
    /* nothing to do: the test then sees no stall and says so */
  }
}

static int stallshim_matches(const char *var, const char *path) {
  const char *want = getenv(var);
  return want && *want && path && strstr(path, want);
}

static void stallshim_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Before an open of path: wait as STALLSHIM_OPEN and STALLSHIM_UNTIL say. */
static void stallshim_before_open(const char *path) {
  if (!stallshim_matches("STALLSHIM_OPEN", path)) return;
  stallshim_say("holding open of", path);
  const char *until = getenv("STALLSHIM_UNTIL");
  while (!until || !*until || access(until, F_OK) != 0) stallshim_sleep_ms(10);
  stallshim_say("releasing open of", path);
}

static int stallshim_after_open(const char *path, int fd) {
  if (fd >= 0 && fd < STALLSHIM_MAX_FD) atomic_store(&stallshim_hangs[fd], (char)stallshim_matches("STALLSHIM_READ", path));
  return fd;
}

/* A read on a descriptor marked to hang: it never returns (signals do not
 * end it, as an uninterruptible NFS read would not). */
static void stallshim_before_read(int fd) {
  if (fd < 0 || fd >= STALLSHIM_MAX_FD || !atomic_load(&stallshim_hangs[fd])) return;
  char what[64];
  snprintf(what, sizeof what, "read of descriptor %d", fd);
  stallshim_say(what, "hangs");
  for (;;) stallshim_sleep_ms(1000);
}

#define STALLSHIM_REAL(name, type) \
  static __typeof__(type) real;    \
  if (!real) real = (type)dlsym(RTLD_NEXT, name)

/* open and open64 (and the openat pair) are one function on 64-bit glibc but two symbols. */
#define STALLSHIM_OPEN_FN(name)                                           \
  int name(const char *path, int flags, ...) {                            \
    STALLSHIM_REAL(#name, int (*)(const char *, int, ...));               \
    mode_t mode = 0;                                                      \
    if (flags & (O_CREAT | O_TMPFILE)) {                                  \
      va_list ap;                                                         \
      va_start(ap, flags);                                                \
      mode = va_arg(ap, mode_t);                                          \
      va_end(ap);                                                         \
    }                                                                     \
    stallshim_before_open(path);                                          \
    return stallshim_after_open(path, real(path, flags, mode));           \
  }
STALLSHIM_OPEN_FN(open)
STALLSHIM_OPEN_FN(open64)

#define STALLSHIM_OPENAT_FN(name)                                         \
  int name(int dir, const char *path, int flags, ...) {                   \
    STALLSHIM_REAL(#name, int (*)(int, const char *, int, ...));          \
    mode_t mode = 0;                                                      \
    if (flags & (O_CREAT | O_TMPFILE)) {                                  \
      va_list ap;                                                         \
      va_start(ap, flags);                                                \
      mode = va_arg(ap, mode_t);                                          \
      va_end(ap);                                                         \
    }                                                                     \
    stallshim_before_open(path);                                          \
    return stallshim_after_open(path, real(dir, path, flags, mode));      \
  }
STALLSHIM_OPENAT_FN(openat)
STALLSHIM_OPENAT_FN(openat64)

#define STALLSHIM_PREAD_FN(name)                                          \
  ssize_t name(int fd, void *buf, size_t n, off_t off) {                  \
    STALLSHIM_REAL(#name, ssize_t (*)(int, void *, size_t, off_t));       \
    stallshim_before_read(fd);                                            \
    return real(fd, buf, n, off);                                         \
  }
STALLSHIM_PREAD_FN(pread)
STALLSHIM_PREAD_FN(pread64)

int close(int fd) {
  STALLSHIM_REAL("close", int (*)(int));
  if (fd >= 0 && fd < STALLSHIM_MAX_FD) atomic_store(&stallshim_hangs[fd], 0);
  return real(fd);
}

ssize_t read(int fd, void *buf, size_t n) {
  STALLSHIM_REAL("read", ssize_t (*)(int, void *, size_t));
  stallshim_before_read(fd);
  return real(fd, buf, n);
}
