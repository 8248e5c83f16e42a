/* dataset.c -- dataset kinds, settings, ImageFolder and .npy loading, image file reading. */
#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfeed_types.h"
#include "dataset_impl.h"
#include "dataset_shards.h"
#include "fingerprint.h"
#include "folder.h"
#include "errtext.h"

static const char *const kind_names[] = {"image", "text", "npy", "manifest", "tfrecord", "tar"};
/* The keys each kind takes besides kind and path, checked before anything
 * loads, so that a misspelt key (pathh) is named with its file and line
 * rather than reported as the setting it failed to give. */
static const char *const image_keys[] = {NULL}, *const npy_keys[] = {"labels", NULL};
static const char *const *const kind_keys[] = {image_keys,          dataset_text_keys,     npy_keys,
                                               dataset_manifest_keys, dataset_tfrecord_keys, dataset_tar_keys};

const char *dataset_kind_name(dataset_kind k) {
  return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "unknown";
}

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

int dataset_keys_check(const dataset_keys *k, const char *const *allowed, char *err, size_t errlen) {
  for (size_t i = 0; i < k->nkv; i++) {
    const char *key = k->kv[i].key;
    int ok = strcmp(key, "kind") == 0 || strcmp(key, "path") == 0;
    for (int a = 0; !ok && allowed[a]; a++) ok = strcmp(key, allowed[a]) == 0;
    if (!ok) {
      int n = snprintf(err, errlen, "%s: dataset %s: unknown key '%s' for kind %s (known: kind path", k->kv[i].where,
                       k->name, key, k->kind);
      for (int a = 0; allowed[a] && n >= 0 && (size_t)n < errlen; a++)
        n += snprintf(err + n, errlen - (size_t)n, " %s", allowed[a]);
      if (n >= 0 && (size_t)n < errlen) snprintf(err + n, errlen - (size_t)n, ")");
      return BFEED_EDATASET;
    }
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

/* ------------------------------------------------------------------ */
/* image: an ImageFolder                                               */

/* What image_decode.h reads; the content decides the format, these only
 * which files are samples. The load-time log and errors name them from
 * this list. */
static const char *const image_exts[] = {".jpg", ".jpeg", ".png", ".webp", NULL};

/* Entries a folder walk left out, one warning each. */
void dataset_log_dropped(const dataset *d, strlist *dropped, const logger *log) {
  for (size_t i = 0; i < dropped->n; i++) log_warn(log, "dataset %s: skipping %s", d->name, dropped->v[i]);
  strlist_free(dropped);
}

/* ".jpg/.jpeg" */
static const char *exts_text(char *buf, size_t cap, const char *const *exts) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; exts[i] && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "/" : "", exts[i]);
  return buf;
}

/* Tell the operator at load what an ImageFolder will not serve: files of
 * other types in class folders (how many, why, the first few) and class
 * folders with nothing to serve (their labels never occur). */
static void report_left_out(const dataset *d, const strlist *classes, const size_t *per_class,
                            const folder_skipped *sk, const logger *log) {
  char types[64], names[512];
  exts_text(types, sizeof types, image_exts);
  if (sk->n) {
    size_t n = 0;
    for (size_t i = 0; i < sk->n && i < FOLDER_SKIPPED_NAMES && n < sizeof names; i++)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", sk->first[i]);
    log_warn(log, "dataset %s: %zu file(s) left out, not of a type served (%s): %s%s", d->name, sk->n, types, names,
             sk->n > FOLDER_SKIPPED_NAMES ? ", ..." : "");
  }
  size_t empty = 0, n = 0;
  for (size_t c = 0; c < classes->n; c++) {
    if (per_class[c]) continue;
    if (empty++ < FOLDER_SKIPPED_NAMES && n < sizeof names) {
      const char *slash = strrchr(classes->v[c], '/');
      n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", empty > 1 ? ", " : "", slash ? slash + 1 : classes->v[c]);
    }
  }
  if (empty)
    log_warn(log, "dataset %s: %zu empty class folder(s), no %s files, so their labels have no samples: %s%s", d->name,
             empty, types, names, empty > FOLDER_SKIPPED_NAMES ? ", ..." : "");
}

