/*
 * dataset.c -- the table of dataset kinds, the settings helpers they share,
 * and the calls of dataset.h passed on to a dataset's kind.
 * Called by main.c, dispatch.c, stream.c, batch.c (dataset.h) and by the
 * kind_*.c files (dataset_kind.h).
 */
#include "dataset.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_kind.h"
#include "errtext.h"
#include "fingerprint.h"
#include "skips.h"
#include "storage.h"

/* Every kind, one kind_*.c file each and one line here; the first is the
 * default, and an unknown kind's message lists them in this order. */
#define DATASET_KINDS \
  X(kind_folder)      \
  X(kind_text)        \
  X(kind_npy)         \
  X(kind_manifest)    \
  X(kind_tfrecord)    \
  X(kind_tar)         \
  X(kind_list)        \
  X(kind_pack)
#define X(k) extern const dataset_kind k;
DATASET_KINDS
#undef X
#define X(k) &k,
static const dataset_kind *const dataset_kinds[] = {DATASET_KINDS};
#undef X
#define DATASET_NKINDS (sizeof dataset_kinds / sizeof dataset_kinds[0])

/* The kind called name (NULL: the default), or NULL. */
static const dataset_kind *dataset_kind_find(const char *name) {
  if (!name) return dataset_kinds[0];
  for (size_t i = 0; i < DATASET_NKINDS; i++)
    if (strcmp(name, dataset_kinds[i]->name) == 0) return dataset_kinds[i];
  return NULL;
}

const char *dataset_kind_name(const dataset *d) { return d->kind->name; }

static const dataset_key_spec *dataset_key_spec_of(const dataset_kind *kind, const char *key) {
  for (const dataset_key_spec *s = kind->keys; s && s->name; s++)
    if (strcmp(s->name, key) == 0) return s;
  return NULL;
}

int dataset_kind_takes_key(const char *kind, const char *key) {
  const dataset_kind *k = dataset_kind_find(kind);
  return k && dataset_key_spec_of(k, key) != NULL;
}

dataset_key_role dataset_key_role_of(const dataset_kind *kind, const char *key) {
  const dataset_key_spec *s = dataset_key_spec_of(kind, key);
  return s ? s->role : DATASET_KEY_PLACE;
}

int dataset_background(const dataset *d) { return d->kind->ready != NULL; }

/* ------------------------------------------------------------------ */
/* Settings                                                            */

const dataset_kv *dataset_key(const dataset_keys *k, const char *key) {
  for (size_t i = 0; i < k->nkv; i++)
    if (strcmp(k->kv[i].key, key) == 0) return &k->kv[i];
  return NULL;
}

int dataset_key_fail(const dataset_kv *kv, const char *name, char *err, size_t errlen, const char *fmt, ...) {
  char where[PATH_MAX + 256];
  snprintf(where, sizeof where, "%s: dataset %s: %s=%s: ", kv->where, name, kv->key, kv->value);
  va_list ap;
  va_start(ap, fmt);
  int rc = errtext_vset(err, errlen, BFEED_EDATASET, where, fmt, ap);
  va_end(ap);
  return rc;
}

int dataset_oom(const dataset *d, char *err, size_t errlen) {
  return snprintf(err, errlen, "dataset %s: out of memory", d->name), BFEED_ENOMEM;
}

/* Refuse a key the kind does not take, so that a misspelt key (pathh) is
 * named with its file and line rather than reported as the setting it
 * failed to give. */
static int dataset_keys_check(const dataset_keys *k, const dataset_kind *kind, char *err, size_t errlen) {
  for (size_t i = 0; i < k->nkv; i++) {
    const char *key = k->kv[i].key;
    if (strcmp(key, "kind") == 0 || strcmp(key, "path") == 0 || dataset_key_spec_of(kind, key)) continue;
    int n = snprintf(err, errlen, "%s: dataset %s: unknown key '%s' for kind %s (known: kind path", k->kv[i].where,
                     k->name, key, k->kind);
    for (const dataset_key_spec *s = kind->keys; s && s->name && n >= 0 && (size_t)n < errlen; s++)
      n += snprintf(err + n, errlen - (size_t)n, " %s", s->name);
    if (n >= 0 && (size_t)n < errlen) snprintf(err + n, errlen - (size_t)n, ")");
    return BFEED_EDATASET;
  }
  return 0;
}

