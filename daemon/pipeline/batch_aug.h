/*
 * batch_aug.h -- a batch's part of the recipe (aug_program.h): the image
 * tensor when RandomErasing, MixUp or CutMix change it after Normalize,
 * the mixed `target` tensor, and the `explain` tensor that says what every
 * sample drew. Called by batch.c.
 *
 * The arithmetic is the reference recipe's: the sample's 8-bit pixels to
 * float32 as ToTensor and Normalize compute them, the box erased (in
 * float32, or its value cast to bf16 when nothing is mixed: the same
 * bits), the batch mixed in float32 (aug_mix.h), then the cast to bf16
 * rounding to nearest even, as .to(torch.bfloat16).
 */
#ifndef BFEED_BATCH_AUG_H
#define BFEED_BATCH_AUG_H

#include <stddef.h>
#include <stdint.h>

#include "aug_program.h"
#include "transform.h"

/* What a sample drew, kept from its load until the batch is written. */
typedef struct batch_aug_sample {
  aug_drawn aug;
  transform_crop crop; /* train: the crop box and flip */
  transform_eval eval; /* eval: the resize and window */
} batch_aug_sample;

/* Per-worker memory for it; zero-initialise, free with batch_aug_free. */
typedef struct batch_aug_mem {
  batch_aug_sample *sample; /* one per sample of the batch */
  size_t sample_cap;        /* bytes */
  uint8_t *tmp;             /* one image: the pixel ops' other buffer */
  size_t tmp_cap;
  float *f32;               /* four images of float32, when the batch is mixed (batch_aug_image) */
  size_t f32_cap;
  int32_t *labels;          /* the batch's labels, for its targets */
  size_t labels_cap;
  aug_mix_drawn mix;        /* the batch's mix draws */
  uint64_t ns;              /* time in the recipe since the batch began (its augment stage) */
} batch_aug_mem;

/* Bytes of the explain tensor of a batch of B samples (fixed, so a batch's
 * layout is known before its samples are: the JSON is padded with spaces). */
uint64_t batch_aug_explain_bytes(uint32_t B);

/* Room for B samples of height x width. 0 or BFEED_ENOMEM. grew gets the
 * bytes added (the worker counts them). */
int batch_aug_reserve(batch_aug_mem *m, uint32_t B, int height, int width, int mixed, int64_t *grew);
void batch_aug_free(batch_aug_mem *m, int64_t *freed);

/* The image tensor, bf16, for B samples whose 8-bit pixels are rgb (HWC,
 * flipped), from their normalising tables lut (bf16) and lutf (float32),
 * erased and mixed as prog says; the mix drawn from the batch's stream
 * (seed, epoch, batch index). */
void batch_aug_image(const aug_program *prog, batch_aug_mem *m, const uint8_t *rgb, uint32_t B, int height,
                     int width, int nhwc, const uint16_t lut[3][256], const float lutf[3][256], uint64_t seed,
                     uint64_t epoch, uint64_t index, uint16_t *out);
/* The same, its time added to m->ns. */
void batch_aug_image_timed(const aug_program *prog, batch_aug_mem *m, const uint8_t *rgb, uint32_t B, int height,
                           int width, int nhwc, const uint16_t lut[3][256], const float lutf[3][256], uint64_t seed,
                           uint64_t epoch, uint64_t index, uint16_t *out);
/* target[B][classes], float32 (after batch_aug_image), for the samples
 * sel of a dataset labelled labels (each below classes). */
void batch_aug_target(batch_aug_mem *m, const int32_t *labels, const uint32_t *sel, uint32_t B, uint32_t classes,
                      float *target);
/* The explain tensor's bytes (batch_aug_explain_bytes(B) of them): JSON
 * of the batch's epoch, index, mix, and per sample its dataset index
 * (sel), geometry, flip, jitter, policy ops and erased box. */
void batch_aug_explain(const aug_program *prog, const batch_aug_mem *m, const uint32_t *sel, uint32_t B, int eval,
                       uint64_t epoch, uint64_t index, uint8_t *out);

#endif
