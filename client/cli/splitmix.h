/*
 * splitmix.h -- splitmix64 (Steele, Lea, Flood 2014), for repeatable
 * sequences that need no statistical strength: demo data, weight
 * initialization, test inputs and fuzz mutations. (Batches use Philox, see
 * daemon/rng.h.)
 */
#ifndef BFEED_SPLITMIX_H
#define BFEED_SPLITMIX_H

#include <stdint.h>

/* The finalizer: a bijective scramble of z. */
static inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Advance *state and return the next value. */
static inline uint64_t splitmix64_next(uint64_t *state) {
  *state += 0x9e3779b97f4a7c15ULL;
  return splitmix64_mix(*state);
}

#endif
