/*
 * pil_affine.h -- Pillow 9.4's affine warps and rotations of an RGB image,
 * and the geometric ops of torchvision 0.14's AutoAugment, RandAugment and
 * TrivialAugmentWide, bit-exact (see pil_image.h for the whole family).
 * Called by the augmentation policies and tests/daemon/augment_dump.c.
 *
 * dst has src's size and must not overlap it; a pixel whose source
 * position falls outside src gets fill (torchvision always hands Pillow a
 * fillcolor: its fill, or 0, each channel int()-truncated by _parse_fill).
 * resample is PIL_NEAREST, PIL_BILINEAR or PIL_BICUBIC. A matrix entry or
 * angle that is NaN or infinite is outside what is reproduced: such pixels
 * get fill (Pillow's casts of NaN are undefined behaviour in C).
 */
#ifndef BFEED_PIL_AFFINE_H
#define BFEED_PIL_AFFINE_H

#include <stdint.h>

#include "pil_image.h"

/* Image.transform(src.size, Image.AFFINE, m, resample, fillcolor=fill):
 * output pixel (x, y) samples src at (m[0]*(x+.5) + m[1]*(y+.5) + m[2],
 * m[3]*(x+.5) + m[4]*(y+.5) + m[5]), through the engine Pillow picks. */
int pil_affine_transform(const pil_rgb *src, pil_rgb *dst, const double m[6], int resample,
                         const uint8_t fill[3]);

/* Image.rotate(angle, resample, expand=False, center=None, fillcolor=fill),
 * i.e. F.rotate(img, angle, interpolation, fill=fill) on a PIL image: angle
 * in degrees counter-clockwise, taken modulo 360 as Python's % does. */
int pil_affine_rotate(const pil_rgb *src, pil_rgb *dst, double angle, int resample, const uint8_t fill[3]);

/* torchvision's _get_inverse_affine_matrix(center, angle, translate,
 * scale, shear) (inverted=True) into m. Python ints (a centre, a
 * translation) are exact as doubles, so they are passed as such. */
void pil_affine_inverse_matrix(const double center[2], double angle, const double translate[2], double scale,
                               const double shear[2], double m[6]);

/* F.affine(img, angle, translate, scale, shear, interpolation, fill,
 * center) on a PIL image; center NULL is torchvision's default
 * [w * 0.5, h * 0.5]. scale must be > 0, as F.affine demands. */
int pil_affine_tv(const pil_rgb *src, pil_rgb *dst, double angle, const double translate[2], double scale,
                  const double shear[2], const double *center, int resample, const uint8_t fill[3]);

/* The geometric ops of autoaugment.py's _apply_op. */
enum pil_affine_op {
  PIL_AFFINE_SHEAR_X,     /* F.affine, shear [degrees(atan(magnitude)), 0], center [0, 0] */
  PIL_AFFINE_SHEAR_Y,     /* the same with shear [0, degrees(atan(magnitude))] */
  PIL_AFFINE_TRANSLATE_X, /* F.affine, translate [int(magnitude), 0] */
  PIL_AFFINE_TRANSLATE_Y, /* F.affine, translate [0, int(magnitude)] */
  PIL_AFFINE_ROTATE       /* F.rotate(img, magnitude) */
};

/* _apply_op(img, op, magnitude, interpolation, fill) for those five ops:
 * magnitude is the Python float _apply_op receives (sign included). A
 * translation whose magnitude is not finite is refused, as int() refuses it. */
int pil_affine_apply_op(const pil_rgb *src, pil_rgb *dst, enum pil_affine_op op, double magnitude,
                        int resample, const uint8_t fill[3]);

/* CPython's round(x, 15), which Image.rotate applies to cos and sin;
 * exact for |x| <= 4 (it is only ever given a sine or a cosine). */
double pil_affine_round15(double x);

#endif
