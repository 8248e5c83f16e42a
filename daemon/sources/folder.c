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

int folder_list(const char *dir, strlist *dirs, strlist *files, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, char *err, size_t errlen) {
  storage_entry *ent;
  size_t n;
  int rc = storage_list(dir, &ent, &n, err, errlen);
  if (rc < 0) return rc == BFEED_ENOMEM ? rc : BFEED_EIO;
  strlist others = {0}; /* left out: tallied in sorted order, as samples are */
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const storage_entry *e = &ent[i];
    if (e->name[0] == '.') continue;
    char *path = folder_join(dir, e->name);
    if (!path) rc = BFEED_EIO;
    else if (e->type == STORAGE_BROKEN) { /* dangling link or loop: not a sample, but say so */
      char why[4200];
      snprintf(why, sizeof why, "%s: %s", path, e->why);
      if (dropped && strlist_push(dropped, strdup(why)) < 0) rc = BFEED_ENOMEM;
      free(path);
    }
    else if (e->type == STORAGE_DIR && dirs) rc = strlist_push(dirs, path);
    else if (e->type == STORAGE_FILE && files && folder_has_ext(e->name, exts)) rc = strlist_push(files, path);
    else if (e->type == STORAGE_FILE && files && skipped) rc = strlist_push(&others, path);
    else free(path);
  }
  storage_entries_free(ent, n);
  if (others.n > 1) qsort(others.v, others.n, sizeof *others.v, folder_cmp);
  for (size_t i = 0; i < others.n; i++) folder_skip(skipped, others.v[i]), others.v[i] = NULL;
  strlist_free(&others);
  if (rc < 0) {
    snprintf(err, errlen, "out of memory listing %s", dir);
    return BFEED_ENOMEM;
  }
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
