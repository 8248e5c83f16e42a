/*
 * test_bf16.c -- float32 -> bfloat16, exhaustively.
 *
 * The scalar rule in bf16.h is checked against an oracle that never looks
 * at bit patterns of finite values: it finds the two bfloat16 neighbours of
 * the value with frexp/ldexp, compares the distances in double and breaks
 * ties towards the even significand, and overflows to Inf by IEEE 754's rule
 * (a value rounds to Inf when it would round to 2^128 with an unbounded
 * exponent). Then every SIMD path this CPU has is held bit-equal to the
 * scalar rule for all 2^32 inputs. The work is split across two threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"

#define CHUNK (1u << 20)
#define NTHREADS 2

static float f32_of(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static uint16_t oracle_bf16(uint32_t bits) {
  float f = f32_of(bits);
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  if (isnan(f)) return sign | 0x7fc0 | ((bits >> 16) & 0x3f); /* quiet, top payload kept */
  if (isinf(f)) return sign | 0x7f80;
  if (f == 0) return sign;

  /* y = |f| in units of the bf16 spacing: 2^(e-8) for 8 significant bits,
   * or a fixed 2^-133 below 2^-126, where the subnormals are. */
  int e;
  double mant = frexp(fabs((double)f), &e); /* |f| = mant * 2^e, mant in [0.5, 1) */
  int sub = e - 8 < -133;
  double y = sub ? fabs((double)f) * 0x1p133 : mant * 256;
  double k = (double)(int64_t)y; /* floor: y > 0 */
  double below = y - k, above = (k + 1) - y;
  double m = below < above ? k : above < below ? k + 1 : ((int64_t)k & 1) == 0 ? k : k + 1;
  double r = sub ? m * 0x1p-133 : ldexp(m / 256, e);
  if (r >= 0x1p128) return sign | 0x7f80;
  uint32_t rb;
  float rf = (float)r; /* exact: r has at most 8 significant bits */
  memcpy(&rb, &rf, 4);
  if ((rb & 0xffff) != 0 || (double)rf != r) return 0x7fff; /* cannot happen; fails loudly */
  return sign | (uint16_t)(rb >> 16);
}

/* ---- exhaustive runner: a check over [lo, hi) bit patterns per thread ---- */

struct sweep {
  uint64_t lo, hi;
  int (*check)(struct sweep *s, const float *src, uint16_t *ref, uint16_t *out, size_t n,
               uint32_t first);
  uint64_t mismatches;
  uint32_t first_bad; /* first failing input, when mismatches > 0 */
  uint16_t got, want;
  const char *what;
};

static void sweep_note(struct sweep *s, uint32_t bits, uint16_t got, uint16_t want,
                       const char *what) {
  if (s->mismatches++ == 0) {
    s->first_bad = bits;
    s->got = got;
    s->want = want;
    s->what = what;
  }
}

static void *sweep_thread(void *arg) {
  struct sweep *s = arg;
  float *src = malloc(CHUNK * sizeof *src);
  uint16_t *ref = malloc(CHUNK * sizeof *ref);
  uint16_t *out = malloc(CHUNK * sizeof *out);
  if (!src || !ref || !out) {
    s->mismatches = UINT64_MAX; /* reported as a failure by the caller */
  } else {
    for (uint64_t base = s->lo; base < s->hi; base += CHUNK) {
      size_t n = s->hi - base < CHUNK ? (size_t)(s->hi - base) : CHUNK;
      for (size_t i = 0; i < n; i++) {
        uint32_t b = (uint32_t)(base + i);
        memcpy(&src[i], &b, 4);
      }
      bf16_from_f32_array_scalar(ref, src, n);
      s->check(s, src, ref, out, n, (uint32_t)base);
    }
  }
  free(src);
  free(ref);
  free(out);
  return NULL;
}

