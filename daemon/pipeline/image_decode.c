/*
 * image_decode.c -- sniff the format, check the pixel limit, hand over to its decoder.
 */
#include "image_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "decode_mem.h"
#include "jpeg_decode.h"
#include "raw_decode.h"
#include "png_decode.h"
#include "webp_decode.h"

struct image_decoder {
  jdec *jpeg;        /* each created on the first image of its format */
  png_decode *png;
  const uint8_t *buf;
  size_t len;
  image_decode_info info;
  int scale_num;
  uint64_t working;  /* PNG, WebP: the library's own bytes for this image (from its header) */
  uint64_t held;     /* those bytes while the library decodes, in decode_mem_held */
  decode_mem_buf pixels; /* the decoded rectangle (WebP: the whole image) */
  int entered;       /* between decode_mem_enter (the read) and decode_mem_leave (done) */
};

/* The decode's buffers are back (or kept, counted): others may start. */
static void image_decode_leave(image_decoder *d) {
  if (d->entered) decode_mem_leave();
  d->entered = 0;
}

image_decoder *image_decode_new(void) { return calloc(1, sizeof(image_decoder)); }

void image_decode_free(image_decoder *d) {
  if (!d)
    return;
  jpeg_decode_free(d->jpeg);
  png_decode_free(d->png);
  decode_mem_release(&d->pixels);
  image_decode_leave(d);
  free(d);
}

const char *image_decode_format_name(enum image_decode_format f) {
  static const char *const names[] = {"JPEG", "PNG", "WebP", "raw image record"};
  return (unsigned)f < 4 ? names[f] : "unknown";
}

static const uint8_t image_decode_png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

/* The magic numbers Pillow's _accept functions look for: JPEG's SOI
 * marker, PNG's signature, a RIFF container of type WEBP. */
static int image_decode_sniff(const uint8_t *b, size_t n) {
  if (n >= 2 && b[0] == 0xFF && b[1] == 0xD8)
    return IMAGE_DECODE_JPEG;
  if (n >= 8 && memcmp(b, image_decode_png_magic, 8) == 0)
    return IMAGE_DECODE_PNG;
  if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
    return IMAGE_DECODE_WEBP;
  if (raw_decode_is(b, n))
    return IMAGE_DECODE_RAW;
  return -1;
}

static int image_decode_oom(char *err, size_t errlen) {
  snprintf(err, errlen, "out of memory");
  return BFEED_ENOMEM;
}

static int image_decode_header_of(image_decoder *d, int format, const uint8_t *buf, size_t len,
                                  image_decode_info *info, char *err, size_t errlen) {
  switch (format) {
  case IMAGE_DECODE_JPEG: {
    jpeg_decode_info ji;
    if (!d->jpeg && !(d->jpeg = jpeg_decode_new()))
      return image_decode_oom(err, errlen);
    int rc = jpeg_decode_header(d->jpeg, buf, len, &ji, err, errlen);
    if (rc != 0)
      return rc;
    info->width = ji.width;
    info->height = ji.height;
    info->scalable = 1;
    return 0;
  }
  case IMAGE_DECODE_PNG: {
    if (!d->png && !(d->png = png_decode_new()))
      return image_decode_oom(err, errlen);
    int rc = png_decode_header(d->png, buf, len, &info->width, &info->height, err, errlen);
    d->working = rc == 0 ? png_decode_working(d->png) : 0;
    return rc;
  }
  case IMAGE_DECODE_WEBP:
    return webp_decode_header(buf, len, &info->width, &info->height, &d->working, err, errlen);
  case IMAGE_DECODE_RAW:
    return raw_decode_parse(buf, len, &info->width, &info->height, err, errlen);
  default:
    snprintf(err, errlen, "not a JPEG, PNG or WebP image");
    return BFEED_EDATASET;
  }
}

int image_decode_header(image_decoder *d, const uint8_t *buf, size_t len, uint64_t max_pixels,
                        image_decode_info *info, char *err, size_t errlen) {
  int format = image_decode_sniff(buf, len);
  image_decode_leave(d); /* a header after a read without done */
  memset(info, 0, sizeof *info);
  d->buf = NULL;
  d->working = 0;
  int rc = image_decode_header_of(d, format, buf, len, info, err, errlen);
  if (rc != 0)
    return rc;
  info->format = (enum image_decode_format)format;
  uint64_t pixels = (uint64_t)info->width * (uint64_t)info->height;
  if (info->width < 1 || info->height < 1)
    return snprintf(err, errlen, "corrupt data: %s of %dx%d pixels", image_decode_format_name(info->format),
                    info->width, info->height), BFEED_EDATASET;
  if (max_pixels && pixels > max_pixels)
    return snprintf(err, errlen, "%s of %dx%d = %llu pixels, over the max_pixels limit of %llu",
                    image_decode_format_name(info->format), info->width, info->height,
                    (unsigned long long)pixels, (unsigned long long)max_pixels), BFEED_ELIMIT;
  /* PNG and WebP decode at full size: the worst crop keeps the whole image
   * (eval always does), as RGBX, beside the library's own buffers. A JPEG's
   * needs depend on the scale: jpeg_decode_start and image_decode_read
   * check them. */
  if (!info->scalable && (rc = decode_mem_check(image_decode_format_name(info->format), info->width, info->height,
                                                pixels * 4 + d->working, err, errlen)) < 0)
    return rc;
  d->buf = buf;
  d->len = len;
  d->info = *info;
  d->scale_num = 8;
  return 0;
}

