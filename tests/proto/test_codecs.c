/*
 * test_codecs.c -- the codec table (proto/codec.c and its compressors)
 * against PROTOCOL.md "Codecs", written out here:
 *
 *  - the six wire codecs, their names both ways, levels where the
 *    compressor takes one;
 *  - what a batch travels as, with and without an image tensor;
 *  - each compressor round-trips incompressible, compressible and tiny
 *    data, and refuses data that does not decompress to exactly the size
 *    the batch declares (truncated, corrupt, another size);
 *  - codec u8's expansion against the rule itself, value (c, y, x) =
 *    table[c][pixel (y, x) channel c], for both layouts, non-square images
 *    and odd widths (the SIMD paths' tails), with the other tensors' bytes
 *    after the pixels copied as they are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "tb.h"

static uint32_t test_codecs_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static void test_names(void **state) {
  static const struct {
    int id;
    const char *name;
    int u8, compressed;
  } want[] = {{0, "none", 0, 0}, {1, "zstd", 0, 1}, {2, "u8", 1, 0}, {3, "u8+zstd", 1, 1}, {4, "u8+lz4", 1, 1},
              {5, "lz4", 0, 1}};
  char err[256], text[32];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const codec_info *c = codec_get(want[i].id);
    assert_non_null(c);
    assert_string_equal(c->name, want[i].name);
    assert_int_equal(c->u8, want[i].u8);
    assert_int_equal(c->comp != NULL, want[i].compressed);
    int id = -1, level = 3;
    assert_int_equal(codec_parse(want[i].name, &id, &level, err, sizeof err), 0);
    assert_int_equal(id, want[i].id);
    codec_format(id, level, text, sizeof text);
    int id2 = -1, level2 = 0;
    assert_int_equal(codec_parse(text, &id2, &level2, err, sizeof err), 0);
    assert_true(id2 == id && (!c->comp || !c->comp->level_hi || level2 == level));
  }
  assert_null(codec_get(6));
  assert_null(codec_get(BFEED_CODEC_AUTO));
  int id, level;
  assert_int_equal(codec_parse("u8+zstd:19", &id, &level, err, sizeof err), 0);
  assert_true(id == BFEED_CODEC_U8_ZSTD && level == 19);
  assert_int_equal(codec_parse("auto", &id, &level, err, sizeof err), 0);
  assert_int_equal(id, BFEED_CODEC_AUTO);
  const char *bad[] = {"u8+lz4:1", "lz4:9", "zstd:0", "zstd:20", "zstd:", "zstd:+3", "u8+u8", "LZ4", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(codec_parse(bad[i], &id, &level, err, sizeof err), BFEED_EINVAL);
    assert_non_null(strstr(err, "codec"));
  }
  assert_int_equal(codec_check(BFEED_CODEC_ZSTD, 20, err, sizeof err), BFEED_EINVAL);
  assert_non_null(strstr(err, "zstd level 20"));
  assert_int_equal(codec_check(BFEED_CODEC_U8_LZ4, 20, err, sizeof err), 0); /* lz4 has no level */
  assert_int_equal(codec_check(7, 3, err, sizeof err), BFEED_EINVAL);
  assert_int_equal(codec_auto(1), BFEED_CODEC_U8);
  assert_int_equal(codec_auto(0), BFEED_CODEC_NONE);
}

/* PROTOCOL.md: u8's form needs an image tensor; a compressor asked for on
 * an image batch compresses its u8 form. */
static void test_for_batch(void **state) {
  static const int want[6][2] = {
      /* without an image, with one */
      {BFEED_CODEC_NONE, BFEED_CODEC_NONE},     {BFEED_CODEC_ZSTD, BFEED_CODEC_U8_ZSTD},
      {BFEED_CODEC_NONE, BFEED_CODEC_U8},       {BFEED_CODEC_ZSTD, BFEED_CODEC_U8_ZSTD},
      {BFEED_CODEC_LZ4, BFEED_CODEC_U8_LZ4},    {BFEED_CODEC_LZ4, BFEED_CODEC_U8_LZ4},
  };
  for (int id = 0; id < 6; id++)
    for (int img = 0; img < 2; img++)
      if (codec_for_batch(id, img) != want[id][img])
        fail_msg("codec %d, image %d: travels as %d, not %d", id, img, codec_for_batch(id, img), want[id][img]);
}

