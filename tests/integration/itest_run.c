/* itest_run.c -- see itest_util.h: streams recorded batch by batch, to be
 * compared byte for byte. */
#include "itest_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int blob_put(uint8_t **blob, size_t *len, size_t *cap, const void *p, size_t n) {
  if (*len + n > *cap) {
    size_t c = *cap ? *cap : 4096;
    while (c < *len + n) c *= 2;
    uint8_t *b = realloc(*blob, c);
    if (!b) return -1;
    *blob = b;
    *cap = c;
  }
  memcpy(*blob + *len, p, n);
  *len += n;
  return 0;
}

/* The blob holds, per tensor: its name with NUL, this header, its data. */
typedef struct rec_head {
  uint64_t dtype, ndim, nbytes;
  uint64_t shape[BFEED_MAX_DIMS];
} rec_head;

int itest_rec_from_batch(const bfeed_batch *b, itest_rec *rec) {
  bfeed_tensor lab, ix;
  memset(rec, 0, sizeof *rec);
  if (bfeed_batch_find(b, "label", &lab) < 0 || bfeed_batch_find(b, "index", &ix) < 0) return BFEED_EPROTO;
  if (lab.dtype != BFEED_DTYPE_I32 || ix.dtype != BFEED_DTYPE_I64 || lab.ndim != 1 || ix.ndim != 1 ||
      lab.shape[0] != ix.shape[0] || lab.nbytes != (size_t)lab.shape[0] * 4 || ix.nbytes != (size_t)ix.shape[0] * 8)
    return BFEED_EPROTO;
  rec->epoch = bfeed_batch_epoch(b);
  rec->index = bfeed_batch_index(b);
  rec->count = (uint32_t)lab.shape[0];
  rec->labels = malloc(lab.nbytes + 1);
  rec->idx = malloc(ix.nbytes + 1);
  size_t cap = 0;
  int rc = rec->labels && rec->idx ? 0 : -1;
  if (rc == 0) {
    memcpy(rec->labels, lab.data, lab.nbytes);
    memcpy(rec->idx, ix.data, ix.nbytes);
  }
  for (int i = 0; rc == 0 && i < bfeed_batch_ntensors(b); i++) {
    bfeed_tensor t;
    rec_head head;
    memset(&head, 0, sizeof head);
    bfeed_batch_tensor(b, i, &t);
    head.dtype = (uint64_t)t.dtype;
    head.ndim = (uint64_t)t.ndim;
    head.nbytes = t.nbytes;
    for (int d = 0; d < t.ndim && d < BFEED_MAX_DIMS; d++) head.shape[d] = (uint64_t)t.shape[d];
    rc = blob_put(&rec->blob, &rec->blob_len, &cap, t.name, strlen(t.name) + 1);
    if (rc == 0) rc = blob_put(&rec->blob, &rec->blob_len, &cap, &head, sizeof head);
    if (rc == 0) rc = blob_put(&rec->blob, &rec->blob_len, &cap, t.data, t.nbytes);
  }
  if (rc < 0) {
    itest_rec_free(rec);
    return BFEED_ENOMEM;
  }
  return 0;
}

void itest_rec_free(itest_rec *rec) {
  free(rec->blob);
  free(rec->idx);
  free(rec->labels);
  memset(rec, 0, sizeof *rec);
}

const uint8_t *itest_rec_data(const itest_rec *rec, const char *name, size_t *nbytes) {
  size_t at = 0;
  while (at < rec->blob_len) {
    const char *tname = (const char *)rec->blob + at;
    rec_head head;
    at += strlen(tname) + 1;
    memcpy(&head, rec->blob + at, sizeof head);
    at += sizeof head;
    if (strcmp(tname, name) == 0) return *nbytes = head.nbytes, rec->blob + at;
    at += head.nbytes;
  }
  return NULL;
}

int itest_rec_equal(const itest_rec *a, const itest_rec *b) {
  return a->epoch == b->epoch && a->index == b->index && a->blob_len == b->blob_len &&
         memcmp(a->blob, b->blob, a->blob_len) == 0;
}

int itest_collect(bfeed_stream *s, size_t max, itest_run *run, bfeed_error *err) {
  bfeed_error local;
  if (!err) err = &local;
  while (max == 0 || run->n < max) {
    bfeed_batch *b;
    int rc = bfeed_stream_next(s, &b, err);
    if (rc < 0) return rc;
    if (run->n == run->cap) {
      size_t cap = run->cap ? 2 * run->cap : 16;
      itest_rec *r = realloc(run->b, cap * sizeof *r);
      if (!r) {
        bfeed_batch_release(b);
        return BFEED_ENOMEM;
      }
      run->b = r;
      run->cap = cap;
    }
    rc = itest_rec_from_batch(b, &run->b[run->n]);
    bfeed_batch_release(b);
    if (rc < 0) {
      snprintf(err->message, sizeof err->message, "batch %zu lacks a proper label or index tensor", run->n);
      return err->code = rc;
    }
    run->n++;
  }
  return 0;
}

int itest_fetch(const char *addr, const char *dataset, const bfeed_stream_opts *o, size_t max,
                itest_run *run, bfeed_error *err) {
  bfeed_client *c;
  bfeed_stream *s;
  int rc = bfeed_connect(addr, &c, err);
  if (rc < 0) return rc;
  if ((rc = bfeed_stream_open(c, dataset, o, &s, err)) == 0) {
    rc = itest_collect(s, max, run, err);
    bfeed_stream_close(s);
  }
  bfeed_close(c);
  return rc;
}

void itest_run_free(itest_run *run) {
  for (size_t i = 0; i < run->n; i++) itest_rec_free(&run->b[i]);
  free(run->b);
  memset(run, 0, sizeof *run);
}

long itest_run_diff(const itest_run *a, const itest_run *b) {
  size_t n = a->n < b->n ? a->n : b->n;
  for (size_t i = 0; i < n; i++)
    if (!itest_rec_equal(&a->b[i], &b->b[i])) return (long)i;
  return a->n == b->n ? -1 : (long)n;
}

int itest_counters(bfeed_stream *s, const char *const *names, uint64_t *values, size_t n, bfeed_error *err) {
  bfeed_counter c[64];
  size_t have;
  int rc = bfeed_stream_stats(s, c, 64, &have, err);
  for (size_t k = 0; rc == 0 && k < n; k++) {
    size_t i = 0;
    while (i < have && strcmp(c[i].name, names[k]) != 0) i++;
    if (i == have) {
      snprintf(err->message, sizeof err->message, "the daemon reports no counter '%s'", names[k]);
      return err->code = BFEED_EINVAL;
    }
    values[k] = c[i].value;
  }
  return rc;
}

uint64_t itest_report_counter(const bfeed_stat_group *g, size_t n, const char *kind, const char *id,
                              const char *name) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(g[i].kind, kind) != 0 || strncmp(g[i].id, id, strlen(id)) != 0) continue;
    for (size_t k = 0; k < g[i].ncounters; k++)
      if (strcmp(g[i].counters[k].name, name) == 0) return g[i].counters[k].value;
  }
  return UINT64_MAX;
}

void itest_opts(bfeed_stream_opts *o) {
  bfeed_stream_opts_init(o);
  o->batch = 8;
  o->size = 32;
}
