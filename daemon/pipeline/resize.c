/*
 * resize.c -- Pillow's two-pass bilinear resample, windowed.
 *
 * Every floating-point expression in resize_axis_init is written in the
 * same order as Pillow's precompute_coeffs and normalize_coeffs_8bpc, since
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

/* The SIMD horizontal pass's weight table (horizontal_avx2): per output,
 * its taps in steps of RESIZE_TAPS, each step's weights in 64 bytes. */
#define RESIZE_TAPS 4
#define RESIZE_STEP_BYTES 64 /* 16 int16 kh, then 16 int16 kl */

static size_t resize_steps(const resize_axis *h) { return (size_t)(h->ksize + RESIZE_TAPS - 1) / RESIZE_TAPS; }

/* The horizontal pass's result, the slack byte of its last 4-byte store,
 * and (SIMD) its weight table, 32-byte aligned. */
static size_t resize_rows_size(const resize_axis *h, const resize_axis *v) {
  return (size_t)(v->hi - v->lo) * (size_t)h->out_n * 3 + 1;
}

size_t resize_tmp_size(const resize_axis *h, const resize_axis *v) {
  return resize_rows_size(h, v) + 32 + (size_t)h->out_n * resize_steps(h) * RESIZE_STEP_BYTES;
}

#define HALF (1 << (RESIZE_PRECISION_BITS - 1))

/* Pillow's clip8: the sum carries 22 fraction bits plus a rounding half. */
static inline uint8_t clip8(int32_t ss) {
  int32_t v = ss >> RESIZE_PRECISION_BITS;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Portable passes: Pillow's loops, except that the vertical one runs along
 * the row with the filter's rows inside (integer sums do not depend on
 * order, so the result is the same). */
static void horizontal_scalar(const resize_axis *h, const uint8_t *src, size_t src_stride, int rows,
                              uint8_t *out) {
  for (int r = 0; r < rows; r++) {
    const uint8_t *in = src + (size_t)r * src_stride;
    uint8_t *o = out + (size_t)r * h->out_n * 3;
    for (int xx = 0; xx < h->out_n; xx++, o += 3) {
      const uint8_t *p = in + (size_t)(h->bounds[2 * xx] - h->lo) * 4;
      const int32_t *k = h->coef + (size_t)xx * h->ksize;
      int32_t s0 = HALF, s1 = HALF, s2 = HALF;
      for (int x = 0; x < h->bounds[2 * xx + 1]; x++, p += 4) {
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      o[0] = clip8(s0);
      o[1] = clip8(s1);
      o[2] = clip8(s2);
    }
  }
}

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

/* AVX2 keeps Pillow's arithmetic exactly: every product and sum is the
 * integer Pillow computes (the 16-bit weights of SIMD resizers would not
 * be).
 *
 * Horizontal: Pillow's 22-bit weights are split as k = kh * 2^15 + kl
 * (kh = k >> 15, kl = k & 0x7fff, both 16-bit), so that two 16-bit
 * multiply-adds (vpmaddwd: one cheap instruction for 16 products) give
 * sum(p * kh) and sum(p * kl) exactly in 32 bits, and (sum(p * kh) << 15)
 * + sum(p * kl) is Pillow's sum(p * k) bit for bit (no term overflows: 255
 * * 2^22 * (1 + rounding) + 2^21 < 2^31). Four taps a step: their RGBX
 * bytes interleaved by pairs (r0 r1 g0 g1 b0 b1 x0 x1 | r2 r3 ...) and
 * widened meet the weights laid out (k0 k1) x 4 | (k2 k3) x 4, which
 * horizontal_avx2_table writes once per call into tmp. The last step of an
 * output loads only its remaining taps (a masked load never touches the
 * pixels past them, which may be past the rectangle). The result is
 * clipped by shift and unsigned saturation and stored as four bytes; the
 * fourth is junk that the next pixel overwrites (hence the slack byte in
 * resize_tmp_size), which is much cheaper than three byte stores. */
static void horizontal_avx2_table(const resize_axis *h, int16_t *tab) {
  size_t steps = resize_steps(h);
  for (int xx = 0; xx < h->out_n; xx++) {
    const int32_t *k = h->coef + (size_t)xx * h->ksize;
    for (size_t g = 0; g < steps; g++) {
      int16_t *t = tab + ((size_t)xx * steps + g) * (RESIZE_STEP_BYTES / 2);
      for (int q = 0; q < 16; q++) {
        int tap = (int)g * RESIZE_TAPS + (q / 8) * 2 + (q % 2);
        int32_t w = tap < h->ksize ? k[tap] : 0;
        t[q] = (int16_t)(w >> 15);
        t[16 + q] = (int16_t)(w & 0x7fff);
      }
    }
  }
}

/* One step of one row: up to four taps of p (left of them remain) times
 * the step's weights t, added to (ah, al). */
__attribute__((target("avx2"), always_inline)) static inline void horizontal_avx2_step(const uint8_t *p, int left,
                                                                                     const __m256i *t, __m256i *ah,
                                                                                     __m256i *al) {
  const __m128i pairs = _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  __m128i px = left >= RESIZE_TAPS
                   ? _mm_loadu_si128((const __m128i *)p)
                   : _mm_maskload_epi32((const int *)p, _mm_cmpgt_epi32(_mm_set1_epi32(left), _mm_setr_epi32(0, 1, 2, 3)));
  __m256i w = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(px, pairs));
  *ah = _mm256_add_epi32(*ah, _mm256_madd_epi16(w, _mm256_load_si256(t)));
  *al = _mm256_add_epi32(*al, _mm256_madd_epi16(w, _mm256_load_si256(t + 1)));
}

