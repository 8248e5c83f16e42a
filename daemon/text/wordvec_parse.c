/*
 * wordvec_parse.c -- embeddings files to a bf16 table (see wordvec.h).
 *
 * Every count is checked before it sizes anything: the header's V x D
 * against the memory limit and against the bytes the file has, each line's
 * value count against D, each binary record against the bytes left. Rows
 * are parsed straight into the bf16 table; a word's row is committed only
 * when the word is new, so a duplicate costs nothing but its count.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "bfeed_types.h"
#include "wordvec.h"
#include "errtext.h"

#define VALUE_MAX_CHARS 63 /* longer "numbers" are not numbers */

typedef struct wv_build {
  const char *name;
  uint32_t dim;
  uint32_t cap, n; /* rows allocated, rows kept */
  uint16_t *vec;
  uint64_t *off;   /* cap + 1 */
  char *words;
  size_t wlen, wcap;
  uint32_t *slots, nslots;
  uint32_t max_word_len;
  uint64_t dups;
  char *err;
  size_t errlen;
} wv_build;

/* EDATASET, with the message "NAME" + what follows (which starts with ':'). */
#define fail(b, ...) errtext_set((b)->err, (b)->errlen, BFEED_EDATASET, (b)->name, __VA_ARGS__)

static void build_free(wv_build *b) {
  free(b->vec);
  free(b->off);
  free(b->words);
  free(b->slots);
  b->vec = NULL, b->off = NULL, b->words = NULL, b->slots = NULL;
}

/* Room for cap rows of dim values; the caller has checked cap x dim
 * against the memory limit. */
static int build_init(wv_build *b, uint32_t cap, uint32_t dim) {
  b->dim = dim;
  b->cap = cap;
  b->nslots = 16;
  while (b->nslots < 2 * (uint64_t)cap) b->nslots *= 2;
  b->vec = malloc((size_t)cap * dim * 2);
  b->off = malloc(((size_t)cap + 1) * sizeof *b->off);
  b->slots = calloc(b->nslots, sizeof *b->slots);
  if (!b->vec || !b->off || !b->slots) return fail(b, ": out of memory for %u words of %u values", cap, dim);
  b->off[0] = 0;
  return 0;
}

static uint16_t *build_row(wv_build *b) { return b->vec + (size_t)b->n * b->dim; }

/* Keep the row just parsed under word, unless the word is a duplicate. */
static int build_commit(wv_build *b, const char *word, size_t len) {
  uint32_t slot;
  if (wordvec_probe(b->slots, b->nslots, b->off, b->words, word, len, &slot) != WORDVEC_NONE) {
    b->dups++;
    return 0;
  }
  if (b->wlen + len > b->wcap) {
    size_t cap = b->wcap ? b->wcap : 4096;
    while (cap < b->wlen + len) cap *= 2;
    char *w = realloc(b->words, cap);
    if (!w) return fail(b, ": out of memory for the words");
    b->words = w;
    b->wcap = cap;
  }
  memcpy(b->words + b->wlen, word, len);
  b->wlen += len;
  b->off[b->n + 1] = b->wlen;
  b->slots[slot] = b->n + 1;
  b->n++;
  if (len > b->max_word_len) b->max_word_len = (uint32_t)len;
  return 0;
}

