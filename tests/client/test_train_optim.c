/*
 * test_train_optim.c -- bfeed-train's optimizers on problems whose answer
 * is known without them.
 *
 *   - Least squares: min over (W, b) of 1/(2n) sum_i |W x_i + b - y_i|^2
 *     with y_i = W* x_i + b* and the x_i spanning their space, so (W*, b*)
 *     is the unique minimum. Each optimizer must get there from W = 0, for
 *     a matrix (Adafactor factors it) and a vector (it does not).
 *   - First steps in closed form: SGD with momentum; Adam's first step is
 *     lr * sign(g); Adafactor's first step on a gradient whose squares are
 *     rank one (so the factored estimate is exact) is max(eps2, RMS(w)) *
 *     min(lr, 1) * sign(g); and when the update is clipped its RMS is
 *     exactly alpha * d.
 *   - State sizes: the floats each optimizer keeps per parameter.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "splitmix.h"

#include "optim.h"

#define N 64 /* samples */
#define D 8  /* inputs */
#define R 5  /* outputs */

static uint64_t rng_next(uint64_t *s) { return splitmix64_next(s); }

static double uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0; }

typedef struct lsq {
  double x[N][D], y[N][R];
  double w_star[R][D], b_star[R];
  float w[R * D], b[R], gw[R * D], gb[R];
} lsq;

static void lsq_init(lsq *p, uint64_t seed) {
  memset(p, 0, sizeof *p);
  for (int r = 0; r < R; r++) {
    for (int d = 0; d < D; d++) p->w_star[r][d] = uniform(&seed);
    p->b_star[r] = uniform(&seed);
  }
  for (int i = 0; i < N; i++) {
    for (int d = 0; d < D; d++) p->x[i][d] = uniform(&seed);
    for (int r = 0; r < R; r++) {
      double y = p->b_star[r];
      for (int d = 0; d < D; d++) y += p->w_star[r][d] * p->x[i][d];
      p->y[i][r] = y;
    }
  }
}

/* Gradient of 1/(2n) sum |W x + b - y|^2 at the current (w, b). */
static void lsq_grad(lsq *p) {
  double gw[R][D] = {{0}}, gb[R] = {0};
  for (int i = 0; i < N; i++)
    for (int r = 0; r < R; r++) {
      double e = p->b[r] - p->y[i][r];
      for (int d = 0; d < D; d++) e += p->w[r * D + d] * p->x[i][d];
      gb[r] += e / N;
      for (int d = 0; d < D; d++) gw[r][d] += e * p->x[i][d] / N;
    }
  for (int r = 0; r < R; r++) {
    p->gb[r] = (float)gb[r];
    for (int d = 0; d < D; d++) p->gw[r * D + d] = (float)gw[r][d];
  }
}

/* Relative distances of W and b from the minimum. */
static void lsq_distance(const lsq *p, double *dw, double *db) {
  double ew = 0, nw = 0, eb = 0, nb = 0;
  for (int r = 0; r < R; r++) {
    for (int d = 0; d < D; d++) {
      double e = p->w[r * D + d] - p->w_star[r][d];
      ew += e * e, nw += p->w_star[r][d] * p->w_star[r][d];
    }
    eb += (p->b[r] - p->b_star[r]) * (p->b[r] - p->b_star[r]), nb += p->b_star[r] * p->b_star[r];
  }
  *dw = sqrt(ew / nw), *db = sqrt(eb / nb);
}

