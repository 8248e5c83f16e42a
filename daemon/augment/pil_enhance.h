/*
 * pil_enhance.h -- torchvision 0.14's colour and tone ops on a PIL RGB
 * image (F.adjust_brightness, adjust_saturation, adjust_contrast,
 * adjust_sharpness, posterize, solarize, autocontrast, equalize, invert),
 * bit-exact to Pillow 9.4's ImageEnhance and ImageOps (see pil_image.h).
 * Called by the augmentation policies and tests/daemon/augment_dump.c.
 *
 * dst has src's size; it may be src itself (not a partial overlap) for
 * every op but sharpness. Factors and thresholds are the Python floats
 * torchvision passes (_apply_op's 1.0 + magnitude, ColorJitter's draws);
 * Pillow's Blend narrows a factor to a C float, and so do these.
 */
#ifndef BFEED_PIL_ENHANCE_H
#define BFEED_PIL_ENHANCE_H

#include "pil_image.h"

/* F.adjust_brightness(img, factor): ImageEnhance.Brightness, a blend with
 * black; any factor (above 1 extrapolates, clipped at 255). */
int pil_enhance_brightness(const pil_rgb *src, pil_rgb *dst, double factor);

/* F.adjust_saturation(img, factor): ImageEnhance.Color, a blend with
 * convert("L").convert("RGB"); any factor. */
int pil_enhance_saturation(const pil_rgb *src, pil_rgb *dst, double factor);

/* F.adjust_contrast(img, factor): ImageEnhance.Contrast, a blend with a
 * grey of the L image's mean, int(mean + 0.5); any factor. */
int pil_enhance_contrast(const pil_rgb *src, pil_rgb *dst, double factor);

/* F.adjust_sharpness(img, factor): ImageEnhance.Sharpness, a blend with
 * the image through ImageFilter.SMOOTH (its edge rows and columns, and a
 * whole image under 3x3, unfiltered); any factor. dst must not overlap src. */
int pil_enhance_sharpness(const pil_rgb *src, pil_rgb *dst, double factor);

/* F.posterize(img, bits): ImageOps.posterize, keeping the top bits of each
 * channel; bits in 0..8 (torchvision refuses others). */
int pil_enhance_posterize(const pil_rgb *src, pil_rgb *dst, int bits);

/* F.solarize(img, threshold): ImageOps.solarize, a byte v becomes 255 - v
 * unless v < threshold (compared as Python compares an int and a float). */
int pil_enhance_solarize(const pil_rgb *src, pil_rgb *dst, double threshold);

/* F.autocontrast(img): ImageOps.autocontrast(img) (cutoff 0, no ignore, no
 * mask): each channel's darkest byte to 0 and lightest to 255. */
int pil_enhance_autocontrast(const pil_rgb *src, pil_rgb *dst);

/* F.equalize(img): ImageOps.equalize(img), each channel's histogram
 * flattened. */
int pil_enhance_equalize(const pil_rgb *src, pil_rgb *dst);

/* F.invert(img): ImageOps.invert, 255 - v. */
int pil_enhance_invert(const pil_rgb *src, pil_rgb *dst);

/* A pixel's byte in img.convert("L"): Convert.c's rgb2l, ITU-R 601-2 luma
 * in 16.16 fixed point, rounded. */
uint8_t pil_enhance_luma(const uint8_t rgb[3]);

#endif
