/* mlp.c -- see mlp.h */
#include "mlp.h"

#include "splitmix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"

/* 64-byte aligned (the vector backends load whole cache lines), counted. */
static void *alloc(uint64_t bytes, uint64_t *counter) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p) *counter += bytes;
  return p;
}

/* splitmix64 (splitmix.h): enough for an initialization that only has to
 * be repeatable. */
void mlp_free(mlp *m) {
  for (int l = 0; l < MEMPLAN_MAX_LAYERS; l++) {
    mlp_layer *y = &m->layer[l];
    free(y->w), free(y->b), free(y->gw), free(y->gb), free(y->w16), free(y->b16);
    free(m->act[l]);
  }
  free(m->scratch), free(m->grad), free(m->logits);
  memset(m, 0, sizeof *m);
}

static int alloc_layer(mlp *m, mlp_layer *y, size_t in, size_t out) {
  uint64_t nw = (uint64_t)in * out;
  y->in = in, y->out = out;
  y->w = alloc(nw * 4, &m->bytes.weights), y->b = alloc(out * 4, &m->bytes.weights);
  y->gw = alloc(nw * 4, &m->bytes.gradients), y->gb = alloc(out * 4, &m->bytes.gradients);
  if (!y->w || !y->b || !y->gw || !y->gb) return -1;
  if (m->dt == OPS_BF16) {
    y->w16 = alloc(nw * 2, &m->bytes.working), y->b16 = alloc(out * 2, &m->bytes.working);
    if (!y->w16 || !y->b16) return -1;
  }
  memset(y->gw, 0, nw * 4);
  memset(y->gb, 0, out * 4);
  return 0;
}

int mlp_init(mlp *m, const memplan_model *cfg, uint64_t seed, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  if (memplan_check(cfg, err, errlen) < 0) return -1;
  m->cfg = *cfg;
  m->dt = cfg->precision;
  size_t es = ops_dtype_size(m->dt), batch = cfg->batch, wide = memplan_widest(cfg);
  uint64_t *act = &m->bytes.activations;
  for (int l = 0; l < cfg->nlayers; l++) {
    if (alloc_layer(m, &m->layer[l], cfg->dims[l], cfg->dims[l + 1]) < 0) goto oom;
    if (!(m->act[l] = alloc((uint64_t)batch * cfg->dims[l] * es, act))) goto oom;
  }
  m->scratch = alloc((uint64_t)batch * wide * 4, act);
  m->grad = alloc((uint64_t)batch * wide * es, act);
  m->logits = alloc((uint64_t)batch * cfg->dims[cfg->nlayers] * 4, act);
  if (!m->scratch || !m->grad || !m->logits) goto oom;

  /* He (Kaiming) uniform, the usual start for ReLU layers: variance 2/in
   * keeps activations from shrinking or growing with depth. */
  uint64_t s = seed ^ 0x6d6c702d696e6974ull;
  for (int l = 0; l < cfg->nlayers; l++) {
    mlp_layer *y = &m->layer[l];
    float bound = sqrtf(6.0f / (float)y->in);
    for (size_t i = 0; i < y->in * y->out; i++)
      y->w[i] = bound * (float)((splitmix64_next(&s) >> 40) * (2.0 / 16777216.0) - 1.0);
    memset(y->b, 0, y->out * 4);
  }
  mlp_sync_working(m);
  return 0;
oom:
  snprintf(err, errlen, "out of memory allocating the model (%zu inputs, batch %zu)", cfg->dims[0], batch);
  mlp_free(m);
  return -1;
}

void mlp_sync_working(mlp *m) {
  if (m->dt != OPS_BF16) return;
  for (int l = 0; l < m->cfg.nlayers; l++) {
    mlp_layer *y = &m->layer[l];
    bf16_from_f32_array(y->w16, y->w, y->in * y->out);
    bf16_from_f32_array(y->b16, y->b, y->out);
  }
}

/* C = op(A, B) in the model's precision: bf16 working copies or f32. */
static int product(mlp *m, backend *be, backend_op op, size_t rows, size_t cols, size_t k, const void *a,
                   const void *b, float *c, int accumulate) {
  if (m->dt == OPS_BF16) return be->mm_bf16(be, op, rows, cols, k, a, b, c, accumulate);
  return be->mm_f32(be, op, rows, cols, k, a, b, c, accumulate);
}

static const void *weights(const mlp *m, const mlp_layer *y) { return m->dt == OPS_BF16 ? (void *)y->w16 : y->w; }
static const void *bias(const mlp *m, const mlp_layer *y) { return m->dt == OPS_BF16 ? (void *)y->b16 : y->b; }

int mlp_forward(mlp *m, backend *be, size_t n) {
  int last = m->cfg.nlayers - 1;
  for (int l = 0; l <= last; l++) {
    mlp_layer *y = &m->layer[l];
    if (product(m, be, BACKEND_NT, n, y->out, y->in, m->act[l], weights(m, y), m->scratch, 0) < 0) return -1;
    if (l < last) {
      ops_bias_act(m->act[l + 1], m->dt, m->scratch, bias(m, y), m->dt, n, y->out, 1);
      continue;
    }
    /* The logits: computed like any activation (so bf16 in bf16), then
     * float32 for the softmax. In f32 there is nothing to cast. */
    ops_bias_act(m->logits, OPS_F32, m->scratch, bias(m, y), m->dt, n, y->out, 0);
    if (m->dt == OPS_BF16) ops_round_bf16(m->logits, n * y->out);
  }
  return 0;
}

int mlp_backward(mlp *m, backend *be, const int32_t *labels, size_t n, float scale, int accumulate,
                 double *loss) {
  int last = m->cfg.nlayers - 1;
  *loss = ops_softmax_xent(m->grad, m->dt, m->logits, labels, n, m->cfg.dims[last + 1], scale);
  for (int l = last; l >= 0; l--) {
    mlp_layer *y = &m->layer[l];
    /* m->grad holds dLoss/d(output of layer l), [n, out]. */
    if (product(m, be, BACKEND_TN, y->out, y->in, n, m->grad, m->act[l], y->gw, accumulate) < 0) return -1;
    ops_col_sum(y->gb, m->grad, m->dt, n, y->out, accumulate);
    if (l == 0) break;
    if (product(m, be, BACKEND_NN, n, y->in, y->out, m->grad, weights(m, y), m->scratch, 0) < 0) return -1;
    ops_relu_backward(m->grad, m->dt, m->scratch, m->act[l], n * y->in);
  }
  return 0;
}

void mlp_scale_grads(mlp *m, float s) {
  for (int l = 0; l < m->cfg.nlayers; l++) {
    ops_scale(m->layer[l].gw, m->layer[l].in * m->layer[l].out, s);
    ops_scale(m->layer[l].gb, m->layer[l].out, s);
  }
}
