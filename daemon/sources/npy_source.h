/*
 * npy_source.h -- precomputed features in NumPy .npy files, through storage.h.
 * Called by kind_npy.c (kind npy); batch_text.c reads the rows.
 *
 * The file is mapped to check it, then read row by row with storage_pread:
 * a mapping of a file rewritten in place would fault (SIGBUS) in the
 * worker that touches a page past its new end, where a read just comes up
 * short.
 *
 * Features: little-endian float32 ('<f4'), C order, shape [N, D] or
 * [N, T, D]. Labels (optional): '<i4' or '<i8', shape [N], values in
 * 0..2^31-1. Anything else -- other dtypes, big-endian, Fortran order,
 * other ranks, a file whose size disagrees with its header -- is refused
 * with a message naming the file and what was found. Versions 1.0, 2.0
 * and 3.0 of the format are read.
 */
#ifndef BFEED_NPY_SOURCE_H
#define BFEED_NPY_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "storage.h"

#define NPY_SOURCE_MAX_DIMS 3

typedef struct npy_source_header {
  char descr[8];        /* "<f4", "<i4", "<i8" */
  int fortran_order;
  int ndim;
  uint64_t shape[NPY_SOURCE_MAX_DIMS];
  size_t data_offset;   /* where the array data starts */
  uint64_t data_bytes;  /* product of the shape x item size */
} npy_source_header;

/* Parse and check the header of a whole .npy file p[0..n) (the data must
 * be exactly as long as the header says). Accepts any descr and rank up to
 * NPY_SOURCE_MAX_DIMS; the callers decide what they serve. 0, or BFEED_EDATASET with a
 * message naming `name` and the byte offset of the problem. */
int npy_source_parse_header(const uint8_t *p, size_t n, const char *name, npy_source_header *h, char *err, size_t errlen);

typedef struct npysrc {
  storage_file file;  /* open on the file while path is set */
  char *path;         /* for messages; NULL when not loaded */
  npy_source_header h;
  uint64_t nrows, row_floats;
  const float *rows;  /* rows held in memory (tfrecord features_key); NULL: read from file */
  /* Values NaN or infinite as served (their bf16 rounding), counted when
   * the file was checked, and the row of the first. */
  uint64_t nonfinite, first_nonfinite_row;
} npysrc;

/* Map a features file and check it ('<f4', 2 or 3 dimensions), counting
 * its values that are NaN or infinite as served. */
int npy_source_open_features(npysrc *s, const char *path, char *err, size_t errlen);
/* Read a labels file ('<i4' or '<i8', [n]) into a new int32 array. */
int npy_source_read_labels(const char *path, uint64_t n, int32_t **labels, size_t *nclasses, char *err, size_t errlen);
/* Row i (row_floats values) into out, from memory or the file. 0, or BFEED_EDATASET with err when
 * the file no longer holds it (changed since it was loaded). */
int npy_source_read_row(const npysrc *s, uint64_t i, float *out, char *err, size_t errlen);
/* 0 while the open file is still the one at s->path (its stamp); else
 * BFEED_EDATASET, "PATH changed since the dataset was loaded ...". */
int npy_source_check(const npysrc *s, char *err, size_t errlen);
void npy_source_close(npysrc *s);

#endif
