/*
 * aug_mix.h -- MixUp and CutMix over a batch, as torchvision's reference
 * recipe (references/classification/transforms.py RandomMixup and
 * RandomCutmix, p = 1, one of the two chosen uniformly when both are on,
 * as its RandomChoice does) runs them on the collated float32 batch after
 * Normalize: each sample mixed with the one before it (batch.roll(1, 0)).
 * Called by batch.c after the samples are made, before the cast to bf16.
 *
 * The draws (from the batch's own Philox stream, domain RNG_DOMAIN_MIX):
 * which of the two, lam ~ Beta(alpha, alpha) (torch._sample_dirichlet's
 * distribution; its numbers no one can reproduce), and for CutMix the box
 * centre (randint W, randint H). The arithmetic is the reference's in
 * float32: x * lam + x_rolled * (1 - lam), each product rounded, then the
 * sum; CutMix copies the rolled box and sets lam = 1 - box area / (W * H).
 * The targets, float32 [B, classes]: lam * onehot(y) + (1 - lam) *
 * onehot(roll(y)), in the same arithmetic.
 */
#ifndef BFEED_AUG_MIX_H
#define BFEED_AUG_MIX_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

enum aug_mix_kind { AUG_MIX_NONE, AUG_MIX_MIXUP, AUG_MIX_CUTMIX };

typedef struct aug_mix {
  float mixup_alpha, cutmix_alpha; /* 0: off */
} aug_mix;

typedef struct aug_mix_drawn {
  enum aug_mix_kind kind;
  double lam;        /* what the targets use (CutMix: after its box) */
  int y1, y2, x1, x2; /* CutMix's box */
} aug_mix_drawn;

int aug_mix_active(const aug_mix *m);
/* Draw for a batch of height x width images. */
void aug_mix_draw(const aug_mix *m, int height, int width, rng_t *r, aug_mix_drawn *out);
/* MixUp of one sample x with the one before it, xr (batch.roll(1, 0)):
 * out[i] = x[i] * lam + xr[i] * (1 - lam), n float32 values. */
void aug_mix_blend(const aug_mix_drawn *d, const float *restrict x, const float *restrict xr, size_t n,
                   float *restrict out);
/* CutMix of one sample: x's box becomes xr's, images of bf16 values (a
 * copy commutes with the cast) in CHW when nchw, else HWC. */
void aug_mix_cut(const aug_mix_drawn *d, uint16_t *x, const uint16_t *xr, int height, int width, int nchw);
/* target[B][classes] for the labels (each in 0..classes-1). */
void aug_mix_targets(const aug_mix_drawn *d, const int32_t *labels, int B, int classes, float *target);

#endif
