/*
 * demo_vectors.h -- reads a word-vector table in a text format for
 * `bfeed make-demo --text` (make_demo_text.c), without the daemon's loader.
 *
 * Formats, told apart as the daemon tells them: word2vec text and fastText
 * .vec (a first line "V D", then V lines "word v1 ... vD"), GloVe (no such
 * line; D is the first line's value count). Blank lines are skipped, a
 * word's first row wins over later duplicates, values are rounded to bf16
 * as the daemon stores them, so make-demo picks the words the daemon would
 * see. word2vec binary is refused with a message saying so.
 */
#ifndef BFEED_DEMO_VECTORS_H
#define BFEED_DEMO_VECTORS_H

#include <stddef.h>
#include <stdint.h>

typedef struct demo_vectors {
  uint32_t nwords, dim;
  uint16_t *rows;   /* nwords x dim bf16 bit patterns, row-major */
  char *words;      /* the words back to back ... */
  uint64_t *off;    /* ... word i is words[off[i], off[i+1]) */
  uint32_t *slots;  /* hash set over the words: index + 1, 0 = empty */
  uint32_t nslots;  /* a power of two */
} demo_vectors;

/* 0, or BFEED_EINVAL / EIO / ENOMEM with "PATH:LINE: what is wrong" in err. */
int demo_vectors_load(const char *path, demo_vectors *v, char *err, size_t errlen);
/* Whether the table holds the word w[0..len). */
int demo_vectors_has(const demo_vectors *v, const char *w, size_t len);
void demo_vectors_free(demo_vectors *v);
/* Whether w is its own lower case under the daemon's `lowercase` setting
 * (ASCII, and the two-byte Latin-1, Greek and Cyrillic capitals that
 * daemon/text/tokenize.c folds): such a word is found as it is either way. */
int demo_vectors_is_lower(const char *w, size_t len);

#endif
