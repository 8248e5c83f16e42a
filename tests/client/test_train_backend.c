/*
 * test_train_backend.c -- every compute backend of bfeed-train against a
 * float64 reference computed here.
 *
 * For each backend this machine can run, each product (A·B, A·Bᵀ, Aᵀ·B),
 * overwrite and accumulate, and shapes that are and are not multiples of
 * the vector widths (16 floats, 32 bf16):
 *   - bf16: within 1e-5 of float64 on the same bf16 operands (only the
 *     float32 sums may round), and within 1e-2 of float64 on the float32
 *     operands before the cast (what bf16 costs a user);
 *   - f32: within 1e-5 of float64;
 *   - never NaN, and nothing written past the end of C.
 * Errors are relative to sum_k |A(i,k)·B(k,j)|, which cancellation cannot
 * shrink to zero.
 *
 * Run with the argument "onednn-refuses" (and ONEDNN_MAX_CPU_ISA=AVX2 in
 * the environment) it checks instead that oneDNN's missing bf16 support on
 * a CPU without AVX-512 gives a clear message and the ref fallback.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "splitmix.h"

#include "backend.h"
#include "bf16.h"

#define GUARD 64
#define CANARY 12345.5f

typedef struct shape {
  size_t m, n, k;
} shape;

static const shape shapes[] = {{1, 1, 1},    {3, 5, 7},      {4, 64, 32},   {17, 33, 15}, {64, 8, 256},
                               {31, 65, 129}, {100, 3, 1000}, {5, 130, 2},   {64, 256, 3072 / 8},
                               {7, 16, 31},  {1, 200, 65},   {33, 1, 47},   {4, 5, 0}};

static uint64_t rng_next(uint64_t *s) { return splitmix64_next(s); }

static float uniform(uint64_t *s) { return (float)((rng_next(s) >> 40) * (2.0 / 16777216.0) - 1.0); }

/* A(i,k) and B(k,j) as stored for op, the way the product reads them. */
static double elem_a(backend_op op, const double *a, size_t m, size_t k, size_t i, size_t p) {
  return op == BACKEND_TN ? a[p * m + i] : a[i * k + p];
}
static double elem_b(backend_op op, const double *b, size_t n, size_t k, size_t p, size_t j) {
  return op == BACKEND_NT ? b[j * k + p] : b[p * n + j];
}

typedef struct ref_result {
  double *c;   /* the exact product (+ C0 when accumulating) */
  double *mag; /* sum_k |A(i,k)·B(k,j)| (+ |C0|) */
} ref_result;

static ref_result reference(backend_op op, const shape *s, const double *a, const double *b, const float *c0) {
  ref_result r = {calloc(s->m * s->n + 1, sizeof(double)), calloc(s->m * s->n + 1, sizeof(double))};
  for (size_t i = 0; i < s->m; i++)
    for (size_t j = 0; j < s->n; j++) {
      double sum = c0 ? c0[i * s->n + j] : 0, mag = c0 ? fabs(c0[i * s->n + j]) : 0;
      for (size_t p = 0; p < s->k; p++) {
        double t = elem_a(op, a, s->m, s->k, i, p) * elem_b(op, b, s->n, s->k, p, j);
        sum += t;
        mag += fabs(t);
      }
      r.c[i * s->n + j] = sum;
      r.mag[i * s->n + j] = mag;
    }
  return r;
}

/* Largest |c - ref| / (mag + tiny), failing on NaN or a touched canary. */
static double worst_error(const float *c, const ref_result *r, size_t count) {
  double worst = 0;
  for (size_t i = 0; i < count; i++) {
    if (isnan(c[i])) fail_msg("NaN at element %zu", i);
    double e = fabs(c[i] - r->c[i]) / (r->mag[i] + 1e-30);
    if (e > worst) worst = e;
  }
  for (size_t i = count; i < count + GUARD; i++)
    if (c[i] != CANARY) fail_msg("element %zu past the end of C was overwritten", i - count);
  return worst;
}

