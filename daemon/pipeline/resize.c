/*
 * resize.c -- Pillow's two-pass resample, windowed.
 *
 * Every floating-point expression in resize_axis_filter_init is written in
 * the same order as Pillow's precompute_coeffs, normalize_coeffs_8bpc and
 * ImagingScaleAffine, since
 * a weight that differs in its last bit can move a pixel by one level. For
 * the same reason this file must not be built with FMA contraction (e.g.
 * -march=native with -ffp-contract=fast): Pillow's wheels and Debian's
 * build round each multiply and add separately.
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

/* Pillow's bicubic_filter with its a = -0.5, the constants folded as its
 * compiler folds (a + 2.0) and (a + 3.0): exactly 1.5 and 2.5. */
static double bicubic_filter(double x) {
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return (1.5 * x - 2.5) * x * x + 1;
  if (x < 2.0)
    return (((x - 5) * x + 8) * x - 4) * -0.5;
  return 0.0;
}

/* A filter's support at unit scale: Pillow's BILINEAR 1.0, BICUBIC 2.0. */
static double filter_support(bfeed_interp filter) { return filter == BFEED_INTERP_BICUBIC ? 2.0 : 1.0; }

/* Pillow's filter support scales with the reduction factor: that is its
 * antialiasing. */
static double filter_scale(double in0, double in1, int out_size) {
  double scale = (in1 - in0) / out_size;
  return scale < 1.0 ? 1.0 : scale;
}

static int kernel_size(bfeed_interp filter, double in0, double in1, int out_size) {
  if (filter == BFEED_INTERP_NEAREST)
    return 1;
  return (int)ceil(filter_support(filter) * filter_scale(in0, in1, out_size)) * 2 + 1;
}

size_t resize_axis_filter_size(bfeed_interp filter, double in0, double in1, int out_size, int out_n) {
  int ksize = kernel_size(filter, in0, in1, out_size);
  return (size_t)out_n * (2 + (size_t)ksize) * sizeof(int32_t);
}

size_t resize_axis_size(double in0, double in1, int out_size, int out_n) {
  return resize_axis_filter_size(BFEED_INTERP_BILINEAR, in0, in1, out_size, out_n);
}

static int32_t to_fixed(double k) {
  if (k < 0)
    return (int32_t)(-0.5 + k * (1 << RESIZE_PRECISION_BITS));
  return (int32_t)(0.5 + k * (1 << RESIZE_PRECISION_BITS));
}

/* Output i reads xmax source pixels from xmin: what the passes and the
 * decoder's rectangle (lo, hi) need to know. */
static void axis_bound(resize_axis *a, int i, int xmin, int xmax) {
  a->bounds[2 * i] = xmin;
  a->bounds[2 * i + 1] = xmax;
  if (xmax > 0) {
    if (xmin < a->lo)
      a->lo = xmin;
    if (xmin + xmax > a->hi)
      a->hi = xmin + xmax;
  }
}

/* ImagingScaleAffine along one axis, as _imaging.c's resize sets it up:
 * the box is float32 (its box[4]), the step (box1 - box0) / out_size and
 * the first position box0 + step / 2 in double, and each later position
 * the previous plus the step (accumulated, not multiplied: the sums' own
 * rounding is Pillow's); COORD truncates, -1 below 0. */
static void axis_nearest(resize_axis *a, int in_size, double in0, double in1, int out_size, int out0) {
  float b0 = (float)in0, b1 = (float)in1;
  double step = (double)(b1 - b0) / out_size;
  double xo = b0 + step * 0.5;
  for (int i = 0; i < out0; i++)
    xo += step;
  for (int i = 0; i < a->out_n; i++, xo += step) {
    int xin = xo < 0.0 ? -1 : (int)xo;
    int inside = xin >= 0 && xin < in_size;
    a->coef[i] = 1 << RESIZE_PRECISION_BITS;
    axis_bound(a, i, inside ? xin : 0, inside);
  }
}

