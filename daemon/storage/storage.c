/* storage.c -- the backends by scheme, and what every backend's callers share (see storage.h). */
#include "storage.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "storage_brace.h"

/* Every backend, one storage_*.c file each and one line here; plain paths
 * go to the first. */
#define STORAGE_BACKENDS \
  X(storage_local) X(storage_s3) X(storage_gs) X(storage_http) X(storage_https)
#define X(b) extern const storage_backend b;
STORAGE_BACKENDS
#undef X
#define X(b) &b,
static const storage_backend *const storage_backends[] = {STORAGE_BACKENDS};
#undef X
#define STORAGE_NBACKENDS (sizeof storage_backends / sizeof storage_backends[0])

/* Length of the scheme of path[0..len) ("s3" of "s3://b/k"; len may be
 * SIZE_MAX for a terminated string), 0 for a plain path. */
static size_t storage_scheme_len(const char *path, size_t len) {
  size_t n = 0;
  if (len == 0 || path[0] < 'a' || path[0] > 'z') return 0;
  while (n < len && ((path[n] >= 'a' && path[n] <= 'z') || (path[n] >= '0' && path[n] <= '9') || path[n] == '+' ||
                     path[n] == '-' || path[n] == '.'))
    n++;
  /* In order, so that a terminated string is never read past its end. */
  return len - n >= 3 && path[n] == ':' && path[n + 1] == '/' && path[n + 2] == '/' ? n : 0;
}

static const storage_backend *storage_backend_of(const char *path, char *err, size_t errlen) {
  size_t n = storage_scheme_len(path, SIZE_MAX);
  if (n == 0) return storage_backends[0];
  for (size_t i = 0; i < STORAGE_NBACKENDS; i++)
    if (strlen(storage_backends[i]->scheme) == n && strncmp(storage_backends[i]->scheme, path, n) == 0)
      return storage_backends[i];
  if (err && errlen) {
    int k = snprintf(err, errlen, "%s: no storage backend for %.*s:// (this bfeedd reads", path, (int)n, path);
    for (size_t i = 0; i < STORAGE_NBACKENDS && k >= 0 && (size_t)k < errlen; i++)
      k += snprintf(err + k, errlen - (size_t)k, " %s://", storage_backends[i]->scheme);
    if (k >= 0 && (size_t)k < errlen) snprintf(err + k, errlen - (size_t)k, " and plain paths)");
  }
  return NULL;
}

int storage_open(const char *path, storage_file *f, char *err, size_t errlen) {
  const storage_backend *b = storage_backend_of(path, err, errlen);
  memset(f, 0, sizeof *f);
  if (!b) return BFEED_EDATASET;
  int rc = b->open(path, f, err, errlen);
  if (rc == 0) f->backend = b;
  return rc;
}

/* 0 if the file at path still has the stamp `was`; else BFEED_EDATASET,
 * saying how it changed. */
static int storage_changed(const char *path, const storage_stamp *was, const storage_stamp *now, char *err,
                           size_t errlen) {
  if (storage_stamp_same(now, was)) return 0;
  if (now->size != was->size)
    snprintf(err, errlen, "%s changed since the dataset was loaded (%llu bytes then, %llu now)", path,
             (unsigned long long)was->size, (unsigned long long)now->size);
  else
    snprintf(err, errlen, "%s changed since the dataset was loaded (the same size, but rewritten or replaced)", path);
  return BFEED_EDATASET;
}

int storage_open_same(const char *path, const storage_stamp *was, storage_file *f, int *changed, char *err,
                      size_t errlen) {
  *changed = 0;
  int rc = storage_open(path, f, err, errlen);
  if (rc < 0) {
    if (!f->missing) return rc; /* a FIFO, a folder, a failure of the moment: not a change */
    *changed = 1;
    return snprintf(err, errlen, "%s is gone since the dataset was loaded", path), BFEED_EDATASET;
  }
  if ((rc = storage_changed(path, was, &f->stamp, err, errlen)) == 0) return 0;
  storage_close(f);
  *changed = 1;
  return rc;
}

