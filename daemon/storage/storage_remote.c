/*
 * storage_remote.c -- the object-store backends: s3:// (the S3 API: AWS,
 * MinIO, Ceph), gs:// (Cloud Storage's S3-compatible XML API) and plain
 * http:// and https:// (ranged GETs, as nginx or any CDN serves them).
 * Called through storage.c's table (storage.h).
 *
 * Objects are known by a table of what a listing or a HEAD said of each
 * (size, ETag, Last-Modified): opening an object is a look-up in it, so
 * that a batch worker's read of one sample costs no request beyond its
 * bytes, which remote_cache.c reads in blocks (If-Match on the ETag: a
 * changed object is caught by the read that meets it; the table then
 * asks again, and storage_open_same sees the new stamp).
 *
 * Globs: s3:// and gs:// list the prefix before the first wildcard
 * (ListObjectsV2, page by page) and match keys as the shell matches paths
 * ('*' stops at '/'); http(s):// cannot be listed, so its URLs are named
 * one by one (with braces: storage.c expands them for every backend).
 */
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "clock.h"
#include "remote_cache.h"
#include "remote_list.h"
#include "remote_site.h"
#include "storage.h"

#define STORAGE_REMOTE_LIST_MAX (16u << 20) /* one page of a listing */
#define STORAGE_REMOTE_TABLE 4096u
/* How long what the table says of an object stands before a read asks the
 * server again: a changed object is seen within this time even where all
 * its blocks are cached. */
#define STORAGE_REMOTE_RECHECK_NS (10ull * 1000000000ull)

/* A bucket's site: its settings may change on a reload; objects keep the
 * slot, and each request reads the slot's current site. Sites are freed
 * only at exit, so a request in flight never loses its keys. */
typedef struct storage_remote_slot {
  char scheme[8], bucket[256];
  remote_site *site; /* atomic */
  struct storage_remote_slot *next;
} storage_remote_slot;

/* One object as the table knows it. */
typedef struct storage_remote_obj {
  remote_object o;
  char *path; /* as named: s3://bucket/key, https://host/path */
  char *url;  /* as fetched */
  const struct storage_remote_slot *slot; /* its bucket's, or NULL (http) */
  uint64_t seen_ns; /* atomic: when a listing or HEAD last said what it is */
  struct storage_remote_obj *next;
} storage_remote_obj;

static struct {
  pthread_mutex_t mu;
  storage_remote_slot *slots;
  storage_remote_obj *table[STORAGE_REMOTE_TABLE];
  /* What was replaced, freed at exit: a reader may still hold it. */
  storage_remote_obj *retired_objs;
  remote_site **retired_sites;
  size_t nretired_sites;
} sr = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ------------------------------------------------------------------ */
/* Names                                                               */

/* A parsed path: scheme ("s3", "gs", "http", "https"), bucket or host,
 * and the key or path after it (no leading '/'). */
typedef struct storage_remote_name {
  char scheme[8];
  char bucket[256];
  const char *key;
  int is_store; /* s3 or gs: a bucket and its keys */
} storage_remote_name;

static int storage_remote_parse(const char *path, storage_remote_name *n, char *err, size_t errlen) {
  memset(n, 0, sizeof *n);
  const char *sep = strstr(path, "://");
  if (!sep || (size_t)(sep - path) >= sizeof n->scheme)
    return snprintf(err, errlen, "%s: not a URL", path), BFEED_EDATASET;
  memcpy(n->scheme, path, (size_t)(sep - path));
  n->is_store = strcmp(n->scheme, "s3") == 0 || strcmp(n->scheme, "gs") == 0;
  const char *host = sep + 3, *slash = strchr(host, '/');
  size_t hl = slash ? (size_t)(slash - host) : strlen(host);
  if (hl == 0 || hl >= sizeof n->bucket)
    return snprintf(err, errlen, "%s: no %s in the URL", path, n->is_store ? "bucket" : "host"), BFEED_EDATASET;
  memcpy(n->bucket, host, hl);
  n->key = slash ? slash + 1 : "";
  return 0;
}

