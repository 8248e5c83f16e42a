/*
 * kind_tfrecord.c -- the tfrecord kind: TFRecord shards of tf.train.Example
 * (image bytes, int64 label, optional float features) named by a glob,
 * indexed in the background by dataset_shards.c; the format is
 * tfrecord.c's. Called through dataset.c's kind table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_shards.h"
#include "tfrecord.h"

typedef struct kind_tfrecord_cfg {
  char *image_key, *label_key, *features_key;
  tf_example_keys keys;
} kind_tfrecord_cfg;

static void kind_tfrecord_free(void *arg) {
  kind_tfrecord_cfg *c = arg;
  if (!c) return;
  free(c->image_key);
  free(c->label_key);
  free(c->features_key);
  free(c);
}

static int kind_tfrecord_index(const char *path, const void *cfg, const shard_index_ctx *ctx, shard_index *x,
                               char *err, size_t errlen) {
  return tfrecord_index(path, &((const kind_tfrecord_cfg *)cfg)->keys, ctx, x, err, errlen);
}

static int kind_tfrecord_read(storage_file *f, const shard_index_entry *e, const void *cfg, uint8_t **buf,
                              size_t *cap, size_t *len, char *err, size_t errlen) {
  return tfrecord_sample_at(f, e, &((const kind_tfrecord_cfg *)cfg)->keys, buf, cap, len, err, errlen);
}

static const dataset_shards_format kind_tfrecord_format = {.format = "TFRecord", .unit = "record",
                                                           .index = kind_tfrecord_index, .read = kind_tfrecord_read,
                                                           .free = kind_tfrecord_free};

/* (dataset_open has checked the keys.) */
static int kind_tfrecord_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  kind_tfrecord_cfg *c = calloc(1, sizeof *c);
  if (!c) return dataset_oom(d, err, errlen);
  int have_features = dataset_key(k, "features_key") != NULL;
  if (dataset_key_string(k, "features_key", NULL, &c->features_key) < 0 ||
      dataset_key_string(k, "label_key", "image/class/label", &c->label_key) < 0 ||
      /* With features, images are served only when image_key says so. */
      dataset_key_string(k, "image_key", have_features ? NULL : "image/encoded", &c->image_key) < 0)
    return kind_tfrecord_free(c), dataset_oom(d, err, errlen);
  if (!c->image_key && !c->features_key)
    return kind_tfrecord_free(c),
           snprintf(err, errlen, "dataset %s: image_key is empty and no features_key is set: nothing to serve", k->name),
           BFEED_EDATASET;
  c->keys = (tf_example_keys){.image = c->image_key, .label = c->label_key, .features = c->features_key};
  d->tensors = (c->image_key ? DATASET_TENSOR_IMAGE : 0) | (c->features_key ? DATASET_TENSOR_FEATURES : 0);
  /* What an index depends on: the format and the keys it looked up (the
   * same text as before the kinds were split, so caches stay valid). */
  char tag[2048];
  snprintf(tag, sizeof tag, "tfrecord|%s|%s|%s|", c->image_key ? c->image_key : "", c->label_key ? c->label_key : "",
           c->features_key ? c->features_key : "");
  /* TPU ImageNet TFRecords count classes from 1. */
  dataset_shards_spec spec = {.format = &kind_tfrecord_format, .cfg = c, .label_offset = -1,
                              .labelled = c->label_key != NULL, .features = c->features_key, .tag = tag};
  return dataset_shards_load(d, k, log, &spec, err, errlen);
}

static const dataset_key_spec kind_tfrecord_keys[] = {
    {"image_key", DATASET_KEY_VALUE},    {"label_key", DATASET_KEY_VALUE}, {"label_offset", DATASET_KEY_VALUE},
    {"features_key", DATASET_KEY_VALUE}, {"cache_dir", DATASET_KEY_PLACE}, DATASET_SHARDS_REMOTE_KEYS, {NULL, 0}};

const dataset_kind kind_tfrecord = {.name = "tfrecord", .keys = kind_tfrecord_keys, .load = kind_tfrecord_load,
                                     DATASET_SHARDS_OPS};