int storage_stat_same(const char *path, const storage_stamp *was, char *err, size_t errlen) {
  storage_info now;
  char why[400];
  int rc = storage_stat(path, &now, why, sizeof why);
  if (rc < 0 && rc != BFEED_EDATASET) return 0; /* a failure of the moment says nothing of the file */
  if (rc < 0) return snprintf(err, errlen, "%s is gone since the dataset was loaded", path), BFEED_EDATASET;
  return storage_changed(path, was, &now.stamp, err, errlen);
}

int storage_pread(const storage_file *f, void *buf, size_t n, uint64_t off, size_t *got, char *err, size_t errlen) {
  return f->backend->pread(f, buf, n, off, got, err, errlen);
}

int storage_pread_all(const storage_file *f, void *buf, size_t n, uint64_t off, char *err, size_t errlen) {
  size_t got = 0;
  int rc = storage_pread(f, buf, n, off, &got, err, errlen);
  if (rc == 0 && got < n)
    return snprintf(err, errlen, "the file ends at byte offset %llu, %zu bytes short of byte %llu (it shrank?)",
                    (unsigned long long)(off + got), n - got, (unsigned long long)(off + n)),
           BFEED_EDATASET;
  return rc;
}

int storage_pread_grow(const storage_file *f, uint64_t off, size_t n, uint8_t **buf, size_t *cap, char *err,
                       size_t errlen) {
  if (n + 1 > *cap) {
    uint8_t *b = realloc(*buf, n + 1);
    if (!b) return snprintf(err, errlen, "out of memory reading %zu bytes", n), BFEED_ENOMEM;
    *buf = b;
    *cap = n + 1;
  }
  return storage_pread_all(f, *buf, n, off, err, errlen);
}

void storage_prefetch(const storage_file *f, uint64_t off, uint64_t n) {
  if (f->backend && f->backend->prefetch) f->backend->prefetch(f, off, n);
}

void storage_close(storage_file *f) {
  if (f && f->backend) f->backend->close(f);
  if (f) memset(f, 0, sizeof *f);
}

int storage_read_whole(const storage_file *f, const char *path, uint64_t max_size, uint8_t **buf, size_t *cap,
                       size_t *len, char *err, size_t errlen) {
  uint64_t want = storage_size(f);
  if (want > max_size)
    return snprintf(err, errlen, "%s: file is %llu bytes, over the %llu-byte limit", path, (unsigned long long)want,
                    (unsigned long long)max_size),
           BFEED_ETOOBIG;
  char why[256];
  int rc = storage_pread_grow(f, 0, (size_t)want, buf, cap, why, sizeof why);
  if (rc < 0) return snprintf(err, errlen, "%s: %s", path, why), rc;
  *len = (size_t)want;
  return 0;
}

int storage_read_file(const char *path, uint64_t max_size, uint8_t **buf, size_t *cap, size_t *len, char *err,
                      size_t errlen) {
  storage_file f;
  int rc = storage_open(path, &f, err, errlen);
  if (rc == 0) rc = storage_read_whole(&f, path, max_size, buf, cap, len, err, errlen), storage_close(&f);
  return rc;
}

/* splitmix64's finaliser: each input bit reaches every output bit. */
static uint64_t storage_mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

storage_stamp storage_stamp_make(uint64_t size, int64_t mtime_s, int64_t mtime_ns, int64_t ctime_s, int64_t ctime_ns,
                                 uint64_t dev, uint64_t ino) {
  uint64_t h = storage_mix((uint64_t)mtime_s);
  h = storage_mix(h ^ (uint64_t)mtime_ns);
  h = storage_mix(h ^ (uint64_t)ctime_s);
  h = storage_mix(h ^ (uint64_t)ctime_ns);
  h = storage_mix(h ^ dev);
  h = storage_mix(h ^ ino);
  return (storage_stamp){.size = size, .sum = h ? h : 1};
}

int storage_stamps_push(storage_stamps *s, const storage_stamp *st) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    storage_stamp *v = realloc(s->v, cap * sizeof *v);
    if (!v) return BFEED_ENOMEM;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = *st;
  return 0;
}

