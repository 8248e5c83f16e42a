/*
 * tobf16.c -- see tobf16.h.
 *
 * The vector paths take P pixels of a row at a time (8 for AVX2, 16 for
 * AVX-512): their 3P bytes are loaded as 16-byte registers, and each of the
 * three output vectors (a channel's P values for NCHW, the next P of the
 * interleaved 3P for NHWC) is picked out of them with byte shuffles whose
 * masks encode layout and flip. The picked bytes, widened and offset by
 * 256 * channel, index a 32-bit copy of the table through one gather; the
 * results are narrowed to 16 bits and stored. A flip reads the chunk that
 * mirrors the output's and reverses it in the masks, so every path reads
 * each byte once and writes each output once. Pixels left over at the end of
 * a row go through the scalar code.
 */
#include "tobf16.h"

#include <string.h>

/* Byte-shuffle masks and table offsets for P pixels: output vector j, lane
 * i takes byte mask[j][k][i] of source register k (0x80: none) plus
 * add[j][i]. */
typedef struct tobf16_plan {
  uint8_t mask[3][3][16];
  int32_t add[3][16];
} tobf16_plan;

static void tobf16_plan_make(tobf16_plan *pl, int P, int nhwc, int flip) {
  memset(pl->mask, 0x80, sizeof pl->mask);
  memset(pl->add, 0, sizeof pl->add);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < P; i++) {
      int e = j * P + i; /* NHWC: the e-th value of the chunk's interleaved run */
      int p = nhwc ? e / 3 : i, c = nhwc ? e % 3 : j;
      int b = 3 * (flip ? P - 1 - p : p) + c;
      pl->mask[j][b / 16][i] = (uint8_t)(b % 16);
      pl->add[j][i] = 256 * c;
    }
}

static inline void tobf16_put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

/* Where output value (c, y, x) of an h x w image goes, in values. */
static inline size_t tobf16_at(int h, int w, int nhwc, int c, int y, int x) {
  size_t px = (size_t)y * w + x;
  return nhwc ? px * 3 + c : (size_t)c * h * w + px;
}

/* Outputs [x0, x1) of row y, one value at a time: the reference. */
static void tobf16_span(const uint8_t *rgb, int h, int w, int y, int x0, int x1, int flip, int nhwc,
                        const uint16_t lut[3][256], uint8_t *dst) {
  const uint8_t *row = rgb + (size_t)y * w * 3;
  for (int x = x0; x < x1; x++) {
    const uint8_t *px = row + 3 * (size_t)(flip ? w - 1 - x : x);
    for (int c = 0; c < 3; c++)
      tobf16_put16(dst + 2 * tobf16_at(h, w, nhwc, c, y, x), lut[c][px[c]]);
  }
}

static void tobf16_scalar(const uint8_t *rgb, int h, int w, int flip, int nhwc, const uint16_t lut[3][256],
                          uint8_t *dst) {
  for (int y = 0; y < h; y++)
    tobf16_span(rgb, h, w, y, 0, w, flip, nhwc, lut, dst);
}

/* The lookup path: the table read one value at a time, as the scalar
 * path does, but eight values are assembled in registers and written as
 * one 16-byte store, non-temporal where the output is 16-byte aligned (a
 * batch is written once and read by another process later: streaming it
 * past the cache saves the read for ownership). On AMD's EPYC, where a
 * gather is slow, this is the fastest path: a 224 x 224 image into a 19 MB
 * ring, the two paths taking turns in one process, took 1.6-1.9 times as
 * long with the AVX2 gathers, in either layout (bench/README.md, "Casting
 * to bf16"). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TOBF16_X86 1
#endif

/* Eight values, lo holding the first four (lowest bits first), as one
 * 16-byte store. */
static inline void tobf16_store8(uint8_t *o, uint64_t lo, uint64_t hi) {
#ifdef TOBF16_X86
  __m128i x = _mm_set_epi64x((long long)hi, (long long)lo);
  if (((uintptr_t)o & 15) == 0)
    _mm_stream_si128((__m128i *)o, x);
  else
    _mm_storeu_si128((__m128i *)o, x);
#else
  for (int i = 0; i < 8; i++)
    o[i] = (uint8_t)(lo >> (8 * i)), o[8 + i] = (uint8_t)(hi >> (8 * i));
#endif
}

/* NHWC: channel c of the j-th pixel from p, shifted to the i-th value of
 * a register; four values per register. */
#define TOBF16_V(j, c, i) ((uint64_t)lut[c][p[(j) * st + (c)]] << (16 * (i)))
#define TOBF16_FOUR(j0, c0, j1, c1, j2, c2, j3, c3) \
  (TOBF16_V(j0, c0, 0) | TOBF16_V(j1, c1, 1) | TOBF16_V(j2, c2, 2) | TOBF16_V(j3, c3, 3))

