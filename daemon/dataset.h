/*
 * dataset.h -- an image dataset laid out as torchvision's ImageFolder.
 *
 * ROOT/CLASS/FILE.jpg (or deeper below CLASS): one sub-folder per class, labels are the indices of
 * the sorted folder names, samples are ordered by (class, path) so that the
 * sample index means the same thing to bfeedd and to torchvision. Files are
 * listed once, at load; they are read when a batch needs them. A dataset is
 * immutable after dataset_load and shared read-only by all threads, except
 * for the `bad` flags, which are atomics (a file found undecodable once is
 * logged at warning level once, then quietly).
 */
#ifndef BFEED_DATASET_H
#define BFEED_DATASET_H

#include <stddef.h>
#include <stdint.h>

/* A dataset as configured: its name and key = value settings (kind, path,
 * and the kind's options), from a [dataset NAME] section or a --dataset
 * flag. `where` names the origin for messages ("bfeedd.conf:12"). */
typedef struct dataset_kv {
  const char *key, *value, *where;
} dataset_kv;

typedef struct dataset {
  int refs; /* atomic: held by the server's table and by each stream */
  char *name;
  char *root;
  size_t nsamples;
  char **paths;      /* nsamples absolute paths */
  int32_t *labels;   /* nsamples class indices */
  size_t nclasses;
  char **classes;    /* sorted class folder names */
  unsigned char *bad; /* nsamples flags, accessed atomically */
} dataset;

/* Load a dataset from its settings (kind = image, the default: path = an
 * ImageFolder). Fails with a message naming the setting, folder or file:
 * unknown key, missing path, a folder that cannot be read, has no class
 * folders, or holds no JPEG. The result has one reference. */
dataset *dataset_load(const char *name, const dataset_kv *kv, size_t nkv, char *err, size_t errlen);
dataset *dataset_ref(dataset *d);
void dataset_unref(dataset *d);

/* Read sample i's file into *buf (grown as needed, *cap its size). Files
 * larger than DATASET_MAX_FILE are refused. */
#define DATASET_MAX_FILE (256u << 20)
int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen);

/* Returns 1 the first time sample i is marked bad, 0 after. */
int dataset_mark_bad(dataset *d, size_t i);

#endif
