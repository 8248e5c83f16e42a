/*
 * fuzz_util.h -- what the fuzz targets and their replay harnesses share:
 * FUZZ_CHECK, which abort()s naming the property that failed, and the
 * libFuzzer entry point (every target); deterministic mutations (the
 * replays that run the targets in every build: fuzz_wordvec_replay,
 * fuzz_image_replay).
 */
#ifndef BFEED_FUZZ_UTIL_H
#define BFEED_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);             \
      abort();                                                                                \
    }                                                                                         \
  } while (0)

/* The libFuzzer entry point of a target: fn(data, size) on every input. */
#define FUZZ_UTIL_TARGET(fn)                                       \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);    \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {   \
    fn(data, size);                                                \
    return 0;                                                      \
  }

typedef struct fuzz_mutator {
  uint64_t rng;                /* splitmix64 state: the same sequence every run */
  const uint8_t *interesting;  /* bytes worth writing over others */
  size_t ninteresting;
} fuzz_mutator;

/* One mutant of seed[0..n) into out (room for 2 * n + 64 bytes), the
 * first `keep` bytes left alone: 1 to 4 edits among bit flips, an
 * interesting byte written over another, deletions, insertions of a copy
 * of another stretch, truncations, random bytes. Returns its length. */
size_t fuzz_util_mutate(fuzz_mutator *m, const uint8_t *seed, size_t n, size_t keep, uint8_t *out);

#endif
