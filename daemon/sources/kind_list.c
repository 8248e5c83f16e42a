/*
 * kind_list.c -- the list kind: a text file naming image files and their
 * labels, one sample a line, in the file's order: the lists DALI's file
 * reader takes (file_list), and "path label" listings of that shape. (An
 * ImageNet train_cls.txt numbers images, not classes, in its second
 * column and leaves out the .JPEG: it needs its labels rewritten first.)
 * Called through dataset.c's kind table.
 *
 * A line is one of
 *
 *     path<TAB>label    a line holding a tab: split at it (one tab only);
 *                       path and label may hold spaces
 *     path label        a line without a tab: split at its last run of
 *                       spaces (DALI's form); the path may hold spaces
 *
 * with blanks around each field dropped. Lines that are empty or blank,
 * and lines whose first non-blank character is '#', are skipped; a
 * trailing '\r' is dropped. Anything else -- one field only, two tabs, an
 * empty or NUL-holding field, a label over 1024 bytes -- is an error
 * naming the file and line, and so is a path that does not name a regular
 * file at load.
 *
 * Paths are relative to the list file's folder, or to root=DIR when set;
 * absolute paths ("/..." or SCHEME://...) are used as they are. Labels
 * follow labelset.h's rule: when every label is a plainly written whole
 * number up to 65535 the label is that number (max + 1 classes), otherwise
 * the labels are class names and a sample's label is its name's index
 * among the sorted distinct names, as ImageFolder numbers its folders.
 * The images go through the folder kind's path (read through storage.h,
 * decoded by content): a list of a folder's files in (class, path) order
 * with the folder's labels serves the folder's batches byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_kind.h"
#include "fingerprint.h"
#include "labelset.h"
#include "storage.h"
#include "text_source.h"

#define KIND_LIST_MAX_FILE (1ull << 40) /* no limit in practice: local files are mapped, not read */

typedef struct kind_list_state {
  char *dir; /* where relative paths start: root=, or the list file's folder */
} kind_list_state;

/* A field: [s, e) with blanks around it dropped. */
static void kind_list_trim(const char **s, const char **e) {
  while (*s < *e && (**s == ' ' || **s == '\t')) (*s)++;
  while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) (*e)--;
}

/* Split a line (not blank, not a comment) into its path and label. */
static int kind_list_fields(const char *p, size_t n, const char *file, uint64_t line, const char **path,
                            size_t *path_len, const char **label, size_t *label_len, char *err, size_t errlen) {
  const char *end = p + n, *tab = memchr(p, '\t', n), *split, *after;
  if (tab) {
    if (memchr(tab + 1, '\t', (size_t)(end - tab - 1)))
      return snprintf(err, errlen, "%s:%llu: more than one tab: expected path<TAB>label", file,
                      (unsigned long long)line), BFEED_EDATASET;
    split = tab;
    after = tab + 1;
  } else {
    const char *e = end;
    while (e > p && e[-1] == ' ') e--; /* trailing blanks are not the separator */
    split = e;
    while (split > p && split[-1] != ' ') split--;
    after = split;
    while (split > p && split[-1] == ' ') split--;
  }
  const char *ps = p, *pe = split, *ls = after, *le = end;
  kind_list_trim(&ps, &pe);
  kind_list_trim(&ls, &le);
  if (ps == pe || ls == le)
    return snprintf(err, errlen, "%s:%llu: expected path<TAB>label or path label, found one field", file,
                    (unsigned long long)line), BFEED_EDATASET;
  if (memchr(ps, 0, (size_t)(pe - ps)))
    return snprintf(err, errlen, "%s:%llu: the path holds a NUL byte", file, (unsigned long long)line), BFEED_EDATASET;
  *path = ps, *path_len = (size_t)(pe - ps), *label = ls, *label_len = (size_t)(le - ls);
  return text_source_check_label(ls, *label_len, file, line, err, errlen);
}

/* What the lines build. */
typedef struct kind_list_build {
  dataset *d;
  const char *dir;
  strlist paths;
  storage_stamps stamps;
  labelset labels;
  uint32_t *prov; /* provisional label of each sample */
  size_t cap;
  size_t relative; /* paths named from dir (the log says where they were looked for) */
} kind_list_build;

