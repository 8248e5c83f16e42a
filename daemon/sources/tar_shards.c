/*
 * tar_shards.c -- WebDataset tar shards: members grouped into samples,
 * indexed with libarchive reading the shard through storage.h callbacks.
 */
#include "tar_shards.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bfeed_types.h"
#include "storage.h"

#define TAR_SHARDS_KEY_MAX 1024
#define TAR_SHARDS_PROBE 16 /* bytes compared between libarchive and pread */
#define TAR_SHARDS_BLOCK (1 << 16) /* what libarchive is handed per read */

/* The sample being gathered: members of one key. */
typedef struct tar_shards_group {
  char key[TAR_SHARDS_KEY_MAX];
  int have_image, have_label, bad;
  uint64_t image_off, first_off;
  uint32_t image_len;
  int64_t label;
  char why[160];
  char link[300]; /* an image member that is a link, said instead of "no image member" */
} tar_shards_group;

typedef struct tar_shards_scan {
  const char *path, *label_ext;
  const shard_index_ctx *ctx;
  shard_index *x;
  tar_shards_group g;
  /* libarchive's reads: the shard, where the next block starts, the block */
  storage_file f;
  uint64_t pos;
  uint8_t *block;
  char why[200]; /* a read that failed */
} tar_shards_scan;

/* libarchive's read callback: the next block of the shard. */
static la_ssize_t tar_shards_read(struct archive *a, void *arg, const void **buf) {
  tar_shards_scan *s = arg;
  size_t got = 0;
  if (storage_pread(&s->f, s->block, TAR_SHARDS_BLOCK, s->pos, &got, s->why, sizeof s->why) < 0) {
    archive_set_error(a, EIO, "%s", s->why);
    return -1;
  }
  s->pos += got;
  *buf = s->block;
  return (la_ssize_t)got;
}

/* libarchive's skip callback: image members are passed over, not read. A
 * skip past the end is found by the next read, as lseek would leave it. */
static la_int64_t tar_shards_skip(struct archive *a, void *arg, la_int64_t request) {
  tar_shards_scan *s = arg;
  if (request <= 0) return 0;
  s->pos += (uint64_t)request;
  return request;
}

static int tar_shards_is_image(const char *ext) {
  static const char *const exts[] = {"jpg", "jpeg", "png", "webp", NULL};
  for (int i = 0; exts[i]; i++)
    if (strcasecmp(ext, exts[i]) == 0) return 1;
  return 0;
}

/* Close the current group: index it or say why not. */
static int tar_shards_flush(tar_shards_scan *s) {
  tar_shards_group *g = &s->g;
  if (!g->key[0]) return 0;
  char why[sizeof g->link] = "";
  if (!g->have_image && g->link[0]) snprintf(why, sizeof why, "%s", g->link);
  else if (!g->have_image) snprintf(why, sizeof why, "no image member (.jpg, .jpeg, .png or .webp)");
  else if (g->bad) snprintf(why, sizeof why, "%s", g->why);
  else if (s->label_ext && !g->have_label) snprintf(why, sizeof why, "no .%s label member", s->label_ext);
  int rc = 0;
  if (why[0]) {
    s->x->skipped++;
    log_warn(s->ctx->log, "dataset %s: %s: sample '%s' (member at byte offset %llu): %s (skipped)", s->ctx->dataset,
             s->path, g->key, (unsigned long long)g->first_off, why);
  } else {
    rc = shard_index_add(s->x, g->image_off, g->image_len, s->label_ext ? g->label : SHARD_INDEX_NO_LABEL, NULL, 0);
  }
  memset(g, 0, sizeof *g);
  return rc;
}

static void tar_shards_parse_label(tar_shards_group *g, const char *text, size_t n) {
  char buf[32], *end;
  while (n && isspace((unsigned char)text[n - 1])) n--;
  while (n && isspace((unsigned char)*text)) text++, n--;
  if (n == 0 || n >= sizeof buf) {
    g->bad = 1;
    snprintf(g->why, sizeof g->why, "label member is %s", n ? "too long for an integer" : "empty");
    return;
  }
  memcpy(buf, text, n);
  buf[n] = 0;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (*end || errno) {
    g->bad = 1;
    snprintf(g->why, sizeof g->why, "label member holds '%s', not an integer", buf);
    return;
  }
  g->have_label = 1;
  g->label = v;
}

/* Check that pread at off sees what libarchive reads as the member's
 * first bytes: the offset the index records is then right. */
static int tar_shards_probe(struct archive *a, storage_file *f, uint64_t off, uint64_t size) {
  const void *blk;
  size_t n;
  la_int64_t at;
  if (size == 0) return 0;
  if (archive_read_data_block(a, &blk, &n, &at) != ARCHIVE_OK || at != 0) return BFEED_EDATASET;
  uint8_t mine[TAR_SHARDS_PROBE];
  size_t k = n < sizeof mine ? n : sizeof mine;
  char why[200];
  return storage_pread_all(f, mine, k, off, why, sizeof why) == 0 && memcmp(mine, blk, k) == 0 ? 0 : BFEED_EDATASET;
}

/* A link member (a symlink, or a hard link: a regular file's header with
 * no bytes of its own) is not read: its bytes are elsewhere or nowhere. */
