/* fuzz_wordvec.c -- embeddings files: wordvec_parse (see fuzz_wordvec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wordvec.h"
#include "wordvec.h"

int fuzz_wordvec_table(const uint8_t *data, size_t size) {
  wordvec w;
  char err[512];
  /* A small limit, so absurd headers are refused rather than allocated. */
  if (wordvec_parse(data, size, "fuzz.vec", 1u << 24, &w, err, sizeof err) < 0) {
    FUZZ_CHECK(strncmp(err, "fuzz.vec", 8) == 0 && strlen(err) > 9);
    return 0;
  }
  FUZZ_CHECK(w.nwords >= 1 && w.dim >= 1 && w.dim <= WORDVEC_MAX_DIM);
  FUZZ_CHECK((uint64_t)w.nwords * w.dim * 2 <= (1u << 24));
  FUZZ_CHECK(w.nslots > w.nwords && (w.nslots & (w.nslots - 1)) == 0);
  uint32_t longest = 0;
  for (uint32_t i = 0; i < w.nwords; i++) {
    size_t len = (size_t)(w.word_off[i + 1] - w.word_off[i]);
    FUZZ_CHECK(len >= 1 && len <= WORDVEC_MAX_WORD);
    FUZZ_CHECK(wordvec_find(&w, w.words + w.word_off[i], len) == i);
    if (len > longest) longest = (uint32_t)len;
    volatile uint16_t sink = wordvec_row(&w, i)[w.dim - 1]; /* rows in bounds (ASan) */
    (void)sink;
  }
  FUZZ_CHECK(longest == w.max_word_len);
  wordvec_free(&w);
  return 1;
}

FUZZ_WORDVEC_TARGET(fuzz_wordvec_table)
