/*
 * npy.c -- NumPy .npy writer, format 1.0 (numpy/lib/format.py describes it):
 *
 *   "\x93NUMPY" 0x01 0x00 <u16 LE header length> <header> <data>
 *
 * where the header is a Python dict literal padded with spaces and ended by
 * '\n' so that the data begins at a multiple of 64 bytes.
 */
#include "cli_util.h"
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bfeed.h"

#define NPY_ALIGN 64
#define NPY_PREAMBLE 10 /* magic (6), version (2), header length (2) */
/* Format 1.0 stores the header length in 16 bits. Even 32 dimensions of
 * 19-digit sizes fit in well under this. */
#define NPY_HEADER_MAX 1024


const char *npy_descr(int dtype) {
  switch (dtype) {
  case BFEED_DTYPE_BF16: return "<u2";
  case BFEED_DTYPE_F32: return "<f4";
  case BFEED_DTYPE_I32: return "<i4";
  case BFEED_DTYPE_I64: return "<i8";
  case BFEED_DTYPE_U8: return "|u1";
  default: return NULL;
  }
}

/* Element size from the descr's digit: keeps the two tables from drifting. */
static size_t npy_elem_size(const char *descr) { return (size_t)(descr[2] - '0'); }

/* Build the padded header (without the 10-byte preamble) into buf.
 * Returns its length, or 0 if it does not fit. */
static size_t npy_header(char *buf, size_t cap, const char *descr, int ndim,
                         const int64_t *shape) {
  size_t n = 0;
  int w = snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  if (w < 0 || (size_t)w >= cap) return 0;
  n = (size_t)w;
  for (int i = 0; i < ndim; i++) {
    /* Python writes a 1-tuple as "(5,)"; "(5)" would be an int. */
    const char *sep = ndim == 1 ? "," : (i + 1 < ndim ? ", " : "");
    w = snprintf(buf + n, cap - n, "%lld%s", (long long)shape[i], sep);
    if (w < 0 || (size_t)w >= cap - n) return 0;
    n += (size_t)w;
  }
  w = snprintf(buf + n, cap - n, "), }");
  if (w < 0 || (size_t)w >= cap - n) return 0;
  n += (size_t)w;

  /* Pad with spaces up to the alignment, counting the final '\n'. */
  size_t total = NPY_PREAMBLE + n + 1;
  size_t padded = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  size_t len = padded - NPY_PREAMBLE;
  if (len > cap) return 0;
  memset(buf + n, ' ', len - 1 - n);
  buf[len - 1] = '\n';
  return len;
}

int npy_write(const char *path, int dtype, int ndim, const int64_t *shape,
              const void *data, char *err, size_t errlen) {
  const char *descr = npy_descr(dtype);
  if (!path) return cli_fail(err, errlen, BFEED_EINVAL, "npy: no path given");
  if (!descr)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: unknown dtype %d", path, dtype);
  if (ndim < 0 || ndim > NPY_MAX_DIMS)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: ndim %d is outside 0..%d", path,
                    ndim, NPY_MAX_DIMS);
  if (ndim > 0 && !shape) return cli_fail(err, errlen, BFEED_EINVAL, "%s: no shape given", path);

  size_t esize = npy_elem_size(descr);
  size_t count = 1;
  int empty = 0;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s: shape[%d] = %lld is negative", path, i,
                      (long long)shape[i]);
    if (shape[i] == 0) empty = 1;
  }
  /* Multiply only when no dimension is zero, so that e.g. (0, huge, huge)
   * is a valid empty array rather than an overflow. */
  for (int i = 0; i < ndim && !empty; i++) {
    if ((uint64_t)shape[i] > SIZE_MAX / esize / count)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s: shape is too large for memory", path);
    count *= (size_t)shape[i];
  }
  size_t nbytes = empty ? 0 : count * esize;
  if (nbytes && !data)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: no data for %zu bytes", path, nbytes);

  unsigned char pre[NPY_PREAMBLE] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  char hdr[NPY_HEADER_MAX];
  size_t hlen = npy_header(hdr, sizeof hdr, descr, ndim, shape);
  if (hlen == 0) return cli_fail(err, errlen, BFEED_EINVAL, "%s: header too long", path);
  pre[8] = (unsigned char)(hlen & 0xff);
  pre[9] = (unsigned char)(hlen >> 8);

  FILE *f = fopen(path, "wb");
  if (!f) return cli_fail(err, errlen, BFEED_EIO, "%s: cannot create: %s", path, strerror(errno));
  /* Only a regular file of ours is removed on failure: the path may be a
   * device such as /dev/stdout, which must survive a failed write. */
  struct stat st;
  int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
  int ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(hdr, 1, hlen, f) == hlen &&
           (nbytes == 0 || fwrite(data, 1, nbytes, f) == nbytes);
  int write_errno = errno;
  /* fclose flushes: a full disk often shows up only here. */
  if (fclose(f) != 0 && ok) {
    ok = 0;
    write_errno = errno;
  }
  if (!ok) {
    if (regular) remove(path);
    return cli_fail(err, errlen, BFEED_EIO, "%s: write failed: %s", path, strerror(write_errno));
  }
  return 0;
}
