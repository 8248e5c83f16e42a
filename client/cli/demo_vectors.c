/* demo_vectors.c -- see demo_vectors.h */
#include "demo_vectors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "bfeed_types.h"
#include "cli_util.h"

#define DEMO_VECTORS_MAX_WORD 4096u  /* bytes; as the daemon: longer means a broken file */
#define DEMO_VECTORS_MAX_DIM 65536u
#define DEMO_VECTORS_MAX_VALUE 63    /* characters of one number */

static int demo_vectors_blank(char c) { return c == ' ' || c == '\t'; }

/* The next blank-separated token of [*p, end), 0 at the end. (The daemon's
 * reader, daemon/text/wordvec_parse.c, splits the same way; a client does
 * not link the daemon's code.) */
static int demo_vectors_token(const char **p, const char *end, const char **tok, size_t *len) {
  const char *s = *p;
  for (; s < end && demo_vectors_blank(*s); s++) continue;
  size_t n = 0;
  while (s + n < end && !demo_vectors_blank(s[n])) n++;
  *tok = s, *len = n, *p = s + n;
  return n > 0;
}

static int demo_vectors_float(const char *tok, size_t len, float *out) {
  char buf[DEMO_VECTORS_MAX_VALUE + 1], *end;
  if (len == 0 || len > DEMO_VECTORS_MAX_VALUE) return -1;
  memcpy(buf, tok, len);
  buf[len] = 0;
  *out = strtof(buf, &end);
  return end == buf + len ? 0 : -1;
}

/* One line of [p, end): its length without the trailing blanks and \r,
 * and where the next starts. */
static size_t demo_vectors_line(const char *p, const char *end, const char **next) {
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  size_t n = (size_t)((nl ? nl : end) - p);
  while (n > 0 && (demo_vectors_blank(p[n - 1]) || p[n - 1] == '\r')) n--;
  *next = nl ? nl + 1 : end;
  return n;
}

/* "V D": two whole numbers and nothing else. */
static int demo_vectors_header(const char *line, size_t len, uint64_t x[2]) {
  char buf[64], *p = buf, *e;
  if (len >= sizeof buf) return 0; /* a record, not two numbers of up to 18 digits */
  memcpy(buf, line, len);
  buf[len] = 0;
  for (int i = 0; i < 2; i++) {
    while (demo_vectors_blank(*p)) p++;
    if (*p < '0' || *p > '9') return 0;
    x[i] = strtoull(p, &e, 10);
    if (e - p > 18) return 0;
    p = e;
  }
  while (demo_vectors_blank(*p)) p++;
  return *p == 0;
}

/* Tokens of a line that read as numbers after its first (the word), or -1
 * when one does not. */
static int64_t demo_vectors_values(const char *line, size_t len) {
  const char *p = line, *end = line + len, *tok;
  size_t tl;
  float f;
  int64_t n = -1;
  while (demo_vectors_token(&p, end, &tok, &tl)) {
    if (n >= 0 && demo_vectors_float(tok, tl, &f) < 0) return -1;
    n++;
  }
  return n;
}

static uint64_t demo_vectors_hash(const char *w, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)w[i]) * 0x100000001b3ULL;
  return h;
}

/* The slot of w: where it is, or the empty one where it would go. */
static uint32_t demo_vectors_slot(const demo_vectors *v, const char *w, size_t len) {
  uint32_t mask = v->nslots - 1, s = (uint32_t)demo_vectors_hash(w, len) & mask;
  for (;; s = (s + 1) & mask) {
    uint32_t i = v->slots[s];
    if (i == 0) return s;
    if (v->off[i] - v->off[i - 1] == len && memcmp(v->words + v->off[i - 1], w, len) == 0) return s;
  }
}

int demo_vectors_has(const demo_vectors *v, const char *w, size_t len) {
  return v->slots[demo_vectors_slot(v, w, len)] != 0;
}

void demo_vectors_free(demo_vectors *v) {
  free(v->rows);
  free(v->words);
  free(v->off);
  free(v->slots);
  memset(v, 0, sizeof *v);
}

/* The records of [p, end) (its lines that are not blank), from line lineno;
 * expect: the header's count, 0 for GloVe. */
static int demo_vectors_body(demo_vectors *v, const char *path, const char *p, const char *end, uint64_t lineno,
                             uint64_t expect, char *err, size_t errlen) {
  size_t wlen = 0;
  uint64_t records = 0; /* duplicates included */
  for (const char *next; p < end; p = next, lineno++) {
    size_t len = demo_vectors_line(p, end, &next);
    if (len == 0) continue;
    const char *q = p, *stop = p + len, *word, *tok;
    size_t wl, tl;
    uint32_t k = 0;
    int bad = 0;
    if (expect && ++records > expect)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:%llu: more words than the %llu the header announces", path,
                      (unsigned long long)lineno, (unsigned long long)expect);
    if (demo_vectors_blank(p[0]))
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:%llu: the line starts with a blank, so it has no word", path,
                      (unsigned long long)lineno);
    /* A line not blank and not starting with one has a word; checking it
     * shows the compiler that word and wl are set (gcc -O3). */
    if (!demo_vectors_token(&q, stop, &word, &wl))
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:%llu: the line has no word", path, (unsigned long long)lineno);
    if (wl > DEMO_VECTORS_MAX_WORD)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:%llu: a word of %zu bytes, over the %u-byte limit", path,
                      (unsigned long long)lineno, wl, DEMO_VECTORS_MAX_WORD);
    uint16_t *row = v->rows + (size_t)v->nwords * v->dim;
    float f;
    while (!bad && demo_vectors_token(&q, stop, &tok, &tl)) {
      bad = k == v->dim || demo_vectors_float(tok, tl, &f) < 0;
      if (!bad) row[k++] = bf16_from_f32(f);
    }
    if (bad || k != v->dim)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:%llu: '%.*s' needs %u numbers after the word", path,
                      (unsigned long long)lineno, (int)(wl < 60 ? wl : 60), word, v->dim);
    uint32_t s = demo_vectors_slot(v, word, wl);
    if (v->slots[s]) continue; /* a duplicate: the first row stays */
    memcpy(v->words + wlen, word, wl);
    wlen += wl;
    v->off[++v->nwords] = wlen;
    v->slots[s] = v->nwords;
  }
  if (expect && records < expect)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: the header announces %llu words but the file holds %llu", path,
                    (unsigned long long)expect, (unsigned long long)records);
  return v->nwords ? 0 : cli_fail(err, errlen, BFEED_EINVAL, "%s: no words", path);
}

