/*
 * pil_enhance.c -- see pil_enhance.h.
 *
 * ImageEnhance's four classes are one operation, Image.blend(degenerate,
 * image, factor), with different degenerate images, which are never built
 * here: Brightness's and Contrast's are one grey, so the blend is a table
 * per byte value; Color's and Sharpness's are made pixel by pixel as the
 * blend needs them. ImageOps' five are 768-entry tables through
 * Image.point; they share the table's application.
 */
#include "pil_enhance.h"

#include <string.h>

#include "bfeed_types.h"

uint8_t pil_enhance_luma(const uint8_t rgb[3]) {
  return (uint8_t)((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

/* One byte of Blend.c: in1 + alpha * (in2 - in1) in float (an int times a
 * float, then an int plus a float), clipped and truncated. Pillow clips
 * only when alpha is outside [0, 1]; inside, the rounded sum stays between
 * the two bytes, so clipping changes nothing. NaN gives 0, as x86's
 * conversion in Pillow's (UINT8) cast does. */
static inline uint8_t pil_enhance_mix(int in1, int in2, float alpha) {
  float t = in1 + alpha * (in2 - in1);
  if (!(t > 0.0f)) return 0;
  return t >= 255.0f ? 255 : (uint8_t)t;
}

/* Image.point with a table per channel. */
static void pil_enhance_apply_lut(const pil_rgb *src, pil_rgb *dst, const uint8_t lut[3][256]) {
  const uint8_t *in = src->px;
  uint8_t *out = dst->px;
  for (size_t i = 0, n = pil_image_bytes(src); i < n; i += 3) {
    out[i] = lut[0][in[i]];
    out[i + 1] = lut[1][in[i + 1]];
    out[i + 2] = lut[2][in[i + 2]];
  }
}

/* One table for all three channels (ImageOps' _lut repeats a 256-entry
 * table for RGB). */
static int pil_enhance_same_lut(const pil_rgb *src, pil_rgb *dst, const uint8_t lut[256]) {
  uint8_t luts[3][256];
  for (int b = 0; b < 3; b++) memcpy(luts[b], lut, 256);
  pil_enhance_apply_lut(src, dst, (const uint8_t(*)[256])luts);
  return 0;
}

/* Image.blend(grey image, src, alpha), Brightness's and Contrast's: with
 * the degenerate byte fixed, a byte's result depends on that byte alone,
 * so the same arithmetic is done once per value, into a table. */
static int pil_enhance_blend_grey(const pil_rgb *src, pil_rgb *dst, float alpha, int grey) {
  uint8_t lut[256];
  for (int v = 0; v < 256; v++) lut[v] = pil_enhance_mix(grey, v, alpha);
  return pil_enhance_same_lut(src, dst, lut);
}

/* Filter.c's ImagingFilter3x3 with SMOOTH's kernel, one channel of
 * interior pixel p (rows w * 3 bytes apart): the kernel is 1 1 1 / 1 5 1 /
 * 1 1 1, each entry a float divided by the float 13; the sum starts at
 * offset + 0.5 and adds the row below, this row, the row above, each as
 * (left * k + centre * k) + right * k in float. */
static uint8_t pil_enhance_smooth(const uint8_t *p, size_t stride) {
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  const uint8_t *below = p + stride, *above = p - stride;
  float ss = 0.5f;
  ss += (float)below[-3] * k1 + (float)below[0] * k1 + (float)below[3] * k1;
  ss += (float)p[-3] * k1 + (float)p[0] * k5 + (float)p[3] * k1;
  ss += (float)above[-3] * k1 + (float)above[0] * k1 + (float)above[3] * k1;
  if (ss <= 0.0f) return 0;
  return ss >= 255.0f ? 255 : (uint8_t)ss;
}

/* Image.blend(degenerate, src, alpha) for Color (sharpen 0: the pixel's
 * L, each pixel reading only itself) or Sharpness (sharpen 1: the
 * SMOOTH-filtered image, reading neighbours, hence no in-place there). */
static void pil_enhance_blend(const pil_rgb *src, pil_rgb *dst, int sharpen, float alpha) {
  int w = src->w, h = src->h;
  size_t stride = (size_t)w * 3;
  for (int y = 0; y < h; y++) {
    const uint8_t *in = src->px + (size_t)y * stride;
    uint8_t *out = dst->px + (size_t)y * stride;
    /* Filter.c copies the first and last rows and columns, and an image
     * smaller than the kernel, which has no other pixels anyway. */
    int edge_row = y == 0 || y == h - 1;
    for (int x = 0; x < w; x++, in += 3, out += 3) {
      uint8_t deg[3];
      if (!sharpen)
        memset(deg, pil_enhance_luma(in), 3);
      else if (!edge_row && x > 0 && x < w - 1)
        for (int b = 0; b < 3; b++) deg[b] = pil_enhance_smooth(in + b, stride);
      else
        memcpy(deg, in, 3);
      for (int b = 0; b < 3; b++) out[b] = pil_enhance_mix(deg[b], in[b], alpha);
    }
  }
}

int pil_enhance_brightness(const pil_rgb *src, pil_rgb *dst, double factor) {
  if (pil_image_check(src, dst, 1) != 0) return BFEED_EINVAL;
  return pil_enhance_blend_grey(src, dst, (float)factor, 0);
}

int pil_enhance_saturation(const pil_rgb *src, pil_rgb *dst, double factor) {
  if (pil_image_check(src, dst, 1) != 0) return BFEED_EINVAL;
  pil_enhance_blend(src, dst, 0, (float)factor);
  return 0;
}

int pil_enhance_contrast(const pil_rgb *src, pil_rgb *dst, double factor) {
  if (pil_image_check(src, dst, 1) != 0) return BFEED_EINVAL;
  /* ImageStat's mean of the L image: a double sum of j * count over the
   * histogram (exact below 2^53, as is this integer sum), divided by the
   * pixel count; ImageEnhance then takes int(mean + 0.5). */
  uint64_t sum = 0, n = (uint64_t)src->w * (uint64_t)src->h;
  for (const uint8_t *p = src->px, *end = p + pil_image_bytes(src); p < end; p += 3) sum += pil_enhance_luma(p);
  double mean = (double)sum / (double)n;
  return pil_enhance_blend_grey(src, dst, (float)factor, (int)(mean + 0.5));
}

int pil_enhance_sharpness(const pil_rgb *src, pil_rgb *dst, double factor) {
  if (pil_image_check(src, dst, 0) != 0) return BFEED_EINVAL;
  pil_enhance_blend(src, dst, 1, (float)factor);
  return 0;
}

int pil_enhance_posterize(const pil_rgb *src, pil_rgb *dst, int bits) {
  if (pil_image_check(src, dst, 1) != 0 || bits < 0 || bits > 8) return BFEED_EINVAL;
  uint8_t lut[256];
  int mask = ~((1 << (8 - bits)) - 1); /* ~(2 ** (8 - bits) - 1) */
  for (int i = 0; i < 256; i++) lut[i] = (uint8_t)(i & mask);
  return pil_enhance_same_lut(src, dst, lut);
}

int pil_enhance_solarize(const pil_rgb *src, pil_rgb *dst, double threshold) {
  if (pil_image_check(src, dst, 1) != 0) return BFEED_EINVAL;
  uint8_t lut[256];
  for (int i = 0; i < 256; i++) lut[i] = (uint8_t)((double)i < threshold ? i : 255 - i);
  return pil_enhance_same_lut(src, dst, lut);
}

int pil_enhance_invert(const pil_rgb *src, pil_rgb *dst) {
  if (pil_image_check(src, dst, 1) != 0) return BFEED_EINVAL;
  uint8_t lut[256];
  for (int i = 0; i < 256; i++) lut[i] = (uint8_t)(255 - i);
  return pil_enhance_same_lut(src, dst, lut);
}

/* The identity table, which both ImageOps functions fall back on. */
static void pil_enhance_identity(uint8_t lut[256]) {
  for (int i = 0; i < 256; i++) lut[i] = (uint8_t)i;
}

/* ImageOps.autocontrast's table for one channel's histogram: lo and hi
 * its first and last non-zero counts; scale = 255.0 / (hi - lo), offset =
 * -lo * scale, each entry int(i * scale + offset) (truncated) clipped. */
static void pil_enhance_autocontrast_lut(const uint64_t hist[256], uint8_t lut[256]) {
  int lo = 0, hi = 255;
  while (lo < 255 && !hist[lo]) lo++;
  while (hi > 0 && !hist[hi]) hi--;
  if (hi <= lo) {
    pil_enhance_identity(lut);
    return;
  }
  double scale = 255.0 / (hi - lo), offset = -lo * scale;
  for (int i = 0; i < 256; i++) {
    int v = (int)(i * scale + offset);
    lut[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
  }
}

/* ImageOps.equalize's table for one channel's histogram: step = (the sum
 * of the counts - the last non-zero one) // 255; entry i is n // step, n
 * running from step // 2 and each count added after its entry; Image.point
 * clips entries above 255 (CLIP8). */
static void pil_enhance_equalize_lut(const uint64_t hist[256], uint8_t lut[256]) {
  uint64_t total = 0, last = 0;
  int used = 0;
  for (int i = 0; i < 256; i++)
    if (hist[i]) {
      total += hist[i];
      last = hist[i];
      used++;
    }
  uint64_t step = used <= 1 ? 0 : (total - last) / 255;
  if (!step) {
    pil_enhance_identity(lut);
    return;
  }
  uint64_t n = step / 2;
  for (int i = 0; i < 256; i++) {
    uint64_t v = n / step;
    lut[i] = (uint8_t)(v > 255 ? 255 : v);
    n += hist[i];
  }
}

/* An ImageOps function that makes each channel's table from that
 * channel's histogram (Image.histogram(): 256 counts per channel). */
static int pil_enhance_by_histogram(const pil_rgb *src, pil_rgb *dst,
                                    void (*make)(const uint64_t hist[256], uint8_t lut[256])) {
  if (pil_image_check(src, dst, 1) != 0) return BFEED_EINVAL;
  uint64_t hist[3][256];
  uint8_t lut[3][256];
  memset(hist, 0, sizeof hist);
  const uint8_t *p = src->px;
  for (size_t i = 0, n = pil_image_bytes(src); i < n; i += 3) {
    hist[0][p[i]]++;
    hist[1][p[i + 1]]++;
    hist[2][p[i + 2]]++;
  }
  for (int b = 0; b < 3; b++) make(hist[b], lut[b]);
  pil_enhance_apply_lut(src, dst, (const uint8_t(*)[256])lut);
  return 0;
}

int pil_enhance_autocontrast(const pil_rgb *src, pil_rgb *dst) {
  return pil_enhance_by_histogram(src, dst, pil_enhance_autocontrast_lut);
}

int pil_enhance_equalize(const pil_rgb *src, pil_rgb *dst) {
  return pil_enhance_by_histogram(src, dst, pil_enhance_equalize_lut);
}
