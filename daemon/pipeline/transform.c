/*
 * transform.c -- torchvision's crop choices, reproduced to the bit.
 *
 * RandomResizedCrop.get_params (torchvision 0.14) computes in a mix of
 * float32 (torch tensors) and double (Python floats). Each step below names
 * the torch expression it reproduces, and keeps its precision:
 *
 *  - torch.empty(1).uniform_(a, b) on the CPU is fma(x, b - a, a) in float32,
 *    x the 24-bit draw: ATen's uniform_real(), which GCC contracts into an
 *    FMA in torch's AVX2/AVX-512 kernels;
 *  - torch.log(torch.tensor(ratio)) is SLEEF's logf_u10 in those kernels
 *    (the ratio bounds, float32), reproduced here (transform_logf_sleef);
 *    it is not glibc's logf, nor always the correctly rounded log;
 *  - torch.exp of a float32 is SLEEF's expf_u10 in those kernels, which
 *    differs from glibc's expf in the last bit for about 7% of the
 *    log-ratio draws, so it is reproduced here (transform_expf_sleef).
 *  - target_area, the square roots and round() are Python floats: double,
 *    with round() ties to even (nearbyint in the default rounding mode);
 *    so are the fallback's ratio bounds (transform_ratio_double);
 *  - torch.randint(0, n) is given floor(u * n) by our draws, in double.
 *
 * torch itself is not the same everywhere: with ATEN_CPU_CAPABILITY=default
 * (or a CPU without AVX2) it rounds twice in uniform_ and uses glibc's expf.
 * We follow the AVX2/AVX-512 kernels, what torch runs on any recent x86-64;
 * tests/daemon/crop_oracle.py checks both points against torch.
 */
#include "transform.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TRANSFORM_TRIES 10
/* 10 tries of 2 draws, the 2 offsets of a successful try, the flip. */
#define TRANSFORM_MAX_DRAWS (2 * TRANSFORM_TRIES + 3)

/* float32(0.08) and float32(1.0): the default scale bounds after torch's
 * cast (a stream's own scale range is float32 too: uniform_ on a float tensor
 * casts its Python-float bounds so); the ratio's as torch.tensor casts them. */
const transform_rrc_params transform_rrc_default = {{0.08f, 1.0f}, {0.75f, 4.0f / 3.0f}, 0.5f};

/* SLEEF 3.5 xexpf (sleefsimdsp.c) with FMA, as torch's Vectorized<float>::exp
 * runs it. Valid for |d| < 100, far more than the log-ratio range needs:
 * the overflow and underflow selects of the original are left out. */
static float transform_expf_sleef(float d) {
  const float r_ln2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;
  const float l2u = 0.693145751953125f, l2l = 1.428606765330187045e-06f;
  float qf = rintf(d * r_ln2);
  float s = fmaf(qf, -l2u, d);
  s = fmaf(qf, -l2l, s);
  float u = 0.000198527617612853646278381f;
  u = fmaf(u, s, 0.00139304355252534151077271f);
  u = fmaf(u, s, 0.00833336077630519866943359f);
  u = fmaf(u, s, 0.0416664853692054748535156f);
  u = fmaf(u, s, 0.166666671633720397949219f);
  u = fmaf(u, s, 0.5f);
  u = 1.0f + fmaf(s * s, u, s);
  return ldexpf(u, (int)qf);
}

float transform_exp_f32(float x) { return transform_expf_sleef(x); }
float transform_log_f32(float x) { return logf(x); }

/* SLEEF 3.5 xlogf_u1 (sleefsimdsp.c, built with FMA: its double-float
 * helpers dfadd2, dfdiv, dfmul, dfadd), as torch's Vectorized<float>::log
 * runs it, for finite d > 0. Each step is one float32 operation or one
 * fmaf, in SLEEF's order; m = d / 2^e lies in [0.75, 1.5), and
 * log d = e log 2 + 2 atanh((m - 1) / (m + 1)), the latter a short series
 * in x = (m - 1) / (m + 1) carried as a pair of floats. */
float transform_logf_sleef(float d) {
  int sub = d < 0x1p-126f; /* subnormal: scaled into the normal range first */
  if (sub)
    d *= 0x1p64f;
  float q = d * (1.0f / 0.75f);
  uint32_t bits;
  memcpy(&bits, &q, sizeof bits);
  int e = (int)((bits >> 23) & 0xff) - 0x7f;
  float m = ldexpf(d, -e), fe = (float)(sub ? e - 64 : e);
  /* s = (ln 2 as hi + lo) * e, a pair */
  float sx = 0.69314718246459960938f * fe;
  float sy = fmaf(-1.904654323148236017e-09f, fe, fmaf(0.69314718246459960938f, fe, -sx));
  /* n = -1 + m and den = 1 + m, each exactly as a pair (dfadd2) */
  float nx = -1.0f + m, nv = nx - -1.0f, ny = (-1.0f - (nx - nv)) + (m - nv);
  float dx = 1.0f + m, dv = dx - 1.0f, dy = (1.0f - (dx - dv)) + (m - dv);
  /* x = n / den (dfdiv) */
  float t = 1.0f / dx, xx = nx * t, u = fmaf(t, nx, -xx);
  float xy = fmaf(xx, fmaf(-dy, t, fmaf(-dx, t, 1.0f)), fmaf(ny, t, u));
  float x2 = xx * xx;
  float c = fmaf(fmaf(0.3027294874f, x2, 0.3996108174f), x2, 0.6666694880f);
  /* s += 2x (dfadd of pairs), then s += x^3 c (dfadd of a float) */
  float rx = sx + xx * 2.0f, ry = (((sx - rx) + xx * 2.0f) + sy) + xy * 2.0f;
  float y = x2 * xx * c, zx = rx + y, zy = ((rx - zx) + y) + ry;
  return zx + zy;
}