static int build_finish(wv_build *b, wordvec_format format, wordvec *out) {
  if (b->n == 0) return fail(b, ": no words");
  /* Shrinking: rows reserved for duplicates and blank lines go back. */
  uint16_t *vec = realloc(b->vec, (size_t)b->n * b->dim * 2);
  if (vec) b->vec = vec;
  /* The table owns the four allocations (own[]) from here on. */
  *out = (wordvec){.nwords = b->n, .dim = b->dim, .format = format, .max_word_len = b->max_word_len,
                   .duplicates = b->dups, .vectors = b->vec, .word_off = b->off, .words = b->words,
                   .slots = b->slots, .nslots = b->nslots, .own = {b->vec, b->off, b->words, b->slots}};
  b->vec = NULL, b->off = NULL, b->words = NULL, b->slots = NULL;
  /* Counted once, here, on the bf16 table as served (the cache keeps the
   * count, so a load that maps it need not pass over the vectors). */
  for (size_t i = 0; i < (size_t)out->nwords * out->dim; i++)
    if ((out->vectors[i] & 0x7f80u) == 0x7f80u && out->nonfinite++ == 0) out->first_nonfinite = (uint32_t)(i / out->dim);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Text                                                                */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The line [p, end) without its trailing blanks and carriage return. */
static size_t trim_len(const char *p, size_t n) {
  while (n > 0 && (is_blank(p[n - 1]) || p[n - 1] == '\r')) n--;
  return n;
}

static int parse_float(const char *tok, size_t len, float *out) {
  char buf[VALUE_MAX_CHARS + 1];
  if (len == 0 || len > VALUE_MAX_CHARS) return BFEED_EDATASET;
  memcpy(buf, tok, len);
  buf[len] = 0;
  char *end;
  *out = strtof(buf, &end); /* ERANGE still yields the float32 the text denotes */
  return end == buf + len ? 0 : -1;
}

/* Split the next blank-separated token off [*p, end). */
static int next_token(const char **p, const char *end, const char **tok, size_t *len) {
  const char *s = *p;
  while (s < end && is_blank(*s)) s++;
  if (s == end) return 0;
  const char *e = s;
  while (e < end && !is_blank(*e)) e++;
  *tok = s;
  *len = (size_t)(e - s);
  *p = e;
  return 1;
}

/* Tokens after the first of a trimmed line. */
static uint64_t count_values(const char *line, size_t len) {
  const char *p = line, *end = line + len, *tok;
  size_t tl;
  uint64_t n = 0;
  while (next_token(&p, end, &tok, &tl)) n++;
  return n ? n - 1 : 0;
}

/* One "word v1 ... vD" line (trimmed, not blank) into the next row. */
static int text_record(wv_build *b, const char *line, size_t len, uint64_t lineno) {
  if (is_blank(line[0])) return fail(b, ":%llu: the line starts with a blank, so it has no word", (unsigned long long)lineno);
  const char *p = line, *end = line + len, *word, *tok;
  size_t wl, tl;
  /* The caller passes a trimmed, non-blank line, so there is a word; saying
   * so lets the compiler see word and wl set on every path. */
  if (!next_token(&p, end, &word, &wl)) return fail(b, ":%llu: the line has no word", (unsigned long long)lineno);
  if (wl > WORDVEC_MAX_WORD)
    return fail(b, ":%llu: a word of %zu bytes, over the %u-byte limit", (unsigned long long)lineno, wl, WORDVEC_MAX_WORD);
  uint16_t *row = build_row(b);
  uint32_t k = 0;
  while (next_token(&p, end, &tok, &tl)) {
    float v;
    if (k == b->dim)
      return fail(b, ":%llu: '%.*s' has %llu values, expected %u", (unsigned long long)lineno, (int)(wl < 60 ? wl : 60),
                  word, (unsigned long long)count_values(line, len), b->dim);
    if (parse_float(tok, tl, &v) < 0)
      return fail(b, ":%llu: value %u of '%.*s' is not a number: '%.*s'", (unsigned long long)lineno, k + 1,
                  (int)(wl < 60 ? wl : 60), word, (int)(tl < 40 ? tl : 40), tok);
    row[k++] = bf16_from_f32(v);
  }
  if (k != b->dim)
    return fail(b, ":%llu: '%.*s' has %u values, expected %u", (unsigned long long)lineno, (int)(wl < 60 ? wl : 60), word,
                k, b->dim);
  return build_commit(b, word, wl);
}

/* Lines of [p, end): newlines, plus a last line without one. */
static uint64_t count_lines(const char *p, const char *end) {
  uint64_t n = 0;
  const char *nl;
  while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) n++, p = nl + 1;
  return n + (p < end);
}

/* Records of a text body starting at line number first_line; `expect` is
 * the header's count (0 for GloVe, which has none). */
