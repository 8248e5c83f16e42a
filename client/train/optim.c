/* optim.c -- see optim.h */
#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"sgd", "adam", "adafactor"};

void optim_hparams_default(optim_hparams *hp, optim_kind kind) {
  *hp = (optim_hparams){.lr = kind == OPTIM_SGD ? 0.01f : kind == OPTIM_ADAM ? 1e-3f : 1e-2f,
                        .momentum = 0.9f,
                        .beta1 = 0.9f,
                        .beta2 = 0.999f,
                        .eps = 1e-8f,
                        .eps1 = 1e-30f,
                        .eps2 = 1e-3f,
                        .clip_d = 1.0f,
                        .decay = 0.8f};
}

const char *optim_name(optim_kind kind) { return (unsigned)kind < 3 ? names[kind] : "?"; }

int optim_parse(const char *name, optim_kind *out) {
  for (int i = 0; i < 3; i++)
    if (strcmp(name, names[i]) == 0) return *out = (optim_kind)i, 0;
  return -1;
}

/* Adafactor factors only true matrices: a vector's second moments are
 * already as small as its weights. */
static int factored(optim_kind kind, size_t rows, size_t cols) {
  return kind == OPTIM_ADAFACTOR && rows > 1 && cols > 1;
}

size_t optim_state_floats(optim_kind kind, const optim_hparams *hp, size_t rows, size_t cols) {
  switch (kind) {
  case OPTIM_SGD: return hp->momentum != 0 ? rows * cols : 0;
  case OPTIM_ADAM: return 2 * rows * cols;
  default: return factored(kind, rows, cols) ? rows + cols : rows * cols;
  }
}

size_t optim_scratch_floats(optim_kind kind, size_t max_cols) { return kind == OPTIM_ADAFACTOR ? max_cols : 0; }

void optim_init(optim *o, optim_kind kind, const optim_hparams *hp) {
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->hp = *hp;
}

int optim_add(optim *o, float *w, const float *g, size_t rows, size_t cols) {
  if (o->nparams == OPTIM_MAX_PARAMS) return -1;
  optim_param *p = &o->p[o->nparams];
  size_t n = optim_state_floats(o->kind, &o->hp, rows, cols);
  *p = (optim_param){.w = w, .g = g, .rows = rows, .cols = cols, .factored = factored(o->kind, rows, cols)};
  if (n) {
    /* One zeroed block: s2 follows s1 (adam: n/2 each; factored: rows, cols). */
    p->s1 = calloc(n, sizeof(float));
    if (!p->s1) return -1;
    if (o->kind == OPTIM_ADAM) p->s2 = p->s1 + rows * cols;
    if (p->factored) p->s2 = p->s1 + rows;
  }
  if (o->kind == OPTIM_ADAFACTOR && cols > o->row_cap) {
    float *row = realloc(o->row, cols * sizeof *row);
    if (!row) return -1;
    o->state_bytes += (cols - o->row_cap) * sizeof *row;
    o->row = row, o->row_cap = cols;
  }
  o->state_bytes += n * sizeof(float);
  o->nparams++;
  return 0;
}

static void step_sgd(const optim_hparams *hp, optim_param *p) {
  size_t n = p->rows * p->cols;
  for (size_t i = 0; i < n; i++) {
    float d = p->g[i];
    if (p->s1) d = p->s1[i] = hp->momentum * p->s1[i] + d;
    p->w[i] -= hp->lr * d;
  }
}

/* lr * m_hat / (sqrt(v_hat) + eps) with the bias corrections folded into
 * two constants, in float so that the loop vectorizes: it touches four
 * floats per weight, and for an MLP there are more weights than anything. */
static void step_adam(const optim_hparams *hp, uint64_t t, optim_param *p) {
  size_t n = p->rows * p->cols;
  float b1 = hp->beta1, b2 = hp->beta2, eps = hp->eps;
  float step = (float)(hp->lr / (1 - pow(hp->beta1, (double)t)));
  float unbias = (float)(1 / sqrt(1 - pow(hp->beta2, (double)t)));
  float *restrict w = p->w, *restrict m = p->s1, *restrict v = p->s2;
  const float *restrict g = p->g;
  for (size_t i = 0; i < n; i++) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    w[i] -= step * m[i] / (sqrtf(v[i]) * unbias + eps);
  }
}

static void step_adafactor(const optim_hparams *hp, uint64_t t, optim_param *p, float *rs) {
  size_t rows = p->rows, cols = p->cols, n = rows * cols;
  float beta2 = (float)(1 - pow((double)t, -hp->decay)), rho = (float)fmin(hp->lr, 1 / sqrt((double)t));
  float eps1 = hp->eps1;
  double sq = 0;
  for (size_t i = 0; i < n; i++) sq += (double)p->w[i] * p->w[i];
  double alpha = fmax(hp->eps2, sqrt(sq / n)) * rho;

  double rsum = 0;
  if (p->factored) {
    /* Row sums go in s1[r], column sums in s2[c], both of g^2 + eps1. */
    for (size_t c = 0; c < cols; c++) p->s2[c] *= beta2;
    for (size_t r = 0; r < rows; r++) {
      const float *g = p->g + r * cols;
      float row = 0;
      for (size_t c = 0; c < cols; c++) {
        float g2 = g[c] * g[c] + eps1;
        row += g2;
        p->s2[c] += (1 - beta2) * g2;
      }
      p->s1[r] = beta2 * p->s1[r] + (1 - beta2) * row;
      rsum += p->s1[r];
    }
  } else {
    for (size_t i = 0; i < n; i++) p->s1[i] = beta2 * p->s1[i] + (1 - beta2) * (p->g[i] * p->g[i] + eps1);
  }

  /* U = g / sqrt(V), clipped by its RMS: two passes, the first for the
   * RMS. Factored, 1/sqrt(V) at (r,c) is sqrt(sum R / R_r) / sqrt(C_c): one
   * row of column factors, computed once, times a number per row. */
  if (p->factored)
    for (size_t c = 0; c < cols; c++) rs[c] = 1 / sqrtf(p->s2[c]);
  double usq = 0;
  for (int pass = 0; pass < 2; pass++) {
    float scale = pass ? (float)(alpha / fmax(1.0, sqrt(usq / n) / hp->clip_d)) : 0;
    for (size_t r = 0; r < rows; r++) {
      const float *g = p->g + r * cols;
      float k = 1;
      if (p->factored) k = (float)sqrt(rsum / p->s1[r]);
      else
        for (size_t c = 0; c < cols; c++) rs[c] = 1 / sqrtf(p->s1[r * cols + c]);
      if (pass == 0) {
        float acc = 0;
        for (size_t c = 0; c < cols; c++) acc += (g[c] * rs[c]) * (g[c] * rs[c]);
        usq += (double)k * k * acc;
      } else {
        float *w = p->w + r * cols, ks = k * scale;
        for (size_t c = 0; c < cols; c++) w[c] -= ks * g[c] * rs[c];
      }
    }
  }
}

void optim_step(optim *o) {
  o->t++;
  for (size_t i = 0; i < o->nparams; i++) {
    optim_param *p = &o->p[i];
    if (o->kind == OPTIM_SGD) step_sgd(&o->hp, p);
    else if (o->kind == OPTIM_ADAM) step_adam(&o->hp, o->t, p);
    else step_adafactor(&o->hp, o->t, p, o->row);
  }
}

void optim_free(optim *o) {
  for (size_t i = 0; i < o->nparams; i++) free(o->p[i].s1);
  free(o->row);
  memset(o, 0, sizeof *o);
}
