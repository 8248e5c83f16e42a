/* fingerprint.c -- see fingerprint.h; the canonical form is PROTOCOL.md's. */
#include "fingerprint.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "opts.h"
#include "storage.h"

struct fingerprint {
  XXH3_state_t *h;
};

/* One line of the canonical description into the hash. A line longer than
 * the buffer (a path over 4 KiB) is hashed cut: still the same on two hosts. */
static void fingerprint_vline(fingerprint *fp, const char *fmt, va_list ap) {
  char line[4400];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  if (n < 0) return;
  XXH3_64bits_update(fp->h, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void fingerprint_line(fingerprint *fp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fingerprint_vline(fp, fmt, ap);
  va_end(ap);
}

/* path relative to dir when it lies below it, else as it is. */
static const char *fingerprint_relative(const char *path, const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return strncmp(path, dir, n) == 0 && path[n] == '/' ? path + n + 1 : path;
}

void fingerprint_file_as(fingerprint *fp, const char *name, const char *path) {
  char version[STORAGE_VERSION_MAX];
  storage_version(path, version, sizeof version);
  fingerprint_line(fp, "file %s %s\n", name, version);
}

void fingerprint_file(fingerprint *fp, const char *path, const char *dir) {
  fingerprint_file_as(fp, dir ? fingerprint_relative(path, dir) : ".", path);
}

static int fingerprint_cmp_kv(const void *a, const void *b) {
  return strcmp((*(const dataset_kv *const *)a)->key, (*(const dataset_kv *const *)b)->key);
}

/* The settings, sorted by key, as their roles say: values as they are,
 * files by version, places not at all. */
static void fingerprint_settings(fingerprint *fp, const dataset *d, const dataset_keys *k) {
  const dataset_kv **v = malloc((k->nkv ? k->nkv : 1) * sizeof *v);
  size_t n = 0;
  if (!v) return fingerprint_line(fp, "settings unknown\n");
  for (size_t i = 0; i < k->nkv; i++)
    if (dataset_key_role_of(d->kind, k->kv[i].key) != DATASET_KEY_PLACE) v[n++] = &k->kv[i];
  if (n > 1) qsort(v, n, sizeof *v, fingerprint_cmp_kv);
  for (size_t i = 0; i < n; i++) {
    if (dataset_key_role_of(d->kind, v[i]->key) == DATASET_KEY_FILE) {
      char version[STORAGE_VERSION_MAX];
      storage_version(v[i]->value, version, sizeof version);
      fingerprint_line(fp, "set %s=file %s\n", v[i]->key, version);
    } else {
      fingerprint_line(fp, "set %s=%s\n", v[i]->key, v[i]->value);
    }
  }
  free(v);
}

uint64_t fingerprint_dataset(const dataset *d, const dataset_keys *k) {
  fingerprint fp = {XXH3_createState()};
  if (!fp.h || XXH3_64bits_reset(fp.h) != XXH_OK) return XXH3_freeState(fp.h), 0;
  fingerprint_line(&fp, "bfeed dataset 1\nkind %s\n", d->kind->name);
  fingerprint_settings(&fp, d, k);
  d->kind->fingerprint(d, &fp);
  uint64_t h = XXH3_64bits_digest(fp.h);
  XXH3_freeState(fp.h);
  return h ? h : 1; /* 0 means unknown */
}

uint64_t fingerprint_stream(uint64_t dataset_fp, const bfeed_stream_opts *o, uint64_t max_pixels) {
  /* The options' part comes from their table (proto/opts.def: the rows
   * marked as changing a batch's bytes), so a new option cannot be left out. */
  char s[2048];
  int n = snprintf(s, sizeof s, "bfeed stream 1\ndataset %016llx\nmax_pixels %llu\n", (unsigned long long)dataset_fp,
                   (unsigned long long)max_pixels);
  size_t len = (size_t)n + opts_canon(o, s + n, sizeof s - (size_t)n);
  uint64_t fp = XXH3_64bits(s, len);
  return dataset_fp && fp ? fp : dataset_fp ? 1 : 0;
}
