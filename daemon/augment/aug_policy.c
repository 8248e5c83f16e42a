/* aug_policy.c -- see aug_policy.h */
#include "aug_policy.h"

#include <math.h>
#include <string.h>

/* AutoAugmentPolicy.IMAGENET's 25 sub-policies: (op, probability, bin;
 * bin -1 for None, an op without magnitude). */
typedef struct aug_policy_step {
  enum aug_op op;
  float p;
  int bin;
} aug_policy_step;

static const aug_policy_step aug_policy_imagenet[25][2] = {
    {{AUG_POSTERIZE, 0.4f, 8}, {AUG_ROTATE, 0.6f, 9}},        {{AUG_SOLARIZE, 0.6f, 5}, {AUG_AUTOCONTRAST, 0.6f, -1}},
    {{AUG_EQUALIZE, 0.8f, -1}, {AUG_EQUALIZE, 0.6f, -1}},     {{AUG_POSTERIZE, 0.6f, 7}, {AUG_POSTERIZE, 0.6f, 6}},
    {{AUG_EQUALIZE, 0.4f, -1}, {AUG_SOLARIZE, 0.2f, 4}},      {{AUG_EQUALIZE, 0.4f, -1}, {AUG_ROTATE, 0.8f, 8}},
    {{AUG_SOLARIZE, 0.6f, 3}, {AUG_EQUALIZE, 0.6f, -1}},      {{AUG_POSTERIZE, 0.8f, 5}, {AUG_EQUALIZE, 1.0f, -1}},
    {{AUG_ROTATE, 0.2f, 3}, {AUG_SOLARIZE, 0.6f, 8}},         {{AUG_EQUALIZE, 0.6f, -1}, {AUG_POSTERIZE, 0.4f, 6}},
    {{AUG_ROTATE, 0.8f, 8}, {AUG_COLOR, 0.4f, 0}},            {{AUG_ROTATE, 0.4f, 9}, {AUG_EQUALIZE, 0.6f, -1}},
    {{AUG_EQUALIZE, 0.0f, -1}, {AUG_EQUALIZE, 0.8f, -1}},     {{AUG_INVERT, 0.6f, -1}, {AUG_EQUALIZE, 1.0f, -1}},
    {{AUG_COLOR, 0.6f, 4}, {AUG_CONTRAST, 1.0f, 8}},          {{AUG_ROTATE, 0.8f, 8}, {AUG_COLOR, 1.0f, 2}},
    {{AUG_COLOR, 0.8f, 8}, {AUG_SOLARIZE, 0.8f, 7}},          {{AUG_SHARPNESS, 0.4f, 7}, {AUG_INVERT, 0.6f, -1}},
    {{AUG_SHEAR_X, 0.6f, 5}, {AUG_EQUALIZE, 1.0f, -1}},       {{AUG_COLOR, 0.4f, 0}, {AUG_EQUALIZE, 0.6f, -1}},
    {{AUG_EQUALIZE, 0.4f, -1}, {AUG_SOLARIZE, 0.2f, 4}},      {{AUG_SOLARIZE, 0.6f, 5}, {AUG_AUTOCONTRAST, 0.6f, -1}},
    {{AUG_INVERT, 0.6f, -1}, {AUG_EQUALIZE, 1.0f, -1}},       {{AUG_COLOR, 0.6f, 4}, {AUG_CONTRAST, 1.0f, 8}},
    {{AUG_EQUALIZE, 0.8f, -1}, {AUG_EQUALIZE, 0.6f, -1}},
};

void aug_policy_init(aug_policy *p, enum aug_policy_kind kind, int num_ops, int magnitude, int bins, int height,
                     int width) {
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->num_ops = num_ops;
  p->magnitude = magnitude;
  p->bins = bins;
  p->nspace = aug_space_build(kind, bins, height, width, p->space);
}

/* torch.randint(n, (1,)), as our draws give it (transform.c's rule): floor(u * n). */
static int aug_policy_randint(rng_t *r, int n) { return (int)floor((double)rng_uniform_f32(r) * n); }

static const aug_space_op *aug_policy_op(const aug_policy *p, enum aug_op op) {
  for (int i = 0; i < p->nspace; i++)
    if (p->space[i].op == op) return &p->space[i];
  return NULL;
}

static int aug_policy_auto(const aug_policy *p, rng_t *r, aug_drawn_op *out) {
  int id = aug_policy_randint(r, 25), n = 0;
  float probs[2] = {rng_uniform_f32(r), rng_uniform_f32(r)};
  int signs[2] = {aug_policy_randint(r, 2), aug_policy_randint(r, 2)};
  for (int i = 0; i < 2; i++) {
    const aug_policy_step *st = &aug_policy_imagenet[id][i];
    if (!(probs[i] <= st->p)) continue; /* a 0-dim float32 tensor against a Python float: compared in float32 */
    const aug_space_op *o = aug_policy_op(p, st->op);
    double m = st->bin >= 0 ? (double)o->mag[st->bin] : 0.0;
    if (o->signed_ && signs[i] == 0) m = -m;
    out[n++] = (aug_drawn_op){st->op, m};
  }
  return n;
}

/* One op of RandAugment (bin given) or TrivialAugmentWide (bin drawn). */
static aug_drawn_op aug_policy_one(const aug_policy *p, rng_t *r, int bin) {
  const aug_space_op *o = &p->space[aug_policy_randint(r, p->nspace)];
  if (bin < 0 && o->n) bin = aug_policy_randint(r, o->n);
  double m = o->n ? (double)o->mag[bin] : 0.0;
  if (o->signed_ && aug_policy_randint(r, 2)) m = -m;
  return (aug_drawn_op){o->op, m};
}

int aug_policy_draw(const aug_policy *p, rng_t *r, aug_drawn_op *out) {
  switch (p->kind) {
    case AUG_POLICY_AUTO: return aug_policy_auto(p, r, out);
    case AUG_POLICY_RAND:
      for (int i = 0; i < p->num_ops; i++) out[i] = aug_policy_one(p, r, p->magnitude);
      return p->num_ops;
    case AUG_POLICY_TRIVIAL_WIDE: out[0] = aug_policy_one(p, r, -1); return 1;
  }
  return 0;
}
