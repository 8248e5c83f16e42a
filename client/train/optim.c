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

static void step_adam(const optim_hparams *hp, uint64_t t, optim_param *p) {
  size_t n = p->rows * p->cols;
  double c1 = 1 - pow(hp->beta1, (double)t), c2 = 1 - pow(hp->beta2, (double)t);
  for (size_t i = 0; i < n; i++) {
    float g = p->g[i];
    float m = p->s1[i] = hp->beta1 * p->s1[i] + (1 - hp->beta1) * g;
    float v = p->s2[i] = hp->beta2 * p->s2[i] + (1 - hp->beta2) * g * g;
    p->w[i] -= (float)(hp->lr * (m / c1) / (sqrt(v / c2) + hp->eps));
  }
}

/* Adafactor's estimate of E[g^2] at (r, c), after this step's update of
 * the accumulators: R_r C_c / sum(R) when factored, else v. */
static inline double adafactor_v(const optim_param *p, double inv_rsum, size_t r, size_t c) {
  return p->factored ? (double)p->s1[r] * p->s2[c] * inv_rsum : p->s1[r * p->cols + c];
}

static void step_adafactor(const optim_hparams *hp, uint64_t t, optim_param *p) {
  size_t rows = p->rows, cols = p->cols, n = rows * cols;
  double beta2 = 1 - pow((double)t, -hp->decay), rho = fmin(hp->lr, 1 / sqrt((double)t));
  double sq = 0;
  for (size_t i = 0; i < n; i++) sq += (double)p->w[i] * p->w[i];
  double alpha = fmax(hp->eps2, sqrt(sq / n)) * rho;

  double inv_rsum = 0;
  if (p->factored) {
    /* Row sums go in s1[r], column sums in s2[c], both of g^2 + eps1. */
    for (size_t c = 0; c < cols; c++) p->s2[c] = (float)(beta2 * p->s2[c]);
    double rsum = 0;
    for (size_t r = 0; r < rows; r++) {
      const float *g = p->g + r * cols;
      double row = 0;
      for (size_t c = 0; c < cols; c++) {
        double g2 = (double)g[c] * g[c] + hp->eps1;
        row += g2;
        p->s2[c] += (float)((1 - beta2) * g2);
      }
      p->s1[r] = (float)(beta2 * p->s1[r] + (1 - beta2) * row);
      rsum += p->s1[r];
    }
    inv_rsum = 1 / rsum;
  } else {
    for (size_t i = 0; i < n; i++) p->s1[i] = (float)(beta2 * p->s1[i] + (1 - beta2) * ((double)p->g[i] * p->g[i] + hp->eps1));
  }

  /* U = g / sqrt(V); clip by its RMS, then step. */
  double usq = 0;
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      double u = p->g[r * cols + c] / sqrt(adafactor_v(p, inv_rsum, r, c));
      usq += u * u;
    }
  double scale = alpha / fmax(1.0, sqrt(usq / n) / hp->clip_d);
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++)
      p->w[r * cols + c] -= (float)(scale * p->g[r * cols + c] / sqrt(adafactor_v(p, inv_rsum, r, c)));
}

void optim_step(optim *o) {
  o->t++;
  for (size_t i = 0; i < o->nparams; i++) {
    optim_param *p = &o->p[i];
    if (o->kind == OPTIM_SGD) step_sgd(&o->hp, p);
    else if (o->kind == OPTIM_ADAM) step_adam(&o->hp, o->t, p);
    else step_adafactor(&o->hp, o->t, p);
  }
}

void optim_free(optim *o) {
  for (size_t i = 0; i < o->nparams; i++) free(o->p[i].s1);
  memset(o, 0, sizeof *o);
}