int dataset_key_bool(const dataset_keys *k, const char *key, int def, int *out, char *err, size_t errlen) {
  static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
  const dataset_kv *kv = dataset_key(k, key);
  *out = def;
  if (!kv) return 0;
  for (int i = 0; i < 4; i++) {
    if (strcmp(kv->value, yes[i]) == 0) return *out = 1, 0;
    if (strcmp(kv->value, no[i]) == 0) return *out = 0, 0;
  }
  return dataset_key_fail(kv, k->name, err, errlen, "expected 1/0, true/false, yes/no or on/off");
}

int dataset_key_u64(const dataset_keys *k, const char *key, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out,
                    char *err, size_t errlen) {
  const dataset_kv *kv = dataset_key(k, key);
  *out = def;
  if (!kv) return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(kv->value, &end, 10);
  if (!kv->value[0] || *end || errno || kv->value[0] == '-' || v < lo || v > hi)
    return dataset_key_fail(kv, k->name, err, errlen, "expected a whole number from %llu to %llu",
                            (unsigned long long)lo, (unsigned long long)hi);
  *out = v;
  return 0;
}

int dataset_key_string(const dataset_keys *k, const char *key, const char *def, char **out) {
  const dataset_kv *kv = dataset_key(k, key);
  const char *v = kv ? kv->value : def;
  *out = v && v[0] ? strdup(v) : NULL;
  return v && v[0] && !*out ? BFEED_ENOMEM : 0;
}

/* ------------------------------------------------------------------ */
/* Kinds whose samples are image files                                 */

int dataset_files_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                       size_t errlen) {
  if (!d->stamps) return storage_read_file(d->paths[i], DATASET_MAX_FILE, buf, cap, len, err, errlen);
  storage_file f;
  int changed;
  int rc = storage_open_same(d->paths[i], &d->stamps[i], &f, &changed, err, errlen);
  if (changed) dataset_mark_changed(d, err);
  if (rc < 0) return rc;
  rc = storage_read_whole(&f, d->paths[i], DATASET_MAX_FILE, buf, cap, len, err, errlen);
  storage_close(&f);
  return rc;
}

void dataset_files_name(const dataset *d, size_t i, char *out, size_t n) { snprintf(out, n, "%s", d->paths[i]); }

int dataset_files_add(const dataset *d, strlist *paths, storage_stamps *stamps, const char *dir, const char *image,
                      size_t len, const char *file, uint64_t line, char *err, size_t errlen) {
  char *path = storage_resolve(dir, image, len);
  if (!path) return dataset_oom(d, err, errlen);
  storage_info st;
  char why[1024];
  int rc = storage_stat(path, &st, why, sizeof why);
  if (rc == 0 && st.type != STORAGE_FILE)
    rc = BFEED_EDATASET, snprintf(why, sizeof why, "%s: not a regular file", path);
  if (rc < 0) {
    snprintf(err, errlen, "%s:%llu: image %s", file, (unsigned long long)line, why);
    free(path);
    return BFEED_EDATASET;
  }
  if (storage_stamps_push(stamps, &st.stamp) < 0) return free(path), dataset_oom(d, err, errlen);
  return strlist_push(paths, path) < 0 ? dataset_oom(d, err, errlen) : 0;
}

void dataset_note_nonfinite(dataset *d, const char *file, uint64_t n, const char *first, const logger *log) {
  d->nonfinite += n;
  if (n)
    log_warn(log, "dataset %s: %s: %llu value(s) are NaN or infinite as served (bf16), the first in %s; they are "
             "served as they are", d->name, file, (unsigned long long)n, first);
}

