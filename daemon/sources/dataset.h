/*
 * dataset.h -- what a stream serves: a dataset of one of the kinds in
 * dataset.c's table (image folders, lists, text, npy, manifests, TFRecord
 * and tar shards...), each one kind_*.c file implementing dataset_kind.h.
 * Called by main.c (load, reload), dispatch.c (lookup by name), stream.c and batch.c (reading samples).
 *
 * This header is what the rest of the daemon sees, whatever the kind: the
 * samples' labels, the tensors a batch holds, and the calls below. Kinds
 * that index shards in background threads (dataset_shards.h) answer
 * BFEED_EBUSY until their index is complete.
 *
 * A dataset is immutable after loading and shared read-only by all threads
 * (reference counted: the server's table and every stream hold one), except
 * for the `bad` flags, which are atomics (a file found undecodable once is
 * logged at warning level once, then quietly), and the mark that its files
 * changed (dataset_changed). Its embedding table is part of it: loaded
 * once, freed with the last reference.
 *
 * Files changed under a dataset: each file read while serving is checked
 * against the stamp taken when the dataset loaded (storage_open_same: size,
 * modification time, device and inode, from the fstat every open makes),
 * and a file gone, or changed, marks the whole dataset changed. From then
 * on no batch of it is built (dataset_check fails each with the file's
 * name), so that no stream gets a mix of old and new data; OPEN is answered
 * BFEED_EBUSY, and the daemon reloads it (main.c). A path that now holds no
 * regular file (a FIFO, a folder) is no change: that sample is unreadable,
 * and skipped as an undecodable one is.
 */
#ifndef BFEED_DATASET_H
#define BFEED_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "npy_source.h"
#include "storage.h"
#include "textset.h"
#include "wordvec.h"

/* A dataset as configured: its name and key = value settings (kind, path,
 * and the kind's options), from a [dataset NAME] section or a --dataset
 * flag. `where` names the origin for messages ("bfeedd.conf:12"). */
typedef struct dataset_kv {
  const char *key, *value, *where;
} dataset_kv;

/* A kind's operations (dataset_kind.h). */
typedef struct dataset_kind dataset_kind;
/* The default kind, kind = image (tests that build a dataset by hand name it). */
extern const dataset_kind kind_folder;
#define DATASET_IMAGE (&kind_folder)

/* The tensors a kind's batches hold besides label and index. */
enum { DATASET_TENSOR_IMAGE = 1, DATASET_TENSOR_TEXT = 2, DATASET_TENSOR_FEATURES = 4 };

typedef struct dataset {
  int refs; /* atomic: held by the server's table and by each stream */
  const dataset_kind *kind;
  void *state;        /* the kind's own (shards and their indexing threads...) */
  unsigned tensors;   /* DATASET_TENSOR_*, set by the kind when it loads */
  char *name;
  char *root;         /* the path it was loaded from */
  size_t nsamples;
  char **paths;       /* image, list, manifest: nsamples image files; NULL otherwise */
  storage_stamp *stamps; /* with paths: what each file was when listed (NULL: not checked) */
  int32_t *labels;    /* nsamples class indices; NULL for npy without labels */
  size_t nclasses;
  char **classes;     /* nclasses names, or NULL (npy) */
  unsigned char *bad; /* kinds with images: nsamples flags, accessed atomically */
  struct skips *skips; /* the samples found bad, with their reasons (skips.h); NULL for a failed load */
  /* text, manifest */
  wordvec vectors;
  textset text;
  uint32_t len_cap;   /* tokens per sample served when a stream does not say (0: all) */
  /* npy; tfrecord with features_key (rows in memory, no file) */
  npysrc features;
  /* Kinds indexed in the background (tfrecord, tar) fill nsamples, labels,
   * nclasses, bad, features and the features tensor bit from their
   * indexing thread: they may be read only once dataset_ready() has
   * returned 0. */
  uint64_t fingerprint; /* of what decides its bytes, at load (fingerprint.h); 0: unknown */
  /* npy features, text vectors: values that are NaN or infinite as served
   * (bf16), counted at load; they are served as they are. */
  uint64_t nonfinite;
  int changed;          /* atomic: 0; 1 while changed_why is written; 2: files changed */
  char changed_why[600]; /* the first file found changed: "PATH changed since ..." */
} dataset;

