/* dataset_shards.c -- tfrecord and tar datasets: shard listing, background indexing, sample reads. */
#include "dataset_shards.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "tar_shards.h"
#include "tfrecord.h"

#define DATASET_SHARDS_MAX_THREADS 8

enum { DATASET_SHARDS_INDEXING = 0, DATASET_SHARDS_READY = 1, DATASET_SHARDS_FAILED = 2 };

struct dataset_shards {
  dataset *d;             /* the owner (not a reference: it outlives the threads) */
  int tar;                /* 1 tar, 0 tfrecord */
  char **files;
  size_t nfiles;
  shard_index *idx;       /* one per file */
  uint64_t *first;        /* nfiles + 1: first sample of each file */
  char *image_key, *label_key, *features_key, *label_ext, *cache_dir;
  tf_example_keys keys;
  int64_t label_offset;
  uint64_t settings;      /* hash of what the indexes depend on */
  logger log;             /* a copy: the caller's may not outlive the threads */
  pthread_t coordinator;
  int started;
  int cancel, state;      /* atomics */
  size_t next_file, done_files, cached_files; /* atomics */
  uint64_t skipped;
  double seconds;
  pthread_mutex_t lock;   /* guards fail */
  char fail[512];
};

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
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
    return dataset_shards_fail(s, why);
  }
  shard_index_path(cache, sizeof cache, path, s->cache_dir);
  if (shard_index_load(&s->idx[f], cache, &st, s->settings, why, sizeof why) == 0) {
    __atomic_add_fetch(&s->cached_files, 1, __ATOMIC_RELAXED);
    log_debug(&s->log, "dataset %s: %s: index reused from %s", s->d->name, path, cache);
    return;
  }
  if (access(cache, F_OK) == 0) log_info(&s->log, "dataset %s: %s: rebuilding the index: %s", s->d->name, path, why);
  shard_index_ctx ctx = {.log = &s->log, .dataset = s->d->name, .cancel = &s->cancel};
  int rc = s->tar ? tar_shards_index(path, s->label_ext, &ctx, &s->idx[f], why, sizeof why)
                  : tfrecord_index(path, &s->keys, &ctx, &s->idx[f], why, sizeof why);
  if (rc < 0) return dataset_shards_fail(s, why);
  if (shard_index_cancelled(&ctx)) return;
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
                      s->features_key, s->idx[f].dim, dim), BFEED_EDATASET;
    if (s->idx[f].n) dim = s->idx[f].dim;
  }
  s->first[s->nfiles] = n;
  if (n == 0) return snprintf(err, errlen, "no samples in %zu shard(s) (%llu skipped)", s->nfiles,
                              (unsigned long long)s->skipped), BFEED_EDATASET;
  if (n > UINT32_MAX) return snprintf(err, errlen, "%llu samples, more than the %u supported", (unsigned long long)n, UINT32_MAX), BFEED_EDATASET;
  if (!(d->bad = calloc(n, 1))) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  int labelled = s->tar ? s->label_ext != NULL : s->label_key != NULL;
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
                        s->files[f], s->tar ? "member" : "record", (unsigned long long)x->e[i].off,
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
           s->d->name, s->d->nsamples, s->d->nclasses, s->nfiles, s->tar ? "tar" : "TFRecord", s->seconds * 1e3,
           __atomic_load_n(&s->cached_files, __ATOMIC_RELAXED), (unsigned long long)s->skipped);
  __atomic_store_n(&s->state, DATASET_SHARDS_READY, __ATOMIC_RELEASE);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Settings                                                            */

static int dataset_shards_string(const dataset_keys *k, const char *key, const char *def, char **out) {
  const dataset_kv *kv = dataset_key(k, key);
  const char *v = kv ? kv->value : def;
  *out = v && v[0] ? strdup(v) : NULL;
  return v && v[0] && !*out ? BFEED_ENOMEM : 0;
}

const char *const *dataset_shards_files(const dataset *d, size_t *n) {
  *n = d->shards ? d->shards->nfiles : 0;
  return d->shards ? (const char *const *)d->shards->files : NULL;
}

