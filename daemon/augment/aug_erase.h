/*
 * aug_erase.h -- torchvision 0.14's RandomErasing(p, scale, ratio, value)
 * on a normalised sample, as the reference recipe places it (after
 * Normalize): the draws of its forward and get_params from bfeed's
 * per-sample stream, and the box written with the value.
 * Called by aug_program.c.
 *
 * get_params: up to 10 tries of an area (uniform in scale, times H * W)
 * and a log-uniform aspect ratio; a box that fits (h < H and w < W) is
 * placed by two randints; else nothing is erased. value is a number per
 * channel (0 by default), or "random": every erased value a standard
 * normal float32 (torchvision's normal_() numbers cannot be reproduced by
 * anyone: their distribution is).
 */
#ifndef BFEED_AUG_ERASE_H
#define BFEED_AUG_ERASE_H

#include <stdint.h>

#include "rng.h"

typedef struct aug_erase {
  float p;
  float scale[2], ratio[2];
  float log_ratio[2]; /* torch.log(torch.tensor(ratio)), float32 */
  float value[3];
  int random;
} aug_erase;

typedef struct aug_erase_drawn {
  int on; /* 0: nothing erased (p not drawn, or no box fitted in 10 tries) */
  int i, j, h, w;
} aug_erase_drawn;

/* p in [0, 1], 0 < scale lo <= hi <= 1, 0 < ratio lo <= hi (checked at OPEN). */
void aug_erase_init(aug_erase *e, float p, const float scale[2], const float ratio[2], const float value[3],
                    int random);
/* The draws for a C x H x W sample. */
void aug_erase_draw(const aug_erase *e, int height, int width, rng_t *r, aug_erase_drawn *out);
/* Erase the box of an image of float32 values (CHW when nchw, else HWC),
 * drawing the random values from r when e->random. */
void aug_erase_apply_f32(const aug_erase *e, const aug_erase_drawn *d, float *img, int height, int width, int nchw,
                         rng_t *r);
/* The same for a bf16 image (bit patterns): each value cast as torch's
 * .to(torch.bfloat16) would. */
void aug_erase_apply_bf16(const aug_erase *e, const aug_erase_drawn *d, uint16_t *img, int height, int width,
                          int nchw, rng_t *r);

#endif
