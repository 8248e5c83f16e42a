/*
 * resize.c -- Pillow's two-pass bilinear resample, windowed.
 *
 * Every floating-point expression in resize_axis_init is written in the
 * same order as Pillow's precompute_coeffs and normalize_coeffs_8bpc, since
 * a weight that differs in its last bit can move a pixel by one level.
 */
#include "resize.h"

#include <limits.h>
#include <math.h>
#include <string.h>

static double bilinear_filter(double x) {
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return 1.0 - x;
  return 0.0;
}

/* Pillow's filter support scales with the reduction factor: that is its
 * antialiasing. Bilinear's support is 1.0 at unit scale. */
static double filter_scale(double in0, double in1, int out_size) {
  double scale = (in1 - in0) / out_size;
  return scale < 1.0 ? 1.0 : scale;
}

static int kernel_size(double filterscale) {
  return (int)ceil(1.0 * filterscale) * 2 + 1;
}

size_t resize_axis_size(double in0, double in1, int out_size, int out_n) {
  int ksize = kernel_size(filter_scale(in0, in1, out_size));
  return (size_t)out_n * (2 + (size_t)ksize) * sizeof(int32_t);
}

static int32_t to_fixed(double k) {
  if (k < 0)
    return (int32_t)(-0.5 + k * (1 << RESIZE_PRECISION_BITS));
  return (int32_t)(0.5 + k * (1 << RESIZE_PRECISION_BITS));
}

void resize_axis_init(resize_axis *a, void *mem, int in_size, double in0, double in1,
                      int out_size, int out0, int out_n) {
  double scale = (in1 - in0) / out_size;
  double filterscale = filter_scale(in0, in1, out_size);
  double support = 1.0 * filterscale;
  double ss = 1.0 / filterscale;

  a->out_n = out_n;
  a->ksize = kernel_size(filterscale);
  a->bounds = mem;
  a->coef = a->bounds + 2 * (size_t)out_n;
  a->lo = INT_MAX;
  a->hi = 0;

  for (int i = 0; i < out_n; i++) {
    double center = in0 + (out0 + i + 0.5) * scale;
    int xmin = (int)(center - support + 0.5);
    if (xmin < 0)
      xmin = 0;
    int xmax = (int)(center + support + 0.5);
    if (xmax > in_size)
      xmax = in_size;
    xmax -= xmin;

    /* Pillow stores the raw weights, divides them by their sum, then rounds;
     * the weights are recomputed here rather than stored, which gives the
     * same doubles without a per-call buffer. */
    double ww = 0.0;
    for (int x = 0; x < xmax; x++)
      ww += bilinear_filter((x + xmin - center + 0.5) * ss);
    int32_t *k = a->coef + (size_t)i * a->ksize;
    for (int x = 0; x < xmax; x++) {
      double w = bilinear_filter((x + xmin - center + 0.5) * ss);
      if (ww != 0.0)
        w /= ww;
      k[x] = to_fixed(w);
    }
    for (int x = xmax < 0 ? 0 : xmax; x < a->ksize; x++)
      k[x] = 0;

    a->bounds[2 * i] = xmin;
    a->bounds[2 * i + 1] = xmax;
    if (xmax > 0) {
      if (xmin < a->lo)
        a->lo = xmin;
      if (xmin + xmax > a->hi)
        a->hi = xmin + xmax;
    }
  }
  if (a->lo > a->hi) /* no output read anything: an empty range */
    a->lo = a->hi;
}

size_t resize_tmp_size(const resize_axis *h, const resize_axis *v) {
  size_t row = (size_t)h->out_n * 3;
  return row * sizeof(int32_t) + (size_t)(v->hi - v->lo) * row;
}

/* Pillow's clip8: the sum carries 22 fraction bits plus a rounding half. */
static inline uint8_t clip8(int32_t ss) {
  int32_t v = ss >> RESIZE_PRECISION_BITS;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void horizontal_pass(const resize_axis *h, const uint8_t *src, size_t src_stride,
                            int rows, uint8_t *out) {
  const int32_t half = 1 << (RESIZE_PRECISION_BITS - 1);
  for (int r = 0; r < rows; r++) {
    const uint8_t *in = src + (size_t)r * src_stride;
    uint8_t *o = out + (size_t)r * h->out_n * 3;
    for (int xx = 0; xx < h->out_n; xx++) {
      const uint8_t *p = in + (size_t)(h->bounds[2 * xx] - h->lo) * 3;
      const int32_t *k = h->coef + (size_t)xx * h->ksize;
      int n = h->bounds[2 * xx + 1];
      int32_t s0 = half, s1 = half, s2 = half;
      for (int x = 0; x < n; x++, p += 3) {
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      o[3 * xx] = clip8(s0);
      o[3 * xx + 1] = clip8(s1);
      o[3 * xx + 2] = clip8(s2);
    }
  }
}

/* Row by row rather than pixel by pixel so the inner loop runs over
 * contiguous bytes and vectorises; integer sums do not depend on order. */
static void vertical_pass(const resize_axis *v, const uint8_t *in, size_t row, int32_t *acc,
                          uint8_t *dst, size_t dst_stride) {
  const int32_t half = 1 << (RESIZE_PRECISION_BITS - 1);
  for (int yy = 0; yy < v->out_n; yy++) {
    const int32_t *k = v->coef + (size_t)yy * v->ksize;
    const uint8_t *base = in + (size_t)(v->bounds[2 * yy] - v->lo) * row;
    int n = v->bounds[2 * yy + 1];
    for (size_t i = 0; i < row; i++)
      acc[i] = half;
    for (int y = 0; y < n; y++) {
      const uint8_t *p = base + (size_t)y * row;
      int32_t w = k[y];
      for (size_t i = 0; i < row; i++)
        acc[i] += p[i] * w;
    }
    uint8_t *o = dst + (size_t)yy * dst_stride;
    for (size_t i = 0; i < row; i++)
      o[i] = clip8(acc[i]);
  }
}

void resize_rgb8(const resize_axis *h, const resize_axis *v, const uint8_t *src,
                 size_t src_stride, uint8_t *dst, size_t dst_stride, void *tmp) {
  size_t row = (size_t)h->out_n * 3;
  int32_t *acc = tmp;
  uint8_t *mid = (uint8_t *)(acc + row);
  horizontal_pass(h, src, src_stride, v->hi - v->lo, mid);
  vertical_pass(v, mid, row, acc, dst, dst_stride);
}
