/*
 * inputs.h -- what in a batch the model reads, flattened per sample.
 *
 * The model's input is every bf16 tensor of the batch whose first dimension
 * is the batch, each flattened per sample and concatenated in batch order:
 * `image` [B,3,S,S] (or [B,S,S,3]) gives 3*S*S inputs, a word-vector stream's
 * `pooled` [B,D] gives D, and an image+text stream gives both side by side.
 * Labels come from `label` (int32 [B]); `index` (int64) and any other
 * non-bf16 tensor are not features. The layout is taken from the first
 * batch and every later batch (also of the eval stream) must match it.
 */
#ifndef BFEED_TRAIN_INPUTS_H
#define BFEED_TRAIN_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed.h"
#include "ops.h"

#define INPUTS_MAX 8

typedef struct inputs {
  int n;
  char name[INPUTS_MAX][64];
  size_t width[INPUTS_MAX]; /* elements per sample */
  char shape[INPUTS_MAX][48]; /* per sample, e.g. "[3,32,32]" */
  size_t total;               /* the model's input width */
} inputs;

/* Take the layout from batch b. -1 (message in err) if it has no bf16
 * feature tensor, or more than INPUTS_MAX. */
int inputs_layout(inputs *f, const bfeed_batch *b, char *err, size_t errlen);

/* Copy b's features into dst as [rows, f->total] of type dt, rows being
 * b's batch size (<= max_rows). -1 (message in err) if b does not match
 * the layout or holds more than max_rows samples. */
int inputs_copy(const inputs *f, const bfeed_batch *b, void *dst, ops_dtype dt, size_t max_rows,
                  size_t *rows, char *err, size_t errlen);

/* b's labels, checked: int32 [rows], each in 0..classes-1. */
int inputs_labels(const bfeed_batch *b, size_t rows, uint32_t classes, const int32_t **labels, char *err,
                    size_t errlen);

/* "image [3,32,32] + pooled [300]" into out. */
void inputs_describe(const inputs *f, char *out, size_t len);

#endif