static void test_one_compressor(int id, uint64_t *seed) {
  const codec_comp *z = codec_get(id)->comp;
  const size_t sizes[] = {0, 1, 2, 63, 64, 65, 1000, 4096, 100003, 1u << 20};
  codec_state st = {0};
  char err[256];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int kind = 0; kind < 3; kind++) {
      size_t n = sizes[i], bound = codec_bound(id, n), out = 0;
      uint8_t *src = malloc(n + 1), *dst = malloc(bound + 1), *back = malloc(n + 16);
      for (size_t k = 0; k < n; k++) /* noise, runs, a bf16-like ramp */
        src[k] = kind == 0 ? (uint8_t)test_codecs_rand(seed) : kind == 1 ? (uint8_t)(k / 97) : (uint8_t)(k % 2 ? 0x3f : k / 2);
      assert_int_equal(codec_compress(&st, id, z->level_def, src, n, dst, bound, &out, err, sizeof err), 0);
      assert_true(out <= bound);
      msg_batch m = {.codec = (uint8_t)id, .data = dst, .data_size = out, .seq = 9};
      memset(back, 0xee, n + 16);
      assert_int_equal(codec_decompress(&m, back, n, err, sizeof err), 0);
      assert_memory_equal(back, src, n);
      assert_int_equal(back[n], 0xee); /* nothing written past n */
      /* Another size than declared, a truncated body, a corrupt one. */
      if (n > 0) {
        assert_int_equal(codec_decompress(&m, back, n - 1, err, sizeof err), BFEED_ECODEC);
        assert_non_null(strstr(err, "BATCH 9"));
      }
      assert_int_equal(codec_decompress(&m, back, n + 1, err, sizeof err), BFEED_ECODEC);
      if (out > 1) {
        m.data_size = out - 1;
        assert_int_equal(codec_decompress(&m, back, n, err, sizeof err), BFEED_ECODEC);
        m.data_size = out;
      }
      if (kind == 1 && n >= 1000) { /* runs: a flipped byte in the body breaks lz4's offsets or zstd's checks */
        for (size_t k = 0; k < out; k++) dst[k] ^= 0xa5;
        assert_int_equal(codec_decompress(&m, back, n, err, sizeof err) < 0 || memcmp(back, src, n) != 0, 1);
      }
      free(src), free(dst), free(back);
    }
  codec_state_free(&st);
}

static void test_compressors(void **state) {
  uint64_t seed = 3;
  test_one_compressor(BFEED_CODEC_ZSTD, &seed);
  test_one_compressor(BFEED_CODEC_LZ4, &seed);
  test_one_compressor(BFEED_CODEC_U8_LZ4, &seed);
  char err[256];
  size_t out;
  codec_state st = {0};
  assert_int_equal(codec_compress(&st, BFEED_CODEC_U8, 0, "x", 1, err, sizeof err, &out, err, sizeof err),
                   BFEED_EINTERNAL);
}

/* A batch of B images h x w (image first, at 0), then `extra` bytes of
 * another tensor, and its u8 data: head, pixels, the extra bytes. */
static void test_u8_case(int B, int h, int w, int nhwc, uint64_t *seed) {
  size_t px = (size_t)B * h * w * 3, extra = 64 + 8 * (size_t)B;
  msg_batch m = {.codec = BFEED_CODEC_U8, .ntensors = 2, .seq = 4};
  msg_tensor *t = &m.t[0];
  strcpy(t->name, "image");
  t->dtype = BFEED_DTYPE_BF16, t->ndim = 4;
  uint64_t shape[4] = {(uint64_t)B, nhwc ? (uint64_t)h : 3, nhwc ? (uint64_t)w : (uint64_t)h, nhwc ? 3 : (uint64_t)w};
  memcpy(t->shape, shape, sizeof shape);
  t->nbytes = 2 * px;
  m.raw_size = t->nbytes + extra;
  uint16_t lut[3][256];
  for (int c = 0; c < 3; c++)
    for (int v = 0; v < 256; v++) lut[c][v] = (uint16_t)test_codecs_rand(seed);
  size_t dn = MSG_U8_HEAD + px + extra;
  uint8_t *data = malloc(dn), *raw = aligned_alloc(64, (m.raw_size + 63) / 64 * 64), *want = malloc(m.raw_size);
  codec_u8_head(data, nhwc, (const uint16_t(*)[256])lut);
  for (size_t k = MSG_U8_HEAD; k < dn; k++) data[k] = (uint8_t)test_codecs_rand(seed);
  assert_int_equal(msg_batch_u8_size(&m), dn);
  /* The rule, one value at a time, little-endian. */
  const uint8_t *pix = data + MSG_U8_HEAD;
  for (int b = 0; b < B; b++)
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        for (int c = 0; c < 3; c++) {
          size_t at = nhwc ? (((size_t)b * h + y) * w + x) * 3 + c : (((size_t)b * 3 + c) * h + y) * w + x;
          uint16_t v = lut[c][pix[(((size_t)b * h + y) * w + x) * 3 + c]];
          want[2 * at] = (uint8_t)v, want[2 * at + 1] = (uint8_t)(v >> 8);
        }
  memcpy(want + 2 * px, pix + px, extra);
  char err[256];
  assert_int_equal(codec_u8_expand(&m, data, raw, err, sizeof err), 0);
  if (memcmp(raw, want, m.raw_size) != 0) fail_msg("u8 expansion differs: B %d, %dx%d, nhwc %d", B, h, w, nhwc);
  /* A head whose layout byte is not 0 or 1, or reserved bytes set. */
  data[0] = 2;
  assert_int_equal(codec_u8_expand(&m, data, raw, err, sizeof err), BFEED_EPROTO);
  data[0] = (uint8_t)nhwc, data[2] = 1;
  assert_int_equal(codec_u8_expand(&m, data, raw, err, sizeof err), BFEED_EPROTO);
  free(data), free(raw), free(want);
}

static void test_u8_expand(void **state) {
  uint64_t seed = 11;
  const int dims[][3] = {{1, 1, 1}, {2, 4, 4}, {3, 7, 5}, {1, 16, 17}, {2, 9, 33}, {4, 32, 32}, {1, 3, 100}, {2, 224, 224}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    for (int nhwc = 0; nhwc < 2; nhwc++) test_u8_case(dims[i][0], dims[i][1], dims[i][2], nhwc, &seed);
}

TB_MAIN(cmocka_unit_test(test_names), cmocka_unit_test(test_for_batch), cmocka_unit_test(test_compressors),
        cmocka_unit_test(test_u8_expand))
