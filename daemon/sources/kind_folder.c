/*
 * kind_folder.c -- the image kind: an ImageFolder, ROOT/CLASS/FILE.jpg,
 * .jpeg, .png or .webp (or deeper below CLASS), as torchvision's: labels
 * are the indices of the sorted folder names, samples are ordered by
 * (class, path) so that a sample index means the same thing to bfeedd and
 * to torchvision. Files are listed at load (folder.h) and read when a
 * batch needs them. Called through dataset.c's kind table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "dataset_kind.h"
#include "fingerprint.h"
#include "folder.h"

/* What image_decode.h reads; the content decides the format, these only
 * which files are samples. The load-time log and errors name them from
 * this list. */
static const char *const kind_folder_exts[] = {".jpg", ".jpeg", ".png", ".webp", NULL};

/* ".jpg/.jpeg" */
static const char *kind_folder_exts_text(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; kind_folder_exts[i] && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "/" : "", kind_folder_exts[i]);
  return buf;
}

/* Tell the operator at load what an ImageFolder will not serve: files of
 * other types in class folders (how many, why, the first few) and class
 * folders with nothing to serve (their labels never occur). */
static void kind_folder_left_out(const dataset *d, const strlist *classes, const size_t *per_class,
                                 const folder_skipped *sk, const logger *log) {
  char types[64], names[512];
  kind_folder_exts_text(types, sizeof types);
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

static int kind_folder_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  const char *root = d->root;
  strlist classes = {0}, files = {0}, dropped = {0};
  storage_stamps stamps = {0};
  folder_skipped skipped = {0};
  size_t *per_class = NULL;
  char types[64];
  uint64_t max_samples;
  folder_walk_state ws = {.log = log, .name = d->name, .root = root};
  int rc = dataset_key_u64(k, "max_samples", 1, UINT32_MAX, FOLDER_MAX_FILES_DEFAULT, &max_samples, err, errlen);
  if (rc < 0) return rc;
  ws.max_files = (size_t)max_samples;
  rc = BFEED_EDATASET;
  if (folder_list(root, &classes, NULL, kind_folder_exts, &dropped, NULL, err, errlen) < 0) goto done;
  if (classes.n == 0) {
    snprintf(err, errlen, "dataset %s: folder %s has no class sub-folders", d->name, root);
    goto done;
  }
  if (!(per_class = calloc(classes.n, sizeof *per_class))) goto oom;
  size_t cap = 0;
  for (size_t c = 0; c < classes.n; c++) {
    size_t before = files.n;
    if (folder_walk(classes.v[c], &files, &stamps, kind_folder_exts, &dropped, &skipped, &ws, err, errlen) < 0)
      goto done;
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
    snprintf(err, errlen, "dataset %s: no %s files below %s%s", d->name, kind_folder_exts_text(types, sizeof types),
             root, skipped.n ? " (other files are not served)" : "");
    goto done;
  }
  kind_folder_left_out(d, &classes, per_class, &skipped, log);
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
  d->stamps = stamps.v;
  d->nsamples = files.n;
  d->tensors = DATASET_TENSOR_IMAGE;
  stamps.v = NULL;
  files.v = NULL;
  files.n = 0;
  rc = 0;
  goto done;
oom:
  rc = dataset_oom(d, err, errlen);
done:
  dataset_log_dropped(d, &dropped, log);
  strlist_free(&classes);
  strlist_free(&files);
  storage_stamps_free(&stamps);
  folder_skipped_free(&skipped);
  folder_walk_state_free(&ws);
  free(per_class);
  return rc;
}

/* Each sample image, relative to the folder. */
static void kind_folder_fingerprint(const dataset *d, struct fingerprint *fp) {
  for (size_t i = 0; i < d->nsamples; i++) fingerprint_file(fp, d->paths[i], d->root);
}

static const dataset_key_spec kind_folder_keys[] = {{"max_samples", DATASET_KEY_PLACE}, {NULL, 0}};

const dataset_kind kind_folder = {.name = "image", .keys = kind_folder_keys, .load = kind_folder_load,
                                   .read = dataset_files_read, .sample_name = dataset_files_name,
                                   .fingerprint = kind_folder_fingerprint};