/* (ah << 15) + al: the 22-bit sums, taps 0-1 in the low lane and 2-3 in
 * the high one. */
__attribute__((target("avx2"), always_inline)) static inline __m256i horizontal_avx2_sum(__m256i ah, __m256i al) {
  return _mm256_add_epi32(_mm256_slli_epi32(ah, 15), al);
}

/* Rows are taken two at a time: the weights are loaded once for both, and
 * the two pixels' lanes are added, rounded and narrowed together. */
__attribute__((target("avx2"))) static void horizontal_avx2(const resize_axis *h, const uint8_t *src,
                                                             size_t src_stride, int rows, uint8_t *out,
                                                             const int16_t *tab) {
  const __m256i half = _mm256_set1_epi32(HALF);
  size_t steps = resize_steps(h), orow = (size_t)h->out_n * 3;
  for (int r = 0; r < rows; r += 2) {
    int two = r + 1 < rows;
    const uint8_t *in0 = src + (size_t)r * src_stride, *in1 = two ? in0 + src_stride : in0;
    uint8_t *o0 = out + (size_t)r * orow, *o1 = two ? o0 + orow : o0;
    for (int xx = 0; xx < h->out_n; xx++, o0 += 3, o1 += 3) {
      size_t off = (size_t)(h->bounds[2 * xx] - h->lo) * 4;
      const uint8_t *p0 = in0 + off, *p1 = in1 + off;
      const __m256i *t = (const __m256i *)(tab + (size_t)xx * steps * (RESIZE_STEP_BYTES / 2));
      __m256i ah0 = _mm256_setzero_si256(), al0 = ah0, ah1 = ah0, al1 = ah0;
      for (int left = h->bounds[2 * xx + 1]; left > 0; left -= RESIZE_TAPS, t += 2) {
        horizontal_avx2_step(p0, left, t, &ah0, &al0);
        horizontal_avx2_step(p1, left, t, &ah1, &al1);
        p0 += 4 * RESIZE_TAPS, p1 += 4 * RESIZE_TAPS;
      }
      __m256i a0 = horizontal_avx2_sum(ah0, al0), a1 = horizontal_avx2_sum(ah1, al1);
      /* [row 0 | row 1], each lane the four channels' whole sums */
      __m256i acc = _mm256_add_epi32(_mm256_permute2x128_si256(a0, a1, 0x20), _mm256_permute2x128_si256(a0, a1, 0x31));
      acc = _mm256_srai_epi32(_mm256_add_epi32(acc, half), RESIZE_PRECISION_BITS);
      acc = _mm256_packus_epi16(_mm256_packus_epi32(acc, acc), acc);
      int32_t rgbx0 = _mm256_cvtsi256_si32(acc), rgbx1 = _mm_cvtsi128_si32(_mm256_extracti128_si256(acc, 1));
      /* Row 1's pixel comes second: row 0's junk fourth byte may fall on
       * row 1's first. Row 0's last pixel is stored as three bytes, since
       * its fourth is row 1's first pixel, stored already. */
      memcpy(o0, &rgbx0, xx + 1 < h->out_n ? 4 : 3);
      memcpy(o1, &rgbx1, 4);
    }
  }
}

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
    uintptr_t end = (uintptr_t)tmp + resize_rows_size(h, v);
    int16_t *tab = (int16_t *)((end + 31) & ~(uintptr_t)31);
    horizontal_avx2_table(h, tab);
    horizontal_avx2(h, src, src_stride, v->hi - v->lo, tmp, tab);
    vertical_avx2(v, tmp, row, dst, dst_stride);
    return;
  }
#endif
  resize_rgb8_portable(h, v, src, src_stride, dst, dst_stride, tmp);
}
