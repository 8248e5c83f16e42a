/*
 * tokenize.h -- how text becomes words, for the text datasets.
 * Called by textset.c (at load) and by make-demo --text (client/cli).
 *
 * The rule, documented in PROTOCOL.md and reimplemented by the tests'
 * Python oracle:
 *
 *  - tokens are separated by ASCII whitespace (space, \t, \n, \v, \f, \r);
 *    other bytes, UTF-8 included, belong to tokens;
 *  - with split_punct, each ASCII punctuation character
 *    !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ is a token of its own ("don't." is
 *    don ' t .), as GloVe's and word2vec's vocabularies list them;
 *  - with lowercase, A-Z and the capitals of Latin-1 (U+00C0..U+00DE but
 *    U+00D7), Greek (U+0391..U+03A9) and Cyrillic (U+0400..U+042F) become
 *    their small letters; every other byte is kept. Such a mapping keeps a
 *    token's byte length, so it is done in place of a copy.
 */
#ifndef BFEED_TOKENIZE_H
#define BFEED_TOKENIZE_H

#include <stddef.h>

typedef struct tokenize_opts {
  int lowercase;
  int split_punct;
} tokenize_opts;

typedef struct tokenize_iter {
  const char *p, *end;
  tokenize_opts o;
} tokenize_iter;

void tokenize_init(tokenize_iter *it, const char *text, size_t len, const tokenize_opts *o);
/* The next token as [*tok, *tok + *len) of the text (not lowercased):
 * 1, or 0 at the end. */
int tokenize_next(tokenize_iter *it, const char **tok, size_t *len);
/* dst[0..len) = src[0..len) lowercased by the rule above. */
void tokenize_lower(char *dst, const char *src, size_t len);

#endif