void resize_axis_filter_init(resize_axis *a, void *mem, bfeed_interp filter, int in_size, double in0,
                             double in1, int out_size, int out0, int out_n) {
  double (*kernel)(double) = filter == BFEED_INTERP_BICUBIC ? bicubic_filter : bilinear_filter;
  double scale = (in1 - in0) / out_size;
  double filterscale = filter_scale(in0, in1, out_size);
  double support = filter_support(filter) * filterscale;
  double ss = 1.0 / filterscale;

  a->out_n = out_n;
  a->ksize = kernel_size(filter, in0, in1, out_size);
  a->bounds = mem;
  a->coef = a->bounds + 2 * (size_t)out_n;
  a->lo = INT_MAX;
  a->hi = 0;
  if (filter == BFEED_INTERP_NEAREST)
    axis_nearest(a, in_size, in0, in1, out_size, out0);

  for (int i = 0; filter != BFEED_INTERP_NEAREST && i < out_n; i++) {
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
      ww += kernel((x + xmin - center + 0.5) * ss);
    int32_t *k = a->coef + (size_t)i * a->ksize;
    for (int x = 0; x < xmax; x++) {
      double w = kernel((x + xmin - center + 0.5) * ss);
      if (ww != 0.0)
        w /= ww;
      k[x] = to_fixed(w);
    }
    for (int x = xmax < 0 ? 0 : xmax; x < a->ksize; x++)
      k[x] = 0;
    axis_bound(a, i, xmin, xmax);
  }
  if (a->lo > a->hi) /* no output read anything: an empty range */
    a->lo = a->hi;
}

void resize_axis_init(resize_axis *a, void *mem, int in_size, double in0, double in1,
                      int out_size, int out0, int out_n) {
  resize_axis_filter_init(a, mem, BFEED_INTERP_BILINEAR, in_size, in0, in1, out_size, out0, out_n);
}

size_t resize_tmp_size(const resize_axis *h, const resize_axis *v) {
  return (size_t)(v->hi - v->lo) * (size_t)h->out_n * 3 + 1; /* + the last 4-byte store */
}

#define HALF (1 << (RESIZE_PRECISION_BITS - 1))

/* Pillow's clip8: the sum carries 22 fraction bits plus a rounding half. */
static inline uint8_t clip8(int32_t ss) {
  int32_t v = ss >> RESIZE_PRECISION_BITS;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The horizontal pass walks rows and output pixels the same way on every
 * path; only the pixel (n RGBX taps from p, weights k, into RGB at o)
 * differs. One body, instantiated per pixel function, which is inlined. */
#define RESIZE_DEFINE_HORIZONTAL(name, attr, pixel)                                        \
  attr static void name(const resize_axis *h, const uint8_t *src, size_t src_stride,       \
                        int rows, uint8_t *out) {                                          \
    for (int r = 0; r < rows; r++) {                                                       \
      const uint8_t *in = src + (size_t)r * src_stride;                                    \
      uint8_t *o = out + (size_t)r * h->out_n * 3;                                         \
      for (int xx = 0; xx < h->out_n; xx++, o += 3)                                        \
        pixel(in + (size_t)(h->bounds[2 * xx] - h->lo) * 4, h->coef + (size_t)xx * h->ksize, \
              h->bounds[2 * xx + 1], o);                                                   \
    }                                                                                      \
  }

/* Portable passes: Pillow's loops, except that the vertical one runs along
 * the row with the filter's rows inside (integer sums do not depend on
 * order, so the result is the same). */
static inline __attribute__((always_inline)) void pixel_scalar(const uint8_t *p, const int32_t *k,
                                                               int n, uint8_t *o) {
  int32_t s0 = HALF, s1 = HALF, s2 = HALF;
  for (int x = 0; x < n; x++, p += 4) {
    s0 += p[0] * k[x];
    s1 += p[1] * k[x];
    s2 += p[2] * k[x];
  }
  o[0] = clip8(s0);
  o[1] = clip8(s1);
  o[2] = clip8(s2);
}
RESIZE_DEFINE_HORIZONTAL(horizontal_scalar, , pixel_scalar)

static void vertical_column(const int32_t *k, int n, const uint8_t *base, size_t row, size_t i,
                            uint8_t *o) {
  int32_t acc = HALF;
  for (int y = 0; y < n; y++)
    acc += base[(size_t)y * row + i] * k[y];
  o[i] = clip8(acc);
}

static void vertical_scalar(const resize_axis *v, const uint8_t *in, size_t row, uint8_t *dst,
                            size_t dst_stride) {
  for (int yy = 0; yy < v->out_n; yy++) {
    const int32_t *k = v->coef + (size_t)yy * v->ksize;
    const uint8_t *base = in + (size_t)(v->bounds[2 * yy] - v->lo) * row;
    for (size_t i = 0; i < row; i++)
      vertical_column(k, v->bounds[2 * yy + 1], base, row, i, dst + (size_t)yy * dst_stride);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RESIZE_AVX2 1

/* AVX2 keeps Pillow's arithmetic exactly: 32-bit lanes hold the 22-bit
 * weights and the sums (the 16-bit shortcuts of SIMD resizers would not).
 *
 * Horizontal: two taps per step, each an RGBX pixel in four lanes. The
 * result is clipped by shift and unsigned saturation and stored as four
 * bytes; the fourth is junk that the next pixel overwrites (hence the slack
 * byte in resize_tmp_size), which is much cheaper than three byte stores. */
__attribute__((target("avx2"), always_inline)) static inline void pixel_avx2(const uint8_t *p,
                                                                             const int32_t *k,
                                                                             int n, uint8_t *o) {
  const __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  __m256i acc2 = _mm256_setzero_si256();
  int x = 0;
  for (; x + 2 <= n; x += 2) {
    __m256i px = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 4 * x)));
    __m256i kk = _mm256_permutevar8x32_epi32(
        _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(k + x))), spread);
    acc2 = _mm256_add_epi32(acc2, _mm256_mullo_epi32(px, kk));
  }
  __m128i acc = _mm_add_epi32(_mm256_castsi256_si128(acc2), _mm256_extracti128_si256(acc2, 1));
  acc = _mm_add_epi32(acc, _mm_set1_epi32(HALF));
  if (x < n) {
    int32_t px;
    memcpy(&px, p + 4 * x, 4);
    acc = _mm_add_epi32(acc, _mm_mullo_epi32(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(px)),
                                             _mm_set1_epi32(k[x])));
  }
  acc = _mm_srai_epi32(acc, RESIZE_PRECISION_BITS);
  acc = _mm_packus_epi16(_mm_packus_epi32(acc, acc), acc);
  int32_t rgbx = _mm_cvtsi128_si32(acc);
  memcpy(o, &rgbx, 4);
}
RESIZE_DEFINE_HORIZONTAL(horizontal_avx2, __attribute__((target("avx2"))), pixel_avx2)

