/*
 * npy.h -- write one array as a NumPy .npy file (format version 1.0).
 *
 * What `bfeed fetch` saves batches as, so that anyone can look at them with
 * numpy.load() and nothing else. The header is padded so the data starts at
 * a multiple of 64 bytes, which lets numpy.load(..., mmap_mode="r") hand out
 * aligned arrays.
 *
 * dtypes are bfeed_dtype values (bfeed.h). numpy has no bfloat16, so BF16 is
 * written as '<u2' holding the bit patterns; widen with
 *     (a.astype(np.uint32) << 16).view(np.float32)
 * to get the float32 values back exactly.
 */
#ifndef BFEED_NPY_H
#define BFEED_NPY_H

#include <stddef.h>
#include <stdint.h>

/* numpy's own limit on dimensions (NPY_MAXDIMS). */
#define NPY_MAX_DIMS 32

/* The numpy descr for dtype ("<u2", "<f4", "<i4", "<i8", "|u1"), or NULL
 * for a dtype this writer does not know. */
const char *npy_descr(int dtype);

/*
 * Write path as an .npy file holding shape[0..ndim) elements of dtype, in C
 * (row-major) order, taken from data. data must be little-endian, as a
 * bfeed_tensor's is: its bytes are written as they are. ndim 0 writes a
 * scalar (one element); a zero in shape writes an empty array, and data may
 * then be NULL.
 *
 * Returns 0, or a negative BFEED_E* code (BFEED_EINVAL for bad arguments,
 * BFEED_EIO when the file cannot be written) with a message naming the file
 * in err[0..errlen) (err may be NULL). A file that failed half-way is
 * removed, so a truncated .npy is never left behind.
 */
int npy_write(const char *path, int dtype, int ndim, const int64_t *shape,
              const void *data, char *err, size_t errlen);

#endif
