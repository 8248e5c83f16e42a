/* make_demo_shards.c -- TFRecord (with a minimal Example encoder) and tar writers for the demo. */
#include "make_demo_shards.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed.h"
#include "cli_util.h"

struct make_demo_shards {
  int tar;
  char dir[PATH_MAX], split[32];
  int total, nshards, added, shard; /* shard: the open one, -1 before the first */
  char path[PATH_MAX], tmp[PATH_MAX + 8];
  FILE *f;                 /* tfrecord */
  struct archive *a;       /* tar */
  uint8_t *buf;            /* an Example being encoded */
  size_t cap;
};

/* ------------------------------------------------------------------ */
/* CRC-32C, bit by bit: a few kilobytes of demo records do not need speed. */

uint32_t make_demo_shards_masked_crc(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
  }
  c = ~c;
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* ------------------------------------------------------------------ */
/* Protocol buffer encoding: varints and length-delimited fields. */

static size_t make_demo_shards_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

static uint8_t *make_demo_shards_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) *p++ = (uint8_t)(v | 0x80), v >>= 7;
  *p++ = (uint8_t)v;
  return p;
}

/* Tag (field, wire type 2) and length of a field of n bytes. */
static uint8_t *make_demo_shards_field(uint8_t *p, int field, size_t n) {
  return make_demo_shards_varint(make_demo_shards_varint(p, (uint64_t)field << 3 | 2), n);
}

static size_t make_demo_shards_field_len(size_t n) {
  return 1 + make_demo_shards_varint_len(n) + n;
}

/* One map entry of Features: {1: key, 2: Feature{kind: {1: payload}}}
 * where kind is 1 (bytes_list, payload the bytes) or 3 (int64_list,
 * payload the packed varint). Returns the entry's size; writes it at p
 * when p is not NULL. */
static size_t make_demo_shards_entry(uint8_t *p, const char *key, int kind, const uint8_t *payload, size_t n) {
  size_t klen = strlen(key), list = make_demo_shards_field_len(n), feature = make_demo_shards_field_len(list);
  size_t entry = make_demo_shards_field_len(klen) + make_demo_shards_field_len(feature);
  if (!p) return make_demo_shards_field_len(entry);
  p = make_demo_shards_field(p, 1, entry);
  p = make_demo_shards_field(p, 1, klen);
  memcpy(p, key, klen);
  p = make_demo_shards_field(p + klen, 2, feature);
  p = make_demo_shards_field(p, kind, list);
  p = make_demo_shards_field(p, 1, n);
  memcpy(p, payload, n);
  return make_demo_shards_field_len(entry);
}

/* Example{1: Features{1: image/encoded, 1: image/class/label}}. */
static int make_demo_shards_example(make_demo_shards *w, const uint8_t *jpeg, size_t len, int64_t label, size_t *out) {
  uint8_t lab[10];
  size_t lab_len = (size_t)(make_demo_shards_varint(lab, (uint64_t)label) - lab);
  size_t e1 = make_demo_shards_entry(NULL, "image/encoded", 1, jpeg, len);
  size_t e2 = make_demo_shards_entry(NULL, "image/class/label", 3, lab, lab_len);
  size_t total = make_demo_shards_field_len(e1 + e2);
  if (total > w->cap) {
    uint8_t *b = realloc(w->buf, total);
    if (!b) return -1;
    w->buf = b;
    w->cap = total;
  }
  uint8_t *p = make_demo_shards_field(w->buf, 1, e1 + e2);
  p += make_demo_shards_entry(p, "image/encoded", 1, jpeg, len);
  make_demo_shards_entry(p, "image/class/label", 3, lab, lab_len);
  *out = total;
  return 0;
}

/* ------------------------------------------------------------------ */
/* Shard files */

static int make_demo_shards_finish(make_demo_shards *w, int ok, char *err, size_t errlen) {
  int rc = 0;
  if (w->f) {
    ok = (fclose(w->f) == 0) && ok;
    w->f = NULL;
  } else if (w->a) {
    ok = archive_write_close(w->a) == ARCHIVE_OK && ok;
    archive_write_free(w->a);
    w->a = NULL;
  } else {
    return 0;
  }
  if (!ok || rename(w->tmp, w->path) != 0) {
    rc = cli_fail(err, errlen, BFEED_EIO, "%s: cannot write: %s", w->path, strerror(errno));
    remove(w->tmp);
  }
  return rc;
}

