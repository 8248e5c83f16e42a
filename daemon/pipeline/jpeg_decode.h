/*
 * jpeg_decode.h -- JPEG bytes to RGB8 rows, decoding only what is asked for.
 * Called by image_decode.c, the format dispatcher of the sample path (and the JPEG tests).
 *
 * Built on libjpeg's jpeglib.h API (libjpeg-turbo) rather than TurboJPEG
 * because a crop needs partial decoding: DCT-domain scaling (M/8), column
 * cropping (jpeg_crop_scanline) and row skipping (jpeg_skip_scanlines).
 *
 * Every libjpeg error, and every warning that means pixels were lost (a
 * truncated file is only a warning to libjpeg, which then pads with grey),
 * comes back as BFEED_EDATASET with a one-line reason; nothing here exits or aborts.
 *
 * Colour is converted as Pillow 9.4 does it, so that decoding matches
 * Image.open(f).convert("RGB") bit for bit: YCbCr, RGB and grayscale by
 * libjpeg itself; CMYK and YCCK read as inverted (Adobe) CMYK and then
 * converted with Pillow's cmyk2rgb.
 *
 * The pixel limit is image_decode.c's, checked between jpeg_decode_header
 * and jpeg_decode_start, before any memory the size of the image is used.
 *
 * A jdec is one decoder, reused for many images by one thread at a time;
 * nothing of one image (not even libjpeg's tables) carries to the next.
 * Use: jpeg_decode_header, then jpeg_decode_start, then jpeg_decode_read (once). Calling
 * jpeg_decode_header again at any point abandons the previous image.
 */
#ifndef BFEED_JPEG_DECODE_H
#define BFEED_JPEG_DECODE_H

#include <stddef.h>
#include <stdint.h>

/* max_decode_memory, the most one decode of any format may take (0 = no
 * limit): decode_mem_set_limit, under the name main.c calls. Process-wide,
 * set before workers decode. A JPEG is refused from its header when
 * libjpeg's working memory for it (a progressive image's whole-image
 * coefficient buffers, the strips every image has) would pass it: a small
 * file of a huge image fails with BFEED_EDATASET, naming the limit. While a
 * decode runs, that estimate is in decode_mem_held (flow.c counts it
 * against max_memory). */
void jpeg_decode_set_limit(uint64_t bytes);

typedef struct jdec jdec;

enum jpeg_decode_color { JPEG_DECODE_GRAY, JPEG_DECODE_YCBCR, JPEG_DECODE_RGB, JPEG_DECODE_CMYK, JPEG_DECODE_YCCK };

typedef struct jpeg_decode_info {
  int width, height;     /* full-size image, in pixels */
  int components;        /* 1, 3 or 4 */
  enum jpeg_decode_color color; /* as libjpeg reads it from the JFIF/Adobe markers */
  int progressive;
} jpeg_decode_info;

/* NULL when out of memory. */
jdec *jpeg_decode_new(void);
void jpeg_decode_free(jdec *d);

/* Read the headers of the JPEG in buf[0..len). buf must stay valid until
 * jpeg_decode_read returns or the next jpeg_decode_header. BFEED_ENOMEM
 * when a fresh libjpeg state cannot be had. */
int jpeg_decode_header(jdec *d, const uint8_t *buf, size_t len, jpeg_decode_info *info, char *err,
                size_t errlen);

/* The image size after IDCT scaling by scale_num/8 (1 <= scale_num <= 8):
 * libjpeg rounds up, so a partial last block still gives a pixel. */
void jpeg_decode_scaled_size(const jpeg_decode_info *info, int scale_num, int *w, int *h);

/* Begin decompression at scale_num/8. For a progressive JPEG this decodes
 * the whole file into coefficients, so most corruption shows up here. */
int jpeg_decode_start(jdec *d, int scale_num, char *err, size_t errlen);

/* Abandon the image in progress, if any: libjpeg's buffers for it go now,
 * not at the next jpeg_decode_header (the caller stopped between start and
 * read). */
void jpeg_decode_abort(jdec *d);

/* Decode rows [y0, y1) and columns [x0, x1) of the scaled image into out
 * as RGBX (row r of the rectangle at out + r * stride, 4 bytes per pixel,
 * the fourth undefined), then end the image. Rows above y0 are skipped and
 * rows from y1 on never decoded. */
int jpeg_decode_read(jdec *d, int x0, int x1, int y0, int y1, uint8_t *out, size_t stride, char *err,
              size_t errlen);

#endif