/* The draws of one call, read in order; past the end they read as 0 and
 * are still counted, so a caller can tell it gave too few. */
struct transform_draws {
  const float *u;
  int nu, used;
};

static float transform_next(struct transform_draws *d) {
  float u = d->used < d->nu ? d->u[d->used] : 0.0f;
  d->used++;
  return u;
}

/* torch.empty(1).uniform_(lo, hi).item() for the draw u */
static float transform_uniform(float u, float lo, float hi) { return fmaf(u, hi - lo, lo); }

/* torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item() */
static float transform_aspect(float u, const float log_ratio[2]) {
  return transform_expf_sleef(transform_uniform(u, log_ratio[0], log_ratio[1]));
}

float transform_aspect_from_draw(float u) {
  const float *r = transform_rrc_default.ratio;
  return transform_aspect(u, (const float[2]){transform_logf_sleef(r[0]), transform_logf_sleef(r[1])});
}

/* The Python float a ratio bound was, from its float32: the fallback
 * compares and rounds with ratio as given (min(ratio), h * max(ratio)),
 * in double. The simplest fraction (denominator up to 64) that rounds to r
 * is what 3/4, 4/3, 0.8 or 1.25 were in Python; other values are taken as
 * their float32. */
static double transform_ratio_double(float r) {
  for (int q = 1; q <= 64; q++) {
    double p = nearbyint((double)r * q);
    if (p >= 1 && (float)(p / q) == r)
      return p / q;
  }
  return r;
}

/* torch.randint(0, n, size=(1,)).item() */
static int transform_randint(struct transform_draws *d, int n) {
  return (int)floor((double)transform_next(d) * n);
}

static int transform_round(double x) { return (int)nearbyint(x); }

void transform_random_resized_crop_draws(int img_w, int img_h, const float *u, int nu, int *used,
                                     transform_crop *out) {
  transform_rrc_draws(img_w, img_h, &transform_rrc_default, u, nu, used, out);
}

void transform_rrc_draws(int img_w, int img_h, const transform_rrc_params *p, const float *u, int nu, int *used,
                         transform_crop *out) {
  struct transform_draws d = {u, nu, 0};
  int width = img_w, height = img_h;
  double area = (double)height * width;
  float log_ratio[2] = {transform_logf_sleef(p->ratio[0]), transform_logf_sleef(p->ratio[1])};
  int found = 0;

  for (int t = 0; t < TRANSFORM_TRIES && !found; t++) {
    double target_area = area * transform_uniform(transform_next(&d), p->scale[0], p->scale[1]);
    double aspect_ratio = transform_aspect(transform_next(&d), log_ratio);
    int w = transform_round(sqrt(target_area * aspect_ratio));
    int h = transform_round(sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      out->top = transform_randint(&d, height - h + 1);
      out->left = transform_randint(&d, width - w + 1);
      out->width = w;
      out->height = h;
      found = 1;
    }
  }
  if (!found) { /* centre crop, clamped to the ratio range */
    double in_ratio = (double)width / (double)height;
    double lo = transform_ratio_double(p->ratio[0]), hi = transform_ratio_double(p->ratio[1]);
    int w = width, h = height;
    if (in_ratio < lo)
      h = transform_round(w / lo);
    else if (in_ratio > hi)
      w = transform_round(h * hi);
    out->top = (height - h) / 2; /* Python's //, on values >= 0 */
    out->left = (width - w) / 2;
    out->width = w;
    out->height = h;
  }
  out->flip = transform_next(&d) < p->flip; /* RandomHorizontalFlip: torch.rand(1) < p, in float32 */
  if (used) *used = d.used;
}

void transform_random_resized_crop(int img_w, int img_h, rng_t *r, transform_crop *out) {
  transform_rrc(img_w, img_h, &transform_rrc_default, r, out);
}

void transform_rrc(int img_w, int img_h, const transform_rrc_params *p, rng_t *r, transform_crop *out) {
  /* A fixed number of draws, used or not: what follows in r does not depend
   * on how many tries the crop took. */
  float u[TRANSFORM_MAX_DRAWS];
  for (int i = 0; i < TRANSFORM_MAX_DRAWS; i++) u[i] = rng_uniform_f32(r);
  transform_rrc_draws(img_w, img_h, p, u, TRANSFORM_MAX_DRAWS, NULL, out);
}

/* F.center_crop along one axis of len pixels: the window's first pixel.
 * A window longer than the image is padded, (crop - len) // 2 zeros before
 * (the padded axis is then exactly the window); else int(round((len -
 * crop) / 2.0)). */
static int transform_center(int len, int crop) {
  return crop > len ? -((crop - len) / 2) : transform_round((len - crop) / 2.0);
}

void transform_eval_geometry(int img_w, int img_h, int resize, int out_w, int out_h, transform_eval *out) {
  /* Resize(round(S * 256 / 224)) by default: Python's int / int is the
   * correctly rounded quotient, as is this double division of exact
   * operands. */
  int short_side = resize ? resize : transform_round((double)(out_w > out_h ? out_w : out_h) * 256 / 224);
  int w_short = img_w <= img_h;
  long src_short = w_short ? img_w : img_h, src_long = w_short ? img_h : img_w;
  int long_side = (int)((double)short_side * (double)src_long / (double)src_short);
  out->resized_w = w_short ? short_side : long_side;
  out->resized_h = w_short ? long_side : short_side;
  out->top = transform_center(out->resized_h, out_h);
  out->left = transform_center(out->resized_w, out_w);
}

void transform_eval_params(int img_w, int img_h, int size, transform_eval *out) {
  transform_eval_geometry(img_w, img_h, 0, size, size, out);
}
