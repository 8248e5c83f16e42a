/*
 * aug_policy.h -- which ops an augmentation policy applies to a sample, and
 * with what magnitudes: torchvision 0.14's AutoAugment(IMAGENET),
 * RandAugment(num_ops, magnitude, num_magnitude_bins) and
 * TrivialAugmentWide(num_magnitude_bins), their draws made from bfeed's
 * per-sample Philox stream with torchvision's distributions.
 * Called by aug_program.c (per sample) and the tests' dump tool.
 *
 * The draws, as each class's forward makes them:
 *   AutoAugment   a sub-policy (randint 25), two uniforms (each op applies
 *                 when its uniform <= its probability, in float32), two
 *                 signs (negated when 0);
 *   RandAugment   num_ops times: an op (randint over its 15), a sign for a
 *                 signed op; the magnitude is bin `magnitude`;
 *   TrivialAugmentWide  an op (randint 14), a bin (randint bins) for an op
 *                 with magnitudes, a sign for a signed op.
 * The magnitudes are aug_space.h's, for the image size the ops see (the
 * stream's output size: the policies run after the crop).
 */
#ifndef BFEED_AUG_POLICY_H
#define BFEED_AUG_POLICY_H

#include "aug_space.h"
#include "rng.h"

/* RandAugment's num_ops at most (the stream option's bound). */
#define AUG_POLICY_MAX_OPS 16

/* One op to apply: _apply_op(img, name, magnitude). */
typedef struct aug_drawn_op {
  enum aug_op op;
  double magnitude;
} aug_drawn_op;

typedef struct aug_policy {
  enum aug_policy_kind kind;
  int num_ops;   /* RandAugment */
  int magnitude; /* RandAugment: the bin, < bins */
  int bins;      /* RandAugment, TrivialAugmentWide */
  int nspace;
  aug_space_op space[AUG_SPACE_MAX_OPS];
} aug_policy;

/* The policy for images of height x width. bins and magnitude as the
 * stream gave them (checked at OPEN: 2 <= bins <= AUG_SPACE_MAX_BINS,
 * magnitude < bins, 1 <= num_ops <= AUG_POLICY_MAX_OPS). */
void aug_policy_init(aug_policy *p, enum aug_policy_kind kind, int num_ops, int magnitude, int bins, int height,
                     int width);
/* The ops for one sample, in the order applied (none may be drawn): their
 * number, at most AUG_POLICY_MAX_OPS. */
int aug_policy_draw(const aug_policy *p, rng_t *r, aug_drawn_op *out);

#endif
