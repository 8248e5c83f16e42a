/*
 * test_tobf16.c -- every compiled path the CPU runs gives the scalar
 * reference's bytes, and the scalar path gives what the definition says
 * (lut[c][rgb[y][flip ? size-1-x : x][c]], little-endian, NCHW or NHWC).
 *
 * Exhaustive over what matters: every one of the 256 values in each of the
 * 3 channels reaches every path in both layouts with and without the flip
 * (images whose pixels run through all values, with a table of 768
 * distinct entries), at sizes that leave no remainder, only a remainder,
 * and both, for the 8- and 16-pixel chunks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tobf16.h"

static void fill_lut(uint16_t lut[3][256], uint32_t seed) {
  /* A permutation-like scramble: distinct entries, so a wrong channel or
   * value shows up as a different number. */
  for (int c = 0; c < 3; c++)
    for (int v = 0; v < 256; v++)
      lut[c][v] = (uint16_t)(((uint32_t)(c * 256 + v) * 40503u + seed) & 0xFFFF);
}

/* Pixel (x, y) channel c: every value of every channel appears in each of
 * the first 256 pixels of the image, in a different order per channel. */
static void fill_image(uint8_t *rgb, int size) {
  for (int p = 0; p < size * size; p++)
    for (int c = 0; c < 3; c++)
      rgb[3 * p + c] = (uint8_t)((p * (2 * c + 1) + 85 * c) & 255);
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void check_definition(const uint8_t *rgb, int size, int flip, int nhwc, const uint16_t lut[3][256],
                             const uint8_t *out) {
  for (int y = 0; y < size; y++)
    for (int x = 0; x < size; x++)
      for (int c = 0; c < 3; c++) {
        size_t at = nhwc ? ((size_t)y * size + x) * 3 + c : ((size_t)c * size + y) * size + x;
        int sx = flip ? size - 1 - x : x;
        uint16_t want = lut[c][rgb[((size_t)y * size + sx) * 3 + c]];
        if (get16(out + 2 * at) != want)
          fail_msg("scalar size %d flip %d nhwc %d: (%d,%d,%d) = %u, want %u", size, flip, nhwc, c, y, x,
                   get16(out + 2 * at), want);
      }
}

static void test_paths_equal_scalar(void **state) {
  (void)state;
  static const int sizes[] = {1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 48, 57, 224};
  uint16_t lut[3][256];
  fill_lut(lut, 12345);
  int ran[TOBF16_NPATHS] = {0};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int size = sizes[s];
    size_t px = (size_t)size * size, bytes = px * 6;
    uint8_t *rgb = malloc(px * 3), *ref = malloc(bytes + 64), *got = malloc(bytes + 64);
    assert_non_null(rgb);
    assert_non_null(ref);
    assert_non_null(got);
    fill_image(rgb, size);
    for (int nhwc = 0; nhwc <= 1; nhwc++)
      for (int flip = 0; flip <= 1; flip++) {
        memset(ref, 0xA5, bytes + 64);
        tobf16_image_path(TOBF16_SCALAR, rgb, size, flip, nhwc, (const uint16_t(*)[256])lut, ref);
        check_definition(rgb, size, flip, nhwc, (const uint16_t(*)[256])lut, ref);
        for (int p = 0; p < TOBF16_NPATHS; p++) {
          if (!tobf16_supported((enum tobf16_path)p))
            continue;
          memset(got, 0x5A, bytes + 64);
          tobf16_image_path((enum tobf16_path)p, rgb, size, flip, nhwc, (const uint16_t(*)[256])lut, got);
          if (memcmp(got, ref, bytes) != 0)
            fail_msg("%s differs from scalar at size %d flip %d nhwc %d", tobf16_path_name((enum tobf16_path)p),
                     size, flip, nhwc);
          for (int k = 0; k < 64; k++)
            assert_int_equal(got[bytes + k], 0x5A); /* nothing written past the slot */
          ran[p]++;
        }
        memset(got, 0, bytes);
        tobf16_image(rgb, size, flip, nhwc, (const uint16_t(*)[256])lut, got);
        assert_memory_equal(got, ref, bytes);
      }
    free(rgb);
    free(ref);
    free(got);
  }
  for (int p = 0; p < TOBF16_NPATHS; p++)
    print_message("%s: %s\n", tobf16_path_name((enum tobf16_path)p), ran[p] ? "checked" : "not supported here");
}

/* All 256 values x 3 channels at each lane of a chunk: one 16x16 image
 * per channel rotation where pixel p holds value (p + k) & 255 in every
 * channel, for k over all 256 offsets. */
static void test_every_value_every_lane(void **state) {
  (void)state;
  enum { S = 16 };
  uint16_t lut[3][256];
  fill_lut(lut, 777);
  uint8_t rgb[S * S * 3], ref[S * S * 6], got[S * S * 6];
  for (int k = 0; k < 256; k++) {
    for (int p = 0; p < S * S; p++)
      for (int c = 0; c < 3; c++)
        rgb[3 * p + c] = (uint8_t)(p + k + 91 * c);
    for (int nhwc = 0; nhwc <= 1; nhwc++)
      for (int flip = 0; flip <= 1; flip++) {
        tobf16_image_path(TOBF16_SCALAR, rgb, S, flip, nhwc, (const uint16_t(*)[256])lut, ref);
        check_definition(rgb, S, flip, nhwc, (const uint16_t(*)[256])lut, ref);
        for (int p = 1; p < TOBF16_NPATHS; p++)
          if (tobf16_supported((enum tobf16_path)p)) {
            tobf16_image_path((enum tobf16_path)p, rgb, S, flip, nhwc, (const uint16_t(*)[256])lut, got);
            assert_memory_equal(got, ref, sizeof ref);
          }
      }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths_equal_scalar),
      cmocka_unit_test(test_every_value_every_lane),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
