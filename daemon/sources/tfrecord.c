/* tfrecord.c -- TFRecord framing and CRCs, shard indexing, sample reads. */
#include "tfrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfeed_types.h"
#include "crc32c.h"

static uint32_t tfrecord_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int tfrecord_pread(int fd, void *dst, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, (uint8_t *)dst + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return BFEED_EIO;
    got += (size_t)r;
  }
  return 0;
}

/* Check a record header at off: its CRC and that its data and footer fit
 * in the file. *n gets the data length. */
static int tfrecord_header(const uint8_t *h, uint64_t off, uint64_t fsize, uint64_t *n, char *err, size_t errlen) {
  if (crc32c_mask(crc32c_update(0, h, 8)) != tfrecord_le32(h + 8))
    return snprintf(err, errlen, "bad length CRC-32C"), BFEED_EDATASET;
  *n = (uint64_t)tfrecord_le32(h) | (uint64_t)tfrecord_le32(h + 4) << 32;
  if (*n + TFRECORD_FOOTER > fsize - off - TFRECORD_HEADER)
    return snprintf(err, errlen, "truncated record: %llu data bytes announced, %llu left in the file",
                    (unsigned long long)*n, (unsigned long long)(fsize - off - TFRECORD_HEADER)),
           BFEED_EDATASET;
  if (*n > TFRECORD_MAX_RECORD)
    return snprintf(err, errlen, "record of %llu bytes, over the %u-byte limit", (unsigned long long)*n,
                    TFRECORD_MAX_RECORD),
           BFEED_ETOOBIG;
  return 0;
}

static int tfrecord_grow(uint8_t **buf, size_t *cap, uint64_t need, char *err, size_t errlen) {
  if (need <= *cap) return 0;
  uint8_t *b = realloc(*buf, need);
  if (!b) return snprintf(err, errlen, "out of memory for a %llu-byte record", (unsigned long long)need), BFEED_ENOMEM;
  *buf = b;
  *cap = need;
  return 0;
}

static int tfrecord_check_data(const uint8_t *p, uint64_t n, char *err, size_t errlen) {
  if (crc32c_mask(crc32c_update(0, p, n)) != tfrecord_le32(p + n))
    return snprintf(err, errlen, "bad data CRC-32C"), BFEED_ECHECKSUM;
  return 0;
}

int tfrecord_read(int fd, uint64_t off, uint64_t fsize, uint8_t **buf, size_t *cap, uint64_t *len, char *err,
                  size_t errlen) {
  uint8_t h[TFRECORD_HEADER];
  if (off > fsize || fsize - off < TFRECORD_HEADER)
    return snprintf(err, errlen, "truncated record header (%llu bytes left in the file)",
                    (unsigned long long)(off > fsize ? 0 : fsize - off)),
           BFEED_EDATASET;
  if (tfrecord_pread(fd, h, sizeof h, off) < 0)
    return snprintf(err, errlen, "read failed: %s", strerror(errno)), BFEED_EIO;
  int rc = tfrecord_header(h, off, fsize, len, err, errlen);
  if (rc < 0) return rc;
  if (tfrecord_grow(buf, cap, *len + TFRECORD_FOOTER, err, errlen) < 0) return BFEED_ENOMEM;
  if (tfrecord_pread(fd, *buf, *len + TFRECORD_FOOTER, off + TFRECORD_HEADER) < 0)
    return snprintf(err, errlen, "read failed: %s", errno ? strerror(errno) : "file shrank"), BFEED_EIO;
  return tfrecord_check_data(*buf, *len, err, errlen);
}

static void tfrecord_skip(const shard_index_ctx *ctx, shard_index *x, const char *path, uint64_t off,
                          const char *why, const char *then) {
  x->skipped++;
  log_warn(ctx->log, "dataset %s: %s: record at byte offset %llu: %s (%s)", ctx->dataset, path,
           (unsigned long long)off, why, then);
}

