/*
 * fuzz_pack.c -- entry point: bytes as a pack shard (packfile_parse: the
 * index parser the pack kind runs at load), as a pack's metadata, and as
 * a raw image record (raw_decode, image_decode's fourth format). Each
 * accepted shard must describe records inside its file, in order, that
 * check against their CRCs without reading past them; an accepted raw
 * record must widen to RGBX within its bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "packfile.h"
#include "raw_decode.h"

size_t fuzz_pack_one(const uint8_t *data, size_t size);

size_t fuzz_pack_one(const uint8_t *data, size_t size) {
  char err[512];
  size_t found = 0;
  packfile_shard x;
  if (packfile_parse(data, size, &x, err, sizeof err) == 0) {
    uint64_t end = PACKFILE_HEADER;
    for (uint32_t k = 0; k < x.n; k++) {
      FUZZ_CHECK(x.e[k].off >= end && x.e[k].off + x.e[k].len <= x.index_off && x.index_off <= size);
      (void)packfile_check_record(&x, k, data + x.e[k].off, err, sizeof err);
      end = x.e[k].off + x.e[k].len;
    }
    found = x.n + 1;
    packfile_shard_free(&x);
  }
  packfile_meta m;
  if (packfile_meta_parse((const char *)data, size, &m, err, sizeof err) == 0) {
    FUZZ_CHECK(m.source && m.shard_samples && m.samples <= m.source_samples);
    packfile_meta_free(&m);
    found++;
  }
  int w, h;
  if (raw_decode_parse(data, size, &w, &h, err, sizeof err) == 0) {
    FUZZ_CHECK((size_t)w * h * 3 + RAW_DECODE_HEADER == size);
    int x0 = w / 3, x1 = w, y0 = h / 2, y1 = h;
    uint8_t *rect = malloc((size_t)(x1 - x0) * 4 * (size_t)(y1 - y0));
    FUZZ_CHECK(rect != NULL);
    raw_decode_rect(data, w, x0, x1, y0, y1, rect, (size_t)(x1 - x0) * 4);
    free(rect);
    found++;
  }
  return found;
}

#ifdef BFEED_LIBFUZZER
FUZZ_UTIL_TARGET(fuzz_pack_one)
#endif
