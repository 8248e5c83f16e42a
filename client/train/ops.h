/*
 * ops.h -- the elementwise work and reductions of a training step.
 *
 * Plain C shared by every backend: next to the matrix products these are
 * O(batch x width), not O(batch x width^2). Activations and activation
 * gradients are stored in the step's precision (ops_dtype); everything
 * computed here is computed in float32 and rounded (to nearest even) only
 * when stored as bf16, as a bf16 accelerator's vector unit would.
 */
#ifndef BFEED_TRAIN_OPS_H
#define BFEED_TRAIN_OPS_H

#include <stddef.h>
#include <stdint.h>

typedef enum ops_dtype { OPS_F32 = 0, OPS_BF16 = 1 } ops_dtype;

/* Bytes per element: 4 or 2. */
size_t ops_dtype_size(ops_dtype dt);

/* out[r,c] = f(z[r,c] + bias[c]) with f = ReLU when relu, else identity;
 * out is of type dt, bias of type bias_dt. */
void ops_bias_act(void *out, ops_dtype dt, const float *z, const void *bias, ops_dtype bias_dt, size_t rows,
                  size_t cols, int relu);

/* x[i] = bf16(x[i]): a bf16 result cast back to float32, as the logits of
 * a bf16 model are before the softmax. */
void ops_round_bf16(float *x, size_t n);

/* ReLU's backward: out[i] = g[i] where act[i] > 0, else 0 (act is the
 * ReLU's output, of type dt, as is out). */
void ops_relu_backward(void *out, ops_dtype dt, const float *g, const void *act, size_t n);

/* out[c] (+)= sum over rows of x[r,c], summed in double. */
void ops_col_sum(float *out, const void *x, ops_dtype dt, size_t rows, size_t cols, int accumulate);

/* Softmax cross-entropy of float32 logits [rows, cols] against labels
 * (each in 0..cols-1): returns the summed loss, and stores the gradient
 * of scale * (summed loss) in g (type dt): scale * (softmax - one_hot). */
double ops_softmax_xent(void *g, ops_dtype dt, const float *logits, const int32_t *labels, size_t rows,
                        size_t cols, float scale);

/* Number of rows whose largest logit (the first, on ties) is at labels[r]. */
size_t ops_count_correct(const float *logits, const int32_t *labels, size_t rows, size_t cols);

/* dst = src in another dtype (bf16 -> f32 is exact; f32 -> bf16 rounds). */
void ops_convert(void *dst, ops_dtype dst_dt, const void *src, ops_dtype src_dt, size_t n);

void ops_scale(float *x, size_t n, float s);

#endif
