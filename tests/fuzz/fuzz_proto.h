/*
 * fuzz_proto.h -- the wire-format fuzz entry point, shared by the libFuzzer
 * target and the replay test that runs it under the normal build.
 */
#ifndef BFEED_FUZZ_PROTO_H
#define BFEED_FUZZ_PROTO_H

#include <stddef.h>
#include <stdint.h>

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
  FUZZ_ALL_ = (1 << 12) - 1
};

/* Run every parser over data; abort() when a property fails. Returns the
 * FUZZ_* bits of the parsers that accepted it. */
int fuzz_proto_one(const uint8_t *data, size_t size);

#endif
