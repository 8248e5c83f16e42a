/* text_source.c -- see text_source.h */
#include "text_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "folder.h"
#include "labelset.h"
#include "storage.h"

#define LABEL_PREFIX "__label__"
#define LABEL_PREFIX_LEN 9
#define TEXT_MAX_FILE (1ull << 40) /* no limit in practice: local files are mapped, not read */

int text_source_format_parse(const char *s) {
  static const char *const names[] = {"auto", "fasttext", "tsv", "folder"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int text_source_check_label(const char *label, size_t len, const char *file, uint64_t line, char *err, size_t errlen) {
  if (len == 0) return snprintf(err, errlen, "%s:%llu: empty label", file, (unsigned long long)line), BFEED_EDATASET;
  if (len > LABELSET_MAX_LEN)
    return snprintf(err, errlen, "%s:%llu: a label of %zu bytes, over the %u-byte limit", file, (unsigned long long)line,
                    len, LABELSET_MAX_LEN), BFEED_EDATASET;
  if (memchr(label, 0, len))
    return snprintf(err, errlen, "%s:%llu: the label holds a NUL byte", file, (unsigned long long)line), BFEED_EDATASET;
  return 0;
}

static int label_ok(const text_record *r, char *err, size_t errlen) {
  return text_source_check_label(r->label, r->label_len, r->file, r->line, err, errlen);
}

/* "__label__a __label__b text": labels and the text after them. */
static int fasttext_line(text_record *r, const char *p, size_t n, int pick, char *err, size_t errlen) {
  const char *end = p + n, *labels[64];
  size_t lens[64];
  int count = 0;
  for (;;) {
    while (p < end && is_space(*p)) p++;
    if ((size_t)(end - p) < LABEL_PREFIX_LEN || memcmp(p, LABEL_PREFIX, LABEL_PREFIX_LEN) != 0) break;
    const char *s = p + LABEL_PREFIX_LEN;
    p = s;
    while (p < end && !is_space(*p)) p++;
    if (count < 64) labels[count] = s, lens[count] = (size_t)(p - s);
    count++;
  }
  if (count == 0)
    return snprintf(err, errlen, "%s:%llu: no %s at the start of the line", r->file, (unsigned long long)r->line,
                    LABEL_PREFIX), BFEED_EDATASET;
  int want = pick == 0 ? 1 : pick < 0 ? (count < 64 ? count : 64) : pick;
  if (want > count || want > 64)
    return snprintf(err, errlen, "%s:%llu: the line has %d labels, label=%d asks for more", r->file,
                    (unsigned long long)r->line, count, pick), BFEED_EDATASET;
  r->label = labels[want - 1];
  r->label_len = lens[want - 1];
  r->text = p;
  r->text_len = (size_t)(end - p);
  return label_ok(r, err, errlen);
}

static int tsv_line(text_record *r, const char *p, size_t n, char *err, size_t errlen) {
  const char *tab = memchr(p, '\t', n);
  if (!tab)
    return snprintf(err, errlen, "%s:%llu: no tab: expected label<TAB>text", r->file, (unsigned long long)r->line), BFEED_EDATASET;
  const char *a = p, *b = tab;
  while (a < b && *a == ' ') a++;
  while (b > a && b[-1] == ' ') b--;
  r->label = a;
  r->label_len = (size_t)(b - a);
  r->text = tab + 1;
  r->text_len = n - (size_t)(tab + 1 - p);
  return label_ok(r, err, errlen);
}

int text_source_blank(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_space(p[i])) return 0;
  return 1;
}

const char *text_source_line(const char **p, const char *end, size_t *n) {
  const char *line = *p;
  if (line >= end) return NULL;
  const char *nl = memchr(line, '\n', (size_t)(end - line)), *le = nl ? nl : end;
  *n = (size_t)(le - line);
  if (*n > 0 && line[*n - 1] == '\r') (*n)--;
  *p = le + (nl != NULL);
  return line;
}

static text_format detect(const char *p, const char *end) {
  const char *line;
  size_t n;
  while ((line = text_source_line(&p, end, &n)) != NULL) {
    if (text_source_blank(line, n)) continue;
    const char *le = line + n;
    while (is_space(*line)) line++;
    if ((size_t)(le - line) >= LABEL_PREFIX_LEN && memcmp(line, LABEL_PREFIX, LABEL_PREFIX_LEN) == 0) return TEXT_FASTTEXT;
    return memchr(line, '\t', (size_t)(le - line)) ? TEXT_TSV : TEXT_AUTO;
  }
  return TEXT_AUTO;
}

int text_source_parse(const char *data, size_t size, const char *name, const text_source_opts *o,
                      text_record_fn fn, void *ctx, char *err, size_t errlen) {
  const char *p = data, *end = data + size;
  text_format f = o->format;
  if (f == TEXT_AUTO) f = detect(p, end);
  if (f == TEXT_AUTO)
    return snprintf(err, errlen, "%s: cannot tell the format: the first line has neither %s nor a tab (set format=fasttext or tsv)",
                    name, LABEL_PREFIX), BFEED_EDATASET;
  if (f != TEXT_FASTTEXT && f != TEXT_TSV)
    return snprintf(err, errlen, "%s: a file, not a folder, so format=folder does not apply", name), BFEED_EDATASET;
  text_record r = {.file = name};
  const char *line;
  size_t n;
  while ((line = text_source_line(&p, end, &n)) != NULL) {
    r.line++;
    if (text_source_blank(line, n)) continue;
    int rc = f == TEXT_FASTTEXT ? fasttext_line(&r, line, n, o->label_pick, err, errlen) : tsv_line(&r, line, n, err, errlen);
    if (rc < 0 || (rc = fn(ctx, &r, err, errlen)) < 0) return rc;
  }
  return 0;
}

static int read_file(const char *path, const text_source_opts *o, text_record_fn fn, void *ctx, char *err,
                     size_t errlen) {
  storage_mapping m;
  int rc;
  if ((rc = storage_map(path, TEXT_MAX_FILE, &m, err, errlen)) < 0) return rc;
  rc = text_source_parse((const char *)m.data, m.size, path, o, fn, ctx, err, errlen);
  storage_unmap(&m);
  return rc;
}

static int read_folder(const char *root, strlist *dropped, text_record_fn fn, void *ctx, char *err,
                       size_t errlen) {
  static const char *const txt[] = {".txt", NULL};
  strlist classes = {0}, files = {0};
  folder_walk_state ws = {.root = root};
  int rc = folder_list(root, &classes, NULL, txt, dropped, NULL, err, errlen);
  if (rc == 0 && classes.n == 0) rc = (snprintf(err, errlen, "folder %s has no class sub-folders", root), BFEED_EDATASET);
  for (size_t c = 0; rc == 0 && c < classes.n; c++) {
    const char *slash = strrchr(classes.v[c], '/');
    const char *cls = slash ? slash + 1 : classes.v[c];
    rc = folder_walk(classes.v[c], &files, NULL, txt, dropped, NULL, &ws, err, errlen);
    for (size_t i = 0; rc == 0 && i < files.n; i++) {
      storage_mapping m;
      if ((rc = storage_map(files.v[i], TEXT_MAX_FILE, &m, err, errlen)) < 0) break;
      text_record r = {.label = cls, .label_len = strlen(cls), .text = (const char *)m.data,
                       .text_len = m.size, .file = files.v[i]};
      rc = fn(ctx, &r, err, errlen);
      storage_unmap(&m);
    }
    strlist_free(&files);
  }
  strlist_free(&classes);
  folder_walk_state_free(&ws);
  return rc;
}

int text_source_read(const char *path, const text_source_opts *o, text_record_fn fn, void *ctx, char *err,
                     size_t errlen) {
  storage_info st;
  int rc = storage_stat(path, &st, err, errlen);
  if (rc < 0) return rc;
  if (st.type == STORAGE_DIR) {
    if (o->format != TEXT_AUTO && o->format != TEXT_FOLDER)
      return snprintf(err, errlen, "%s is a folder: format must be folder (or auto)", path), BFEED_EDATASET;
    return read_folder(path, o->dropped, fn, ctx, err, errlen);
  }
  return read_file(path, o, fn, ctx, err, errlen);
}
