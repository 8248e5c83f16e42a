/* folder.c -- see folder.h */
#include "folder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bfeed_types.h"
#include "clock.h"

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

/* An entry found, with what the listing said of it: kept beside its path
 * through the sort, so that no file is looked at twice. */
typedef struct folder_item {
  char *path; /* first: folder_cmp sorts these too */
  storage_stamp stamp;
  uint64_t dev, ino;
} folder_item;

typedef struct folder_items {
  folder_item *v;
  size_t n, cap;
} folder_items;

static int folder_items_push(folder_items *l, char *path, const storage_info *info) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    folder_item *v = realloc(l->v, cap * sizeof *v);
    if (!v) return free(path), BFEED_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (folder_item){path, info->stamp, info->dev, info->ino};
  return 0;
}

static void folder_items_free(folder_items *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i].path);
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* What a listing sorts its entries into. */
typedef struct folder_sort {
  const char *dir;
  int want_dirs, want_files;
  folder_items dirs, files;
  strlist *dropped, others; /* others: left out, tallied in sorted order, as samples are */
  const char *const *exts;
  folder_skipped *skipped;
} folder_sort;

static int folder_entry(void *ctx, const char *name, const storage_info *info, const char *why) {
  folder_sort *f = ctx;
  if (name[0] == '.') return 0;
  char *path = folder_join(f->dir, name);
  if (!path) return BFEED_ENOMEM;
  if (info->type == STORAGE_BROKEN) { /* dangling link or loop: not a sample, but say so */
    char line[4200];
    snprintf(line, sizeof line, "%s: %s", path, why);
    free(path);
    return f->dropped && strlist_push(f->dropped, strdup(line)) < 0 ? BFEED_ENOMEM : 0;
  }
  if (info->type == STORAGE_DIR && f->want_dirs) return folder_items_push(&f->dirs, path, info);
  if (info->type == STORAGE_FILE && f->want_files && folder_has_ext(name, f->exts))
    return folder_items_push(&f->files, path, info);
  if (info->type == STORAGE_FILE && f->want_files && f->skipped) return strlist_push(&f->others, path);
  free(path);
  return 0;
}

/* The sorted paths of l into out (taken), their stamps into stamps (when
 * not NULL). */
static int folder_items_take(folder_items *l, strlist *out, storage_stamps *stamps) {
  if (l->n > 1) qsort(l->v, l->n, sizeof *l->v, folder_cmp); /* qsort(NULL, 0) is UB */
  int rc = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (rc == 0 && stamps) rc = storage_stamps_push(stamps, &l->v[i].stamp);
    if (rc == 0) rc = strlist_push(out, l->v[i].path);
    else free(l->v[i].path);
    l->v[i].path = NULL;
  }
  folder_items_free(l);
  return rc;
}

/* folder_list, keeping the sub-folders' identities (dirs_out, sorted as
 * dirs) and the files' stamps. */
static int folder_list_at(const char *dir, strlist *dirs, folder_items *dirs_out, strlist *files,
                          storage_stamps *stamps, const char *const *exts, strlist *dropped, folder_skipped *skipped,
                          char *err, size_t errlen) {
  folder_sort f = {.dir = dir, .want_dirs = dirs != NULL, .want_files = files != NULL, .dropped = dropped,
                   .exts = exts, .skipped = skipped};
  char why[512];
  int rc = storage_list(dir, folder_entry, &f, why, sizeof why);
  if (f.others.n > 1) qsort(f.others.v, f.others.n, sizeof *f.others.v, folder_cmp);
  for (size_t i = 0; i < f.others.n; i++) folder_skip(skipped, f.others.v[i]), f.others.v[i] = NULL;
  strlist_free(&f.others);
  if (rc == 0 && f.dirs.n > 1) qsort(f.dirs.v, f.dirs.n, sizeof *f.dirs.v, folder_cmp);
  for (size_t i = 0; rc == 0 && dirs && i < f.dirs.n; i++) {
    char *p = dirs_out ? strdup(f.dirs.v[i].path) : f.dirs.v[i].path;
    if (!dirs_out) f.dirs.v[i].path = NULL;
    rc = p ? strlist_push(dirs, p) : BFEED_ENOMEM;
  }
  if (rc == 0 && dirs_out) *dirs_out = f.dirs, memset(&f.dirs, 0, sizeof f.dirs);
  if (rc == 0 && files) rc = folder_items_take(&f.files, files, stamps);
  folder_items_free(&f.dirs);
  folder_items_free(&f.files);
  if (rc == BFEED_ENOMEM) return snprintf(err, errlen, "out of memory listing %s", dir), BFEED_ENOMEM;
  if (rc < 0) return snprintf(err, errlen, "%s", why), BFEED_EIO;
  return 0;
}

