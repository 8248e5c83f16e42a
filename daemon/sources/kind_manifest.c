/*
 * kind_manifest.c -- the manifest kind: image + text records from a TSV
 * manifest (manifest.h), both modalities in one batch under one shuffle.
 * Image paths are relative to the manifest's folder (or absolute) and must
 * exist at load; the words' settings are the text kind's (dataset_text.c).
 * Called through dataset.c's kind table.
 */
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_text.h"
#include "fingerprint.h"
#include "manifest.h"
#include "storage.h"

/* What the record callback builds: the samples, and their images. */
typedef struct kind_manifest_ctx {
  dataset_text_builder b;
  const char *dir; /* where relative image paths start */
  strlist images;
  storage_stamps stamps;
} kind_manifest_ctx;

static int kind_manifest_record(void *arg, const manifest_record *r, char *err, size_t errlen) {
  kind_manifest_ctx *c = arg;
  int rc = dataset_files_add(c->b.d, &c->images, &c->stamps, c->dir, r->image, r->image_len, r->file, r->line, err, errlen);
  if (rc < 0) return rc;
  return dataset_text_add(&c->b, r->label, r->label_len, r->text, r->text_len, r->file, r->line, err, errlen);
}

static int kind_manifest_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  dataset_text_opts s;
  int rc = dataset_text_prepare(d, k, &s, log, err, errlen);
  if (rc < 0) return rc;
  char *dir = storage_parent(d->root);
  if (!dir) return dataset_oom(d, err, errlen);
  kind_manifest_ctx c = {.b = {.d = d, .s = &s}, .dir = dir};
  rc = manifest_read(d->root, kind_manifest_record, &c, err, errlen);
  if (rc == 0) rc = dataset_text_finish(&c.b, 1, log, err, errlen);
  if (rc == 0 && !(d->bad = calloc(d->nsamples, 1))) rc = dataset_oom(d, err, errlen);
  if (rc == 0) {
    d->paths = c.images.v;
    d->stamps = c.stamps.v;
    d->tensors |= DATASET_TENSOR_IMAGE;
    c.stamps.v = NULL;
    c.images.v = NULL;
    c.images.n = 0;
  }
  dataset_text_builder_free(&c.b);
  strlist_free(&c.images);
  storage_stamps_free(&c.stamps);
  free(dir);
  return rc;
}

/* The manifest itself, then its images relative to its folder (the empty
 * folder name for a manifest at the root, as PROTOCOL.md's form has it). */
static void kind_manifest_fingerprint(const dataset *d, struct fingerprint *fp) {
  char *dir = strdup(d->root), *slash = dir ? strrchr(dir, '/') : NULL;
  if (slash) *slash = 0;
  fingerprint_file(fp, d->root, NULL);
  for (size_t i = 0; i < d->nsamples; i++) fingerprint_file(fp, d->paths[i], slash ? dir : ".");
  free(dir);
}

static const dataset_key_spec kind_manifest_keys[] = {DATASET_TEXT_KEYS, {NULL, 0}};

const dataset_kind kind_manifest = {.name = "manifest", .keys = kind_manifest_keys, .load = kind_manifest_load,
                                     .read = dataset_files_read, .sample_name = dataset_files_name,
                                     .fingerprint = kind_manifest_fingerprint};