static int load_image_folder(dataset *d, const char *root, const logger *log, char *err, size_t errlen) {
  strlist classes = {0}, files = {0}, dropped = {0};
  folder_skipped skipped = {0};
  size_t *per_class = NULL;
  char types[64];
  int rc = BFEED_EDATASET;
  if (folder_list(root, &classes, NULL, image_exts, &dropped, NULL, err, errlen) < 0) goto done;
  if (classes.n == 0) {
    snprintf(err, errlen, "dataset %s: folder %s has no class sub-folders", d->name, root);
    goto done;
  }
  if (!(per_class = calloc(classes.n, sizeof *per_class))) goto oom;
  size_t cap = 0;
  for (size_t c = 0; c < classes.n; c++) {
    size_t before = files.n;
    if (folder_walk(classes.v[c], &files, image_exts, &dropped, &skipped, err, errlen) < 0) goto done;
    per_class[c] = files.n - before;
    if (files.n > cap) {
      cap = files.cap;
      int32_t *l = realloc(d->labels, cap * sizeof *l);
      if (!l) goto oom;
      d->labels = l;
    }
    for (size_t i = before; i < files.n; i++) d->labels[i] = (int32_t)c;
  }
  if (files.n == 0) {
    snprintf(err, errlen, "dataset %s: no %s files below %s%s", d->name, exts_text(types, sizeof types, image_exts),
             root, skipped.n ? " (other files are not served)" : "");
    goto done;
  }
  report_left_out(d, &classes, per_class, &skipped, log);
  if (files.n > UINT32_MAX) {
    snprintf(err, errlen, "dataset %s: %zu files, more than the %u supported", d->name, files.n, UINT32_MAX);
    goto done;
  }
  d->bad = calloc(files.n, 1);
  d->classes = calloc(classes.n, sizeof *d->classes);
  if (!d->bad || !d->classes) goto oom;
  for (size_t c = 0; c < classes.n; c++) {
    const char *slash = strrchr(classes.v[c], '/');
    if (!(d->classes[c] = strdup(slash ? slash + 1 : classes.v[c]))) goto oom;
    d->nclasses = c + 1;
  }
  d->paths = files.v;
  d->nsamples = files.n;
  files.v = NULL;
  files.n = 0;
  rc = 0;
  goto done;
oom:
  snprintf(err, errlen, "dataset %s: out of memory", d->name);
done:
  dataset_log_dropped(d, &dropped, log);
  strlist_free(&classes);
  strlist_free(&files);
  folder_skipped_free(&skipped);
  free(per_class);
  return rc;
}

/* ------------------------------------------------------------------ */
/* npy: features [N, D] or [N, T, D], labels [N]                        */

static int load_npy(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  int rc;
  if ((rc = npy_source_open_features(&d->features, d->root, err, errlen)) < 0) return rc;
  d->nsamples = (size_t)d->features.nrows;
  const dataset_kv *labels = dataset_key(k, "labels");
  if (labels && (rc = npy_source_read_labels(labels->value, d->features.nrows, &d->labels, &d->nclasses, err, errlen)) < 0)
    return rc;
  const npy_source_header *h = &d->features.h;
  log_info(log, "dataset %s: %llu float32 feature rows of %llu values from %s%s%s", d->name,
           (unsigned long long)h->shape[0], (unsigned long long)d->features.row_floats, d->root,
           labels ? ", labels from " : " (no labels)", labels ? labels->value : "");
  return 0;
}

/* ------------------------------------------------------------------ */

static void dataset_free(dataset *d) {
  dataset_shards_free(d->shards); /* first: its threads may still fill d */
  strlist_free_array(d->paths, d->nsamples);
  strlist_free_array(d->classes, d->nclasses);
  free(d->labels);
  free(d->bad);
  wordvec_free(&d->vectors);
  textset_free(&d->text);
  npy_source_close(&d->features);
  free(d->name);
  free(d->root);
  free(d);
}

