/*
 * test_train_mlp.c -- the MLP's loss and gradients against a float64 model
 * written here, and its memory against the plan.
 *
 * The float64 model is an independent implementation of the same network:
 * plain loops, no backend, no ops.c. In f32 the MLP must match it to float32
 * accuracy. In bf16 the model here rounds where mixed precision rounds
 * (inputs, working weights and biases, every activation, the logits, each
 * activation gradient) and the MLP must match that closely, while the pure
 * float64 answer is only approached to bf16 accuracy -- which also shows
 * that the bf16 path really rounds. Every backend this machine can run is
 * checked, and --accumulate's arithmetic: two micro-batches, averaged, give
 * the gradient of the batch they make together.
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

#include "backend.h"
#include "bf16.h"
#include "memplan.h"
#include "mlp.h"
#include "optim.h"

#define ROWS 13
#define CLASSES 5

static const size_t dims[] = {37, 24, 19, CLASSES}; /* two hidden layers, ragged widths */
#define NLAYERS 3

static uint64_t rng_next(uint64_t *s) { return splitmix64_next(s); }
static double uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0; }

static double rnd(double x, int bf16) { return bf16 ? bf16_to_f32(bf16_from_f32((float)x)) : x; }

/* The float64 model's gradients (and loss) for the MLP's current master
 * weights; round = 1 emulates bf16 mixed precision. */
typedef struct f64_grads {
  double loss;
  double *gw[NLAYERS], *gb[NLAYERS];
} f64_grads;

static void f64_model(const mlp *m, const float *x, const int32_t *labels, size_t n, int round, f64_grads *out) {
  double *a[NLAYERS + 1];
  a[0] = malloc(n * dims[0] * sizeof(double));
  for (size_t i = 0; i < n * dims[0]; i++) a[0][i] = rnd(x[i], round);
  for (int l = 0; l < NLAYERS; l++) {
    const mlp_layer *y = &m->layer[l];
    a[l + 1] = malloc(n * y->out * sizeof(double));
    for (size_t r = 0; r < n; r++)
      for (size_t o = 0; o < y->out; o++) {
        double s = rnd(y->b[o], round);
        for (size_t i = 0; i < y->in; i++) s += a[l][r * y->in + i] * rnd(y->w[o * y->in + i], round);
        /* hidden: ReLU then bf16; logits: bf16, then float for the softmax */
        a[l + 1][r * y->out + o] = rnd(l < NLAYERS - 1 && s < 0 ? 0 : s, round);
      }
  }
  /* softmax cross-entropy, gradient of the mean loss */
  double *g = malloc(n * CLASSES * sizeof(double));
  out->loss = 0;
  for (size_t r = 0; r < n; r++) {
    double *lg = a[NLAYERS] + r * CLASSES, mx = lg[0], sum = 0;
    for (int c = 1; c < CLASSES; c++) mx = fmax(mx, lg[c]);
    for (int c = 0; c < CLASSES; c++) sum += exp(lg[c] - mx);
    out->loss += log(sum) + mx - lg[labels[r]];
    for (int c = 0; c < CLASSES; c++) g[r * CLASSES + c] = rnd((exp(lg[c] - mx) / sum - (c == labels[r])) / n, round);
  }
  for (int l = NLAYERS - 1; l >= 0; l--) {
    const mlp_layer *y = &m->layer[l];
    out->gw[l] = calloc(y->out * y->in, sizeof(double));
    out->gb[l] = calloc(y->out, sizeof(double));
    for (size_t r = 0; r < n; r++)
      for (size_t o = 0; o < y->out; o++) {
        out->gb[l][o] += g[r * y->out + o];
        for (size_t i = 0; i < y->in; i++) out->gw[l][o * y->in + i] += g[r * y->out + o] * a[l][r * y->in + i];
      }
    if (l == 0) break;
    double *gp = calloc(n * y->in, sizeof(double));
    for (size_t r = 0; r < n; r++)
      for (size_t i = 0; i < y->in; i++) {
        double s = 0;
        for (size_t o = 0; o < y->out; o++) s += g[r * y->out + o] * rnd(y->w[o * y->in + i], round);
        gp[r * y->in + i] = rnd(a[l][r * y->in + i] > 0 ? s : 0, round); /* ReLU's mask */
      }
    free(g);
    g = gp;
  }
  free(g);
  for (int l = 0; l <= NLAYERS; l++) free(a[l]);
}

