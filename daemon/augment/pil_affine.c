/*
 * pil_affine.c -- see pil_affine.h.
 *
 * Pillow's ImagingTransformAffine (libImaging/Geometry.c) has four engines
 * and which one runs changes the bytes, so they are kept apart here as
 * there:
 *  - resample BILINEAR or BICUBIC: the generic engine, which maps each
 *    pixel centre through the matrix in double and calls the filter;
 *  - NEAREST with m[1] == m[3] == 0: ImagingScaleAffine, positions
 *    accumulated in double along a row and down the columns;
 *  - other NEAREST matrices whose four corners map within +-32768:
 *    affine_fixed, the same accumulation in 16.16 fixed point;
 *  - the rest: the same accumulation in double (the "FIXME" fallback).
 * An RGB pixel is 4 bytes in Pillow (the fourth unused), 3 here; no
 * arithmetic depends on that.
 */
#include "pil_affine.h"

#include <math.h>
#include <string.h>

#include "bfeed_types.h"

/* CPython's math.radians and math.degrees multiply by these constants
 * (degToRad, radToDeg: Py_MATH_PI's digits, divided at compile time). */
static const double pil_affine_deg2rad = 3.14159265358979323846 / 180.0;
static const double pil_affine_rad2deg = 180.0 / 3.14159265358979323846;

static inline const uint8_t *pil_affine_px(const pil_rgb *im, int x, int y) {
  return im->px + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
}

static inline void pil_affine_put(uint8_t *out, const uint8_t *p) {
  out[0] = p[0];
  out[1] = p[1];
  out[2] = p[2];
}

/* Geometry.c's COORD: toward zero, and anything below 0 to -1. Pillow's
 * (int) cast is undefined for NaN and past int's range (x86 gives INT_MIN);
 * every caller then finds the position outside, which -1 says too. */
static inline int pil_affine_coord(double v) { return (v >= 0.0 && v < 2147483648.0) ? (int)v : -1; }

/* Geometry.c's FLOOR; its callers' values are within int range. */
static inline int pil_affine_floor(double v) { return v < 0.0 ? (int)floor(v) : (int)v; }

static inline int pil_affine_clamp(int v, int n) { return v < 0 ? 0 : v < n ? v : n - 1; }

/* How both filters start: their bounds check on the position (written so
 * that NaN is outside, where Pillow would read garbage), then the pixel
 * grid's offset of half a pixel; *x, *y the floor of the shifted position
 * (from -1), *dx, *dy its fraction. 0 when outside. */
static inline int pil_affine_locate(const pil_rgb *im, double xin, double yin, int *x, int *y, double *dx,
                                    double *dy) {
  if (!(xin >= 0.0 && xin < im->w && yin >= 0.0 && yin < im->h)) return 0;
  xin -= 0.5;
  yin -= 0.5;
  *x = pil_affine_floor(xin);
  *y = pil_affine_floor(yin);
  *dx = xin - *x;
  *dy = yin - *y;
  return 1;
}

/* bilinear_filter32RGB. Pillow reads rows y and y + 1, repeating the edge
 * row where y + 1 is past it (y is never below -1 after the bounds check,
 * and row -1 reads as row 0): the same as clamping both. Each step's
 * arithmetic is Pillow's: an int difference times a double fraction. */
static int pil_affine_bilinear(const pil_rgb *im, double xin, double yin, uint8_t *out) {
  int x, y;
  double dx, dy;
  if (!pil_affine_locate(im, xin, yin, &x, &y, &dx, &dy)) return 0;
  int x0 = pil_affine_clamp(x, im->w), x1 = pil_affine_clamp(x + 1, im->w);
  const uint8_t *r0 = pil_affine_px(im, 0, pil_affine_clamp(y, im->h));
  const uint8_t *r1 = pil_affine_px(im, 0, pil_affine_clamp(y + 1, im->h));
  for (int b = 0; b < 3; b++) {
    int p00 = r0[x0 * 3 + b], p01 = r0[x1 * 3 + b], p10 = r1[x0 * 3 + b], p11 = r1[x1 * 3 + b];
    double v1 = p00 + (p01 - p00) * dx;
    double v2 = p10 + (p11 - p10) * dx;
    double v = v1 + (v2 - v1) * dy;
    out[b] = (uint8_t)v; /* a convex mix of bytes: within [0, 255] */
  }
  return 1;
}

/* Geometry.c's BICUBIC macro (the a = -1 cubic through v1..v4 at d), in
 * its order of operations. On bytes Pillow forms p2..p4 in int; in double
 * they are the same exact integers. */