static void converge(optim_kind kind, float lr, int steps, double tol) {
  lsq *p = malloc(sizeof *p);
  assert_non_null(p);
  lsq_init(p, 42);
  /* Adafactor's step is relative to the weights' RMS (floored at eps2):
   * from exact zeros it would crawl, so all start from a small nonzero W. */
  uint64_t s = 7;
  for (int i = 0; i < R * D; i++) p->w[i] = (float)(0.1 * uniform(&s));
  optim_hparams hp;
  optim_hparams_default(&hp, kind);
  hp.lr = lr;
  optim o;
  optim_init(&o, kind, &hp);
  assert_int_equal(optim_add(&o, p->w, p->gw, R, D), 0);
  assert_int_equal(optim_add(&o, p->b, p->gb, 1, R), 0);
  double dw0, db0, dw, db;
  lsq_distance(p, &dw0, &db0);
  for (int t = 0; t < steps; t++) {
    lsq_grad(p);
    optim_step(&o);
  }
  lsq_distance(p, &dw, &db);
  print_message("%s: |W-W*|/|W*| %.3g -> %.3g, |b-b*|/|b*| %.3g -> %.3g after %d steps\n", optim_name(kind), dw0,
                dw, db0, db, steps);
  if (!(dw < tol && db < tol))
    fail_msg("%s did not reach the minimum: distances %.3g (W), %.3g (b), wanted < %g", optim_name(kind), dw, db,
             tol);
  optim_free(&o);
  free(p);
}

static void test_sgd_converges(void **state) { converge(OPTIM_SGD, 0.1f, 2000, 1e-4); }
static void test_adam_converges(void **state) { converge(OPTIM_ADAM, 1e-2f, 4000, 1e-3); }
/* Adafactor's update is scale-free (clipped to RMS alpha), so it circles
 * the minimum at a distance that shrinks only with its step size; a lower
 * cap on the relative step gets closer, and the decay 1/sqrt(t) then
 * finishes the job. */
static void test_adafactor_converges(void **state) { converge(OPTIM_ADAFACTOR, 3e-3f, 10000, 1e-3); }

/* o: an optimizer of kind (with hp, or the defaults when hp is NULL) over
 * one rows x cols parameter w with gradient g, after its first step. The
 * caller frees it. */
static void one_param_step(optim *o, optim_kind kind, const optim_hparams *hp, float *w, float *g, int rows,
                           int cols) {
  optim_hparams def;
  if (!hp) {
    optim_hparams_default(&def, kind);
    hp = &def;
  }
  optim_init(o, kind, hp);
  assert_int_equal(optim_add(o, w, g, rows, cols), 0);
  optim_step(o);
}

/* Two SGD steps by hand: v1 = g1, w1 = w0 - lr g1; v2 = mu v1 + g2. */
static void test_sgd_steps(void **state) {
  float w[3] = {1, -2, 0.5f}, g[3] = {0.5f, 0.25f, -1};
  optim_hparams hp;
  optim_hparams_default(&hp, OPTIM_SGD);
  hp.lr = 0.5f, hp.momentum = 0.75f;
  optim o;
  one_param_step(&o, OPTIM_SGD, &hp, w, g, 1, 3);
  assert_float_equal(w[0], 0.75f, 1e-7);
  assert_float_equal(w[2], 1.0f, 1e-7);
  g[0] = 1;
  optim_step(&o); /* v = 0.75*0.5 + 1 = 1.375 */
  assert_float_equal(w[0], 0.75f - 0.5f * 1.375f, 1e-6);
  optim_free(&o);
}

static void test_adam_first_step(void **state) {
  float w[4] = {1, 2, 3, 4}, g[4] = {1e-3f, -5, 20, -1e-2f};
  optim o;
  one_param_step(&o, OPTIM_ADAM, NULL, w, g, 2, 2);
  /* m/(1-b1) = g and v/(1-b2) = g^2: the step is lr * g / (|g| + eps). */
  float want[4] = {1 - 1e-3f, 2 + 1e-3f, 3 - 1e-3f, 4 + 1e-3f};
  for (int i = 0; i < 4; i++) assert_float_equal(w[i], want[i], 1e-6);
  optim_free(&o);
}

static double rms(const float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
  return sqrt(s / n);
}

/* G = u v^T: G^2 is rank one, so R C / sum(R) is G^2 itself (up to eps1)
 * and U = sign(G), whose RMS is 1: no clipping. */