void dataset_log_dropped(const dataset *d, strlist *dropped, const logger *log) {
  for (size_t i = 0; i < dropped->n; i++) log_warn(log, "dataset %s: skipping %s", d->name, dropped->v[i]);
  strlist_free(dropped);
}

/* ------------------------------------------------------------------ */

static void dataset_free(dataset *d) {
  if (d->kind && d->kind->free) d->kind->free(d); /* first: background threads may still fill d */
  strlist_free_array(d->paths, d->nsamples);
  free(d->stamps);
  strlist_free_array(d->classes, d->nclasses);
  free(d->labels);
  free(d->bad);
  skips_free(d->skips);
  wordvec_free(&d->vectors);
  textset_free(&d->text);
  npy_source_close(&d->features);
  free(d->name);
  free(d->root);
  free(d);
}

/* "image, text, npy, manifest, tfrecord, tar or list" */
static void dataset_kinds_text(char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  for (size_t i = 0; i < DATASET_NKINDS && n < cap; i++)
    n += (size_t)snprintf(out + n, cap - n, "%s%s", i == 0 ? "" : i + 1 == DATASET_NKINDS ? " or " : ", ",
                          dataset_kinds[i]->name);
}

dataset *dataset_open(const char *name, const dataset_kv *kv, size_t nkv, const logger *log, char *err,
                      size_t errlen) {
  logger fallback;
  if (!log) {
    log_init(&fallback, LOG_INFO);
    log = &fallback;
  }
  dataset_keys k = {.name = name, .kind = dataset_kinds[0]->name, .kv = kv, .nkv = nkv};
  const dataset_kv *kind = dataset_key(&k, "kind"), *path = dataset_key(&k, "path");
  if (kind) k.kind = kind->value;
  const dataset_kind *ops = dataset_kind_find(k.kind);
  if (!ops) {
    char known[256];
    dataset_kinds_text(known, sizeof known);
    snprintf(err, errlen, "%s: dataset %s: unknown kind '%s' (expected %s)", kind ? kind->where : "dataset", name,
             k.kind, known);
    return NULL;
  }
  if (dataset_keys_check(&k, ops, err, errlen) < 0) return NULL;
  if (!path) {
    snprintf(err, errlen, "%s: dataset %s: no path given", nkv ? kv[0].where : "dataset", name);
    return NULL;
  }
  dataset *d = calloc(1, sizeof *d);
  if (!d || !(d->name = strdup(name)) || !(d->root = strdup(path->value)) || !(d->skips = skips_new())) {
    snprintf(err, errlen, "dataset %s: out of memory", name);
    if (d) dataset_free(d);
    return NULL;
  }
  d->refs = 1;
  d->kind = ops;
  err[0] = 0;
  if (ops->load(d, &k, log, err, errlen) < 0) {
    size_t n = strlen(err);
    if (n + 1 < errlen && !strstr(err, path->where)) snprintf(err + n, errlen - n, " (%s)", path->where);
    dataset_free(d);
    return NULL;
  }
  d->fingerprint = fingerprint_dataset(d, &k);
  return d;
}

dataset *dataset_load(const char *name, const dataset_kv *kv, size_t nkv, char *err, size_t errlen) {
  return dataset_open(name, kv, nkv, NULL, err, errlen);
}

dataset *dataset_ref(dataset *d) {
  __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
  return d;
}

void dataset_unref(dataset *d) {
  if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0) dataset_free(d);
}

int dataset_ready(const dataset *d, char *err, size_t errlen) {
  if (__atomic_load_n(&d->changed, __ATOMIC_ACQUIRE) == 2) {
    snprintf(err, errlen, "dataset %s is being reloaded: %s", d->name, d->changed_why);
    return BFEED_EBUSY;
  }
  return d->kind->ready ? d->kind->ready(d, err, errlen) : 0;
}

int dataset_wait(dataset *d, char *err, size_t errlen) { return d->kind->wait ? d->kind->wait(d, err, errlen) : 0; }

uint64_t dataset_index_skipped(const dataset *d) { return d->kind->index_skipped ? d->kind->index_skipped(d) : 0; }

