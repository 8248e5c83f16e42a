/* manifest.c -- see manifest.h */
#include "manifest.h"

#include <stdio.h>
#include <string.h>

#include "bfeed_types.h"
#include "storage.h"
#include "text_source.h"

static int record(manifest_record *r, const char *p, size_t n, char *err, size_t errlen) {
  const char *t1 = memchr(p, '\t', n);
  const char *t2 = t1 ? memchr(t1 + 1, '\t', n - (size_t)(t1 + 1 - p)) : NULL;
  if (!t2)
    return snprintf(err, errlen, "%s:%llu: expected image_path<TAB>label<TAB>text", r->file,
                    (unsigned long long)r->line), BFEED_EDATASET;
  r->image = p;
  r->image_len = (size_t)(t1 - p);
  r->label = t1 + 1;
  r->label_len = (size_t)(t2 - t1 - 1);
  r->text = t2 + 1;
  r->text_len = n - (size_t)(t2 + 1 - p);
  if (r->image_len == 0 || memchr(r->image, 0, r->image_len))
    return snprintf(err, errlen, "%s:%llu: the image path is empty or holds a NUL byte", r->file,
                    (unsigned long long)r->line), BFEED_EDATASET;
  return text_source_check_label(r->label, r->label_len, r->file, r->line, err, errlen);
}

int manifest_parse(const char *data, size_t size, const char *name, manifest_fn fn, void *ctx, char *err,
                   size_t errlen) {
  const char *p = data, *end = data + size;
  manifest_record r = {.file = name};
  const char *line;
  size_t n;
  int rc;
  while ((line = text_source_line(&p, end, &n)) != NULL) {
    r.line++;
    if (!text_source_blank(line, n) && ((rc = record(&r, line, n, err, errlen)) < 0 || (rc = fn(ctx, &r, err, errlen)) < 0))
      return rc;
  }
  return 0;
}

int manifest_read(const char *path, manifest_fn fn, void *ctx, char *err, size_t errlen) {
  int rc;
  storage_mapping m;
  if ((rc = storage_map(path, UINT64_MAX, &m, err, errlen)) < 0) return rc;
  rc = manifest_parse((const char *)m.data, m.size, path, fn, ctx, err, errlen);
  storage_unmap(&m);
  return rc;
}