const char *const dataset_tfrecord_keys[] = {"image_key", "label_key", "label_offset", "features_key", "cache_dir", NULL};
const char *const dataset_tar_keys[] = {"label_ext", "label_offset", "cache_dir", NULL};

/* (dataset_open has checked the keys.) */
static int dataset_shards_settings(dataset_shards *s, const dataset_keys *k, char *err, size_t errlen) {
  const dataset_kv *off = dataset_key(k, "label_offset");
  /* TPU ImageNet TFRecords count classes from 1; WebDataset .cls from 0. */
  s->label_offset = s->tar ? 0 : -1;
  if (off) {
    char *end;
    errno = 0;
    long long v = strtoll(off->value, &end, 10);
    if (!off->value[0] || *end || errno || v < -(1ll << 31) || v > (1ll << 31))
      return dataset_key_fail(off, k->name, err, errlen, "expected a whole number from -2147483648 to 2147483648");
    s->label_offset = v;
  }
  int have_features = dataset_key(k, "features_key") != NULL;
  if (dataset_shards_string(k, "cache_dir", NULL, &s->cache_dir) < 0 ||
      dataset_shards_string(k, "label_ext", s->tar ? "cls" : NULL, &s->label_ext) < 0 ||
      dataset_shards_string(k, "features_key", NULL, &s->features_key) < 0 ||
      dataset_shards_string(k, "label_key", s->tar ? NULL : "image/class/label", &s->label_key) < 0 ||
      /* With features, images are served only when image_key says so. */
      dataset_shards_string(k, "image_key", s->tar || have_features ? NULL : "image/encoded", &s->image_key) < 0)
    return snprintf(err, errlen, "dataset %s: out of memory", k->name), BFEED_ENOMEM;
  if (!s->tar && !s->image_key && !s->features_key)
    return snprintf(err, errlen, "dataset %s: image_key is empty and no features_key is set: nothing to serve",
                    k->name), BFEED_EDATASET;
  s->keys = (tf_example_keys){.image = s->image_key, .label = s->label_key, .features = s->features_key};
  s->d->has_images = s->tar || s->image_key != NULL;
  /* What an index depends on: the format and the keys it looked up. */
  char tag[2048];
  snprintf(tag, sizeof tag, "%s|%s|%s|%s|%s", s->tar ? "tar" : "tfrecord", s->image_key ? s->image_key : "",
           s->label_key ? s->label_key : "", s->features_key ? s->features_key : "", s->label_ext ? s->label_ext : "");
  s->settings = XXH64(tag, strlen(tag), 0);
  return 0;
}

static int dataset_shards_glob(dataset_shards *s, const char *pattern, char *err, size_t errlen) {
  glob_t g;
  int rc = glob(pattern, GLOB_ERR, NULL, &g);
  if (rc == GLOB_NOMATCH) return snprintf(err, errlen, "dataset %s: '%s' matches no file", s->d->name, pattern), BFEED_EDATASET;
  if (rc != 0) return snprintf(err, errlen, "dataset %s: cannot expand '%s': %s", s->d->name, pattern,
                               rc == GLOB_NOSPACE ? "out of memory" : "read error"), BFEED_ENOMEM;
  s->files = calloc(g.gl_pathc, sizeof *s->files);
  for (size_t i = 0; s->files && i < g.gl_pathc; i++) {
    const char *p = g.gl_pathv[i];
    size_t n = strlen(p);
    struct stat st;
    /* Index caches and their temporaries may sit beside the shards. */
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || (n > 6 && strcmp(p + n - 6, ".bfidx") == 0) ||
        (n > 4 && strcmp(p + n - 4, ".tmp") == 0))
      continue;
    if (!(s->files[s->nfiles] = strdup(p))) break;
    s->nfiles++;
  }
  int ok = s->files != NULL;
  globfree(&g);
  if (!ok) return snprintf(err, errlen, "dataset %s: out of memory", s->d->name), BFEED_ENOMEM;
  if (s->nfiles == 0) return snprintf(err, errlen, "dataset %s: '%s' matches no regular file", s->d->name, pattern), BFEED_EDATASET;
  return 0;
}

