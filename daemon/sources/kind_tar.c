/*
 * kind_tar.c -- the tar kind: WebDataset tar shards (an image member and a
 * .cls label member per sample) named by a glob, indexed in the background
 * by dataset_shards.c; the grouping of members is tar_shards.c's, and a
 * sample is read with one storage_pread. Called through dataset.c's kind table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_shards.h"
#include "tar_shards.h"

typedef struct kind_tar_cfg {
  char *label_ext; /* NULL: no labels */
} kind_tar_cfg;

static void kind_tar_free(void *arg) {
  kind_tar_cfg *c = arg;
  if (c) free(c->label_ext);
  free(c);
}

static int kind_tar_index(const char *path, const void *cfg, const shard_index_ctx *ctx, shard_index *x, char *err,
                          size_t errlen) {
  return tar_shards_index(path, ((const kind_tar_cfg *)cfg)->label_ext, ctx, x, err, errlen);
}

/* The image member's bytes, where the index found them. Any failure is
 * BFEED_EIO (tried again, then the batch fails), as it always was for tar. */
static int kind_tar_read(storage_file *f, const shard_index_entry *e, const void *cfg, uint8_t **buf, size_t *cap,
                         size_t *len, char *err, size_t errlen) {
  char why[256];
  int rc = storage_pread_grow(f, e->off, e->len, buf, cap, why, sizeof why);
  if (rc == BFEED_ENOMEM) return snprintf(err, errlen, "%s", why), rc;
  if (rc < 0) return snprintf(err, errlen, "read failed: %s", why), BFEED_EIO;
  *len = e->len;
  return 0;
}

static const dataset_shards_format kind_tar_format = {.format = "tar", .unit = "member", .index = kind_tar_index,
                                                      .read = kind_tar_read, .free = kind_tar_free};

/* (dataset_open has checked the keys.) */
static int kind_tar_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  kind_tar_cfg *c = calloc(1, sizeof *c);
  if (!c || dataset_key_string(k, "label_ext", "cls", &c->label_ext) < 0)
    return kind_tar_free(c), dataset_oom(d, err, errlen);
  d->tensors = DATASET_TENSOR_IMAGE;
  /* The same text as before the kinds were split, so caches stay valid. */
  char tag[1100];
  snprintf(tag, sizeof tag, "tar||||%s", c->label_ext ? c->label_ext : "");
  /* WebDataset .cls labels count from 0. */
  dataset_shards_spec spec = {.format = &kind_tar_format, .cfg = c, .label_offset = 0,
                              .labelled = c->label_ext != NULL, .tag = tag};
  return dataset_shards_load(d, k, log, &spec, err, errlen);
}

static const dataset_key_spec kind_tar_keys[] = {
    {"label_ext", DATASET_KEY_VALUE}, {"label_offset", DATASET_KEY_VALUE}, {"cache_dir", DATASET_KEY_PLACE}, DATASET_SHARDS_REMOTE_KEYS, {NULL, 0}};

const dataset_kind kind_tar = {.name = "tar", .keys = kind_tar_keys, .load = kind_tar_load, DATASET_SHARDS_OPS};