static int demo_vectors_parse(demo_vectors *v, const char *path, const char *p, size_t size, char *err,
                              size_t errlen) {
  const char *end = p + size, *body;
  if (size >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3; /* a UTF-8 byte order mark */
  uint64_t x[2], expect = 0, lineno = 1, lines = 1;
  size_t first = demo_vectors_line(p, end, &body);
  if (demo_vectors_header(p, first, x)) {
    const char *q = body, *next;
    while (q < end && demo_vectors_line(q, end, &next) == 0) q = next;
    if (demo_vectors_values(q, demo_vectors_line(q, end, &next)) < 1)
      return cli_fail(err, errlen, BFEED_EINVAL,
                      "%s: word2vec binary, which make-demo does not read: give it a text table "
                      "(word2vec text, fastText .vec or GloVe)", path);
    expect = x[0], v->dim = (uint32_t)(x[1] <= DEMO_VECTORS_MAX_DIM ? x[1] : 0), p = body, lineno = 2;
    if (expect == 0 || x[1] == 0 || x[1] > DEMO_VECTORS_MAX_DIM)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:1: the header announces %llu words of %llu values", path,
                      (unsigned long long)x[0], (unsigned long long)x[1]);
  } else {
    const char *next;
    while (p < end && demo_vectors_line(p, end, &next) == 0) p = next, lineno++;
    int64_t d = p < end ? demo_vectors_values(p, demo_vectors_line(p, end, &next)) : 0;
    if (d < 1 || d > DEMO_VECTORS_MAX_DIM)
      return cli_fail(err, errlen, BFEED_EINVAL, "%s:%llu: not a word followed by 1..%u numbers", path,
                      (unsigned long long)lineno, DEMO_VECTORS_MAX_DIM);
    v->dim = (uint32_t)d;
  }
  for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) lines++;
  if (lines > (1u << 30) / v->dim)
    return cli_fail(err, errlen, BFEED_EINVAL, "%s: %llu lines of %u values is over make-demo's limit", path,
                    (unsigned long long)lines, v->dim);
  for (v->nslots = 16; v->nslots < 2 * lines; v->nslots *= 2) continue;
  v->rows = malloc((size_t)lines * v->dim * sizeof *v->rows);
  v->words = malloc((size_t)(end - p) + 1);
  v->off = calloc(lines + 1, sizeof *v->off);
  v->slots = calloc(v->nslots, sizeof *v->slots);
  if (!v->rows || !v->words || !v->off || !v->slots)
    return cli_fail(err, errlen, BFEED_ENOMEM, "%s: out of memory for %llu words", path, (unsigned long long)lines);
  return demo_vectors_body(v, path, p, end, lineno, expect, err, errlen);
}

int demo_vectors_load(const char *path, demo_vectors *v, char *err, size_t errlen) {
  memset(v, 0, sizeof *v);
  FILE *f = fopen(path, "rb");
  char *data = NULL;
  long size = -1;
  if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (data = malloc((size_t)size + 1)) != NULL && fread(data, 1, (size_t)size, f) != (size_t)size)
    size = -1;
  int e = errno;
  if (f) fclose(f);
  int rc;
  if (!f || size < 0 || !data)
    rc = cli_fail(err, errlen, data || size < 0 ? BFEED_EIO : BFEED_ENOMEM, "%s: cannot read: %s", path, strerror(e));
  else if (size == 0)
    rc = cli_fail(err, errlen, BFEED_EINVAL, "%s: empty file", path);
  else
    rc = demo_vectors_parse(v, path, data, (size_t)size, err, errlen);
  free(data);
  if (rc < 0) demo_vectors_free(v);
  return rc;
}

/* Mirrors daemon/text/tokenize.c's folding: the capitals of Latin-1
 * (not the multiplication sign), Greek and Cyrillic, as two-byte UTF-8. */
static int demo_vectors_capital(unsigned cp) {
  return (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) ||
         (cp >= 0x400 && cp <= 0x42F);
}

int demo_vectors_is_lower(const char *w, size_t len) {
  const unsigned char *s = (const unsigned char *)w;
  for (size_t i = 0; i < len; i++) {
    if (s[i] >= 'A' && s[i] <= 'Z') return 0;
    if (s[i] >= 0xC2 && s[i] <= 0xDF && i + 1 < len && (s[i + 1] & 0xC0) == 0x80) {
      if (demo_vectors_capital(((unsigned)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F))) return 0;
      i++;
    }
  }
  return 1;
}
