/*
 * kind_pack.c -- the pack kind: a folder written by `bfeed pack` (numbered
 * shard files and their metadata, packfile.h; PACK_FORMAT.md). The
 * metadata and every shard's index are read and checked at load (the
 * index's CRC-32C; a truncated shard or bad metadata refuses the dataset);
 * a sample is one storage_pread of its record, checked against the
 * record's CRC-32C: a record gone bad is BFEED_ECHECKSUM naming shard and
 * record, skipped as an undecodable image is. Called through dataset.c's
 * kind table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_kind.h"
#include "fingerprint.h"
#include "packfile.h"

typedef struct kind_pack_shard {
  char *path;
  storage_stamp stamp; /* what the file was when its index was read */
  packfile_shard x;
  uint64_t first;      /* its first sample in the dataset */
} kind_pack_shard;

typedef struct kind_pack_state {
  char *meta_path;
  packfile_meta meta;
  kind_pack_shard *s;
  size_t nshards;
  float *features; /* all shards' rows, in sample order (d->features.rows) */
} kind_pack_state;

/* "dataset NAME: PATH: why" from the message of a call that named nothing. */
static int kind_pack_fail(const dataset *d, const char *path, int rc, const char *why, char *err, size_t errlen) {
  snprintf(err, errlen, "dataset %s: %s: %s", d->name, path, why);
  return rc;
}

static int kind_pack_read_meta(dataset *d, kind_pack_state *p, char *err, size_t errlen) {
  storage_mapping m;
  char why[512];
  int rc = storage_map(p->meta_path, PACKFILE_META_MAX, &m, why, sizeof why);
  if (rc < 0)
    return snprintf(err, errlen, "dataset %s: %s (no finished pack at %s: bfeed pack writes this file last)", d->name,
                    why, d->root), BFEED_EDATASET;
  rc = packfile_meta_parse((const char *)m.data, m.size, &p->meta, why, sizeof why);
  storage_unmap(&m);
  return rc < 0 ? kind_pack_fail(d, p->meta_path, rc, why, err, errlen) : 0;
}

/* Shard k's index, checked against the metadata. */
static int kind_pack_read_shard(dataset *d, kind_pack_state *p, uint32_t k, char *err, size_t errlen) {
  kind_pack_shard *s = &p->s[k];
  char name[64], why[512];
  packfile_shard_name(name, sizeof name, k);
  if (!(s->path = storage_resolve(d->root, name, strlen(name)))) return dataset_oom(d, err, errlen);
  storage_file f;
  int rc = storage_open(s->path, &f, why, sizeof why);
  if (rc < 0) return snprintf(err, errlen, "dataset %s: %s (the pack lists %llu shards)", d->name, why,
                              (unsigned long long)p->meta.shards), BFEED_EDATASET;
  s->stamp = f.stamp;
  uint64_t size = storage_size(&f), tail_off = 0;
  uint8_t head[PACKFILE_HEADER] = {0}, foot[PACKFILE_FOOTER] = {0}, *tail = NULL;
  if (size >= PACKFILE_HEADER + PACKFILE_FOOTER) {
    rc = storage_pread_all(&f, head, sizeof head, 0, why, sizeof why);
    if (rc == 0) rc = storage_pread_all(&f, foot, sizeof foot, size - PACKFILE_FOOTER, why, sizeof why);
  }
  if (rc == 0) rc = packfile_parse_ends(head, foot, size, &tail_off, why, sizeof why);
  if (rc == 0 && !(tail = malloc(size - tail_off))) rc = BFEED_ENOMEM, snprintf(why, sizeof why, "out of memory");
  if (rc == 0) rc = storage_pread_all(&f, tail, size - tail_off, tail_off, why, sizeof why);
  if (rc == 0) rc = packfile_parse_tail(head, tail, tail_off, size, &s->x, why, sizeof why);
  free(tail);
  storage_close(&f);
  if (rc == 0 && (s->x.number != k || s->x.key != p->meta.key || s->x.dim != p->meta.dim))
    rc = BFEED_EDATASET, snprintf(why, sizeof why, "shard %u of key %016llx with %u features, not shard %u of this pack "
                                  "(key %016llx, %u features): a shard of another pack?", s->x.number,
                                  (unsigned long long)s->x.key, s->x.dim, k, (unsigned long long)p->meta.key, p->meta.dim);
  return rc < 0 ? kind_pack_fail(d, s->path, rc == BFEED_ENOMEM ? rc : BFEED_EDATASET, why, err, errlen) : 0;
}

