/*
 * pil_hsv.h -- ColorJitter's hue: torchvision 0.14's F.adjust_hue on a PIL
 * RGB image, bit-exact to Pillow 9.4 and numpy 1.24 (see pil_image.h).
 * Called by the augmentation policies and tests/daemon/augment_dump.c.
 *
 * F.adjust_hue converts to HSV (Convert.c's rgb2hsv), adds
 * np.uint8(hue_factor * 255) to the hue byte with uint8 wrap-around, and
 * converts back (hsv2rgb). np.uint8 of a Python float is a C cast: on
 * x86-64 numpy 1.24 truncates toward zero to an int and keeps its low
 * byte, so -0.3 * 255 = -76.5 gives -76, i.e. 180, and -0.5 gives 129
 * (checked against numpy by tests/daemon/augment_oracle.py for every
 * factor it tries).
 */
#ifndef BFEED_PIL_HSV_H
#define BFEED_PIL_HSV_H

#include <stdint.h>

#include "pil_image.h"

/* One pixel of img.convert("HSV") from "RGB". */
void pil_hsv_from_rgb(const uint8_t rgb[3], uint8_t hsv[3]);

/* One pixel of an "HSV" image's convert("RGB"). */
void pil_hsv_to_rgb(const uint8_t hsv[3], uint8_t rgb[3]);

/* np.uint8(hue_factor * 255), hue_factor in [-0.5, 0.5]. */
uint8_t pil_hsv_hue_shift(double hue_factor);

/* F.adjust_hue(img, hue_factor): hue_factor in [-0.5, 0.5] (torchvision
 * refuses others, NaN included). dst may be src itself. */
int pil_hsv_adjust_hue(const pil_rgb *src, pil_rgb *dst, double hue_factor);

#endif
