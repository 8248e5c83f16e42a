/*
 * test_msg_open.c -- OPEN: option defaults, layout, round trips, unknown and
 * malformed items, and the option range checks (msg_opts_check).
 *
 * The oracle is PROTOCOL.md's option table, written with the tests' own
 * byte builder (tb.h); every truncation of a valid payload is decoded from
 * a buffer of exactly that size, so a sanitizer build catches overreads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "frame.h"
#include "msg.h"
#include "names.h"
#include "tb.h"
#include "tlv.h"

/* ------------------------------------------------------------------ */
/* OPEN                                                               */

/* Spec: tag, value length, default. */
enum { TAG_COUNT = 19 };
static const uint8_t open_len[TAG_COUNT + 1] = {
    [2] = 4, [3] = 4, [4] = 1,  [5] = 1,  [6] = 1,  [7] = 12, [8] = 12, [9] = 8,  [10] = 8,
    [11] = 8, [12] = 4, [13] = 4, [14] = 1, [15] = 4, [16] = 4, [17] = 1, [18] = 1, [19] = 8,
};

/* Every option away from its default, floats with awkward bit patterns and
 * u64 values that a 32-bit truncation would change. */
static void nondefault_opts(bfeed_stream_opts *o) {
  msg_opts_defaults(o);
  o->batch = 1000;
  o->size = 384;
  o->mode = BFEED_MODE_EVAL;
  o->layout = BFEED_LAYOUT_NHWC;
  o->normalize = BFEED_NORM_CUSTOM;
  o->mean[0] = 0.5f;
  o->mean[1] = -1.25f;
  o->mean[2] = 3.0e-7f;
  o->std[0] = 0.125f;
  o->std[1] = 2.5f;
  o->std[2] = 1.0e30f;
  o->seed = UINT64_MAX - 1;
  /* With epochs 2^64 - 3 below, the last epoch is 2^64 - 2: a range
   * msg_opts_check takes (past 2^64 - 1 it refuses one). */
  o->epoch = 2;
  o->batch_index = 0x8000000000000001ull;
  o->shard_index = 6;
  o->shard_count = 7;
  o->codec = BFEED_CODEC_ZSTD;
  o->codec_level = 17;
  o->window = 64;
  o->shuffle = BFEED_SHUFFLE_OFF;
  o->keep_partial = 1;
  o->epochs = UINT64_MAX - 2;
}

static void assert_opts_equal(const bfeed_stream_opts *a, const bfeed_stream_opts *b) {
  assert_int_equal(a->batch, b->batch);
  assert_int_equal(a->size, b->size);
  assert_int_equal(a->mode, b->mode);
  assert_int_equal(a->layout, b->layout);
  assert_int_equal(a->normalize, b->normalize);
  for (int c = 0; c < 3; c++) {
    assert_int_equal(tb_f32_bits(a->mean[c]), tb_f32_bits(b->mean[c]));
    assert_int_equal(tb_f32_bits(a->std[c]), tb_f32_bits(b->std[c]));
  }
  assert_int_equal(a->seed, b->seed);
  assert_int_equal(a->epoch, b->epoch);
  assert_int_equal(a->batch_index, b->batch_index);
  assert_int_equal(a->shard_index, b->shard_index);
  assert_int_equal(a->shard_count, b->shard_count);
  assert_int_equal(a->codec, b->codec);
  assert_int_equal(a->codec_level, b->codec_level);
  assert_int_equal(a->window, b->window);
  assert_int_equal(a->shuffle, b->shuffle);
  assert_int_equal(a->keep_partial, b->keep_partial);
  assert_int_equal(a->epochs, b->epochs);
  assert_int_equal(a->select, b->select);
  assert_int_equal(a->select_mod, b->select_mod);
  assert_int_equal(a->select_rem, b->select_rem);
}