/* The common fields from the shards' indexes. */
static int kind_pack_assemble(dataset *d, kind_pack_state *p, char *err, size_t errlen) {
  uint64_t n = 0;
  for (size_t k = 0; k < p->nshards; k++) p->s[k].first = n, n += p->s[k].x.n;
  if (n != p->meta.samples)
    return snprintf(err, errlen, "dataset %s: %s says %llu samples, its shards hold %llu", d->name, p->meta_path,
                    (unsigned long long)p->meta.samples, (unsigned long long)n), BFEED_EDATASET;
  if (n == 0) return snprintf(err, errlen, "dataset %s: the pack at %s holds no samples", d->name, d->root), BFEED_EDATASET;
  uint32_t dim = p->meta.dim;
  d->bad = calloc(n, 1);
  d->labels = p->meta.labelled ? malloc(n * sizeof *d->labels) : NULL;
  p->features = dim ? malloc(n * dim * sizeof *p->features) : NULL;
  if (!d->bad || (p->meta.labelled && !d->labels) || (dim && !p->features)) return dataset_oom(d, err, errlen);
  for (size_t k = 0; k < p->nshards; k++) {
    const packfile_shard *x = &p->s[k].x;
    for (uint32_t i = 0; d->labels && i < x->n; i++) {
      if (x->e[i].label < 0 || (uint64_t)x->e[i].label >= p->meta.nclasses)
        return snprintf(err, errlen, "dataset %s: %s: record %u: label %d outside the pack's %llu classes", d->name,
                        p->s[k].path, i, x->e[i].label, (unsigned long long)p->meta.nclasses), BFEED_EDATASET;
      d->labels[p->s[k].first + i] = x->e[i].label;
    }
    if (dim && x->n) memcpy(p->features + p->s[k].first * dim, x->features, (size_t)x->n * dim * sizeof(float));
  }
  if (dim) {
    d->features.rows = p->features;
    d->features.h.ndim = 2;
    d->features.h.shape[0] = d->features.nrows = n;
    d->features.h.shape[1] = d->features.row_floats = dim;
  }
  if (p->meta.classes) {
    if (!(d->classes = calloc(p->meta.nclasses, sizeof *d->classes))) return dataset_oom(d, err, errlen);
    for (uint64_t c = 0; c < p->meta.nclasses; c++)
      if (!(d->classes[c] = strdup(p->meta.classes[c]))) return dataset_oom(d, err, errlen);
  }
  d->nclasses = (size_t)p->meta.nclasses;
  d->nsamples = (size_t)n;
  d->tensors = DATASET_TENSOR_IMAGE | (dim ? DATASET_TENSOR_FEATURES : 0);
  return 0;
}

