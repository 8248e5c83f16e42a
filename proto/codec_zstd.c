/*
 * codec_zstd.c -- the zstd compressor of codecs zstd (1) and u8+zstd (3).
 * Listed in codec.c; PROTOCOL.md "Codecs": the data is one zstd frame with
 * its content size.
 */
#include <stdio.h>
#include <zstd.h>

#include "codec.h"

static size_t codec_zstd_bound(size_t n) { return ZSTD_compressBound(n); }

static int codec_zstd_compress(void **state, int level, const void *src, size_t n, void *dst, size_t cap, size_t *out,
                               char *err, size_t errlen) {
  if (!*state && !(*state = ZSTD_createCCtx()))
    return snprintf(err, errlen, "out of memory for a zstd context"), BFEED_ENOMEM;
  size_t r = ZSTD_compressCCtx(*state, dst, cap, src, n, level);
  if (ZSTD_isError(r)) return snprintf(err, errlen, "zstd compression failed: %s", ZSTD_getErrorName(r)), BFEED_ECODEC;
  *out = r;
  return 0;
}

/* The frame must declare exactly n bytes and hold them: a peer's frame
 * that claims a size it does not have is refused before anything is
 * written past n. */
static int codec_zstd_decompress(const void *src, size_t srcn, void *dst, size_t n, char *err, size_t errlen) {
  unsigned long long declared = ZSTD_getFrameContentSize(src, srcn);
  if (declared != n)
    return snprintf(err, errlen, "zstd frame does not declare its %zu bytes", n), BFEED_ECODEC;
  size_t got = ZSTD_decompress(dst, n, src, srcn);
  if (ZSTD_isError(got) || got != n)
    return snprintf(err, errlen, "zstd data does not decompress to its declared %zu bytes%s%s", n,
                    ZSTD_isError(got) ? ": " : "", ZSTD_isError(got) ? ZSTD_getErrorName(got) : ""),
           BFEED_ECODEC;
  return 0;
}

static void codec_zstd_free(void *state) { ZSTD_freeCCtx(state); }

const codec_comp codec_comp_zstd = {
    .name = "zstd",
    .id = BFEED_CODEC_ZSTD,
    .id_u8 = BFEED_CODEC_U8_ZSTD,
    .level_lo = 1,
    .level_hi = 19,
    .level_def = 3,
    .bound = codec_zstd_bound,
    .compress = codec_zstd_compress,
    .decompress = codec_zstd_decompress,
    .state_free = codec_zstd_free,
};