/* The slot of a bucket, or NULL. sr.mu held. */
static storage_remote_slot *storage_remote_slot_find(const storage_remote_name *n) {
  for (storage_remote_slot *s = sr.slots; s; s = s->next)
    if (strcmp(s->scheme, n->scheme) == 0 && strcmp(s->bucket, n->bucket) == 0) return s;
  return NULL;
}

/* A new slot for n's bucket holding site (taken), or NULL when out of
 * memory (site freed). sr.mu held. */
static storage_remote_slot *storage_remote_slot_add(const storage_remote_name *n, remote_site *site) {
  storage_remote_slot *s = calloc(1, sizeof *s);
  if (!s) return free(site), NULL;
  snprintf(s->scheme, sizeof s->scheme, "%s", n->scheme);
  snprintf(s->bucket, sizeof s->bucket, "%s", n->bucket);
  s->site = site;
  s->next = sr.slots;
  sr.slots = s;
  return s;
}

/* The slot of a bucket, made with the environment's settings if no
 * dataset configured it. sr.mu held. */
static storage_remote_slot *storage_remote_slot_of(const storage_remote_name *n, char *err, size_t errlen,
                                                   int *rc) {
  storage_remote_slot *s = storage_remote_slot_find(n);
  if (s) return s;
  remote_site *site = malloc(sizeof *site);
  remote_site_cfg none = {0};
  if (!site) return *rc = BFEED_ENOMEM, snprintf(err, errlen, "out of memory"), NULL;
  if ((*rc = remote_site_resolve(n->scheme, n->bucket, &none, site, err, errlen)) < 0) return free(site), NULL;
  if (!(s = storage_remote_slot_add(n, site))) *rc = BFEED_ENOMEM, snprintf(err, errlen, "out of memory");
  return s;
}

/* sr.mu held. Out of memory, the site is left unfreed: a leak of one
 * small struct rather than a use after free. */
static void storage_remote_retire_site(remote_site *site) {
  remote_site **v = realloc(sr.retired_sites, (sr.nretired_sites + 1) * sizeof *v);
  if (!v) return;
  sr.retired_sites = v;
  v[sr.nretired_sites++] = site;
}

