/*
 * memplan.h -- the bytes a training run holds, by kind, before it runs.
 *
 * "Does a batch over 64 fit?" is answered by adding up what the MLP and
 * optimizer allocate (mlp_init and optim_add allocate exactly these sizes,
 * and a test holds them to it):
 *
 *   weights      float32 master weights and biases
 *   working      their bf16 working copies (bf16 precision only)
 *   gradients    float32 weight gradients (the accumulation buffer)
 *   activations  for one batch: every layer's input (the model input too),
 *                the widest product's float32 output, one activation
 *                gradient buffer and the float32 logits
 *   optimizer    the optimizer's state (and Adafactor's one-row scratch)
 *
 * Only activations grow with the batch, so the largest batch that fits a
 * budget is (budget - the rest) / activation bytes per sample.
 */
#ifndef BFEED_TRAIN_MEMPLAN_H
#define BFEED_TRAIN_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "optim.h"

#define MEMPLAN_MAX_LAYERS 9 /* weight layers: up to 8 hidden + the output */

typedef struct memplan_model {
  int nlayers;                          /* weight layers, 1..MEMPLAN_MAX_LAYERS */
  size_t dims[MEMPLAN_MAX_LAYERS + 1];  /* dims[0] inputs ... dims[nlayers] classes */
  ops_dtype precision;                  /* OPS_BF16 (mixed) or OPS_F32 */
  size_t batch;                         /* rows a step takes at most */
} memplan_model;

typedef struct memplan_bytes {
  uint64_t weights, working, gradients, activations, optimizer;
} memplan_bytes;

/* 0 when every dim and the batch are >= 1 and the sizes fit in memory
 * arithmetic; -1 otherwise, with the reason in err. */
int memplan_check(const memplan_model *m, char *err, size_t errlen);

/* Parameters (weights and biases). */
uint64_t memplan_params(const memplan_model *m);
/* Activation bytes for one sample; the batch's are batch times this. */
uint64_t memplan_activation_per_sample(const memplan_model *m);
/* Widest layer output, the size of the scratch and gradient rows. */
size_t memplan_widest(const memplan_model *m);

memplan_bytes memplan_compute(const memplan_model *m, optim_kind kind, const optim_hparams *hp);
uint64_t memplan_total(const memplan_bytes *b);

/* Largest batch whose total is <= budget, capped at cap; 0 when not even
 * one sample fits. */
uint64_t memplan_max_batch(const memplan_model *m, optim_kind kind, const optim_hparams *hp, uint64_t budget,
                           uint64_t cap);

#endif
