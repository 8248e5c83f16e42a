/*
 * aug_jitter.h -- torchvision 0.14's ColorJitter(brightness, contrast,
 * saturation, hue) on a sample: its draws (ColorJitter.get_params: an
 * order, torch.randperm(4), then a factor for each of the four that is on,
 * uniform in its range) from bfeed's per-sample stream. The pixels are
 * pil_enhance.h's and pil_hsv.h's (aug_program.c applies them).
 */
#ifndef BFEED_AUG_JITTER_H
#define BFEED_AUG_JITTER_H

#include "rng.h"

enum aug_jitter_kind { AUG_JITTER_BRIGHTNESS, AUG_JITTER_CONTRAST, AUG_JITTER_SATURATION, AUG_JITTER_HUE };
/* "brightness", "contrast", "saturation", "hue" */
const char *aug_jitter_name(enum aug_jitter_kind k);

/* The ranges, as ColorJitter's _check_input makes them from single numbers
 * (the stream option color_jitter B,C,S,H): [max(0, 1 - v), 1 + v] for the
 * first three, [-h, h] for hue; an amount of 0 turns that one off. */
typedef struct aug_jitter {
  int on[4];
  float lo[4], hi[4];
} aug_jitter;

/* What one sample drew: n adjustments in the order applied. */
typedef struct aug_jitter_drawn {
  int n;
  enum aug_jitter_kind kind[4];
  float factor[4];
} aug_jitter_drawn;

/* amounts: brightness, contrast, saturation >= 0, hue in [0, 0.5]
 * (checked at OPEN). */
void aug_jitter_init(aug_jitter *j, const float amounts[4]);
int aug_jitter_active(const aug_jitter *j);
void aug_jitter_draw(const aug_jitter *j, rng_t *r, aug_jitter_drawn *out);

#endif
