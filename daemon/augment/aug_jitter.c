/* aug_jitter.c -- see aug_jitter.h */
#include "aug_jitter.h"

#include <math.h>

static const char *const aug_jitter_names[4] = {"brightness", "contrast", "saturation", "hue"};

const char *aug_jitter_name(enum aug_jitter_kind k) { return (unsigned)k < 4 ? aug_jitter_names[k] : "?"; }

void aug_jitter_init(aug_jitter *j, const float amounts[4]) {
  for (int k = 0; k < 4; k++) {
    double v = amounts[k];
    j->on[k] = v > 0;
    /* Python floats, then uniform_'s cast of its bounds to the tensor's float32 */
    j->lo[k] = (float)(k == AUG_JITTER_HUE ? -v : (1 - v > 0 ? 1 - v : 0));
    j->hi[k] = (float)(k == AUG_JITTER_HUE ? v : 1 + v);
  }
}

int aug_jitter_active(const aug_jitter *j) { return j->on[0] || j->on[1] || j->on[2] || j->on[3]; }

void aug_jitter_draw(const aug_jitter *j, rng_t *r, aug_jitter_drawn *out) {
  int perm[4] = {0, 1, 2, 3};
  for (int i = 3; i > 0; i--) { /* a uniform permutation, as torch.randperm(4) */
    int k = (int)rng_below(r, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[k];
    perm[k] = t;
  }
  float factor[4] = {0};
  for (int k = 0; k < 4; k++) /* torch.empty(1).uniform_(lo, hi): fma(u, hi - lo, lo) in float32 (transform.c) */
    if (j->on[k]) factor[k] = fmaf(rng_uniform_f32(r), j->hi[k] - j->lo[k], j->lo[k]);
  out->n = 0;
  for (int i = 0; i < 4; i++)
    if (j->on[perm[i]]) {
      out->kind[out->n] = (enum aug_jitter_kind)perm[i];
      out->factor[out->n++] = factor[perm[i]];
    }
}
