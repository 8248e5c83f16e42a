/*
 * dataset_shards.c -- the shard kinds' shared part: shard listing,
 * background indexing with per-shard index caches, sample reads by offset
 * (see dataset_shards.h). Called by kind_tfrecord.c and kind_tar.c, and
 * through their table entries by dataset.c.
 */
#include "dataset_shards.h"
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "fingerprint.h"

#define DATASET_SHARDS_MAX_THREADS 8

enum { DATASET_SHARDS_INDEXING = 0, DATASET_SHARDS_READY = 1, DATASET_SHARDS_FAILED = 2 };

typedef struct dataset_shards {
  dataset *d;             /* the owner (not a reference: it outlives the threads) */
  dataset_shards_spec spec; /* the kind's format and settings (spec.cfg owned) */
  char **files;
  size_t nfiles;
  shard_index *idx;       /* one per file */
  storage_stamp *stamps;  /* one per file: what it was when indexed (storage_open_same) */
  uint64_t *first;        /* nfiles + 1: first sample of each file */
  char *cache_dir;
  int64_t label_offset;
  uint64_t settings;      /* hash of what the indexes depend on */
  int remote;             /* the shards are a remote backend's: reads are worth announcing */
  logger log;             /* a copy: the caller's may not outlive the threads */
  pthread_t coordinator;
  int started;
  int cancel, state;      /* atomics */
  size_t next_file, done_files, cached_files; /* atomics */
  uint64_t skipped;
  double seconds;
  pthread_mutex_t lock;   /* guards fail */
  char fail[512];
} dataset_shards;

static void dataset_shards_fail(dataset_shards *s, const char *msg) {
  pthread_mutex_lock(&s->lock);
  if (!s->fail[0]) snprintf(s->fail, sizeof s->fail, "dataset %s: %s", s->d->name, msg);
  pthread_mutex_unlock(&s->lock);
  __atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
}

/* One shard's index: from its cache, or built and cached. */
static void dataset_shards_index_file(dataset_shards *s, size_t f) {
  const char *path = s->files[f];
  char cache[4096], why[512];
  storage_info info;
  if (storage_stat(path, &info, why, sizeof why) < 0) return dataset_shards_fail(s, why);
  /* Reads check the shard against this: the index describes this file. */
  s->stamps[f] = info.stamp;
  /* The cache is keyed to the shard's size and mtime, as shard_index.h
   * takes them; it is a local file of bfeed's own, beside the shard's
   * local path or in cache_dir. */
  struct stat st = {.st_size = (off_t)info.size};
  st.st_mtim.tv_sec = (time_t)info.mtime_s;
  st.st_mtim.tv_nsec = (long)info.mtime_ns;
  const char *local = storage_local_path(path);
  /* A remote shard's index is kept in cache_dir, or in memory only. */
  int cached = local || s->cache_dir;
  shard_index_path(cache, sizeof cache, local ? local : path, s->cache_dir);
  if (cached && shard_index_load(&s->idx[f], cache, &st, s->settings, why, sizeof why) == 0) {
    __atomic_add_fetch(&s->cached_files, 1, __ATOMIC_RELAXED);
    log_debug(&s->log, "dataset %s: %s: index reused from %s", s->d->name, path, cache);
    return;
  }
  if (cached && access(cache, F_OK) == 0) log_info(&s->log, "dataset %s: %s: rebuilding the index: %s", s->d->name, path, why);
  shard_index_ctx ctx = {.log = &s->log, .dataset = s->d->name, .cancel = &s->cancel};
  if (s->spec.format->index(path, s->spec.cfg, &ctx, &s->idx[f], why, sizeof why) < 0)
    return dataset_shards_fail(s, why);
  if (shard_index_cancelled(&ctx) || !cached) return;
  if (shard_index_save(&s->idx[f], cache, &st, s->settings, why, sizeof why) < 0)
    log_warn(&s->log, "dataset %s: %s (the index is kept in memory only; set cache_dir to keep it)", s->d->name, why);
}