/* The default column of PROTOCOL.md's option table. */
static void test_opts_defaults(void **state) {
  bfeed_stream_opts o;
  memset(&o, 0x5a, sizeof o);
  msg_opts_defaults(&o);
  assert_int_equal(o.batch, 64);
  assert_int_equal(o.size, 224);
  assert_int_equal(o.mode, BFEED_MODE_TRAIN);
  assert_int_equal(o.layout, BFEED_LAYOUT_NCHW);
  assert_int_equal(o.normalize, BFEED_NORM_IMAGENET);
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  assert_memory_equal(o.mean, mean, sizeof mean);
  assert_memory_equal(o.std, std, sizeof std);
  assert_int_equal(o.seed, 0);
  assert_int_equal(o.epoch, 0);
  assert_int_equal(o.batch_index, 0);
  assert_int_equal(o.shard_index, 0);
  assert_int_equal(o.shard_count, 1);
  assert_int_equal(o.codec, BFEED_CODEC_NONE);
  assert_int_equal(o.codec_level, 3);
  assert_int_equal(o.window, 4);
  assert_int_equal(o.shuffle, BFEED_SHUFFLE_AUTO);
  assert_int_equal(o.keep_partial, 0);
  assert_int_equal(o.epochs, 0);
}

static uint8_t *encode_open(const char *dataset, const bfeed_stream_opts *o, size_t *n) {
  msg_open m;
  memset(&m, 0, sizeof m);
  snprintf(m.dataset, sizeof m.dataset, "%s", dataset);
  m.opts = *o;
  wbuf w;
  size_t at = tb_begin(&w);
  msg_open_encode(&w, &m);
  return tb_take_payload(&w, at, FRAME_OPEN, 3, n);
}

/* The item with this tag in a TLV list, walked by the test's own parser;
 * exactly one must exist. */
static void expect_item(const uint8_t *p, size_t n, uint16_t tag, const tb *want_value) {
  int found = 0;
  for (size_t off = 0; off < n;) {
    assert_true(n - off >= 6);
    uint16_t t = (uint16_t)(p[off] | p[off + 1] << 8);
    uint32_t len = tb_get_le32(p + off + 2);
    assert_true(len <= n - off - 6);
    if (t == tag) {
      found++;
      assert_int_equal(len, want_value->n);
      assert_memory_equal(p + off + 6, want_value->b, len);
    }
    off += 6 + len;
  }
  if (found != 1) fail_msg("tag 0x%04x found %d times", tag, found);
}

static void test_open_layout(void **state) {
  bfeed_stream_opts o;
  nondefault_opts(&o);
  size_t n;
  uint8_t *p = encode_open("imagenet-100", &o, &n);

  /* Expected value bytes per tag, in PROTOCOL.md's types. */
  tb v[TAG_COUNT + 1];
  for (int i = 0; i <= TAG_COUNT; i++) v[i].n = 0;
  tb_mem(&v[1], "imagenet-100", 12);
  tb_u32(&v[2], 1000);
  tb_u32(&v[3], 384);
  tb_u8(&v[4], 1);
  tb_u8(&v[5], 1);
  tb_u8(&v[6], 2);
  for (int c = 0; c < 3; c++) tb_u32(&v[7], tb_f32_bits(o.mean[c]));
  for (int c = 0; c < 3; c++) tb_u32(&v[8], tb_f32_bits(o.std[c]));
  tb_u64(&v[9], UINT64_MAX - 1);
  tb_u64(&v[10], 2);
  tb_u64(&v[11], 0x8000000000000001ull);
  tb_u32(&v[12], 6);
  tb_u32(&v[13], 7);
  tb_u8(&v[14], 1);
  tb_u32(&v[15], 17);
  tb_u32(&v[16], 64);
  tb_u8(&v[17], 2);
  tb_u8(&v[18], 1);
  tb_u64(&v[19], UINT64_MAX - 2);
  size_t total = 0;
  for (int tag = 1; tag <= TAG_COUNT; tag++) {
    if (tag > 1) assert_int_equal(v[tag].n, open_len[tag]);
    expect_item(p, n, (uint16_t)(0x8000 | tag), &v[tag]);
    total += 6 + v[tag].n;
  }
  assert_int_equal(n, total); /* nothing else in the list */
  free(p);

  /* codec_level is an i32 on the wire. */
  o.codec_level = -7;
  p = encode_open("d", &o, &n);
  tb neg = {.n = 0};
  tb_u32(&neg, 0xfffffff9u);
  expect_item(p, n, 0x800f, &neg);
  msg_open m;
  char why[256] = "";
  assert_int_equal(msg_open_decode(p, n, &m, why, sizeof why), 0);
  assert_int_equal(m.opts.codec_level, -7);
  free(p);
}