static int text_body(wv_build *b, const char *p, const char *end, uint64_t first_line, uint64_t expect) {
  int rc;
  uint64_t lineno = first_line, records = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    size_t len = trim_len(p, (size_t)(le - p));
    if (len > 0) {
      if (expect && records == expect)
        return fail(b, ":%llu: more words than the %llu the header announces", (unsigned long long)lineno,
                    (unsigned long long)expect);
      if ((rc = text_record(b, p, len, lineno)) < 0) return rc;
      records++;
    }
    p = nl ? nl + 1 : end;
    lineno++;
  }
  if (expect && records < expect)
    return fail(b, ": the header announces %llu words but the file holds %llu (it ends at line %llu)",
                (unsigned long long)expect, (unsigned long long)records, (unsigned long long)(lineno - 1));
  return 0;
}

/* ------------------------------------------------------------------ */
/* Binary                                                              */

static int binary_body(wv_build *b, const uint8_t *data, size_t size, size_t pos, uint64_t nwords) {
  size_t vbytes = (size_t)b->dim * 4;
  float *vals = malloc(vbytes);
  if (!vals) return fail(b, ": out of memory");
  int rc = 0;
  for (uint64_t i = 0; i < nwords && rc == 0; i++) {
    while (pos < size && data[pos] == '\n') pos++;
    size_t look = size - pos < WORDVEC_MAX_WORD + 1 ? size - pos : WORDVEC_MAX_WORD + 1;
    const uint8_t *sp = memchr(data + pos, ' ', look);
    if (!sp && look <= WORDVEC_MAX_WORD)
      rc = fail(b, ": byte offset %zu: record %llu of %llu is truncated (the file ends inside its word)", pos,
                (unsigned long long)i + 1, (unsigned long long)nwords);
    else if (!sp)
      rc = fail(b, ": byte offset %zu: record %llu has no space within %u bytes (not word2vec binary?)", pos,
                (unsigned long long)i + 1, WORDVEC_MAX_WORD);
    else if (sp == data + pos)
      rc = fail(b, ": byte offset %zu: record %llu has an empty word", pos, (unsigned long long)i + 1);
    else if (size - (size_t)(sp + 1 - data) < vbytes)
      rc = fail(b, ": byte offset %zu: record %llu of %llu ('%.*s') is truncated: %zu bytes left for its %zu bytes of values",
                (size_t)(sp + 1 - data), (unsigned long long)i + 1, (unsigned long long)nwords,
                (int)((size_t)(sp - data) - pos < 60 ? (size_t)(sp - data) - pos : 60), (const char *)data + pos,
                size - (size_t)(sp + 1 - data), vbytes);
    if (rc < 0) break;
    /* memcpy: the values sit at any byte offset; the file is little-endian
     * like every host bfeed builds for. */
    memcpy(vals, sp + 1, vbytes);
    bf16_from_f32_array(build_row(b), vals, b->dim);
    rc = build_commit(b, (const char *)data + pos, (size_t)(sp - (data + pos)));
    pos = (size_t)(sp + 1 - data) + vbytes;
  }
  free(vals);
  if (rc < 0) return rc;
  for (; pos < size; pos++)
    if (data[pos] != '\n' && data[pos] != '\r' && !is_blank((char)data[pos]))
      return fail(b, ": byte offset %zu: data after the %llu records the header announces", pos,
                  (unsigned long long)nwords);
  return 0;
}

/* ------------------------------------------------------------------ */

/* "V D": two whole numbers and nothing else. */
static int parse_header(const char *line, size_t len, uint64_t *v, uint64_t *d) {
  const char *p = line, *end = line + len, *tok;
  size_t tl;
  uint64_t x[2];
  for (int i = 0; i < 2; i++) {
    if (!next_token(&p, end, &tok, &tl) || tl > 18) return 0;
    x[i] = 0;
    for (size_t k = 0; k < tl; k++) {
      if (tok[k] < '0' || tok[k] > '9') return 0;
      x[i] = x[i] * 10 + (uint64_t)(tok[k] - '0');
    }
  }
  if (next_token(&p, end, &tok, &tl)) return 0;
  *v = x[0], *d = x[1];
  return 1;
}

/* After a header: does the first record read as text? A binary record's
 * float bytes almost never form blank-separated numbers up to a newline. */
static int looks_like_text(const char *p, const char *end) {
  while (p < end && (*p == '\n' || *p == '\r' || is_blank(*p))) p++;
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  size_t len = trim_len(p, (size_t)((nl ? nl : end) - p));
  const char *q = p, *e = p + len, *tok;
  size_t tl;
  float v;
  int values = -1;
  while (next_token(&q, e, &tok, &tl)) {
    if (values >= 0 && parse_float(tok, tl, &v) < 0) return 0;
    values++;
  }
  return values >= 1;
}

