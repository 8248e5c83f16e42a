/* batch_text.c -- see batch_text.h */
#include "batch_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "bf16.h"
#include "opts.h"
#include "rng.h"

/* The tables hold bf16 and the files float32 in host order, and tensors
 * are little-endian: rows are copied as they are. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "text and feature batches assume a little-endian host"
#endif

/* The length asked for: the stream's max_len, else the dataset's setting; 0 = none. */
static uint32_t batch_text_asked(const bfeed_stream_opts *o, const dataset *ds) {
  return o->max_len ? o->max_len : ds->len_cap;
}

/* With no length asked for, a tokens tensor is as long as the longest
 * sample: one line of millions of tokens would make every batch it falls
 * in hundreds of megabytes. The default caps a sample at
 * BATCH_TEXT_DEFAULT_BYTES of vectors, which depends on the dataset alone
 * (its table's dimension), so batches stay a pure function of dataset and
 * options; 0 (all) when the longest sample is within it, so that ordinary
 * datasets are served exactly as they were. Pooled streams average every
 * vector: their batches are B x D whatever the length. */
uint32_t batch_text_default_cap(const bfeed_stream_opts *o, const dataset *ds) {
  if (o->pool == BFEED_POOL_MEAN || !dataset_has_text(ds) || ds->vectors.dim == 0) return 0;
  uint64_t cap = BATCH_TEXT_DEFAULT_BYTES / (2 * (uint64_t)ds->vectors.dim);
  if (cap < 1) cap = 1;
  return ds->text.longest > cap ? (uint32_t)cap : 0;
}

uint32_t batch_text_cap(const bfeed_stream_opts *o, const dataset *ds) {
  uint32_t asked = batch_text_asked(o, ds);
  return asked ? asked : batch_text_default_cap(o, ds);
}

uint32_t batch_text_longest(const bfeed_stream_opts *o, const dataset *ds) {
  uint32_t cap = batch_text_cap(o, ds);
  return o->fixed_len ? cap : cap && cap < ds->text.longest ? cap : ds->text.longest;
}

int batch_text_check(const dataset *ds, const bfeed_stream_opts *o, char *err, size_t errlen) {
  char names[128];
  int text = dataset_has_text(ds);
  if (!text && opts_text_set(o, names, sizeof names))
    return snprintf(err, errlen, "%s: these options apply to text datasets; %s is a%s %s dataset", names, ds->name,
                    strchr("aeiou", dataset_kind_name(ds)[0]) ? "n" : "", dataset_kind_name(ds)),
           BFEED_EINVAL;
  if (text && o->fixed_len && batch_text_asked(o, ds) == 0)
    return snprintf(err, errlen, "fixed_len needs a length: set max_len (dataset %s has no max_len setting)", ds->name),
           BFEED_EINVAL;
  return 0;
}

const char *batch_text_fit_hint(const dataset *ds, const bfeed_stream_opts *o) {
  return dataset_has_text(ds) && !o->max_len ? "; or set max_len" : "";
}

uint32_t batch_text_len(const batch_spec *s, const uint32_t *sel, uint32_t B) {
  if (s->opts.fixed_len) return s->len_cap;
  uint32_t T = 1;
  for (uint32_t i = 0; i < B; i++) {
    uint32_t n = batch_sample_len(s, sel[i]);
    if (n > T) T = n;
  }
  return T;
}

void batch_text_put_tokens(const batch_spec *s, const uint32_t *sel, uint32_t B, uint32_t T, uint8_t *dst) {
  const dataset *ds = s->ds;
  size_t row = (size_t)ds->vectors.dim * 2;
  for (uint32_t i = 0; i < B; i++, dst += row * T) {
    uint32_t n = batch_sample_len(s, sel[i]);
    if (n > T) n = T;
    const uint32_t *ids = textset_ids(&ds->text, sel[i]);
    for (uint32_t t = 0; t < n; t++) {
      if (ids[t] == TEXTSET_ZERO) memset(dst + row * t, 0, row);
      else memcpy(dst + row * t, wordvec_row(&ds->vectors, ids[t]), row);
    }
    memset(dst + row * n, 0, row * (T - n));
  }
}

