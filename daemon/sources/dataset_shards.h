/*
 * dataset_shards.h -- what the shard kinds (kind_tfrecord.c, kind_tar.c)
 * share: shard files named by a glob, indexed in background threads with
 * a per-shard index cache (shard_index.h), samples read at recorded
 * offsets. The format-specific part -- how a shard is indexed and how one
 * sample's bytes are read from it -- is the kind's, given here as a
 * dataset_shards_format.
 *
 * Loading only lists the shards and starts the indexing threads: the
 * daemon serves its other datasets meanwhile, and a stream opened on this
 * one is answered BFEED_EBUSY ("indexing, 3 of 10 shards done") until the
 * index is complete. Each shard's index is reused from its cache when the
 * shard has not changed. Sample order: shards sorted by name, samples in
 * file order.
 */
#ifndef BFEED_DATASET_SHARDS_H
#define BFEED_DATASET_SHARDS_H

#include "dataset_kind.h"
#include "shard_index.h"
#include "storage.h"

/* A shard format. */
typedef struct dataset_shards_format {
  const char *format; /* "TFRecord", "tar": for log lines */
  const char *unit;   /* "record", "member": for sample names and messages */
  /* Index the shard at path (on an indexing thread; ctx->cancel may stop
   * it). cfg is the kind's, as given to dataset_shards_load. */
  int (*index)(const char *path, const void *cfg, const shard_index_ctx *ctx, shard_index *x, char *err,
               size_t errlen);
  /* Entry e's image bytes from the open shard f (on a batch worker); the
   * message need not name the shard or offset: the caller does. */
  int (*read)(storage_file *f, const shard_index_entry *e, const void *cfg, uint8_t **buf, size_t *cap, size_t *len,
              char *err, size_t errlen);
  void (*free)(void *cfg);
} dataset_shards_format;

/* A shard kind's load: its format and settings. */
typedef struct dataset_shards_spec {
  const dataset_shards_format *format;
  void *cfg;            /* the kind's settings; the dataset owns it from here */
  int64_t label_offset; /* the default; the label_offset key overrides it */
  int labelled;         /* samples carry labels */
  const char *features; /* the features setting, for messages; NULL: no features */
  const char *tag;      /* what the indexes depend on: their cache is rebuilt when it changes */
} dataset_shards_spec;

/* Read the keys both kinds take (label_offset, cache_dir; for s3:// and
 * gs:// endpoint, region, profile, credentials_file), list the shards
 * and start indexing them. 0, or BFEED_EDATASET (a setting, no shard
 * matches) or BFEED_ENOMEM with the reason. */
int dataset_shards_load(dataset *d, const dataset_keys *k, const logger *log, const dataset_shards_spec *spec,
                        char *err, size_t errlen);

/* The rest of the kind's operations (dataset_kind.h):
 * ready: 0 when the index is complete; BFEED_EBUSY while indexing;
 *   BFEED_EDATASET when indexing failed (a compressed shard, no samples).
 * wait: wait for the indexing to end; then as ready.
 * read: sample i's image bytes; the message names the shard and offset.
 * sample_name: "FILE: record at byte offset N" (or "member").
 * index_skipped: records or members left out when the shards were indexed.
 * fingerprint: the shards by file name and version.
 * free: stops the indexing threads and frees the kind's state. */
int dataset_shards_ready(const dataset *d, char *err, size_t errlen);
int dataset_shards_wait(dataset *d, char *err, size_t errlen);
int dataset_shards_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                        size_t errlen);
void dataset_shards_name(const dataset *d, size_t i, char *out, size_t n);
/* prefetch: announce sample i's bytes (remote shards). */
void dataset_shards_prefetch(const dataset *d, size_t i);
uint64_t dataset_shards_skipped(const dataset *d);
void dataset_shards_fingerprint(const dataset *d, struct fingerprint *fp);
void dataset_shards_free(dataset *d);

/* The keys of a bucket's shards, in a shard kind's key table. */
#define DATASET_SHARDS_REMOTE_KEYS                                                                    \
  {"endpoint", DATASET_KEY_PLACE}, {"region", DATASET_KEY_PLACE}, {"profile", DATASET_KEY_PLACE},         \
      {"credentials_file", DATASET_KEY_PLACE}

/* A shard kind's table entry past its name, keys and load. */
#define DATASET_SHARDS_OPS                                                                              \
  .read = dataset_shards_read, .prefetch = dataset_shards_prefetch, .sample_name = dataset_shards_name, .ready = dataset_shards_ready,       \
  .wait = dataset_shards_wait, .index_skipped = dataset_shards_skipped, .fingerprint = dataset_shards_fingerprint, \
  .free = dataset_shards_free

#endif
