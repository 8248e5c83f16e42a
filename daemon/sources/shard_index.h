/*
 * shard_index.h -- where each sample of one shard file lies, and its cache on disk.
 * Built by tfrecord.c and tar_shards.c, cached and assembled by dataset_shards.c.
 *
 * An index lists a shard's good samples in file order: the byte offset and
 * length of the record (TFRecord) or image member (tar), the label read
 * from it, and for TFRecords with a features key the float features. It is
 * written beside the shard (".NAME.bfidx", hidden so that the shard glob
 * does not match it) or in cache_dir, tagged with the shard's size and
 * mtime and a hash of the settings it depends on, and rebuilt when any of
 * them differ or the file does not check out.
 */
#ifndef BFEED_SHARD_INDEX_H
#define BFEED_SHARD_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "log.h"

#define SHARD_INDEX_NO_LABEL INT64_MIN

typedef struct shard_index_entry {
  uint64_t off;  /* TFRecord: the record's header; tar: the image member's data */
  uint32_t len;  /* TFRecord: the record's data length; tar: the image member's size */
  uint32_t pad;
  int64_t label; /* as stored (before label_offset), or SHARD_INDEX_NO_LABEL */
} shard_index_entry;

typedef struct shard_index {
  shard_index_entry *e;
  size_t n, cap;
  float *features;  /* n x dim, or NULL */
  uint32_t dim;
  uint64_t skipped; /* records or members skipped while building */
} shard_index;

/* What an index builder needs besides the shard: where to log skipped
 * records ("dataset NAME: FILE: ... at byte offset N"), and a flag that
 * tells it to stop early (the dataset is being dropped). */
typedef struct shard_index_ctx {
  const logger *log;
  const char *dataset;
  const int *cancel; /* read atomically */
} shard_index_ctx;

static inline int shard_index_cancelled(const shard_index_ctx *c) {
  return c->cancel && __atomic_load_n(c->cancel, __ATOMIC_RELAXED);
}

/* Append an entry (features: dim floats, or NULL when dim is 0). 0 or
 * BFEED_ENOMEM. */
int shard_index_add(shard_index *x, uint64_t off, uint32_t len, int64_t label, const float *features, uint32_t dim);
void shard_index_free(shard_index *x);

/* The cache file of shard: cache_dir/NAME.HASH.bfidx when cache_dir is
 * set (HASH of the shard's absolute path, as two shards may share a
 * name), else .NAME.bfidx beside it. */
void shard_index_path(char *out, size_t n, const char *shard, const char *cache_dir);
/* Read the cache at path if it was built from this file state (st) and
 * settings (key). 0 with x filled; BFEED_EDATASET (absent, stale, corrupt)
 * or BFEED_ENOMEM with the reason in err, x left empty. */
int shard_index_load(shard_index *x, const char *path, const struct stat *st, uint64_t key, char *err, size_t errlen);
/* Write x atomically (a temporary file renamed over path). 0, or
 * BFEED_EIO / BFEED_ENOMEM with the reason. */
int shard_index_save(const shard_index *x, const char *path, const struct stat *st, uint64_t key, char *err,
                     size_t errlen);

#endif
