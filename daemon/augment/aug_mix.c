/* aug_mix.c -- see aug_mix.h */
#include "aug_mix.h"

#include <math.h>
#include <string.h>

int aug_mix_active(const aug_mix *m) { return m->mixup_alpha > 0 || m->cutmix_alpha > 0; }

void aug_mix_draw(const aug_mix *m, int height, int width, rng_t *r, aug_mix_drawn *out) {
  *out = (aug_mix_drawn){AUG_MIX_NONE, 1.0, 0, 0, 0, 0};
  int both = m->mixup_alpha > 0 && m->cutmix_alpha > 0;
  enum aug_mix_kind kind = both ? (rng_below(r, 2) ? AUG_MIX_CUTMIX : AUG_MIX_MIXUP)
                           : m->mixup_alpha > 0 ? AUG_MIX_MIXUP
                           : m->cutmix_alpha > 0 ? AUG_MIX_CUTMIX
                                                 : AUG_MIX_NONE;
  if (kind == AUG_MIX_NONE) return;
  float alpha = kind == AUG_MIX_MIXUP ? m->mixup_alpha : m->cutmix_alpha;
  /* float(torch._sample_dirichlet(torch.tensor([a, a]))[0]): a float32 */
  double lam = (double)(float)rng_beta(r, alpha, alpha);
  out->kind = kind;
  out->lam = lam;
  if (kind == AUG_MIX_MIXUP) return;
  int rx = (int)rng_below(r, (uint64_t)width), ry = (int)rng_below(r, (uint64_t)height);
  double rad = 0.5 * sqrt(1.0 - lam);
  int rw = (int)(rad * width), rh = (int)(rad * height);
  out->x1 = rx - rw > 0 ? rx - rw : 0;
  out->y1 = ry - rh > 0 ? ry - rh : 0;
  out->x2 = rx + rw < width ? rx + rw : width;
  out->y2 = ry + rh < height ? ry + rh : height;
  out->lam = 1.0 - (double)((out->x2 - out->x1) * (out->y2 - out->y1)) / (double)(width * height);
}

/* x * lam + xr * (1 - lam): batch.mul_(lam).add_(batch_rolled.mul_(1 - lam))
 * in float32, each product rounded before the sum (augment/ is built with
 * -ffp-contract=off: never an FMA). */
static float aug_mix_blend_one(float x, float xr, float lam, float mu) {
  float a = x * lam, b = xr * mu;
  return a + b;
}

void aug_mix_blend(const aug_mix_drawn *d, const float *restrict x, const float *restrict xr, size_t n,
                   float *restrict out) {
  float lam = (float)d->lam, mu = (float)(1.0 - d->lam);
  for (size_t i = 0; i < n; i++) out[i] = aug_mix_blend_one(x[i], xr[i], lam, mu);
}

void aug_mix_cut(const aug_mix_drawn *d, uint16_t *x, const uint16_t *xr, int height, int width, int nchw) {
  size_t row = (size_t)(d->x2 - d->x1);
  if (d->x2 <= d->x1) return;
  for (int c = 0; c < (nchw ? 3 : 1); c++)
    for (int y = d->y1; y < d->y2; y++) {
      size_t at = nchw ? ((size_t)c * height + y) * width + d->x1 : ((size_t)y * width + d->x1) * 3;
      memmove(x + at, xr + at, (nchw ? row : row * 3) * sizeof *x);
    }
}

void aug_mix_targets(const aug_mix_drawn *d, const int32_t *labels, int B, int classes, float *target) {
  memset(target, 0, sizeof *target * (size_t)B * (size_t)classes);
  float lam = (float)d->lam, mu = (float)(1.0 - d->lam);
  for (int b = 0; b < B; b++) {
    float *t = target + (size_t)b * classes;
    int y = labels[b], yr = labels[b > 0 ? b - 1 : B - 1];
    if (d->kind == AUG_MIX_NONE) {
      t[y] = 1.0f;
      continue;
    }
    t[y] = aug_mix_blend_one(1.0f, 0.0f, lam, mu);
    t[yr] = aug_mix_blend_one(y == yr ? 1.0f : 0.0f, 1.0f, lam, mu);
  }
}
