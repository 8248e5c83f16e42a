/*
 * sample.c -- one image: choose the geometry, decode what it needs, resample.
 *
 * Train and eval are one computation with different numbers: a clip
 * rectangle of the source (the random crop, or the whole image) is resized
 * to out_w x out_h (the output's W x H, or the Resize() size), and a W x H
 * window of that result is kept (all of it, or the centre crop, whose
 * pixels past the resized image are F.center_crop's zero padding). Only
 * the window is computed, and only the source pixels its filters touch are
 * decoded.
 */
#include "sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "clock.h"
#include "image_decode.h"
#include "resize.h"

typedef struct plan {
  int cx0, cy0, cx1, cy1; /* clip rectangle, in source pixels */
  int out_w, out_h;       /* it is resized to this */
  int wx, wy;             /* and W x H is kept from here (negative: padded) */
  int flip;
  int eval;               /* the clip is the whole image (and eval_draft applies) */
} plan;

enum { BUF_RESIZE = 0, BUF_WEIGHTS = 1 };

void sample_scratch_free(sample_scratch *s) {
  for (int i = 0; i < 2; i++)
    decode_mem_release(&s->buf[i]);
  image_decode_free(s->dec);
  s->dec = NULL;
}

/* Grow-only: the old contents are never needed, so no realloc copy. */
static void *reserve(sample_scratch *s, int i, size_t n) { return decode_mem_reserve(&s->buf[i], n); }

/* After each sample, decoded or not: what only a large image needed goes
 * back to the system, so that a worker's memory returns to that of the
 * ordinary images it serves. */
static void sample_trim(sample_scratch *s) {
  for (int i = 0; i < 2; i++)
    decode_mem_trim(&s->buf[i]);
  if (s->dec)
    image_decode_done(s->dec);
}

/* Only 1/8, 2/8 and 4/8: libjpeg-turbo has SIMD for those reduced IDCTs
 * but plain C for 3/8, 5/8, 6/8 and 7/8, which measured slower overall
 * despite the smaller image (2000x1500 to a 224 train crop: 5.3 ms with
 * powers of two, 7.1 ms with every M/8). */
int sample_dct_scale(int src_w, int src_h, int out_w, int out_h) {
  for (int m = 1; m < 8; m *= 2)
    if ((int64_t)src_w * m >= (int64_t)16 * out_w && (int64_t)src_h * m >= (int64_t)16 * out_h)
      return m;
  return 8;
}

/* Eval's scale with eval_decode=fast: the one Pillow's
 * JpegImageFile.draft(mode, (out_w, out_h)) picks, so that Image.draft +
 * resize + crop gives the same pixels, bit for bit: the largest s in 8, 4, 2, 1 with s <= min(src_w // out_w, src_h //
 * out_h), decoded at 1/s (= (8/s)/8); that is, DCT scaling whenever the
 * resized image is at most half the source in both directions. */
int sample_draft_scale(int src_w, int src_h, int out_w, int out_h) {
  int q = src_w / out_w < src_h / out_h ? src_w / out_w : src_h / out_h;
  for (int s = 8; s > 1; s /= 2)
    if (q >= s)
      return 8 / s;
  return 8;
}

/* One axis of the plan in the grid of the image scaled by m/8: the clip
 * [c0, c1) becomes the source pixels [first, first + in_size) that overlap it,
 * and the filter box is its exact (fractional) position within them. At
 * m = 8 this is Pillow resizing img.crop(): box (0, c1 - c0). Eval's clip
 * is the whole scaled image (0, scaled_len), as Pillow resizes a drafted
 * image, not the fractional image of the full size. */
typedef struct axis_box {
  int first, in_size;
  double in0, in1;
} axis_box;

static axis_box axis_box_of(const plan *pl, int c0, int c1, int scaled_len, int m) {
  if (pl->eval)
    return (axis_box){0, scaled_len, 0.0, scaled_len};
  int first = (int)((int64_t)c0 * m / 8);
  int end = (int)(((int64_t)c1 * m + 7) / 8);
  if (end > scaled_len)
    end = scaled_len;
  return (axis_box){first, end - first, c0 * (m / 8.0) - first, c1 * (m / 8.0) - first};
}

