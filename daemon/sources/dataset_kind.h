/*
 * dataset_kind.h -- what a dataset kind is: the operations dataset.c calls
 * on it, and the helpers every kind's loader uses for its settings.
 * Implemented by one kind_*.c file per kind (dataset.c's table lists them);
 * used by dataset.c and fingerprint.c. The rest of the daemon sees only
 * dataset.h.
 *
 * A kind's load fills the common fields of struct dataset (nsamples,
 * labels, classes, paths, tensors, ...) and may keep state of its own in
 * d->state; dataset.c frees the common fields, the kind's free its own.
 */
#ifndef BFEED_DATASET_KIND_H
#define BFEED_DATASET_KIND_H

#include "dataset.h"
#include "strlist.h"

struct fingerprint;

/* What a setting is to the fingerprint (PROTOCOL.md "Fingerprint"). */
typedef enum dataset_key_role {
  DATASET_KEY_VALUE = 0, /* changes what is served: hashed as KEY=VALUE */
  DATASET_KEY_FILE,      /* names a file that changes what is served: hashed by its version */
  DATASET_KEY_PLACE      /* only where files or caches are, or memory to use: not hashed */
} dataset_key_role;

/* A key a kind takes besides kind and path (which every kind takes). */
typedef struct dataset_key_spec {
  const char *name;
  dataset_key_role role;
} dataset_key_spec;

/* The settings being loaded, for the helpers below. */
typedef struct dataset_keys {
  const char *name, *kind;
  const dataset_kv *kv;
  size_t nkv;
} dataset_keys;

struct dataset_kind {
  const char *name;             /* the kind= value */
  const dataset_key_spec *keys; /* the keys it takes, ended by {NULL}; checked before load */
  /* Fill d from its settings (d->name, d->root set; the keys checked). 0,
   * or a negative code with a message naming the setting, file and line. */
  int (*load)(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen);
  /* Sample i's image bytes (dataset_read); NULL for kinds without images. */
  int (*read)(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err, size_t errlen);
  /* A hint before a batch reads sample i (its bytes are fetched ahead,
   * remote shards); NULL: no use. */
  void (*prefetch)(const dataset *d, size_t i);
  /* Sample i for log lines; NULL: the dataset's path. */
  void (*sample_name)(const dataset *d, size_t i, char *out, size_t n);
  /* Kinds that load in the background: dataset_ready, dataset_wait and
   * dataset_index_skipped; NULL for kinds ready once load returns. */
  int (*ready)(const dataset *d, char *err, size_t errlen);
  int (*wait)(dataset *d, char *err, size_t errlen);
  uint64_t (*index_skipped)(const dataset *d);
  /* The dataset's files for the fingerprint, in sample order, each with
   * fingerprint_file (fingerprint.h). */
  void (*fingerprint)(const dataset *d, struct fingerprint *fp);
  /* Before each batch (dataset_check): 0 while the files the kind keeps
   * open (npy's features) are still those loaded, else BFEED_EDATASET with
   * "PATH changed since the dataset was loaded ..."; NULL: nothing to check
   * (each read checks its own file, or all is in memory). */
  int (*check)(const dataset *d, char *err, size_t errlen);
  /* Free d->state (first, before the common fields); NULL: none. */
  void (*free)(dataset *d);
};

/* The setting called key, or NULL. */
const dataset_kv *dataset_key(const dataset_keys *k, const char *key);
/* The role of key for kind (kind and path: DATASET_KEY_PLACE). */
dataset_key_role dataset_key_role_of(const dataset_kind *kind, const char *key);
/* Typed values, *out = def when the key is absent; BFEED_EDATASET with a message
 * naming the setting's origin when the value is malformed. */
int dataset_key_bool(const dataset_keys *k, const char *key, int def, int *out, char *err, size_t errlen);
int dataset_key_u64(const dataset_keys *k, const char *key, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out,
                    char *err, size_t errlen);
/* A copy of the value (def when absent); NULL for an empty one. BFEED_ENOMEM. */
int dataset_key_string(const dataset_keys *k, const char *key, const char *def, char **out);
/* "KEY=VALUE (origin)" style failure for a setting. */
int dataset_key_fail(const dataset_kv *kv, const char *name, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* "dataset NAME: out of memory", BFEED_ENOMEM. */
int dataset_oom(const dataset *d, char *err, size_t errlen);

/* For the kinds whose samples are image files named in d->paths (image,
 * list, manifest): */
/* read: the file, through storage.h, checked against d->stamps[i] (a file
 * changed or gone marks d changed: dataset_mark_changed). */
int dataset_files_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err, size_t errlen);
/* sample_name: the file's path. */
void dataset_files_name(const dataset *d, size_t i, char *out, size_t n);
/* Append the image that file:line names (image[0..len), relative to dir
 * unless absolute) to paths, and its stamp to stamps; it must be a regular
 * file now. BFEED_EDATASET with "FILE:LINE: image PATH: why", or
 * BFEED_ENOMEM. */
int dataset_files_add(const dataset *d, strlist *paths, storage_stamps *stamps, const char *dir, const char *image,
                      size_t len, const char *file, uint64_t line, char *err, size_t errlen);
/* Warn once, at load, of n values (npy rows, table words) that are NaN or
 * infinite as served, naming the file and the first one (`first`: "row
 * 12", "word 'x'"), and keep the count for the statistics. */
void dataset_note_nonfinite(dataset *d, const char *file, uint64_t n, const char *first, const logger *log);
/* Log, then free, the entries a folder walk left out. */
void dataset_log_dropped(const dataset *d, strlist *dropped, const logger *log);

#endif
