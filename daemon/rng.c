/*
 * rng.c -- Philox4x32-10 (Random123's philox4x32_R with R = 10) and the
 * draws built on it.
 *
 * Stream layout. The 64-bit seed is the key. The counter is
 *   ctr[0] = block number within the stream (0, 1, 2, ...)
 *   ctr[1] = domain << 24 ^ bits 32..63 of index
 *   ctr[2] = bits 0..31 of epoch ^ bits 32..63 of epoch
 *   ctr[3] = bits 0..31 of index
 * so (seed, domain, epoch, index) -> stream is one-to-one for domain < 2^8,
 * epoch < 2^32 and index < 2^56; beyond those the high bits are folded in by
 * XOR rather than dropped, so neighbouring values still differ. A stream
 * holds 2^32 blocks of four words before ctr[0] wraps; a sample uses a few.
 */
#include "rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */

void rng_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]) {
  uint32_t k0 = key[0], k1 = key[1];
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  for (int round = 0; round < 10; round++) {
    if (round > 0) { /* Random123 bumps the key before every round but the first */
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (uint32_t)p1;
    c2 = n2;
    c3 = (uint32_t)p0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

void rng_init(rng_t *r, uint64_t seed, uint32_t domain, uint64_t epoch, uint64_t index) {
  r->key[0] = (uint32_t)seed;
  r->key[1] = (uint32_t)(seed >> 32);
  r->ctr[0] = 0;
  r->ctr[1] = (domain << 24) ^ (uint32_t)(index >> 32);
  r->ctr[2] = (uint32_t)epoch ^ (uint32_t)(epoch >> 32);
  r->ctr[3] = (uint32_t)index;
  r->avail = 0;
}

uint32_t rng_u32(rng_t *r) {
  if (r->avail == 0) {
    rng_philox4x32(r->key, r->ctr, r->out);
    r->ctr[0]++;
    r->avail = 4;
  }
  return r->out[4 - r->avail--];
}

uint64_t rng_u64(rng_t *r) {
  uint64_t lo = rng_u32(r);
  return lo | (uint64_t)rng_u32(r) << 32;
}

float rng_uniform_f32(rng_t *r) { return (float)(rng_u32(r) >> 8) * 0x1p-24f; }

uint64_t rng_below(rng_t *r, uint64_t n) {
  return (uint64_t)(((__uint128_t)rng_u64(r) * n) >> 64);
}

void rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint64_t epoch) {
  rng_t r;
  rng_init(&r, seed, RNG_DOMAIN_SHUFFLE, epoch, 0);
  for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)rng_below(&r, i);
    uint32_t t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
}
