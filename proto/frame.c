/* frame.c -- frame header encoding, validation and checksums. */
#include "frame.h"

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: no allocation per frame */
#include <xxhash.h>

#include "bfeed_types.h"
#include "names.h"
#include "wire.h"

uint64_t frame_checksum(const void *payload, size_t len) {
  return XXH3_64bits(payload, len);
}

uint64_t frame_checksum2(const void *a, size_t alen, const void *b, size_t blen) {
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, a, alen);
  XXH3_64bits_update(&st, b, blen);
  return XXH3_64bits_digest(&st);
}

void frame_header_init(frame_header *h, int type, uint32_t stream, const void *payload,
                       uint32_t len) {
  h->version = FRAME_VERSION_MAX;
  h->type = (uint8_t)type;
  h->flags = 0;
  h->stream = stream;
  h->length = len;
  h->checksum = frame_checksum(payload, len);
}

void frame_header_encode(const frame_header *h, uint8_t out[FRAME_HEADER_SIZE]) {
  wire_put32(out + 0, FRAME_MAGIC);
  out[4] = h->version;
  out[5] = h->type;
  wire_put16(out + 6, h->flags);
  wire_put32(out + 8, h->stream);
  wire_put32(out + 12, h->length);
  wire_put64(out + 16, h->checksum);
}

const char *frame_header_problem(const uint8_t in[FRAME_HEADER_SIZE], uint32_t max_payload, frame_header *h,
                                 int *code) {
  *code = BFEED_EPROTO;
  if (wire_get32(in) != FRAME_MAGIC) return "bad magic (not a bfeed peer?)";
  h->version = in[4];
  h->type = in[5];
  h->flags = wire_get16(in + 6);
  h->stream = wire_get32(in + 8);
  h->length = wire_get32(in + 12);
  h->checksum = wire_get64(in + 16);
  if (h->version < FRAME_VERSION_MIN || h->version > FRAME_VERSION_MAX)
    return *code = BFEED_EVERSION, "unsupported protocol version";
  if (h->type < 1 || h->type > FRAME_TYPE_MAX_) return "unknown frame type";
  if (h->length > max_payload || h->length > FRAME_MAX_PAYLOAD)
    return *code = BFEED_ETOOBIG, "frame length exceeds the limit";
  return *code = 0, NULL;
}

int frame_header_decode(const uint8_t in[FRAME_HEADER_SIZE], uint32_t max_payload,
                        frame_header *h, char *err, size_t errlen) {
  int code;
  const char *why = frame_header_problem(in, max_payload, h, &code);
  return why ? names_fail(err, errlen, code, why) : 0;
}

int frame_verify(const frame_header *h, const void *payload) {
  return frame_checksum(payload, h->length) == h->checksum ? 0 : BFEED_ECHECKSUM;
}

const char *frame_type_name(int type) {
  static const char *const names[] = {"?",     "HELLO", "HELLO_OK", "OPEN",  "OPEN_OK",  "BATCH",
                                      "ACK",   "CLOSE", "END",      "ERROR", "STATS_REQ", "STATS",
                                      "REQUEST", "SHM_RING", "BATCH_SHM", "TIMING", "CLASSES_REQ", "CLASSES"};
  return type >= 1 && type <= FRAME_TYPE_MAX_ ? names[type] : names[0];
}
