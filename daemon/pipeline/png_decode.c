/*
 * png_decode.c -- libpng row by row, converted as Pillow opens PNG modes.
 */
#include "png_decode.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "decode_mem.h"

struct png_decode {
  png_structp png;      /* one per image: libpng has no reset */
  png_infop info;
  const uint8_t *buf;   /* the file, read through png_decode_feed */
  size_t len, pos;
  uint32_t width, height;
  int depth, type, interlaced;
  decode_mem_buf raw;   /* one raw scanline */
  uint8_t pal[256][3];  /* RGB by index, as Pillow's palette holds it */
  char msg[160];        /* libpng's reason for the last failure */
};

png_decode *png_decode_new(void) { return calloc(1, sizeof(png_decode)); }

static void png_decode_end(png_decode *d) {
  if (d->png)
    png_destroy_read_struct(&d->png, &d->info, NULL);
  d->png = NULL;
  d->info = NULL;
}

void png_decode_free(png_decode *d) {
  if (!d)
    return;
  png_decode_end(d);
  decode_mem_release(&d->raw);
  free(d);
}

static void png_decode_on_error(png_structp png, png_const_charp msg) {
  png_decode *d = png_get_error_ptr(png);
  snprintf(d->msg, sizeof d->msg, "%s", msg);
  png_longjmp(png, 1);
}

/* Warnings are about ancillary chunks (a bad CRC, an oversized profile):
 * libpng drops the chunk and goes on, as Pillow ignores them. */
static void png_decode_on_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static void png_decode_feed(png_structp png, png_bytep out, size_t n) {
  png_decode *d = png_get_io_ptr(png);
  if (n > d->len - d->pos)
    png_error(png, "truncated");
  memcpy(out, d->buf + d->pos, n);
  d->pos += n;
}

static int png_decode_fail(png_decode *d, char *err, size_t errlen) {
  int rc = BFEED_EDATASET;
  if (strcmp(d->msg, "truncated") == 0)
    snprintf(err, errlen, "truncated data (PNG)");
  else if (strstr(d->msg, "memory"))
    rc = BFEED_ENOMEM, snprintf(err, errlen, "out of memory");
  else
    snprintf(err, errlen, "corrupt data: PNG: %s", d->msg);
  png_decode_end(d);
  return rc;
}

/* Everything up to the first IDAT: signature, IHDR, PLTE, tRNS. */
static void png_decode_info(png_decode *d) {
  png_set_read_fn(d->png, d, png_decode_feed);
  /* Our pixel limit decides, not libpng's default 1000000 per side. */
  png_set_user_limits(d->png, 0x7fffffff, 0x7fffffff);
  png_read_info(d->png, d->info);
  d->width = png_get_image_width(d->png, d->info);
  d->height = png_get_image_height(d->png, d->info);
  d->depth = png_get_bit_depth(d->png, d->info);
  d->type = png_get_color_type(d->png, d->info);
  d->interlaced = png_get_interlace_type(d->png, d->info) == PNG_INTERLACE_ADAM7;
}

int png_decode_header(png_decode *d, const uint8_t *buf, size_t len, int *width, int *height,
                      char *err, size_t errlen) {
  png_decode_end(d);
  d->buf = buf;
  d->len = len;
  d->pos = 0;
  d->msg[0] = 0;
  d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_decode_on_error,
                                  png_decode_on_warning);
  if (!d->png || !(d->info = png_create_info_struct(d->png))) {
    png_decode_end(d);
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  }
  if (setjmp(png_jmpbuf(d->png)))
    return png_decode_fail(d, err, errlen);
  png_decode_info(d);
  /* PNG limits both sides to 2^31 - 1, which libpng checks: an int holds them. */
  *width = (int)d->width;
  *height = (int)d->height;
  return 0;
}

/* libpng keeps two rows of the image (the current and the previous, for
 * the filters) and zlib's inflate state and 32 KiB window; we keep one raw
 * row more. */
uint64_t png_decode_working(const png_decode *d) {
  return d->png ? 3 * ((uint64_t)png_get_rowbytes(d->png, d->info) + 64) + (64u << 10) : 0;
}

/* Pillow's palette starts as the grey ramp (ImagingPaletteNew) and PLTE
 * overwrites its first entries: an index past them reads (i, i, i). */
static void png_decode_palette(png_decode *d) {
  png_colorp plte;
  int n = 0;
  for (int i = 0; i < 256; i++)
    d->pal[i][0] = d->pal[i][1] = d->pal[i][2] = (uint8_t)i;
  if (d->type != PNG_COLOR_TYPE_PALETTE || !png_get_PLTE(d->png, d->info, &plte, &n))
    return;
  for (int i = 0; i < n && i < 256; i++) {
    d->pal[i][0] = plte[i].red;
    d->pal[i][1] = plte[i].green;
    d->pal[i][2] = plte[i].blue;
  }
}

/* Samples below 8 bits, MSB first: gray scaled to 0..255 as Pillow's
 * "1", "L;2" and "L;4" unpackers do (x 255, 85, 17), or palette indices. */
