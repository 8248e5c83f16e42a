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

typedef struct dataset {
  char *name;
  char *root;
  size_t nsamples;
  char **paths;      /* nsamples absolute paths */
  int32_t *labels;   /* nsamples class indices */
  size_t nclasses;
  char **classes;    /* sorted class folder names */
  unsigned char *bad; /* nsamples flags, accessed atomically */
} dataset;

/* Scan root. Fails with a message naming the folder when it cannot be read,
 * has no class folders, or holds no JPEG at all. */
int dataset_load(dataset *d, const char *name, const char *root, char *err, size_t errlen);
void dataset_free(dataset *d);

/* Read sample i's file into *buf (grown as needed, *cap its size). Files
 * larger than DATASET_MAX_FILE are refused. */
#define DATASET_MAX_FILE (256u << 20)
int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen);

/* Returns 1 the first time sample i is marked bad, 0 after. */
int dataset_mark_bad(dataset *d, size_t i);

#endif
