/* raw_decode.c -- raw image records (raw_decode.h). */
#include "raw_decode.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bfeed_types.h"
#include "wire.h"

void raw_decode_header(uint8_t out[RAW_DECODE_HEADER], uint32_t width, uint32_t height) {
  memcpy(out, RAW_DECODE_MAGIC, 6);
  wire_put16(out + 6, 3);
  wire_put32(out + 8, width);
  wire_put32(out + 12, height);
}

int raw_decode_is(const uint8_t *b, size_t n) { return n >= 6 && memcmp(b, RAW_DECODE_MAGIC, 6) == 0; }

int raw_decode_parse(const uint8_t *b, size_t n, int *width, int *height, char *err, size_t errlen) {
  if (n < RAW_DECODE_HEADER)
    return snprintf(err, errlen, "raw image record of %zu bytes, shorter than its %d-byte header", n,
                    RAW_DECODE_HEADER), BFEED_EDATASET;
  unsigned ch = wire_get16(b + 6);
  uint64_t w = wire_get32(b + 8), h = wire_get32(b + 12);
  if (ch != 3) return snprintf(err, errlen, "raw image record of %u channels, not 3", ch), BFEED_EDATASET;
  if (w < 1 || h < 1 || w > RAW_DECODE_MAX_SIDE || h > RAW_DECODE_MAX_SIDE)
    return snprintf(err, errlen, "raw image record of %" PRIu64 "x%" PRIu64 " pixels, outside 1..%u a side", w, h,
                    RAW_DECODE_MAX_SIDE), BFEED_EDATASET;
  if (n - RAW_DECODE_HEADER != w * h * 3)
    return snprintf(err, errlen, "raw image record of %" PRIu64 "x%" PRIu64 " RGB pixels holds %zu pixel bytes, not %" PRIu64,
                    w, h, n - RAW_DECODE_HEADER, w * h * 3), BFEED_EDATASET;
  *width = (int)w;
  *height = (int)h;
  return 0;
}

static void raw_decode_span(const uint8_t *s, int n, uint8_t *o) {
  for (int x = 0; x < n; x++, s += 3, o += 4) {
    o[0] = s[0];
    o[1] = s[1];
    o[2] = s[2];
    o[3] = 0xFF;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Four pixels a step: 16 bytes loaded (12 used), spread to RGBX by one
 * byte shuffle, the fourth byte set. A load stays inside the record: the
 * last pixels of the record go through raw_decode_span. This runs for
 * every raw sample (its whole clip), so it is worth its lines: about five
 * times the byte loop's speed. */
__attribute__((target("ssse3"))) static void raw_decode_rect_ssse3(const uint8_t *px, const uint8_t *end, int w,
                                                                    int x0, int x1, int y0, int y1, uint8_t *rect,
                                                                    size_t row) {
  const __m128i spread = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  const __m128i alpha = _mm_set1_epi32((int)0xFF000000u);
  for (int y = y0; y < y1; y++) {
    const uint8_t *s = px + ((size_t)y * (size_t)w + (size_t)x0) * 3;
    uint8_t *o = rect + (size_t)(y - y0) * row;
    int x = x0;
    for (; x + 4 <= x1 && end - s >= 16; x += 4, s += 12, o += 16) {
      __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)s), spread);
      _mm_storeu_si128((__m128i *)o, _mm_or_si128(v, alpha));
    }
    raw_decode_span(s, x1 - x, o);
  }
}
#define RAW_DECODE_SSSE3 1
#endif

void raw_decode_rect(const uint8_t *b, int w, int x0, int x1, int y0, int y1, uint8_t *rect, size_t row) {
  const uint8_t *px = b + RAW_DECODE_HEADER;
#ifdef RAW_DECODE_SSSE3
  if (__builtin_cpu_supports("ssse3")) {
    /* The record's end: its pixels are w x (at least y1) rows. */
    raw_decode_rect_ssse3(px, px + (size_t)w * (size_t)y1 * 3, w, x0, x1, y0, y1, rect, row);
    return;
  }
#endif
  for (int y = y0; y < y1; y++)
    raw_decode_span(px + ((size_t)y * (size_t)w + (size_t)x0) * 3, x1 - x0, rect + (size_t)(y - y0) * row);
}