static int kind_pack_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  (void)k;
  kind_pack_state *p = calloc(1, sizeof *p);
  if (!p) return dataset_oom(d, err, errlen);
  d->state = p;
  if (!(p->meta_path = storage_resolve(d->root, PACKFILE_META, strlen(PACKFILE_META)))) return dataset_oom(d, err, errlen);
  int rc = kind_pack_read_meta(d, p, err, errlen);
  if (rc < 0) return rc;
  /* The table grows with the shards found, not with the count the
   * metadata claims: a forged `shards` costs nothing before its files. */
  size_t cap = 0;
  for (uint32_t s = 0; s < p->meta.shards; s++) {
    if (s == cap) {
      kind_pack_shard *grown = realloc(p->s, (cap = cap ? 2 * cap : 16) * sizeof *grown);
      if (!grown) return dataset_oom(d, err, errlen);
      memset(grown + s, 0, (cap - s) * sizeof *grown);
      p->s = grown;
    }
    p->nshards = s + 1;
    if ((rc = kind_pack_read_shard(d, p, s, err, errlen)) < 0) return rc;
  }
  if (!p->s && !(p->s = calloc(1, sizeof *p->s))) return dataset_oom(d, err, errlen); /* an empty pack */
  if ((rc = kind_pack_assemble(d, p, err, errlen)) < 0) return rc;
  log_debug(log, "dataset %s: a pack of %s images from %s (%llu shards)", d->name, p->meta.images, p->meta.source,
            (unsigned long long)p->meta.shards);
  return 0;
}

static const kind_pack_shard *kind_pack_find(const kind_pack_state *p, size_t i, uint32_t *rec) {
  size_t lo = 0, hi = p->nshards; /* first[lo] <= i < first[hi] */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (p->s[mid].first <= i) lo = mid;
    else hi = mid;
  }
  *rec = (uint32_t)(i - p->s[lo].first);
  return &p->s[lo];
}

static int kind_pack_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                          size_t errlen) {
  const kind_pack_state *p = d->state;
  uint32_t r;
  const kind_pack_shard *s = kind_pack_find(p, i, &r);
  const packfile_entry *e = &s->x.e[r];
  storage_file f;
  int changed;
  int rc = storage_open_same(s->path, &s->stamp, &f, &changed, err, errlen);
  /* A shard rewritten since its index was read: the index no longer says
   * where the records are (dataset.h, "Files changed under a dataset"). */
  if (changed) return dataset_mark_changed(d, err), BFEED_EDATASET;
  if (rc < 0) return rc == BFEED_ENOMEM ? rc : BFEED_EIO;
  char why[256];
  rc = storage_pread_grow(&f, e->off, e->len, buf, cap, why, sizeof why);
  storage_close(&f);
  if (rc == BFEED_ENOMEM) return snprintf(err, errlen, "%s: record %u: %s", s->path, r, why), rc;
  if (rc < 0) return snprintf(err, errlen, "%s: record %u: read failed: %s", s->path, r, why), BFEED_EIO;
  if ((rc = packfile_check_record(&s->x, r, *buf, why, sizeof why)) < 0)
    return snprintf(err, errlen, "%s: %s (its bytes changed since they were packed)", s->path, why), rc;
  *len = e->len;
  return 0;
}

static void kind_pack_name(const dataset *d, size_t i, char *out, size_t n) {
  uint32_t r;
  const kind_pack_shard *s = kind_pack_find(d->state, i, &r);
  snprintf(out, n, "%s: record %u", s->path, r);
}

/* The metadata, then each shard, by name within the pack's folder. */
static void kind_pack_fingerprint(const dataset *d, struct fingerprint *fp) {
  const kind_pack_state *p = d->state;
  fingerprint_file(fp, p->meta_path, d->root);
  for (size_t k = 0; k < p->nshards; k++) fingerprint_file(fp, p->s[k].path, d->root);
}

static void kind_pack_free(dataset *d) {
  kind_pack_state *p = d->state;
  if (!p) return;
  for (size_t k = 0; k < p->nshards; k++) {
    free(p->s[k].path);
    packfile_shard_free(&p->s[k].x);
  }
  free(p->s);
  free(p->meta_path);
  packfile_meta_free(&p->meta);
  free(p->features);
  d->features.rows = NULL;
  free(p);
  d->state = NULL;
}

static const dataset_key_spec kind_pack_keys[] = {{NULL, 0}};

const dataset_kind kind_pack = {.name = "pack", .keys = kind_pack_keys, .load = kind_pack_load,
                                .read = kind_pack_read, .sample_name = kind_pack_name,
                                .fingerprint = kind_pack_fingerprint, .free = kind_pack_free};
