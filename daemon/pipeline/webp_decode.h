/*
 * webp_decode.h -- WebP bytes to RGBX, the pixels of Pillow's convert("RGB").
 * Called by image_decode.c, the format dispatcher of the sample path.
 *
 * Pillow 9.4 opens every WebP through libwebp's WebPAnimDecoder, which
 * decodes a still image with WebPDecode's default options into
 * non-premultiplied RGBA; convert("RGB") then drops alpha. This calls
 * WebPDecode the same way, so lossy, lossless, with or without alpha, the
 * pixels are the same. Animated files are refused: Pillow would give the
 * first frame composited on the canvas, which no dataset we know of needs.
 *
 * libwebp decodes whole images only (a cropped decode would skip the data
 * that tells a truncated file), so the caller provides width x height x 4.
 */
#ifndef BFEED_WEBP_DECODE_H
#define BFEED_WEBP_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* Size of the WebP in buf[0..len) from its headers alone, and *working,
 * the bytes libwebp will allocate to decode it besides the caller's
 * pixels; BFEED_EDATASET with a reason for a file that is not a still WebP
 * (webp_decode_read: the same, or BFEED_ENOMEM). */
int webp_decode_header(const uint8_t *buf, size_t len, int *width, int *height, uint64_t *working,
                       char *err, size_t errlen);

/* Decode the whole image into out as RGBA, rows stride bytes apart (at
 * least width * 4), size bytes in all. */
int webp_decode_read(const uint8_t *buf, size_t len, uint8_t *out, size_t stride, size_t size,
                     char *err, size_t errlen);

#endif