static inline int dataset_has_images(const dataset *d) { return (d->tensors & DATASET_TENSOR_IMAGE) != 0; }
/* npy, and tfrecord with features_key: a "features" tensor. */
static inline int dataset_has_features(const dataset *d) { return (d->tensors & DATASET_TENSOR_FEATURES) != 0; }
static inline int dataset_has_text(const dataset *d) { return (d->tensors & DATASET_TENSOR_TEXT) != 0; }
/* The kind's name: "image", "list", "text", ... */
const char *dataset_kind_name(const dataset *d);
/* 1 if the kind of that name (NULL: the default, image) takes key: main.c
 * passes the daemon's cache_dir to the kinds that keep caches. */
int dataset_kind_takes_key(const char *kind, const char *key);
/* 1 for kinds that finish loading in the background (tfrecord, tar): they
 * log their own "N samples" line when done and report indexing counters. */
int dataset_background(const dataset *d);

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

/* Read sample i's image bytes into *buf (grown as needed, *cap its size).
 * Files larger than DATASET_MAX_FILE are refused. 0; BFEED_EIO or
 * BFEED_ENOMEM for a failure of the moment (EMFILE, ENFILE, ENOMEM, EIO,
 * EAGAIN: worth trying again); BFEED_EDATASET, BFEED_ECHECKSUM or
 * BFEED_ETOOBIG for one of the file (missing, unreadable, not a regular
 * file, too big, a record gone bad). The message names the sample as
 * dataset_sample_name does. */
#define DATASET_MAX_FILE (256u << 20)
/* Sample i will be read soon: a kind whose reads wait on a network starts
 * fetching it (any thread; a hint, no error). */
void dataset_prefetch(const dataset *d, size_t i);
int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen);

/* 0 when d can serve; BFEED_EBUSY while its shards are being indexed or
 * after its files changed (until the reload replaces it), BFEED_EDATASET
 * when it could not be loaded or indexing failed, with the reason in err. */
int dataset_ready(const dataset *d, char *err, size_t errlen);
/* Block until d can serve or has failed (--check-config, tests); then as
 * dataset_ready. */
int dataset_wait(dataset *d, char *err, size_t errlen);
/* Background kinds: records or members skipped when the shards were
 * indexed (0 for other kinds, and until the index is complete). */
uint64_t dataset_index_skipped(const dataset *d);
/* What to call sample i in a log line: its file, or shard and offset. */
void dataset_sample_name(const dataset *d, size_t i, char *out, size_t n);

/* Returns 1 the first time sample i is marked bad, 0 after. */
int dataset_mark_bad(dataset *d, size_t i);

/* Mark d's files changed since it loaded (any thread; the first reason
 * stays): why names the file, "PATH changed since ...". */
void dataset_mark_changed(const dataset *d, const char *why);
/* 1 when d's files changed, with "dataset NAME: PATH changed since ..."
 * in why (may be NULL). */
int dataset_changed(const dataset *d, char *why, size_t cap);
/* Before each batch: BFEED_EDATASET, err naming the changed file, when
 * d's files changed (marked by a read, or found now by the kind's check of
 * the files it keeps open); 0 otherwise. */
int dataset_check(const dataset *d, char *err, size_t errlen);

/* A dataset that could not be loaded, in the server's table in its place:
 * OPEN on it is answered with its load error (dataset_ready: code, err);
 * a reload tries it again. NULL out of memory. */
dataset *dataset_failed(const char *name, int code, const char *err);
/* 1 for such a stand-in. */
int dataset_is_failed(const dataset *d);

#endif
