/*
 * pil_hsv.c -- see pil_hsv.h.
 *
 * Convert.c computes its HSV in a mix of float variables and double
 * expressions (its literals 2.0, 6.0, 255.0 are doubles); each step below
 * keeps the precision Pillow's does, since the bytes depend on it
 * (tests/daemon/augment_oracle.py checks all 2^24 pixels both ways).
 */
#include "pil_hsv.h"

#include <math.h>

#include "bfeed_types.h"

/* CLIP8 of an int. */
static inline uint8_t pil_hsv_clip8(int v) { return (uint8_t)(v <= 0 ? 0 : v < 256 ? v : 255); }

/* rgb2hsv_row ("following colorsys.py"). */
void pil_hsv_from_rgb(const uint8_t rgb[3], uint8_t hsv[3]) {
  uint8_t r = rgb[0], g = rgb[1], b = rgb[2];
  uint8_t maxc = r > g ? (r > b ? r : b) : (g > b ? g : b);
  uint8_t minc = r < g ? (r < b ? r : b) : (g < b ? g : b);
  hsv[2] = maxc;
  if (minc == maxc) {
    hsv[0] = hsv[1] = 0;
    return;
  }
  float cr = (float)(maxc - minc);
  float s = cr / (float)maxc;
  float rc = (float)(maxc - r) / cr, gc = (float)(maxc - g) / cr, bc = (float)(maxc - b) / cr;
  float h;
  if (r == maxc)
    h = bc - gc; /* float */
  else if (g == maxc)
    h = (float)(2.0 + rc - bc); /* double, stored in a float */
  else
    h = (float)(4.0 + gc - rc);
  h = (float)fmod(h / 6.0 + 1.0, 1.0);
  hsv[0] = pil_hsv_clip8((int)(h * 255.0));
  hsv[1] = pil_hsv_clip8((int)(s * 255.0));
}

/* hsv2rgb: the sector i and fraction f from h * 6 / 255 in double, f and
 * s / 255 kept as floats, p, q, t rounded half away from zero by round();
 * note fs * f is a float product, fs * (1.0 - f) a double one. */
void pil_hsv_to_rgb(const uint8_t hsv[3], uint8_t rgb[3]) {
  uint8_t h = hsv[0], s = hsv[1], v = hsv[2];
  if (s == 0) {
    rgb[0] = rgb[1] = rgb[2] = v;
    return;
  }
  int i = (int)floor((float)h * 6.0 / 255.0);
  float f = (float)((float)h * 6.0 / 255.0 - (float)i);
  float fs = (float)((float)s / 255.0);
  uint8_t p = pil_hsv_clip8((int)round((float)v * (1.0 - fs)));
  uint8_t q = pil_hsv_clip8((int)round((float)v * (1.0 - fs * f)));
  uint8_t t = pil_hsv_clip8((int)round((float)v * (1.0 - fs * (1.0 - f))));
  /* h = 255 gives i = 6: sector 0 again. */
  const uint8_t sectors[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
  const uint8_t *c = sectors[i % 6];
  rgb[0] = c[0];
  rgb[1] = c[1];
  rgb[2] = c[2];
}

uint8_t pil_hsv_hue_shift(double hue_factor) {
  /* |hue_factor * 255| <= 127.5: the cast to int is defined, and the
   * conversion of a negative int to uint8_t keeps its low byte. */
  return (uint8_t)(int)(hue_factor * 255);
}

int pil_hsv_adjust_hue(const pil_rgb *src, pil_rgb *dst, double hue_factor) {
  if (pil_image_check(src, dst, 1) != 0 || !(hue_factor >= -0.5 && hue_factor <= 0.5)) return BFEED_EINVAL;
  uint8_t shift = pil_hsv_hue_shift(hue_factor);
  const uint8_t *in = src->px;
  uint8_t *out = dst->px;
  for (size_t i = 0, n = pil_image_bytes(src); i < n; i += 3) {
    uint8_t hsv[3];
    pil_hsv_from_rgb(in + i, hsv);
    hsv[0] = (uint8_t)(hsv[0] + shift);
    pil_hsv_to_rgb(hsv, out + i);
  }
  return 0;
}
