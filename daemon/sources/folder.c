/* folder.c -- see folder.h */
#include "folder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bfeed_types.h"
#include "storage.h"

#define FOLDER_MAX_DEPTH 32

void folder_skipped_free(folder_skipped *s) {
  for (int i = 0; i < FOLDER_SKIPPED_NAMES; i++) free(s->first[i]);
  memset(s, 0, sizeof *s);
}

/* Tally path (taken) as left out, keeping the first few. */
static void folder_skip(folder_skipped *s, char *path) {
  if (s->n < FOLDER_SKIPPED_NAMES) s->first[s->n] = path;
  else free(path);
  s->n++;
}

static int folder_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int folder_has_ext(const char *name, const char *const *exts) {
  const char *dot = strrchr(name, '.');
  if (!dot) return 0;
  for (int i = 0; exts[i]; i++)
    if (strcasecmp(dot, exts[i]) == 0) return 1;
  return 0;
}

static char *folder_join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  s[la] = '/';
  memcpy(s + la + 1, b, lb + 1);
  return s;
}

/* What a listing sorts its entries into. */
typedef struct folder_sort {
  const char *dir;
  strlist *dirs, *files, *dropped, others; /* others: left out, tallied in sorted order, as samples are */
  const char *const *exts;
  folder_skipped *skipped;
} folder_sort;

static int folder_entry(void *ctx, const char *name, storage_type type, const char *why) {
  folder_sort *f = ctx;
  if (name[0] == '.') return 0;
  char *path = folder_join(f->dir, name);
  if (!path) return BFEED_ENOMEM;
  if (type == STORAGE_BROKEN) { /* dangling link or loop: not a sample, but say so */
    char line[4200];
    snprintf(line, sizeof line, "%s: %s", path, why);
    free(path);
    return f->dropped && strlist_push(f->dropped, strdup(line)) < 0 ? BFEED_ENOMEM : 0;
  }
  if (type == STORAGE_DIR && f->dirs) return strlist_push(f->dirs, path);
  if (type == STORAGE_FILE && f->files && folder_has_ext(name, f->exts)) return strlist_push(f->files, path);
  if (type == STORAGE_FILE && f->files && f->skipped) return strlist_push(&f->others, path);
  free(path);
  return 0;
}

int folder_list(const char *dir, strlist *dirs, strlist *files, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, char *err, size_t errlen) {
  folder_sort f = {.dir = dir, .dirs = dirs, .files = files, .dropped = dropped, .exts = exts, .skipped = skipped};
  char why[512];
  int rc = storage_list(dir, folder_entry, &f, why, sizeof why);
  if (f.others.n > 1) qsort(f.others.v, f.others.n, sizeof *f.others.v, folder_cmp);
  for (size_t i = 0; i < f.others.n; i++) folder_skip(skipped, f.others.v[i]), f.others.v[i] = NULL;
  strlist_free(&f.others);
  if (rc == BFEED_ENOMEM) return snprintf(err, errlen, "out of memory listing %s", dir), BFEED_ENOMEM;
  if (rc < 0) return snprintf(err, errlen, "%s", why), BFEED_EIO;
  if (dirs && dirs->n > 1) qsort(dirs->v, dirs->n, sizeof *dirs->v, folder_cmp); /* qsort(NULL, 0) is UB */
  if (files && files->n > 1) qsort(files->v, files->n, sizeof *files->v, folder_cmp);
  return 0;
}

static int folder_walk_at(const char *dir, strlist *out, const char *const *exts, int depth, strlist *dropped,
                folder_skipped *skipped, char *err, size_t errlen) {
  int rc;
  strlist dirs = {0}, files = {0};
  if (depth > FOLDER_MAX_DEPTH) {
    snprintf(err, errlen, "folder %s nests too deep (symlink loop?)", dir);
    return BFEED_EDATASET;
  }
  if ((rc = folder_list(dir, &dirs, &files, exts, dropped, skipped, err, errlen)) < 0) return rc;
  for (size_t i = 0; i < files.n && rc == 0; i++) {
    rc = strlist_push(out, files.v[i]);
    files.v[i] = NULL;
  }
  if (rc < 0) snprintf(err, errlen, "out of memory listing %s", dir);
  for (size_t i = 0; i < dirs.n && rc == 0; i++) rc = folder_walk_at(dirs.v[i], out, exts, depth + 1, dropped, skipped, err, errlen);
  strlist_free(&dirs);
  strlist_free(&files);
  return rc;
}

int folder_walk(const char *dir, strlist *out, const char *const *exts, strlist *dropped, folder_skipped *skipped,
                char *err, size_t errlen) {
  return folder_walk_at(dir, out, exts, 0, dropped, skipped, err, errlen);
}
