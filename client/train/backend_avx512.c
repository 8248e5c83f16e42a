/*
 * backend_avx512.c -- products on the CPU's native bf16 dot product.
 *
 * vdpbf16ps (_mm512_dpbf16_ps) multiplies 16 pairs of bf16 numbers by 16
 * other pairs and adds each pair's two products to one float32 lane. So
 * both operands are packed with consecutive k values side by side:
 *
 *   A: rows of k, padded to an even k and to a multiple of MR rows;
 *   B: panels of NR columns, each [k/2][NR][2]: for a k pair, the NR
 *      columns' two values, so one 64-byte load feeds 16 lanes.
 *
 * The kernel keeps an MR x NR tile of C in 16 zmm registers and walks k;
 * tile edges are masked stores, padding is zeros, so any shape works. The
 * float32 path (--precision f32) is the same loop with vfmadd231ps and one
 * k per step. Single-threaded: the daemon's workers want the other cores.
 */
#include <immintrin.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

#define MR 4
#define NV 4
#define NR (16 * NV)

#define AVX512_TARGET __attribute__((target("avx512bf16,avx512f,avx512bw,avx512vl")))

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/*
 * Packing: A(i,p) goes to ap[i*kp + p]; B(p,j) to panel j/NR, bf16 at
 * [p/2][j%NR][p%2], f32 at [p][j%NR]. The source is walked along whichever
 * index is contiguous there (every op has one operand with unit stride in
 * p and one in j), and the destination is zeroed first only when it has
 * padding to fill.
 */
static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* A is packed the same way for both element types: row-major, rows padded
 * to kp, zeros past m and k. One body, instantiated per type. */
#define DEFINE_PACK_A(name, T)                                                                       \
  static void name(void *dst, const void *src, backend_strides s, size_t m, size_t k, size_t mp, size_t kp) { \
    T *ap = dst;                                                                                     \
    const T *a = src;                                                                                \
    if (mp != m || kp != k) memset(ap, 0, mp * kp * sizeof *ap);                                     \
    if (s.ak == 1)                                                                                   \
      for (size_t i = 0; i < m; i++) memcpy(ap + i * kp, a + i * s.ai, k * sizeof *ap);              \
    else                                                                                             \
      for (size_t p = 0; p < k; p++)                                                                 \
        for (size_t i = 0; i < m; i++) ap[i * kp + p] = a[i * s.ai + p * s.ak];                      \
  }
DEFINE_PACK_A(pack_a_bf16, uint16_t)
DEFINE_PACK_A(pack_a_f32, float)

static void pack_b_bf16(void *dst, const void *src, backend_strides s, size_t k, size_t n, size_t kp, size_t np) {
  uint16_t *bp = dst;
  const uint16_t *b = src;
  if (np != n || kp != k) memset(bp, 0, np * kp * sizeof *bp);
  if (s.bk == 1) {
    /* B's columns are contiguous: a k pair is one 32-bit copy. */
    for (size_t j = 0; j < n; j++) {
      const uint16_t *col = b + j * s.bj;
      uint16_t *d = bp + j / NR * kp * NR + j % NR * 2;
      size_t p = 0;
      for (; p + 1 < k; p += 2, d += NR * 2) memcpy(d, col + p, 2 * sizeof *d);
      if (p < k) d[0] = col[p];
    }
    return;
  }
  /* B's rows are contiguous: interleave rows p and p+1 (zeros past k). */
  for (size_t p = 0; p < k; p += 2) {
    const uint16_t *r0 = b + p * s.bk, *r1 = p + 1 < k ? r0 + s.bk : NULL;
    for (size_t j0 = 0; j0 < n; j0 += NR) {
      uint16_t *d = bp + j0 / NR * kp * NR + p / 2 * NR * 2;
      size_t w = min_size(NR, n - j0);
      for (size_t jj = 0; jj < w; jj++) {
        d[2 * jj] = r0[(j0 + jj) * s.bj];
        d[2 * jj + 1] = r1 ? r1[(j0 + jj) * s.bj] : 0;
      }
    }
  }
}

static void pack_b_f32(void *dst, const void *src, backend_strides s, size_t k, size_t n, size_t kp, size_t np) {
  float *bp = dst;
  const float *b = src;
  if (np != n || kp != k) memset(bp, 0, np * kp * sizeof *bp);
  if (s.bk == 1) {
    for (size_t j = 0; j < n; j++) {
      const float *col = b + j * s.bj;
      float *d = bp + j / NR * kp * NR + j % NR;
      for (size_t p = 0; p < k; p++) d[p * NR] = col[p];
    }
    return;
  }
  for (size_t p = 0; p < k; p++)
    for (size_t j0 = 0; j0 < n; j0 += NR) {
      float *d = bp + j0 / NR * kp * NR + p * NR;
      const float *row = b + p * s.bk + j0 * s.bj;
      size_t w = min_size(NR, n - j0);
      for (size_t jj = 0; jj < w; jj++) d[jj] = row[jj * s.bj];
    }
}

/* The tile's first rows x cols into C (row stride ldc), added to what is
 * there when accumulating. */