dataset *dataset_open(const char *name, const dataset_kv *kv, size_t nkv, const logger *log, char *err,
                      size_t errlen) {
  logger fallback;
  if (!log) {
    log_init(&fallback, LOG_INFO);
    log = &fallback;
  }
  dataset_keys k = {.name = name, .kind = "image", .kv = kv, .nkv = nkv};
  const dataset_kv *kind = dataset_key(&k, "kind"), *path = dataset_key(&k, "path");
  if (kind) k.kind = kind->value;
  int kid = -1;
  for (int i = 0; i < (int)(sizeof kind_names / sizeof kind_names[0]); i++)
    if (strcmp(k.kind, kind_names[i]) == 0) kid = i;
  if (kid < 0) {
    snprintf(err, errlen, "%s: dataset %s: unknown kind '%s' (expected image, text, npy, manifest, tfrecord or tar)",
             kind ? kind->where : "dataset", name, k.kind);
    return NULL;
  }
  if (dataset_keys_check(&k, kind_keys[kid], err, errlen) < 0) return NULL;
  if (!path) {
    snprintf(err, errlen, "%s: dataset %s: no path given", nkv ? kv[0].where : "dataset", name);
    return NULL;
  }
  dataset *d = calloc(1, sizeof *d);
  if (!d || !(d->name = strdup(name)) || !(d->root = strdup(path->value))) {
    snprintf(err, errlen, "dataset %s: out of memory", name);
    if (d) dataset_free(d);
    return NULL;
  }
  d->refs = 1;
  d->kind = (dataset_kind)kid;
  int rc;
  err[0] = 0;
  switch (d->kind) {
    case DATASET_IMAGE: rc = load_image_folder(d, path->value, log, err, errlen); break;
    case DATASET_TEXT: rc = dataset_text_load(d, &k, log, err, errlen); break;
    case DATASET_NPY: rc = load_npy(d, &k, log, err, errlen); break;
    case DATASET_TFRECORD:
    case DATASET_TAR: rc = dataset_shards_load(d, &k, log, err, errlen); break;
    default: rc = dataset_text_load_manifest(d, &k, log, err, errlen); break;
  }
  if (rc < 0) {
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
  return d->shards ? dataset_shards_ready(d, err, errlen) : 0;
}

int dataset_wait(dataset *d, char *err, size_t errlen) {
  return d->shards ? dataset_shards_wait(d, err, errlen) : 0;
}

uint64_t dataset_index_skipped(const dataset *d) {
  return d->shards ? dataset_shards_skipped(d) : 0;
}

void dataset_sample_name(const dataset *d, size_t i, char *out, size_t n) {
  if (d->shards) dataset_shards_name(d, i, out, n);
  else snprintf(out, n, "%s", d->paths ? d->paths[i] : d->root);
}

/* Errors of the moment (descriptors or memory short, an I/O hiccup), not
 * of the file: worth trying again. */
static int dataset_errno_code(int e) {
  return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS || e == EAGAIN || e == EIO || e == EINTR
             ? BFEED_EIO
             : BFEED_EDATASET;
}

int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen) {
  if (d->shards) return dataset_shards_read(d, i, buf, cap, len, err, errlen);
  const char *path = d->paths[i];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errlen, "cannot open: %s", strerror(e));
    return dataset_errno_code(e);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    snprintf(err, errlen, "%s", S_ISREG(st.st_mode) ? strerror(e) : "not a regular file");
    close(fd);
    return S_ISREG(st.st_mode) ? dataset_errno_code(e) : BFEED_EDATASET;
  }
  if ((uint64_t)st.st_size > DATASET_MAX_FILE) {
    snprintf(err, errlen, "file is %lld bytes, over the %u-byte limit", (long long)st.st_size,
             DATASET_MAX_FILE);
    close(fd);
    return BFEED_ETOOBIG;
  }
  size_t want = (size_t)st.st_size;
  if (want + 1 > *cap) {
    uint8_t *b = realloc(*buf, want + 1);
    if (!b) {
      snprintf(err, errlen, "out of memory reading %zu bytes", want);
      close(fd);
      return BFEED_ENOMEM;
    }
    *buf = b;
    *cap = want + 1;
  }
  size_t got = 0;
  while (got < want) {
    ssize_t r = read(fd, *buf + got, want - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = errno;
      snprintf(err, errlen, "read failed after %zu of %zu bytes: %s", got, want, r < 0 ? strerror(e) : "file shrank");
      close(fd);
      return r < 0 ? dataset_errno_code(e) : BFEED_EDATASET;
    }
    got += (size_t)r;
  }
  close(fd);
  *len = got;
  return 0;
}

int dataset_mark_bad(dataset *d, size_t i) {
  return __atomic_exchange_n(&d->bad[i], 1, __ATOMIC_RELAXED) == 0;
}
