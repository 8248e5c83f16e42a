/*
 * test_rng.c -- Philox4x32-10 against Random123's known answers, and the
 * draws built on it: layout of (seed, domain, epoch, index), determinism,
 * distinct streams, permutations, and chi-square checks that a broken
 * generator would fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

/* Random123 tests/kat_vectors, the "philox4x32 10" lines: CTR, KEY, EXPECTED. */
static const struct {
  uint32_t ctr[4], key[2], want[4];
} kat[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

static void test_known_answers(void **state) {
  for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
    uint32_t out[4];
    rng_philox4x32(kat[i].key, kat[i].ctr, out);
    for (int k = 0; k < 4; k++) assert_int_equal(out[k], kat[i].want[k]);
  }
}

/* The stream is the block function over ctr[0] = 0, 1, ... with the
 * documented counter layout. */
static void test_stream_layout(void **state) {
  uint64_t seed = 0x0123456789abcdefull, epoch = 0x0000000500000007ull;
  uint64_t index = 0x00000abc12345678ull;
  rng_t r;
  rng_init(&r, seed, RNG_DOMAIN_SAMPLE, epoch, index);
  uint32_t key[2] = {0x89abcdef, 0x01234567};
  uint32_t ctr[4] = {0, (2u << 24) ^ 0xabc, 7 ^ 5, 0x12345678};
  for (uint32_t block = 0; block < 3; block++) {
    uint32_t want[4];
    ctr[0] = block;
    rng_philox4x32(key, ctr, want);
    for (int k = 0; k < 4; k++) assert_int_equal(rng_u32(&r), want[k]);
  }
  /* u64 = two consecutive words, first one low. */
  uint32_t want[4];
  ctr[0] = 3;
  rng_philox4x32(key, ctr, want);
  assert_int_equal(rng_u64(&r), (uint64_t)want[1] << 32 | want[0]);
  /* uniform_f32 = top 24 bits of the next word, times 2^-24. */
  assert_true(rng_uniform_f32(&r) == (float)(want[2] >> 8) / 16777216.0f);
}

