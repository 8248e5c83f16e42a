/*
 * dataset_impl.h -- what the loaders of the dataset kinds share: settings and the text kinds.
 * Called by dataset.c (image, npy, the dispatch) and dataset_text.c (text, manifest).
 */
#ifndef BFEED_DATASET_IMPL_H
#define BFEED_DATASET_IMPL_H

#include "dataset.h"
#include "strlist.h"

typedef struct dataset_keys {
  const char *name, *kind;
  const dataset_kv *kv;
  size_t nkv;
} dataset_keys;

/* The setting called key, or NULL. */
const dataset_kv *dataset_key(const dataset_keys *k, const char *key);
/* Refuse a key outside `allowed` (NULL-terminated; kind and path always are). */
int dataset_keys_check(const dataset_keys *k, const char *const *allowed, char *err, size_t errlen);
/* Typed values, *out = def when the key is absent; BFEED_EDATASET with a message
 * naming the setting's origin when the value is malformed. */
int dataset_key_bool(const dataset_keys *k, const char *key, int def, int *out, char *err, size_t errlen);
int dataset_key_u64(const dataset_keys *k, const char *key, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out,
                    char *err, size_t errlen);
/* "KEY=VALUE (origin)" style failure for a setting. */
int dataset_key_fail(const dataset_kv *kv, const char *name, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The keys the text, manifest, tfrecord and tar kinds take besides kind
 * and path (NULL-terminated); dataset_open checks them before loading. */
extern const char *const dataset_text_keys[];
extern const char *const dataset_manifest_keys[];
extern const char *const dataset_tfrecord_keys[];
extern const char *const dataset_tar_keys[];

/* The kinds with text (d->name, d->root set; the rest is theirs to fill). */
/* Log, then free, the entries a folder walk left out (dataset.c). */
void dataset_log_dropped(const dataset *d, strlist *dropped, const logger *log);
int dataset_text_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen);
int dataset_text_load_manifest(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen);

#endif
