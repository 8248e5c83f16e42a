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

/* RandomResizedCrop's scale= (the share of the image's area each try
 * draws from) and ratio= (width / height), and RandomHorizontalFlip's p,
 * as float32: torch's tensors hold them so, and the stream options
 * (crop_scale, crop_ratio, hflip) carry them so. */
typedef struct transform_rrc_params {
  float scale[2], ratio[2], flip;
} transform_rrc_params;
/* (0.08, 1), (3/4, 4/3), 0.5: torchvision's defaults. */
extern const transform_rrc_params transform_rrc_default;

/* torchvision.transforms.RandomResizedCrop.get_params with p's scale and
 * ratio: up to 10 tries of area and log-uniform aspect ratio, then the
 * centre-crop fallback; followed by RandomHorizontalFlip(p->flip). Draw
 * order per try: area u, log-ratio u, (on success) top, left; then the
 * flip draw. All draws come from r. */
void transform_rrc(int img_w, int img_h, const transform_rrc_params *p, rng_t *r, transform_crop *out);
/* Same, from explicit draws, for the oracle test: u[] holds uniforms in
 * [0,1) consumed in the order above; *used gets how many were consumed. */
void transform_rrc_draws(int img_w, int img_h, const transform_rrc_params *p, const float *u, int nu, int *used,
                         transform_crop *out);
/* Both with transform_rrc_default. */
void transform_random_resized_crop(int img_w, int img_h, rng_t *r, transform_crop *out);
void transform_random_resized_crop_draws(int img_w, int img_h, const float *u, int nu, int *used,
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

/* torch.log of a float32 element as torch's AVX2/AVX-512 kernels compute
 * it (SLEEF's logf_u10), for x > 0: RandomResizedCrop's log-ratio bounds. */
float transform_logf_sleef(float x);

/* torchvision Resize(resize) then CenterCrop((out_h, out_w)): the size of
 * the resized image (shorter side = resize, longer side = int(resize *
 * long / short) as torchvision truncates), and the crop window in the
 * resized image (top = int(round((H - out_h) / 2.0)), ties to even like
 * Python's round). Where the window is larger than the resized image,
 * F.center_crop pads it with zeros, (out - H) // 2 of them before: left or
 * top is then negative, and the window's pixels outside the image are 0.
 * resize 0: round(max(out_h, out_w) * 256 / 224), the crop's 256/224. */
typedef struct transform_eval {
  int resized_w, resized_h; /* the whole image is resized to this */
  int left, top;            /* then this window of out_w x out_h is kept */
} transform_eval;
void transform_eval_geometry(int img_w, int img_h, int resize, int out_w, int out_h, transform_eval *out);
/* Resize(round(size*256/224)) then CenterCrop(size). */
void transform_eval_params(int img_w, int img_h, int size, transform_eval *out);

#endif
