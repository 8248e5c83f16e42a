/* tfrecord.c -- TFRecord framing and CRCs, shard indexing, sample reads. */
#include "tfrecord.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "crc32c.h"
#include "wire.h"

/* n bytes at off. A read that fails or comes up short ends the frame
 * (BFEED_EIO), as a truncated record does: nothing after it can be found. */
static int tfrecord_pread(storage_file *f, void *dst, size_t n, uint64_t off, char *err, size_t errlen) {
  char why[200];
  int rc = storage_pread_all(f, dst, n, off, why, sizeof why);
  return rc < 0 ? (snprintf(err, errlen, "read failed: %s", why), BFEED_EIO) : 0;
}

/* Check a record header at off: its CRC and that its data and footer fit
 * in the file. *n gets the data length. */
static int tfrecord_header(const uint8_t *h, uint64_t off, uint64_t fsize, uint64_t *n, char *err, size_t errlen) {
  if (crc32c_mask(crc32c_update(0, h, 8)) != wire_get32(h + 8))
    return snprintf(err, errlen, "bad length CRC-32C"), BFEED_EDATASET;
  *n = (uint64_t)wire_get32(h) | (uint64_t)wire_get32(h + 4) << 32;
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
  if (crc32c_mask(crc32c_update(0, p, n)) != wire_get32(p + n))
    return snprintf(err, errlen, "bad data CRC-32C"), BFEED_ECHECKSUM;
  return 0;
}

int tfrecord_read(storage_file *f, uint64_t off, uint64_t fsize, uint8_t **buf, size_t *cap, uint64_t *len, char *err,
                  size_t errlen) {
  uint8_t h[TFRECORD_HEADER];
  if (off > fsize || fsize - off < TFRECORD_HEADER)
    return snprintf(err, errlen, "truncated record header (%llu bytes left in the file)",
                    (unsigned long long)(off > fsize ? 0 : fsize - off)),
           BFEED_EDATASET;
  int rc = tfrecord_pread(f, h, sizeof h, off, err, errlen);
  if (rc < 0) return rc;
  if ((rc = tfrecord_header(h, off, fsize, len, err, errlen)) < 0) return rc;
  if (tfrecord_grow(buf, cap, *len + TFRECORD_FOOTER, err, errlen) < 0) return BFEED_ENOMEM;
  if ((rc = tfrecord_pread(f, *buf, *len + TFRECORD_FOOTER, off + TFRECORD_HEADER, err, errlen)) < 0) return rc;
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
  storage_file file, *f = &file;
  if (storage_open(path, f, err, errlen) < 0) return BFEED_EIO;
  uint64_t fsize = storage_size(f), off = 0;
  uint8_t magic[2];
  char why[200];
  if (fsize >= 2 && tfrecord_pread(f, magic, 2, 0, why, sizeof why) == 0 && magic[0] == 0x1f && magic[1] == 0x8b) {
    storage_close(f);
    return snprintf(err, errlen,
                    "%s is GZIP-compressed: bfeed reads records at random offsets, which compressed "
                    "TFRecords do not allow; decompress the shards (gunzip) or write them uncompressed",
                    path),
           BFEED_EDATASET;
  }
  uint8_t *buf = NULL;
  size_t cap = 0;
  tf_example_keys index_keys = {.label = keys->label, .features = keys->features};
  /* The image must be there and be bytes; its decoding is checked when
   * served, as for files of a folder. */
  index_keys.image = keys->image;
  while (off < fsize && !shard_index_cancelled(ctx)) {
    uint64_t n = 0;
    int rc = tfrecord_read(f, off, fsize, &buf, &cap, &n, why, sizeof why);
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
        storage_close(f);
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
  storage_close(f);
  return 0;
}

int tfrecord_sample_at(storage_file *f, const shard_index_entry *e, const tf_example_keys *keys, uint8_t **buf,
                       size_t *cap, size_t *len, char *err, size_t errlen) {
  /* The index knows the length: header, data and footer in one read. */
  uint64_t fsize = storage_size(f), whole = TFRECORD_HEADER + (uint64_t)e->len + TFRECORD_FOOTER, n = 0;
  int rc = BFEED_EDATASET;
  if (e->off > fsize || fsize - e->off < whole)
    snprintf(err, errlen, "the shard is shorter than when it was indexed");
  else if ((rc = tfrecord_grow(buf, cap, whole, err, errlen)) == 0)
    rc = tfrecord_pread(f, *buf, whole, e->off, err, errlen);
  if (rc == 0) rc = tfrecord_header(*buf, e->off, fsize, &n, err, errlen);
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

int tfrecord_sample(const char *path, const shard_index_entry *e, const tf_example_keys *keys, uint8_t **buf,
                    size_t *cap, size_t *len, char *err, size_t errlen) {
  storage_file f;
  int rc = storage_open(path, &f, err, errlen);
  if (rc < 0) return rc;
  rc = tfrecord_sample_at(&f, e, keys, buf, cap, len, err, errlen);
  storage_close(&f);
  return rc;
}
