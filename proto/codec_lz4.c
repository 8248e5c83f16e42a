/*
 * codec_lz4.c -- the LZ4 compressor of codecs u8+lz4 (4) and lz4 (5).
 * Listed in codec.c; PROTOCOL.md "Codecs": the data is one LZ4 block (the
 * block format, no frame around it: the batch's fields already give the
 * size it decompresses to, and the frame's XXH3 checks it).
 *
 * Why LZ4 beside zstd: it compresses at several GB/s a core and
 * decompresses faster still, so on a fast link (25-100 GbE) it saves wire
 * bytes without becoming the bottleneck zstd can be. It takes no level:
 * LZ4_compress_default, the fast mode.
 */
#include <limits.h>
#include <lz4.h>
#include <stdio.h>

#include "codec.h"

static size_t codec_lz4_bound(size_t n) {
  /* LZ4 blocks are limited to LZ4_MAX_INPUT_SIZE (about 2 GB), above any frame. */
  return n <= LZ4_MAX_INPUT_SIZE ? (size_t)LZ4_compressBound((int)n) : 0;
}

static int codec_lz4_compress(void **state, int level, const void *src, size_t n, void *dst, size_t cap, size_t *out,
                              char *err, size_t errlen) {
  (void)state, (void)level;
  if (n > LZ4_MAX_INPUT_SIZE || cap > INT_MAX)
    return snprintf(err, errlen, "lz4: %zu bytes are over its block limit", n), BFEED_ECODEC;
  int r = LZ4_compress_default(src, dst, (int)n, (int)cap);
  if (r <= 0 && n > 0) return snprintf(err, errlen, "lz4 compression failed (output room %zu)", cap), BFEED_ECODEC;
  *out = (size_t)(r > 0 ? r : 0);
  return 0;
}

static int codec_lz4_decompress(const void *src, size_t srcn, void *dst, size_t n, char *err, size_t errlen) {
  if (srcn > INT_MAX || n > INT_MAX)
    return snprintf(err, errlen, "lz4 block of %zu bytes for %zu is over its limit", srcn, n), BFEED_ECODEC;
  /* _safe never writes past n nor reads past srcn, whatever the input. */
  int got = LZ4_decompress_safe(src, dst, (int)srcn, (int)n);
  if (got < 0 || (size_t)got != n)
    return snprintf(err, errlen, "lz4 block does not decompress to its %zu bytes", n), BFEED_ECODEC;
  return 0;
}

static void codec_lz4_free(void *state) { (void)state; }

const codec_comp codec_comp_lz4 = {
    .name = "lz4",
    .id = BFEED_CODEC_LZ4,
    .id_u8 = BFEED_CODEC_U8_LZ4,
    .bound = codec_lz4_bound,
    .compress = codec_lz4_compress,
    .decompress = codec_lz4_decompress,
    .state_free = codec_lz4_free,
};
