/*
 * webp_decode.c -- libwebp's WebPDecode into memory the caller holds.
 */
#include "webp_decode.h"

#include <stdio.h>
#include <webp/decode.h>

#include "bfeed_types.h"

static int webp_decode_fail(VP8StatusCode st, char *err, size_t errlen) {
  static const struct {
    VP8StatusCode st;
    const char *why;
  } reasons[] = {{VP8_STATUS_NOT_ENOUGH_DATA, "truncated data (WebP)"},
                 {VP8_STATUS_OUT_OF_MEMORY, "out of memory"},
                 {VP8_STATUS_UNSUPPORTED_FEATURE, "corrupt data: WebP: unsupported feature"},
                 {VP8_STATUS_BITSTREAM_ERROR, "corrupt data: WebP: bitstream error"}};
  for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
    if (reasons[i].st == st)
      return snprintf(err, errlen, "%s", reasons[i].why),
             st == VP8_STATUS_OUT_OF_MEMORY ? BFEED_ENOMEM : BFEED_EDATASET;
  return snprintf(err, errlen, "corrupt data: WebP: libwebp status %d", (int)st), BFEED_EDATASET;
}

/* libwebp's own memory for a decode into the caller's buffer, measured
 * (VmHWM around WebPDecode, libwebp 1.2) and rounded up: a lossless image
 * is decoded whole into 32-bit ARGB first (less when palette-packed, which
 * the header does not say); a lossy one works in a few rows of macroblocks,
 * plus two bytes a pixel for an alpha plane (the plane, and its own
 * lossless decode). A file of mixed or unknown format counts as lossless. */
static uint64_t webp_decode_working(const WebPBitstreamFeatures *f) {
  uint64_t w = (uint64_t)f->width, px = w * (uint64_t)f->height, base = 512 * w + (1u << 20);
  if (f->format != 1) return base + 4 * px;
  return base + (f->has_alpha ? 2 * px : 0);
}

int webp_decode_header(const uint8_t *buf, size_t len, int *width, int *height, uint64_t *working,
                       char *err, size_t errlen) {
  WebPBitstreamFeatures f;
  VP8StatusCode st = WebPGetFeatures(buf, len, &f);
  if (st != VP8_STATUS_OK)
    return webp_decode_fail(st, err, errlen);
  if (f.has_animation)
    return snprintf(err, errlen, "animated WebP is not supported"), BFEED_EDATASET;
  *width = f.width;
  *height = f.height;
  *working = webp_decode_working(&f);
  return 0;
}

int webp_decode_read(const uint8_t *buf, size_t len, uint8_t *out, size_t stride, size_t size,
                     char *err, size_t errlen) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config))
    return snprintf(err, errlen, "internal: libwebp version mismatch"), BFEED_EINTERNAL;
  /* Default options, as WebPAnimDecoder (hence Pillow) decodes: fancy
   * upsampling, no dithering, non-premultiplied RGBA. */
  config.output.colorspace = MODE_RGBA;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out;
  config.output.u.RGBA.stride = (int)stride;
  config.output.u.RGBA.size = size;
  VP8StatusCode st = WebPDecode(buf, len, &config);
  WebPFreeDecBuffer(&config.output);
  return st == VP8_STATUS_OK ? 0 : webp_decode_fail(st, err, errlen);
}