static void *dataset_shards_worker(void *arg) {
  dataset_shards *s = arg;
  for (;;) {
    size_t f = __atomic_fetch_add(&s->next_file, 1, __ATOMIC_RELAXED);
    if (f >= s->nfiles || __atomic_load_n(&s->cancel, __ATOMIC_RELAXED)) break;
    dataset_shards_index_file(s, f);
    __atomic_add_fetch(&s->done_files, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* The per-file indexes into the dataset's arrays: labels with the offset
 * applied, features concatenated. */
static int dataset_shards_assemble(dataset_shards *s, char *err, size_t errlen) {
  dataset *d = s->d;
  uint64_t n = 0;
  uint32_t dim = 0;
  for (size_t f = 0; f < s->nfiles; f++) {
    s->first[f] = n;
    n += s->idx[f].n;
    s->skipped += s->idx[f].skipped;
    if (s->idx[f].n && dim && s->idx[f].dim != dim)
      return snprintf(err, errlen, "%s: feature '%s' holds %u floats, earlier shards %u", s->files[f],
                      s->spec.features, s->idx[f].dim, dim), BFEED_EDATASET;
    if (s->idx[f].n) dim = s->idx[f].dim;
  }
  s->first[s->nfiles] = n;
  if (n == 0) return snprintf(err, errlen, "no samples in %zu shard(s) (%llu skipped)", s->nfiles,
                              (unsigned long long)s->skipped), BFEED_EDATASET;
  if (n > UINT32_MAX) return snprintf(err, errlen, "%llu samples, more than the %u supported", (unsigned long long)n, UINT32_MAX), BFEED_EDATASET;
  if (!(d->bad = calloc(n, 1))) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  int labelled = s->spec.labelled;
  if (labelled && !(d->labels = malloc(n * sizeof *d->labels))) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  float *rows = dim ? malloc(n * dim * sizeof *rows) : NULL;
  if (dim && !rows) return snprintf(err, errlen, "out of memory for %llu x %u features", (unsigned long long)n, dim), BFEED_ENOMEM;
  d->features.rows = rows;
  int64_t top = -1;
  for (size_t f = 0; f < s->nfiles; f++) {
    const shard_index *x = &s->idx[f];
    if (dim) memcpy(rows + s->first[f] * dim, x->features, x->n * dim * sizeof *rows);
    for (size_t i = 0; labelled && i < x->n; i++) {
      int64_t v = x->e[i].label + s->label_offset;
      if (x->e[i].label < -(1ll << 40) || x->e[i].label > (1ll << 40) || v < 0 || v > INT32_MAX)
        return snprintf(err, errlen,
                        "%s: %s at byte offset %llu: label %lld with label_offset %lld is %lld, outside 0..%d%s",
                        s->files[f], s->spec.format->unit, (unsigned long long)x->e[i].off,
                        (long long)x->e[i].label, (long long)s->label_offset, (long long)v, INT32_MAX,
                        v == -1 ? " (labels counted from 0 need label_offset=0)" : ""), BFEED_EDATASET;
      d->labels[s->first[f] + i] = (int32_t)v;
      if (v > top) top = v;
    }
  }
  if (dim) {
    d->features.h.ndim = 2;
    d->features.h.shape[0] = d->features.nrows = n;
    d->features.h.shape[1] = d->features.row_floats = dim;
  }
  d->nclasses = (size_t)(top + 1);
  d->nsamples = (size_t)n;
  return 0;
}

static void *dataset_shards_coordinate(void *arg) {
  dataset_shards *s = arg;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nt = ncpu > 0 ? (size_t)ncpu : 1;
  if (nt > DATASET_SHARDS_MAX_THREADS) nt = DATASET_SHARDS_MAX_THREADS;
  if (nt > s->nfiles) nt = s->nfiles;
  pthread_t th[DATASET_SHARDS_MAX_THREADS];
  size_t started = 0;
  double t0 = clock_now_s();
  for (size_t i = 0; i < nt; i++)
    if (pthread_create(&th[i], NULL, dataset_shards_worker, s) == 0) started++;
  if (started == 0) dataset_shards_worker(s);
  for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
  char err[512];
  int rc = BFEED_EDATASET;
  if (s->fail[0]) snprintf(err, sizeof err, "%s", s->fail);
  else if (__atomic_load_n(&s->cancel, __ATOMIC_RELAXED)) snprintf(err, sizeof err, "indexing cancelled");
  else if ((rc = dataset_shards_assemble(s, err, sizeof err)) < 0) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, sizeof err, "dataset %s: %s", s->d->name, tmp);
  }
  s->seconds = clock_now_s() - t0;
  if (rc < 0) {
    if (!__atomic_load_n(&s->cancel, __ATOMIC_RELAXED) || s->fail[0]) log_err(&s->log, "%s", err);
    pthread_mutex_lock(&s->lock);
    snprintf(s->fail, sizeof s->fail, "%s", err);
    pthread_mutex_unlock(&s->lock);
    __atomic_store_n(&s->state, DATASET_SHARDS_FAILED, __ATOMIC_RELEASE);
    return NULL;
  }
  log_info(&s->log,
           "dataset %s: %zu samples in %zu classes from %zu %s shard(s), indexed in %.1f ms "
           "(%zu index(es) reused from cache, %llu record(s) skipped)",
           s->d->name, s->d->nsamples, s->d->nclasses, s->nfiles, s->spec.format->format, s->seconds * 1e3,
           __atomic_load_n(&s->cached_files, __ATOMIC_RELAXED), (unsigned long long)s->skipped);
  __atomic_store_n(&s->state, DATASET_SHARDS_READY, __ATOMIC_RELEASE);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Loading                                                             */

/* The bucket's endpoint, region and keys (storage.h's storage_configure)
 * from the dataset's keys, before its shards are listed. */
static int dataset_shards_remote(dataset_shards *s, const dataset_keys *k, char *err, size_t errlen) {
  static const char *const names[] = {"endpoint", "region", "profile", "credentials_file"};
  const char *v[4];
  int any = 0;
  for (int i = 0; i < 4; i++) {
    const dataset_kv *kv = dataset_key(k, names[i]);
    v[i] = kv ? kv->value : NULL;
    any |= kv != NULL;
  }
  if (any && strncmp(s->d->root, "s3://", 5) != 0 && strncmp(s->d->root, "gs://", 5) != 0)
    return snprintf(err, errlen, "dataset %s: endpoint, region, profile and credentials_file are for s3:// and "
                                 "gs:// shards, not %s", s->d->name, s->d->root),
           BFEED_EDATASET;
  char where[1200], why[512];
  int rc = storage_configure(s->d->root, v[0], v[1], v[2], v[3], where, sizeof where, why, sizeof why);
  if (rc < 0) return snprintf(err, errlen, "dataset %s: %s", s->d->name, why), rc;
  if (where[0]) log_info(&s->log, "dataset %s: %s from %s", s->d->name, s->d->root, where);
  return 0;
}

/* The keys both shard kinds take (dataset_open has checked them). */
static int dataset_shards_settings(dataset_shards *s, const dataset_keys *k, char *err, size_t errlen) {
  const dataset_kv *off = dataset_key(k, "label_offset");
  s->label_offset = s->spec.label_offset;
  if (off) {
    char *end;
    errno = 0;
    long long v = strtoll(off->value, &end, 10);
    if (!off->value[0] || *end || errno || v < -(1ll << 31) || v > (1ll << 31))
      return dataset_key_fail(off, k->name, err, errlen, "expected a whole number from -2147483648 to 2147483648");
    s->label_offset = v;
  }
  if (dataset_key_string(k, "cache_dir", NULL, &s->cache_dir) < 0) return dataset_oom(s->d, err, errlen);
  return dataset_shards_remote(s, k, err, errlen);
}

static int dataset_shards_glob(dataset_shards *s, const char *pattern, char *err, size_t errlen) {
  strlist all = {0};
  char why[512];
  int rc = storage_glob(pattern, &all, why, sizeof why);
  if (rc < 0) return strlist_free(&all), snprintf(err, errlen, "dataset %s: %s", s->d->name, why), rc;
  if (all.n == 0) return snprintf(err, errlen, "dataset %s: '%s' matches no file", s->d->name, pattern), BFEED_EDATASET;
  s->files = calloc(all.n, sizeof *s->files);
  for (size_t i = 0; s->files && i < all.n; i++) {
    const char *p = all.v[i];
    size_t n = strlen(p);
    storage_info st;
    /* Index caches and their temporaries may sit beside the shards. */
    if (storage_stat(p, &st, why, sizeof why) != 0 || st.type != STORAGE_FILE ||
        (n > 6 && strcmp(p + n - 6, ".bfidx") == 0) || (n > 4 && strcmp(p + n - 4, ".tmp") == 0))
      continue;
    s->files[s->nfiles++] = all.v[i];
    all.v[i] = NULL;
  }
  int ok = s->files != NULL;
  strlist_free(&all);
  if (!ok) return dataset_oom(s->d, err, errlen);
  if (s->nfiles == 0) return snprintf(err, errlen, "dataset %s: '%s' matches no regular file", s->d->name, pattern), BFEED_EDATASET;
  return 0;
}

int dataset_shards_load(dataset *d, const dataset_keys *k, const logger *log, const dataset_shards_spec *spec,
                        char *err, size_t errlen) {
  dataset_shards *s = calloc(1, sizeof *s);
  if (!s) {
    spec->format->free(spec->cfg);
    return dataset_oom(d, err, errlen);
  }
  d->state = s;
  s->d = d;
  s->spec = *spec;
  s->log = *log;
  pthread_mutex_init(&s->lock, NULL);
  int rc = dataset_shards_settings(s, k, err, errlen);
  if (rc == 0) rc = dataset_shards_glob(s, d->root, err, errlen);
  if (rc < 0) return rc;
  s->remote = storage_local_path(d->root) == NULL;
  /* What an index depends on: the format and the keys it looked up. */
  s->settings = XXH64(spec->tag, strlen(spec->tag), 0);
  s->spec.tag = NULL; /* the kind's, gone when its load returns */
  s->idx = calloc(s->nfiles, sizeof *s->idx);
  s->first = calloc(s->nfiles + 1, sizeof *s->first);
  s->stamps = calloc(s->nfiles, sizeof *s->stamps);
  if (!s->idx || !s->first || !s->stamps) return dataset_oom(d, err, errlen);
  if (pthread_create(&s->coordinator, NULL, dataset_shards_coordinate, s) != 0)
    return snprintf(err, errlen, "dataset %s: cannot start the indexing thread", d->name), BFEED_ENOMEM;
  s->started = 1;
  log_info(log, "dataset %s: indexing %zu %s shard(s) matching %s in the background", d->name, s->nfiles,
           spec->format->format, d->root);
  return 0;
}

int dataset_shards_ready(const dataset *d, char *err, size_t errlen) {
  dataset_shards *s = d->state;
  int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if (state == DATASET_SHARDS_READY) return 0;
  if (state == DATASET_SHARDS_FAILED) {
    pthread_mutex_lock(&s->lock);
    snprintf(err, errlen, "%s", s->fail);
    pthread_mutex_unlock(&s->lock);
    return BFEED_EDATASET;
  }
  snprintf(err, errlen, "dataset %s is being indexed (%zu of %zu shards done)", d->name,
           __atomic_load_n(&s->done_files, __ATOMIC_RELAXED), s->nfiles);
  return BFEED_EBUSY;
}

int dataset_shards_wait(dataset *d, char *err, size_t errlen) {
  dataset_shards *s = d->state;
  if (s->started) pthread_join(s->coordinator, NULL);
  s->started = 0;
  return dataset_shards_ready(d, err, errlen);
}

static size_t dataset_shards_file_of(const dataset_shards *s, size_t i) {
  size_t lo = 0, hi = s->nfiles; /* first[lo] <= i < first[hi] */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (s->first[mid] <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

int dataset_shards_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                        size_t errlen) {
  const dataset_shards *s = d->state;
  size_t f = dataset_shards_file_of(s, i);
  const shard_index_entry *e = &s->idx[f].e[i - s->first[f]];
  storage_file sf;
  int changed;
  int rc = storage_open_same(s->files[f], &s->stamps[f], &sf, &changed, err, errlen);
  /* A shard gone or rewritten since it was indexed marks the dataset
   * changed: its index no longer says where samples are. Another failure
   * to open it is no fault of this one sample's either: tried again, then
   * the batch fails, rather than every sample of the shard being skipped
   * in turn. */
  if (changed) return dataset_mark_changed(d, err), BFEED_EDATASET;
  if (rc < 0) return rc == BFEED_ENOMEM ? rc : BFEED_EIO;
  char why[512];
  rc = s->spec.format->read(&sf, e, s->spec.cfg, buf, cap, len, why, sizeof why);
  storage_close(&sf);
  if (rc < 0)
    snprintf(err, errlen, "%s: %s at byte offset %llu: %s", s->files[f], s->spec.format->unit,
             (unsigned long long)e->off, why);
  /* A record that reads wrong may be one of a shard changed since the
   * open (a remote object replaced: its read fails If-Match): asked again,
   * the shard says, and a change marks the dataset, not the sample. */
  if (rc == BFEED_EDATASET && storage_stat_same(s->files[f], &s->stamps[f], why, sizeof why) < 0) {
    dataset_mark_changed(d, why);
    snprintf(err, errlen, "%s", why);
  }
  return rc;
}

void dataset_shards_prefetch(const dataset *d, size_t i) {
  const dataset_shards *s = d->state;
  size_t f = dataset_shards_file_of(s, i);
  /* Local shards have the page cache and the kernel's read-ahead. */
  if (!s->remote) return;
  const shard_index_entry *e = &s->idx[f].e[i - s->first[f]];
  storage_file sf;
  char why[256];
  if (storage_open(s->files[f], &sf, why, sizeof why) != 0) return;
  /* The record's header and CRCs, or the member: what read takes. */
  storage_prefetch(&sf, e->off, (uint64_t)e->len + 16);
  storage_close(&sf);
}

void dataset_shards_name(const dataset *d, size_t i, char *out, size_t n) {
  const dataset_shards *s = d->state;
  size_t f = dataset_shards_file_of(s, i);
  snprintf(out, n, "%s: %s at byte offset %llu", s->files[f], s->spec.format->unit,
           (unsigned long long)s->idx[f].e[i - s->first[f]].off);
}

uint64_t dataset_shards_skipped(const dataset *d) {
  const dataset_shards *s = d->state;
  return s && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == DATASET_SHARDS_READY ? s->skipped : 0;
}

/* Shards by file name: the folder a glob names differs between hosts. */
void dataset_shards_fingerprint(const dataset *d, struct fingerprint *fp) {
  const dataset_shards *s = d->state;
  for (size_t i = 0; s && i < s->nfiles; i++) {
    const char *base = strrchr(s->files[i], '/');
    fingerprint_file_as(fp, base ? base + 1 : s->files[i], s->files[i]);
  }
}

void dataset_shards_free(dataset *d) {
  dataset_shards *s = d->state;
  if (!s) return;
  __atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
  if (s->started) pthread_join(s->coordinator, NULL);
  for (size_t f = 0; f < s->nfiles; f++) {
    free(s->files[f]);
    if (s->idx) shard_index_free(&s->idx[f]);
  }
  free(s->files);
  free(s->idx);
  free(s->stamps);
  free(s->first);
  free((void *)d->features.rows);
  s->spec.format->free(s->spec.cfg);
  free(s->cache_dir);
  pthread_mutex_destroy(&s->lock);
  free(s);
  d->state = NULL;
}
