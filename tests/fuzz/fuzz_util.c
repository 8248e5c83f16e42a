/* fuzz_util.c -- see fuzz_util.h. */
#include "fuzz_util.h"

#include <string.h>

#include "splitmix.h"

size_t fuzz_util_mutate(fuzz_mutator *m, const uint8_t *seed, size_t n, size_t keep, uint8_t *buf) {
  memcpy(buf, seed, n);
  size_t len = n, cap = 2 * n + 64;
  if (keep > n) keep = n;
  int edits = 1 + (int)(splitmix64_next(&m->rng) % 4);
  for (int e = 0; e < edits && len > keep; e++) {
    size_t at = keep + (size_t)(splitmix64_next(&m->rng) % (len - keep));
    size_t span = 1 + (size_t)(splitmix64_next(&m->rng) % 16);
    switch (splitmix64_next(&m->rng) % 6) {
      case 0: buf[at] ^= (uint8_t)(1u << (splitmix64_next(&m->rng) % 8)); break;
      case 1:
        if (m->ninteresting) buf[at] = m->interesting[splitmix64_next(&m->rng) % m->ninteresting];
        break;
      case 2: /* delete */
        if (span > len - at) span = len - at;
        memmove(buf + at, buf + at + span, len - at - span);
        len -= span;
        break;
      case 3: /* insert a copy of another stretch */
        if (span > len) span = len;
        if (len + span <= cap) {
          size_t from = (size_t)(splitmix64_next(&m->rng) % (len - span + 1));
          uint8_t tmp[16];
          memcpy(tmp, buf + from, span);
          memmove(buf + at + span, buf + at, len - at);
          memcpy(buf + at, tmp, span);
          len += span;
        }
        break;
      case 4: len = at; break; /* truncate */
      default: buf[at] = (uint8_t)splitmix64_next(&m->rng); break;
    }
  }
  return len;
}