static void png_decode_packed(const png_decode *d, const uint8_t *row, int x0, int n,
                              uint8_t *out) {
  unsigned depth = d->depth, mask = (1u << depth) - 1, scale = 255 / mask;
  int palette = d->type == PNG_COLOR_TYPE_PALETTE;
  for (int i = 0; i < n; i++, out += 4) {
    size_t bit = (size_t)(x0 + i) * depth;
    unsigned s = (row[bit >> 3] >> (8 - depth - (bit & 7))) & mask;
    if (palette)
      memcpy(out, d->pal[s], 3);
    else
      out[0] = out[1] = out[2] = (uint8_t)(s * scale);
    out[3] = 255;
  }
}

/* Columns [x0, x0 + n) of one raw row to RGBX. 16-bit rows are big-endian;
 * Pillow keeps the high byte of every 16-bit sample ("RGB;16B", "LA;16B")
 * except plain grayscale, which it opens as 32-bit "I" and clips. */
static void png_decode_convert(const png_decode *d, const uint8_t *row, int x0, int n,
                               uint8_t *out) {
  int type = d->type, depth = d->depth;
  if (depth < 8)
    return png_decode_packed(d, row, x0, n, out);
  size_t bytes = (size_t)depth / 8;
  size_t channels = type == PNG_COLOR_TYPE_RGB         ? 3
                    : type == PNG_COLOR_TYPE_RGB_ALPHA ? 4
                    : type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                                                              : 1;
  size_t step = channels * bytes;
  const uint8_t *p = row + (size_t)x0 * step;
  for (int i = 0; i < n; i++, p += step, out += 4) {
    if (type == PNG_COLOR_TYPE_PALETTE) {
      memcpy(out, d->pal[p[0]], 3);
    } else if (channels >= 3) {
      out[0] = p[0];
      out[1] = p[bytes];
      out[2] = p[2 * bytes];
    } else if (type == PNG_COLOR_TYPE_GRAY && depth == 16) {
      out[0] = out[1] = out[2] = p[0] ? 255 : p[1];
    } else {
      out[0] = out[1] = out[2] = p[0];
    }
    out[3] = 255;
  }
}

/* One scanline of pass p of an interlaced image, on image row y: its
 * pixels are columns xs, xs + dx, ... Those inside the rectangle are
 * converted one by one (interlaced files are rare, and placing them here
 * keeps only the rectangle in memory rather than the whole image). */
static void png_decode_pass_row(const png_decode *d, const uint8_t *row, int pass, int x0, int x1,
                                uint8_t *out) {
  int xs = (int)PNG_PASS_START_COL(pass), dx = 1 << PNG_PASS_COL_SHIFT(pass);
  int i = x0 > xs ? (x0 - xs + dx - 1) / dx : 0;
  for (int x = xs + i * dx; x < x1; x += dx, i++)
    png_decode_convert(d, row, i, 1, out + (size_t)(x - x0) * 4);
}

/* Every scanline is decoded, whatever the rectangle, so that a damaged
 * file fails whichever crop is drawn. Without png_set_interlace_handling
 * libpng hands over the scanlines of each Adam7 pass in turn, skipping
 * empty passes as the format does. */
static void png_decode_rows(png_decode *d, int x0, int x1, int y0, int y1, uint8_t *out,
                            size_t stride) {
  png_read_update_info(d->png, d->info);
  for (int pass = 0; pass < (d->interlaced ? 7 : 1); pass++) {
    uint32_t rows = d->interlaced ? PNG_PASS_ROWS(d->height, pass) : d->height;
    if (d->interlaced && PNG_PASS_COLS(d->width, pass) == 0)
      continue;
    for (uint32_t r = 0; r < rows; r++) {
      png_read_row(d->png, d->raw.p, NULL);
      int y = d->interlaced ? (int)PNG_ROW_FROM_PASS_ROW(r, pass) : (int)r;
      if (y < y0 || y >= y1)
        continue;
      uint8_t *dst = out + (size_t)(y - y0) * stride;
      if (d->interlaced)
        png_decode_pass_row(d, d->raw.p, pass, x0, x1, dst);
      else
        png_decode_convert(d, d->raw.p, x0, x1 - x0, dst);
    }
  }
}

int png_decode_read(png_decode *d, int x0, int x1, int y0, int y1, uint8_t *out, size_t stride,
                    char *err, size_t errlen) {
  if (!d->png)
    return snprintf(err, errlen, "internal: no PNG header read"), BFEED_EINTERNAL;
  if (x0 < 0 || x1 > (int)d->width || x0 >= x1 || y0 < 0 || y1 > (int)d->height || y0 >= y1)
    return snprintf(err, errlen, "internal: region outside the image"), BFEED_EINTERNAL;
  if (!decode_mem_reserve(&d->raw, png_get_rowbytes(d->png, d->info)))
    return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  if (setjmp(png_jmpbuf(d->png)))
    return png_decode_fail(d, err, errlen);
  png_decode_palette(d);
  png_decode_rows(d, x0, x1, y0, y1, out, stride);
  png_decode_end(d); /* what follows the image data (IEND) is not needed */
  return 0;
}
