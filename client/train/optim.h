/*
 * optim.h -- optimizers on float32 master weights.
 *
 * In mixed precision the optimizer never sees bf16: it updates the float32
 * master copy from float32 gradients and keeps its state in float32, so
 * small updates are not lost to bf16's 8-bit significand. What differs
 * between optimizers is how much state they keep per weight, which is the
 * point of offering Adafactor:
 *
 *   sgd        momentum: one float per weight (none with --momentum 0)
 *   adam       first and second moments: two floats per weight
 *   adafactor  Shazeer & Stern 2018 ("Adafactor: Adaptive Learning Rates
 *              with Sublinear Memory Cost"), their recommended setting: no
 *              first moment; second moments of an r x c matrix factored
 *              into r row sums and c column sums (r + c floats instead of
 *              r*c), vectors keep one per element; relative step size
 *              alpha_t = max(eps2, RMS(w)) * min(lr, 1/sqrt(t)); decay
 *              beta2_t = 1 - t^-0.8; update clipping U / max(1, RMS(U)/d).
 */
#ifndef BFEED_TRAIN_OPTIM_H
#define BFEED_TRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

typedef enum optim_kind { OPTIM_SGD = 0, OPTIM_ADAM = 1, OPTIM_ADAFACTOR = 2 } optim_kind;

typedef struct optim_hparams {
  float lr;                 /* sgd 0.01, adam 1e-3; adafactor: the cap on the relative step, 1e-2 */
  float momentum;           /* sgd: 0.9 */
  float beta1, beta2, eps;  /* adam: 0.9, 0.999, 1e-8 */
  float eps1, eps2, clip_d; /* adafactor: 1e-30, 1e-3, 1 */
  float decay;              /* adafactor: beta2_t = 1 - t^-decay, 0.8 */
} optim_hparams;

/* The defaults above for kind. */
void optim_hparams_default(optim_hparams *hp, optim_kind kind);

/* "sgd", "adam", "adafactor" */
const char *optim_name(optim_kind kind);
/* 0 and *out set, or -1 for an unknown name. */
int optim_parse(const char *name, optim_kind *out);

/* Floats of state for one rows x cols parameter (a vector has rows 1). */
size_t optim_state_floats(optim_kind kind, const optim_hparams *hp, size_t rows, size_t cols);
/* Floats of scratch for parameters at most max_cols wide (adafactor's row). */
size_t optim_scratch_floats(optim_kind kind, size_t max_cols);

typedef struct optim_param {
  float *w;          /* the master weights, updated in place */
  const float *g;    /* their gradient, read at each step */
  size_t rows, cols;
  float *s1, *s2;    /* sgd: velocity; adam: m, v; adafactor: row and column
                        sums when factored, else s1 = v */
  int factored;
} optim_param;

#define OPTIM_MAX_PARAMS 32

typedef struct optim {
  optim_kind kind;
  optim_hparams hp;
  uint64_t t; /* steps taken */
  size_t nparams;
  optim_param p[OPTIM_MAX_PARAMS];
  size_t state_bytes; /* allocated for all parameters' state, and row */
  float *row;         /* adafactor: one row of 1/sqrt(V), as wide as the
                         widest parameter (optim_scratch_floats) */
  size_t row_cap;
} optim;

void optim_init(optim *o, optim_kind kind, const optim_hparams *hp);
/* Register a parameter (w and g stay owned by the caller and must outlive
 * o). Returns 0, or -1 when out of memory or past OPTIM_MAX_PARAMS. */
int optim_add(optim *o, float *w, const float *g, size_t rows, size_t cols);
/* One update of every parameter from its current gradient. */
void optim_step(optim *o);
void optim_free(optim *o);

#endif
