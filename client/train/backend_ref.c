/*
 * backend_ref.c -- the reference backend: plain loops, float32 sums.
 *
 * bf16 products widen both operands to float32 first. That is exact (a
 * bf16 number is a float32 with the low 16 bits zero, and the product of
 * two 8-bit significands fits float32's 24), so the bf16 path is the f32
 * path on the rounded operands: "bf16 operands, float32 accumulation" with
 * nothing else in between.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "bf16.h"

static void ref_gemm(backend_op op, size_t m, size_t n, size_t k, const float *a, const float *b, float *c,
                     int accumulate) {
  backend_strides s = backend_op_strides(op, m, n, k);
  if (!accumulate) memset(c, 0, m * n * sizeof *c);
  if (s.bj == 1) {
    /* B's rows are contiguous: add A(i,k)·B(k,:) row by row (vectorizable). */
    for (size_t i = 0; i < m; i++) {
      float *ci = c + i * n;
      for (size_t p = 0; p < k; p++) {
        float aik = a[i * s.ai + p * s.ak];
        const float *bp = b + p * s.bk;
        for (size_t j = 0; j < n; j++) ci[j] += aik * bp[j];
      }
    }
    return;
  }
  /* A·Bᵀ: both operands run along k, so each C(i,j) is one dot product. */
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      const float *ai = a + i * s.ai, *bj = b + j * s.bj;
      float sum = 0;
      for (size_t p = 0; p < k; p++) sum += ai[p] * bj[p];
      c[i * n + j] += sum;
    }
}

static int ref_mm_f32(backend *be, backend_op op, size_t m, size_t n, size_t k, const float *a, const float *b,
                      float *c, int accumulate) {
  ref_gemm(op, m, n, k, a, b, c, accumulate);
  return 0;
}

static int widen(backend *be, int slot, const uint16_t *src, size_t count, float **out) {
  float *dst = backend_scratch_get(&be->scratch[slot], count * sizeof *dst);
  if (!dst) {
    snprintf(be->err, sizeof be->err, "ref: out of memory for a %zu-element operand", count);
    return -1;
  }
  for (size_t i = 0; i < count; i++) dst[i] = bf16_to_f32(src[i]);
  *out = dst;
  return 0;
}

static int ref_mm_bf16(backend *be, backend_op op, size_t m, size_t n, size_t k, const uint16_t *a,
                       const uint16_t *b, float *c, int accumulate) {
  float *fa, *fb;
  if (widen(be, 0, a, m * k, &fa) < 0 || widen(be, 1, b, k * n, &fb) < 0) return -1;
  ref_gemm(op, m, n, k, fa, fb, c, accumulate);
  return 0;
}

int backend_ref_open(backend *be, int need_bf16, char *why, size_t len) {
  be->name = "ref";
  be->mm_bf16 = ref_mm_bf16;
  be->mm_f32 = ref_mm_f32;
  return 0;
}
