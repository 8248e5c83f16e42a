/*
 * fuzz_proto.h -- the wire-format fuzz entry points, shared by the libFuzzer
 * targets (fuzz_proto, fuzz_open, fuzz_freader) and the replay test that
 * runs them under the normal build (fuzz_replay.c).
 */
#ifndef BFEED_FUZZ_PROTO_H
#define BFEED_FUZZ_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "frame.h"
#include "fuzz_util.h"
#include "msg.h"

/* Which parsers accepted an input: a replay run uses these to show that
 * its inputs reach both the accepting and the refusing paths. */
enum {
  FUZZ_HEADER = 1 << 0,
  FUZZ_HELLO = 1 << 1,
  FUZZ_HELLO_OK = 1 << 2,
  FUZZ_OPEN = 1 << 3,
  FUZZ_OPEN_OK = 1 << 4,
  FUZZ_U64 = 1 << 5,
  FUZZ_ERROR = 1 << 6,
  FUZZ_STATS = 1 << 7,
  FUZZ_BATCH = 1 << 8,
  FUZZ_TLV = 1 << 9,   /* the whole body walked as TLV items without error */
  FUZZ_ADDR = 1 << 10,
  FUZZ_FREADER = 1 << 11, /* the input, read as a stream, held a whole valid frame */
  FUZZ_REQUEST = 1 << 12,
  FUZZ_TIMING = 1 << 13,
  FUZZ_CLASSES_REQ = 1 << 14,
  FUZZ_CLASSES = 1 << 15,
  FUZZ_ALL_ = (1 << 16) - 1
};

/* Run every parser over data; abort() when a property fails. Returns the
 * FUZZ_* bits of the parsers that accepted it. */
int fuzz_proto_one(const uint8_t *data, size_t size);

/* The entry points of the focused targets, which fuzz_proto_one also runs
 * (each a libFuzzer binary of its own with BFEED_FUZZ):
 *   fuzz_proto.c    an OPEN payload alone (FUZZ_OPEN)
 *   fuzz_open.c     any payload walked as TLV items (FUZZ_TLV)
 *   fuzz_freader.c  the input as a byte stream of frames (FUZZ_FREADER) */
int fuzz_proto_open(const uint8_t *p, size_t n);
int fuzz_open_tlv(const uint8_t *p, size_t n);
int fuzz_freader_one(const uint8_t *data, size_t size);

/* What the targets share: abort() naming the property that failed, and a
 * message's round trip through a complete frame. */
#define CHECK(cond) FUZZ_CHECK(cond)

/* A refusal: one of the codes this parser documents, and a reason. */
static inline void check_refusal(int rc, const char *why, int code_a, int code_b) {
  CHECK(rc == code_a || rc == code_b);
  CHECK(why != NULL && why[0] != 0);
}

/* A fresh buffer with a frame begun in it, for as_frame to finish. */
static inline wbuf frame_start(void) {
  wbuf w;
  wbuf_init(&w);
  msg_begin(&w);
  return w;
}

typedef struct payload {
  const uint8_t *p;
  size_t n;
} payload;

/* The payload of the frame begun at offset 0 of w, finished and checked as
 * a receiver would. */
static inline payload as_frame(wbuf *w, int type) {
  CHECK(msg_finish(w, 0, type, 1) == 0);
  frame_header h;
  CHECK(frame_header_decode(w->data, FRAME_MAX_PAYLOAD, &h, NULL, 0) == 0);
  CHECK(h.type == type && h.length == w->len - FRAME_HEADER_SIZE);
  CHECK(frame_verify(&h, w->data + FRAME_HEADER_SIZE) == 0);
  return (payload){w->data + FRAME_HEADER_SIZE, h.length};
}

#endif