void image_decode_scaled_size(const image_decode_info *info, int scale_num, int *w, int *h) {
  jpeg_decode_info ji = {.width = info->width, .height = info->height};
  if (info->scalable) {
    jpeg_decode_scaled_size(&ji, scale_num, w, h);
  } else {
    *w = info->width;
    *h = info->height;
  }
}

int image_decode_start(image_decoder *d, int scale_num, char *err, size_t errlen) {
  if (!d->buf || (scale_num != 8 && !d->info.scalable))
    return snprintf(err, errlen, "internal: bad scale or no header"), BFEED_EINTERNAL;
  d->scale_num = scale_num;
  if (d->info.format == IMAGE_DECODE_JPEG)
    return jpeg_decode_start(d->jpeg, scale_num, err, errlen);
  return 0;
}

/* The rectangle's buffer, once the decode is known to fit the limit (a
 * JPEG's at its scale and crop, a pure function of the sample like the
 * rest; PNG and WebP were checked from the header for the worst case).
 * BFEED_EDATASET or BFEED_ENOMEM with err set, or 0. */
static int image_decode_reserve(image_decoder *d, size_t n, uint8_t **out, char *err, size_t errlen) {
  int w, h;
  image_decode_scaled_size(&d->info, d->scale_num, &w, &h);
  int rc = decode_mem_check(image_decode_format_name(d->info.format), w, h, n + d->working, err, errlen);
  if (rc < 0)
    return rc;
  if (!(*out = decode_mem_reserve(&d->pixels, n)))
    return image_decode_oom(err, errlen);
  return 0;
}

int image_decode_read(image_decoder *d, int x0, int x1, int y0, int y1, const uint8_t **px,
                      size_t *stride, char *err, size_t errlen) {
  int w, h;
  image_decode_scaled_size(&d->info, d->scale_num, &w, &h);
  if (!d->buf || x0 < 0 || x1 > w || x0 >= x1 || y0 < 0 || y1 > h || y0 >= y1)
    return snprintf(err, errlen, "internal: region outside the image"), BFEED_EINTERNAL;
  const uint8_t *buf = d->buf;
  d->buf = NULL; /* one read per header */
  int webp = d->info.format == IMAGE_DECODE_WEBP;
  size_t row = (size_t)(webp ? w : x1 - x0) * 4, n = row * (size_t)(webp ? h : y1 - y0);
  uint8_t *rect;
  /* max_memory for every decode at once: wait while the others' and this
   * one's would be over it (decode_mem.h). */
  uint64_t need = (n > d->pixels.cap ? n : 0) + d->working;
  decode_mem_enter(need);
  d->entered = 1;
  int rc = image_decode_reserve(d, n, &rect, err, errlen);
  if (rc == 0)
    decode_mem_take(&d->held, d->working); /* the library's buffers, while it decodes */
  decode_mem_settle(need); /* counted now (or refused): no longer a promise */
  if (rc != 0)
    return rc;
  if (webp)
    rc = webp_decode_read(buf, d->len, rect, row, row * (size_t)h, err, errlen);
  else if (d->info.format == IMAGE_DECODE_RAW)
    raw_decode_rect(buf, w, x0, x1, y0, y1, rect, row);
  else if (d->info.format == IMAGE_DECODE_JPEG)
    rc = jpeg_decode_read(d->jpeg, x0, x1, y0, y1, rect, row, err, errlen);
  else
    rc = png_decode_read(d->png, x0, x1, y0, y1, rect, row, err, errlen);
  decode_mem_put(&d->held);
  if (rc != 0)
    return rc;
  if (webp) {
    *px = rect + (size_t)y0 * row + (size_t)x0 * 4;
    *stride = row;
    return 0;
  }
  *px = rect;
  *stride = row;
  return 0;
}

void image_decode_done(image_decoder *d) {
  d->buf = NULL;
  if (d->jpeg)
    jpeg_decode_abort(d->jpeg); /* started and never read (refused, or the caller failed) */
  decode_mem_trim(&d->pixels);
  image_decode_leave(d);
}