static int check_size(wv_build *b, uint64_t words, uint64_t dim, uint64_t max_bytes, const char *what) {
  if (dim == 0) return fail(b, ":1: dimension 0: %s no values", what);
  if (dim > WORDVEC_MAX_DIM) return fail(b, ":1: dimension %llu, over the %u limit", (unsigned long long)dim, WORDVEC_MAX_DIM);
  if (words > WORDVEC_MAX_WORDS)
    return fail(b, ":1: %llu words, over the %u limit", (unsigned long long)words, WORDVEC_MAX_WORDS);
  if (words * dim * 2 > max_bytes)
    return fail(b, ":1: %llu words of %llu dimensions need %llu bytes as bf16, over the table limit of %llu bytes (max_table_bytes)",
                (unsigned long long)words, (unsigned long long)dim, (unsigned long long)(words * dim * 2),
                (unsigned long long)max_bytes);
  return 0;
}

int wordvec_parse(const uint8_t *data, size_t size, const char *name, uint64_t max_bytes, wordvec *out,
                  char *err, size_t errlen) {
  wv_build b = {.name = name, .err = err, .errlen = errlen};
  memset(out, 0, sizeof *out);
  if (size >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) data += 3, size -= 3; /* a UTF-8 byte order mark */
  const char *p = (const char *)data, *end = p + size;
  if (size == 0) return fail(&b, ": empty file");
  const char *nl = memchr(p, '\n', size);
  const char *body = nl ? nl + 1 : end;
  size_t first_len = trim_len(p, (size_t)((nl ? nl : end) - p));
  uint64_t v, d;
  int rc;
  wordvec_format format;
  if (parse_header(p, first_len, &v, &d)) {
    if (v == 0) return fail(&b, ":1: the header announces 0 words");
    if ((rc = check_size(&b, v, d, max_bytes, "the header announces")) < 0) return rc;
    if (looks_like_text(body, end)) {
      format = WORDVEC_W2V_TEXT;
      uint64_t lines = count_lines(body, end);
      if (v > lines)
        return fail(&b, ": the header announces %llu words but only %llu lines follow it", (unsigned long long)v,
                    (unsigned long long)lines);
      rc = build_init(&b, (uint32_t)v, (uint32_t)d);
      if (rc == 0) rc = text_body(&b, body, end, 2, v);
    } else {
      format = WORDVEC_W2V_BINARY;
      uint64_t left = (uint64_t)(end - body), least = v * (4 * d + 2);
      if (left < least)
        return fail(&b, ": the header announces %llu words of %llu float32 values, at least %llu bytes, but %llu bytes follow it",
                    (unsigned long long)v, (unsigned long long)d, (unsigned long long)least, (unsigned long long)left);
      rc = build_init(&b, (uint32_t)v, (uint32_t)d);
      if (rc == 0) rc = binary_body(&b, data, size, (size_t)(body - p), v);
    }
  } else {
    format = WORDVEC_GLOVE;
    /* The dimension is the first record's value count. */
    const char *q = p;
    uint64_t skipped = 0;
    while (q < end) {
      const char *e = memchr(q, '\n', (size_t)(end - q));
      if (trim_len(q, (size_t)((e ? e : end) - q)) > 0) break;
      q = e ? e + 1 : end;
      skipped++;
    }
    if (q == end) return fail(&b, ": no words (only blank lines)");
    const char *e = memchr(q, '\n', (size_t)(end - q));
    d = count_values(q, trim_len(q, (size_t)((e ? e : end) - q)));
    uint64_t lines = count_lines(q, end);
    if (d == 0)
      return fail(&b, ":%llu: a word with no values (dimension 0)", (unsigned long long)skipped + 1);
    if ((rc = check_size(&b, lines, d, max_bytes, "")) < 0) return rc;
    rc = build_init(&b, (uint32_t)lines, (uint32_t)d);
    if (rc == 0) rc = text_body(&b, q, end, skipped + 1, 0);
  }
  if (rc == 0) rc = build_finish(&b, format, out);
  build_free(&b);
  return rc;
}