static void test_open_round_trip(void **state) {
  bfeed_stream_opts o, def;
  nondefault_opts(&o);
  msg_opts_defaults(&def);
  /* Guard the test itself: every field really differs from its default. */
  assert_true(o.batch != def.batch && o.size != def.size && o.mode != def.mode);
  assert_true(o.layout != def.layout && o.normalize != def.normalize);
  for (int c = 0; c < 3; c++) assert_true(o.mean[c] != def.mean[c] && o.std[c] != def.std[c]);
  assert_true(o.seed != def.seed && o.epoch != def.epoch && o.batch_index != def.batch_index);
  assert_true(o.shard_index != def.shard_index && o.shard_count != def.shard_count);
  assert_true(o.codec != def.codec && o.codec_level != def.codec_level);
  assert_true(o.window != def.window && o.shuffle != def.shuffle);
  assert_true(o.keep_partial != def.keep_partial && o.epochs != def.epochs);

  char *name = tb_repeat('d', MSG_NAME_MAX - 1);
  size_t n;
  uint8_t *p = encode_open(name, &o, &n);
  msg_open m;
  memset(&m, 0xa5, sizeof m);
  char why[256] = "";
  assert_int_equal(msg_open_decode(p, n, &m, why, sizeof why), 0);
  assert_string_equal(m.dataset, name);
  assert_opts_equal(&m.opts, &o);
  char reason[256];
  assert_int_equal(msg_opts_check(&m.opts, reason, sizeof reason), 0);
  /* Epochs do not wrap: the last epoch of a range is 2^64 - 1 at most. */
  m.opts.epoch = UINT64_MAX, m.opts.epochs = 1;
  assert_int_equal(msg_opts_check(&m.opts, reason, sizeof reason), 0);
  m.opts.epochs = 2;
  assert_int_equal(msg_opts_check(&m.opts, reason, sizeof reason), BFEED_EINVAL);
  assert_non_null(strstr(reason, "epoch 18446744073709551615 with epochs 2"));
  free(p);
  free(name);
}

/* Options not sent keep their defaults. */
static void test_open_dataset_only(void **state) {
  tb t = {.n = 0};
  tb_item_mem(&t, 0x8001, "imgs", 4);
  msg_open m;
  char why[256] = "";
  assert_int_equal(msg_open_decode(t.b, t.n, &m, why, sizeof why), 0);
  assert_string_equal(m.dataset, "imgs");
  bfeed_stream_opts def;
  msg_opts_defaults(&def);
  assert_opts_equal(&m.opts, &def);
}

/* A critical tag the daemon does not know refuses the stream (EINVAL);
 * unknown tags without the bit are hints and are skipped. */
static void test_open_unknown_tags(void **state) {
  const uint16_t critical[] = {0x8000 | 120, 0x8000 | 200, 0x8000, 0xffff}; /* no option has these tags */
  for (size_t i = 0; i < sizeof critical / sizeof critical[0]; i++) {
    tb t = {.n = 0};
    tb_item_mem(&t, 0x8001, "imgs", 4);
    tb_item(&t, critical[i], 1, 4);
    tb_expect_decode(tb_dec_open, &t, BFEED_EINVAL);
  }
  tb t = {.n = 0};
  tb_item_mem(&t, 0x0063, "a hint", 6);
  tb_item_mem(&t, 0x8001, "imgs", 4);
  tb_item_mem(&t, 0x7fff, NULL, 0);
  tb_item(&t, 0x0000, UINT64_MAX, 8);
  tb_item(&t, 0x8002, 32, 4);
  tb_item(&t, 0x1234, 5, 3);
  msg_open m;
  char why[256] = "";
  assert_int_equal(msg_open_decode(t.b, t.n, &m, why, sizeof why), 0);
  assert_string_equal(m.dataset, "imgs");
  assert_int_equal(m.opts.batch, 32);
  assert_int_equal(m.opts.size, 224);
}

