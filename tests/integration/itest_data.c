/* itest_data.c -- see itest_util.h: small image datasets, and what
 * torchvision's ImageFolder would make of them. */
#include "itest_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "make_demo.h"

int itest_make_dataset(const char *dir, int per_class, char *err, size_t errlen) {
  make_demo_opts o;
  make_demo_opts_init(&o);
  o.train_per_class = per_class;
  o.val_per_class = 0;
  o.min_side = 32;
  o.max_side = 64;
  char path[512];
  snprintf(path, sizeof path, "%s/train", dir);
  if (make_demo(dir, &o, NULL, err, errlen) < 0) return -1;
  /* make_demo writes DIR/train and DIR/val; the tests serve DIR, so the
   * train split is moved up and the empty val folder removed. */
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s.train", dir);
  if (rename(path, tmp) < 0) return itest_fail(err, errlen, "rename %s: %s", path, strerror(errno));
  itest_rmtree(dir);
  if (rename(tmp, dir) < 0) return itest_fail(err, errlen, "rename %s: %s", tmp, strerror(errno));
  return 0;
}

static int is_jpeg(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (strcasecmp(dot, ".jpg") == 0 || strcasecmp(dot, ".jpeg") == 0);
}

static int no_dot(const struct dirent *e) { return e->d_name[0] != '.'; }

static int by_bytes(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

int itest_folder_scan(const char *root, itest_folder *f) {
  struct dirent **cls;
  memset(f, 0, sizeof *f);
  int nc = scandir(root, &cls, no_dot, by_bytes);
  if (nc < 0) return -1;
  int rc = 0;
  for (int c = 0; c < nc; c++) {
    char dir[1024];
    struct dirent **files;
    snprintf(dir, sizeof dir, "%s/%s", root, cls[c]->d_name);
    int nf = scandir(dir, &files, no_dot, by_bytes);
    if (nf < 0) {
      free(cls[c]);
      continue; /* a plain file at the top: not a class */
    }
    for (int i = 0; i < nf; i++) {
      if (rc == 0 && is_jpeg(files[i]->d_name)) {
        char **names = realloc(f->names, (f->n + 1) * sizeof *names);
        int32_t *labels = realloc(f->labels, (f->n + 1) * sizeof *labels);
        if (names) f->names = names;
        if (labels) f->labels = labels;
        size_t len = strlen(cls[c]->d_name) + strlen(files[i]->d_name) + 2;
        char *name = names && labels ? malloc(len) : NULL;
        if (!name) {
          rc = -1;
        } else {
          snprintf(name, len, "%s/%s", cls[c]->d_name, files[i]->d_name);
          f->names[f->n] = name;
          f->labels[f->n++] = (int32_t)f->nclasses;
        }
      }
      free(files[i]);
    }
    free(files);
    f->nclasses++;
    free(cls[c]);
  }
  free(cls);
  if (rc < 0) itest_folder_free(f);
  return rc;
}

void itest_folder_free(itest_folder *f) {
  for (size_t i = 0; i < f->n; i++) free(f->names[i]);
  free(f->names);
  free(f->labels);
  memset(f, 0, sizeof *f);
}

long itest_folder_find(const itest_folder *f, const char *name) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->names[i], name) == 0) return (long)i;
  return -1;
}