void dataset_sample_name(const dataset *d, size_t i, char *out, size_t n) {
  if (d->kind->sample_name) d->kind->sample_name(d, i, out, n);
  else snprintf(out, n, "%s", d->root);
}

int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen) {
  if (!d->kind->read)
    return snprintf(err, errlen, "%s: a %s dataset has no image to read", d->root, d->kind->name), BFEED_EDATASET;
  return d->kind->read(d, i, buf, cap, len, err, errlen);
}

void dataset_prefetch(const dataset *d, size_t i) {
  if (d->kind->prefetch) d->kind->prefetch(d, i);
}

int dataset_mark_bad(dataset *d, size_t i) {
  return __atomic_exchange_n(&d->bad[i], 1, __ATOMIC_RELAXED) == 0;
}

/* ------------------------------------------------------------------ */
/* Files changed under a dataset (dataset.h)                           */

void dataset_mark_changed(const dataset *d, const char *why) {
  /* Shared read-only but for this mark, like `bad`: the first thread to
   * find a change writes the reason, then publishes it. */
  dataset *w = (dataset *)d;
  int fresh = 0;
  if (!__atomic_compare_exchange_n(&w->changed, &fresh, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
  snprintf(w->changed_why, sizeof w->changed_why, "%s", why);
  __atomic_store_n(&w->changed, 2, __ATOMIC_RELEASE);
}

int dataset_changed(const dataset *d, char *why, size_t cap) {
  int state = __atomic_load_n(&d->changed, __ATOMIC_ACQUIRE);
  if (state == 0) return 0;
  /* 1: another thread is writing its reason this instant. */
  if (why) snprintf(why, cap, "dataset %s: %s", d->name, state == 2 ? d->changed_why : "its files changed since it was loaded");
  return 1;
}

int dataset_check(const dataset *d, char *err, size_t errlen) {
  char why[sizeof d->changed_why + 160];
  if (!dataset_changed(d, NULL, 0) && d->kind->check && d->kind->check(d, why, sizeof why) < 0)
    dataset_mark_changed(d, why);
  if (!dataset_changed(d, why, sizeof why)) return 0;
  snprintf(err, errlen, "%s; the stream ends rather than mix old and new files (the dataset is reloaded)", why);
  return BFEED_EDATASET;
}

/* ------------------------------------------------------------------ */
/* A dataset that could not be loaded                                  */

typedef struct dataset_failure {
  int code;
  char err[1024];
} dataset_failure;

static int dataset_failure_ready(const dataset *d, char *err, size_t errlen) {
  const dataset_failure *f = d->state;
  snprintf(err, errlen, "%s", f->err);
  return f->code;
}

static int dataset_failure_wait(dataset *d, char *err, size_t errlen) { return dataset_failure_ready(d, err, errlen); }

static uint64_t dataset_failure_skipped(const dataset *d) { return (void)d, 0; }

static void dataset_failure_free(dataset *d) {
  free(d->state);
  d->state = NULL;
}

/* Not in the table of kinds: no setting names it. */
static const dataset_kind dataset_failure_kind = {.name = "failed", .ready = dataset_failure_ready,
                                                  .wait = dataset_failure_wait,
                                                  .index_skipped = dataset_failure_skipped,
                                                  .free = dataset_failure_free};

dataset *dataset_failed(const char *name, int code, const char *err) {
  dataset *d = calloc(1, sizeof *d);
  dataset_failure *f = calloc(1, sizeof *f);
  if (!d || !f || !(d->name = strdup(name)) || !(d->root = strdup(""))) {
    free(f);
    if (d) free(d->name), free(d);
    return NULL;
  }
  f->code = code < 0 && code != BFEED_EBUSY ? code : BFEED_EDATASET;
  snprintf(f->err, sizeof f->err, "%s", err);
  d->refs = 1;
  d->kind = &dataset_failure_kind;
  d->state = f;
  return d;
}

int dataset_is_failed(const dataset *d) { return d->kind == &dataset_failure_kind; }