/* An item whose length runs past the payload, at any size. */
static void test_open_item_overruns(void **state) {
  const uint32_t lens[] = {4, 5, 1000, 0x80000000u, UINT32_MAX};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    tb t = {.n = 0};
    tb_item_mem(&t, 0x8001, "imgs", 4);
    tb_u16(&t, 0x8002);
    tb_u32(&t, lens[i]);
    tb_mem(&t, "\1\2\3", 3);
    tb_expect_decode(tb_dec_open, &t, BFEED_EPROTO);
  }
  tb t = {.n = 0};
  tb_item_mem(&t, 0x8001, "imgs", 4);
  tb_u16(&t, 0x0063); /* an item header cut after its tag */
  tb_expect_decode(tb_dec_open, &t, BFEED_EPROTO);
}

/* Each known option with a value empty, a byte short, a byte long or twice
 * as long; the same bytes at the right length pass, so it is the length
 * that was refused. */
static void test_open_wrong_lengths(void **state) {
  uint8_t junk[32];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i + 1);
  for (int tag = 2; tag <= TAG_COUNT; tag++) {
    const uint32_t len = open_len[tag];
    const uint32_t bad[] = {0, len - 1, len + 1, 2 * len};
    tb t = {.n = 0};
    for (size_t i = 0; i < 4; i++) {
      t.n = 0;
      tb_item_mem(&t, 0x8001, "imgs", 4);
      tb_item_mem(&t, (uint16_t)(0x8000 | tag), junk, bad[i]);
      tb_expect_decode(tb_dec_open, &t, BFEED_EPROTO);
    }
    t.n = 0;
    tb_item_mem(&t, 0x8001, "imgs", 4);
    tb_item_mem(&t, (uint16_t)(0x8000 | tag), junk, len);
    tb_expect_decode(tb_dec_open, &t, 0);
  }
}

static void test_open_dataset_rules(void **state) {
  tb t = {.n = 0};
  tb_expect_decode(tb_dec_open, &t, BFEED_EINVAL); /* empty payload */
  tb_item(&t, 0x8002, 8, 4);
  tb_expect_decode(tb_dec_open, &t, BFEED_EINVAL); /* no dataset */
  t.n = 0;
  tb_item_mem(&t, 0x8001, "", 0);
  tb_expect_decode(tb_dec_open, &t, BFEED_EINVAL);
  t.n = 0;
  tb_item_mem(&t, 0x8001, "ab\0c", 4);
  tb_expect_decode(tb_dec_open, &t, BFEED_EPROTO);
  char *name = tb_repeat('x', MSG_NAME_MAX);
  t.n = 0;
  tb_item_mem(&t, 0x8001, name, MSG_NAME_MAX - 1);
  tb_expect_decode(tb_dec_open, &t, 0);
  t.n = 0;
  tb_item_mem(&t, 0x8001, name, MSG_NAME_MAX);
  tb_expect_decode(tb_dec_open, &t, BFEED_EPROTO);
  free(name);
}

/* Cut the full OPEN anywhere: at an item boundary after the dataset it is a
 * shorter, valid OPEN; before the dataset item ends there is no dataset;
 * inside any other item it is truncated. */
static void test_open_truncated(void **state) {
  bfeed_stream_opts o;
  nondefault_opts(&o);
  size_t n;
  uint8_t *p = encode_open("imagenet-100", &o, &n);
  uint8_t boundary[4096] = {0};
  size_t dataset_end = 0;
  assert_true(n < sizeof boundary);
  for (size_t off = 0; off < n;) {
    boundary[off] = 1;
    uint32_t len = tb_get_le32(p + off + 2);
    if ((p[off] | p[off + 1] << 8) == 0x8001) dataset_end = off + 6 + len;
    off += 6 + len;
  }
  assert_true(dataset_end > 0);
  for (size_t k = 0; k < n; k++) {
    int want = !boundary[k] ? BFEED_EPROTO : k >= dataset_end ? 0 : BFEED_EINVAL;
    int rc = tb_decode_copy(tb_dec_open, p, k);
    if (rc != want) fail_msg("OPEN cut at %zu of %zu: rc %d, want %d", k, n, rc, want);
  }
  free(p);
}

/* ------------------------------------------------------------------ */
/* Option ranges                                                      */

