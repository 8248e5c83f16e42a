/*
 * bf16.c -- the array form of bf16_from_f32(), with x86 SIMD paths.
 *
 * Each SIMD path is the scalar rule of bf16.h written with integer
 * instructions, lane by lane: round to nearest even by adding 0x7fff plus
 * the lowest kept bit, and replace NaNs by (bits >> 16) | 0x40. The
 * AVX512_BF16 instruction vcvtneps2bf16 is deliberately not used: it treats
 * subnormal inputs as zero, so it would not be bit-identical to the scalar
 * rule. Remainders shorter than one vector go through the scalar loop.
 */
#include "bf16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BF16_HAVE_X86 1
#endif

void bf16_from_f32_array_scalar(uint16_t *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = bf16_from_f32(src[i]);
}

#ifdef BF16_HAVE_X86

__attribute__((target("avx2"))) static inline __m256i bf16_avx2_lanes(__m256i u) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x0040);
  __m256i hi = _mm256_srli_epi32(u, 16);
  __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(hi, one))), 16);
  /* Both sides are below 2^31 once the sign is masked, so the signed
   * compare orders them correctly. */
  __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), is_nan);
}

__attribute__((target("avx2"))) static void bf16_array_avx2(uint16_t *dst, const float *src,
                                                            size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = bf16_avx2_lanes(_mm256_loadu_si256((const __m256i *)(src + i)));
    __m256i b = bf16_avx2_lanes(_mm256_loadu_si256((const __m256i *)(src + i + 8)));
    /* Every lane holds a value below 2^16, so unsigned saturation never
     * clips; packus interleaves 128-bit halves, the permute undoes that. */
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256((__m256i *)(dst + i), packed);
  }
  bf16_from_f32_array_scalar(dst + i, src + i, n - i);
}

__attribute__((target("avx512f,avx512bw"))) static void bf16_array_avx512(uint16_t *dst,
                                                                          const float *src,
                                                                          size_t n) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x0040);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i u = _mm512_loadu_si512((const void *)(src + i));
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(hi, one))), 16);
    __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    __m512i r = _mm512_mask_blend_epi32(is_nan, rounded, _mm512_or_si512(hi, quiet));
    _mm256_storeu_si256((__m256i *)(dst + i), _mm512_cvtepi32_epi16(r));
  }
  bf16_from_f32_array_scalar(dst + i, src + i, n - i);
}

#endif /* BF16_HAVE_X86 */

/* Fastest first; the list is read-only, the CPU check is done per call and
 * is cheap (libgcc caches the cpuid result). */
static const struct bf16_path {
  const char *name;
  bf16_array_fn *fn;
} bf16_paths[] = {
#ifdef BF16_HAVE_X86
    {"avx512", bf16_array_avx512},
    {"avx2", bf16_array_avx2},
#endif
    {"scalar", bf16_from_f32_array_scalar},
};

static int bf16_path_supported(const struct bf16_path *p) {
#ifdef BF16_HAVE_X86
  if (p->fn == bf16_array_avx512)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  if (p->fn == bf16_array_avx2) return __builtin_cpu_supports("avx2");
#endif
  return 1;
}

static const struct bf16_path *bf16_best_path(void) {
  size_t i = 0;
  while (!bf16_path_supported(&bf16_paths[i])) i++; /* "scalar" always is */
  return &bf16_paths[i];
}

bf16_array_fn *bf16_array_path(const char *name) {
  for (size_t i = 0; i < sizeof bf16_paths / sizeof bf16_paths[0]; i++)
    if (strcmp(bf16_paths[i].name, name) == 0)
      return bf16_path_supported(&bf16_paths[i]) ? bf16_paths[i].fn : NULL;
  return NULL;
}

void bf16_from_f32_array(uint16_t *dst, const float *src, size_t n) {
  bf16_best_path()->fn(dst, src, n);
}

const char *bf16_array_impl(void) { return bf16_best_path()->name; }
