/* fuzz_wordvec_npy.c -- .npy headers (see fuzz_wordvec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_wordvec.h"
#include "npy_source.h"

int fuzz_wordvec_npy(const uint8_t *data, size_t size) {
  npy_source_header h;
  char err[256];
  if (npy_source_parse_header(data, size, "fuzz.npy", &h, err, sizeof err) < 0) {
    FUZZ_CHECK(strncmp(err, "fuzz.npy: byte offset ", 22) == 0);
    return 0;
  }
  FUZZ_CHECK(h.ndim >= 1 && h.ndim <= NPY_SOURCE_MAX_DIMS);
  FUZZ_CHECK(h.data_offset <= size && h.data_bytes == size - h.data_offset);
  FUZZ_CHECK(memchr(h.descr, 0, sizeof h.descr) != NULL);
  uint64_t count = 1;
  for (int d = 0; d < h.ndim; d++) count *= h.shape[d];
  FUZZ_CHECK(count == 0 || h.data_bytes % count == 0);
  return 1;
}

FUZZ_WORDVEC_TARGET(fuzz_wordvec_npy)