static inline double pil_affine_cubic(double v1, double v2, double v3, double v4, double d) {
  double p1 = v2;
  double p2 = -v1 + v3;
  double p3 = 2 * (v1 - v2) + v3 - v4;
  double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

/* bicubic_filter32RGB: four rows from y - 1, each past an edge repeating
 * the row before it (the same as clamping, as above), a cubic across each,
 * then one down; clipped to 0..255 and truncated. */
static int pil_affine_bicubic(const pil_rgb *im, double xin, double yin, uint8_t *out) {
  int x, y;
  double dx, dy;
  if (!pil_affine_locate(im, xin, yin, &x, &y, &dx, &dy)) return 0;
  int xs[4];
  const uint8_t *rows[4];
  for (int k = 0; k < 4; k++) {
    xs[k] = pil_affine_clamp(x - 1 + k, im->w) * 3;
    rows[k] = pil_affine_px(im, 0, pil_affine_clamp(y - 1 + k, im->h));
  }
  for (int b = 0; b < 3; b++) {
    double v[4];
    for (int k = 0; k < 4; k++) {
      const uint8_t *r = rows[k] + b;
      v[k] = pil_affine_cubic(r[xs[0]], r[xs[1]], r[xs[2]], r[xs[3]], dx);
    }
    double c = pil_affine_cubic(v[0], v[1], v[2], v[3], dy);
    out[b] = c <= 0.0 ? 0 : c >= 255.0 ? 255 : (uint8_t)c;
  }
  return 1;
}

typedef int (*pil_affine_filter)(const pil_rgb *im, double xin, double yin, uint8_t *out);

/* ImagingGenericTransform with affine_transform: each output pixel's
 * centre, (a0 * x + a1 * y) + a2 in double, through the filter. */
static inline void pil_affine_generic(const pil_rgb *src, pil_rgb *dst, const double a[6],
                                      pil_affine_filter filter, const uint8_t fill[3]) {
  uint8_t *out = dst->px;
  for (int y = 0; y < dst->h; y++) {
    double yin = y + 0.5;
    for (int x = 0; x < dst->w; x++, out += 3) {
      double xin = x + 0.5;
      double xx = a[0] * xin + a[1] * yin + a[2];
      double yy = a[3] * xin + a[4] * yin + a[5];
      if (!filter(src, xx, yy, out)) pil_affine_put(out, fill);
    }
  }
}

/* ImagingScaleAffine: x positions from a[2] + a[0] / 2, adding a[0] per
 * column (Pillow tabulates them once; the same sums are made again per
 * row here), y positions likewise with a[5] and a[4]. The columns that land
 * inside form one run, as the sums are monotonic, which is what Pillow's
 * table of them assumes. */
static void pil_affine_scale(const pil_rgb *src, pil_rgb *dst, const double a[6], const uint8_t fill[3]) {
  double yo = a[5] + a[4] * 0.5;
  uint8_t *out = dst->px;
  for (int y = 0; y < dst->h; y++, yo += a[4]) {
    int yi = pil_affine_coord(yo);
    int row_in = yi >= 0 && yi < src->h;
    double xo = a[2] + a[0] * 0.5;
    for (int x = 0; x < dst->w; x++, out += 3, xo += a[0]) {
      int xi = pil_affine_coord(xo);
      pil_affine_put(out, row_in && xi >= 0 && xi < src->w ? pil_affine_px(src, xi, yi) : fill);
    }
  }
}

/* check_fixed: whether a corner maps within 16.16 fixed point's range. */
static int pil_affine_fixed_ok(const double a[6], int x, int y) {
  return fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

/* FIX: to 16.16, rounding half up. Out of int's range Pillow's cast is
 * undefined; x86 answers INT_MIN, and so does this. */
static inline uint32_t pil_affine_fix(double v) {
  double f = floor(v * 65536.0 + 0.5);
  return f >= -2147483648.0 && f < 2147483648.0 ? (uint32_t)(int32_t)f : 0x80000000u;
}

/* A 16.16 position's pixel, or -1 for a negative one (outside whatever
 * Pillow's arithmetic shift makes of it). */
static inline int pil_affine_fixed_int(uint32_t v) { return v >= 0x80000000u ? -1 : (int)(v >> 16); }

/* affine_fixed: the matrix and the first centre in 16.16, positions
 * accumulated in 32-bit integers (wrapping as Pillow's ints do on x86, in
 * unsigned arithmetic to keep C defined), truncated by >> 16. */
static void pil_affine_fixed(const pil_rgb *src, pil_rgb *dst, const double a[6], const uint8_t fill[3]) {
  uint32_t a0 = pil_affine_fix(a[0]), a1 = pil_affine_fix(a[1]), a3 = pil_affine_fix(a[3]),
           a4 = pil_affine_fix(a[4]);
  uint32_t a2 = pil_affine_fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
  uint32_t a5 = pil_affine_fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
  uint8_t *out = dst->px;
  for (int y = 0; y < dst->h; y++, a2 += a1, a5 += a4) {
    uint32_t xx = a2, yy = a5;
    for (int x = 0; x < dst->w; x++, out += 3, xx += a0, yy += a3) {
      int xi = pil_affine_fixed_int(xx), yi = pil_affine_fixed_int(yy);
      int in = xi >= 0 && xi < src->w && yi >= 0 && yi < src->h;
      pil_affine_put(out, in ? pil_affine_px(src, xi, yi) : fill);
    }
  }
}

/* ImagingTransformAffine's own loop, for matrices too large for 16.16:
 * the first centre as a2 + a1/2 + a0/2 (that order), then sums in double. */
static void pil_affine_float(const pil_rgb *src, pil_rgb *dst, const double a[6], const uint8_t fill[3]) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  uint8_t *out = dst->px;
  for (int y = 0; y < dst->h; y++, xo += a[1], yo += a[4]) {
    double xx = xo, yy = yo;
    for (int x = 0; x < dst->w; x++, out += 3, xx += a[0], yy += a[3]) {
      int xi = pil_affine_coord(xx), yi = pil_affine_coord(yy);
      int in = xi >= 0 && xi < src->w && yi >= 0 && yi < src->h;
      pil_affine_put(out, in ? pil_affine_px(src, xi, yi) : fill);
    }
  }
}

static int pil_affine_args(const pil_rgb *src, pil_rgb *dst, int resample, const uint8_t fill[3]) {
  if (pil_image_check(src, dst, 0) != 0 || !fill) return BFEED_EINVAL;
  return resample == PIL_NEAREST || resample == PIL_BILINEAR || resample == PIL_BICUBIC ? 0 : BFEED_EINVAL;
}

int pil_affine_transform(const pil_rgb *src, pil_rgb *dst, const double m[6], int resample,
                         const uint8_t fill[3]) {
  if (!m || pil_affine_args(src, dst, resample, fill) != 0) return BFEED_EINVAL;
  int w = dst->w, h = dst->h;
  if (resample == PIL_BILINEAR)
    pil_affine_generic(src, dst, m, pil_affine_bilinear, fill);
  else if (resample == PIL_BICUBIC)
    pil_affine_generic(src, dst, m, pil_affine_bicubic, fill);
  else if (m[1] == 0 && m[3] == 0)
    pil_affine_scale(src, dst, m, fill);
  else if (pil_affine_fixed_ok(m, 0, 0) && pil_affine_fixed_ok(m, w, h) && pil_affine_fixed_ok(m, 0, h) &&
           pil_affine_fixed_ok(m, w, 0))
    pil_affine_fixed(src, dst, m, fill);
  else
    pil_affine_float(src, dst, m, fill);
  return 0;
}

double pil_affine_round15(double x) {
  /* CPython rounds the exact decimal value of x to 15 places (ties to
   * even) and reads the digits back. Here: the integer n nearest to
   * x * 10^15, from the product and its exact error (fma), and then
   * n / 10^15, a correctly rounded division of two exact doubles, which is
   * what reading the digits gives. p - n is exact (|p| < 2^52), so only a
   * tie in p can hide which way the exact product lies, and e tells;
   * nearbyint breaks the true ties to even (the default rounding mode). */
  const double scale = 1e15;
  double p = x * scale;
  double e = fma(x, scale, -p);
  double n = nearbyint(p);
  if (p - n == 0.5 && e > 0)
    n += 1;
  else if (p - n == -0.5 && e < 0)
    n -= 1;
  return n == 0 ? copysign(0.0, x) : n / scale;
}

/* Python's float % (float_rem): the remainder takes the divisor's sign. */
static double pil_affine_pymod(double a, double b) {
  double mod = fmod(a, b);
  if (mod != 0)
    return (b < 0) != (mod < 0) ? mod + b : mod;
  return copysign(0.0, b);
}

/* Image.transpose's ROTATE_90 (quarter = 1), ROTATE_180 (2) and
 * ROTATE_270 (3), counter-clockwise, for the sizes rotate uses them on. */
static void pil_affine_transpose(const pil_rgb *src, pil_rgb *dst, int quarter) {
  int w = src->w, h = src->h;
  uint8_t *out = dst->px;
  for (int y = 0; y < dst->h; y++)
    for (int x = 0; x < dst->w; x++, out += 3) {
      int sx = quarter == 1 ? w - 1 - y : quarter == 2 ? w - 1 - x : y;
      int sy = quarter == 1 ? x : quarter == 2 ? h - 1 - y : h - 1 - x;
      pil_affine_put(out, pil_affine_px(src, sx, sy));
    }
}

int pil_affine_rotate(const pil_rgb *src, pil_rgb *dst, double angle, int resample, const uint8_t fill[3]) {
  int rc = pil_affine_args(src, dst, resample, fill);
  if (rc != 0) return rc;
  /* Image.rotate's shortcuts, whatever the filter (no centre or
   * translation is given). */
  angle = pil_affine_pymod(angle, 360.0);
  if (angle == 0) {
    memcpy(dst->px, src->px, pil_image_bytes(src));
    return 0;
  }
  if (angle == 180 || ((angle == 90 || angle == 270) && src->w == src->h)) {
    pil_affine_transpose(src, dst, (int)(angle / 90));
    return 0;
  }
  /* The inverse rotation about (w / 2, h / 2), cos and sin rounded to 15
   * decimals; the centre terms as Image.rotate forms them: c, f = the
   * matrix applied to (-cx - 0, -cy - 0) with c = f = 0.0, then + cx, + cy. */
  double cx = src->w / 2.0, cy = src->h / 2.0;
  double rad = -(angle * pil_affine_deg2rad);
  double m[6] = {pil_affine_round15(cos(rad)), pil_affine_round15(sin(rad)), 0.0,
                 pil_affine_round15(-sin(rad)), pil_affine_round15(cos(rad)), 0.0};
  double x = -cx, y = -cy;
  m[2] = m[0] * x + m[1] * y + m[2];
  m[5] = m[3] * x + m[4] * y + m[5];
  m[2] += cx;
  m[5] += cy;
  return pil_affine_transform(src, dst, m, resample, fill);
}

void pil_affine_inverse_matrix(const double center[2], double angle, const double translate[2], double scale,
                               const double shear[2], double m[6]) {
  /* Line for line torchvision's, Python's left-to-right evaluation kept. */
  double rot = angle * pil_affine_deg2rad;
  double sx = shear[0] * pil_affine_deg2rad, sy = shear[1] * pil_affine_deg2rad;
  double cx = center[0], cy = center[1], tx = translate[0], ty = translate[1];
  double a = cos(rot - sy) / cos(sy);
  double b = -cos(rot - sy) * tan(sx) / cos(sy) - sin(rot);
  double c = sin(rot - sy) / cos(sy);
  double d = -sin(rot - sy) * tan(sx) / cos(sy) + cos(rot);
  m[0] = d / scale;
  m[1] = -b / scale;
  m[2] = 0.0 / scale;
  m[3] = -c / scale;
  m[4] = a / scale;
  m[5] = 0.0 / scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
}

int pil_affine_tv(const pil_rgb *src, pil_rgb *dst, double angle, const double translate[2], double scale,
                  const double shear[2], const double *center, int resample, const uint8_t fill[3]) {
  int rc = pil_affine_args(src, dst, resample, fill);
  if (rc != 0) return rc;
  if (!translate || !shear || !(scale > 0.0)) return BFEED_EINVAL;
  double c[2] = {src->w * 0.5, src->h * 0.5}, m[6];
  if (center) {
    c[0] = center[0];
    c[1] = center[1];
  }
  pil_affine_inverse_matrix(c, angle, translate, scale, shear, m);
  return pil_affine_transform(src, dst, m, resample, fill);
}

int pil_affine_apply_op(const pil_rgb *src, pil_rgb *dst, enum pil_affine_op op, double magnitude,
                        int resample, const uint8_t fill[3]) {
  static const double origin[2] = {0.0, 0.0};
  /* _apply_op's shear: atan of the magnitude, in degrees (F.affine turns
   * it back into radians: the round trip is part of the result). */
  double shear = atan(magnitude) * pil_affine_rad2deg;
  switch (op) {
  case PIL_AFFINE_SHEAR_X:
    return pil_affine_tv(src, dst, 0.0, origin, 1.0, (const double[2]){shear, 0.0}, origin, resample, fill);
  case PIL_AFFINE_SHEAR_Y:
    return pil_affine_tv(src, dst, 0.0, origin, 1.0, (const double[2]){0.0, shear}, origin, resample, fill);
  case PIL_AFFINE_TRANSLATE_X:
  case PIL_AFFINE_TRANSLATE_Y: {
    if (!isfinite(magnitude)) return BFEED_EINVAL; /* int() raises */
    double t = trunc(magnitude);
    double tr[2] = {op == PIL_AFFINE_TRANSLATE_X ? t : 0.0, op == PIL_AFFINE_TRANSLATE_Y ? t : 0.0};
    return pil_affine_tv(src, dst, 0.0, tr, 1.0, origin, NULL, resample, fill);
  }
  case PIL_AFFINE_ROTATE:
    return pil_affine_rotate(src, dst, magnitude, resample, fill);
  }
  return BFEED_EINVAL;
}
