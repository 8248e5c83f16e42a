/* dataset.c -- ImageFolder scanning and file reading. */
#include "dataset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A growable list of strings. */
typedef struct strlist {
  char **v;
  size_t n, cap;
} strlist;

static int strlist_push(strlist *l, char *s) {
  if (!s) return -1;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    char **v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      free(s);
      return -1;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  return 0;
}

static void strlist_free(strlist *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_jpeg_name(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static char *join(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 2);
  if (!s) return NULL;
  memcpy(s, a, la);
  s[la] = '/';
  memcpy(s + la + 1, b, lb + 1);
  return s;
}

/* Entries of dir (no dot files), sorted, split into sub-folders and JPEGs.
 * Symlinks are followed, as torchvision does. */
static int list_dir(const char *dir, strlist *dirs, strlist *files, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "cannot open folder %s: %s", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char *path = join(dir, e->d_name);
    struct stat st;
    if (!path) rc = -1;
    else if (stat(path, &st) != 0) free(path); /* dangling link: not a sample */
    else if (S_ISDIR(st.st_mode) && dirs) rc = strlist_push(dirs, path);
    else if (S_ISREG(st.st_mode) && files && is_jpeg_name(e->d_name)) rc = strlist_push(files, path);
    else free(path);
  }
  closedir(d);
  if (rc < 0) {
    snprintf(err, errlen, "out of memory listing %s", dir);
    return -1;
  }
  if (dirs) qsort(dirs->v, dirs->n, sizeof *dirs->v, cmp_str);
  if (files) qsort(files->v, files->n, sizeof *files->v, cmp_str);
  return 0;
}

/* All JPEGs below dir, depth first in sorted order (like sorted(os.walk)). */
static int walk(const char *dir, strlist *out, int depth, char *err, size_t errlen) {
  strlist dirs = {0}, files = {0};
  if (depth > 32) {
    snprintf(err, errlen, "folder %s nests too deep (symlink loop?)", dir);
    return -1;
  }
  if (list_dir(dir, &dirs, &files, err, errlen) < 0) return -1;
  int rc = 0;
  for (size_t i = 0; i < files.n && rc == 0; i++) {
    rc = strlist_push(out, files.v[i]);
    files.v[i] = NULL;
  }
  for (size_t i = 0; i < dirs.n && rc == 0; i++) rc = walk(dirs.v[i], out, depth + 1, err, errlen);
  strlist_free(&dirs);
  strlist_free(&files);
  return rc;
}

static void dataset_free(dataset *d);

/* The ImageFolder below root. */
static int load_image_folder(dataset *d, const char *name, const char *root, char *err, size_t errlen) {
  strlist classes = {0}, files = {0};
  err[0] = 0;
  if (list_dir(root, &classes, NULL, err, errlen) < 0) goto fail;
  if (classes.n == 0) {
    snprintf(err, errlen, "dataset %s: folder %s has no class sub-folders", name, root);
    goto fail;
  }
  d->labels = NULL;
  size_t cap = 0;
  for (size_t c = 0; c < classes.n; c++) {
    size_t before = files.n;
    if (walk(classes.v[c], &files, 0, err, errlen) < 0) goto fail;
    if (files.n > cap) {
      cap = files.cap;
      int32_t *l = realloc(d->labels, cap * sizeof *l);
      if (!l) goto oom;
      d->labels = l;
    }
    for (size_t i = before; i < files.n; i++) d->labels[i] = (int32_t)c;
  }
  if (files.n == 0) {
    snprintf(err, errlen, "dataset %s: no .jpg/.jpeg files below %s", name, root);
    goto fail;
  }
  if (files.n > UINT32_MAX) {
    snprintf(err, errlen, "dataset %s: %zu files, more than the %u supported", name, files.n, UINT32_MAX);
    goto fail;
  }
  d->name = strdup(name);
  d->root = strdup(root);
  d->bad = calloc(files.n, 1);
  d->classes = calloc(classes.n, sizeof *d->classes);
  if (!d->name || !d->root || !d->bad || !d->classes) goto oom;
  for (size_t c = 0; c < classes.n; c++) {
    const char *slash = strrchr(classes.v[c], '/');
    if (!(d->classes[c] = strdup(slash ? slash + 1 : classes.v[c]))) goto oom;
    d->nclasses = c + 1;
  }
  d->paths = files.v;
  d->nsamples = files.n;
  strlist_free(&classes);
  return 0;
oom:
  snprintf(err, errlen, "dataset %s: out of memory", name);
fail:
  strlist_free(&classes);
  strlist_free(&files);
  dataset_free(d);
  return -1;
}

static void dataset_free(dataset *d) {
  for (size_t i = 0; i < d->nsamples; i++) free(d->paths[i]);
  for (size_t c = 0; c < d->nclasses; c++) free(d->classes[c]);
  free(d->paths);
  free(d->classes);
  free(d->labels);
  free(d->bad);
  free(d->name);
  free(d->root);
  free(d);
}

dataset *dataset_load(const char *name, const dataset_kv *kv, size_t nkv, char *err, size_t errlen) {
  const char *kind = "image", *path = NULL, *where = "dataset";
  for (size_t i = 0; i < nkv; i++) {
    if (strcmp(kv[i].key, "kind") == 0) kind = kv[i].value;
    else if (strcmp(kv[i].key, "path") == 0) path = kv[i].value, where = kv[i].where;
    else {
      snprintf(err, errlen, "%s: dataset %s: unknown key '%s' for kind %s", kv[i].where, name, kv[i].key, kind);
      return NULL;
    }
  }
  if (strcmp(kind, "image") != 0) {
    snprintf(err, errlen, "dataset %s: unknown kind '%s' (expected image)", name, kind);
    return NULL;
  }
  if (!path) {
    snprintf(err, errlen, "dataset %s: no path given", name);
    return NULL;
  }
  dataset *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(err, errlen, "dataset %s: out of memory", name);
    return NULL;
  }
  d->refs = 1;
  if (load_image_folder(d, name, path, err, errlen) < 0) {
    size_t n = strlen(err);
    if (n + 1 < errlen) snprintf(err + n, errlen - n, " (%s)", where);
    return NULL;
  }
  return d;
}

dataset *dataset_ref(dataset *d) {
  __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
  return d;
}

void dataset_unref(dataset *d) {
  if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0) dataset_free(d);
}

int dataset_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                 size_t errlen) {
  const char *path = d->paths[i];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file");
    close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > DATASET_MAX_FILE) {
    snprintf(err, errlen, "file is %lld bytes, over the %u-byte limit", (long long)st.st_size,
             DATASET_MAX_FILE);
    close(fd);
    return -1;
  }
  size_t want = (size_t)st.st_size;
  if (want + 1 > *cap) {
    uint8_t *b = realloc(*buf, want + 1);
    if (!b) {
      snprintf(err, errlen, "out of memory reading %zu bytes", want);
      close(fd);
      return -1;
    }
    *buf = b;
    *cap = want + 1;
  }
  size_t got = 0;
  while (got < want) {
    ssize_t r = read(fd, *buf + got, want - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      snprintf(err, errlen, "read failed after %zu of %zu bytes: %s", got, want,
               r < 0 ? strerror(errno) : "file shrank");
      close(fd);
      return -1;
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
