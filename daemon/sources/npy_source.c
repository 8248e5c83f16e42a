/* npy_source.c -- see npy_source.h */
#include "npy_source.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "errtext.h"

#define NPY_MAGIC "\x93NUMPY"

static int failf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return BFEED_EDATASET;
}

typedef struct hparse {
  const uint8_t *p;
  size_t pos, end; /* positions in the file */
  const char *name;
  char *err;
  size_t errlen;
} hparse;

static int bad(hparse *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(hparse *x, const char *fmt, ...) {
  char where[PATH_MAX + 48];
  snprintf(where, sizeof where, "%s: byte offset %zu: ", x->name, x->pos);
  va_list ap;
  va_start(ap, fmt);
  int rc = errtext_vset(x->err, x->errlen, BFEED_EDATASET, where, fmt, ap);
  va_end(ap);
  return rc;
}

static void ws(hparse *x) {
  while (x->pos < x->end && (x->p[x->pos] == ' ' || x->p[x->pos] == '\t' || x->p[x->pos] == '\n')) x->pos++;
}

static int eat(hparse *x, char c) {
  ws(x);
  if (x->pos < x->end && x->p[x->pos] == c) return x->pos++, 0;
  return BFEED_EDATASET;
}

/* A Python string literal without escapes: 'abc' or "abc". */
static int str(hparse *x, char *out, size_t cap) {
  ws(x);
  if (x->pos >= x->end || (x->p[x->pos] != '\'' && x->p[x->pos] != '"')) return bad(x, "expected a quoted string");
  char q = (char)x->p[x->pos++];
  size_t s = x->pos;
  while (x->pos < x->end && x->p[x->pos] != q) x->pos++;
  if (x->pos >= x->end) return bad(x, "unterminated string");
  size_t len = x->pos - s;
  x->pos++;
  if (len >= cap) return x->pos = s, bad(x, "string too long (a structured dtype?)");
  memcpy(out, x->p + s, len);
  out[len] = 0;
  return 0;
}

static int shape(hparse *x, npy_source_header *h) {
  if (eat(x, '(') < 0) return bad(x, "expected '(' for the shape");
  h->ndim = 0;
  for (;;) {
    ws(x);
    if (x->pos < x->end && x->p[x->pos] == ')') return x->pos++, 0;
    if (h->ndim == NPY_SOURCE_MAX_DIMS) return bad(x, "more than %d dimensions", NPY_SOURCE_MAX_DIMS);
    uint64_t v = 0;
    size_t s = x->pos;
    while (x->pos < x->end && x->p[x->pos] >= '0' && x->p[x->pos] <= '9') {
      if (v > (UINT64_MAX - 9) / 10) return bad(x, "dimension too large");
      v = v * 10 + (uint64_t)(x->p[x->pos++] - '0');
    }
    if (x->pos == s) return bad(x, "expected a dimension");
    if (x->pos < x->end && x->p[x->pos] == 'L') x->pos++; /* Python 2 longs */
    h->shape[h->ndim++] = v;
    ws(x);
    if (x->pos < x->end && x->p[x->pos] == ',') x->pos++;
    else if (x->pos >= x->end || x->p[x->pos] != ')') return bad(x, "expected ',' or ')' in the shape");
  }
}

static int dict(hparse *x, npy_source_header *h) {
  int rc;
  int have = 0; /* bits: descr, fortran_order, shape */
  if (eat(x, '{') < 0) return bad(x, "expected '{' (the header is a Python dict)");
  for (;;) {
    if (eat(x, '}') == 0) break;
    char key[32];
    if ((rc = str(x, key, sizeof key)) < 0) return rc;
    if (eat(x, ':') < 0) return bad(x, "expected ':' after '%s'", key);
    ws(x);
    if (strcmp(key, "descr") == 0) {
      if ((rc = str(x, h->descr, sizeof h->descr)) < 0) return rc;
      have |= 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (x->end - x->pos >= 4 && memcmp(x->p + x->pos, "True", 4) == 0) h->fortran_order = 1, x->pos += 4;
      else if (x->end - x->pos >= 5 && memcmp(x->p + x->pos, "False", 5) == 0) h->fortran_order = 0, x->pos += 5;
      else return bad(x, "fortran_order must be True or False");
      have |= 2;
    } else if (strcmp(key, "shape") == 0) {
      if ((rc = shape(x, h)) < 0) return rc;
      have |= 4;
    } else {
      return bad(x, "unknown header key '%s'", key);
    }
    if (eat(x, ',') < 0) {
      if (eat(x, '}') == 0) break;
      return bad(x, "expected ',' or '}'");
    }
  }
  if (have != 7) return bad(x, "the header lacks %s", !(have & 1) ? "descr" : !(have & 2) ? "fortran_order" : "shape");
  return 0;
}

/* Item size from a descr such as "<f4": its digits. */
static unsigned item_size(const char *d) {
  const char *s = d;
  if (*s == '<' || *s == '>' || *s == '|' || *s == '=') s++;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
  s++;
  unsigned v = 0;
  for (; *s >= '0' && *s <= '9' && v < 1000; s++) v = v * 10 + (unsigned)(*s - '0');
  return *s == 0 ? v : 0;
}

int npy_source_parse_header(const uint8_t *p, size_t n, const char *name, npy_source_header *h, char *err, size_t errlen) {
  int rc;
  hparse x = {.p = p, .pos = 0, .end = n, .name = name, .err = err, .errlen = errlen};
  memset(h, 0, sizeof *h);
  if (n < 10 || memcmp(p, NPY_MAGIC, 6) != 0) return bad(&x, "not a .npy file (no \\x93NUMPY magic)");
  unsigned major = p[6];
  size_t hl, start;
  if (major == 1) {
    hl = (size_t)p[8] | (size_t)p[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (n < 12) return x.pos = 8, bad(&x, "truncated header length");
    hl = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
    start = 12;
  } else {
    return x.pos = 6, bad(&x, ".npy format version %u is not supported (1, 2, 3 are)", major);
  }
  if (hl > n - start) return x.pos = 8, bad(&x, "the header claims %zu bytes, the file has %zu after it", hl, n - start);
  x.pos = start;
  x.end = start + hl;
  if ((rc = dict(&x, h)) < 0) return rc;
  h->data_offset = start + hl;
  unsigned isz = item_size(h->descr);
  if (isz == 0) return x.pos = start, bad(&x, "dtype '%s' is not supported", h->descr);
  if (h->ndim == 0) return x.pos = start, bad(&x, "a scalar (shape ()), not an array");
  uint64_t count = 1;
  for (int d = 0; d < h->ndim; d++) {
    if (h->shape[d] != 0 && count > UINT64_MAX / isz / h->shape[d])
      return x.pos = start, bad(&x, "the shape overflows");
    count *= h->shape[d];
  }
  h->data_bytes = count * isz;
  if (h->data_bytes != n - h->data_offset) {
    x.pos = h->data_offset;
    return bad(&x, "the header's shape and dtype '%s' need %llu bytes of data, the file has %zu", h->descr,
               (unsigned long long)h->data_bytes, n - h->data_offset);
  }
  return 0;
}

/* "[N, T, D]" for messages. */
static void shape_str(const npy_source_header *h, char *out, size_t cap) {
  size_t k = (size_t)snprintf(out, cap, "[");
  for (int d = 0; d < h->ndim && k < cap; d++)
    k += (size_t)snprintf(out + k, cap - k, "%s%llu", d ? ", " : "", (unsigned long long)h->shape[d]);
  if (k < cap) snprintf(out + k, cap - k, "]");
}

/* Values whose bf16 rounding is NaN or infinite: the float32 NaNs and
 * infinities, and finite values from 0x7f7f8000 up, which round to
 * infinity (bf16.h's round to nearest even). */
static void npy_source_count_nonfinite(npysrc *s, const uint8_t *data, uint64_t n, uint64_t row_floats) {
  for (uint64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, data + 4 * i, 4);
    if ((u & 0x7fffffffu) < 0x7f7f8000u) continue;
    if (s->nonfinite++ == 0) s->first_nonfinite_row = i / row_floats;
  }
}

int npy_source_open_features(npysrc *s, const char *path, char *err, size_t errlen) {
  int rc;
  storage_mapping file;
  memset(s, 0, sizeof *s);
  if ((rc = storage_map(path, UINT64_MAX, &file, err, errlen)) < 0) return rc;
  npy_source_header *h = &s->h;
  char sh[96];
  rc = npy_source_parse_header(file.data, file.size, path, h, err, errlen);
  if (rc == 0) shape_str(h, sh, sizeof sh);
  if (rc == 0 && strcmp(h->descr, "<f4") != 0)
    rc = failf(err, errlen, "%s: dtype '%s': features must be little-endian float32 ('<f4')", path, h->descr);
  else if (rc == 0 && h->fortran_order)
    rc = failf(err, errlen, "%s: Fortran order: features must be C order (numpy.ascontiguousarray)", path);
  else if (rc == 0 && h->ndim != 2 && h->ndim != 3)
    rc = failf(err, errlen, "%s: shape %s: features must be [N, D] or [N, T, D]", path, sh);
  else if (rc == 0 && (h->shape[0] == 0 || h->shape[0] > UINT32_MAX))
    rc = failf(err, errlen, "%s: shape %s: N must be 1..%u", path, sh, UINT32_MAX);
  else if (rc == 0 && h->data_bytes / h->shape[0] == 0)
    rc = failf(err, errlen, "%s: shape %s: samples hold no values", path, sh);
  if (rc == 0)
    npy_source_count_nonfinite(s, file.data + h->data_offset, h->data_bytes / 4, h->data_bytes / 4 / h->shape[0]);
  storage_unmap(&file);
  if (rc < 0) return BFEED_EDATASET;
  /* Opened once and kept: a rename in its place changes nothing served. */
  if ((rc = storage_open(path, &s->file, err, errlen)) < 0) return rc;
  if (!(s->path = strdup(path))) {
    storage_close(&s->file);
    return failf(err, errlen, "%s: out of memory", path), BFEED_ENOMEM;
  }
  s->nrows = h->shape[0];
  s->row_floats = h->data_bytes / 4 / h->shape[0];
  return 0;
}

int npy_source_read_row(const npysrc *s, uint64_t i, float *out, char *err, size_t errlen) {
  size_t want = (size_t)s->row_floats * 4, got = 0;
  if (s->rows) return memcpy(out, s->rows + i * s->row_floats, want), 0;
  char why[200];
  int rc = storage_pread(&s->file, out, want, s->h.data_offset + i * want, &got, why, sizeof why);
  if (rc == 0 && got < want) rc = BFEED_EDATASET, snprintf(why, sizeof why, "the file is shorter than its header says");
  if (rc < 0)
    snprintf(err, errlen, "%s: row %llu: %s (was the file changed since it was loaded?)", s->path,
             (unsigned long long)i, why);
  return rc;
}

int npy_source_read_labels(const char *path, uint64_t n, int32_t **labels, size_t *nclasses, char *err, size_t errlen) {
  int rc;
  storage_mapping m;
  npy_source_header h;
  *labels = NULL;
  if ((rc = storage_map(path, UINT64_MAX, &m, err, errlen)) < 0) return rc;
  rc = npy_source_parse_header(m.data, m.size, path, &h, err, errlen);
  int wide = rc == 0 && strcmp(h.descr, "<i8") == 0;
  if (rc == 0 && !wide && strcmp(h.descr, "<i4") != 0)
    rc = failf(err, errlen, "%s: dtype '%s': labels must be '<i4' or '<i8'", path, h.descr);
  else if (rc == 0 && (h.ndim != 1 || h.shape[0] != n))
    rc = failf(err, errlen, "%s: labels must have shape [%llu], one per feature row", path, (unsigned long long)n);
  if (rc == 0 && !(*labels = malloc(n * sizeof **labels))) rc = failf(err, errlen, "%s: out of memory", path);
  int64_t max = -1;
  for (uint64_t i = 0; rc == 0 && i < n; i++) {
    const uint8_t *q = m.data + h.data_offset + i * (wide ? 8 : 4);
    int64_t v = 0;
    for (int b = (wide ? 8 : 4) - 1; b >= 0; b--) v = (int64_t)((uint64_t)v << 8 | q[b]);
    if (!wide) v = (int32_t)(uint32_t)v;
    if (v < 0 || v > INT32_MAX)
      rc = failf(err, errlen, "%s: label %llu is %lld: labels must be 0..%d", path, (unsigned long long)i, (long long)v,
                    INT32_MAX);
    else (*labels)[i] = (int32_t)v, max = v > max ? v : max;
  }
  storage_unmap(&m);
  if (rc < 0) {
    free(*labels);
    *labels = NULL;
    return BFEED_EDATASET;
  }
  *nclasses = (size_t)(max + 1);
  return 0;
}

int npy_source_check(const npysrc *s, char *err, size_t errlen) {
  return storage_stat_same(s->path, &s->file.stamp, err, errlen);
}

void npy_source_close(npysrc *s) {
  if (s->path) storage_close(&s->file); /* path is set exactly while file is open: a zeroed npysrc holds nothing */
  free(s->path);
  memset(s, 0, sizeof *s);
}