static int kind_list_line(kind_list_build *b, const char *p, size_t n, const char *file, uint64_t line, char *err,
                          size_t errlen) {
  const char *path, *label;
  size_t path_len, label_len;
  int rc = kind_list_fields(p, n, file, line, &path, &path_len, &label, &label_len, err, errlen);
  if (rc < 0) return rc;
  if (b->paths.n >= UINT32_MAX)
    return snprintf(err, errlen, "%s:%llu: more than %u samples", file, (unsigned long long)line, UINT32_MAX),
           BFEED_EDATASET;
  if (b->paths.n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1024;
    uint32_t *v = realloc(b->prov, cap * sizeof *v);
    if (!v) return dataset_oom(b->d, err, errlen);
    b->prov = v;
    b->cap = cap;
  }
  if (labelset_add(&b->labels, label, label_len, &b->prov[b->paths.n]) < 0) return dataset_oom(b->d, err, errlen);
  b->relative += !storage_is_absolute(path, path_len);
  return dataset_files_add(b->d, &b->paths, &b->stamps, b->dir, path, path_len, file, line, err, errlen);
}

static int kind_list_parse(kind_list_build *b, const char *data, size_t size, const char *file, char *err,
                           size_t errlen) {
  const char *p = data, *end = data + size, *line;
  size_t n;
  uint64_t lineno = 0;
  while ((line = text_source_line(&p, end, &n)) != NULL) {
    lineno++;
    if (text_source_blank(line, n)) continue;
    const char *q = line;
    while (*q == ' ' || *q == '\t') q++;
    if (*q == '#') continue;
    int rc = kind_list_line(b, line, n, file, lineno, err, errlen);
    if (rc < 0) return rc;
  }
  if (b->paths.n == 0) return snprintf(err, errlen, "dataset %s: no samples in %s", b->d->name, file), BFEED_EDATASET;
  return 0;
}

/* The labels to class indices, and the dataset's arrays from the build. */
static int kind_list_finish(kind_list_build *b, char *err, size_t errlen) {
  dataset *d = b->d;
  size_t n = b->paths.n;
  if (labelset_finish(&b->labels, 1) < 0 || !(d->labels = malloc(n * sizeof *d->labels)) || !(d->bad = calloc(n, 1)))
    return dataset_oom(d, err, errlen);
  for (size_t i = 0; i < n; i++) d->labels[i] = (int32_t)b->labels.map[b->prov[i]];
  d->classes = b->labels.classes;
  d->nclasses = b->labels.nclasses;
  b->labels.classes = NULL;
  d->paths = b->paths.v;
  d->stamps = b->stamps.v;
  d->nsamples = n;
  d->tensors = DATASET_TENSOR_IMAGE;
  b->stamps.v = NULL;
  b->paths.v = NULL;
  b->paths.n = 0;
  return 0;
}

static void kind_list_free(dataset *d) {
  kind_list_state *s = d->state;
  if (s) free(s->dir);
  free(s);
  d->state = NULL;
}

static int kind_list_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  kind_list_state *s = calloc(1, sizeof *s);
  if (!s) return dataset_oom(d, err, errlen);
  d->state = s;
  const dataset_kv *root = dataset_key(k, "root");
  if (!(s->dir = root ? strdup(root->value) : storage_parent(d->root))) return dataset_oom(d, err, errlen);
  storage_mapping m;
  int rc = storage_map(d->root, KIND_LIST_MAX_FILE, &m, err, errlen);
  if (rc < 0) return rc;
  kind_list_build b = {.d = d, .dir = s->dir};
  rc = kind_list_parse(&b, (const char *)m.data, m.size, d->root, err, errlen);
  storage_unmap(&m);
  if (rc == 0) rc = kind_list_finish(&b, err, errlen);
  if (rc == 0 && b.relative)
    log_info(log, "dataset %s: %zu images listed in %s, %s labels, %zu relative paths from %s", d->name,
             d->nsamples, d->root, b.labels.numeric ? "numeric" : "named", b.relative, s->dir);
  else if (rc == 0)
    log_info(log, "dataset %s: %zu images listed in %s, %s labels, absolute paths", d->name, d->nsamples, d->root,
             b.labels.numeric ? "numeric" : "named");
  strlist_free(&b.paths);
  storage_stamps_free(&b.stamps);
  labelset_free(&b.labels);
  free(b.prov);
  return rc;
}

/* The list itself, then its images relative to where they were found. */
static void kind_list_fingerprint(const dataset *d, struct fingerprint *fp) {
  const kind_list_state *s = d->state;
  fingerprint_file(fp, d->root, NULL);
  for (size_t i = 0; i < d->nsamples; i++) fingerprint_file(fp, d->paths[i], s->dir);
}

static const dataset_key_spec kind_list_keys[] = {{"root", DATASET_KEY_PLACE}, {NULL, 0}};

const dataset_kind kind_list = {.name = "list", .keys = kind_list_keys, .load = kind_list_load,
                                 .read = dataset_files_read, .sample_name = dataset_files_name,
                                 .fingerprint = kind_list_fingerprint, .free = kind_list_free};