static void sweep_all(int (*check)(struct sweep *, const float *, uint16_t *, uint16_t *, size_t,
                                   uint32_t)) {
  struct sweep s[NTHREADS];
  pthread_t t[NTHREADS];
  uint64_t span = (1ull << 32) / NTHREADS;
  for (int i = 0; i < NTHREADS; i++) {
    s[i] = (struct sweep){.lo = i * span, .hi = (i + 1) * span, .check = check};
    assert_int_equal(pthread_create(&t[i], NULL, sweep_thread, &s[i]), 0);
  }
  uint64_t bad = 0;
  for (int i = 0; i < NTHREADS; i++) {
    assert_int_equal(pthread_join(t[i], NULL), 0);
    if (s[i].mismatches && s[i].mismatches != UINT64_MAX)
      fprintf(stderr, "%s: %llu mismatches, first f32 %08x: got %04x want %04x\n", s[i].what,
              (unsigned long long)s[i].mismatches, s[i].first_bad, s[i].got, s[i].want);
    bad += s[i].mismatches;
  }
  assert_int_equal(bad, 0);
}

static int check_scalar_vs_oracle(struct sweep *s, const float *src, uint16_t *ref,
                                  uint16_t *out, size_t n, uint32_t first) {
  for (size_t i = 0; i < n; i++) {
    uint32_t b = first + (uint32_t)i;
    uint16_t want = oracle_bf16(b);
    if (ref[i] != want) sweep_note(s, b, ref[i], want, "scalar vs oracle");
  }
  return 0;
}

static const char *const simd_paths[] = {"avx512", "avx2"};

static int check_simd_vs_scalar(struct sweep *s, const float *src, uint16_t *ref, uint16_t *out,
                                size_t n, uint32_t first) {
  for (size_t p = 0; p < sizeof simd_paths / sizeof simd_paths[0]; p++) {
    bf16_array_fn *fn = bf16_array_path(simd_paths[p]);
    if (!fn) continue;
    fn(out, src, n);
    for (size_t i = 0; i < n; i++)
      if (out[i] != ref[i]) sweep_note(s, first + (uint32_t)i, out[i], ref[i], simd_paths[p]);
  }
  /* And whatever the dispatcher picks. */
  bf16_from_f32_array(out, src, n);
  for (size_t i = 0; i < n; i++)
    if (out[i] != ref[i]) sweep_note(s, first + (uint32_t)i, out[i], ref[i], "dispatched");
  return 0;
}

static void test_exhaustive_scalar_vs_oracle(void **state) { sweep_all(check_scalar_vs_oracle); }

static void test_exhaustive_simd_vs_scalar(void **state) {
  int have = 0;
  for (size_t p = 0; p < sizeof simd_paths / sizeof simd_paths[0]; p++)
    if (bf16_array_path(simd_paths[p])) {
      fprintf(stderr, "checking SIMD path %s\n", simd_paths[p]);
      have++;
    }
  fprintf(stderr, "dispatcher uses %s\n", bf16_array_impl());
  if (have == 0) fprintf(stderr, "no SIMD path on this CPU; checking the dispatcher only\n");
  sweep_all(check_simd_vs_scalar);
}

/* ---- named special cases, against values worked out by hand ---- */

static const struct {
  uint32_t in;
  uint16_t want;
  const char *why;
} specials[] = {
    {0x00000000, 0x0000, "+0"},
    {0x80000000, 0x8000, "-0"},
    {0x7f800000, 0x7f80, "+Inf"},
    {0xff800000, 0xff80, "-Inf"},
    {0x7fc00000, 0x7fc0, "default quiet NaN"},
    {0xffc00000, 0xffc0, "negative quiet NaN"},
    {0x7f800001, 0x7fc0, "signalling NaN, payload only in dropped bits"},
    {0x7fa00000, 0x7fe0, "signalling NaN with high payload: quieted, payload kept"},
    {0xff812345, 0xffc1, "negative signalling NaN"},
    {0x7fffffff, 0x7fff, "all-ones NaN (would overflow the exponent if rounded)"},
    {0x3f800000, 0x3f80, "1.0 exact"},
    {0x3f808000, 0x3f80, "1 + 2^-8: tie, even stays"},
    {0x3f818000, 0x3f82, "1 + 3*2^-8: tie, odd rounds up"},
    {0x3f808001, 0x3f81, "just above a tie"},
    {0x3f807fff, 0x3f80, "just below a tie"},
    {0x7f7f0000, 0x7f7f, "largest finite bf16"},
    {0x7f7f7fff, 0x7f7f, "FLT_MAX region, below half-way to 2^128"},
    {0x7f7f8000, 0x7f80, "half-way to 2^128: ties to even = Inf"},
    {0x7f7fffff, 0x7f80, "FLT_MAX rounds to Inf"},
    {0xff7fffff, 0xff80, "-FLT_MAX rounds to -Inf"},
    {0x00000001, 0x0000, "smallest subnormal rounds to 0"},
    {0x00008000, 0x0000, "subnormal tie at half the smallest bf16 subnormal: even 0"},
    {0x00008001, 0x0001, "just above: smallest bf16 subnormal"},
    {0x00018000, 0x0002, "subnormal tie, odd rounds up"},
    {0x00010000, 0x0001, "smallest bf16 subnormal exact"},
    {0x807fffff, 0x8080, "largest negative subnormal rounds to -FLT_MIN"},
    {0x007f8000, 0x0080, "subnormal tie up into the normals"},
};

