/*
 * kind_npy.c -- the npy kind: precomputed float32 features [N, D] or
 * [N, T, D] in a .npy file, with optional labels [N] in another
 * (npy_source.h), read row by row when a batch needs them.
 * Called through dataset.c's kind table.
 */
#include <stdio.h>

#include "bfeed_types.h"
#include "dataset_kind.h"
#include "fingerprint.h"

static int kind_npy_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  int rc;
  if ((rc = npy_source_open_features(&d->features, d->root, err, errlen)) < 0) return rc;
  d->nsamples = (size_t)d->features.nrows;
  d->tensors = DATASET_TENSOR_FEATURES;
  const dataset_kv *labels = dataset_key(k, "labels");
  if (labels && (rc = npy_source_read_labels(labels->value, d->features.nrows, &d->labels, &d->nclasses, err, errlen)) < 0)
    return rc;
  const npy_source_header *h = &d->features.h;
  char first[64];
  snprintf(first, sizeof first, "row %llu", (unsigned long long)d->features.first_nonfinite_row);
  dataset_note_nonfinite(d, d->root, d->features.nonfinite, first, log);
  log_info(log, "dataset %s: %llu float32 feature rows of %llu values from %s%s%s", d->name,
           (unsigned long long)h->shape[0], (unsigned long long)d->features.row_floats, d->root,
           labels ? ", labels from " : " (no labels)", labels ? labels->value : "");
  return 0;
}

/* The features file (the labels file is a setting, hashed with it). */
static void kind_npy_fingerprint(const dataset *d, struct fingerprint *fp) { fingerprint_file(fp, d->root, NULL); }

/* The features are read from their file for each batch: one stat per
 * batch tells a file rewritten in place or replaced (the open descriptor
 * would go on reading the old one, or a mix). */
static int kind_npy_check(const dataset *d, char *err, size_t errlen) {
  return npy_source_check(&d->features, err, errlen);
}

static const dataset_key_spec kind_npy_keys[] = {{"labels", DATASET_KEY_FILE}, {NULL, 0}};

const dataset_kind kind_npy = {.name = "npy", .keys = kind_npy_keys, .load = kind_npy_load,
                                .fingerprint = kind_npy_fingerprint, .check = kind_npy_check};
