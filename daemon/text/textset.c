/* textset.c -- see textset.h */
#include "textset.h"

#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"

int textset_oov_parse(const char *s) {
  if (strcmp(s, "skip") == 0) return TEXTSET_OOV_SKIP;
  if (strcmp(s, "zero") == 0) return TEXTSET_OOV_ZERO;
  if (strcmp(s, "unk") == 0) return TEXTSET_OOV_UNK;
  return -1;
}

static int push_id(textset *t, uint32_t id) {
  if (t->off[t->n + 1] == t->idcap) {
    uint64_t cap = t->idcap ? 2 * t->idcap : 4096;
    uint32_t *v = realloc(t->ids, cap * sizeof *v);
    if (!v) return BFEED_ENOMEM;
    t->ids = v;
    t->idcap = cap;
  }
  t->ids[t->off[t->n + 1]++] = id;
  return 0;
}

/* The row of one token under the policy, or WORDVEC_NONE to skip it. */
static uint32_t lookup(textset *t, const wordvec *v, const textset_opts *o, const char *tok, size_t len) {
  uint32_t row = WORDVEC_NONE;
  if (len <= v->max_word_len) {
    if (o->tok.lowercase) {
      tokenize_lower(t->lower, tok, len);
      tok = t->lower;
    }
    row = wordvec_find(v, tok, len);
  }
  if (row != WORDVEC_NONE) return row;
  t->oov++;
  return o->oov == TEXTSET_OOV_ZERO ? TEXTSET_ZERO : o->oov == TEXTSET_OOV_UNK ? o->unk : WORDVEC_NONE;
}

int textset_add(textset *t, const wordvec *v, const textset_opts *o, const char *text, size_t len) {
  if (t->n + 1 >= t->ncap) {
    size_t cap = t->ncap ? 2 * t->ncap : 1024;
    uint64_t *off = realloc(t->off, cap * sizeof *off);
    if (!off) return BFEED_ENOMEM;
    if (!t->off) off[0] = 0;
    t->off = off;
    t->ncap = cap;
  }
  if (t->lower_cap < v->max_word_len) {
    char *l = realloc(t->lower, v->max_word_len);
    if (!l) return BFEED_ENOMEM;
    t->lower = l;
    t->lower_cap = v->max_word_len;
  }
  t->off[t->n + 1] = t->off[t->n];
  tokenize_iter it;
  tokenize_init(&it, text, len, &o->tok);
  const char *tok;
  size_t tl;
  while (tokenize_next(&it, &tok, &tl)) {
    t->tokens++;
    uint32_t row = lookup(t, v, o, tok, tl);
    if (row == WORDVEC_NONE) continue;
    if (t->off[t->n + 1] - t->off[t->n] >= TEXTSET_MAX_SAMPLE_TOKENS) return BFEED_ETOOBIG;
    if (push_id(t, row) < 0) return BFEED_ENOMEM;
  }
  uint32_t n = (uint32_t)(t->off[t->n + 1] - t->off[t->n]);
  if (n > t->longest) t->longest = n;
  t->n++;
  return 0;
}

void textset_finish(textset *t) {
  if (t->ids && t->off[t->n] > 0) {
    uint32_t *v = realloc(t->ids, t->off[t->n] * sizeof *v);
    if (v) t->ids = v;
  }
  free(t->lower);
  t->lower = NULL;
  t->lower_cap = 0;
}

void textset_free(textset *t) {
  free(t->off);
  free(t->ids);
  free(t->lower);
  memset(t, 0, sizeof *t);
}