static void test_special_cases(void **state) {
  size_t n = sizeof specials / sizeof specials[0];
  float src[64];
  uint16_t out[64];
  assert_true(n <= 64);
  for (size_t i = 0; i < n; i++) {
    if (bf16_from_bits(specials[i].in) != specials[i].want ||
        oracle_bf16(specials[i].in) != specials[i].want)
      fprintf(stderr, "special %08x (%s): scalar %04x oracle %04x want %04x\n", specials[i].in,
              specials[i].why, bf16_from_bits(specials[i].in), oracle_bf16(specials[i].in),
              specials[i].want);
    assert_int_equal(bf16_from_bits(specials[i].in), specials[i].want);
    assert_int_equal(oracle_bf16(specials[i].in), specials[i].want);
    src[i] = f32_of(specials[i].in);
  }
  /* Repeat the table so that the SIMD paths see it in full vectors too. */
  for (size_t i = n; i < 64; i++) src[i] = src[i % n];
  const char *paths[] = {"avx512", "avx2", "scalar"};
  for (size_t p = 0; p < 3; p++) {
    bf16_array_fn *fn = bf16_array_path(paths[p]);
    if (!fn) continue;
    fn(out, src, 64);
    for (size_t i = 0; i < 64; i++) assert_int_equal(out[i], specials[i % n].want);
  }
  bf16_from_f32_array(out, src, 64);
  for (size_t i = 0; i < 64; i++) assert_int_equal(out[i], specials[i % n].want);
}

/* Lengths that are not multiples of the vector width, and unaligned starts:
 * the tails must be converted and nothing past n written. */
static void test_tails_and_alignment(void **state) {
  float src[140];
  uint16_t out[140], want[140];
  for (int i = 0; i < 140; i++) src[i] = f32_of(0x3f800000u + (uint32_t)i * 0x9e3779u);
  const char *paths[] = {"avx512", "avx2", "scalar"};
  for (size_t p = 0; p < 3; p++) {
    bf16_array_fn *fn = bf16_array_path(paths[p]);
    if (!fn) continue;
    for (size_t off = 0; off < 4; off++)
      for (size_t n = 0; n + off + 1 < 140; n++) {
        for (size_t i = 0; i < 140; i++) out[i] = want[i] = 0xabcd;
        for (size_t i = 0; i < n; i++) want[off + i] = bf16_from_f32(src[off + i]);
        fn(out + off, src + off, n);
        assert_memory_equal(out, want, sizeof out);
      }
  }
}

static void test_impl_name(void **state) {
  const char *impl = bf16_array_impl();
  assert_non_null(bf16_array_path(impl));
  assert_non_null(bf16_array_path("scalar"));
  assert_null(bf16_array_path("no-such-path"));
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    assert_string_equal(impl, "avx512");
  else if (__builtin_cpu_supports("avx2"))
    assert_string_equal(impl, "avx2");
  else
    assert_string_equal(impl, "scalar");
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_special_cases),
      cmocka_unit_test(test_tails_and_alignment),
      cmocka_unit_test(test_impl_name),
      cmocka_unit_test(test_exhaustive_simd_vs_scalar),
      cmocka_unit_test(test_exhaustive_scalar_vs_oracle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
