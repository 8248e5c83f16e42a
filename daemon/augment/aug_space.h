/*
 * aug_space.h -- the augmentation spaces of torchvision 0.14's AutoAugment,
 * RandAugment and TrivialAugmentWide: which ops each may draw, and each
 * op's magnitudes, as the floats `_apply_op` receives.
 * Called by aug_policy.c (the draws) and the tests' dump tool.
 *
 * torchvision builds the magnitudes with torch.linspace in float32 (and
 * Posterize's with arange, a float32 division and round()); the op then
 * gets float(tensor[i]), a double holding that float32. aug_space_linspace
 * reproduces torch 1.13's CPU linspace bit for bit (see aug_space.c).
 */
#ifndef BFEED_AUG_SPACE_H
#define BFEED_AUG_SPACE_H

#include <stdint.h>

/* The ops of autoaugment.py's _apply_op, in no policy's order. */
enum aug_op {
  AUG_IDENTITY, AUG_SHEAR_X, AUG_SHEAR_Y, AUG_TRANSLATE_X, AUG_TRANSLATE_Y, AUG_ROTATE, AUG_BRIGHTNESS,
  AUG_COLOR, AUG_CONTRAST, AUG_SHARPNESS, AUG_POSTERIZE, AUG_SOLARIZE, AUG_AUTOCONTRAST, AUG_EQUALIZE,
  AUG_INVERT, AUG_OPS
};
/* torchvision's name of op ("ShearX", ...). */
const char *aug_op_name(enum aug_op op);

enum aug_policy_kind { AUG_POLICY_AUTO, AUG_POLICY_RAND, AUG_POLICY_TRIVIAL_WIDE };

/* The most bins a stream may ask for (num_magnitude_bins). */
#define AUG_SPACE_MAX_BINS 256

/* One op of a space: its magnitudes (n of them; n 0: the op takes 0.0)
 * and whether _apply_op's caller draws a sign for it. */
typedef struct aug_space_op {
  enum aug_op op;
  int signed_;
  int n;
  float mag[AUG_SPACE_MAX_BINS];
} aug_space_op;

/* A policy's space in torchvision's dict order (which is what an op index
 * draws): AutoAugment's (10 bins, 14 ops), RandAugment's (15 ops with
 * Identity) and TrivialAugmentWide's (14 ops with Identity, its wider
 * ranges). bins is num_magnitude_bins (AutoAugment: always 10), height
 * and width the image's (Translate's range for AutoAugment and
 * RandAugment). Returns the number of ops. */
int aug_space_build(enum aug_policy_kind kind, int bins, int height, int width, aug_space_op *out);
/* The most ops a space has. */
#define AUG_SPACE_MAX_OPS 15

/* torch.linspace(start, end, steps) in float32, as torch 1.13's CPU kernel
 * computes it (steps <= AUG_SPACE_MAX_BINS). */
void aug_space_linspace(double start, double end, int steps, float *out);

#endif
