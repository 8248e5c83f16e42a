/*
 * demo_rng.h -- the random numbers of the demo dataset writers.
 *
 * splitmix64 (Steele, Lea, Flood 2014): tiny, and good enough to draw
 * image parameters, noise and sentences. A stream is keyed by (seed,
 * split, class, index), so no sample depends on any other.
 */
#ifndef BFEED_DEMO_RNG_H
#define BFEED_DEMO_RNG_H

#include <stdint.h>

#include "splitmix.h"

typedef struct demo_rng {
  uint64_t s;
} demo_rng;

static inline uint64_t demo_mix(uint64_t z) { return splitmix64_mix(z); }

static inline uint64_t demo_next(demo_rng *r) { return splitmix64_next(&r->s); }

/* Uniform in [lo, hi). */
static inline float demo_uniform(demo_rng *r, float lo, float hi) {
  return lo + (hi - lo) * (float)(demo_next(r) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform integer in [lo, hi]. */
static inline int demo_int(demo_rng *r, int lo, int hi) {
  return lo + (int)(demo_next(r) % (uint64_t)(hi - lo + 1));
}

/* Chaining the mix keeps e.g. (class 1, index 0) and (class 0, index 1)
 * apart, which adding the numbers would not. `salt` keeps the writers'
 * streams apart. */
static inline void demo_rng_init(demo_rng *r, uint64_t salt, uint64_t seed, int split, int cls, int index) {
  uint64_t z = demo_mix(seed ^ salt);
  z = demo_mix(z ^ (uint64_t)split);
  z = demo_mix(z ^ (uint64_t)cls);
  r->s = demo_mix(z ^ (uint64_t)index);
}

#endif
