/*
 * dataset.h -- what a stream serves: a dataset of one of four kinds.
 * Called by main.c (load, reload), dispatch.c (lookup by name), stream.c and batch.c (reading samples).
 *
 *   image     ROOT/CLASS/FILE.jpg, .jpeg, .png or .webp (or deeper below
 *             CLASS), as torchvision's ImageFolder: labels are the indices of the sorted folder
 *             names, samples are ordered by (class, path) so that a sample
 *             index means the same thing to bfeedd and to torchvision.
 *             Files are listed at load and read when a batch needs them.
 *   text      labelled text (fastText lines, TSV, or folders of .txt files,
 *             text_source.h) over an embedding table (wordvec.h); the text
 *             is tokenized at load (textset.h), batches copy table rows.
 *   npy       precomputed float32 features in a .npy file, with optional
 *             labels in another (npy_source.h), memory-mapped.
 *   manifest  image + text records from a TSV manifest (manifest.h): both
 *             modalities in one batch, under one shuffle.
 *   tfrecord  TFRecord shards of tf.train.Example (image bytes, int64 label,
 *             optional float features), and
 *   tar       WebDataset tar shards (image + .cls members): both indexed in
 *             background threads (dataset_shards.h); until the index is
 *             complete the dataset answers BFEED_EBUSY.
 *
 * A dataset is immutable after loading and shared read-only by all threads
 * (reference counted: the server's table and every stream hold one), except
 * for the `bad` flags, which are atomics (a file found undecodable once is
 * logged at warning level once, then quietly). Its embedding table is part
 * of it: loaded once, freed with the last reference.
 */
#ifndef BFEED_DATASET_H
#define BFEED_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "npy_source.h"
#include "textset.h"
#include "wordvec.h"

/* A dataset as configured: its name and key = value settings (kind, path,
 * and the kind's options), from a [dataset NAME] section or a --dataset
 * flag. `where` names the origin for messages ("bfeedd.conf:12"). */
typedef struct dataset_kv {
  const char *key, *value, *where;
} dataset_kv;

typedef enum dataset_kind {
  DATASET_IMAGE = 0,
  DATASET_TEXT = 1,
  DATASET_NPY = 2,
  DATASET_MANIFEST = 3,
  DATASET_TFRECORD = 4,
  DATASET_TAR = 5
} dataset_kind;

struct dataset_shards;

typedef struct dataset {
  int refs; /* atomic: held by the server's table and by each stream */
  dataset_kind kind;
  char *name;
  char *root;         /* the path it was loaded from */
  size_t nsamples;
  char **paths;       /* image, manifest: nsamples image files; NULL otherwise */
  int32_t *labels;    /* nsamples class indices; NULL for npy without labels */
  size_t nclasses;
  char **classes;     /* nclasses names, or NULL (npy) */
  unsigned char *bad; /* image, manifest: nsamples flags, accessed atomically */
  /* text, manifest */
  wordvec vectors;
  textset text;
  uint32_t max_len;   /* tokens per sample served when a stream does not say (0: all) */
  /* npy; tfrecord with features_key (rows in memory, no file) */
  npysrc features;
  /* tfrecord, tar: shard files, index, indexing threads; NULL otherwise.
   * The fields above are filled by the indexing thread and may be read
   * only once dataset_ready() has returned 0. */
  struct dataset_shards *shards;
  int has_images; /* tfrecord, tar: samples carry an image */
  uint64_t fingerprint; /* of what decides its bytes, at load (fingerprint.h); 0: unknown */
} dataset;

static inline int dataset_has_images(const dataset *d) {
  return d->kind == DATASET_IMAGE || d->kind == DATASET_MANIFEST || d->has_images;
}
/* npy, and tfrecord with features_key: a "features" tensor. */
static inline int dataset_has_features(const dataset *d) {
  return d->kind == DATASET_NPY || d->features.rows != NULL;
}
static inline int dataset_has_text(const dataset *d) {
  return d->kind == DATASET_TEXT || d->kind == DATASET_MANIFEST;
}
/* "image", "text", "npy", "manifest", "tfrecord", "tar" */
const char *dataset_kind_name(dataset_kind k);

/* Load a dataset from its settings (kind = image, the default). Fails with
 * a message naming the setting, folder, file and line: unknown key, missing
 * path, unreadable or malformed files, no samples. Progress and warnings
 * (cache rebuilt, duplicate words, out-of-vocabulary share) go to log; NULL
 * logs to stderr at the default level. The result has one reference. */
dataset *dataset_open(const char *name, const dataset_kv *kv, size_t nkv, const logger *log, char *err,
                      size_t errlen);
/* dataset_open with log NULL. */
dataset *dataset_load(const char *name, const dataset_kv *kv, size_t nkv, char *err, size_t errlen);
dataset *dataset_ref(dataset *d);
void dataset_unref(dataset *d);

/* Read sample i's image file into *buf (grown as needed, *cap its size).
 * Files larger than DATASET_MAX_FILE are refused. 0; BFEED_EIO or
 * BFEED_ENOMEM for a failure of the moment (EMFILE, ENFILE, ENOMEM, EIO,
 * EAGAIN: worth trying again); BFEED_EDATASET or BFEED_ETOOBIG for one of
 * the file (missing, unreadable, not a regular file, too big). */
#define DATASET_MAX_FILE (256u << 20)
int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen);

/* 0 when d can serve; BFEED_EBUSY while its shards are being indexed,
 * BFEED_EDATASET when indexing failed, with the reason in err. */
int dataset_ready(const dataset *d, char *err, size_t errlen);
/* Block until d can serve or has failed (--check-config, tests); then as
 * dataset_ready. */
int dataset_wait(dataset *d, char *err, size_t errlen);
/* tfrecord, tar: records or members skipped when the shards were indexed
 * (0 for other kinds, and until the index is complete). */
uint64_t dataset_index_skipped(const dataset *d);
/* What to call sample i in a log line: its file, or shard and offset. */
void dataset_sample_name(const dataset *d, size_t i, char *out, size_t n);

/* Returns 1 the first time sample i is marked bad, 0 after. */
int dataset_mark_bad(dataset *d, size_t i);

#endif
