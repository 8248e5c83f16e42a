/* fingerprint.c -- see fingerprint.h; the canonical form is PROTOCOL.md's. */
#include "fingerprint.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "dataset_shards.h"
#include "folder.h"
#include "opts.h"
#include "strlist.h"

/* One line of the canonical description into the hash. A line longer than
 * the buffer (a path over 4 KiB) is hashed cut: still the same on two hosts. */
static void fp_line(XXH3_state_t *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fp_line(XXH3_state_t *h, const char *fmt, ...) {
  char line[4400];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  XXH3_64bits_update(h, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* "-1" for a file that cannot be stat()ed: it reads as missing everywhere. */
static long long fp_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* path relative to dir when it lies below it, else as it is. */
static const char *fp_relative(const char *path, const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  return strncmp(path, dir, n) == 0 && path[n] == '/' ? path + n + 1 : path;
}

static void fp_file(XXH3_state_t *h, const char *path, const char *dir) {
  fp_line(h, "file %s %lld\n", dir ? fp_relative(path, dir) : ".", fp_size(path));
}

/* Settings that only say where files or caches are, or how much memory to
 * use, change no byte served; the files they name are hashed by size. */
static int fp_setting_ignored(const char *key) {
  return !strcmp(key, "kind") || !strcmp(key, "path") || !strcmp(key, "cache") || !strcmp(key, "cache_dir") ||
         !strcmp(key, "max_table_bytes");
}
static int fp_setting_is_file(const char *key) { return !strcmp(key, "vectors") || !strcmp(key, "labels"); }

static int fp_cmp_kv(const void *a, const void *b) {
  return strcmp((*(const dataset_kv *const *)a)->key, (*(const dataset_kv *const *)b)->key);
}

static void fp_settings(XXH3_state_t *h, const dataset_keys *k) {
  const dataset_kv **v = malloc((k->nkv ? k->nkv : 1) * sizeof *v);
  size_t n = 0;
  if (!v) return fp_line(h, "settings unknown\n");
  for (size_t i = 0; i < k->nkv; i++)
    if (!fp_setting_ignored(k->kv[i].key)) v[n++] = &k->kv[i];
  if (n > 1) qsort(v, n, sizeof *v, fp_cmp_kv);
  for (size_t i = 0; i < n; i++) {
    if (fp_setting_is_file(v[i]->key)) fp_line(h, "set %s=file %lld\n", v[i]->key, fp_size(v[i]->value));
    else fp_line(h, "set %s=%s\n", v[i]->key, v[i]->value);
  }
  free(v);
}

/* Text in a folder: its .txt files as text_source.c reads them. */
static void fp_text_folder(XXH3_state_t *h, const char *root) {
  static const char *const txt[] = {".txt", NULL};
  strlist files = {0};
  char err[256];
  if (folder_walk(root, &files, txt, NULL, NULL, err, sizeof err) < 0) fp_line(h, "files unknown\n");
  for (size_t i = 0; i < files.n; i++) fp_file(h, files.v[i], root);
  strlist_free(&files);
}

static void fp_files(XXH3_state_t *h, const dataset *d) {
  struct stat st;
  switch (d->kind) {
    case DATASET_IMAGE:
      for (size_t i = 0; i < d->nsamples; i++) fp_file(h, d->paths[i], d->root);
      return;
    case DATASET_MANIFEST: {
      /* Image paths are relative to the manifest's folder. */
      char *dir = strdup(d->root), *slash = dir ? strrchr(dir, '/') : NULL;
      if (slash) *slash = 0;
      fp_file(h, d->root, NULL);
      for (size_t i = 0; i < d->nsamples; i++) fp_file(h, d->paths[i], slash ? dir : ".");
      free(dir);
      return;
    }
    case DATASET_TFRECORD:
    case DATASET_TAR: {
      /* Shards by file name: the folder a glob names differs between hosts. */
      size_t n;
      const char *const *files = dataset_shards_files(d, &n);
      for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(files[i], '/');
        fp_line(h, "file %s %lld\n", base ? base + 1 : files[i], fp_size(files[i]));
      }
      return;
    }
    default:
      if (stat(d->root, &st) == 0 && S_ISDIR(st.st_mode)) fp_text_folder(h, d->root);
      else fp_file(h, d->root, NULL);
  }
}

uint64_t fingerprint_dataset(const dataset *d, const dataset_keys *k) {
  XXH3_state_t *h = XXH3_createState();
  if (!h || XXH3_64bits_reset(h) != XXH_OK) return XXH3_freeState(h), 0;
  fp_line(h, "bfeed dataset 1\nkind %s\n", dataset_kind_name(d->kind));
  fp_settings(h, k);
  fp_files(h, d);
  uint64_t fp = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return fp ? fp : 1; /* 0 means unknown */
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