static void test_adafactor_first_step(void **state) {
  enum { ROWS = 3, COLS = 4 };
  float u[ROWS] = {0.5f, -2, 1e-3f}, v[COLS] = {1, -0.25f, 3, 0.125f};
  float w[ROWS * COLS], w0[ROWS * COLS], g[ROWS * COLS];
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) {
      w[r * COLS + c] = w0[r * COLS + c] = 0.1f * (float)(r * COLS + c) - 0.3f;
      g[r * COLS + c] = u[r] * v[c];
    }
  optim o;
  one_param_step(&o, OPTIM_ADAFACTOR, NULL, w, g, ROWS, COLS);
  assert_true(o.p[0].factored);
  double alpha = fmax(1e-3, rms(w0, ROWS * COLS)) * 1e-2; /* rho_1 = min(1e-2, 1/sqrt(1)) */
  for (int i = 0; i < ROWS * COLS; i++)
    assert_float_equal(w[i], w0[i] - alpha * (g[i] > 0 ? 1 : -1), 1e-6);
  optim_free(&o);

  /* Weights near zero: the step floors at eps2 * rho. */
  float z[2] = {0, 0}, gz[2] = {3, -4};
  one_param_step(&o, OPTIM_ADAFACTOR, NULL, z, gz, 1, 2);
  assert_false(o.p[0].factored);
  assert_float_equal(z[0], -1e-5f, 1e-10);
  assert_float_equal(z[1], 1e-5f, 1e-10);
  optim_free(&o);
}

/* G = diag(1, 1e-3): the factored estimate of G^2 at (1,1) is far too
 * small, U there is huge, and the clipped update has RMS exactly alpha. */
static void test_adafactor_clipping(void **state) {
  float w[4] = {1, 1, 1, 1}, g[4] = {1, 0, 0, 1e-3f};
  optim_hparams hp;
  optim_hparams_default(&hp, OPTIM_ADAFACTOR);
  optim o;
  one_param_step(&o, OPTIM_ADAFACTOR, &hp, w, g, 2, 2);
  float step[4];
  for (int i = 0; i < 4; i++) step[i] = 1 - w[i];
  double alpha = 1.0 * 1e-2;
  assert_float_equal(rms(step, 4) / alpha, hp.clip_d, 1e-4);
  /* Without clipping U(1,1) alone would be ~1000 times alpha. */
  assert_true(step[3] < 2 * alpha);
  optim_free(&o);
}

static void test_state_sizes(void **state) {
  optim_hparams hp;
  optim_hparams_default(&hp, OPTIM_SGD);
  assert_int_equal(optim_state_floats(OPTIM_SGD, &hp, 300, 200), 60000);
  hp.momentum = 0;
  assert_int_equal(optim_state_floats(OPTIM_SGD, &hp, 300, 200), 0);
  optim_hparams_default(&hp, OPTIM_ADAM);
  assert_int_equal(optim_state_floats(OPTIM_ADAM, &hp, 300, 200), 120000);
  optim_hparams_default(&hp, OPTIM_ADAFACTOR);
  assert_int_equal(optim_state_floats(OPTIM_ADAFACTOR, &hp, 300, 200), 500);
  assert_int_equal(optim_state_floats(OPTIM_ADAFACTOR, &hp, 1, 200), 200);
  float w[6] = {0}, g[6] = {0};
  optim o;
  optim_init(&o, OPTIM_ADAFACTOR, &hp);
  assert_int_equal(optim_add(&o, w, g, 2, 3), 0);
  assert_int_equal(optim_add(&o, w, g, 1, 6), 0);
  /* + its scratch row, as wide as the widest parameter */
  assert_int_equal(o.state_bytes, (5 + 6 + 6) * sizeof(float));
  optim_free(&o);
  optim_kind k;
  assert_int_equal(optim_parse("adafactor", &k), 0);
  assert_int_equal(k, OPTIM_ADAFACTOR);
  assert_int_equal(optim_parse("lamb", &k), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd_converges),       cmocka_unit_test(test_adam_converges),
      cmocka_unit_test(test_adafactor_converges), cmocka_unit_test(test_sgd_steps),
      cmocka_unit_test(test_adam_first_step),     cmocka_unit_test(test_adafactor_first_step),
      cmocka_unit_test(test_adafactor_clipping),  cmocka_unit_test(test_state_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