void storage_stamps_free(storage_stamps *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

int storage_stat(const char *path, storage_info *out, char *err, size_t errlen) {
  const storage_backend *b = storage_backend_of(path, err, errlen);
  memset(out, 0, sizeof *out);
  return b ? b->stat(path, out, err, errlen) : BFEED_EDATASET;
}

void storage_version(const char *path, char *out, size_t cap) {
  storage_info info;
  char err[16];
  if (storage_stat(path, &info, err, sizeof err) == 0) snprintf(out, cap, "%s", info.version);
  else snprintf(out, cap, "-1");
}

int storage_list(const char *dir, storage_entry_fn fn, void *ctx, char *err, size_t errlen) {
  const storage_backend *b = storage_backend_of(dir, err, errlen);
  return b ? b->list(dir, fn, ctx, err, errlen) : BFEED_EDATASET;
}

static int storage_glob_one(const char *pattern, strlist *out, char *err, size_t errlen) {
  const storage_backend *b = storage_backend_of(pattern, err, errlen);
  return b ? b->glob(pattern, out, err, errlen) : BFEED_EDATASET;
}

static int storage_glob_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int storage_glob(const char *pattern, strlist *out, char *err, size_t errlen) {
  if (!strchr(pattern, '{')) return storage_glob_one(pattern, out, err, errlen);
  strlist names = {0};
  int rc = storage_brace_expand(pattern, &names, err, errlen);
  size_t before = out->n;
  for (size_t i = 0; rc == 0 && i < names.n; i++) {
    const char *p = names.v[i];
    size_t had = out->n;
    rc = storage_glob_one(p, out, err, errlen);
    /* What braces name is a list of files, not a pattern: one missing is
     * an error, not a shard fewer. */
    if (rc == 0 && out->n == had && p[strcspn(p, "*?[")] == 0)
      rc = BFEED_EDATASET, snprintf(err, errlen, "%s: no such file (named by the braces of %s)", p, pattern);
  }
  strlist_free(&names);
  if (rc < 0) {
    /* Nothing of a failed expansion is kept. */
    for (size_t i = before; i < out->n; i++) free(out->v[i]);
    out->n = before;
    return rc;
  }
  /* Sorted by name, each once, as a glob gives them. */
  if (out->n > before) qsort(out->v + before, out->n - before, sizeof *out->v, storage_glob_cmp);
  size_t k = before;
  for (size_t i = before; i < out->n; i++) {
    if (k > before && strcmp(out->v[k - 1], out->v[i]) == 0) free(out->v[i]);
    else out->v[k++] = out->v[i];
  }
  out->n = k;
  return 0;
}

int storage_map(const char *path, uint64_t max_size, storage_mapping *m, char *err, size_t errlen) {
  const storage_backend *b = storage_backend_of(path, err, errlen);
  memset(m, 0, sizeof *m);
  if (!b) return BFEED_EDATASET;
  int rc = b->map(path, max_size, m, err, errlen);
  if (rc == 0) m->backend = b;
  return rc;
}

void storage_unmap(storage_mapping *m) {
  if (m->backend) m->backend->unmap(m);
  memset(m, 0, sizeof *m);
}

const char *storage_local_path(const char *path) {
  const storage_backend *b = storage_backend_of(path, NULL, 0);
  return b ? b->local_path(path) : NULL;
}

int storage_is_absolute(const char *path, size_t len) {
  return (len > 0 && path[0] == '/') || storage_scheme_len(path, len) > 0;
}

char *storage_resolve(const char *dir, const char *path, size_t len) {
  int absolute = storage_is_absolute(path, len);
  size_t dl = absolute ? 0 : strlen(dir);
  char *s = malloc(dl + 1 + len + 1);
  if (!s) return NULL;
  if (dl) memcpy(s, dir, dl), s[dl] = '/';
  memcpy(s + (dl ? dl + 1 : 0), path, len);
  s[(dl ? dl + 1 : 0) + len] = 0;
  return s;
}

char *storage_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}
