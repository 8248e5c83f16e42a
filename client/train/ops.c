/* ops.c -- see ops.h */
#include "ops.h"

#include <math.h>
#include <string.h>

#include "bf16.h"

size_t ops_dtype_size(ops_dtype dt) { return dt == OPS_BF16 ? 2 : 4; }

static inline float load(const void *p, ops_dtype dt, size_t i) {
  return dt == OPS_BF16 ? bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static inline void store(void *p, ops_dtype dt, size_t i, float v) {
  if (dt == OPS_BF16) ((uint16_t *)p)[i] = bf16_from_f32(v);
  else ((float *)p)[i] = v;
}

void ops_bias_act(void *out, ops_dtype dt, const float *z, const void *bias, ops_dtype bias_dt, size_t rows,
                  size_t cols, int relu) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      float v = z[r * cols + c] + load(bias, bias_dt, c);
      store(out, dt, r * cols + c, relu && v < 0 ? 0.0f : v); /* NaN passes, to be seen */
    }
}

void ops_round_bf16(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = bf16_to_f32(bf16_from_f32(x[i]));
}

void ops_relu_backward(void *out, ops_dtype dt, const float *g, const void *act, size_t n) {
  for (size_t i = 0; i < n; i++) store(out, dt, i, load(act, dt, i) > 0 ? g[i] : 0.0f);
}

void ops_col_sum(float *out, const void *x, ops_dtype dt, size_t rows, size_t cols, int accumulate) {
  for (size_t c = 0; c < cols; c++) {
    double s = accumulate ? out[c] : 0;
    for (size_t r = 0; r < rows; r++) s += load(x, dt, r * cols + c);
    out[c] = (float)s;
  }
}

double ops_softmax_xent(void *g, ops_dtype dt, const float *logits, const int32_t *labels, size_t rows,
                        size_t cols, float scale) {
  double total = 0;
  for (size_t r = 0; r < rows; r++) {
    const float *z = logits + r * cols;
    /* Shift by the maximum so exp cannot overflow; sums in double. */
    float zmax = z[0];
    for (size_t c = 1; c < cols; c++)
      if (z[c] > zmax) zmax = z[c];
    double sum = 0;
    for (size_t c = 0; c < cols; c++) sum += exp((double)z[c] - zmax);
    double log_sum = log(sum);
    total += log_sum - ((double)z[labels[r]] - zmax);
    for (size_t c = 0; c < cols; c++) {
      double p = exp((double)z[c] - zmax - log_sum);
      store(g, dt, r * cols + c, (float)(scale * (p - (c == (size_t)labels[r]))));
    }
  }
  return total;
}

size_t ops_count_correct(const float *logits, const int32_t *labels, size_t rows, size_t cols) {
  size_t correct = 0;
  for (size_t r = 0; r < rows; r++) {
    const float *z = logits + r * cols;
    size_t best = 0;
    for (size_t c = 1; c < cols; c++)
      if (z[c] > z[best]) best = c;
    correct += best == (size_t)labels[r];
  }
  return correct;
}

void ops_convert(void *dst, ops_dtype dst_dt, const void *src, ops_dtype src_dt, size_t n) {
  if (dst_dt == src_dt) {
    memcpy(dst, src, n * ops_dtype_size(dst_dt));
    return;
  }
  if (dst_dt == OPS_BF16) {
    bf16_from_f32_array(dst, src, n);
    return;
  }
  for (size_t i = 0; i < n; i++) ((float *)dst)[i] = bf16_to_f32(((const uint16_t *)src)[i]);
}

void ops_scale(float *x, size_t n, float s) {
  for (size_t i = 0; i < n; i++) x[i] *= s;
}
