/*
 * image_decode.h -- JPEG, PNG, WebP or raw (bfeed pack) bytes to RGBX, told
 * apart by their first bytes.
 * Called by sample.c (one image sample) and by the tests' dump tools.
 *
 * The format is the content's, never the file name's (as Pillow decides),
 * and every format comes out as the pixels of Pillow's
 * Image.open(f).convert("RGB"). Only JPEG can decode at a reduced scale
 * (the IDCT's M/8, see jpeg_decode.h); PNG and WebP report scalable = 0.
 *
 * Every call returns 0 or a negative BFEED_E* code with a one-line reason
 * in err: BFEED_EDATASET for what the file holds, BFEED_ELIMIT for an
 * image over a limit below, BFEED_ENOMEM, BFEED_EINTERNAL for a caller's
 * mistake.
 *
 * The pixel limit is checked from the header, before any memory the size
 * of the image is set aside: a small file claiming a huge size costs
 * nothing. The default is Pillow's decompression-bomb limit. So is the
 * memory limit (decode_mem.h, max_decode_memory): a PNG or WebP whose
 * decode could take more -- the whole image as RGBX, which the worst crop
 * needs, and the library's own buffers -- is refused from its header, a
 * JPEG from its header (jpeg_decode.h) and at its scale and crop
 * (image_decode_read), all as BFEED_ELIMIT naming the limit. The
 * decoded pixels, and the libraries' buffers while they decode, are
 * counted in decode_mem_held.
 */
#ifndef BFEED_IMAGE_DECODE_H
#define BFEED_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* PIL.Image.MAX_IMAGE_PIXELS: 1024 * 1024 * 1024 // 4 // 3. */
#define IMAGE_DECODE_MAX_PIXELS_DEFAULT 178956970u

/* RAW: bfeed pack's decoded pixels (packfile.h: a 16-byte header, then RGB
 * rows), read as they are; like PNG, never scalable, checked against the
 * limits from its header and widened to RGBX only for the rectangle read. */
enum image_decode_format { IMAGE_DECODE_JPEG, IMAGE_DECODE_PNG, IMAGE_DECODE_WEBP, IMAGE_DECODE_RAW };

typedef struct image_decode_info {
  int width, height; /* full-size image, in pixels */
  enum image_decode_format format;
  int scalable;      /* 1: image_decode_start accepts M < 8 */
} image_decode_info;

typedef struct image_decoder image_decoder;

/* NULL when out of memory. */
image_decoder *image_decode_new(void);
void image_decode_free(image_decoder *d);

/* "JPEG", "PNG", "WebP", "raw image record". */
const char *image_decode_format_name(enum image_decode_format f);

/* Read the headers of the image in buf[0..len), which must stay valid until
 * image_decode_read returns. An image of more than max_pixels pixels (0: no
 * limit) is refused here, as BFEED_ELIMIT. */
int image_decode_header(image_decoder *d, const uint8_t *buf, size_t len, uint64_t max_pixels,
                        image_decode_info *info, char *err, size_t errlen);

/* The size after decoding at scale_num/8 (8 for a format not scalable). */
void image_decode_scaled_size(const image_decode_info *info, int scale_num, int *w, int *h);

/* Begin decoding at scale_num/8 (8 unless info->scalable). */
int image_decode_start(image_decoder *d, int scale_num, char *err, size_t errlen);

/* Decode columns [x0, x1) and rows [y0, y1) of the scaled image as RGBX
 * (the fourth byte undefined) into memory the decoder holds until the next
 * image or image_decode_done: *px points at pixel (x0, y0), rows *stride
 * bytes apart. BFEED_ELIMIT when that rectangle alone is over
 * max_decode_memory (a JPEG at a scale and crop that need it). */
int image_decode_read(image_decoder *d, int x0, int x1, int y0, int y1, const uint8_t **px,
                      size_t *stride, char *err, size_t errlen);

/* The caller is done with the image, read or not: a decode started and
 * not read is abandoned, and a rectangle over DECODE_MEM_KEEP goes back to
 * the system now, not at the next image. */
void image_decode_done(image_decoder *d);

#endif
