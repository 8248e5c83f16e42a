/* batch_aug.c -- see batch_aug.h */
#include "batch_aug.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "bfeed_types.h"
#include "clock.h"
#include "tobf16.h"

/* A sample's JSON at most: 16 policy ops and 4 adjustments with their
 * numbers, the geometry, the box (what batch_aug_explain_sample writes
 * stays far below). */
#define BATCH_AUG_EXPLAIN_SAMPLE 1280
#define BATCH_AUG_EXPLAIN_HEAD 256

uint64_t batch_aug_explain_bytes(uint32_t B) {
  return BATCH_AUG_EXPLAIN_HEAD + (uint64_t)B * BATCH_AUG_EXPLAIN_SAMPLE;
}

/* Grow-only buffer *p of *cap bytes to need; the change into *grew. */
static int batch_aug_grow(void *p, size_t *cap, size_t need, int64_t *grew) {
  void **b = p;
  if (need <= *cap) return 0;
  void *n = realloc(*b, need);
  if (!n) return BFEED_ENOMEM;
  *b = n;
  *grew += (int64_t)(need - *cap);
  *cap = need;
  return 0;
}

int batch_aug_reserve(batch_aug_mem *m, uint32_t B, int height, int width, int mixed, int64_t *grew) {
  size_t px = (size_t)height * width * 3;
  *grew = 0;
  if (batch_aug_grow(&m->sample, &m->sample_cap, (size_t)B * sizeof *m->sample, grew) < 0 ||
      batch_aug_grow(&m->tmp, &m->tmp_cap, px, grew) < 0 ||
      batch_aug_grow(&m->labels, &m->labels_cap, (size_t)B * sizeof *m->labels, grew) < 0 ||
      (mixed && batch_aug_grow(&m->f32, &m->f32_cap, 4 * px * sizeof *m->f32, grew) < 0))
    return BFEED_ENOMEM;
  return 0;
}

void batch_aug_free(batch_aug_mem *m, int64_t *freed) {
  *freed = (int64_t)(m->sample_cap + m->tmp_cap + m->f32_cap + m->labels_cap);
  free(m->sample);
  free(m->tmp);
  free(m->f32);
  free(m->labels);
  memset(m, 0, sizeof *m);
}

/* One sample's pixels as ToTensor then Normalize make them, CHW or HWC. */
static void batch_aug_to_f32(const uint8_t *rgb, int height, int width, int nhwc, const float lutf[3][256],
                             float *out) {
  size_t plane = (size_t)height * width;
  for (size_t p = 0; p < plane; p++)
    for (int c = 0; c < 3; c++) out[nhwc ? p * 3 + c : c * plane + p] = lutf[c][rgb[p * 3 + c]];
}

/* Sample i as float32, erased: what MixUp blends. */
static void batch_aug_sample_f32(const aug_program *prog, const batch_aug_mem *m, const uint8_t *rgb, uint32_t i,
                                 int height, int width, int nhwc, const float lutf[3][256], float *out) {
  size_t px = (size_t)height * width * 3;
  batch_aug_to_f32(rgb + px * i, height, width, nhwc, lutf, out);
  const batch_aug_sample *s = &m->sample[i];
  if (prog->erase_on && s->aug.erase.on) {
    rng_t r = s->aug.erase_rng;
    aug_erase_apply_f32(&prog->erase, &s->aug.erase, out, height, width, !nhwc, &r);
  }
}

void batch_aug_image(const aug_program *prog, batch_aug_mem *m, const uint8_t *rgb, uint32_t B, int height,
                     int width, int nhwc, const uint16_t lut[3][256], const float lutf[3][256], uint64_t seed,
                     uint64_t epoch, uint64_t index, uint16_t *out) {
  size_t px = (size_t)height * width * 3;
  memset(&m->mix, 0, sizeof m->mix);
  if (aug_mix_active(&prog->mix)) {
    rng_t r;
    rng_init(&r, seed, RNG_DOMAIN_MIX, epoch, index);
    aug_mix_draw(&prog->mix, height, width, &r, &m->mix);
  }
  if (m->mix.kind != AUG_MIX_MIXUP) {
    /* Erased after the cast: the box's value cast to bf16 is what the
     * float32 erase then .to(bfloat16) gives; and CutMix only copies. */
    for (uint32_t i = 0; i < B; i++) {
      uint16_t *img = out + px * i;
      tobf16_rect(rgb + px * i, height, width, 0, nhwc, lut, (uint8_t *)img);
      batch_aug_sample *s = &m->sample[i];
      if (prog->erase_on && s->aug.erase.on) {
        rng_t r = s->aug.erase_rng;
        aug_erase_apply_bf16(&prog->erase, &s->aug.erase, img, height, width, !nhwc, &r);
      }
    }
    if (m->mix.kind != AUG_MIX_CUTMIX) return;
    /* Each sample takes its predecessor's box as it was: from the last
     * down, sample 0 from the last's kept first. */
    uint16_t *last = (uint16_t *)m->f32;
    memcpy(last, out + px * (B - 1), px * sizeof *out);
    for (uint32_t i = B - 1; i >= 1; i--) aug_mix_cut(&m->mix, out + px * i, out + px * (i - 1), height, width, !nhwc);
    aug_mix_cut(&m->mix, out, last, height, width, !nhwc);
    return;
  }
  /* MixUp, a sample at a time: its float32 and its predecessor's (for
   * sample 0, the last's), blended, cast. */
  float *last = m->f32, *bufs[2] = {last + px, last + 2 * px}, *mixed = last + 3 * px;
  batch_aug_sample_f32(prog, m, rgb, B - 1, height, width, nhwc, lutf, last);
  for (uint32_t i = 0; i < B; i++) {
    float *x = bufs[i & 1];
    const float *xr = i == 0 ? last : bufs[(i - 1) & 1];
    batch_aug_sample_f32(prog, m, rgb, i, height, width, nhwc, lutf, x);
    aug_mix_blend(&m->mix, x, xr, px, mixed);
    bf16_from_f32_array(out + px * i, mixed, px);
  }
}

