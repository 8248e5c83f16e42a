/*
 * png_decode.h -- PNG bytes to RGBX rows, the pixels of Pillow's convert("RGB").
 * Called by image_decode.c, the format dispatcher of the sample path.
 *
 * Built on libpng rather than libspng: on Pillow-written photos (mostly
 * Paeth-filtered rows) libpng 1.6.39 decodes in 3.7 ms what libspng 0.7.3
 * does in 4.6 ms (500x375 RGB), and libspng 0.7.3 places the pixels of
 * interlaced images below 8 bits wrongly. Scanline by scanline, so only
 * the rectangle a crop needs is kept, interlaced images included.
 *
 * Every row is decoded even when a crop needs fewer, so whether a damaged
 * file is refused never depends on the crop drawn. Rows come out raw
 * (no libpng transformations: 16-bit big-endian, sub-byte samples packed)
 * and are converted here with Pillow 9.4's rules, which are
 * not libpng's: 16-bit grayscale opens as mode "I" and convert("RGB")
 * clips it to 0..255 (it does not scale), every other 16-bit sample keeps
 * its high byte, 1/2/4-bit gray is scaled by 255, 85 and 17, palette indices
 * past the PLTE read Pillow's grey ramp (i, i, i), and alpha and tRNS are
 * dropped, not composited. Gamma, sBIT and colour profiles are ignored, as
 * Pillow ignores them.
 */
#ifndef BFEED_PNG_DECODE_H
#define BFEED_PNG_DECODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct png_decode png_decode;

/* NULL when out of memory. */
png_decode *png_decode_new(void);
void png_decode_free(png_decode *d);

/* Read the signature and IHDR of the PNG in buf[0..len), which must stay
 * valid until png_decode_read returns. Nothing the size of the image is
 * allocated here, so the caller can refuse it first. BFEED_EDATASET (or
 * BFEED_ENOMEM) with a reason, like png_decode_read. */
int png_decode_header(png_decode *d, const uint8_t *buf, size_t len, int *width, int *height,
                      char *err, size_t errlen);

/* Bytes libpng and this decoder work in for the image whose header was
 * read (its rows, zlib's state), besides the caller's pixels. */
uint64_t png_decode_working(const png_decode *d);

/* Decode the image and keep columns [x0, x1) of rows [y0, y1) as RGBX in
 * out (row r at out + r * stride, the fourth byte 255). */
int png_decode_read(png_decode *d, int x0, int x1, int y0, int y1, uint8_t *out, size_t stride,
                    char *err, size_t errlen);

#endif