static void test_deterministic(void **state) {
  rng_t a, b;
  rng_init(&a, 42, RNG_DOMAIN_SAMPLE, 3, 1000);
  rng_init(&b, 42, RNG_DOMAIN_SAMPLE, 3, 1000);
  for (int i = 0; i < 10000; i++) assert_int_equal(rng_u32(&a), rng_u32(&b));
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Each of seed, domain, epoch and index changes the stream; over a grid of
 * 2 seeds x 2 domains x 16 epochs x 1024 indices (and some huge values) the
 * first 64 bits never repeat. */
static void test_distinct_streams(void **state) {
  const uint64_t seeds[] = {1, 1ull << 32};
  const uint64_t extra[][2] = {{0xffffffffull, 0}, {0, 1ull << 32}, {0, 1ull << 40}, {0, 1ull << 55}};
  size_t n = 2 * 2 * 16 * 1024 + 2 * 2 * 4, k = 0;
  uint64_t *first = malloc(n * sizeof *first);
  assert_non_null(first);
  for (int s = 0; s < 2; s++)
    for (uint32_t dom = 1; dom <= 2; dom++) {
      for (uint64_t e = 0; e < 16; e++)
        for (uint64_t i = 0; i < 1024; i++) {
          rng_t r;
          rng_init(&r, seeds[s], dom, e, i);
          first[k++] = rng_u64(&r);
        }
      for (int x = 0; x < 4; x++) {
        rng_t r;
        rng_init(&r, seeds[s], dom, extra[x][0], extra[x][1]);
        first[k++] = rng_u64(&r);
      }
    }
  assert_int_equal(k, n);
  qsort(first, n, sizeof *first, cmp_u64);
  for (size_t i = 1; i < n; i++) assert_true(first[i] != first[i - 1]);
  free(first);
}

/* Pearson's statistic over equal-probability bins. */
static double chi_square(const uint64_t *count, int bins, uint64_t total) {
  double expect = (double)total / bins, chi = 0;
  for (int i = 0; i < bins; i++) chi += (count[i] - expect) * (count[i] - expect) / expect;
  return chi;
}

/* Bounds: far above the 99.9999th percentile of chi-square with these
 * degrees of freedom (about 40 for 9, 125 for 63), so a correct generator
 * passes, but a biased or stuck one (a constant, a short cycle, a bad
 * multiply-shift) exceeds them by orders of magnitude. */
static void test_uniformity(void **state) {
  rng_t r;
  rng_init(&r, 7, RNG_DOMAIN_SAMPLE, 0, 0);
  enum { N = 1000000 };

  uint64_t c10[10] = {0};
  for (int i = 0; i < N; i++) {
    uint64_t v = rng_below(&r, 10);
    assert_true(v < 10);
    c10[v]++;
  }
  double chi = chi_square(c10, 10, N);
  fprintf(stderr, "rng_below(10): chi2 = %.1f (9 dof)\n", chi);
  assert_true(chi < 45);

  uint64_t c64[64] = {0};
  for (int i = 0; i < N; i++) {
    float u = rng_uniform_f32(&r);
    assert_true(u >= 0.0f && u < 1.0f);
    float scaled = u * 16777216.0f;
    assert_true(scaled == floorf(scaled)); /* 24-bit grid */
    c64[(int)(u * 64)]++;
  }
  chi = chi_square(c64, 64, N);
  fprintf(stderr, "rng_uniform_f32, 64 bins: chi2 = %.1f (63 dof)\n", chi);
  assert_true(chi < 130);

  /* Every bit of rng_u32 is a fair coin. */
  uint64_t ones[32] = {0};
  for (int i = 0; i < N; i++) {
    uint32_t v = rng_u32(&r);
    for (int b = 0; b < 32; b++) ones[b] += (v >> b) & 1;
  }
  for (int b = 0; b < 32; b++) {
    double z = ((double)ones[b] - N / 2.0) / sqrt(N / 4.0);
    assert_true(fabs(z) < 6);
  }

  /* Large n uses the high bits of the 64-bit draw: the top half of the
   * range must be hit as often as the bottom half. */
  uint64_t big = 3ull << 62, upper = 0;
  for (int i = 0; i < N; i++) {
    uint64_t v = rng_below(&r, big);
    assert_true(v < big);
    upper += v >= big / 2;
  }
  assert_true(fabs(((double)upper - N / 2.0) / sqrt(N / 4.0)) < 6);

  for (int i = 0; i < 1000; i++) assert_int_equal(rng_below(&r, 1), 0);
}

static void check_is_permutation(const uint32_t *perm, size_t n) {
  unsigned char *seen = calloc(n ? n : 1, 1);
  assert_non_null(seen);
  for (size_t i = 0; i < n; i++) {
    assert_true(perm[i] < n);
    assert_false(seen[perm[i]]);
    seen[perm[i]] = 1;
  }
  free(seen);
}

static void test_permutation(void **state) {
  const size_t sizes[] = {0, 1, 2, 3, 10, 1000, 100003};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    uint32_t *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    rng_permutation(a, n, 99, 4);
    check_is_permutation(a, n);
    rng_permutation(b, n, 99, 4);
    if (n) assert_memory_equal(a, b, n * sizeof *a);
    if (n >= 1000) {
      rng_permutation(b, n, 99, 5); /* another epoch shuffles differently */
      size_t same = 0;
      for (size_t i = 0; i < n; i++) same += a[i] == b[i];
      assert_true(same < n / 100);
    }
    free(a);
    free(b);
  }
}

/* Fisher-Yates with an unbiased draw gives all 24 orders of 4 elements
 * equally often across epochs. */
static void test_permutation_orders_uniform(void **state) {
  enum { N = 240000 };
  uint64_t count[24] = {0};
  for (uint64_t e = 0; e < N; e++) {
    uint32_t p[4];
    rng_permutation(p, 4, 1234, e);
    /* Lehmer code -> index in [0, 24) */
    int code = 0;
    for (int i = 0; i < 4; i++) {
      int smaller = 0;
      for (int j = i + 1; j < 4; j++) smaller += p[j] < p[i];
      code = code * (4 - i) + smaller;
    }
    count[code]++;
  }
  double chi = chi_square(count, 24, N);
  fprintf(stderr, "orders of 4: chi2 = %.1f (23 dof)\n", chi);
  assert_true(chi < 70);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answers),
      cmocka_unit_test(test_stream_layout),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_distinct_streams),
      cmocka_unit_test(test_uniformity),
      cmocka_unit_test(test_permutation),
      cmocka_unit_test(test_permutation_orders_uniform),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