int folder_list(const char *dir, strlist *dirs, strlist *files, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, char *err, size_t errlen) {
  return folder_list_at(dir, dirs, NULL, files, NULL, exts, dropped, skipped, err, errlen);
}

/* The folders from the walk's start down to the one being listed: a
 * sub-folder that is one of them (a link to a folder above, a/up -> ..)
 * makes a cycle, which no walk ends. */
typedef struct folder_up {
  const char *path;
  uint64_t dev, ino; /* 0, 0: unknown (the backend has no identities) */
  const struct folder_up *up;
} folder_up;

/* Every folder the dataset's walks reached, by device and inode: an open
 * addressing table (a power of two, at most half full) with each one's
 * path, for the message that names both. */
typedef struct folder_seen_entry {
  uint64_t dev, ino;
  char *path; /* NULL: empty */
} folder_seen_entry;
struct folder_seen {
  folder_seen_entry *v;
  size_t n, cap;
};

static size_t folder_seen_hash(uint64_t dev, uint64_t ino, size_t cap) {
  uint64_t h = (ino ^ (dev * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  return (size_t)(h ^ h >> 29) & (cap - 1);
}

static folder_seen_entry *folder_seen_slot(folder_seen *t, uint64_t dev, uint64_t ino) {
  size_t i = folder_seen_hash(dev, ino, t->cap);
  while (t->v[i].path && (t->v[i].dev != dev || t->v[i].ino != ino)) i = (i + 1) & (t->cap - 1);
  return &t->v[i];
}

/* The path that reached (dev, ino) before, or NULL after noting path as
 * reaching it. *oom set when it could not be noted. */
static const char *folder_seen_add(folder_walk_state *ws, uint64_t dev, uint64_t ino, const char *path, int *oom) {
  folder_seen *t = ws->seen;
  if (!t && !(t = ws->seen = calloc(1, sizeof *t))) return *oom = 1, NULL;
  if (2 * (t->n + 1) > t->cap) {
    folder_seen grown = {calloc(t->cap ? 2 * t->cap : 256, sizeof *grown.v), t->n, t->cap ? 2 * t->cap : 256};
    if (!grown.v) return *oom = 1, NULL;
    for (size_t i = 0; i < t->cap; i++)
      if (t->v[i].path) *folder_seen_slot(&grown, t->v[i].dev, t->v[i].ino) = t->v[i];
    free(t->v);
    *t = grown;
  }
  folder_seen_entry *e = folder_seen_slot(t, dev, ino);
  if (e->path) return e->path;
  if (!(e->path = strdup(path))) return *oom = 1, NULL;
  e->dev = dev, e->ino = ino;
  t->n++;
  return NULL;
}

void folder_walk_state_free(folder_walk_state *ws) {
  if (!ws || !ws->seen) return;
  for (size_t i = 0; i < ws->seen->cap; i++) free(ws->seen->v[i].path);
  free(ws->seen->v);
  free(ws->seen);
  ws->seen = NULL;
}

/* Reaching folder `next`: not one the walk is in (a cycle), nor one any
 * walk of the dataset reached before (a diamond). */
static int folder_reach(folder_walk_state *ws, const folder_up *here, const folder_up *next, char *err, size_t errlen) {
  if (!next->dev && !next->ino) return 0;
  for (const folder_up *u = here; u; u = u->up)
    if (u->dev == next->dev && u->ino == next->ino)
      return snprintf(err, errlen,
                      "folder %s is %s again, a folder the walk is already in (a cycle of links: device %llu, inode "
                      "%llu); no walk of it would end",
                      next->path, u->path, (unsigned long long)next->dev, (unsigned long long)next->ino),
             BFEED_EDATASET;
  int oom = 0;
  const char *before = folder_seen_add(ws, next->dev, next->ino, next->path, &oom);
  if (oom) return snprintf(err, errlen, "out of memory listing %s", next->path), BFEED_ENOMEM;
  if (before)
    return snprintf(err, errlen,
                    "folder %s is %s again (device %llu, inode %llu): links reach it twice, and each of its files "
                    "would be served twice; link each folder once",
                    next->path, before, (unsigned long long)next->dev, (unsigned long long)next->ino),
           BFEED_EDATASET;
  return 0;
}

/* Count a folder's files against the limit, and say how a slow walk goes. */
static int folder_progress(folder_walk_state *ws, const char *dir, size_t files, char *err, size_t errlen) {
  size_t max = ws->max_files ? ws->max_files : FOLDER_MAX_FILES_DEFAULT;
  ws->files += files;
  ws->folders++;
  if (ws->files > max)
    return snprintf(err, errlen, "more than max_samples (%zu) files below %s, at %s: set max_samples if the dataset "
                    "is truly this large", max, ws->name ? ws->name : "the dataset", dir),
           BFEED_EDATASET;
  uint64_t now = clock_now_ns();
  if (!ws->started_ns) ws->started_ns = ws->logged_ns = now;
  if (ws->log && now - ws->logged_ns >= FOLDER_PROGRESS_S * 1000000000ull) {
    ws->logged_ns = now;
    log_info(ws->log, "dataset %s: still listing: %zu files in %zu folders so far (%llu s), now in %s",
             ws->name ? ws->name : "?", ws->files, ws->folders,
             (unsigned long long)((now - ws->started_ns) / 1000000000ull), dir);
  }
  return 0;
}

static int folder_walk_at(const folder_up *here, strlist *out, storage_stamps *stamps, const char *const *exts,
                          int depth, strlist *dropped, folder_skipped *skipped, folder_walk_state *ws, char *err,
                          size_t errlen) {
  const char *dir = here->path;
  strlist dirs = {0}, files = {0};
  folder_items ids = {0};
  if (depth > FOLDER_MAX_DEPTH)
    return snprintf(err, errlen, "folder %s nests more than %d folders deep", dir, FOLDER_MAX_DEPTH), BFEED_EDATASET;
  int rc = folder_list_at(dir, &dirs, &ids, &files, stamps, exts, dropped, skipped, err, errlen);
  if (rc == 0) rc = folder_progress(ws, dir, files.n, err, errlen);
  for (size_t i = 0; rc == 0 && i < files.n; i++) {
    rc = strlist_push(out, files.v[i]);
    files.v[i] = NULL;
    if (rc < 0) snprintf(err, errlen, "out of memory listing %s", dir);
  }
  for (size_t i = 0; rc == 0 && i < dirs.n; i++) {
    folder_up next = {dirs.v[i], ids.v[i].dev, ids.v[i].ino, here};
    rc = folder_reach(ws, here, &next, err, errlen);
    if (rc == 0) rc = folder_walk_at(&next, out, stamps, exts, depth + 1, dropped, skipped, ws, err, errlen);
  }
  folder_items_free(&ids);
  strlist_free(&dirs);
  strlist_free(&files);
  return rc;
}

int folder_walk(const char *dir, strlist *out, storage_stamps *stamps, const char *const *exts, strlist *dropped,
                folder_skipped *skipped, folder_walk_state *ws, char *err, size_t errlen) {
  storage_info info;
  char why[512];
  folder_walk_state own = {0};
  folder_up root = {ws ? ws->root : NULL, 0, 0, NULL}, top = {dir, 0, 0, root.path ? &root : NULL};
  if (!ws) ws = &own;
  /* Where the walk starts (and the dataset's folder above it) are the
   * first folders a link may lead back to. */
  if (root.path && storage_stat(root.path, &info, why, sizeof why) == 0) root.dev = info.dev, root.ino = info.ino;
  if (storage_stat(dir, &info, why, sizeof why) == 0) top.dev = info.dev, top.ino = info.ino;
  int rc = folder_reach(ws, top.up, &top, err, errlen);
  if (rc == 0) rc = folder_walk_at(&top, out, stamps, exts, 0, dropped, skipped, ws, err, errlen);
  folder_walk_state_free(&own);
  return rc;
}