static void tobf16_lookup(const uint8_t *rgb, int h, int w, int flip, int nhwc, const uint16_t lut[3][256],
                          uint8_t *dst) {
  ptrdiff_t st = flip ? -3 : 3;
  for (int y = 0; y < h; y++) {
    const uint8_t *row = rgb + (size_t)y * w * 3, *first = row + (flip ? 3 * (size_t)(w - 1) : 0);
    int x = 0;
    if (!nhwc) { /* each channel's row: eight pixels a store */
      for (int c = 0; c < 3; c++) {
        const uint8_t *p = first + c;
        uint8_t *o = dst + 2 * tobf16_at(h, w, 0, c, y, 0);
        const uint16_t *L = lut[c];
        for (x = 0; x + 8 <= w; x += 8, p += 8 * st, o += 16) {
          uint64_t lo = (uint64_t)L[p[0]] | (uint64_t)L[p[st]] << 16 | (uint64_t)L[p[2 * st]] << 32 |
                        (uint64_t)L[p[3 * st]] << 48;
          uint64_t hi = (uint64_t)L[p[4 * st]] | (uint64_t)L[p[5 * st]] << 16 | (uint64_t)L[p[6 * st]] << 32 |
                        (uint64_t)L[p[7 * st]] << 48;
          tobf16_store8(o, lo, hi);
        }
      }
    } else { /* eight pixels, 24 interleaved values, three stores */
      uint8_t *o = dst + 2 * tobf16_at(h, w, 1, 0, y, 0);
      for (const uint8_t *p = first; x + 8 <= w; x += 8, p += 8 * st, o += 48) {
        tobf16_store8(o, TOBF16_FOUR(0, 0, 0, 1, 0, 2, 1, 0), TOBF16_FOUR(1, 1, 1, 2, 2, 0, 2, 1));
        tobf16_store8(o + 16, TOBF16_FOUR(2, 2, 3, 0, 3, 1, 3, 2), TOBF16_FOUR(4, 0, 4, 1, 4, 2, 5, 0));
        tobf16_store8(o + 32, TOBF16_FOUR(5, 1, 5, 2, 6, 0, 6, 1), TOBF16_FOUR(6, 2, 7, 0, 7, 1, 7, 2));
      }
    }
    tobf16_span(rgb, h, w, y, x, w, flip, nhwc, lut, dst);
  }
#ifdef TOBF16_X86
  _mm_sfence(); /* the streamed stores, ordered before the batch is published */
#endif
}

/* Where a chunk's output vector j starts, in values. */
static inline size_t tobf16_chunk_at(int h, int w, int nhwc, int j, int y, int x, int P) {
  return nhwc ? tobf16_at(h, w, 1, 0, y, x) + (size_t)j * P : tobf16_at(h, w, 0, j, y, x);
}

#ifdef TOBF16_X86
/* The row loop of a vector path: CHUNK(src, j, out) writes output vector j
 * of the P pixels starting at source pixel src to out. */
#define TOBF16_ROWS(P, CHUNK)                                                                  \
  for (int y = 0; y < h; y++) {                                                                \
    const uint8_t *row = rgb + (size_t)y * w * 3;                                              \
    int x = 0;                                                                                 \
    for (; x + (P) <= w; x += (P)) {                                                           \
      const uint8_t *src = row + 3 * (size_t)(flip ? w - x - (P) : x);                          \
      for (int j = 0; j < 3; j++)                                                              \
        CHUNK(src, j, dst + 2 * tobf16_chunk_at(h, w, nhwc, j, y, x, (P)));                    \
    }                                                                                          \
    tobf16_span(rgb, h, w, y, x, w, flip, nhwc, lut, dst);                                     \
  }

__attribute__((target("avx2"), always_inline)) static inline void
tobf16_chunk_avx2(const tobf16_plan *pl, const uint32_t *tbl, const uint8_t *src, int j, uint8_t *out) {
  __m128i r0 = _mm_loadu_si128((const __m128i *)src);
  __m128i r1 = _mm_loadl_epi64((const __m128i *)(src + 16)); /* 24 bytes, no more */
  __m128i idx = _mm_or_si128(_mm_shuffle_epi8(r0, _mm_loadu_si128((const __m128i *)pl->mask[j][0])),
                             _mm_shuffle_epi8(r1, _mm_loadu_si128((const __m128i *)pl->mask[j][1])));
  __m256i v = _mm256_add_epi32(_mm256_cvtepu8_epi32(idx), _mm256_loadu_si256((const __m256i *)pl->add[j]));
  __m256i g = _mm256_i32gather_epi32((const int *)tbl, v, 4);
  __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1));
  _mm_storeu_si128((__m128i *)out, w);
}