static void ref_free(ref_result *r) {
  free(r->c);
  free(r->mag);
}

/* One backend, one op, one shape, one accumulate mode, both precisions. */
static void check_case(backend *be, backend_op op, const shape *s, int accumulate, uint64_t seed) {
  size_t na = s->m * s->k, nb = s->k * s->n, nc = s->m * s->n;
  float *fa = malloc((na + 1) * sizeof *fa), *fb = malloc((nb + 1) * sizeof *fb);
  float *c0 = malloc((nc + 1) * sizeof *c0), *c = malloc((nc + GUARD) * sizeof *c);
  uint16_t *ha = malloc((na + 1) * sizeof *ha), *hb = malloc((nb + 1) * sizeof *hb);
  double *da = malloc((na + 1) * sizeof *da), *db = malloc((nb + 1) * sizeof *db);
  double *ra = malloc((na + 1) * sizeof *ra), *rb = malloc((nb + 1) * sizeof *rb);
  assert_non_null(fa), assert_non_null(fb), assert_non_null(c0), assert_non_null(c);
  assert_non_null(ha), assert_non_null(hb), assert_non_null(da), assert_non_null(db);
  assert_non_null(ra), assert_non_null(rb);
  uint64_t st = seed;
  for (size_t i = 0; i < na; i++) fa[i] = uniform(&st), ha[i] = bf16_from_f32(fa[i]), da[i] = fa[i],
                                  ra[i] = bf16_to_f32(ha[i]);
  for (size_t i = 0; i < nb; i++) fb[i] = uniform(&st), hb[i] = bf16_from_f32(fb[i]), db[i] = fb[i],
                                  rb[i] = bf16_to_f32(hb[i]);
  for (size_t i = 0; i < nc; i++) c0[i] = uniform(&st);
  const float *pre = accumulate ? c0 : NULL;
  const char *opname[] = {"NN", "NT", "TN"};

  /* bf16 operands */
  for (size_t i = 0; i < nc + GUARD; i++) c[i] = i < nc ? (accumulate ? c0[i] : NAN) : CANARY;
  if (be->mm_bf16(be, op, s->m, s->n, s->k, ha, hb, c, accumulate) < 0) fail_msg("%s: %s", be->name, be->err);
  ref_result exact = reference(op, s, ra, rb, pre), user = reference(op, s, da, db, pre);
  double e_exact = worst_error(c, &exact, nc), e_user = worst_error(c, &user, nc);
  if (e_exact > 1e-5 || e_user > 1e-2)
    fail_msg("%s bf16 %s %zux%zux%zu acc=%d: error %.3g vs the bf16 operands, %.3g vs the f32 ones", be->name,
             opname[op], s->m, s->n, s->k, accumulate, e_exact, e_user);
  ref_free(&exact);

  /* f32 operands */
  for (size_t i = 0; i < nc + GUARD; i++) c[i] = i < nc ? (accumulate ? c0[i] : NAN) : CANARY;
  if (be->mm_f32(be, op, s->m, s->n, s->k, fa, fb, c, accumulate) < 0) fail_msg("%s: %s", be->name, be->err);
  double e_f32 = worst_error(c, &user, nc);
  if (e_f32 > 1e-5)
    fail_msg("%s f32 %s %zux%zux%zu acc=%d: error %.3g", be->name, opname[op], s->m, s->n, s->k, accumulate, e_f32);
  ref_free(&user);
  free(fa), free(fb), free(c0), free(c), free(ha), free(hb), free(da), free(db), free(ra), free(rb);
}

static void check_backend(const char *name) {
  backend be;
  char why[256];
  if (backend_open(&be, name, 1, why, sizeof why) < 0) fail_msg("%s: %s", name, why);
  uint64_t seed = 1;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int op = 0; op < 3; op++)
      for (int acc = 0; acc < 2; acc++) check_case(&be, (backend_op)op, &shapes[si], acc, seed++);
  backend_close(&be);
}

static void test_ref(void **state) { check_backend("ref"); }