static void f64_free(f64_grads *g) {
  for (int l = 0; l < NLAYERS; l++) free(g->gw[l]), free(g->gb[l]);
}

/* max over layers of |g_mlp - g_ref| / |g_ref| (Frobenius). */
static double grad_error(const mlp *m, const f64_grads *ref) {
  double worst = 0;
  for (int l = 0; l < NLAYERS; l++) {
    const mlp_layer *y = &m->layer[l];
    double e = 0, s = 0;
    for (size_t i = 0; i < y->out * y->in; i++) {
      if (isnan(y->gw[i])) fail_msg("NaN in layer %d's weight gradient", l);
      e += (y->gw[i] - ref->gw[l][i]) * (y->gw[i] - ref->gw[l][i]), s += ref->gw[l][i] * ref->gw[l][i];
    }
    for (size_t o = 0; o < y->out; o++)
      e += (y->gb[o] - ref->gb[l][o]) * (y->gb[o] - ref->gb[l][o]), s += ref->gb[l][o] * ref->gb[l][o];
    worst = fmax(worst, sqrt(e / s));
  }
  return worst;
}

static memplan_model config(ops_dtype p, size_t batch) {
  memplan_model c = {.nlayers = NLAYERS, .precision = p, .batch = batch};
  for (int l = 0; l <= NLAYERS; l++) c.dims[l] = dims[l];
  return c;
}

/* The inputs as the MLP takes them: bf16 in bf16 precision. */
static void load_input(mlp *m, const float *x, size_t n) {
  if (m->dt == OPS_BF16) bf16_from_f32_array(mlp_input(m), x, n * dims[0]);
  else memcpy(mlp_input(m), x, n * dims[0] * sizeof(float));
}

static void make_batch(float *x, int32_t *labels, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n * dims[0]; i++) x[i] = (float)(2 * uniform(&seed));
  for (size_t r = 0; r < n; r++) labels[r] = (int32_t)(rng_next(&seed) % CLASSES);
}

static void check_precision(const char *backend_name, ops_dtype p) {
  backend be;
  char why[256];
  if (backend_open(&be, backend_name, p == OPS_BF16, why, sizeof why) < 0) {
    print_message("%s: %s\n", backend_name, why);
    return;
  }
  memplan_model cfg = config(p, ROWS);
  mlp m;
  char err[256];
  assert_int_equal(mlp_init(&m, &cfg, 3, err, sizeof err), 0);
  /* Nonzero biases, so their path is checked too. */
  uint64_t s = 99;
  for (int l = 0; l < NLAYERS; l++)
    for (size_t o = 0; o < m.layer[l].out; o++) m.layer[l].b[o] = (float)(0.2 * uniform(&s));
  mlp_sync_working(&m);
  float x[ROWS * 37];
  int32_t labels[ROWS];
  make_batch(x, labels, ROWS, 5);
  load_input(&m, x, ROWS);
  double loss = 0; /* fail_msg does not return, but clang cannot see that */
  if (mlp_forward(&m, &be, ROWS) < 0 || mlp_backward(&m, &be, labels, ROWS, 1.0f / ROWS, 0, &loss) < 0)
    fail_msg("%s: %s", backend_name, be.err);

  f64_grads exact, emulated;
  f64_model(&m, x, labels, ROWS, 0, &exact);
  f64_model(&m, x, labels, ROWS, 1, &emulated);
  double e_exact = grad_error(&m, &exact), e_emul = grad_error(&m, &emulated);
  double l_exact = fabs(loss - exact.loss) / exact.loss, l_emul = fabs(loss - emulated.loss) / emulated.loss;
  print_message("%s %s: loss error %.2g (exact) %.2g (bf16 model); gradient error %.2g (exact) %.2g (bf16 model)\n",
                backend_name, p == OPS_BF16 ? "bf16" : "f32", l_exact, l_emul, e_exact, e_emul);
  if (p == OPS_F32) {
    assert_true(l_exact < 1e-5);
    assert_true(e_exact < 1e-4);
  } else {
    /* Only float32 sums in a different order separate the two. */
    assert_true(l_emul < 1e-5);
    assert_true(e_emul < 1e-3);
    /* bf16 costs accuracy, but not much, and it does cost some. */
    assert_true(e_exact < 5e-2);
    assert_true(e_exact > 1e-4);
  }
  f64_free(&exact);
  f64_free(&emulated);
  mlp_free(&m);
  backend_close(&be);
}

