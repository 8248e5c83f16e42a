/*
 * kind_text.c -- the text kind: labelled text (fastText lines, TSV, or
 * folders of .txt files, text_source.h) over an embedding table
 * (wordvec.h); the text is tokenized at load (textset.h), batches copy
 * table rows. Settings: dataset_text.c. Called through dataset.c's kind table.
 */
#include "bfeed_types.h"
#include "dataset_text.h"
#include "fingerprint.h"
#include "folder.h"
#include "storage.h"

static int kind_text_record(void *ctx, const text_record *r, char *err, size_t errlen) {
  return dataset_text_add(ctx, r->label, r->label_len, r->text, r->text_len, r->file, r->line, err, errlen);
}

static int kind_text_is_folder(const char *path) {
  storage_info st;
  char err[16];
  return storage_stat(path, &st, err, sizeof err) == 0 && st.type == STORAGE_DIR;
}

static int kind_text_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen) {
  dataset_text_opts s;
  int rc = dataset_text_prepare(d, k, &s, log, err, errlen);
  if (rc < 0) return rc;
  dataset_text_builder b = {.d = d, .s = &s};
  int folder = kind_text_is_folder(d->root);
  strlist dropped = {0};
  s.src.dropped = &dropped;
  rc = text_source_read(d->root, &s.src, kind_text_record, &b, err, errlen);
  dataset_log_dropped(d, &dropped, log);
  /* Folders' labels are their names, sorted, as ImageFolder's. */
  if (rc == 0) rc = dataset_text_finish(&b, !folder, log, err, errlen);
  dataset_text_builder_free(&b);
  return rc;
}

/* The .txt files below a folder as text_source.c reads them, or the file. */
static void kind_text_fingerprint(const dataset *d, struct fingerprint *fp) {
  if (!kind_text_is_folder(d->root)) return fingerprint_file(fp, d->root, NULL);
  static const char *const txt[] = {".txt", NULL};
  strlist files = {0};
  char err[256];
  if (folder_walk(d->root, &files, NULL, txt, NULL, NULL, NULL, err, sizeof err) < 0) fingerprint_line(fp, "files unknown\n");
  for (size_t i = 0; i < files.n; i++) fingerprint_file(fp, files.v[i], d->root);
  strlist_free(&files);
}

static const dataset_key_spec kind_text_keys[] = {
    DATASET_TEXT_KEYS, {"format", DATASET_KEY_VALUE}, {"label", DATASET_KEY_VALUE}, {NULL, 0}};

const dataset_kind kind_text = {.name = "text", .keys = kind_text_keys, .load = kind_text_load,
                                 .fingerprint = kind_text_fingerprint};
