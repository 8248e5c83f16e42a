/*
 * bf16.h -- float32 -> bfloat16 conversion, the one both sides use.
 * Called by batch assembly and the text tables (daemon), libbfeed, bfeed-train.
 *
 * Rounding is to nearest, ties to even, on the bit pattern: finite values
 * that round past FLT_MAX become Inf, Inf stays Inf, subnormals are rounded
 * (never flushed), and a NaN becomes a quiet NaN with its sign and top
 * payload bits kept (bits >> 16 | 0x0040). The array function may use SIMD
 * but is bit-identical to bf16_from_f32() for all 2^32 inputs (tested).
 */
#ifndef BFEED_BF16_H
#define BFEED_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t bf16_from_bits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline uint16_t bf16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return bf16_from_bits(u);
}

static inline float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* dst[i] = bf16_from_f32(src[i]) for i < n; dst and src must not overlap.
 * Picks an AVX2 or AVX-512 path at run time where the CPU has one. */
void bf16_from_f32_array(uint16_t *dst, const float *src, size_t n);
/* The portable loop, for tests and as the fallback. */
void bf16_from_f32_array_scalar(uint16_t *dst, const float *src, size_t n);
/* Name of the path bf16_from_f32_array uses on this CPU: "avx512", "avx2", "scalar". */
const char *bf16_array_impl(void);

/* One named path ("avx512", "avx2", "scalar"), or NULL where this CPU (or
 * this build) lacks it: lets the tests hold every path available to the
 * scalar rule, not only the one the dispatcher picks. */
typedef void bf16_array_fn(uint16_t *dst, const float *src, size_t n);
bf16_array_fn *bf16_array_path(const char *name);

#endif