static void test_gradients(void **state) {
  for (int i = 0; backend_names[i]; i++) {
    check_precision(backend_names[i], OPS_F32);
    check_precision(backend_names[i], OPS_BF16);
  }
}

/* Two micro-batches accumulated and averaged = one batch of both. */
static void test_accumulation(void **state) {
  backend be;
  char why[256], err[256];
  assert_int_equal(backend_open(&be, "ref", 0, why, sizeof why), 0);
  memplan_model cfg = config(OPS_F32, 2 * ROWS);
  mlp whole, parts;
  assert_int_equal(mlp_init(&whole, &cfg, 11, err, sizeof err), 0);
  assert_int_equal(mlp_init(&parts, &cfg, 11, err, sizeof err), 0);
  float x[2 * ROWS * 37];
  int32_t labels[2 * ROWS];
  make_batch(x, labels, 2 * ROWS, 8);
  double loss, l1, l2;
  load_input(&whole, x, 2 * ROWS);
  assert_int_equal(mlp_forward(&whole, &be, 2 * ROWS), 0);
  assert_int_equal(mlp_backward(&whole, &be, labels, 2 * ROWS, 1.0f / (2 * ROWS), 0, &loss), 0);
  for (int half = 0; half < 2; half++) {
    load_input(&parts, x + half * ROWS * 37, ROWS);
    assert_int_equal(mlp_forward(&parts, &be, ROWS), 0);
    assert_int_equal(mlp_backward(&parts, &be, labels + half * ROWS, ROWS, 1.0f / ROWS, half, half ? &l2 : &l1), 0);
  }
  mlp_scale_grads(&parts, 0.5f);
  assert_float_equal(l1 + l2, loss, 1e-4 * loss);
  for (int l = 0; l < NLAYERS; l++) {
    for (size_t i = 0; i < whole.layer[l].in * whole.layer[l].out; i++)
      assert_float_equal(parts.layer[l].gw[i], whole.layer[l].gw[i], 1e-6);
    for (size_t o = 0; o < whole.layer[l].out; o++)
      assert_float_equal(parts.layer[l].gb[o], whole.layer[l].gb[o], 1e-6);
  }
  mlp_free(&whole);
  mlp_free(&parts);
  backend_close(&be);
}

/* Working copies are the master weights rounded to bf16, refreshed on sync;
 * the seed alone decides the initialization. */
