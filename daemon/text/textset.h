/*
 * textset.h -- a text dataset's samples as rows of an embedding table.
 * Called by dataset_text.c (building it at load) and batch_text.c (rows of a sample).
 *
 * Text is tokenized once, when the dataset loads (tokenize.h), and each
 * token looked up in the table; a sample is then a run of row numbers, so
 * building a batch is copying rows, and every sample's length is known up
 * front (for padding and for length bucketing). Tokens not in the table
 * follow the out-of-vocabulary policy: skipped, a zero vector, or the row
 * of an <unk> word.
 */
#ifndef BFEED_TEXTSET_H
#define BFEED_TEXTSET_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize.h"
#include "wordvec.h"

enum textset_oov { TEXTSET_OOV_SKIP = 0, TEXTSET_OOV_ZERO = 1, TEXTSET_OOV_UNK = 2 };
#define TEXTSET_ZERO (UINT32_MAX - 1) /* a token served as a zero vector (not a row: rows are < 2^30) */
#define TEXTSET_MAX_SAMPLE_TOKENS (1u << 30)

typedef struct textset_opts {
  tokenize_opts tok;
  int oov;      /* enum textset_oov */
  uint32_t unk; /* the table row served for unknown tokens under TEXTSET_OOV_UNK */
} textset_opts;

typedef struct textset {
  size_t n;         /* samples */
  uint64_t *off;    /* n + 1: sample i is ids[off[i] .. off[i+1]) */
  uint32_t *ids;    /* table rows, or TEXTSET_ZERO */
  uint32_t longest; /* tokens of the longest sample */
  uint64_t tokens, oov; /* tokens seen, and how many were not in the table */
  /* while loading */
  size_t ncap;
  uint64_t idcap;
  char *lower;
  size_t lower_cap;
} textset;

/* Tokenize text[0..len) into a new sample. BFEED_ENOMEM, or BFEED_ETOOBIG
 * for a sample of more than TEXTSET_MAX_SAMPLE_TOKENS tokens. */
int textset_add(textset *t, const wordvec *v, const textset_opts *o, const char *text, size_t len);
/* Give back the memory reserved for growth. */
void textset_finish(textset *t);
void textset_free(textset *t);

static inline uint32_t textset_len(const textset *t, size_t i) { return (uint32_t)(t->off[i + 1] - t->off[i]); }
static inline const uint32_t *textset_ids(const textset *t, size_t i) { return t->ids + t->off[i]; }

/* "skip", "zero", "unk" -> policy, or -1. */
int textset_oov_parse(const char *s);

#endif
