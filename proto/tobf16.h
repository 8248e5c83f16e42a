/*
 * tobf16.h -- one pass from an RGB8 image to its bf16 tensor slot.
 * Called by the daemon's batch.c (building a batch's image tensor) and by
 * codec.c (libbfeed expanding codec u8's pixels): one implementation, with
 * its SIMD paths, for both sides of the wire.
 *
 * Flip, normalize, cast and layout in one read of the pixels: output value
 * (c, y, x) is lut[c][rgb[y][flip ? w-1-x : x][c]], stored little-endian
 * as [3][h][w] (NCHW) or [h][w][3] (NHWC). The table is the stream's
 * 3 x 256 bf16 values (batch_spec.lut, also what codec u8 sends).
 *
 * Paths are chosen at run time from what the CPU is (AVX-512 or AVX2
 * gathers, or the lookup path on AMD and CPUs without either);
 * the scalar path is the reference, and test_tobf16 checks every compiled
 * path the CPU can run against it, bit for bit.
 */
#ifndef BFEED_TOBF16_H
#define BFEED_TOBF16_H

#include <stddef.h>
#include <stdint.h>

/* LOOKUP: table lookups one by one, stored eight at a time (streamed past
 * the cache when aligned): what tobf16_rect uses on AMD, whose gathers
 * are slow; AVX2 and AVX-512 gather, and are used elsewhere. */
enum tobf16_path { TOBF16_SCALAR = 0, TOBF16_AVX2 = 1, TOBF16_AVX512 = 2, TOBF16_LOOKUP = 3, TOBF16_NPATHS = 4 };

/* Whether path was compiled in and this CPU can run it. */
int tobf16_supported(enum tobf16_path path);
/* Its name, for messages ("scalar", "avx2", "avx512"). */
const char *tobf16_path_name(enum tobf16_path path);

/* rgb: h x w pixels, 3 bytes each, rows w*3 bytes apart; dst gets 3*h*w
 * bf16 values (6*h*w bytes). nhwc: 0 for NCHW. */
void tobf16_rect(const uint8_t *rgb, int h, int w, int flip, int nhwc, const uint16_t lut[3][256], uint8_t *dst);
/* The same on a given path, which must be supported. */
void tobf16_rect_path(enum tobf16_path path, const uint8_t *rgb, int h, int w, int flip, int nhwc,
                      const uint16_t lut[3][256], uint8_t *dst);
/* A square image, size x size (what a stream's batches hold). */
void tobf16_image(const uint8_t *rgb, int size, int flip, int nhwc, const uint16_t lut[3][256],
                  uint8_t *dst);
void tobf16_image_path(enum tobf16_path path, const uint8_t *rgb, int size, int flip, int nhwc,
                       const uint16_t lut[3][256], uint8_t *dst);

#endif
