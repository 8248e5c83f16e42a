/*
 * raw_decode.h -- raw image records: decoded RGB pixels as `bfeed pack
 * --images raw` stores them, read by image_decode.c as its fourth format
 * (IMAGE_DECODE_RAW) and written by the pack writer (tools/pack).
 *
 * A record is a 16-byte header -- the magic "BFRAW1", u16 channels (3),
 * u32 width, u32 height, little-endian -- then height rows of width RGB
 * pixels, nothing after (PACK_FORMAT.md "Raw image records").
 */
#ifndef BFEED_RAW_DECODE_H
#define BFEED_RAW_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define RAW_DECODE_MAGIC "BFRAW1"
#define RAW_DECODE_HEADER 16
#define RAW_DECODE_MAX_SIDE 65535u

/* The header of a width x height RGB record. */
void raw_decode_header(uint8_t out[RAW_DECODE_HEADER], uint32_t width, uint32_t height);
/* 1 when b starts with the magic. */
int raw_decode_is(const uint8_t *b, size_t n);
/* The size the record b[0..n) says, checked against n: BFEED_EDATASET
 * naming what is wrong (short, not 3 channels, sizes that do not match). */
int raw_decode_parse(const uint8_t *b, size_t n, int *width, int *height, char *err, size_t errlen);
/* Columns [x0, x1) of rows [y0, y1) of the record b (parsed: w pixels a
 * row) as RGBX (the fourth byte 255) into rect, rows `row` bytes apart. */
void raw_decode_rect(const uint8_t *b, int w, int x0, int x1, int y0, int y1, uint8_t *rect, size_t row);

#endif