static void expect_opts(const bfeed_stream_opts *o, int ok, const char *word, int line) {
  char why[256] = "";
  int rc = msg_opts_check(o, why, sizeof why);
  if (ok && rc != 0) fail_msg("line %d: refused: %s", line, why);
  if (!ok) {
    if (rc != BFEED_EINVAL) fail_msg("line %d: accepted (rc %d)", line, rc);
    if (!strstr(why, word)) fail_msg("line %d: reason \"%s\" does not mention %s", line, why, word);
  }
}
/* Start from the defaults, change what the arguments say, check. */
#define OPTS(ok, word, ...)               \
  do {                                    \
    bfeed_stream_opts o;                  \
    msg_opts_defaults(&o);           \
    __VA_ARGS__;                          \
    expect_opts(&o, ok, word, __LINE__);  \
  } while (0)

static void test_opts_ranges(void **state) {
  OPTS(1, NULL, (void)0);
  OPTS(0, "batch", o.batch = 0);
  OPTS(0, "batch", o.batch = 65537);
  OPTS(0, "batch", o.batch = UINT32_MAX);
  OPTS(1, NULL, o.batch = 1);
  OPTS(1, NULL, o.batch = 65536, o.size = 8);
  OPTS(0, "size", o.size = 7);
  OPTS(0, "size", o.size = 4097);
  OPTS(0, "size", o.size = 0);
  OPTS(1, NULL, o.size = 8);
  OPTS(1, NULL, o.size = 4096, o.batch = 1);
  OPTS(0, "mode", o.mode = (bfeed_mode)2);
  OPTS(0, "layout", o.layout = (bfeed_layout)2);
  OPTS(0, "normalization", o.normalize = (bfeed_norm)3);
  OPTS(1, NULL, o.normalize = BFEED_NORM_NONE);
  OPTS(0, "std", o.std[1] = 0.0f);
  OPTS(0, "std", o.std[2] = -0.0f);
  OPTS(0, "std", o.std[0] = NAN);
  OPTS(0, "std", o.std[0] = INFINITY);
  OPTS(1, NULL, o.std[0] = -0.5f, o.normalize = BFEED_NORM_CUSTOM);
  OPTS(0, "mean", o.mean[2] = NAN);
  OPTS(0, "mean", o.mean[0] = -INFINITY);
  OPTS(0, "shard", o.shard_index = 3, o.shard_count = 3);
  OPTS(0, "shard", o.shard_index = 1);
  OPTS(0, "shard", o.shard_count = 0);
  OPTS(1, NULL, o.shard_index = 2, o.shard_count = 3);
  OPTS(0, "codec", o.codec = (bfeed_codec)6);
  OPTS(1, NULL, o.codec = BFEED_CODEC_U8_LZ4, o.codec_level = 0); /* lz4 takes no level */
  OPTS(1, NULL, o.codec = BFEED_CODEC_LZ4, o.codec_level = 99);
  OPTS(0, "zstd", o.codec = BFEED_CODEC_U8_ZSTD, o.codec_level = 20);
  OPTS(1, NULL, o.codec = BFEED_CODEC_U8, o.codec_level = 0); /* no zstd: no level */
  OPTS(1, NULL, o.codec = BFEED_CODEC_U8_ZSTD, o.codec_level = 19);
  OPTS(0, "zstd", o.codec = BFEED_CODEC_ZSTD, o.codec_level = 0);
  OPTS(0, "zstd", o.codec = BFEED_CODEC_ZSTD, o.codec_level = 20);
  OPTS(0, "zstd", o.codec = BFEED_CODEC_ZSTD, o.codec_level = -1);
  OPTS(1, NULL, o.codec = BFEED_CODEC_ZSTD, o.codec_level = 1);
  OPTS(1, NULL, o.codec = BFEED_CODEC_ZSTD, o.codec_level = 19);
  OPTS(1, NULL, o.codec = BFEED_CODEC_NONE, o.codec_level = 0); /* unused without zstd */
  OPTS(0, "window", o.window = 0);
  OPTS(0, "window", o.window = 65);
  OPTS(1, NULL, o.window = 1);
  OPTS(1, NULL, o.window = 64);
  OPTS(0, "shuffle", o.shuffle = (bfeed_shuffle)3);
  OPTS(1, NULL, o.shuffle = BFEED_SHUFFLE_OFF);
  OPTS(0, "select", o.select = (bfeed_select)4);
  OPTS(1, NULL, o.select = BFEED_SELECT_STRIDE, o.select_mod = 4);
  OPTS(0, "select_rem", o.select = BFEED_SELECT_STRIDE, o.select_mod = 4, o.select_rem = 1);
  OPTS(0, "select_mod", o.select = BFEED_SELECT_RESIDUE, o.select_mod = 0);
  OPTS(0, "select_rem", o.select = BFEED_SELECT_RESIDUE, o.select_mod = 3, o.select_rem = 3);
  OPTS(1, NULL, o.select = BFEED_SELECT_RESIDUE, o.select_mod = 3, o.select_rem = 2);
  OPTS(1, NULL, o.select = BFEED_SELECT_RESIDUE, o.select_mod = UINT64_MAX, o.select_rem = UINT64_MAX - 1);
  OPTS(1, NULL, o.select = BFEED_SELECT_ON_DEMAND);
}

