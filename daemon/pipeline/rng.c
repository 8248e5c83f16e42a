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

#include <math.h>

#include <Random123/philox.h>

/* The block function is Random123's own (librandom123-dev, header only):
 * the reference implementation, whose known-answer vectors test_rng checks. */
void rng_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]) {
  philox4x32_ctr_t c = {{ctr[0], ctr[1], ctr[2], ctr[3]}};
  philox4x32_key_t k = {{key[0], key[1]}};
  philox4x32_ctr_t r = philox4x32(c, k);
  for (int i = 0; i < 4; i++) out[i] = r.v[i];
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

/* Uniform in (0, 1), 53 bits: never 0, so its log is finite. */
static double rng_open01(rng_t *r) { return ((double)(rng_u64(r) >> 11) + 0.5) * 0x1p-53; }

float rng_normal_f32(rng_t *r) {
  double u = rng_open01(r), v = rng_open01(r);
  return (float)(sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v));
}

double rng_gamma(rng_t *r, double shape) {
  if (shape < 1) /* Gamma(a) = Gamma(a + 1) * U^(1/a) */
    return rng_gamma(r, shape + 1) * pow(rng_open01(r), 1.0 / shape);
  double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
  for (;;) {
    double x, v;
    do {
      x = rng_normal_f32(r);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    double u = rng_open01(r);
    if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v;
  }
}

double rng_beta(rng_t *r, double a, double b) {
  double x = rng_gamma(r, a), y = rng_gamma(r, b);
  return x + y > 0 ? x / (x + y) : 0.5;
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
