/* aug_space.c -- see aug_space.h */
#include "aug_space.h"

#include <math.h>
#include <string.h>

static const char *const aug_space_names[AUG_OPS] = {
    "Identity", "ShearX",     "ShearY",   "TranslateX", "TranslateY",   "Rotate",   "Brightness", "Color",
    "Contrast", "Sharpness", "Posterize", "Solarize",   "AutoContrast", "Equalize", "Invert"};

const char *aug_op_name(enum aug_op op) { return op < AUG_OPS ? aug_space_names[op] : "?"; }

/* torch 1.13's linspace_kernel (ATen/native/cpu/RangeFactoriesKernel.cpp)
 * in its AVX2 build, which Debian's torch runs: step = (end - start) /
 * (steps - 1) in float32; element i is start + step * i below steps / 2
 * and end - step * (steps - i - 1) from there, each an FMA (GCC contracts
 * them); the vectorised loop takes 16 elements at a time as two vectors of
 * 8, each vector from its first element's value plus k * step for lane k
 * (Vectorized<float>::arange: a product rounded, then a sum rounded), and
 * the rest one at a time. Checked against torch for the bins and ranges
 * the policies use (tests/daemon/augment_draws.py). */
static float aug_space_lin_one(float start, float end, float step, int i, int steps) {
  return i < steps / 2 ? fmaf(step, (float)i, start) : fmaf(-step, (float)(steps - i - 1), end);
}

/* One vector of 8 from element i: Vectorized<float>::arange(first, step). */
static void aug_space_lin_vector(float start, float end, float step, int i, int steps, float *out) {
  float base = aug_space_lin_one(start, end, step, i, steps);
  out[i] = base;
  for (int k = 1; k < 8; k++) {
    volatile float lane = (float)k * step; /* a product then a sum, each rounded: never contracted */
    out[i + k] = base + lane;
  }
}

void aug_space_linspace(double start, double end, int steps, float *out) {
  float s = (float)start, e = (float)end;
  if (steps == 1) {
    out[0] = s;
    return;
  }
  float step = (e - s) / (float)(steps - 1);
  int i = 0;
  for (; i + 16 <= steps; i += 16) {
    aug_space_lin_vector(s, e, step, i, steps, out);
    aug_space_lin_vector(s, e, step, i + 8, steps, out);
  }
  for (; i < steps; i++) out[i] = aug_space_lin_one(s, e, step, i, steps);
}

/* 8 - (torch.arange(bins) / ((bins - 1) / div)).round().int(): the
 * division in float32, round() to even. */
static void aug_space_posterize(int bins, double div, float *out) {
  float d = (float)((bins - 1) / div);
  for (int i = 0; i < bins; i++) out[i] = (float)(8 - (int)nearbyintf((float)i / d));
}

typedef struct aug_space_row {
  enum aug_op op;
  int signed_;
  double lo, hi; /* linspace(lo, hi); hi < 0: Translate's 150/331 of a side (-1 width, -2 height) */
} aug_space_row;

/* The dicts of autoaugment.py, in order; Posterize and the no-magnitude
 * ops are marked by their op alone. */
static const aug_space_row aug_space_aa[] = {
    {AUG_SHEAR_X, 1, 0, 0.3},    {AUG_SHEAR_Y, 1, 0, 0.3},     {AUG_TRANSLATE_X, 1, 0, -1},
    {AUG_TRANSLATE_Y, 1, 0, -2}, {AUG_ROTATE, 1, 0, 30},       {AUG_BRIGHTNESS, 1, 0, 0.9},
    {AUG_COLOR, 1, 0, 0.9},      {AUG_CONTRAST, 1, 0, 0.9},    {AUG_SHARPNESS, 1, 0, 0.9},
    {AUG_POSTERIZE, 0, 0, 4},    {AUG_SOLARIZE, 0, 255, 0},    {AUG_AUTOCONTRAST, 0, 0, 0},
    {AUG_EQUALIZE, 0, 0, 0},     {AUG_INVERT, 0, 0, 0}};
static const aug_space_row aug_space_wide[] = {
    {AUG_IDENTITY, 0, 0, 0},      {AUG_SHEAR_X, 1, 0, 0.99},    {AUG_SHEAR_Y, 1, 0, 0.99},
    {AUG_TRANSLATE_X, 1, 0, 32},  {AUG_TRANSLATE_Y, 1, 0, 32},  {AUG_ROTATE, 1, 0, 135},
    {AUG_BRIGHTNESS, 1, 0, 0.99}, {AUG_COLOR, 1, 0, 0.99},      {AUG_CONTRAST, 1, 0, 0.99},
    {AUG_SHARPNESS, 1, 0, 0.99},  {AUG_POSTERIZE, 0, 0, 6},     {AUG_SOLARIZE, 0, 255, 0},
    {AUG_AUTOCONTRAST, 0, 0, 0},  {AUG_EQUALIZE, 0, 0, 0}};

static int aug_space_fill(const aug_space_row *rows, int nrows, int first, int bins, int height, int width,
                          aug_space_op *out) {
  int n = 0;
  for (int r = first; r < nrows; r++, n++) {
    const aug_space_row *row = &rows[r];
    aug_space_op *o = &out[n];
    memset(o, 0, sizeof *o);
    o->op = row->op;
    o->signed_ = row->signed_;
    if (row->op == AUG_IDENTITY || row->op == AUG_AUTOCONTRAST || row->op == AUG_EQUALIZE || row->op == AUG_INVERT)
      continue; /* torch.tensor(0.0): ndim 0, the op gets 0.0 */
    o->n = bins;
    if (row->op == AUG_POSTERIZE) {
      aug_space_posterize(bins, row->hi, o->mag);
      continue;
    }
    double hi = row->hi == -1 ? 150.0 / 331.0 * width : row->hi == -2 ? 150.0 / 331.0 * height : row->hi;
    aug_space_linspace(row->lo, hi, bins, o->mag);
  }
  return n;
}

int aug_space_build(enum aug_policy_kind kind, int bins, int height, int width, aug_space_op *out) {
  int na = (int)(sizeof aug_space_aa / sizeof aug_space_aa[0]);
  switch (kind) {
    case AUG_POLICY_AUTO: return aug_space_fill(aug_space_aa, na, 0, 10, height, width, out);
    case AUG_POLICY_RAND: { /* Identity, then AutoAugment's less Invert */
      memset(&out[0], 0, sizeof out[0]);
      out[0].op = AUG_IDENTITY;
      return 1 + aug_space_fill(aug_space_aa, na - 1, 0, bins, height, width, out + 1);
    }
    case AUG_POLICY_TRIVIAL_WIDE:
      return aug_space_fill(aug_space_wide, (int)(sizeof aug_space_wide / sizeof aug_space_wide[0]), 0, bins,
                            height, width, out);
  }
  return 0;
}
