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
 *  - torch.log(torch.tensor(ratio)) are float32 constants, taken from torch;
 *  - torch.exp of a float32 is SLEEF's expf_u10 in those kernels, which
 *    differs from glibc's expf in the last bit for about 7% of the
 *    log-ratio draws, so it is reproduced here (transform_expf_sleef).
 *  - target_area, the square roots and round() are Python floats: double,
 *    with round() ties to even (nearbyint in the default rounding mode);
 *  - torch.randint(0, n) is given floor(u * n) by our draws, in double.
 *
 * torch itself is not the same everywhere: with ATEN_CPU_CAPABILITY=default
 * (or a CPU without AVX2) it rounds twice in uniform_ and uses glibc's expf.
 * We follow the AVX2/AVX-512 kernels, what torch runs on any recent x86-64;
 * tests/daemon/crop_oracle.py checks both points against torch.
 */
#include "transform.h"

#include <math.h>

#define TRANSFORM_TRIES 10
/* 10 tries of 2 draws, the 2 offsets of a successful try, the flip. */
#define TRANSFORM_MAX_DRAWS (2 * TRANSFORM_TRIES + 3)

/* float32(0.08) and float32(1.0): the default scale bounds after torch's
 * cast (a stream's own scale range is float32 too: uniform_ on a float tensor
 * casts its Python-float bounds so). */
static const float transform_scale_lo = 0.08f, transform_scale_hi = 1.0f;
/* torch.log(torch.tensor((3/4, 4/3))), float32. */
static const float transform_log_ratio_lo = -0x1.269622p-2f, transform_log_ratio_hi = 0x1.269624p-2f;

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

float transform_aspect_from_draw(float u) {
  return transform_expf_sleef(transform_uniform(u, transform_log_ratio_lo, transform_log_ratio_hi));
}

/* torch.randint(0, n, size=(1,)).item() */
static int transform_randint(struct transform_draws *d, int n) {
  return (int)floor((double)transform_next(d) * n);
}

static int transform_round(double x) { return (int)nearbyint(x); }

void transform_random_resized_crop_draws(int img_w, int img_h, const float *u, int nu, int *used,
                                     transform_crop *out) {
  transform_rrc_draws(img_w, img_h, transform_scale_lo, transform_scale_hi, u, nu, used, out);
}

void transform_rrc_draws(int img_w, int img_h, float scale_lo, float scale_hi, const float *u, int nu, int *used,
                         transform_crop *out) {
  struct transform_draws d = {u, nu, 0};
  int width = img_w, height = img_h;
  double area = (double)height * width;
  int found = 0;

  for (int t = 0; t < TRANSFORM_TRIES && !found; t++) {
    double target_area = area * transform_uniform(transform_next(&d), scale_lo, scale_hi);
    double aspect_ratio = transform_aspect_from_draw(transform_next(&d));
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
    int w = width, h = height;
    if (in_ratio < 3.0 / 4.0)
      h = transform_round(w / (3.0 / 4.0));
    else if (in_ratio > 4.0 / 3.0)
      w = transform_round(h * (4.0 / 3.0));
    out->top = (height - h) / 2; /* Python's //, on values >= 0 */
    out->left = (width - w) / 2;
    out->width = w;
    out->height = h;
  }
  out->flip = transform_next(&d) < 0.5f; /* RandomHorizontalFlip: torch.rand(1) < p */
  if (used) *used = d.used;
}

void transform_random_resized_crop(int img_w, int img_h, rng_t *r, transform_crop *out) {
  transform_rrc(img_w, img_h, transform_scale_lo, transform_scale_hi, r, out);
}

void transform_rrc(int img_w, int img_h, float scale_lo, float scale_hi, rng_t *r, transform_crop *out) {
  /* A fixed number of draws, used or not: what follows in r does not depend
   * on how many tries the crop took. */
  float u[TRANSFORM_MAX_DRAWS];
  for (int i = 0; i < TRANSFORM_MAX_DRAWS; i++) u[i] = rng_uniform_f32(r);
  transform_rrc_draws(img_w, img_h, scale_lo, scale_hi, u, TRANSFORM_MAX_DRAWS, NULL, out);
}

void transform_eval_params(int img_w, int img_h, int size, transform_eval *out) {
  /* Resize(round(size * 256 / 224)): Python's int / int is the correctly
   * rounded quotient, as is this double division of exact operands. */
  int short_side = transform_round((double)size * 256 / 224);
  int w_short = img_w <= img_h;
  long src_short = w_short ? img_w : img_h, src_long = w_short ? img_h : img_w;
  int long_side = (int)((double)short_side * (double)src_long / (double)src_short);
  out->resized_w = w_short ? short_side : long_side;
  out->resized_h = w_short ? long_side : short_side;
  /* CenterCrop(size): int(round((H - size) / 2.0)). */
  out->top = transform_round((out->resized_h - size) / 2.0);
  out->left = transform_round((out->resized_w - size) / 2.0);
}
