/*
 * mlp.h -- a multilayer perceptron trained in bf16 mixed precision or f32.
 *
 * Layers: dims[0] inputs -> ReLU hidden layers -> dims[nlayers] logits.
 * Each layer l holds W_l [dims[l+1], dims[l]] and b_l [dims[l+1]].
 *
 * --precision bf16 does what a TPU's bf16 scope does:
 *   - the float32 master weights are cast to bf16 working copies after
 *     every optimizer step (mlp_sync_working), and the products read those;
 *   - activations, and the gradients flowing back through them, are bf16;
 *   - every product accumulates in float32 (the backend's mm_bf16), biases
 *     are added and ReLU applied in float32 before the result is rounded;
 *   - the logits come out as bf16 like every activation and are cast to
 *     float32 for the softmax and the loss;
 *   - weight gradients accumulate in float32, over the batch and over
 *     --accumulate micro-batches, and the optimizer updates the float32
 *     master weights with float32 state.
 * --precision f32 runs the same graph with float32 everywhere and no
 * working copies.
 *
 * Every buffer is allocated by mlp_init at the sizes memplan.h computes,
 * and mlp.bytes records what was allocated, so the memory table a user sees
 * is what the process holds.
 */
#ifndef BFEED_TRAIN_MLP_H
#define BFEED_TRAIN_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "memplan.h"
#include "ops.h"

typedef struct mlp_layer {
  size_t in, out;
  float *w, *b;          /* master weights and bias */
  float *gw, *gb;        /* their gradients, float32 */
  uint16_t *w16, *b16;   /* bf16 working copies (bf16 precision only) */
} mlp_layer;

typedef struct mlp {
  memplan_model cfg;
  ops_dtype dt;                  /* of activations and activation gradients */
  mlp_layer layer[MEMPLAN_MAX_LAYERS];
  void *act[MEMPLAN_MAX_LAYERS]; /* act[l]: layer l's input [batch, in]; act[0] is the model's input */
  float *scratch;                /* [batch, widest layer]: product outputs */
  void *grad;                    /* [batch, widest layer]: activation gradient */
  float *logits;                 /* [batch, classes], float32 */
  memplan_bytes bytes;           /* what mlp_init allocated */
} mlp;

/* Allocate and initialize: He-uniform weights (a pure function of seed),
 * zero biases. Returns 0 or -1 (out of memory, or a config memplan
 * rejects; message in err). */
int mlp_init(mlp *m, const memplan_model *cfg, uint64_t seed, char *err, size_t errlen);
void mlp_free(mlp *m);

/* Where the caller puts the next n <= batch inputs: [n, dims[0]] of m->dt. */
static inline void *mlp_input(mlp *m) { return m->act[0]; }

/* Refresh the bf16 working copies from the master weights (no-op in f32). */
void mlp_sync_working(mlp *m);

/* Forward pass over n rows of mlp_input: float32 logits in m->logits. */
int mlp_forward(mlp *m, backend *be, size_t n);

/* After mlp_forward: the summed cross-entropy over the n rows into *loss,
 * and the gradients of (scale x summed loss) added to layer gw/gb (or
 * stored there when accumulate is 0). Labels must be in 0..classes-1.
 * Returns 0, or -1 with the backend's message in be->err. */
int mlp_backward(mlp *m, backend *be, const int32_t *labels, size_t n, float scale, int accumulate,
                 double *loss);

/* Multiply every gradient by s (averages over accumulated micro-batches). */
void mlp_scale_grads(mlp *m, float s);

#endif
