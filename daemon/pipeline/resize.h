/*
 * resize.h -- Pillow 9.4's Image.resize, RGBX in, RGB8 out: BILINEAR,
 * BICUBIC and NEAREST. Called by sample.c, tools/pack (and the resize tests).
 *
 * The arithmetic is Pillow's (libImaging/Resample.c): a filter (triangle,
 * or the cubic with a = -0.5 and support 2) whose support widens with the
 * downscale factor (antialiasing), weights normalised to sum 1 in double
 * precision and then rounded to 22-bit fixed point, a horizontal pass
 * rounded to 8 bits, then a vertical pass. NEAREST is no filter in Pillow:
 * Image.resize maps it through an affine transform (_imaging.c's resize,
 * Geometry.c's ImagingScaleAffine), which picks source pixel
 * int(box0 + (k + 0.5) * step), the position accumulated output by output;
 * here that is an axis of one tap of weight 1.0 per output, which both
 * passes copy exactly. With the same inputs the output is bit-identical to
 * Image.resize(..., filter).
 *
 * Two generalisations, both of which reduce to Pillow when unused:
 *  - the source box is given in doubles, so that a crop of an image the IDCT
 *    already shrank by M/8 can be expressed in its own pixel grid;
 *  - an axis may compute only a window [out0, out0 + out_n) of its outputs,
 *    so "resize then centre-crop" costs only the pixels that are kept.
 *
 * An axis only reads source pixels [0, in_size): like Pillow resizing a
 * cropped image, the filter never looks past the box's clip region.
 */
#ifndef BFEED_RESIZE_H
#define BFEED_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"

/* Pillow's fixed-point precision for 8-bit images. */
#define RESIZE_PRECISION_BITS 22

typedef struct resize_axis {
  int out_n;       /* outputs computed */
  int ksize;       /* weights stored per output */
  int lo, hi;      /* the outputs read source pixels [lo, hi) */
  int32_t *bounds; /* per output: first source pixel, number of weights */
  int32_t *coef;   /* per output: ksize weights, 1.0 = 1 << 22 */
} resize_axis;

/* Bytes resize_axis_filter_init needs in mem for these parameters. */
size_t resize_axis_filter_size(bfeed_interp filter, double in0, double in1, int out_size, int out_n);

/* Weights to map source box [in0, in1) (0 <= in0 < in1 <= in_size) onto
 * out_size pixels with filter, for outputs [out0, out0 + out_n) only. mem
 * holds resize_axis_filter_size() bytes, suitably aligned for int32_t; it
 * backs bounds and coef and must outlive the axis. A NEAREST output whose
 * source pixel falls outside [0, in_size) has no tap, and comes out 0, as
 * Pillow fills it. */
void resize_axis_filter_init(resize_axis *a, void *mem, bfeed_interp filter, int in_size, double in0,
                             double in1, int out_size, int out0, int out_n);

/* The same with BILINEAR. */
size_t resize_axis_size(double in0, double in1, int out_size, int out_n);
void resize_axis_init(resize_axis *a, void *mem, int in_size, double in0, double in1,
                      int out_size, int out0, int out_n);

/* Scratch bytes resize_rgb8 needs for this pair of axes. */
size_t resize_tmp_size(const resize_axis *h, const resize_axis *v);

/* Resample RGBX (4 bytes a pixel, the fourth ignored: one aligned load per
 * tap, as in Pillow's own 4-byte pixels) to RGB. src points at source pixel
 * (h->lo, v->lo), rows src_stride bytes apart; only columns [h->lo, h->hi)
 * and rows [v->lo, v->hi) are read, so src need hold no more than that
 * rectangle. dst gets v->out_n rows of h->out_n RGB pixels, dst_stride
 * bytes apart. tmp holds resize_tmp_size() bytes. */
void resize_rgb8(const resize_axis *h, const resize_axis *v, const uint8_t *src,
                 size_t src_stride, uint8_t *dst, size_t dst_stride, void *tmp);

/* The same without SIMD, whatever the CPU: resize_rgb8 falls back to it,
 * and the tests check that both give the same bytes. */
void resize_rgb8_portable(const resize_axis *h, const resize_axis *v, const uint8_t *src,
                          size_t src_stride, uint8_t *dst, size_t dst_stride, void *tmp);

#endif
