/* aug_erase.c -- see aug_erase.h */
#include "aug_erase.h"

#include <math.h>

#include "bf16.h"
#include "transform.h"

#define AUG_ERASE_TRIES 10

void aug_erase_init(aug_erase *e, float p, const float scale[2], const float ratio[2], const float value[3],
                    int random) {
  e->p = p;
  for (int k = 0; k < 2; k++) {
    e->scale[k] = scale[k];
    e->ratio[k] = ratio[k];
    e->log_ratio[k] = transform_log_f32(ratio[k]);
  }
  for (int c = 0; c < 3; c++) e->value[c] = value[c];
  e->random = random;
}

/* torch.randint(0, n, size=(1,)) as our draws give it: floor(u * n). */
static int aug_erase_randint(rng_t *r, int n) { return (int)floor((double)rng_uniform_f32(r) * n); }

void aug_erase_draw(const aug_erase *e, int height, int width, rng_t *r, aug_erase_drawn *out) {
  *out = (aug_erase_drawn){0};
  if (!(rng_uniform_f32(r) < e->p)) return; /* torch.rand(1) < p, in float32 */
  double area = (double)height * width;
  for (int t = 0; t < AUG_ERASE_TRIES; t++) {
    /* area * uniform_(scale).item(): the float32 draw, then Python floats */
    double erase_area = area * (double)fmaf(rng_uniform_f32(r), e->scale[1] - e->scale[0], e->scale[0]);
    double aspect = (double)transform_exp_f32(
        fmaf(rng_uniform_f32(r), e->log_ratio[1] - e->log_ratio[0], e->log_ratio[0]));
    int h = (int)nearbyint(sqrt(erase_area * aspect)), w = (int)nearbyint(sqrt(erase_area / aspect));
    if (!(h < height && w < width)) continue;
    out->on = 1;
    out->h = h;
    out->w = w;
    out->i = aug_erase_randint(r, height - h + 1);
    out->j = aug_erase_randint(r, width - w + 1);
    return;
  }
}

/* Value of channel c at one erased pixel. */
static float aug_erase_value(const aug_erase *e, int c, rng_t *r) { return e->random ? rng_normal_f32(r) : e->value[c]; }

/* Visit the box in [C, h, w] order whatever the layout (as normal_()
 * fills its tensor), so the random values are the same in NCHW and NHWC. */
#define AUG_ERASE_EACH(BODY)                                                           \
  for (int c = 0; c < 3; c++)                                                          \
    for (int y = d->i; y < d->i + d->h; y++)                                           \
      for (int x = d->j; x < d->j + d->w; x++) {                                       \
        size_t at = nchw ? ((size_t)c * height + y) * width + x : ((size_t)y * width + x) * 3 + c; \
        BODY;                                                                          \
      }

void aug_erase_apply_f32(const aug_erase *e, const aug_erase_drawn *d, float *img, int height, int width, int nchw,
                         rng_t *r) {
  if (d->on) AUG_ERASE_EACH(img[at] = aug_erase_value(e, c, r))
}

void aug_erase_apply_bf16(const aug_erase *e, const aug_erase_drawn *d, uint16_t *img, int height, int width,
                          int nchw, rng_t *r) {
  if (d->on) AUG_ERASE_EACH(img[at] = bf16_from_f32(aug_erase_value(e, c, r)))
}