/* Vertical: sixteen bytes of a row at a time, summed down the filter's rows
 * in registers, then Pillow's clip8 by shift and unsigned saturation. */
__attribute__((target("avx2"))) static void vertical_avx2(const resize_axis *v,
                                                           const uint8_t *in, size_t row,
                                                           uint8_t *dst, size_t dst_stride) {
  for (int yy = 0; yy < v->out_n; yy++) {
    const int32_t *k = v->coef + (size_t)yy * v->ksize;
    const uint8_t *base = in + (size_t)(v->bounds[2 * yy] - v->lo) * row;
    int n = v->bounds[2 * yy + 1];
    uint8_t *o = dst + (size_t)yy * dst_stride;
    size_t i = 0;
    for (; i + 16 <= row; i += 16) {
      __m256i a0 = _mm256_set1_epi32(HALF), a1 = a0;
      for (int y = 0; y < n; y++) {
        __m128i px = _mm_loadu_si128((const __m128i *)(base + (size_t)y * row + i));
        __m256i w = _mm256_set1_epi32(k[y]);
        a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(px), w));
        a1 = _mm256_add_epi32(
            a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(px, 8)), w));
      }
      a0 = _mm256_srai_epi32(a0, RESIZE_PRECISION_BITS);
      a1 = _mm256_srai_epi32(a1, RESIZE_PRECISION_BITS);
      __m128i w0 = _mm_packus_epi32(_mm256_castsi256_si128(a0), _mm256_extracti128_si256(a0, 1));
      __m128i w1 = _mm_packus_epi32(_mm256_castsi256_si128(a1), _mm256_extracti128_si256(a1, 1));
      _mm_storeu_si128((__m128i *)(o + i), _mm_packus_epi16(w0, w1));
    }
    for (; i < row; i++)
      vertical_column(k, n, base, row, i, o);
  }
}
#endif

void resize_rgb8_portable(const resize_axis *h, const resize_axis *v, const uint8_t *src,
                          size_t src_stride, uint8_t *dst, size_t dst_stride, void *tmp) {
  horizontal_scalar(h, src, src_stride, v->hi - v->lo, tmp);
  vertical_scalar(v, tmp, (size_t)h->out_n * 3, dst, dst_stride);
}

void resize_rgb8(const resize_axis *h, const resize_axis *v, const uint8_t *src,
                 size_t src_stride, uint8_t *dst, size_t dst_stride, void *tmp) {
  size_t row = (size_t)h->out_n * 3;
#ifdef RESIZE_AVX2
  if (__builtin_cpu_supports("avx2")) {
    horizontal_avx2(h, src, src_stride, v->hi - v->lo, tmp);
    vertical_avx2(v, tmp, row, dst, dst_stride);
    return;
  }
#endif
  resize_rgb8_portable(h, v, src, src_stride, dst, dst_stride, tmp);
}