void batch_aug_image_timed(const aug_program *prog, batch_aug_mem *m, const uint8_t *rgb, uint32_t B, int height,
                           int width, int nhwc, const uint16_t lut[3][256], const float lutf[3][256], uint64_t seed,
                           uint64_t epoch, uint64_t index, uint16_t *out) {
  uint64_t t0 = clock_now_ns();
  batch_aug_image(prog, m, rgb, B, height, width, nhwc, lut, lutf, seed, epoch, index, out);
  m->ns += clock_now_ns() - t0;
}

void batch_aug_target(batch_aug_mem *m, const int32_t *labels, const uint32_t *sel, uint32_t B, uint32_t classes,
                      float *target) {
  for (uint32_t i = 0; i < B; i++) m->labels[i] = labels[sel[i]];
  aug_mix_targets(&m->mix, m->labels, (int)B, (int)classes, target);
}

/* printf into [*at, end), never past it. */
#define PUT(...)                                                                                                 \
  do {                                                                                                           \
    int n_ = snprintf(*at, (size_t)(end - *at), __VA_ARGS__);                                                    \
    *at += n_ < 0 ? 0 : n_ < end - *at ? n_ : end - *at - 1;                                                     \
  } while (0)

/* Numbers as %.17g: a double (or a float32 widened) reads back exactly. */
static void batch_aug_explain_sample(const aug_program *prog, const batch_aug_sample *s, uint32_t idx, int eval,
                                     char **at, char *end) {
  PUT("{\"index\":%u,", idx);
  if (eval)
    PUT("\"resized\":[%d,%d],\"window\":[%d,%d]}", s->eval.resized_h, s->eval.resized_w, s->eval.top,
        s->eval.left);
  if (eval) return;
  const aug_drawn *d = &s->aug;
  PUT("\"crop\":[%d,%d,%d,%d],\"flip\":%s", s->crop.top, s->crop.left, s->crop.height, s->crop.width,
      s->crop.flip ? "true" : "false");
  if (aug_jitter_active(&prog->jitter)) {
    PUT(",\"jitter\":[");
    for (int k = 0; k < d->jitter.n; k++)
      PUT("%s[\"%s\",%.17g]", k ? "," : "", aug_jitter_name(d->jitter.kind[k]), (double)d->jitter.factor[k]);
    PUT("]");
  }
  if (prog->policy_on) {
    PUT(",\"ops\":[");
    for (int k = 0; k < d->nops; k++)
      PUT("%s[\"%s\",%.17g]", k ? "," : "", aug_op_name(d->ops[k].op), d->ops[k].magnitude);
    PUT("]");
  }
  if (prog->erase_on && d->erase.on)
    PUT(",\"erase\":[%d,%d,%d,%d]", d->erase.i, d->erase.j, d->erase.h, d->erase.w);
  else if (prog->erase_on)
    PUT(",\"erase\":null");
  PUT("}");
}

void batch_aug_explain(const aug_program *prog, const batch_aug_mem *m, const uint32_t *sel, uint32_t B, int eval,
                       uint64_t epoch, uint64_t index, uint8_t *out) {
  size_t cap = batch_aug_explain_bytes(B);
  char *start = (char *)out, *end = start + cap, *p = start, **at = &p;
  static const char *const kinds[] = {"null", "\"mixup\"", "\"cutmix\""};
  PUT("{\"epoch\":%llu,\"index\":%llu", (unsigned long long)epoch, (unsigned long long)index);
  /* An unmixed batch: kind null, lam 1 (each sample all its own). */
  int mixed = aug_mix_active(&prog->mix) && m->mix.kind != AUG_MIX_NONE;
  PUT(",\"mix\":{\"kind\":%s,\"lam\":%.17g,\"box\":", kinds[mixed ? m->mix.kind : AUG_MIX_NONE],
      mixed ? m->mix.lam : 1.0);
  if (mixed && m->mix.kind == AUG_MIX_CUTMIX) PUT("[%d,%d,%d,%d]}", m->mix.y1, m->mix.y2, m->mix.x1, m->mix.x2);
  else PUT("null}");
  PUT(",\"samples\":[");
  for (uint32_t i = 0; i < B; i++) {
    if (i) PUT(",");
    batch_aug_explain_sample(prog, &m->sample[i], sel[i], eval, at, end);
  }
  PUT("]}");
  memset(p, ' ', (size_t)(end - p)); /* trailing spaces: still one JSON value, and a fixed size */
}
#undef PUT