static const char *tar_shards_link(struct archive_entry *e, const char **target) {
  if (archive_entry_filetype(e) == AE_IFLNK) return *target = archive_entry_symlink(e), "a symbolic link";
  if (archive_entry_hardlink(e)) return *target = archive_entry_hardlink(e), "a hard link";
  return NULL;
}

static int tar_shards_member(tar_shards_scan *s, struct archive *a, struct archive_entry *e) {
  const char *name = archive_entry_pathname(e), *target = NULL, *link = name ? tar_shards_link(e, &target) : NULL;
  if (!name || (archive_entry_filetype(e) != AE_IFREG && !link)) return 0;
  uint64_t off = (uint64_t)archive_filter_bytes(a, 0), size = (uint64_t)archive_entry_size(e);
  const char *slash = strrchr(name, '/'), *base = slash ? slash + 1 : name, *dot = strchr(base, '.');
  size_t keylen = dot ? (size_t)(dot - name) : strlen(name);
  const char *ext = dot ? dot + 1 : "";
  if (keylen >= TAR_SHARDS_KEY_MAX) keylen = TAR_SHARDS_KEY_MAX - 1;
  if (strncmp(s->g.key, name, keylen) != 0 || s->g.key[keylen]) {
    if (tar_shards_flush(s) < 0) return BFEED_ENOMEM;
    memcpy(s->g.key, name, keylen);
    s->g.key[keylen] = 0;
    s->g.first_off = off;
  }
  if (link) {
    if (tar_shards_is_image(ext) && !s->g.have_image && !s->g.link[0])
      snprintf(s->g.link, sizeof s->g.link, "image member %s is %s (to %s), not an image: links are not followed",
               name, link, target ? target : "?");
    return 0;
  }
  if (tar_shards_is_image(ext) && !s->g.have_image) {
    if (archive_entry_sparse_count(e) > 0 || size > UINT32_MAX || tar_shards_probe(a, &s->f, off, size) < 0) {
      s->g.bad = 1;
      snprintf(s->g.why, sizeof s->g.why, "image member %s is sparse, too large or not stored contiguously", name);
      return 0;
    }
    s->g.have_image = 1;
    s->g.image_off = off;
    s->g.image_len = (uint32_t)size;
  } else if (s->label_ext && strcasecmp(ext, s->label_ext) == 0) {
    char text[64];
    la_ssize_t n = archive_read_data(a, text, sizeof text);
    if (n < 0 || (uint64_t)n != size) {
      s->g.bad = 1;
      snprintf(s->g.why, sizeof s->g.why, "label member %s is %s", name, n < 0 ? "unreadable" : "over 64 bytes");
    } else {
      tar_shards_parse_label(&s->g, text, (size_t)n);
    }
  }
  return 0;
}

int tar_shards_index(const char *path, const char *label_ext, const shard_index_ctx *ctx, shard_index *x, char *err,
                     size_t errlen) {
  tar_shards_scan s = {.path = path, .label_ext = label_ext, .ctx = ctx, .x = x};
  if (storage_open(path, &s.f, err, errlen) < 0) return BFEED_EIO;
  struct archive *a = archive_read_new();
  if (!a || !(s.block = malloc(TAR_SHARDS_BLOCK))) {
    if (a) archive_read_free(a);
    storage_close(&s.f);
    return snprintf(err, errlen, "%s: out of memory", path), BFEED_ENOMEM;
  }
  archive_read_support_format_tar(a);
  archive_read_support_filter_all(a); /* to recognise, and refuse, compression */
  archive_read_set_read_callback(a, tar_shards_read);
  archive_read_set_skip_callback(a, tar_shards_skip);
  archive_read_set_callback_data(a, &s);
  int rc = 0;
  struct archive_entry *e;
  if (archive_read_open1(a) != ARCHIVE_OK) {
    rc = BFEED_EDATASET;
    snprintf(err, errlen, "%s: not a tar file: %s", path, archive_error_string(a));
  } else if (archive_filter_count(a) > 1 || archive_filter_code(a, 0) != ARCHIVE_FILTER_NONE) {
    rc = BFEED_EDATASET;
    snprintf(err, errlen,
             "%s is compressed (%s): bfeed reads members at their offsets, which needs an uncompressed tar",
             path, archive_filter_name(a, 0));
  }
  while (rc == 0 && !shard_index_cancelled(ctx)) {
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      /* Past a damaged header the rest cannot be trusted: what was
       * indexed so far stays, as for a truncated TFRecord shard. */
      x->skipped++;
      log_warn(ctx->log, "dataset %s: %s: tar header at byte offset %llu: %s (the rest of the shard is unreadable)",
               ctx->dataset, path, (unsigned long long)archive_filter_bytes(a, 0), archive_error_string(a));
      break;
    }
    if (tar_shards_member(&s, a, e) < 0) rc = BFEED_ENOMEM, snprintf(err, errlen, "%s: out of memory indexing", path);
  }
  if (rc == 0 && tar_shards_flush(&s) < 0) rc = BFEED_ENOMEM, snprintf(err, errlen, "%s: out of memory indexing", path);
  archive_read_free(a);
  storage_close(&s.f);
  free(s.block);
  return rc;
}