void batch_text_put_pooled(const batch_spec *s, const uint32_t *sel, uint32_t B, float *acc, uint8_t *dst) {
  const dataset *ds = s->ds;
  uint32_t D = ds->vectors.dim;
  uint16_t *out = (uint16_t *)dst;
  for (uint32_t i = 0; i < B; i++, out += D) {
    uint32_t n = batch_sample_len(s, sel[i]);
    const uint32_t *ids = textset_ids(&ds->text, sel[i]);
    for (uint32_t d = 0; d < D; d++) acc[d] = 0.0f;
    for (uint32_t t = 0; t < n; t++) {
      if (ids[t] == TEXTSET_ZERO) continue; /* adds +0.0 to a sum that started at +0.0 */
      const uint16_t *v = wordvec_row(&ds->vectors, ids[t]);
      for (uint32_t d = 0; d < D; d++) acc[d] += bf16_to_f32(v[d]);
    }
    if (n == 0) {
      memset(out, 0, (size_t)D * 2);
      continue;
    }
    float count = (float)n;
    for (uint32_t d = 0; d < D; d++) out[d] = bf16_from_f32(acc[d] / count);
  }
}

int batch_text_put_features(const batch_spec *s, const uint32_t *sel, uint32_t B, float *tmp, uint8_t *dst, char *err,
                            size_t errlen) {
  const npysrc *f = &s->ds->features;
  size_t nf = (size_t)f->row_floats;
  uint16_t *out = (uint16_t *)dst;
  for (uint32_t i = 0; i < B; i++, out += nf) {
    int rc = npy_source_read_row(f, sel[i], tmp, err, errlen);
    /* A row that cannot be read is most often a file changed between the
     * check before this batch and the read: the check, made again, says
     * so for certain and marks the dataset for its reload. */
    if (rc == BFEED_EDATASET) {
      int changed = dataset_check(s->ds, err, errlen);
      return changed < 0 ? changed : rc;
    }
    if (rc < 0) return rc;
    bf16_from_f32_array(out, tmp, nf);
  }
  return 0;
}

typedef struct bucket_key {
  uint32_t len, pos, idx;
} bucket_key;

static int cmp_key(const void *a, const void *b) {
  const bucket_key *x = a, *y = b;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int batch_text_bucket(const batch_spec *s, uint32_t *idx, uint32_t n, int shuffle, uint64_t epoch) {
  uint64_t B = s->opts.batch, run = B * s->opts.bucket;
  /* Only whole batches are bucketed: the n mod B positions at the end, the
   * short batch, stay as the shuffle left them, so the samples a stream
   * drops without keep_partial are not always the longest. */
  uint32_t whole = (uint32_t)(n - n % B);
  size_t span = run < whole ? (size_t)run : whole;
  bucket_key *k = malloc((span ? span : 1) * sizeof *k);
  uint32_t *order = malloc((span / B + 1) * sizeof *order);
  if (!k || !order) {
    free(k), free(order);
    return BFEED_ENOMEM;
  }
  uint64_t r = 0;
  for (uint64_t start = 0; start < whole; start += run, r++) {
    uint32_t len = (uint32_t)(whole - start < run ? whole - start : run), nb = (uint32_t)(len / B);
    for (uint32_t p = 0; p < len; p++) k[p] = (bucket_key){batch_sample_len(s, idx[start + p]), p, idx[start + p]};
    qsort(k, len, sizeof *k, cmp_key);
    for (uint32_t b = 0; b < nb; b++) order[b] = b;
    if (shuffle && nb > 1) { /* Fisher-Yates over the run's batches */
      rng_t g;
      rng_init(&g, s->opts.seed, RNG_DOMAIN_BUCKET, epoch, r);
      for (uint32_t b = nb - 1; b > 0; b--) {
        uint32_t j = (uint32_t)rng_below(&g, (uint64_t)b + 1), t = order[b];
        order[b] = order[j];
        order[j] = t;
      }
    }
    for (uint32_t b = 0; b < nb; b++)
      for (uint64_t q = 0; q < B; q++) idx[start + b * B + q] = k[order[b] * B + q].idx;
  }
  free(k), free(order);
  return 0;
}
