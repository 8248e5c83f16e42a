/*
 * shm_cow -- what mapping a shared-memory ring copy-on-write costs a client
 * per batch (issue 29; PROTOCOL.md "Shared memory"): libbfeed maps the
 * ring MAP_PRIVATE so that callers may write into their batches, and
 * before it releases a batch drops the slot's pages the caller wrote
 * (single_shm_discard: /proc/self/pagemap says which, MADV_DONTNEED drops
 * them), which are then faulted in again when the slot's next batch is
 * read. Run by hand, never as a test; it prints, it asserts nothing.
 *
 *   shm_cow [BYTES] [ROUNDS]     (default: a batch of 64 at 224, bf16; 40 rounds)
 *
 * One memfd slot, written whole by "the daemon" (a MAP_SHARED mapping)
 * before each round, untimed. Timed, per batch, median of the rounds, the
 * caller's use and the release apart:
 *   shared, read         the mapping before issue 29 (MAP_SHARED,
 *                        read-only): every 8 bytes read; no release work
 *   private, read        MAP_PRIVATE, every 8 bytes read, released
 *                        (libbfeed's: nothing to drop)
 *   private, untouched   released without a read (`bfeed bench`)
 *   private, write       one byte written in every page (each page copied),
 *                        released (every page dropped)
 *   private, read, always dropped   as "private, read" with MADV_DONTNEED
 *                        over the slot at every release, without looking
 *                        at pagemap first: each round faults every page in
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "single.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static volatile uint64_t shm_cow_sink; /* what the reads sum, so that they happen */

static void read_all(const uint8_t *p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    s += v;
  }
  shm_cow_sink += s;
}

static void write_pages(uint8_t *p, size_t n, size_t page) {
  for (size_t i = 0; i < n; i += page) p[i] ^= 1;
}

enum { SHARED_READ, PRIVATE_READ, PRIVATE_UNTOUCHED, PRIVATE_WRITE, PRIVATE_READ_DROPPED, MODES };
static const char *const mode_names[MODES] = {"shared, read", "private, read", "private, untouched", "private, write",
                                              "private, read, always dropped"};

int main(int argc, char **argv) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t raw = argc > 1 ? strtoull(argv[1], NULL, 10) : 64ull * 3 * 224 * 224 * 2 + 64 * 4 + 64 * 8;
  int rounds = argc > 2 ? atoi(argv[2]) : 40;
  if (rounds < 1 || rounds > 100000 || raw == 0) return fprintf(stderr, "usage: shm_cow [BYTES] [ROUNDS]\n"), 2;
  size_t size = (raw + page - 1) / page * page;
  int fd = memfd_create("shm_cow", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size) < 0) return perror("memfd"), 1;
  uint8_t *daemon = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const uint8_t *shared = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  uint8_t *priv = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  uint8_t *src = malloc(size);
  int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC); /* as a ring keeps it */
  double *use = malloc(sizeof *use * (size_t)rounds), *rel = malloc(sizeof *rel * (size_t)rounds);
  if (daemon == MAP_FAILED || shared == MAP_FAILED || priv == MAP_FAILED || !src || !use || !rel)
    return perror("mmap"), 1;
  for (size_t i = 0; i < size; i++) src[i] = (uint8_t)(i * 2654435761u >> 24);
  printf("slot of %zu bytes (%zu pages of %zu), %d rounds, median ms per batch:\n", raw, size / page, page, rounds);
  printf("  %-30s %8s %8s %8s\n", "", "use", "release", "total");
  for (int m = 0; m < MODES; m++) {
    for (int r = -2; r < rounds; r++) { /* two rounds of warm-up */
      memcpy(daemon, src, size);        /* the worker writes the slot: not timed */
      double t0 = now_ms();
      if (m == SHARED_READ) read_all(shared, raw);
      if (m == PRIVATE_READ || m == PRIVATE_READ_DROPPED) read_all(priv, raw);
      if (m == PRIVATE_WRITE) write_pages(priv, raw, page);
      double t1 = now_ms();
      int rc = m == SHARED_READ            ? 0
               : m == PRIVATE_READ_DROPPED ? madvise(priv, size, MADV_DONTNEED)
                                           : single_shm_discard(pagemap, priv, size);
      if (rc < 0) return perror("madvise"), 1;
      double t2 = now_ms();
      if (r >= 0) use[r] = t1 - t0, rel[r] = t2 - t1;
    }
    double u = median(use, rounds), d = median(rel, rounds);
    printf("  %-30s %8.3f %8.3f %8.3f\n", mode_names[m], u, d, u + d);
  }
  return 0;
}