int storage_configure(const char *path, const char *endpoint, const char *region, const char *profile,
                      const char *credentials_file, char *where, size_t wherelen, char *err, size_t errlen) {
  storage_remote_name n;
  if (where && wherelen) where[0] = 0;
  if (storage_local_path(path)) return 0; /* a plain path or file:// */
  int rc = storage_remote_parse(path, &n, err, errlen);
  if (rc < 0) return rc;
  if (!n.is_store) {
    if (where) snprintf(where, wherelen, "%s://%s (unsigned)", n.scheme, n.bucket);
    return 0;
  }
  remote_site_cfg cfg = {endpoint, region, profile, credentials_file};
  remote_site *site = malloc(sizeof *site);
  if (!site) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  if ((rc = remote_site_resolve(n.scheme, n.bucket, &cfg, site, err, errlen)) < 0) return free(site), rc;
  if (where) snprintf(where, wherelen, "%s (keys: %s)", site->base, site->where);
  pthread_mutex_lock(&sr.mu);
  storage_remote_slot *s = storage_remote_slot_find(&n);
  if (!s) {
    s = storage_remote_slot_add(&n, site);
  } else {
    storage_remote_retire_site(s->site);
    __atomic_store_n(&s->site, site, __ATOMIC_RELEASE);
    /* The bucket's objects sign with the new keys from here on. */
    const remote_auth *auth = site->auth.sign ? &site->auth : NULL;
    for (size_t i = 0; i < STORAGE_REMOTE_TABLE; i++)
      for (storage_remote_obj *o = sr.table[i]; o; o = o->next)
        if (o->slot == s) __atomic_store_n(&o->o.auth, auth, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&sr.mu);
  return s ? 0 : (snprintf(err, errlen, "out of memory"), BFEED_ENOMEM);
}

/* The URL to fetch for path, and its slot's keys. */
static char *storage_remote_url(const storage_remote_name *n, const char *path, const remote_auth **auth,
                                const storage_remote_slot **slot, char *err, size_t errlen, int *rc) {
  *auth = NULL;
  *slot = NULL;
  if (!n->is_store) {
    char *u = strdup(path);
    if (!u) *rc = BFEED_ENOMEM, snprintf(err, errlen, "out of memory");
    return u;
  }
  pthread_mutex_lock(&sr.mu);
  storage_remote_slot *s = storage_remote_slot_of(n, err, errlen, rc);
  remote_site *site = s ? __atomic_load_n(&s->site, __ATOMIC_ACQUIRE) : NULL;
  pthread_mutex_unlock(&sr.mu);
  if (!site) return NULL;
  *slot = s;
  char *key = remote_list_encode_key(n->key);
  size_t len = strlen(site->base) + (key ? strlen(key) : 0) + 2;
  char *u = key ? malloc(len) : NULL;
  if (u) snprintf(u, len, "%s/%s", site->base, key);
  else *rc = BFEED_ENOMEM, snprintf(err, errlen, "out of memory");
  free(key);
  *auth = site->auth.sign ? &site->auth : NULL;
  return u;
}

/* ------------------------------------------------------------------ */
/* The table of objects                                                */

static size_t storage_remote_hash(const char *path) { return (size_t)(XXH64(path, strlen(path), 0) % STORAGE_REMOTE_TABLE); }

/* sr.mu held. */
static storage_remote_obj *storage_remote_find(const char *path) {
  for (storage_remote_obj *o = sr.table[storage_remote_hash(path)]; o; o = o->next)
    if (strcmp(o->path, path) == 0) return o;
  return NULL;
}

/* Put what a listing or HEAD said of path in the table (replacing what it
 * said before: the old entry lives on for readers that hold it). */
static storage_remote_obj *storage_remote_put(const char *path, const char *url, const remote_auth *auth,
                                              const storage_remote_slot *slot, uint64_t size, const char *etag,
                                              int64_t mtime_s) {
  storage_remote_obj *o = calloc(1, sizeof *o);
  if (!o || !(o->path = strdup(path)) || !(o->url = strdup(url))) {
    if (o) free(o->path), free(o);
    return NULL;
  }
  o->o.url = o->url;
  o->o.what = o->path;
  o->o.auth = auth;
  o->slot = slot;
  o->seen_ns = clock_now_ns();
  o->o.size = size;
  o->o.mtime_s = mtime_s;
  snprintf(o->o.etag, sizeof o->o.etag, "%s", etag ? etag : "");
  remote_cache_object_init(&o->o);
  pthread_mutex_lock(&sr.mu);
  storage_remote_obj **p = &sr.table[storage_remote_hash(path)];
  for (; *p; p = &(*p)->next)
    if (strcmp((*p)->path, path) == 0) {
      storage_remote_obj *old = *p;
      *p = old->next;
      old->next = sr.retired_objs;
      sr.retired_objs = old;
      break;
    }
  o->next = sr.table[storage_remote_hash(path)];
  sr.table[storage_remote_hash(path)] = o;
  pthread_mutex_unlock(&sr.mu);
  return o;
}

/* The object at path: the table's, or a HEAD's (also when the table's
 * was found changed). *missing when the server says 404. */
static storage_remote_obj *storage_remote_lookup(const char *path, int *missing, char *err, size_t errlen, int *rc) {
  *missing = 0;
  pthread_mutex_lock(&sr.mu);
  storage_remote_obj *o = storage_remote_find(path);
  pthread_mutex_unlock(&sr.mu);
  storage_remote_obj *known = NULL;
  if (o && !__atomic_load_n(&o->o.changed, __ATOMIC_RELAXED)) {
    /* Asked again once in a while (one caller asks, the others go on with
     * what is known): blocks already cached would never meet If-Match. */
    uint64_t now = clock_now_ns(), seen = __atomic_load_n(&o->seen_ns, __ATOMIC_RELAXED);
    if (now - seen < STORAGE_REMOTE_RECHECK_NS ||
        !__atomic_compare_exchange_n(&o->seen_ns, &seen, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return o;
    known = o;
  }
  storage_remote_name n;
  if ((*rc = storage_remote_parse(path, &n, err, errlen)) < 0) return NULL;
  const remote_auth *auth;
  const storage_remote_slot *slot;
  char *url = storage_remote_url(&n, path, &auth, &slot, err, errlen, rc);
  if (!url) return NULL;
  remote_http_req q = {.url = url, .what = path, .head = 1, .auth = auth};
  remote_http_resp r;
  *rc = remote_http_do(&q, remote_cache_http(), &r, err, errlen);
  if (*rc == 0 && r.size == UINT64_MAX)
    *rc = BFEED_EDATASET, snprintf(err, errlen, "%s: the server gives no Content-Length", path);
  if (*rc < 0) {
    free(url);
    *missing = r.status == 404;
    if (r.status == 404) return snprintf(err, errlen, "%s: no such object (HTTP 404)", path), NULL;
    /* A failure of the moment says nothing of an object known. */
    return known && *rc == BFEED_EIO ? (*rc = 0, known) : NULL;
  }
  /* Unchanged: the same size, ETag and time (a server without ETags is
   * judged by the other two). */
  if (known && known->o.size == r.size && strcmp(known->o.etag, r.etag) == 0 && known->o.mtime_s == r.mtime_s)
    return free(url), known;
  o = storage_remote_put(path, url, auth, slot, r.size, r.etag, r.mtime_s);
  free(url);
  if (!o) *rc = BFEED_ENOMEM, snprintf(err, errlen, "out of memory");
  return o;
}

static storage_stamp storage_remote_stamp(const remote_object *o) {
  return storage_stamp_make(o->size, o->mtime_s, 0, 0, 0, XXH64(o->etag, strlen(o->etag), 0), 0);
}

static void storage_remote_info(const remote_object *o, storage_info *out) {
  memset(out, 0, sizeof *out);
  out->type = STORAGE_FILE;
  out->size = o->size;
  out->mtime_s = o->mtime_s;
  out->stamp = storage_remote_stamp(o);
  /* The fingerprint's: the ETag (equal for every reader of the object),
   * or for a server without ETags the size, as for a local file. */
  if (o->etag[0]) snprintf(out->version, sizeof out->version, "%s", o->etag);
  else snprintf(out->version, sizeof out->version, "%llu", (unsigned long long)o->size);
}

/* ------------------------------------------------------------------ */
/* The backend's operations                                            */

static int storage_remote_open(const char *path, storage_file *f, char *err, size_t errlen) {
  int rc = 0, missing;
  storage_remote_obj *o = storage_remote_lookup(path, &missing, err, errlen, &rc);
  if (!o) return f->missing = missing, rc;
  f->h.p = o;
  f->size = o->o.size;
  f->stamp = storage_remote_stamp(&o->o);
  return 0;
}

static int storage_remote_pread(const storage_file *f, void *buf, size_t n, uint64_t off, size_t *got, char *err,
                                size_t errlen) {
  storage_remote_obj *o = f->h.p;
  return remote_cache_read(&o->o, buf, n, off, got, err, errlen);
}

static void storage_remote_prefetch(const storage_file *f, uint64_t off, uint64_t n) {
  storage_remote_obj *o = f->h.p;
  remote_cache_prefetch(&o->o, off, n);
}

static void storage_remote_close(storage_file *f) { f->h.p = NULL; }

/* One page of a listing of prefix (with delimiter "/" when dirs). */
static int storage_remote_list_page(const storage_remote_name *n, const char *prefix, int dirs, const char *token,
                                    remote_list_page *page, const remote_auth **auth, const char *path, char *err,
                                    size_t errlen) {
  int rc = 0;
  storage_remote_name root = *n;
  root.key = "";
  const storage_remote_slot *slot;
  char *base = storage_remote_url(&root, path, auth, &slot, err, errlen, &rc);
  if (!base) return rc;
  char *query = NULL, why[512];
  remote_list_request rq = {.prefix = prefix, .delimiter = dirs ? "/" : NULL, .continuation_token = token,
                            .max_keys = 1000, .url_encoding = 1};
  if ((rc = remote_list_query(&rq, &query, why, sizeof why)) < 0) {
    free(base);
    return snprintf(err, errlen, "%s: %s", path, why), rc == BFEED_ENOMEM ? rc : BFEED_EDATASET;
  }
  size_t bl = strlen(base);
  if (bl && base[bl - 1] == '/') base[--bl] = 0; /* the bucket's root: ".../bucket" */
  size_t ul = bl + strlen(query) + 3;
  char *url = malloc(ul);
  if (url) snprintf(url, ul, "%s/?%s", base, query);
  free(base);
  free(query);
  if (!url) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  uint8_t *body = NULL;
  size_t cap = 0;
  remote_http_req q = {.url = url, .what = path, .auth = *auth, .gbuf = &body, .gcap = &cap,
                       .max = STORAGE_REMOTE_LIST_MAX};
  remote_http_resp r;
  rc = remote_http_do(&q, remote_cache_http(), &r, err, errlen);
  free(url);
  if (rc == 0) {
    rc = remote_list_parse((const char *)body, r.got, page, why, sizeof why);
    if (rc < 0) snprintf(err, errlen, "%s: listing: %s", path, why);
  } else if (r.status == 404) {
    snprintf(err, errlen, "%s: no such bucket (HTTP 404%s%s)", path, r.code[0] ? ", " : "", r.code);
  }
  free(body);
  return rc;
}

/* Every key under prefix, through fn(ctx, key, entry) per object and
 * fn(ctx, prefix, NULL) per common prefix (with dirs). */
typedef int (*storage_remote_each_fn)(void *ctx, const storage_remote_name *n, const remote_auth *auth,
                                      const remote_list_entry *e, const char *common);

static int storage_remote_walk(const storage_remote_name *n, const char *prefix, int dirs, const char *path,
                               storage_remote_each_fn fn, void *ctx, char *err, size_t errlen) {
  char *token = NULL;
  int rc = 0;
  do {
    remote_list_page page;
    const remote_auth *auth;
    memset(&page, 0, sizeof page);
    if ((rc = storage_remote_list_page(n, prefix, dirs, token, &page, &auth, path, err, errlen)) < 0) break;
    for (size_t i = 0; rc >= 0 && i < page.n_entries; i++) rc = fn(ctx, n, auth, &page.entries[i], NULL);
    for (size_t i = 0; rc >= 0 && i < page.prefixes.n; i++) rc = fn(ctx, n, auth, NULL, page.prefixes.v[i]);
    free(token);
    token = page.is_truncated && page.next_token ? strdup(page.next_token) : NULL;
    if (page.is_truncated && !token && rc >= 0)
      rc = BFEED_EDATASET, snprintf(err, errlen, "%s: a listing page is truncated without a continuation token", path);
    remote_list_page_free(&page);
  } while (rc >= 0 && token);
  free(token);
  return rc < 0 ? rc : 0;
}

/* The path "scheme://bucket/key" of a listed key, into the table. */
static storage_remote_obj *storage_remote_listed(const storage_remote_name *n, const remote_auth *auth,
                                                 const remote_list_entry *e, char **path_out) {
  size_t pl = strlen(n->scheme) + strlen(n->bucket) + strlen(e->key) + 5;
  char *path = malloc(pl);
  if (!path) return NULL;
  snprintf(path, pl, "%s://%s/%s", n->scheme, n->bucket, e->key);
  storage_remote_name kn = *n;
  kn.key = e->key;
  int rc = 0;
  const remote_auth *a;
  const storage_remote_slot *slot;
  char err[64];
  char *url = storage_remote_url(&kn, path, &a, &slot, err, sizeof err, &rc);
  storage_remote_obj *o = url ? storage_remote_put(path, url, auth, slot, e->size, e->etag, e->mtime_s) : NULL;
  free(url);
  if (o && path_out) *path_out = path;
  else free(path);
  return o;
}

typedef struct storage_remote_globbing {
  const char *pattern; /* the key's pattern */
  strlist *out;
} storage_remote_globbing;

static int storage_remote_glob_one(void *ctx, const storage_remote_name *n, const remote_auth *auth,
                                   const remote_list_entry *e, const char *common) {
  storage_remote_globbing *g = ctx;
  if (common || fnmatch(g->pattern, e->key, FNM_PATHNAME | FNM_PERIOD) != 0) return 0;
  char *path = NULL;
  if (!storage_remote_listed(n, auth, e, &path)) return BFEED_ENOMEM;
  return strlist_push(g->out, path) < 0 ? BFEED_ENOMEM : 0;
}

static int storage_remote_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int storage_remote_glob(const char *pattern, strlist *out, char *err, size_t errlen) {
  storage_remote_name n;
  int rc = storage_remote_parse(pattern, &n, err, errlen);
  if (rc < 0) return rc;
  size_t wild = strcspn(n.key, "*?[");
  if (!n.key[wild]) {
    /* A name, not a pattern: it is there or it is not. */
    int missing;
    storage_remote_obj *o = storage_remote_lookup(pattern, &missing, err, errlen, &rc);
    if (!o) return missing ? 0 : rc;
    return strlist_push(out, strdup(pattern)) < 0 ? (snprintf(err, errlen, "out of memory"), BFEED_ENOMEM) : 0;
  }
  if (!n.is_store)
    return snprintf(err, errlen, "%s: %s:// cannot be listed, so it takes no wildcards: name the objects (braces "
                                 "such as shard-{000..127}.tar expand)", pattern, n.scheme),
           BFEED_EDATASET;
  char *prefix = strndup(n.key, wild);
  if (!prefix) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  storage_remote_globbing g = {.pattern = n.key, .out = out};
  size_t before = out->n;
  rc = storage_remote_walk(&n, prefix, 0, pattern, storage_remote_glob_one, &g, err, errlen);
  free(prefix);
  if (rc == BFEED_ENOMEM) snprintf(err, errlen, "out of memory");
  if (rc == 0 && out->n > before) qsort(out->v + before, out->n - before, sizeof *out->v, storage_remote_cmp);
  return rc;
}

typedef struct storage_remote_listing {
  size_t skip; /* the prefix's length */
  storage_entry_fn fn;
  void *ctx;
} storage_remote_listing;

static int storage_remote_list_one(void *ctx, const storage_remote_name *n, const remote_auth *auth,
                                   const remote_list_entry *e, const char *common) {
  storage_remote_listing *l = ctx;
  storage_info info = {0};
  char name[1100];
  if (common) {
    info.type = STORAGE_DIR;
    size_t k = strlen(common);
    snprintf(name, sizeof name, "%.*s", (int)(k > l->skip + 1 ? k - l->skip - 1 : 0), common + l->skip);
  } else {
    storage_remote_obj *o = storage_remote_listed(n, auth, e, NULL);
    if (!o) return BFEED_ENOMEM;
    storage_remote_info(&o->o, &info);
    snprintf(name, sizeof name, "%s", e->key + l->skip);
  }
  if (!name[0]) return 0; /* the folder's own marker object */
  return l->fn(l->ctx, name, &info, NULL);
}

static int storage_remote_list(const char *dir, storage_entry_fn fn, void *ctx, char *err, size_t errlen) {
  storage_remote_name n;
  int rc = storage_remote_parse(dir, &n, err, errlen);
  if (rc < 0) return rc;
  if (!n.is_store) return snprintf(err, errlen, "%s: %s:// cannot be listed", dir, n.scheme), BFEED_EDATASET;
  size_t kl = strlen(n.key);
  char *prefix = malloc(kl + 2);
  if (!prefix) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  snprintf(prefix, kl + 2, "%s%s", n.key, kl && n.key[kl - 1] != '/' ? "/" : "");
  storage_remote_listing l = {.skip = strlen(prefix), .fn = fn, .ctx = ctx};
  rc = storage_remote_walk(&n, prefix, 1, dir, storage_remote_list_one, &l, err, errlen);
  free(prefix);
  return rc;
}

static int storage_remote_stat(const char *path, storage_info *out, char *err, size_t errlen) {
  int rc = 0, missing;
  storage_remote_obj *o = storage_remote_lookup(path, &missing, err, errlen, &rc);
  if (o) return storage_remote_info(&o->o, out), 0;
  return rc;
}

static int storage_remote_map(const char *path, uint64_t max_size, storage_mapping *m, char *err, size_t errlen) {
  storage_file f = {0};
  int rc = storage_remote_open(path, &f, err, errlen);
  if (rc < 0) return rc;
  storage_remote_obj *o = f.h.p;
  storage_remote_info(&o->o, &m->info);
  if (o->o.size > max_size)
    return snprintf(err, errlen, "%s: %llu bytes, over the %llu-byte limit", path, (unsigned long long)o->o.size,
                    (unsigned long long)max_size),
           BFEED_ETOOBIG;
  uint8_t *b = malloc(o->o.size ? (size_t)o->o.size : 1);
  if (!b) return snprintf(err, errlen, "%s: out of memory", path), BFEED_ENOMEM;
  size_t got;
  if ((rc = remote_cache_read(&o->o, b, (size_t)o->o.size, 0, &got, err, errlen)) < 0) return free(b), rc;
  m->data = o->o.size ? b : (free(b), NULL);
  m->size = (size_t)o->o.size;
  return 0;
}

static void storage_remote_unmap(storage_mapping *m) { free((void *)m->data); }

static const char *storage_remote_local_path(const char *path) {
  (void)path;
  return NULL;
}

#define STORAGE_REMOTE_BACKEND(name, sch)                                                                        \
  const storage_backend name = {.scheme = sch, .open = storage_remote_open, .pread = storage_remote_pread,      \
                                .prefetch = storage_remote_prefetch, .close = storage_remote_close,              \
                                .stat = storage_remote_stat, .list = storage_remote_list,                        \
                                .glob = storage_remote_glob, .map = storage_remote_map,                          \
                                .unmap = storage_remote_unmap, .local_path = storage_remote_local_path}
STORAGE_REMOTE_BACKEND(storage_s3, "s3");
STORAGE_REMOTE_BACKEND(storage_gs, "gs");
STORAGE_REMOTE_BACKEND(storage_http, "http");
STORAGE_REMOTE_BACKEND(storage_https, "https");

int storage_setup_remote(const char *cache_dir, uint64_t max_bytes, int parallel, long timeout_ms, int retries,
                         char *err, size_t errlen) {
  remote_http_opts http = REMOTE_HTTP_OPTS_DEFAULT;
  if (timeout_ms > 0) http.timeout_ms = timeout_ms;
  if (retries >= 0) http.retries = retries;
  remote_cache_cfg cfg = {.dir = cache_dir, .max_bytes = max_bytes, .parallel = parallel, .http = http};
  return remote_cache_setup(&cfg, err, errlen);
}

void storage_remote_counts_get(storage_remote_counts *out) {
  remote_http_counters h;
  remote_cache_counters c;
  remote_http_counters_get(&h);
  remote_cache_counters_get(&c);
  *out = (storage_remote_counts){.requests = h.requests, .retries = h.retries, .failures = h.failures,
                                 .bytes_fetched = h.bytes, .in_flight = h.in_flight, .cache_hits = c.hits,
                                 .cache_misses = c.misses, .cache_disk_hits = c.disk_hits,
                                 .prefetched = c.prefetched, .cache_bytes_memory = c.bytes_memory,
                                 .cache_bytes_disk = c.bytes_disk, .evictions = c.evictions};
}

void storage_remote_shutdown(void) {
  remote_cache_shutdown();
  pthread_mutex_lock(&sr.mu);
  for (size_t i = 0; i < STORAGE_REMOTE_TABLE; i++)
    while (sr.table[i]) {
      storage_remote_obj *o = sr.table[i];
      sr.table[i] = o->next;
      free(o->path), free(o->url), free(o);
    }
  while (sr.slots) {
    storage_remote_slot *s = sr.slots;
    sr.slots = s->next;
    free(s->site), free(s);
  }
  while (sr.retired_objs) {
    storage_remote_obj *o = sr.retired_objs;
    sr.retired_objs = o->next;
    free(o->path), free(o->url), free(o);
  }
  for (size_t i = 0; i < sr.nretired_sites; i++) free(sr.retired_sites[i]);
  free(sr.retired_sites);
  sr.retired_sites = NULL;
  sr.nretired_sites = 0;
  pthread_mutex_unlock(&sr.mu);
}
