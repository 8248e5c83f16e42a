/*
 * pil_image.h -- the image the pil_* pixel operations take: RGB8, HWC, rows
 * 3 * w bytes apart, with no padding. Included by pil_affine.h,
 * pil_enhance.h and pil_hsv.h, and by their callers.
 *
 * What the pil_* files reproduce, each bit-exactly on this machine against
 * Pillow 9.4 and torchvision 0.14 on a PIL "RGB" image (tests/daemon/
 * augment_oracle.py compares every op byte for byte):
 *
 *  pil_affine   Image.transform(size, AFFINE, m, resample, fillcolor=fill)
 *               with the output the input's size (libImaging/Geometry.c:
 *               which engine runs for which matrix -- the scale-only and
 *               16.16 fixed-point nearest paths, the float nearest
 *               fallback, the generic engine with the bilinear and bicubic
 *               filters -- and each one's arithmetic); Image.rotate (the
 *               transpose shortcuts, cos/sin rounded to 15 decimals as
 *               round() does, the centre and translation terms);
 *               torchvision's _get_inverse_affine_matrix and F.affine's PIL
 *               path; the five geometric ops of autoaugment.py's _apply_op
 *               (ShearX, ShearY, TranslateX, TranslateY, Rotate).
 *  pil_enhance  ImageEnhance's Brightness, Color (F.adjust_saturation),
 *               Contrast and Sharpness: Image.blend with Blend.c's float
 *               arithmetic against the degenerate image each class makes
 *               (black; convert("L") with Convert.c's 16-bit fixed-point
 *               luma; the L mean from ImageStat, rounded as ImageEnhance
 *               does; ImageFilter.SMOOTH through Filter.c's 3x3 path, edges
 *               copied); ImageOps' posterize, solarize, autocontrast,
 *               equalize and invert, per channel as ImageOps does on RGB
 *               (a 768-entry table through Image.point, CLIP8 included).
 *  pil_hsv      F.adjust_hue's PIL path (ColorJitter's hue): convert("HSV")
 *               and back (Convert.c's rgb2hsv and hsv2rgb, their float and
 *               double steps), the hue byte shifted by np.uint8(hue_factor
 *               * 255) with numpy's wrap-around.
 *
 * Every function is pure: no state, no allocation, no I/O; it reads only
 * src's w * h pixels and writes only dst's. Parameters arrive as torchvision
 * hands them to Pillow (a Python float is a double here; Pillow's own
 * narrowing, e.g. Blend's C float alpha, happens inside), so a caller
 * passes the same values torchvision would. The arithmetic depends on IEEE
 * double and float without contraction into FMAs: daemon/CMakeLists.txt
 * builds these files with -ffp-contract=off, as Debian builds Pillow.
 * Errors are BFEED_EINVAL (bfeed_types.h) for a missing or empty image,
 * sizes that differ, overlapping src and dst where the op forbids it, or a
 * parameter torchvision would refuse; nothing is written then.
 */
#ifndef BFEED_PIL_IMAGE_H
#define BFEED_PIL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pil_rgb {
  uint8_t *px; /* w * h pixels, R G B, row after row */
  int w, h;
} pil_rgb;

/* Pillow's resampling filter numbers (Image.Resampling), the ones
 * Image.transform and Image.rotate accept. */
enum pil_resample { PIL_NEAREST = 0, PIL_BILINEAR = 2, PIL_BICUBIC = 3 };

/* Largest width or height accepted: Pillow's own coordinates are ints, and
 * this keeps every product of a coordinate and 3 bytes in range. */
#define PIL_IMAGE_MAX_SIDE (1 << 28)

/* 0 when src and dst are usable images of the same size, and (unless
 * in_place_ok and they are the very same pixels) their pixels do not
 * overlap; BFEED_EINVAL otherwise. */
int pil_image_check(const pil_rgb *src, const pil_rgb *dst, int in_place_ok);

/* Bytes of img's pixels. */
static inline size_t pil_image_bytes(const pil_rgb *img) { return (size_t)img->w * (size_t)img->h * 3; }

#endif
