/* aug_program.c -- see aug_program.h */
#include "aug_program.h"

#include <stdio.h>
#include <string.h>

#include "pil_affine.h"
#include "pil_enhance.h"
#include "pil_hsv.h"

static int aug_program_resample(bfeed_interp i) {
  return i == BFEED_INTERP_BICUBIC ? PIL_BICUBIC : i == BFEED_INTERP_BILINEAR ? PIL_BILINEAR : PIL_NEAREST;
}

void aug_program_init(aug_program *p, const bfeed_stream_opts *o, int height, int width) {
  memset(p, 0, sizeof *p);
  aug_jitter_init(&p->jitter, o->color_jitter);
  static const enum aug_policy_kind kinds[] = {[BFEED_AA_IMAGENET] = AUG_POLICY_AUTO,
                                               [BFEED_AA_RAND] = AUG_POLICY_RAND,
                                               [BFEED_AA_TA_WIDE] = AUG_POLICY_TRIVIAL_WIDE};
  if ((p->policy_on = o->auto_augment != BFEED_AA_NONE))
    aug_policy_init(&p->policy, kinds[o->auto_augment], (int)o->aa_num_ops, (int)o->aa_magnitude, (int)o->aa_bins,
                    height, width);
  p->resample = aug_program_resample(o->aa_interpolation);
  for (int c = 0; c < 3; c++) /* _parse_fill: a PIL image's fill is int(x) per channel */
    p->fill[c] = (uint8_t)(int)o->aa_fill[c];
  if ((p->erase_on = o->random_erase > 0))
    aug_erase_init(&p->erase, o->random_erase, o->erase_scale, o->erase_ratio, o->erase_value, o->erase_random);
  p->mix = (aug_mix){o->mixup_alpha, o->cutmix_alpha};
}

int aug_program_pixels(const aug_program *p) { return aug_jitter_active(&p->jitter) || p->policy_on; }

int aug_program_active(const aug_program *p) {
  return aug_program_pixels(p) || p->erase_on || aug_mix_active(&p->mix);
}

/* ColorJitter's adjustments, as F.adjust_* run them on a PIL image (the
 * factor a Python float holding the drawn float32). */
static int aug_program_jitter_op(const pil_rgb *src, pil_rgb *dst, enum aug_jitter_kind k, double f) {
  switch (k) {
  case AUG_JITTER_BRIGHTNESS: return pil_enhance_brightness(src, dst, f);
  case AUG_JITTER_CONTRAST: return pil_enhance_contrast(src, dst, f);
  case AUG_JITTER_SATURATION: return pil_enhance_saturation(src, dst, f);
  default: return pil_hsv_adjust_hue(src, dst, f);
  }
}

/* autoaugment.py's _apply_op on a PIL image. */
static int aug_program_policy_op(const aug_program *p, const pil_rgb *src, pil_rgb *dst, const aug_drawn_op *op) {
  static const enum pil_affine_op affine[] = {[AUG_SHEAR_X] = PIL_AFFINE_SHEAR_X, [AUG_SHEAR_Y] = PIL_AFFINE_SHEAR_Y,
                                              [AUG_TRANSLATE_X] = PIL_AFFINE_TRANSLATE_X,
                                              [AUG_TRANSLATE_Y] = PIL_AFFINE_TRANSLATE_Y,
                                              [AUG_ROTATE] = PIL_AFFINE_ROTATE};
  double m = op->magnitude;
  switch (op->op) {
  case AUG_SHEAR_X:
  case AUG_SHEAR_Y:
  case AUG_TRANSLATE_X:
  case AUG_TRANSLATE_Y:
  case AUG_ROTATE: return pil_affine_apply_op(src, dst, affine[op->op], m, p->resample, p->fill);
  case AUG_BRIGHTNESS: return pil_enhance_brightness(src, dst, 1.0 + m);
  case AUG_COLOR: return pil_enhance_saturation(src, dst, 1.0 + m);
  case AUG_CONTRAST: return pil_enhance_contrast(src, dst, 1.0 + m);
  case AUG_SHARPNESS: return pil_enhance_sharpness(src, dst, 1.0 + m);
  case AUG_POSTERIZE: return pil_enhance_posterize(src, dst, (int)m);
  case AUG_SOLARIZE: return pil_enhance_solarize(src, dst, m);
  case AUG_AUTOCONTRAST: return pil_enhance_autocontrast(src, dst);
  case AUG_EQUALIZE: return pil_enhance_equalize(src, dst);
  case AUG_INVERT: return pil_enhance_invert(src, dst);
  default: memcpy(dst->px, src->px, pil_image_bytes(src)); return 0; /* Identity */
  }
}

/* Whether op's pixels may be computed in place (pil_enhance.h, pil_hsv.h
 * say which): all but the affine ops and Sharpness, which read neighbours. */
static int aug_program_in_place(enum aug_op op) {
  return op != AUG_SHARPNESS && op != AUG_SHEAR_X && op != AUG_SHEAR_Y && op != AUG_TRANSLATE_X &&
         op != AUG_TRANSLATE_Y && op != AUG_ROTATE;
}

static int aug_program_refused(const aug_drawn *d, int k, char *err, size_t errlen) {
  return snprintf(err, errlen, "internal: %s refused its arguments",
                  k < d->jitter.n ? aug_jitter_name(d->jitter.kind[k]) : aug_op_name(d->ops[k - d->jitter.n].op)),
         BFEED_EINTERNAL;
}

int aug_program_sample(const aug_program *p, rng_t *r, uint8_t *rgb, int height, int width, uint8_t *tmp,
                       aug_drawn *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  if (aug_jitter_active(&p->jitter)) aug_jitter_draw(&p->jitter, r, &d->jitter);
  if (p->policy_on) d->nops = aug_policy_draw(&p->policy, r, d->ops);
  if (p->erase_on) aug_erase_draw(&p->erase, height, width, r, &d->erase);
  d->erase_rng = *r;
  /* The colour ops work in place; the affine ops and Sharpness, which
   * read neighbours, read one buffer and write the other. The result
   * ends in rgb. */
  pil_rgb a = {rgb, width, height}, b = {tmp, width, height};
  pil_rgb *src = &a, *dst = &b;
  int n = d->jitter.n + d->nops;
  for (int k = 0; k < n; k++) {
    const aug_drawn_op *op = k < d->jitter.n ? NULL : &d->ops[k - d->jitter.n];
    if (op && op->op == AUG_IDENTITY) continue;
    if (!op || aug_program_in_place(op->op)) { /* the colour ops: no second buffer, no copy */
      int rc = op ? aug_program_policy_op(p, src, src, op)
                  : aug_program_jitter_op(src, src, d->jitter.kind[k], d->jitter.factor[k]);
      if (rc != 0) return aug_program_refused(d, k, err, errlen);
      continue;
    }
    int rc = aug_program_policy_op(p, src, dst, op);
    if (rc != 0) return aug_program_refused(d, k, err, errlen);
    pil_rgb *t = src;
    src = dst;
    dst = t;
  }
  if (src->px != rgb) memcpy(rgb, src->px, pil_image_bytes(src));
  return 0;
}
