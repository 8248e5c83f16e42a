/*
 * transform.h -- where to crop, with torchvision's semantics.
 * Called by sample.c (which crop to decode and resample).
 *
 * These functions only choose rectangles (in source pixels); decoding and
 * resampling happen in sample.c. Keeping the choice separate lets the tests
 * check it against torchvision's own code with the same random draws.
 */
#ifndef BFEED_TRANSFORM_H
#define BFEED_TRANSFORM_H

#include "rng.h"

typedef struct transform_crop {
  int left, top, width, height; /* crop box in source pixels */
  int flip;                     /* 1: mirror the output horizontally */
} transform_crop;

/* torchvision.transforms.RandomResizedCrop.get_params with scale (0.08, 1)
 * and ratio (3/4, 4/3): up to 10 tries of area and log-uniform aspect ratio,
 * then the centre-crop fallback; followed by RandomHorizontalFlip(p=0.5).
 * Draw order per try: area u, log-ratio u, (on success) top, left; then the
 * flip draw. All draws come from r. */
void transform_random_resized_crop(int img_w, int img_h, rng_t *r, transform_crop *out);

/* Same, from explicit draws, for the oracle test: u[] holds uniforms in
 * [0,1) consumed in the order above; *used gets how many were consumed. */
void transform_random_resized_crop_draws(int img_w, int img_h, const float *u, int nu, int *used,
                                     transform_crop *out);
/* Both with RandomResizedCrop's scale=(scale_lo, scale_hi) instead of
 * (0.08, 1): the share of the image's area each try draws from (float32,
 * as torch casts them): the stream option opts.def calls crop-scale. */
void transform_rrc(int img_w, int img_h, float scale_lo, float scale_hi, rng_t *r, transform_crop *out);
void transform_rrc_draws(int img_w, int img_h, float scale_lo, float scale_hi, const float *u, int nu, int *used,
                         transform_crop *out);

/* The aspect ratio a log-ratio draw u gives:
 * torch.exp(torch.empty(1).uniform_(log(3/4), log(4/3))).item() with torch's
 * float32 arithmetic. Exposed for the oracle test, which checks it against
 * torch for all 2^24 draws. */
float transform_aspect_from_draw(float u);

/* torch.exp of a float32 element, as the AVX2/AVX-512 kernels compute it
 * (SLEEF's expf_u10; |x| < 100), and torch.log's, as glibc's logf: the
 * kernels' SLEEF logf differs from it in the last bit for about 0.6% of
 * arguments (RandomErasing's log-ratio bounds: aug_erase.c; the default
 * crop ratio's are constants taken from torch). */
float transform_exp_f32(float x);
float transform_log_f32(float x);

/* torchvision Resize(round(size*256/224)) then CenterCrop(size): the size of
 * the resized image (shorter side = round(size*256/224), longer side =
 * int(short * long / short_src) as torchvision truncates), and the crop
 * window in the resized image (top = int(round((H - size) / 2.0)), ties to
 * even like Python's round). */
typedef struct transform_eval {
  int resized_w, resized_h; /* the whole image is resized to this */
  int left, top;            /* then this window of size x size is kept */
} transform_eval;
void transform_eval_params(int img_w, int img_h, int size, transform_eval *out);

#endif