/* Present exactly when the CPU says so: the test fails if a CPU with the
 * feature cannot open it, and skips (saying why) on one without. */
static void test_avx512bf16(void **state) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) {
    backend be;
    char why[256];
    assert_int_equal(backend_open(&be, "avx512bf16", 1, why, sizeof why), -1);
    assert_non_null(strstr(why, "AVX512_BF16"));
    print_message("avx512bf16: not on this CPU (%s)\n", why);
    skip();
  }
  check_backend("avx512bf16");
}

static void test_onednn(void **state) {
#ifdef BFEED_HAVE_ONEDNN
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
    print_message("onednn: no AVX-512 on this CPU, no bf16 matmul to test\n");
    skip();
  }
  check_backend("onednn");
#else
  print_message("onednn: not built in (libdnnl-dev missing)\n");
  skip();
#endif
}

/* The products of one training step reuse a few shapes; a backend that
 * caches per shape must not mix up the accumulate flag or the op. */
static void test_repeated_shapes(void **state) {
  for (int bi = 0; backend_names[bi]; bi++) {
    backend be;
    char why[256];
    if (backend_open(&be, backend_names[bi], 1, why, sizeof why) < 0) continue;
    shape s = {9, 20, 40};
    for (int round = 0; round < 3; round++)
      for (int op = 0; op < 3; op++)
        for (int acc = 0; acc < 2; acc++) check_case(&be, (backend_op)op, &s, acc, 1000 + round);
    backend_close(&be);
  }
}

static void test_choice(void **state) {
  backend be;
  char note[256];
  assert_int_equal(backend_open_or_ref(&be, "auto", 1, note, sizeof note), 0);
  __builtin_cpu_init();
  assert_string_equal(be.name, __builtin_cpu_supports("avx512bf16") ? "avx512bf16" : "ref");
  backend_close(&be);
  assert_int_equal(backend_open_or_ref(&be, "cuda", 1, note, sizeof note), -1);
  assert_non_null(strstr(note, "unknown backend 'cuda'"));
#ifndef BFEED_HAVE_ONEDNN
  assert_int_equal(backend_open_or_ref(&be, "onednn", 1, note, sizeof note), 0);
  assert_string_equal(be.name, "ref");
  assert_non_null(strstr(note, "without oneDNN"));
  backend_close(&be);
#endif
}

/* Under ONEDNN_MAX_CPU_ISA=AVX2 oneDNN behaves as on a CPU without AVX-512. */
static int onednn_refuses(void) {
#ifdef BFEED_HAVE_ONEDNN
  backend be;
  char why[512];
  if (backend_open(&be, "onednn", 1, why, sizeof why) == 0) {
    fprintf(stderr, "FAIL: oneDNN opened for bf16 although limited to AVX2\n");
    return 1;
  }
  if (!strstr(why, "no bf16 matmul on this CPU") || !strstr(why, "AVX-512")) {
    fprintf(stderr, "FAIL: unclear message: %s\n", why);
    return 1;
  }
  printf("message: %s\n", why);
  /* f32 still works there, and the command line falls back to ref. */
  if (backend_open(&be, "onednn", 0, why, sizeof why) < 0) return fprintf(stderr, "FAIL: f32: %s\n", why), 1;
  backend_close(&be);
  if (backend_open_or_ref(&be, "onednn", 1, why, sizeof why) < 0 || strcmp(be.name, "ref") != 0 ||
      !strstr(why, "using ref"))
    return fprintf(stderr, "FAIL: no fallback to ref: %s\n", why), 1;
  backend_close(&be);
  printf("1 passed, 0 failed\n");
  return 0;
#else
  printf("oneDNN not built in: nothing to check\n");
  return 0;
#endif
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "onednn-refuses") == 0) return onednn_refuses();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ref),       cmocka_unit_test(test_avx512bf16),      cmocka_unit_test(test_onednn),
      cmocka_unit_test(test_choice),    cmocka_unit_test(test_repeated_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