/* The subset options (tags 20..22, critical) go out only when they differ
 * from the default, so that streams of all batches still open on daemons
 * that predate them; then they survive the round trip. */
static void test_open_select(void **state) {
  bfeed_stream_opts o;
  msg_opts_defaults(&o);
  size_t n, plain;
  free(encode_open("d", &o, &plain));
  o.select = BFEED_SELECT_RESIDUE, o.select_mod = 5, o.select_rem = 4;
  uint8_t *p = encode_open("d", &o, &n);
  assert_int_equal(n, plain + (6 + 1) + (6 + 8) + (6 + 8));
  tb sel = {.n = 0}, mod = {.n = 0}, rem = {.n = 0};
  tb_u8(&sel, 1);
  tb_u64(&mod, 5);
  tb_u64(&rem, 4);
  expect_item(p, n, 0x8000 | 20, &sel);
  expect_item(p, n, 0x8000 | 21, &mod);
  expect_item(p, n, 0x8000 | 22, &rem);
  msg_open m;
  char why[256] = "";
  assert_int_equal(msg_open_decode(p, n, &m, why, sizeof why), 0);
  assert_opts_equal(&m.opts, &o);
  free(p);
  msg_opts_defaults(&o);
  o.select = BFEED_SELECT_ON_DEMAND; /* mod and rem keep their defaults: not sent */
  p = encode_open("d", &o, &n);
  assert_int_equal(n, plain + 6 + 1);
  sel.n = 0;
  tb_u8(&sel, 2);
  expect_item(p, n, 0x8000 | 20, &sel);
  free(p);
  (void)state;
}

/* Whether a batch fits one frame depends on the dataset's kind (an image
 * is 3*S*S values, a pooled text sample D): the daemon checks it when it
 * knows the dataset (batch_spec_check; tests/service checks the refusal),
 * so the option check leaves it alone. */
static void test_opts_frame_limit(void **state) {
  OPTS(1, NULL, o.size = 4096, o.batch = 65536);
  OPTS(1, NULL, o.size = 224, o.batch = 65536);
}

/* The reason is cut to the caller's buffer, never overflowing it. */
static void test_opts_reason_truncated(void **state) {
  bfeed_stream_opts o;
  msg_opts_defaults(&o);
  o.window = 99;
  char why[9];
  memset(why, 'z', sizeof why);
  assert_int_equal(msg_opts_check(&o, why, 8), BFEED_EINVAL);
  assert_int_equal(strlen(why), 7);
  assert_int_equal(why[8], 'z');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_opts_defaults),
      cmocka_unit_test(test_open_layout),
      cmocka_unit_test(test_open_round_trip),
      cmocka_unit_test(test_open_dataset_only),
      cmocka_unit_test(test_open_unknown_tags),
      cmocka_unit_test(test_open_item_overruns),
      cmocka_unit_test(test_open_wrong_lengths),
      cmocka_unit_test(test_open_dataset_rules),
      cmocka_unit_test(test_open_truncated),
      cmocka_unit_test(test_opts_ranges),
      cmocka_unit_test(test_open_select),
      cmocka_unit_test(test_opts_frame_limit),
      cmocka_unit_test(test_opts_reason_truncated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
