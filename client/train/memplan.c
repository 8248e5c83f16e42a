/* memplan.c -- see memplan.h */
#include "memplan.h"

#include <stdio.h>

/* Sizes are checked to stay below this, so the sums below cannot wrap. */
#define MEMPLAN_LIMIT ((uint64_t)1 << 50)

int memplan_check(const memplan_model *m, char *err, size_t errlen) {
  if (m->nlayers < 1 || m->nlayers > MEMPLAN_MAX_LAYERS)
    return snprintf(err, errlen, "%d layers: expected 1 to %d", m->nlayers, MEMPLAN_MAX_LAYERS), -1;
  if (m->batch < 1 || m->batch > MEMPLAN_LIMIT) return snprintf(err, errlen, "batch %zu is out of range", m->batch), -1;
  uint64_t params = 0;
  for (int l = 0; l <= m->nlayers; l++)
    if (m->dims[l] < 1 || m->dims[l] > ((uint64_t)1 << 24))
      return snprintf(err, errlen, "layer width %zu is out of range 1..2^24", m->dims[l]), -1;
  for (int l = 0; l < m->nlayers; l++) params += (uint64_t)m->dims[l] * m->dims[l + 1] + m->dims[l + 1];
  if (params > MEMPLAN_LIMIT / 16 || memplan_activation_per_sample(m) > MEMPLAN_LIMIT / m->batch)
    return snprintf(err, errlen, "the model does not fit in memory at batch %zu", m->batch), -1;
  return 0;
}

uint64_t memplan_params(const memplan_model *m) {
  uint64_t n = 0;
  for (int l = 0; l < m->nlayers; l++) n += (uint64_t)m->dims[l] * m->dims[l + 1] + m->dims[l + 1];
  return n;
}

size_t memplan_widest(const memplan_model *m) {
  size_t w = 0;
  for (int l = 1; l <= m->nlayers; l++)
    if (m->dims[l] > w) w = m->dims[l];
  return w;
}

uint64_t memplan_activation_per_sample(const memplan_model *m) {
  uint64_t es = ops_dtype_size(m->precision), n = 0;
  for (int l = 0; l < m->nlayers; l++) n += m->dims[l] * es;        /* each layer's input */
  n += memplan_widest(m) * (4 + es);                               /* product output, activation gradient */
  n += m->dims[m->nlayers] * 4;                                     /* float32 logits */
  return n;
}

memplan_bytes memplan_compute(const memplan_model *m, optim_kind kind, const optim_hparams *hp) {
  memplan_bytes b = {0};
  uint64_t params = memplan_params(m);
  b.weights = params * 4;
  b.working = m->precision == OPS_BF16 ? params * 2 : 0;
  b.gradients = params * 4;
  b.activations = memplan_activation_per_sample(m) * m->batch;
  size_t widest = 0; /* the longest parameter row: a matrix's is dims[l], a bias's dims[l+1] */
  for (int l = 0; l < m->nlayers; l++) {
    b.optimizer += 4 * (optim_state_floats(kind, hp, m->dims[l + 1], m->dims[l]) +
                        optim_state_floats(kind, hp, 1, m->dims[l + 1]));
    widest = m->dims[l] > widest ? m->dims[l] : widest;
    widest = m->dims[l + 1] > widest ? m->dims[l + 1] : widest;
  }
  b.optimizer += 4 * optim_scratch_floats(kind, widest);
  return b;
}

uint64_t memplan_total(const memplan_bytes *b) {
  return b->weights + b->working + b->gradients + b->activations + b->optimizer;
}

uint64_t memplan_max_batch(const memplan_model *m, optim_kind kind, const optim_hparams *hp, uint64_t budget,
                           uint64_t cap) {
  memplan_bytes b = memplan_compute(m, kind, hp);
  uint64_t fixed = memplan_total(&b) - b.activations, per = memplan_activation_per_sample(m);
  if (budget < fixed) return 0;
  uint64_t n = (budget - fixed) / per;
  return n < cap ? n : cap;
}
