/*
 * rng.h -- counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
 * Called by transform.c (crops), epoch.c (shuffles), batch.c and batch_text.c (per-sample and bucket streams).
 *
 * Why counter-based: every batch must be a pure function of (seed, epoch,
 * sample index), whatever thread computes it and in whatever order. A
 * generator keyed by those values needs no shared state and no ordering.
 * An rng_t is a small value owned by the caller; it is not thread-safe but
 * costs nothing to create, so each sample makes its own.
 */
#ifndef BFEED_RNG_H
#define BFEED_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Domains keep the streams of different uses independent: the epoch's
 * order, a sample's crop and augmentation, the bucketed batches' order
 * (batch_text.c), a batch's MixUp/CutMix (aug_mix.h). */
enum rng_domain { RNG_DOMAIN_SHUFFLE = 1, RNG_DOMAIN_SAMPLE = 2, RNG_DOMAIN_BUCKET = 3, RNG_DOMAIN_MIX = 4 };

typedef struct rng {
  uint32_t key[2];
  uint32_t ctr[4]; /* ctr[0] counts blocks; ctr[1..3] hold domain, epoch, index */
  uint32_t out[4];
  int avail;       /* unused words left in out[] */
} rng_t;

/* A generator for (seed, domain, epoch, index). */
void rng_init(rng_t *r, uint64_t seed, uint32_t domain, uint64_t epoch, uint64_t index);
uint32_t rng_u32(rng_t *r);
uint64_t rng_u64(rng_t *r);
/* Uniform in [0, 1) with 24 random bits, as a float: what torch's
 * float32 uniform_ draws have. */
float rng_uniform_f32(rng_t *r);
/* Uniform integer in [0, n), n >= 1 (multiply-shift; bias below 2^-32). */
uint64_t rng_below(rng_t *r, uint64_t n);
/* A standard normal float32 (Box-Muller on two 53-bit uniforms, in
 * double): the distribution of torch's normal_(); its numbers are ours. */
float rng_normal_f32(rng_t *r);
/* Gamma(shape, 1) for shape > 0 (Marsaglia and Tsang, with the shape + 1
 * boost below 1), and Beta(a, b) from two of them: the distributions of
 * torch's _standard_gamma and _sample_dirichlet. */
double rng_gamma(rng_t *r, double shape);
double rng_beta(rng_t *r, double a, double b);

/* Philox4x32-10 block function, exposed for the known-answer test. */
void rng_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]);

/* perm[0..n) = a permutation of 0..n-1 that depends only on (seed, epoch):
 * Fisher-Yates driven by rng(seed, RNG_DOMAIN_SHUFFLE, epoch, 0). */
void rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint64_t epoch);

#endif
