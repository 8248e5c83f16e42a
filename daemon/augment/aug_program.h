/*
 * aug_program.h -- a stream's recipe past the crop, as one program run on
 * every sample and batch: ColorJitter, then the policy (AutoAugment,
 * RandAugment or TrivialAugmentWide) on the 8-bit pixels after the crop
 * and flip; RandomErasing after Normalize; MixUp or CutMix over the batch.
 * Called by batch.c (load_one draws and runs the pixel ops of a sample,
 * batch_aug.c erases and mixes) from the stream's options.
 *
 * Every draw comes from the sample's own Philox stream (seed, epoch,
 * dataset index), continuing after the crop and flip, in the order the
 * transforms run; the mix from the batch's (RNG_DOMAIN_MIX, epoch, batch
 * index). So a batch stays a pure function of (dataset, options, seed,
 * epoch, batch index), whatever worker makes it.
 */
#ifndef BFEED_AUG_PROGRAM_H
#define BFEED_AUG_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "aug_erase.h"
#include "aug_jitter.h"
#include "aug_mix.h"
#include "aug_policy.h"
#include "bfeed_types.h"
#include "rng.h"

typedef struct aug_program {
  aug_jitter jitter;
  int policy_on;
  aug_policy policy;
  int resample;    /* the policy's filter, as pil_affine.h takes it */
  uint8_t fill[3]; /* the policy's fill */
  int erase_on;
  aug_erase erase;
  aug_mix mix;
} aug_program;

/* What one sample drew past its crop: for its pixels, its erasing, and
 * the explain tensor. */
typedef struct aug_drawn {
  aug_jitter_drawn jitter;
  int nops;
  aug_drawn_op ops[AUG_POLICY_MAX_OPS];
  aug_erase_drawn erase;
  rng_t erase_rng; /* the sample's stream after its draws: erase-random's values */
} aug_drawn;

/* The program of a stream whose images are height x width (o checked by
 * opts_check). */
void aug_program_init(aug_program *p, const bfeed_stream_opts *o, int height, int width);
/* Whether a sample's 8-bit pixels change after its crop (jitter, policy). */
int aug_program_pixels(const aug_program *p);
/* Whether anything runs past the crop at all. */
int aug_program_active(const aug_program *p);

/* Draw what sample's stream r gives past the crop and flip, and run the
 * pixel ops on rgb (height x width, HWC, the flip already in it); tmp
 * holds one image. 0, or BFEED_EINTERNAL with err set (a pixel op refused
 * its arguments: no draw of a checked stream does). */
int aug_program_sample(const aug_program *p, rng_t *r, uint8_t *rgb, int height, int width, uint8_t *tmp,
                       aug_drawn *d, char *err, size_t errlen);

#endif
