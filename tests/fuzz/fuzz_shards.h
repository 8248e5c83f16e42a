/*
 * fuzz_shards.h -- the TFRecord and tar shard indexers on arbitrary bytes.
 * Called by fuzz_shards_replay.c (every build) and libFuzzer (clang builds).
 */
#ifndef BFEED_FUZZ_SHARDS_H
#define BFEED_FUZZ_SHARDS_H

#include <stddef.h>
#include <stdint.h>

/* Index data[0..size) as a TFRecord shard and as a tar shard, then read
 * every indexed sample back. Aborts when a guarantee breaks: an indexed
 * record must read back with both CRCs good and its image bytes inside
 * the file; an indexed tar member must lie inside the file. Returns the
 * samples indexed (both formats together). */
size_t fuzz_shards_one(const uint8_t *data, size_t size);

#endif