int dataset_shards_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  dataset_shards *s = calloc(1, sizeof *s);
  if (!s) return snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM;
  d->shards = s;
  s->d = d;
  s->tar = d->kind == DATASET_TAR;
  s->log = *log;
  pthread_mutex_init(&s->lock, NULL);
  int rc = dataset_shards_settings(s, k, err, errlen);
  if (rc == 0) rc = dataset_shards_glob(s, d->root, err, errlen);
  if (rc < 0) return rc;
  s->idx = calloc(s->nfiles, sizeof *s->idx);
  s->first = calloc(s->nfiles + 1, sizeof *s->first);
  if (!s->idx || !s->first) return snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM;
  if (pthread_create(&s->coordinator, NULL, dataset_shards_coordinate, s) != 0)
    return snprintf(err, errlen, "dataset %s: cannot start the indexing thread", d->name), BFEED_ENOMEM;
  s->started = 1;
  log_info(log, "dataset %s: indexing %zu %s shard(s) matching %s in the background", d->name, s->nfiles,
           s->tar ? "tar" : "TFRecord", d->root);
  return 0;
}

int dataset_shards_ready(const dataset *d, char *err, size_t errlen) {
  dataset_shards *s = d->shards;
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
  dataset_shards *s = d->shards;
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
  const dataset_shards *s = d->shards;
  size_t f = dataset_shards_file_of(s, i);
  const shard_index_entry *e = &s->idx[f].e[i - s->first[f]];
  if (!s->tar) return tfrecord_sample(s->files[f], e, &s->keys, buf, cap, len, err, errlen);
  int fd = open(s->files[f], O_RDONLY | O_CLOEXEC);
  if (fd < 0) return snprintf(err, errlen, "cannot open: %s", strerror(errno)), BFEED_EIO;
  if (e->len + 1 > *cap) {
    uint8_t *b = realloc(*buf, e->len + 1);
    if (!b) {
      close(fd);
      return snprintf(err, errlen, "out of memory reading %u bytes", e->len), BFEED_ENOMEM;
    }
    *buf = b;
    *cap = e->len + 1;
  }
  size_t got = 0;
  while (got < e->len) {
    ssize_t r = pread(fd, *buf + got, e->len - got, (off_t)(e->off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      snprintf(err, errlen, "member at byte offset %llu: read failed after %zu of %u bytes: %s",
               (unsigned long long)e->off, got, e->len, r < 0 ? strerror(errno) : "file shrank");
      close(fd);
      return BFEED_EIO;
    }
    got += (size_t)r;
  }
  close(fd);
  *len = got;
  return 0;
}

void dataset_shards_name(const dataset *d, size_t i, char *out, size_t n) {
  const dataset_shards *s = d->shards;
  size_t f = dataset_shards_file_of(s, i);
  snprintf(out, n, "%s: %s at byte offset %llu", s->files[f], s->tar ? "member" : "record",
           (unsigned long long)s->idx[f].e[i - s->first[f]].off);
}

uint64_t dataset_shards_skipped(const dataset *d) {
  return d->shards && __atomic_load_n(&d->shards->state, __ATOMIC_ACQUIRE) == DATASET_SHARDS_READY
             ? d->shards->skipped
             : 0;
}

void dataset_shards_free(dataset_shards *s) {
  if (!s) return;
  __atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
  if (s->started) pthread_join(s->coordinator, NULL);
  for (size_t f = 0; f < s->nfiles; f++) {
    free(s->files[f]);
    if (s->idx) shard_index_free(&s->idx[f]);
  }
  free(s->files);
  free(s->idx);
  free(s->first);
  free((void *)s->d->features.rows);
  free(s->image_key);
  free(s->label_key);
  free(s->features_key);
  free(s->label_ext);
  free(s->cache_dir);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