__attribute__((target("avx2"))) static void tobf16_avx2(const uint8_t *rgb, int h, int w, int flip, int nhwc,
                                                        const uint16_t lut[3][256], const uint32_t *tbl,
                                                        uint8_t *dst) {
  tobf16_plan pl;
  tobf16_plan_make(&pl, 8, nhwc, flip);
#define TOBF16_CHUNK_AVX2(src, j, out) tobf16_chunk_avx2(&pl, tbl, src, j, out)
  TOBF16_ROWS(8, TOBF16_CHUNK_AVX2)
#undef TOBF16_CHUNK_AVX2
}

__attribute__((target("avx512f,avx2"), always_inline)) static inline void
tobf16_chunk_avx512(const tobf16_plan *pl, const uint32_t *tbl, const uint8_t *src, int j, uint8_t *out) {
  __m128i idx = _mm_setzero_si128();
  for (int k = 0; k < 3; k++)
    idx = _mm_or_si128(idx, _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(src + 16 * k)),
                                             _mm_loadu_si128((const __m128i *)pl->mask[j][k])));
  __m512i v = _mm512_add_epi32(_mm512_cvtepu8_epi32(idx), _mm512_loadu_si512(pl->add[j]));
  __m512i g = _mm512_i32gather_epi32(v, tbl, 4);
  _mm256_storeu_si256((__m256i *)out, _mm512_cvtepi32_epi16(g));
}

__attribute__((target("avx512f,avx2"))) static void tobf16_avx512(const uint8_t *rgb, int h, int w, int flip,
                                                                  int nhwc, const uint16_t lut[3][256],
                                                                  const uint32_t *tbl, uint8_t *dst) {
  tobf16_plan pl;
  tobf16_plan_make(&pl, 16, nhwc, flip);
#define TOBF16_CHUNK_AVX512(src, j, out) tobf16_chunk_avx512(&pl, tbl, src, j, out)
  TOBF16_ROWS(16, TOBF16_CHUNK_AVX512)
#undef TOBF16_CHUNK_AVX512
}
#endif

int tobf16_supported(enum tobf16_path path) {
  switch (path) {
  case TOBF16_SCALAR:
  case TOBF16_LOOKUP:
    return 1;
#ifdef TOBF16_X86
  case TOBF16_AVX2:
    return __builtin_cpu_supports("avx2");
  case TOBF16_AVX512:
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
#endif
  default:
    return 0;
  }
}

const char *tobf16_path_name(enum tobf16_path path) {
  static const char *const names[TOBF16_NPATHS] = {"scalar", "avx2", "avx512", "lookup"};
  return (unsigned)path < TOBF16_NPATHS ? names[path] : "?";
}

void tobf16_rect_path(enum tobf16_path path, const uint8_t *rgb, int h, int w, int flip, int nhwc,
                      const uint16_t lut[3][256], uint8_t *dst) {
  if (path == TOBF16_LOOKUP) {
    tobf16_lookup(rgb, h, w, flip, nhwc, lut, dst);
    return;
  }
#ifdef TOBF16_X86
  if (path != TOBF16_SCALAR) {
    /* 32-bit entries: what a gather reads, without reading past the table. */
    uint32_t tbl[3 * 256];
    for (int i = 0; i < 3 * 256; i++)
      tbl[i] = lut[i / 256][i % 256];
    if (path == TOBF16_AVX512)
      tobf16_avx512(rgb, h, w, flip, nhwc, lut, tbl, dst);
    else
      tobf16_avx2(rgb, h, w, flip, nhwc, lut, tbl, dst);
    return;
  }
#else
  (void)path;
#endif
  tobf16_scalar(rgb, h, w, flip, nhwc, lut, dst);
}

void tobf16_rect(const uint8_t *rgb, int h, int w, int flip, int nhwc, const uint16_t lut[3][256], uint8_t *dst) {
  static int best = -1; /* racing threads all store the same value */
  int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
  if (b < 0) {
    /* The gathers where they are fast (Intel), the lookups elsewhere. */
    b = TOBF16_LOOKUP;
#ifdef TOBF16_X86
    if (!__builtin_cpu_is("amd"))
      for (int p = TOBF16_AVX512; p > TOBF16_SCALAR; p--)
        if (tobf16_supported((enum tobf16_path)p)) {
          b = p;
          break;
        }
#endif
    __atomic_store_n(&best, b, __ATOMIC_RELAXED);
  }
  tobf16_rect_path((enum tobf16_path)b, rgb, h, w, flip, nhwc, lut, dst);
}

void tobf16_image_path(enum tobf16_path path, const uint8_t *rgb, int size, int flip, int nhwc,
                       const uint16_t lut[3][256], uint8_t *dst) {
  tobf16_rect_path(path, rgb, size, size, flip, nhwc, lut, dst);
}

void tobf16_image(const uint8_t *rgb, int size, int flip, int nhwc, const uint16_t lut[3][256], uint8_t *dst) {
  tobf16_rect(rgb, size, size, flip, nhwc, lut, dst);
}
