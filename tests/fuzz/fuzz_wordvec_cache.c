/* fuzz_wordvec_cache.c -- the binary cache's checker (see fuzz_wordvec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wordvec.h"
#include "wordvec.h"

int fuzz_wordvec_cache(const uint8_t *data, size_t size) {
  /* The checker reads u64 offsets in place, as from a page-aligned mapping. */
  uint64_t *copy = malloc((size / 8 + 1) * 8);
  FUZZ_CHECK(copy != NULL);
  memcpy(copy, data, size);
  wordvec v;
  char err[256];
  int ok = wordvec_cache_check((const uint8_t *)copy, size, NULL, &v, err, sizeof err) == 0;
  if (!ok) {
    FUZZ_CHECK(err[0] != 0);
  } else {
    /* Whatever it accepts must be a table whose every word is found where it is. */
    for (uint32_t i = 0; i < v.nwords; i++) {
      size_t len = (size_t)(v.word_off[i + 1] - v.word_off[i]);
      FUZZ_CHECK(wordvec_find(&v, v.words + v.word_off[i], len) == i);
      volatile uint16_t sink = wordvec_row(&v, i)[v.dim - 1];
      (void)sink;
    }
  }
  free(copy);
  return ok;
}

FUZZ_WORDVEC_TARGET(fuzz_wordvec_cache)