static int make_demo_shards_next(make_demo_shards *w, char *err, size_t errlen) {
  int rc = make_demo_shards_finish(w, 1, err, errlen);
  if (rc < 0) return rc;
  w->shard++;
  if (w->tar) snprintf(w->path, sizeof w->path, "%s/%s-%06d.tar", w->dir, w->split, w->shard);
  else snprintf(w->path, sizeof w->path, "%s/%s-%05d-of-%05d", w->dir, w->split, w->shard, w->nshards);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp", w->path);
  if (!w->tar) {
    if (!(w->f = fopen(w->tmp, "wb")))
      return cli_fail(err, errlen, BFEED_EIO, "%s: cannot create: %s", w->tmp, strerror(errno));
    return 0;
  }
  if (!(w->a = archive_write_new())) return cli_fail(err, errlen, BFEED_ENOMEM, "out of memory");
  /* ustar headers: the names are short, and every tar reader knows them. */
  if (archive_write_set_format_ustar(w->a) != ARCHIVE_OK || archive_write_open_filename(w->a, w->tmp) != ARCHIVE_OK)
    return cli_fail(err, errlen, BFEED_EIO, "%s: %s", w->tmp, archive_error_string(w->a));
  return 0;
}

int make_demo_shards_open(make_demo_shards **out, int tar, const char *dir, const char *split, int total, int nshards,
                          char *err, size_t errlen) {
  make_demo_shards *w = calloc(1, sizeof *w);
  if (!w) return cli_fail(err, errlen, BFEED_ENOMEM, "out of memory");
  *w = (make_demo_shards){.tar = tar, .total = total, .nshards = nshards < 1 ? 1 : nshards, .shard = -1};
  snprintf(w->dir, sizeof w->dir, "%s", dir);
  snprintf(w->split, sizeof w->split, "%s", split);
  *out = w;
  return 0;
}

static int make_demo_shards_member(make_demo_shards *w, const char *name, const void *p, size_t n, char *err,
                                   size_t errlen) {
  struct archive_entry *e = archive_entry_new();
  if (!e) return cli_fail(err, errlen, BFEED_ENOMEM, "out of memory");
  archive_entry_set_pathname(e, name);
  archive_entry_set_size(e, (la_int64_t)n);
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_mtime(e, 0, 0); /* the same bytes on every run */
  int ok = archive_write_header(w->a, e) == ARCHIVE_OK && archive_write_data(w->a, p, n) == (la_ssize_t)n;
  archive_entry_free(e);
  return ok ? 0 : cli_fail(err, errlen, BFEED_EIO, "%s: %s: %s", w->tmp, name, archive_error_string(w->a));
}

int make_demo_shards_add(make_demo_shards *w, const uint8_t *jpeg, size_t len, int label, char *err, size_t errlen) {
  /* Shard k holds samples [k * total / nshards, (k + 1) * total / nshards). */
  int rc;
  while ((int64_t)(w->shard + 1) * w->total / w->nshards <= w->added && w->shard + 1 < w->nshards)
    if ((rc = make_demo_shards_next(w, err, errlen)) < 0) return rc;
  int index = w->added++;
  if (w->tar) {
    char name[32], cls[16];
    snprintf(name, sizeof name, "%06d.jpg", index);
    int n = snprintf(cls, sizeof cls, "%d", label);
    if ((rc = make_demo_shards_member(w, name, jpeg, len, err, errlen)) < 0) return rc;
    snprintf(name, sizeof name, "%06d.cls", index);
    return make_demo_shards_member(w, name, cls, (size_t)n, err, errlen);
  }
  size_t n;
  if (make_demo_shards_example(w, jpeg, len, label + 1, &n) < 0) return cli_fail(err, errlen, BFEED_ENOMEM, "out of memory");
  uint8_t head[12], foot[4];
  for (int i = 0; i < 8; i++) head[i] = (uint8_t)((uint64_t)n >> (8 * i));
  uint32_t c = make_demo_shards_masked_crc(head, 8), d = make_demo_shards_masked_crc(w->buf, n);
  for (int i = 0; i < 4; i++) head[8 + i] = (uint8_t)(c >> (8 * i)), foot[i] = (uint8_t)(d >> (8 * i));
  if (fwrite(head, 1, 12, w->f) != 12 || fwrite(w->buf, 1, n, w->f) != n || fwrite(foot, 1, 4, w->f) != 4)
    return cli_fail(err, errlen, BFEED_EIO, "%s: write failed: %s", w->tmp, strerror(errno));
  return 0;
}

int make_demo_shards_close(make_demo_shards *w, int rc, char *err, size_t errlen) {
  if (!w) return rc;
  int fin = make_demo_shards_finish(w, rc == 0, err, rc == 0 ? errlen : 0);
  free(w->buf);
  free(w);
  return rc < 0 ? rc : fin;
}
