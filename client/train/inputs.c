/* inputs.c -- see inputs.h */
#include "inputs.h"

#include <stdio.h>
#include <string.h>

#include "bf16.h"

/* Samples in b: the first dimension of its label tensor. */
static int batch_rows(const bfeed_batch *b, size_t *rows, char *err, size_t errlen) {
  bfeed_tensor t;
  if (bfeed_batch_find(b, "label", &t) < 0 || t.ndim != 1 || t.dtype != BFEED_DTYPE_I32 || t.shape[0] < 0)
    return snprintf(err, errlen, "the batch has no int32 [B] 'label' tensor"), -1;
  *rows = (size_t)t.shape[0];
  return 0;
}

/* Elements per sample of t, checked against its byte size. */
static int per_sample(const bfeed_tensor *t, size_t rows, size_t *width, char *err, size_t errlen) {
  size_t w = 1;
  for (int d = 1; d < t->ndim; d++) {
    if (t->shape[d] < 0 || (t->shape[d] && w > SIZE_MAX / 4 / (size_t)t->shape[d]))
      return snprintf(err, errlen, "tensor '%s' has a bad shape", t->name), -1;
    w *= (size_t)t->shape[d];
  }
  if (rows && w > SIZE_MAX / 2 / rows) return snprintf(err, errlen, "tensor '%s' is too large", t->name), -1;
  if (t->nbytes != rows * w * 2)
    return snprintf(err, errlen, "tensor '%s' holds %zu bytes, its shape says %zu", t->name, t->nbytes, rows * w * 2),
           -1;
  *width = w;
  return 0;
}

static int is_feature(const bfeed_tensor *t, size_t rows) {
  return t->dtype == BFEED_DTYPE_BF16 && t->ndim >= 1 && t->shape[0] == (int64_t)rows;
}

int inputs_layout(inputs *f, const bfeed_batch *b, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  size_t rows;
  if (batch_rows(b, &rows, err, errlen) < 0) return -1;
  for (int i = 0; i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    if (bfeed_batch_tensor(b, i, &t) < 0 || !is_feature(&t, rows)) continue;
    if (f->n == INPUTS_MAX) return snprintf(err, errlen, "more than %d bf16 tensors in a batch", INPUTS_MAX), -1;
    if (strlen(t.name) >= sizeof f->name[0]) return snprintf(err, errlen, "tensor name '%s' is too long", t.name), -1;
    if (per_sample(&t, rows, &f->width[f->n], err, errlen) < 0) return -1;
    strcpy(f->name[f->n], t.name);
    char *s = f->shape[f->n];
    size_t used = (size_t)snprintf(s, sizeof f->shape[0], "[");
    for (int d = 1; d < t.ndim && used < sizeof f->shape[0]; d++)
      used += (size_t)snprintf(s + used, sizeof f->shape[0] - used, "%s%lld", d > 1 ? "," : "", (long long)t.shape[d]);
    if (used < sizeof f->shape[0]) snprintf(s + used, sizeof f->shape[0] - used, "]");
    f->total += f->width[f->n++];
  }
  if (f->n == 0 || f->total == 0)
    return snprintf(err, errlen, "the batch has no bf16 feature tensor (such as 'image' or 'pooled')"), -1;
  return 0;
}

int inputs_copy(const inputs *f, const bfeed_batch *b, void *dst, ops_dtype dt, size_t max_rows,
                  size_t *rows, char *err, size_t errlen) {
  if (batch_rows(b, rows, err, errlen) < 0) return -1;
  if (*rows > max_rows) return snprintf(err, errlen, "a batch of %zu samples, more than %zu", *rows, max_rows), -1;
  size_t es = ops_dtype_size(dt), offset = 0;
  for (int i = 0; i < f->n; offset += f->width[i++]) {
    bfeed_tensor t;
    size_t w;
    if (bfeed_batch_find(b, f->name[i], &t) < 0 || !is_feature(&t, *rows))
      return snprintf(err, errlen, "a batch lacks the bf16 [%zu,...] tensor '%s'", *rows, f->name[i]), -1;
    if (per_sample(&t, *rows, &w, err, errlen) < 0) return -1;
    if (w != f->width[i])
      return snprintf(err, errlen, "tensor '%s' has %zu values per sample, the first batch had %zu", f->name[i], w,
                      f->width[i]),
             -1;
    /* Samples are rows of f->total: each tensor fills its column range. */
    for (size_t r = 0; r < *rows; r++)
      ops_convert((char *)dst + (r * f->total + offset) * es, dt, (const uint16_t *)t.data + r * w, OPS_BF16, w);
  }
  return 0;
}

int inputs_labels(const bfeed_batch *b, size_t rows, uint32_t classes, const int32_t **labels, char *err,
                    size_t errlen) {
  bfeed_tensor t;
  if (bfeed_batch_find(b, "label", &t) < 0 || t.dtype != BFEED_DTYPE_I32 || t.ndim != 1 ||
      t.shape[0] != (int64_t)rows || t.nbytes != rows * 4)
    return snprintf(err, errlen, "the batch has no int32 [%zu] 'label' tensor", rows), -1;
  const int32_t *l = t.data;
  for (size_t i = 0; i < rows; i++)
    if (l[i] < 0 || (uint32_t)l[i] >= classes)
      return snprintf(err, errlen, "label %d of sample %zu is outside 0..%u", l[i], i, classes - 1), -1;
  *labels = l;
  return 0;
}

void inputs_describe(const inputs *f, char *out, size_t len) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < f->n && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s%s %s", i ? " + " : "", f->name[i], f->shape[i]);
}