AVX512_TARGET static inline void store_tile(__m512 acc[MR][NV], float *c, size_t ldc, size_t rows, size_t cols,
                                            int accumulate) {
  for (size_t r = 0; r < rows; r++)
    for (size_t v = 0; v < NV && 16 * v < cols; v++) {
      size_t left = cols - 16 * v;
      __mmask16 mask = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
      float *p = c + r * ldc + 16 * v;
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, p));
      _mm512_mask_storeu_ps(p, mask, x);
    }
}

AVX512_TARGET static void kernel_bf16(const void *apv, size_t kp, const void *bpv, float *c, size_t ldc,
                                      size_t rows, size_t cols, int accumulate) {
  const uint16_t *ap = apv, *bp = bpv;
  __m512 acc[MR][NV];
#pragma GCC unroll 4
  for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
  for (size_t pp = 0; pp < kp / 2; pp++, bp += NR * 2) {
    __m512bh b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) b[v] = (__m512bh)_mm512_loadu_si512(bp + 32 * v);
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++) {
      uint32_t pair;
      memcpy(&pair, ap + r * kp + 2 * pp, sizeof pair);
      __m512bh a = (__m512bh)_mm512_set1_epi32((int)pair);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
    }
  }
  store_tile(acc, c, ldc, rows, cols, accumulate);
}

AVX512_TARGET static void kernel_f32(const void *apv, size_t kp, const void *bpv, float *c, size_t ldc, size_t rows,
                                     size_t cols, int accumulate) {
  const float *ap = apv, *bp = bpv;
  __m512 acc[MR][NV];
#pragma GCC unroll 4
  for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
  for (size_t p = 0; p < kp; p++, bp += NR) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) b[v] = _mm512_loadu_ps(bp + 16 * v);
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++) {
      __m512 a = _mm512_set1_ps(ap[r * kp + p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
  }
  store_tile(acc, c, ldc, rows, cols, accumulate);
}

/* What differs between the bf16 and the f32 product. */
typedef struct mm_path {
  size_t es;    /* bytes per element */
  size_t kstep; /* k values one kernel step consumes per lane */
  void (*pack_a)(void *dst, const void *a, backend_strides s, size_t m, size_t k, size_t mp, size_t kp);
  void (*pack_b)(void *dst, const void *b, backend_strides s, size_t k, size_t n, size_t kp, size_t np);
  void (*kernel)(const void *ap, size_t kp, const void *bp, float *c, size_t ldc, size_t rows, size_t cols,
                 int accumulate);
} mm_path;

static const mm_path path_bf16 = {2, 2, pack_a_bf16, pack_b_bf16, kernel_bf16};
static const mm_path path_f32 = {4, 1, pack_a_f32, pack_b_f32, kernel_f32};

static int avx512_mm(backend *be, const mm_path *path, backend_op op, size_t m, size_t n, size_t k,
                     const void *a, const void *b, float *c, int accumulate) {
  if (m == 0 || n == 0) return 0;
  size_t kp = round_up(k, path->kstep), mp = round_up(m, MR), np = round_up(n, NR);
  /* The packed sizes are at most a few times the operands the caller
   * already holds, so only a wrap-around needs guarding. */
  if (kp > SIZE_MAX / path->es / (mp > np ? mp : np)) {
    snprintf(be->err, sizeof be->err, "avx512bf16: product %zux%zux%zu is too large", m, n, k);
    return -1;
  }
  char *ap = backend_scratch_get(&be->scratch[0], mp * kp * path->es);
  char *bp = backend_scratch_get(&be->scratch[1], np * kp * path->es);
  if (!ap || !bp) {
    snprintf(be->err, sizeof be->err, "avx512bf16: out of memory packing a %zux%zux%zu product", m, n, k);
    return -1;
  }
  backend_strides s = backend_op_strides(op, m, n, k);
  path->pack_a(ap, a, s, m, k, mp, kp);
  path->pack_b(bp, b, s, k, n, kp, np);
  /* One B panel (kp x NR) stays in cache while every row block uses it. */
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    const char *panel = bp + (j0 / NR) * kp * NR * path->es;
    size_t cols = n - j0 < NR ? n - j0 : NR;
    for (size_t i = 0; i < m; i += MR)
      path->kernel(ap + i * kp * path->es, kp, panel, c + i * n + j0, n, m - i < MR ? m - i : MR, cols, accumulate);
  }
  return 0;
}

static int avx512_mm_bf16(backend *be, backend_op op, size_t m, size_t n, size_t k, const uint16_t *a,
                          const uint16_t *b, float *c, int accumulate) {
  return avx512_mm(be, &path_bf16, op, m, n, k, a, b, c, accumulate);
}

static int avx512_mm_f32(backend *be, backend_op op, size_t m, size_t n, size_t k, const float *a, const float *b,
                         float *c, int accumulate) {
  return avx512_mm(be, &path_f32, op, m, n, k, a, b, c, accumulate);
}

int backend_avx512_open(backend *be, int need_bf16, char *why, size_t len) {
  /* libgcc's check also asks the OS (XGETBV) whether it saves zmm state. */
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl")) {
    snprintf(why, len, "this CPU does not report AVX512_BF16 (vdpbf16ps)");
    return -1;
  }
  be->name = "avx512bf16";
  be->mm_bf16 = avx512_mm_bf16;
  be->mm_f32 = avx512_mm_f32;
  return 0;
}
