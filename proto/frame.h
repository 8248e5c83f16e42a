/*
 * frame.h -- the frame: the unit of the bfeed wire protocol.
 * Called by freader/fwriter and msg.c in proto, and by whoever checks a header.
 *
 * Every message, in both directions, is one frame: a fixed 24-byte header
 * followed by `length` bytes of payload. All integers are little-endian.
 *
 *   offset size field
 *   0      4    magic     "BFED" (0x44454642 read as little-endian u32)
 *   4      1    version   protocol version of this frame (1)
 *   5      1    type      enum frame_type
 *   6      2    flags     0; receivers ignore unknown bits
 *   8      4    stream    stream id chosen by the client, 0 = connection
 *   12     4    length    payload bytes, <= the receiver's limit
 *   16     8    checksum  XXH3-64 of the payload (seed 0)
 *
 * The header is validated (magic, version, type, length against the limit)
 * before anything is allocated for the payload; the checksum is verified
 * once the payload is in. See proto/PROTOCOL.md for the messages.
 */
#ifndef BFEED_FRAME_H
#define BFEED_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x44454642u
#define FRAME_HEADER_SIZE 24
#define FRAME_VERSION_MIN 1
#define FRAME_VERSION_MAX 1
/* Hard ceiling for any frame; a daemon or client may set a lower limit.
 * Large enough for a batch of 256 images of 512x512 in bf16 uncompressed. */
#define FRAME_MAX_PAYLOAD (1u << 30)
/* Limit for frames a client sends (control messages only). */
#define FRAME_MAX_CONTROL (1u << 16)

enum frame_type {
  FRAME_HELLO = 1,     /* client -> daemon: versions it speaks */
  FRAME_HELLO_OK = 2,  /* daemon -> client: version chosen */
  FRAME_OPEN = 3,      /* client -> daemon: open a stream */
  FRAME_OPEN_OK = 4,   /* daemon -> client: stream opened */
  FRAME_BATCH = 5,     /* daemon -> client: one batch */
  FRAME_ACK = 6,       /* client -> daemon: batches consumed */
  FRAME_CLOSE = 7,     /* client -> daemon: close a stream */
  FRAME_END = 8,       /* daemon -> client: stream finished */
  FRAME_ERROR = 9,     /* either way: error on a stream or connection */
  FRAME_STATS_REQ = 10, /* client -> daemon: counters, please */
  FRAME_STATS = 11,    /* daemon -> client: counters */
  FRAME_REQUEST = 12,  /* client -> daemon: batches an on-demand stream should serve */
  FRAME_SHM_RING = 13, /* daemon -> client: a stream's shared-memory ring (the memfd attached) */
  FRAME_BATCH_SHM = 14, /* daemon -> client: one batch whose tensors are in a ring slot */
  FRAME_TIMING = 15,   /* client -> daemon: what the stream's caller waited (only where OPEN_OK offers it) */
  FRAME_CLASSES_REQ = 16, /* client -> daemon: the dataset's class names from the n-th (only where OPEN_OK offers it) */
  FRAME_CLASSES = 17,  /* daemon -> client: a page of them */
  FRAME_TYPE_MAX_ = 17
};

typedef struct frame_header {
  uint8_t version;
  uint8_t type;
  uint16_t flags;
  uint32_t stream;
  uint32_t length;
  uint64_t checksum;
} frame_header;

/* Checksum of a payload (XXH3-64, seed 0). */
uint64_t frame_checksum(const void *payload, size_t len);
/* The same of a payload in two pieces, a then b (a shared batch's own head
 * before another stream's data). */
uint64_t frame_checksum2(const void *a, size_t alen, const void *b, size_t blen);

/* Fill h for a payload: version 1, flags 0, checksum computed. */
void frame_header_init(frame_header *h, int type, uint32_t stream, const void *payload,
                       uint32_t len);

void frame_header_encode(const frame_header *h, uint8_t out[FRAME_HEADER_SIZE]);

/* Parse and validate a header. Returns 0 or a negative BFEED_E* code:
 * EPROTO for a bad magic or unknown type, EVERSION for a version outside
 * [FRAME_VERSION_MIN, FRAME_VERSION_MAX], ETOOBIG for length > max_payload.
 * err (may be NULL) gets the reason. */
int frame_header_decode(const uint8_t in[FRAME_HEADER_SIZE], uint32_t max_payload,
                        frame_header *h, char *err, size_t errlen);
/* The same as a question, for the frame reader (freader.c), which keeps
 * its last reason: NULL for a header it accepts, else a static sentence
 * with the code in *code. */
const char *frame_header_problem(const uint8_t in[FRAME_HEADER_SIZE], uint32_t max_payload, frame_header *h,
                                 int *code);

/* 0 if the payload matches h->checksum, else BFEED_ECHECKSUM. */
int frame_verify(const frame_header *h, const void *payload);

/* Name of a frame type ("BATCH"), or "?" */
const char *frame_type_name(int type);

#endif
