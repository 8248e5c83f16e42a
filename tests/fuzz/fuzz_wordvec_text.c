/* fuzz_wordvec_text.c -- text sources, manifests, tokens (see fuzz_wordvec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wordvec.h"
#include "manifest.h"
#include "text_source.h"
#include "textset.h"
#include "tokenize.h"
#include "wordvec.h"

typedef struct span {
  const char *lo, *hi;
  size_t records;
} span;

static int inside(const span *s, const char *p, size_t n) { return p >= s->lo && p + n <= s->hi; }

static int on_text(void *ctx, const text_record *r, char *err, size_t errlen) {
  span *s = ctx;
  FUZZ_CHECK(r->label_len >= 1 && memchr(r->label, 0, r->label_len) == NULL);
  FUZZ_CHECK(inside(s, r->label, r->label_len) && inside(s, r->text, r->text_len));
  FUZZ_CHECK(r->line >= 1);
  s->records++;
  return 0;
}

static int on_manifest(void *ctx, const manifest_record *r, char *err, size_t errlen) {
  span *s = ctx;
  FUZZ_CHECK(r->image_len >= 1 && r->label_len >= 1);
  FUZZ_CHECK(inside(s, r->image, r->image_len) && inside(s, r->label, r->label_len) && inside(s, r->text, r->text_len));
  FUZZ_CHECK(memchr(r->text, '\n', r->text_len) == NULL);
  s->records++;
  return 0;
}

static void tokens(const char *p, size_t n, int lowercase, int punct) {
  tokenize_opts o = {lowercase, punct};
  tokenize_iter it;
  const char *t;
  size_t len, total = 0;
  char low[64];
  tokenize_init(&it, p, n, &o);
  while (tokenize_next(&it, &t, &len)) {
    FUZZ_CHECK(len >= 1 && t >= p && t + len <= p + n);
    for (size_t i = 0; i < len; i++) FUZZ_CHECK(t[i] != ' ' && t[i] != '\n' && t[i] != '\t');
    if (len <= sizeof low) {
      tokenize_lower(low, t, len);
      for (size_t i = 0; i < len; i++) FUZZ_CHECK((low[i] == ' ') == (t[i] == ' '));
    }
    total += len;
  }
  FUZZ_CHECK(total <= n);
}

int fuzz_wordvec_text(const uint8_t *data, size_t size) {
  const char *p = (const char *)data;
  span s = {p, p + size, 0};
  char err[512];
  int accepted = 0;
  static const text_format formats[] = {TEXT_AUTO, TEXT_FASTTEXT, TEXT_TSV};
  static const int picks[] = {0, -1, 2};
  for (int f = 0; f < 3; f++) {
    text_source_opts o = {formats[f], picks[f], NULL};
    err[0] = 0;
    if (text_source_parse(p, size, "fuzz.txt", &o, on_text, &s, err, sizeof err) == 0) accepted = 1;
    else FUZZ_CHECK(strncmp(err, "fuzz.txt", 8) == 0);
  }
  if (manifest_parse(p, size, "fuzz.tsv", on_manifest, &s, err, sizeof err) == 0) accepted = 1;
  else FUZZ_CHECK(strncmp(err, "fuzz.tsv:", 9) == 0);
  for (int k = 0; k < 4; k++) tokens(p, size, k & 1, k >> 1);

  /* Tokenized samples over a fixed table, under each policy. */
  static const char table[] = "the 1 0\nof 0 1\n<unk> 2 2\n\xc3\xa9t\xc3\xa9 3 3\n, 4 4\n";
  wordvec v;
  FUZZ_CHECK(wordvec_parse((const uint8_t *)table, sizeof table - 1, "t", 1 << 20, &v, err, sizeof err) == 0);
  for (int oov = 0; oov < 3; oov++) {
    textset t = {0};
    textset_opts o = {{oov != 1, oov != 0}, oov, 2};
    FUZZ_CHECK(textset_add(&t, &v, &o, p, size) == 0);
    textset_finish(&t);
    FUZZ_CHECK(t.n == 1 && t.oov <= t.tokens && textset_len(&t, 0) <= t.tokens);
    for (uint32_t i = 0; i < textset_len(&t, 0); i++)
      FUZZ_CHECK(textset_ids(&t, 0)[i] < v.nwords || (oov == TEXTSET_OOV_ZERO && textset_ids(&t, 0)[i] == TEXTSET_ZERO));
    if (oov != TEXTSET_OOV_SKIP) FUZZ_CHECK(textset_len(&t, 0) == t.tokens);
    textset_free(&t);
  }
  wordvec_free(&v);
  return accepted;
}

FUZZ_WORDVEC_TARGET(fuzz_wordvec_text)