static void mirror(uint8_t *img, int w, int h) {
  for (int y = 0; y < h; y++) {
    uint8_t *l = img + (size_t)y * w * 3, *r = l + (size_t)(w - 1) * 3;
    for (; l < r; l += 3, r -= 3)
      for (int c = 0; c < 3; c++) {
        uint8_t t = l[c];
        l[c] = r[c];
        r[c] = t;
      }
  }
}

static int oom(char *err, size_t errlen) {
  snprintf(err, errlen, "out of memory");
  return BFEED_ENOMEM;
}

/* The part [*lo, *hi) of the window [w0, w0 + n) that lies in [0, len):
 * all of it, unless F.center_crop padded that axis. */
static int window_inside(int w0, int n, int len, int *lo, int *hi) {
  *lo = w0 < 0 ? 0 : w0;
  *hi = w0 + n > len ? len : w0 + n;
  return *lo != w0 || *hi != w0 + n;
}

/* The header has been read into s->dec. Only JPEG can be decoded at M/8:
 * PNG and WebP are always resampled from their full-size pixels. */
static int run_plan(sample_scratch *s, const image_decode_info *info, const plan *pl,
                    const sample_params *p, uint8_t *out, char *err, size_t errlen) {
  int oh = p->size, ow = sample_width(p), x0, x1, y0, y1;
  int padded = window_inside(pl->wx, ow, pl->out_w, &x0, &x1) | window_inside(pl->wy, oh, pl->out_h, &y0, &y1);
  /* Exact unless asked otherwise: torchvision's Resize and resized_crop
   * see the full decode, and no IDCT scale gives their pixels (README
   * "Decoding" measures what the fast options change). */
  int m = 8, cw = pl->cx1 - pl->cx0, ch = pl->cy1 - pl->cy0;
  if (info->scalable && pl->eval && p->eval_draft)
    m = sample_draft_scale(cw, ch, pl->out_w, pl->out_h);
  else if (info->scalable && !pl->eval && p->allow_dct_scale)
    m = sample_dct_scale(cw, ch, pl->out_w, pl->out_h);
  int rc = image_decode_start(s->dec, m, err, errlen);
  if (rc != 0)
    return rc;
  int sw, sh;
  image_decode_scaled_size(info, m, &sw, &sh);

  axis_box hb = axis_box_of(pl, pl->cx0, pl->cx1, sw, m), vb = axis_box_of(pl, pl->cy0, pl->cy1, sh, m);
  size_t hbytes = resize_axis_filter_size(p->interp, hb.in0, hb.in1, pl->out_w, x1 - x0);
  size_t vbytes = resize_axis_filter_size(p->interp, vb.in0, vb.in1, pl->out_h, y1 - y0);
  uint8_t *weights = reserve(s, BUF_WEIGHTS, hbytes + vbytes);
  if (!weights)
    return oom(err, errlen);
  resize_axis h, v;
  resize_axis_filter_init(&h, weights, p->interp, hb.in_size, hb.in0, hb.in1, pl->out_w, x0, x1 - x0);
  resize_axis_filter_init(&v, weights + hbytes, p->interp, vb.in_size, vb.in0, vb.in1, pl->out_h, y0, y1 - y0);
  int xlo = hb.first, ylo = vb.first;

  const uint8_t *pixels;
  size_t stride;
  void *tmp = reserve(s, BUF_RESIZE, resize_tmp_size(&h, &v));
  if (!tmp)
    return oom(err, errlen);
  rc = image_decode_read(s->dec, xlo + h.lo, xlo + h.hi, ylo + v.lo, ylo + v.hi, &pixels, &stride,
                         err, errlen);
  if (rc != 0)
    return rc;
  uint64_t t0 = clock_now_ns();
  if (padded)
    memset(out, 0, (size_t)oh * ow * 3);
  resize_rgb8(&h, &v, pixels, stride, out + ((size_t)(y0 - pl->wy) * ow + (size_t)(x0 - pl->wx)) * 3,
              (size_t)ow * 3, tmp);
  s->flip = pl->flip && p->defer_flip; /* batch.c mirrors while it casts (tobf16.h) */
  if (pl->flip && !p->defer_flip)
    mirror(out, ow, oh);
  s->resize_ns += clock_now_ns() - t0;
  return 0;
}

static int read_header(sample_scratch *s, const uint8_t *buf, size_t len, const sample_params *p,
                       image_decode_info *info, char *err, size_t errlen) {
  if (!s->dec && !(s->dec = image_decode_new()))
    return oom(err, errlen);
  return image_decode_header(s->dec, buf, len, p->max_pixels, info, err, errlen);
}