int tfrecord_index(const char *path, const tf_example_keys *keys, const shard_index_ctx *ctx, shard_index *x,
                   char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return BFEED_EIO;
  }
  uint64_t fsize = (uint64_t)st.st_size, off = 0;
  uint8_t magic[2];
  if (fsize >= 2 && tfrecord_pread(fd, magic, 2, 0) == 0 && magic[0] == 0x1f && magic[1] == 0x8b) {
    close(fd);
    return snprintf(err, errlen,
                    "%s is GZIP-compressed: bfeed reads records at random offsets, which compressed "
                    "TFRecords do not allow; decompress the shards (gunzip) or write them uncompressed",
                    path),
           BFEED_EDATASET;
  }
  uint8_t *buf = NULL;
  size_t cap = 0;
  char why[200];
  tf_example_keys index_keys = {.label = keys->label, .features = keys->features};
  /* The image must be there and be bytes; its decoding is checked when
   * served, as for files of a folder. */
  index_keys.image = keys->image;
  while (off < fsize && !shard_index_cancelled(ctx)) {
    uint64_t n = 0;
    int rc = tfrecord_read(fd, off, fsize, &buf, &cap, &n, why, sizeof why);
    if (rc == BFEED_EDATASET || rc == BFEED_EIO) {
      if (off == 0 && strstr(why, "CRC")) /* at the very start: probably not TFRecord at all */
        snprintf(why + strlen(why), sizeof why - strlen(why), ": not a TFRecord file, or ZLIB-compressed");
      tfrecord_skip(ctx, x, path, off, why, "the rest of the shard is unreadable");
      break;
    }
    uint64_t next = off + TFRECORD_HEADER + n + TFRECORD_FOOTER;
    tf_example ex;
    if (rc == 0 && tf_example_parse(buf, n, &index_keys, &ex, why, sizeof why) == 0) {
      uint32_t dim = (uint32_t)ex.nfeatures;
      if (keys->features && (dim == 0 || (x->n && dim != x->dim))) {
        snprintf(why, sizeof why, "feature '%s' holds %u floats, the shard's first record %u", keys->features,
                 dim, x->n ? x->dim : 1);
        rc = BFEED_EDATASET;
      } else if (shard_index_add(x, off, (uint32_t)n, keys->label ? ex.label : SHARD_INDEX_NO_LABEL,
                                 ex.features, dim) < 0) {
        tf_example_free(&ex);
        free(buf);
        close(fd);
        return snprintf(err, errlen, "%s: out of memory indexing", path), BFEED_ENOMEM;
      }
      tf_example_free(&ex);
    } else if (rc == 0) {
      rc = BFEED_EDATASET;
    }
    if (rc != 0) tfrecord_skip(ctx, x, path, off, why, "skipped");
    off = next;
  }
  free(buf);
  close(fd);
  return 0;
}

int tfrecord_sample(const char *path, const shard_index_entry *e, const tf_example_keys *keys, uint8_t **buf,
                    size_t *cap, size_t *len, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return BFEED_EIO;
  }
  /* The index knows the length: header, data and footer in one read. */
  uint64_t fsize = (uint64_t)st.st_size, whole = TFRECORD_HEADER + (uint64_t)e->len + TFRECORD_FOOTER, n = 0;
  int rc = BFEED_EDATASET;
  if (e->off > fsize || fsize - e->off < whole)
    snprintf(err, errlen, "the shard is shorter than when it was indexed");
  else if ((rc = tfrecord_grow(buf, cap, whole, err, errlen)) == 0 && tfrecord_pread(fd, *buf, whole, e->off) < 0)
    rc = BFEED_EIO, snprintf(err, errlen, "read failed: %s", strerror(errno));
  else if (rc == 0)
    rc = tfrecord_header(*buf, e->off, fsize, &n, err, errlen);
  close(fd);
  if (rc == 0 && n != e->len) {
    snprintf(err, errlen, "record is %llu bytes, was %u when indexed", (unsigned long long)n, e->len);
    rc = BFEED_EDATASET;
  }
  if (rc == 0) rc = tfrecord_check_data(*buf + TFRECORD_HEADER, n, err, errlen);
  tf_example ex;
  tf_example_keys image_only = {.image = keys->image};
  if (rc == 0 && (rc = tf_example_parse(*buf + TFRECORD_HEADER, n, &image_only, &ex, err, errlen)) == 0) {
    /* The parsed message owns a copy of the image bytes; the record in
     * *buf is no longer needed and is longer. The caller names the shard
     * and offset in its messages (dataset_sample_name). */
    memcpy(*buf, ex.image, ex.image_len);
    *len = ex.image_len;
    tf_example_free(&ex);
  }
  return rc;
}
