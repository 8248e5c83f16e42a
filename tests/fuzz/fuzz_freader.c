/*
 * fuzz_freader.c -- fuzz target for the incremental frame reader (freader),
 * the decoder both the daemon and libbfeed read sockets with (see
 * fuzz_proto.h). The input is a byte stream: the reader must see the same
 * frames and the same first error whether it comes whole, byte by byte or
 * in chunks whose sizes the input chooses, with payloads taken in one part
 * or two; each frame it completes passes proto's one-shot header check and
 * checksum (frame_header_decode, frame_verify); an error has a documented
 * code and a reason.
 */
#include <string.h>

#include "bfeed_types.h"
#include "freader.h"
#include "fuzz_proto.h"

/* One pass of the whole input through a reader: chunk sizes come from the
 * input itself (mode 2) or are 1 (mode 1) or everything (mode 0); with
 * split, payloads go in two parts. The frames it completed and its error. */
typedef struct freader_run {
  int frames, rc;
  uint64_t sum; /* of the completed frames' checksums and lengths */
} freader_run;

static freader_run fuzz_freader_pass(const uint8_t *data, size_t size, int mode, int split) {
  freader_run out = {0, 0, 0};
  freader r;
  CHECK(freader_init(&r, FRAME_MAX_CONTROL) == 0);
  uint8_t *payload = malloc(FRAME_MAX_CONTROL);
  CHECK(payload != NULL);
  size_t at = 0, k = 0;
  while (at < size && out.rc == 0) {
    size_t len = mode == 0 ? size - at : mode == 1 ? 1 : (size_t)(1 + data[k++ % size] % 64), used;
    if (len > size - at) len = size - at;
    int ev = freader_feed(&r, data + at, len, &used);
    CHECK(used <= len);
    at += used;
    if (ev < 0) {
      CHECK(ev == BFEED_EPROTO || ev == BFEED_EVERSION || ev == BFEED_ETOOBIG || ev == BFEED_ECHECKSUM);
      CHECK(r.why != NULL && r.why[0] != 0);
      out.rc = ev;
    } else if (ev == FREADER_HEADER) {
      CHECK(r.h.length >= 1 && r.h.length <= FRAME_MAX_CONTROL);
      size_t first = split && r.h.length > 1 ? r.h.length / 2 : r.h.length;
      CHECK(freader_payload(&r, payload, first) == 0);
    } else if (ev == FREADER_SEGMENT) {
      size_t done = r.h.length - freader_payload_left(&r);
      CHECK(freader_payload(&r, payload + done, freader_payload_left(&r)) == 0);
    } else if (ev == FREADER_FRAME) {
      /* The oracle: proto's one-shot header check and checksum. */
      uint8_t hdr[FRAME_HEADER_SIZE];
      frame_header h;
      frame_header_encode(&r.h, hdr);
      CHECK(frame_header_decode(hdr, FRAME_MAX_CONTROL, &h, NULL, 0) == 0);
      CHECK(frame_verify(&r.h, payload) == 0);
      out.frames++;
      out.sum = out.sum * 31 + r.h.checksum + r.h.length;
    } else {
      CHECK(ev == FREADER_MORE && used == len); /* MORE: the whole chunk was taken */
    }
  }
  free(payload);
  freader_free(&r);
  return out;
}

int fuzz_freader_one(const uint8_t *data, size_t size) {
  freader_run whole = fuzz_freader_pass(data, size, 0, 0);
  for (int mode = 0; mode < 3; mode++) {
    freader_run other = fuzz_freader_pass(data, size, mode, mode != 0);
    CHECK(other.frames == whole.frames && other.rc == whole.rc && other.sum == whole.sum);
  }
  return whole.frames ? FUZZ_FREADER : 0;
}

#ifdef FUZZ_MAIN_FREADER
FUZZ_UTIL_TARGET(fuzz_freader_one)
#endif