static int crop_plan(const image_decode_info *info, const transform_crop *c, int w, int h, plan *pl) {
  if (w < 1 || h < 1 || c->width < 1 || c->height < 1 || c->left < 0 || c->top < 0 ||
      c->width > info->width - c->left || c->height > info->height - c->top)
    return BFEED_EINTERNAL;
  *pl = (plan){c->left, c->top, c->left + c->width, c->top + c->height, w, h, 0, 0, c->flip, 0};
  return 0;
}

/* A window of n at off along an axis of len: inside, or over all of it
 * (from off <= 0), the padding F.center_crop adds. */
static int window_ok(int off, int n, int len) {
  return n >= 1 && len >= 1 && ((off >= 0 && n <= len - off) || (off <= 0 && n + off >= len));
}

static int eval_plan(const image_decode_info *info, const transform_eval *e, int w, int h, plan *pl) {
  if (!window_ok(e->left, w, e->resized_w) || !window_ok(e->top, h, e->resized_h))
    return BFEED_EINTERNAL;
  *pl = (plan){0, 0, info->width, info->height, e->resized_w, e->resized_h, e->left, e->top, 0, 1};
  return 0;
}

static int bad_geometry(char *err, size_t errlen) {
  snprintf(err, errlen, "internal: crop outside the image");
  return BFEED_EINTERNAL;
}

/* Every failure names its image: a path, or a record of a shard. */
static int sample_named(int rc, const char *name, char *err, size_t errlen) {
  if (rc == 0 || !name)
    return rc;
  char why[256];
  snprintf(why, sizeof why, "%s", err);
  snprintf(err, errlen, "%s: %s", name, why);
  return rc;
}

/* The crop, or the eval window, or neither: then drawn from rng or derived
 * from the image size as p->mode says. */
static int sample_decode(const uint8_t *buf, size_t len, const sample_params *p,
                         const transform_crop *crop, const transform_eval *ev, rng_t *rng,
                         uint8_t *out, sample_scratch *scratch, char *err, size_t errlen) {
  image_decode_info info;
  transform_crop c;
  transform_eval e;
  plan pl;
  int rc = read_header(scratch, buf, len, p, &info, err, errlen);
  if (rc != 0)
    return rc;
  int w = sample_width(p), h = p->size;
  if (!crop && !ev && p->mode == SAMPLE_EVAL) {
    transform_eval_geometry(info.width, info.height, p->resize, w, h, &e);
    ev = &e;
  } else if (!crop && !ev) {
    transform_rrc(info.width, info.height, p->rrc.scale[1] > 0 ? &p->rrc : &transform_rrc_default, rng, &c);
    crop = &c;
  }
  if (ev ? eval_plan(&info, ev, w, h, &pl) : crop_plan(&info, crop, w, h, &pl))
    return bad_geometry(err, errlen);
  if (ev) scratch->eval = *ev; /* for the batch's explain tensor */
  else scratch->crop = *crop;
  return run_plan(scratch, &info, &pl, p, out, err, errlen);
}

int sample_load_crop(const uint8_t *buf, size_t len, const char *name, const sample_params *p,
                     const transform_crop *crop, uint8_t *out, sample_scratch *scratch, char *err,
                     size_t errlen) {
  int rc = sample_decode(buf, len, p, crop, NULL, NULL, out, scratch, err, errlen);
  sample_trim(scratch);
  return sample_named(rc, name, err, errlen);
}

int sample_load_eval(const uint8_t *buf, size_t len, const char *name, const sample_params *p,
                     const transform_eval *ev, uint8_t *out, sample_scratch *scratch, char *err,
                     size_t errlen) {
  int rc = sample_decode(buf, len, p, NULL, ev, NULL, out, scratch, err, errlen);
  sample_trim(scratch);
  return sample_named(rc, name, err, errlen);
}

int sample_load(const uint8_t *buf, size_t len, const char *name, const sample_params *p,
                rng_t *rng, uint8_t *out, sample_scratch *scratch, char *err, size_t errlen) {
  int rc = sample_decode(buf, len, p, NULL, NULL, rng, out, scratch, err, errlen);
  sample_trim(scratch);
  return sample_named(rc, name, err, errlen);
}