static void test_working_copies(void **state) {
  memplan_model cfg = config(OPS_BF16, 4);
  mlp a, b;
  char err[256];
  assert_int_equal(mlp_init(&a, &cfg, 21, err, sizeof err), 0);
  assert_int_equal(mlp_init(&b, &cfg, 21, err, sizeof err), 0);
  assert_memory_equal(a.layer[0].w, b.layer[0].w, dims[0] * dims[1] * sizeof(float));
  a.layer[1].w[7] = 0.123456789f;
  mlp_sync_working(&a);
  for (int l = 0; l < NLAYERS; l++)
    for (size_t i = 0; i < a.layer[l].in * a.layer[l].out; i++)
      assert_int_equal(a.layer[l].w16[i], bf16_from_f32(a.layer[l].w[i]));
  assert_int_equal(a.layer[1].w16[7], bf16_from_f32(0.123456789f));
  mlp_free(&a);
  mlp_free(&b);
}

/* The table a user sees is what is allocated, and a hand count agrees. */
static void test_memory_plan(void **state) {
  optim_kind kinds[] = {OPTIM_SGD, OPTIM_ADAM, OPTIM_ADAFACTOR};
  for (int p = 0; p < 2; p++)
    for (int k = 0; k < 3; k++) {
      memplan_model cfg = config(p ? OPS_BF16 : OPS_F32, 7);
      optim_hparams hp;
      optim_hparams_default(&hp, kinds[k]);
      mlp m;
      optim o;
      char err[256];
      assert_int_equal(mlp_init(&m, &cfg, 1, err, sizeof err), 0);
      optim_init(&o, kinds[k], &hp);
      for (int l = 0; l < NLAYERS; l++) {
        assert_int_equal(optim_add(&o, m.layer[l].w, m.layer[l].gw, m.layer[l].out, m.layer[l].in), 0);
        assert_int_equal(optim_add(&o, m.layer[l].b, m.layer[l].gb, 1, m.layer[l].out), 0);
      }
      memplan_bytes plan = memplan_compute(&cfg, kinds[k], &hp);
      assert_int_equal(plan.weights, m.bytes.weights);
      assert_int_equal(plan.working, m.bytes.working);
      assert_int_equal(plan.gradients, m.bytes.gradients);
      assert_int_equal(plan.activations, m.bytes.activations);
      assert_int_equal(plan.optimizer, o.state_bytes);
      optim_free(&o);
      mlp_free(&m);
    }

  /* 10 -> 4 -> 3 at batch 5, bf16: 59 parameters; per sample (10 + 4)
   * bf16 layer inputs, 4 float32 product outputs and 4 bf16 gradients,
   * 3 float32 logits = 28 + 16 + 8 + 12 = 64 bytes. */
  memplan_model c = {.nlayers = 2, .dims = {10, 4, 3}, .precision = OPS_BF16, .batch = 5};
  optim_hparams hp;
  optim_hparams_default(&hp, OPTIM_ADAFACTOR);
  memplan_bytes b = memplan_compute(&c, OPTIM_ADAFACTOR, &hp);
  assert_int_equal(memplan_params(&c), 59);
  assert_int_equal(b.weights, 236);
  assert_int_equal(b.working, 118);
  assert_int_equal(b.gradients, 236);
  assert_int_equal(b.activations, 5 * 64);
  /* factored matrices, full bias vectors, a scratch row of the widest (10) */
  assert_int_equal(b.optimizer, 4 * ((4 + 10) + 4 + (3 + 4) + 3 + 10));
  uint64_t fixed = 236 + 118 + 236 + 4 * 38;
  assert_int_equal(memplan_max_batch(&c, OPTIM_ADAFACTOR, &hp, fixed + 64 * 100 + 63, 65536), 100);
  assert_int_equal(memplan_max_batch(&c, OPTIM_ADAFACTOR, &hp, fixed + 64 * 100, 50), 50);
  assert_int_equal(memplan_max_batch(&c, OPTIM_ADAFACTOR, &hp, fixed - 1, 65536), 0);

  char err[128];
  c.dims[1] = 0;
  assert_int_equal(memplan_check(&c, err, sizeof err), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gradients),
      cmocka_unit_test(test_accumulation),
      cmocka_unit_test(test_working_copies),
      cmocka_unit_test(test_memory_plan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
