/*
 * test_msg.c -- message codecs, TLV buffers and address parsing.
 *
 * The oracle for byte layouts is PROTOCOL.md: the test writes the bytes it
 * expects with its own little-endian builder (tb_*, not proto's wbuf or
 * wire.h) and compares them with what the encoders produce, then feeds
 * hand-built malformed payloads to the decoders. Every decoder also sees
 * every truncation of a valid payload, each copied into a buffer of exactly
 * that size so that a sanitizer build catches a read past the end.
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

#include "addr.h"
#include "bfeed_types.h"
#include "names.h"
#include "frame.h"
#include "msg.h"
#include "tlv.h"

/* ------------------------------------------------------------------ */
/* A byte builder for expected payloads                               */

typedef struct tb {
  uint8_t b[16384];
  size_t n;
} tb;

static void tb_le(tb *t, uint64_t v, int bytes) {
  assert_true(t->n + (size_t)bytes <= sizeof t->b);
  for (int i = 0; i < bytes; i++) t->b[t->n++] = (uint8_t)(v >> (8 * i));
}
static void tb_u8(tb *t, uint64_t v) { tb_le(t, v, 1); }
static void tb_u16(tb *t, uint64_t v) { tb_le(t, v, 2); }
static void tb_u32(tb *t, uint64_t v) { tb_le(t, v, 4); }
static void tb_u64(tb *t, uint64_t v) { tb_le(t, v, 8); }
static void tb_mem(tb *t, const void *p, size_t n) {
  assert_true(t->n + n <= sizeof t->b);
  if (n) memcpy(t->b + t->n, p, n);
  t->n += n;
}
static void tb_str16(tb *t, const char *s, size_t n) {
  tb_u16(t, n);
  tb_mem(t, s, n);
}
static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
/* A TLV item whose value is the little-endian bytes of v. */
static void tb_item(tb *t, uint16_t tag, uint64_t v, int bytes) {
  tb_u16(t, tag);
  tb_u32(t, (uint32_t)bytes);
  tb_le(t, v, bytes);
}
static void tb_item_mem(tb *t, uint16_t tag, const void *p, uint32_t len) {
  tb_u16(t, tag);
  tb_u32(t, len);
  tb_mem(t, p, len);
}
static void tb_item_f32s(tb *t, uint16_t tag, const float v[3]) {
  tb_u16(t, tag);
  tb_u32(t, 12);
  for (int i = 0; i < 3; i++) tb_u32(t, f32_bits(v[i]));
}

static char *repeat(char c, size_t n) {
  char *s = malloc(n + 1);
  assert_non_null(s);
  memset(s, c, n);
  s[n] = 0;
  return s;
}

/* ------------------------------------------------------------------ */
/* Frames and decoders                                                */

/* A heap copy of exactly n bytes: reading one byte beyond is a sanitizer
 * error, not a silent read of the next field. */
static uint8_t *exact_copy(const void *p, size_t n) {
  uint8_t *c = malloc(n ? n : 1);
  assert_non_null(c);
  if (n) memcpy(c, p, n);
  return c;
}

/* Finish the frame begun at `at` in w and check it as a receiver would:
 * header valid, of this type and stream, length and checksum matching.
 * Returns a copy of the payload; w is freed. */
static uint8_t *take_payload(wbuf *w, size_t at, int type, uint32_t stream, size_t *n) {
  assert_int_equal(msg_finish(w, at, type, stream), 0);
  frame_header h;
  assert_int_equal(frame_header_decode(w->data + at, FRAME_MAX_PAYLOAD, &h, NULL), 0);
  assert_int_equal(h.type, type);
  assert_int_equal(h.stream, stream);
  assert_int_equal(h.length, w->len - at - FRAME_HEADER_SIZE);
  assert_int_equal(frame_verify(&h, w->data + at + FRAME_HEADER_SIZE), 0);
  *n = h.length;
  uint8_t *p = exact_copy(w->data + at + FRAME_HEADER_SIZE, h.length);
  wbuf_free(w);
  return p;
}

typedef int (*decode_fn)(const void *p, size_t n, const char **why);

static int dec_hello(const void *p, size_t n, const char **why) {
  msg_hello m;
  return msg_hello_decode(p, n, &m, why);
}
static int dec_hello_ok(const void *p, size_t n, const char **why) {
  msg_hello_ok m;
  return msg_hello_ok_decode(p, n, &m, why);
}
static int dec_open(const void *p, size_t n, const char **why) {
  msg_open m;
  return msg_open_decode(p, n, &m, why);
}
static int dec_open_ok(const void *p, size_t n, const char **why) {
  msg_open_ok m;
  return msg_open_ok_decode(p, n, &m, why);
}
static int dec_u64(const void *p, size_t n, const char **why) {
  uint64_t v;
  return msg_u64_decode(p, n, &v, why);
}
static int dec_error(const void *p, size_t n, const char **why) {
  msg_error m;
  return msg_error_decode(p, n, &m, why);
}
static int dec_stats(const void *p, size_t n, const char **why) {
  msg_counter c[MSG_MAX_COUNTERS];
  size_t count;
  return msg_stats_decode(p, n, c, MSG_MAX_COUNTERS, &count, why);
}
static int dec_batch(const void *p, size_t n, const char **why) {
  msg_batch m;
  return msg_batch_decode(p, n, UINT64_MAX, &m, why);
}

/* Decode exactly n bytes of p; rc, and a reason whenever rc < 0. */
static int decode_copy(decode_fn fn, const void *p, size_t n) {
  uint8_t *c = exact_copy(p, n);
  const char *why = NULL;
  int rc = fn(c, n, &why);
  free(c);
  if (rc < 0) {
    assert_non_null(why);
    assert_true(strlen(why) > 0);
  }
  return rc;
}

static void expect_decode(decode_fn fn, const tb *t, int want) {
  assert_int_equal(decode_copy(fn, t->b, t->n), want);
}

/* Every strict prefix of a message whose length is fully determined by its
 * contents is malformed. */
static void expect_prefixes_fail(decode_fn fn, const uint8_t *p, size_t n) {
  assert_int_equal(decode_copy(fn, p, n), 0);
  for (size_t k = 0; k < n; k++) {
    int rc = decode_copy(fn, p, k);
    if (rc >= 0) fail_msg("a %zu-byte prefix of a %zu-byte message decoded", k, n);
  }
}

/* ------------------------------------------------------------------ */
/* TLV and buffers                                                    */

static void test_tlv_layout(void **state) {
  const float f[3] = {1.0f, -2.5f, 0.0f};
  wbuf w;
  wbuf_init(&w);
  tlv_put_u8(&w, 0x8004, 0xab);
  tlv_put_u32(&w, 0x8002, 0x01020304);
  tlv_put_u64(&w, 0x0009, 0x1122334455667788ull);
  tlv_put_f32s(&w, 0x8007, f, 3);
  tlv_put_str(&w, 0x8001, "imgs");
  tlv_put(&w, 0x7fff, NULL, 0);
  assert_false(w.failed);

  tb t = {.n = 0};
  tb_item(&t, 0x8004, 0xab, 1);
  tb_item(&t, 0x8002, 0x01020304, 4);
  tb_item(&t, 0x0009, 0x1122334455667788ull, 8);
  tb_item_f32s(&t, 0x8007, f);
  tb_item_mem(&t, 0x8001, "imgs", 4);
  tb_item_mem(&t, 0x7fff, NULL, 0);
  assert_int_equal(w.len, t.n);
  assert_memory_equal(w.data, t.b, t.n);
  /* Spot-check the oracle itself against the spec's byte order. */
  static const uint8_t item2[] = {0x02, 0x80, 4, 0, 0, 0, 0x04, 0x03, 0x02, 0x01};
  assert_memory_equal(t.b + 7, item2, sizeof item2);
  assert_int_equal(f32_bits(1.0f), 0x3f800000u);

  rbuf r;
  tlv_item it;
  uint8_t u8;
  uint32_t u32;
  uint64_t u64;
  float got[3];
  char s[8];
  rbuf_init(&r, w.data, w.len);
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(it.tag, 0x8004);
  assert_int_equal(tlv_u8(&it, &u8), 0);
  assert_int_equal(u8, 0xab);
  assert_int_equal(tlv_u32(&it, &u32), BFEED_EPROTO);
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(tlv_u32(&it, &u32), 0);
  assert_int_equal(u32, 0x01020304);
  assert_int_equal(tlv_u64(&it, &u64), BFEED_EPROTO);
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(tlv_u64(&it, &u64), 0);
  assert_int_equal(u64, 0x1122334455667788ull);
  assert_int_equal(tlv_u8(&it, &u8), BFEED_EPROTO);
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(tlv_f32s(&it, got, 3), 0);
  assert_memory_equal(got, f, sizeof f);
  assert_int_equal(tlv_f32s(&it, got, 2), BFEED_EPROTO);
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(it.tag, 0x8001);
  assert_int_equal(tlv_str(&it, s, 5), 0);
  assert_string_equal(s, "imgs");
  assert_int_equal(tlv_str(&it, s, 4), BFEED_EPROTO); /* no room for the NUL */
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(it.tag, 0x7fff);
  assert_int_equal(it.len, 0);
  assert_int_equal(tlv_str(&it, s, sizeof s), 0);
  assert_string_equal(s, "");
  assert_int_equal(tlv_next(&r, &it), 0);
  assert_int_equal(tlv_next(&r, &it), 0);
  wbuf_free(&w);
}

/* An item header cut short, or a length past the end, is EPROTO at every
 * cut; the walk never hands out a value it cannot back. */
static void test_tlv_truncated(void **state) {
  tb t = {.n = 0};
  tb_item(&t, 0x8002, 7, 4);
  tb_item_mem(&t, 0x8001, "abc", 3);
  const size_t first = 10;
  for (size_t k = 0; k <= t.n; k++) {
    uint8_t *c = exact_copy(t.b, k);
    rbuf r;
    tlv_item it;
    int rc, items = 0;
    rbuf_init(&r, c, k);
    while ((rc = tlv_next(&r, &it)) == 1) items++;
    if (k == 0 || k == first || k == t.n) {
      assert_int_equal(rc, 0);
      assert_int_equal(items, k == 0 ? 0 : k == first ? 1 : 2);
    } else {
      assert_int_equal(rc, BFEED_EPROTO);
      assert_int_equal(items, k > first ? 1 : 0);
    }
    free(c);
  }
  /* A length of 2^32-1 must not wrap any bound. */
  tb big = {.n = 0};
  tb_u16(&big, 0x8001);
  tb_u32(&big, UINT32_MAX);
  tb_mem(&big, "xy", 2);
  rbuf r;
  tlv_item it;
  rbuf_init(&r, big.b, big.n);
  assert_int_equal(tlv_next(&r, &it), BFEED_EPROTO);
}

/* tlv_str refuses a NUL inside the value. */
static void test_tlv_str_nul(void **state) {
  tb t = {.n = 0};
  tb_item_mem(&t, 0x8001, "ab\0c", 4);
  rbuf r;
  tlv_item it;
  char s[16];
  rbuf_init(&r, t.b, t.n);
  assert_int_equal(tlv_next(&r, &it), 1);
  assert_int_equal(tlv_str(&it, s, sizeof s), BFEED_EPROTO);
}

/* Reads past the end latch: later reads fail too, even ones that would fit. */
static void test_rbuf_latches(void **state) {
  const uint8_t b[3] = {0x34, 0x12, 0x56};
  rbuf r;
  rbuf_init(&r, b, sizeof b);
  assert_int_equal(rbuf_u16(&r), 0x1234);
  assert_int_equal(rbuf_left(&r), 1);
  assert_int_equal(rbuf_u32(&r), 0);
  assert_true(r.failed);
  assert_int_equal(rbuf_u8(&r), 0);
  assert_null(rbuf_bytes(&r, 0));
  assert_int_equal(rbuf_u64(&r), 0);

  rbuf_init(&r, b, sizeof b);
  assert_non_null(rbuf_bytes(&r, 3));
  assert_non_null(rbuf_bytes(&r, 0));
  assert_false(r.failed);
  assert_null(rbuf_bytes(&r, SIZE_MAX));
  assert_true(r.failed);
}

/* wbuf: grows across its first allocation, hands the bytes over, and a
 * latched failure makes msg_finish refuse the frame. */
static void test_wbuf(void **state) {
  wbuf w;
  wbuf_init(&w);
  for (uint32_t i = 0; i < 1000; i++) wbuf_u32(&w, i);
  wbuf_u16(&w, 0xbeef);
  wbuf_u64(&w, 0x0102030405060708ull);
  assert_false(w.failed);
  assert_int_equal(w.len, 4010);
  assert_int_equal(w.data[4 * 999], 999 & 0xff);
  assert_int_equal(w.data[4 * 999 + 1], 999 >> 8);
  assert_int_equal(w.data[4000], 0xef);
  assert_int_equal(w.data[4002], 0x08);
  assert_int_equal(w.data[4009], 0x01);
  size_t len;
  uint8_t *d = wbuf_take(&w, &len);
  assert_int_equal(len, 4010);
  assert_null(w.data);
  assert_int_equal(w.len, 0);
  free(d);

  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_u64_encode(&w, 1);
  assert_null(wbuf_reserve(&w, SIZE_MAX - 8));
  assert_true(w.failed);
  assert_int_equal(msg_finish(&w, at, FRAME_ACK, 1), BFEED_ENOMEM);
  wbuf_free(&w);
}

/* ------------------------------------------------------------------ */
/* HELLO, HELLO_OK                                                    */

static void test_hello_layout(void **state) {
  msg_hello m = {.min_version = 1, .max_version = 7};
  strcpy(m.agent, "libbfeed/0.1.0");
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w), n;
  msg_hello_encode(&w, &m);
  uint8_t *p = take_payload(&w, at, FRAME_HELLO, 0, &n);

  tb t = {.n = 0};
  tb_u32(&t, 1);
  tb_u32(&t, 7);
  tb_str16(&t, "libbfeed/0.1.0", 14);
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);
  static const uint8_t head[] = {1, 0, 0, 0, 7, 0, 0, 0, 14, 0, 'l'};
  assert_memory_equal(p, head, sizeof head);
  expect_prefixes_fail(dec_hello, p, n);
  free(p);
}

/* The longest agent that fits survives; a longer one is cut, not refused. */
static void test_hello_round_trip(void **state) {
  const size_t lens[] = {0, 1, MSG_NAME_MAX - 2, MSG_NAME_MAX - 1, MSG_NAME_MAX, 200};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    size_t len = lens[i];
    msg_hello in = {.min_version = 0xfffffffe, .max_version = UINT32_MAX}, out;
    char *agent = repeat('a', len);
    /* From MSG_NAME_MAX bytes on the field is full and unterminated. */
    memcpy(in.agent, agent, len < MSG_NAME_MAX ? len + 1 : MSG_NAME_MAX);
    wbuf w;
    wbuf_init(&w);
    size_t at = msg_begin(&w), n;
    msg_hello_encode(&w, &in);
    uint8_t *p = take_payload(&w, at, FRAME_HELLO, 0, &n);
    memset(&out, 0xa5, sizeof out);
    const char *why = NULL;
    assert_int_equal(msg_hello_decode(p, n, &out, &why), 0);
    assert_int_equal(out.min_version, 0xfffffffe);
    assert_int_equal(out.max_version, UINT32_MAX);
    size_t want = len < MSG_NAME_MAX - 1 ? len : MSG_NAME_MAX - 1;
    assert_int_equal(strlen(out.agent), want);
    assert_memory_equal(out.agent, agent, want);
    free(p);
    free(agent);
  }
}

static void test_hello_malformed(void **state) {
  tb t = {.n = 0};
  /* "Later versions may append fields; receivers ignore trailing bytes." */
  tb_u32(&t, 1);
  tb_u32(&t, 1);
  tb_str16(&t, "x", 1);
  tb_mem(&t, "future", 6);
  expect_decode(dec_hello, &t, 0);

  char *long_name = repeat('n', MSG_NAME_MAX);
  t.n = 8;
  tb_str16(&t, long_name, MSG_NAME_MAX - 1);
  expect_decode(dec_hello, &t, 0);
  t.n = 8;
  tb_str16(&t, long_name, MSG_NAME_MAX);
  expect_decode(dec_hello, &t, BFEED_EPROTO);
  t.n = 8;
  tb_str16(&t, "ab\0c", 4);
  expect_decode(dec_hello, &t, BFEED_EPROTO);
  t.n = 8;
  tb_u16(&t, 0xffff);
  tb_mem(&t, "short", 5);
  expect_decode(dec_hello, &t, BFEED_EPROTO);
  free(long_name);
}

static void test_hello_ok(void **state) {
  msg_hello_ok in = {.version = 1, .max_frame = FRAME_MAX_PAYLOAD}, out;
  strcpy(in.server, "bfeedd/0.1.0 on host-7");
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w), n;
  msg_hello_ok_encode(&w, &in);
  uint8_t *p = take_payload(&w, at, FRAME_HELLO_OK, 0, &n);

  tb t = {.n = 0};
  tb_u32(&t, 1);
  tb_u32(&t, 1u << 30);
  tb_str16(&t, in.server, strlen(in.server));
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);

  memset(&out, 0xa5, sizeof out);
  const char *why;
  assert_int_equal(msg_hello_ok_decode(p, n, &out, &why), 0);
  assert_int_equal(out.version, 1);
  assert_int_equal(out.max_frame, 1u << 30);
  assert_string_equal(out.server, in.server);
  expect_prefixes_fail(dec_hello_ok, p, n);
  free(p);

  t.n = 8;
  tb_str16(&t, "a\0", 2);
  expect_decode(dec_hello_ok, &t, BFEED_EPROTO);
}

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
  o->epoch = UINT64_MAX;
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
    assert_int_equal(f32_bits(a->mean[c]), f32_bits(b->mean[c]));
    assert_int_equal(f32_bits(a->std[c]), f32_bits(b->std[c]));
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
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_open_encode(&w, &m);
  return take_payload(&w, at, FRAME_OPEN, 3, n);
}

/* The item with this tag in a TLV list, walked by the test's own parser;
 * exactly one must exist. */
static void expect_item(const uint8_t *p, size_t n, uint16_t tag, const tb *want_value) {
  int found = 0;
  for (size_t off = 0; off < n;) {
    assert_true(n - off >= 6);
    uint16_t t = (uint16_t)(p[off] | p[off + 1] << 8);
    uint32_t len = get_le32(p + off + 2);
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
  for (int c = 0; c < 3; c++) tb_u32(&v[7], f32_bits(o.mean[c]));
  for (int c = 0; c < 3; c++) tb_u32(&v[8], f32_bits(o.std[c]));
  tb_u64(&v[9], UINT64_MAX - 1);
  tb_u64(&v[10], UINT64_MAX);
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
  const char *why;
  assert_int_equal(msg_open_decode(p, n, &m, &why), 0);
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

  char *name = repeat('d', MSG_NAME_MAX - 1);
  size_t n;
  uint8_t *p = encode_open(name, &o, &n);
  msg_open m;
  memset(&m, 0xa5, sizeof m);
  const char *why = NULL;
  assert_int_equal(msg_open_decode(p, n, &m, &why), 0);
  assert_string_equal(m.dataset, name);
  assert_opts_equal(&m.opts, &o);
  char reason[256];
  assert_int_equal(msg_opts_check(&m.opts, reason, sizeof reason), 0);
  free(p);
  free(name);
}

/* Options not sent keep their defaults. */
static void test_open_dataset_only(void **state) {
  tb t = {.n = 0};
  tb_item_mem(&t, 0x8001, "imgs", 4);
  msg_open m;
  const char *why;
  assert_int_equal(msg_open_decode(t.b, t.n, &m, &why), 0);
  assert_string_equal(m.dataset, "imgs");
  bfeed_stream_opts def;
  msg_opts_defaults(&def);
  assert_opts_equal(&m.opts, &def);
}

/* A critical tag the daemon does not know refuses the stream (EINVAL);
 * unknown tags without the bit are hints and are skipped. */
static void test_open_unknown_tags(void **state) {
  const uint16_t critical[] = {0x8000 | 20, 0x8000 | 200, 0x8000, 0xffff};
  for (size_t i = 0; i < sizeof critical / sizeof critical[0]; i++) {
    tb t = {.n = 0};
    tb_item_mem(&t, 0x8001, "imgs", 4);
    tb_item(&t, critical[i], 1, 4);
    expect_decode(dec_open, &t, BFEED_EINVAL);
  }
  tb t = {.n = 0};
  tb_item_mem(&t, 0x0063, "a hint", 6);
  tb_item_mem(&t, 0x8001, "imgs", 4);
  tb_item_mem(&t, 0x7fff, NULL, 0);
  tb_item(&t, 0x0000, UINT64_MAX, 8);
  tb_item(&t, 0x8002, 32, 4);
  tb_item(&t, 0x1234, 5, 3);
  msg_open m;
  const char *why;
  assert_int_equal(msg_open_decode(t.b, t.n, &m, &why), 0);
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
    expect_decode(dec_open, &t, BFEED_EPROTO);
  }
  tb t = {.n = 0};
  tb_item_mem(&t, 0x8001, "imgs", 4);
  tb_u16(&t, 0x0063); /* an item header cut after its tag */
  expect_decode(dec_open, &t, BFEED_EPROTO);
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
      expect_decode(dec_open, &t, BFEED_EPROTO);
    }
    t.n = 0;
    tb_item_mem(&t, 0x8001, "imgs", 4);
    tb_item_mem(&t, (uint16_t)(0x8000 | tag), junk, len);
    expect_decode(dec_open, &t, 0);
  }
}

static void test_open_dataset_rules(void **state) {
  tb t = {.n = 0};
  expect_decode(dec_open, &t, BFEED_EINVAL); /* empty payload */
  tb_item(&t, 0x8002, 8, 4);
  expect_decode(dec_open, &t, BFEED_EINVAL); /* no dataset */
  t.n = 0;
  tb_item_mem(&t, 0x8001, "", 0);
  expect_decode(dec_open, &t, BFEED_EINVAL);
  t.n = 0;
  tb_item_mem(&t, 0x8001, "ab\0c", 4);
  expect_decode(dec_open, &t, BFEED_EPROTO);
  char *name = repeat('x', MSG_NAME_MAX);
  t.n = 0;
  tb_item_mem(&t, 0x8001, name, MSG_NAME_MAX - 1);
  expect_decode(dec_open, &t, 0);
  t.n = 0;
  tb_item_mem(&t, 0x8001, name, MSG_NAME_MAX);
  expect_decode(dec_open, &t, BFEED_EPROTO);
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
    uint32_t len = get_le32(p + off + 2);
    if ((p[off] | p[off + 1] << 8) == 0x8001) dataset_end = off + 6 + len;
    off += 6 + len;
  }
  assert_true(dataset_end > 0);
  for (size_t k = 0; k < n; k++) {
    int want = !boundary[k] ? BFEED_EPROTO : k >= dataset_end ? 0 : BFEED_EINVAL;
    int rc = decode_copy(dec_open, p, k);
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
  OPTS(0, "codec", o.codec = (bfeed_codec)2);
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

/* ------------------------------------------------------------------ */
/* OPEN_OK, ACK, ERROR                                                */

static void test_open_ok(void **state) {
  msg_open_ok in = {.samples = UINT64_MAX - 3, .batches_per_epoch = 0x100000001ull,
                    .classes = 0xfffffff0u},
              out;
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w), n;
  msg_open_ok_encode(&w, &in);
  uint8_t *p = take_payload(&w, at, FRAME_OPEN_OK, 9, &n);
  tb t = {.n = 0};
  tb_u64(&t, UINT64_MAX - 3);
  tb_u64(&t, 0x100000001ull);
  tb_u32(&t, 0xfffffff0u);
  assert_int_equal(n, 20);
  assert_memory_equal(p, t.b, n);
  memset(&out, 0xa5, sizeof out);
  const char *why;
  assert_int_equal(msg_open_ok_decode(p, n, &out, &why), 0);
  assert_int_equal(out.samples, in.samples);
  assert_int_equal(out.batches_per_epoch, in.batches_per_epoch);
  assert_int_equal(out.classes, in.classes);
  expect_prefixes_fail(dec_open_ok, p, n);
  free(p);
}

static void test_ack(void **state) {
  const uint64_t values[] = {0, 1, 0x0102030405060708ull, UINT64_MAX};
  for (size_t i = 0; i < 4; i++) {
    wbuf w;
    wbuf_init(&w);
    size_t at = msg_begin(&w), n;
    msg_u64_encode(&w, values[i]);
    uint8_t *p = take_payload(&w, at, FRAME_ACK, 1, &n);
    tb t = {.n = 0};
    tb_u64(&t, values[i]);
    assert_int_equal(n, 8);
    assert_memory_equal(p, t.b, 8);
    uint64_t v = 12345;
    const char *why;
    assert_int_equal(msg_u64_decode(p, n, &v, &why), 0);
    assert_int_equal(v, values[i]);
    expect_prefixes_fail(dec_u64, p, n);
    free(p);
  }
}

static void test_error_round_trip(void **state) {
  const int32_t codes[] = {BFEED_EINVAL, BFEED_ENODATASET, BFEED_EINTERNAL, -1000, INT32_MIN};
  char *long_msg = repeat('m', 300);
  const char *messages[] = {"", "no such dataset \"x\"; served: a, b", long_msg};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    for (size_t j = 0; j < 3; j++) {
      wbuf w;
      wbuf_init(&w);
      size_t at = msg_begin(&w), n;
      msg_error_encode(&w, codes[i], messages[j]);
      uint8_t *p = take_payload(&w, at, FRAME_ERROR, 0, &n);
      size_t want_len = strlen(messages[j]) < 255 ? strlen(messages[j]) : 255;
      tb t = {.n = 0};
      tb_u32(&t, (uint32_t)codes[i]);
      tb_str16(&t, messages[j], want_len);
      assert_int_equal(n, t.n);
      assert_memory_equal(p, t.b, n);
      msg_error m;
      memset(&m, 0xa5, sizeof m);
      const char *why;
      assert_int_equal(msg_error_decode(p, n, &m, &why), 0);
      assert_int_equal(m.code, codes[i]);
      assert_int_equal(strlen(m.message), want_len);
      assert_memory_equal(m.message, messages[j], want_len);
      expect_prefixes_fail(dec_error, p, n);
      free(p);
    }
  }
  free(long_msg);
}

/* An ERROR must carry an error: code 0 or positive is malformed. */
static void test_error_malformed(void **state) {
  const int32_t not_errors[] = {0, 1, 16, INT32_MAX};
  for (size_t i = 0; i < 4; i++) {
    tb t = {.n = 0};
    tb_u32(&t, (uint32_t)not_errors[i]);
    tb_str16(&t, "x", 1);
    expect_decode(dec_error, &t, BFEED_EPROTO);
  }
  char *m = repeat('e', MSG_ERROR_MAX);
  tb t = {.n = 0};
  tb_u32(&t, (uint32_t)BFEED_EIO);
  tb_str16(&t, m, MSG_ERROR_MAX);
  expect_decode(dec_error, &t, BFEED_EPROTO);
  t.n = 4;
  tb_str16(&t, m, MSG_ERROR_MAX - 1);
  expect_decode(dec_error, &t, 0);
  t.n = 4;
  tb_str16(&t, "bad\0byte", 8);
  expect_decode(dec_error, &t, BFEED_EPROTO);
  free(m);
}

/* ------------------------------------------------------------------ */
/* STATS                                                              */

static void test_stats_round_trip(void **state) {
  msg_counter in[MSG_MAX_COUNTERS], out[MSG_MAX_COUNTERS];
  for (int i = 0; i < MSG_MAX_COUNTERS; i++) {
    snprintf(in[i].name, sizeof in[i].name, "%s_%02d", i % 2 ? "wire_bytes" : "x", i);
    in[i].value = UINT64_MAX - (uint64_t)i * 0x100000001ull;
  }
  strcpy(in[5].name, "abcdefghijklmnopqrstuvwxyz01234"); /* 31 bytes, the longest */
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w), n, count = 0;
  msg_stats_encode(&w, in, MSG_MAX_COUNTERS);
  uint8_t *p = take_payload(&w, at, FRAME_STATS, 4, &n);

  tb t = {.n = 0};
  tb_u32(&t, MSG_MAX_COUNTERS);
  for (int i = 0; i < MSG_MAX_COUNTERS; i++) {
    tb_u8(&t, strlen(in[i].name));
    tb_mem(&t, in[i].name, strlen(in[i].name));
    tb_u64(&t, in[i].value);
  }
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);

  const char *why;
  memset(out, 0xa5, sizeof out);
  assert_int_equal(msg_stats_decode(p, n, out, MSG_MAX_COUNTERS, &count, &why), 0);
  assert_int_equal(count, MSG_MAX_COUNTERS);
  for (int i = 0; i < MSG_MAX_COUNTERS; i++) {
    assert_string_equal(out[i].name, in[i].name);
    assert_int_equal(out[i].value, in[i].value);
  }
  /* Fewer slots than counters: the first ones, the rest still validated. */
  assert_int_equal(msg_stats_decode(p, n, out, 3, &count, &why), 0);
  assert_int_equal(count, 3);
  assert_int_equal(out[2].value, in[2].value);
  expect_prefixes_fail(dec_stats, p, n);
  free(p);
}

static void tb_counter(tb *t, const char *name, size_t len, uint64_t v) {
  tb_u8(t, len);
  tb_mem(t, name, len);
  tb_u64(t, v);
}

static void test_stats_malformed(void **state) {
  /* More than 64 counters, even when they are all there. */
  const uint32_t too_many[] = {MSG_MAX_COUNTERS + 1, 1000, UINT32_MAX};
  for (size_t i = 0; i < 3; i++) {
    tb t = {.n = 0};
    tb_u32(&t, too_many[i]);
    for (uint32_t k = 0; k < MSG_MAX_COUNTERS + 1; k++) tb_counter(&t, "c", 1, k);
    expect_decode(dec_stats, &t, BFEED_ETOOBIG);
  }
  tb t = {.n = 0};
  tb_u32(&t, 3);
  tb_counter(&t, "a", 1, 1);
  tb_counter(&t, "b", 1, 2);
  expect_decode(dec_stats, &t, BFEED_EPROTO); /* count says 3, 2 present */
  tb_counter(&t, "c", 1, 3);
  expect_decode(dec_stats, &t, 0);
  tb_u8(&t, 0);
  expect_decode(dec_stats, &t, BFEED_EPROTO); /* a byte left over */

  char *n32 = repeat('n', 32);
  const struct {
    const char *name;
    size_t len;
  } bad[] = {{"", 0}, {n32, 32}, {"a\0b", 3}};
  for (size_t i = 0; i < 3; i++) {
    t.n = 0;
    tb_u32(&t, 1);
    tb_counter(&t, bad[i].name, bad[i].len, 7);
    expect_decode(dec_stats, &t, BFEED_EPROTO);
  }
  free(n32);
}

/* ------------------------------------------------------------------ */
/* BATCH                                                              */

/* A batch as the test describes it; spec_batch_bytes writes it out per
 * PROTOCOL.md, whatever its values (so malformed ones too). */
typedef struct spec_tensor {
  const char *name;
  size_t name_len; /* 0: strlen(name) */
  uint8_t dtype, ndim;
  uint64_t shape[12];
  uint64_t offset, nbytes;
} spec_tensor;

typedef struct spec_batch {
  uint64_t epoch, index, seq;
  uint8_t codec, ntensors;
  uint64_t raw_size;
  spec_tensor t[20];
  size_t data_size;
} spec_batch;

static uint8_t data_byte(size_t i) { return (uint8_t)(i * 31 + 7); }

static size_t spec_batch_bytes(tb *out, const spec_batch *b) {
  out->n = 0;
  tb_u64(out, b->epoch);
  tb_u64(out, b->index);
  tb_u64(out, b->seq);
  tb_u8(out, b->codec);
  tb_u8(out, b->ntensors);
  tb_u16(out, 0);
  tb_u64(out, b->raw_size);
  for (int i = 0; i < b->ntensors; i++) {
    const spec_tensor *t = &b->t[i];
    size_t len = t->name_len ? t->name_len : strlen(t->name);
    tb_u8(out, len);
    tb_mem(out, t->name, len);
    tb_u8(out, t->dtype);
    tb_u8(out, t->ndim);
    /* An absurd ndim gets the shape entries there are: a short payload. */
    for (int d = 0; d < t->ndim && d < 12; d++) tb_u64(out, t->shape[d]);
    tb_u64(out, t->offset);
    tb_u64(out, t->nbytes);
  }
  size_t head = out->n;
  for (size_t i = 0; i < b->data_size; i++) tb_u8(out, data_byte(i));
  return head;
}

/* An image stream's batch of 2: image bf16 [2,3,4,4], label i32 [2],
 * index i64 [2], at 64-byte aligned offsets. */
static spec_batch valid_batch(void) {
  spec_batch b = {
      .epoch = UINT64_MAX - 1,
      .index = 0x123456789ull,
      .seq = 77,
      .codec = BFEED_CODEC_NONE,
      .ntensors = 3,
      .raw_size = 272,
      .t =
          {
              {.name = "image", .dtype = 1, .ndim = 4, .shape = {2, 3, 4, 4}, .offset = 0,
               .nbytes = 192},
              {.name = "label", .dtype = 3, .ndim = 1, .shape = {2}, .offset = 192, .nbytes = 8},
              {.name = "index", .dtype = 4, .ndim = 1, .shape = {2}, .offset = 256, .nbytes = 16},
          },
      .data_size = 272,
  };
  return b;
}

/* Decode into a msg_batch followed by a guard, so that a decoder writing
 * past its tensor table is caught without a sanitizer too. */
static int decode_spec(const spec_batch *b, uint64_t raw_limit) {
  tb t;
  spec_batch_bytes(&t, b);
  uint8_t *c = exact_copy(t.b, t.n);
  struct {
    msg_batch m;
    uint8_t guard[512];
  } *out = malloc(sizeof *out);
  assert_non_null(out);
  memset(out->guard, 0x5c, sizeof out->guard);
  const char *why = NULL;
  int rc = msg_batch_decode(c, t.n, raw_limit, &out->m, &why);
  if (rc < 0) assert_true(why && strlen(why) > 0);
  for (size_t i = 0; i < sizeof out->guard; i++) assert_int_equal(out->guard[i], 0x5c);
  free(out);
  free(c);
  return rc;
}

static void to_msg_batch(const spec_batch *b, msg_batch *m) {
  memset(m, 0, sizeof *m);
  m->epoch = b->epoch;
  m->index = b->index;
  m->seq = b->seq;
  m->codec = b->codec;
  m->ntensors = b->ntensors;
  m->raw_size = b->raw_size;
  for (int i = 0; i < b->ntensors; i++) {
    snprintf(m->t[i].name, sizeof m->t[i].name, "%s", b->t[i].name);
    m->t[i].dtype = b->t[i].dtype;
    m->t[i].ndim = b->t[i].ndim;
    memcpy(m->t[i].shape, b->t[i].shape, sizeof m->t[i].shape);
    m->t[i].offset = b->t[i].offset;
    m->t[i].nbytes = b->t[i].nbytes;
  }
}

static uint8_t *encode_batch(const spec_batch *b, size_t *n) {
  msg_batch m;
  to_msg_batch(b, &m);
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_batch_encode_head(&w, &m);
  for (size_t i = 0; i < b->data_size; i++) wbuf_u8(&w, data_byte(i));
  return take_payload(&w, at, FRAME_BATCH, 2, n);
}

static void test_batch_layout_and_round_trip(void **state) {
  const spec_batch b = valid_batch();
  tb t;
  size_t head = spec_batch_bytes(&t, &b), n;
  assert_int_equal(head, 36 + 3 * (1 + 5 + 2 + 8 + 8) + 8 * (4 + 1 + 1));
  uint8_t *p = encode_batch(&b, &n);
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);

  msg_batch m;
  memset(&m, 0xa5, sizeof m);
  const char *why = NULL;
  assert_int_equal(msg_batch_decode(p, n, 272, &m, &why), 0);
  assert_int_equal(m.epoch, b.epoch);
  assert_int_equal(m.index, b.index);
  assert_int_equal(m.seq, b.seq);
  assert_int_equal(m.codec, BFEED_CODEC_NONE);
  assert_int_equal(m.ntensors, 3);
  assert_int_equal(m.raw_size, 272);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(m.t[i].name, b.t[i].name);
    assert_int_equal(m.t[i].dtype, b.t[i].dtype);
    assert_int_equal(m.t[i].ndim, b.t[i].ndim);
    for (int d = 0; d < b.t[i].ndim; d++) assert_int_equal(m.t[i].shape[d], b.t[i].shape[d]);
    assert_int_equal(m.t[i].offset, b.t[i].offset);
    assert_int_equal(m.t[i].nbytes, b.t[i].nbytes);
  }
  assert_ptr_equal(m.data, p + head);
  assert_int_equal(m.data_size, 272);
  assert_memory_equal(m.data, t.b + head, 272);
  expect_prefixes_fail(dec_batch, p, n);
  free(p);
}

/* A zstd batch's data is "the rest of the payload": any length decodes,
 * and the data pointer still lies inside the payload. */
static void test_batch_zstd_data(void **state) {
  spec_batch b = valid_batch();
  b.codec = BFEED_CODEC_ZSTD;
  b.data_size = 5;
  tb t;
  size_t head = spec_batch_bytes(&t, &b);
  for (size_t k = 0; k <= t.n; k++) {
    uint8_t *c = exact_copy(t.b, k);
    msg_batch m;
    const char *why;
    int rc = msg_batch_decode(c, k, UINT64_MAX, &m, &why);
    if (k < head) {
      assert_int_equal(rc, BFEED_EPROTO);
    } else {
      assert_int_equal(rc, 0);
      assert_ptr_equal(m.data, c + head);
      assert_int_equal(m.data_size, k - head);
    }
    free(c);
  }
}

static void test_batch_ndim(void **state) {
  spec_batch b = {.ntensors = 1, .raw_size = 24, .data_size = 24};
  b.t[0] = (spec_tensor){.name = "t", .dtype = BFEED_DTYPE_U8, .ndim = 8,
                         .shape = {1, 2, 1, 2, 1, 2, 1, 3}, .nbytes = 24};
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  b.t[0].ndim = 9;
  b.t[0].shape[8] = 1;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[0].ndim = 12;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[0].ndim = 255; /* and far fewer shape bytes than that */
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  /* A scalar: no dimensions, one element. */
  b.t[0] = (spec_tensor){.name = "s", .dtype = BFEED_DTYPE_I64, .ndim = 0, .nbytes = 8};
  b.raw_size = b.data_size = 8;
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
}

static void test_batch_tensor_count(void **state) {
  spec_batch b = {.ntensors = MSG_MAX_TENSORS, .raw_size = 20 * 64, .data_size = 20 * 64};
  static const char *names[] = {"t0", "t1", "t2",  "t3",  "t4",  "t5",  "t6",  "t7",  "t8", "t9",
                                "ta", "tb", "tc", "td", "te", "tf", "tg", "th", "ti", "tj"};
  for (int i = 0; i < 20; i++)
    b.t[i] = (spec_tensor){.name = names[i], .dtype = BFEED_DTYPE_U8, .ndim = 1, .shape = {1},
                           .offset = (uint64_t)i * 64, .nbytes = 1};
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  /* Otherwise valid (zstd: no data size to disagree), so the count alone
   * is what must be refused. */
  b.codec = BFEED_CODEC_ZSTD;
  b.ntensors = MSG_MAX_TENSORS + 1;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.ntensors = 20;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.codec = BFEED_CODEC_NONE;
  /* 255 claimed, 20 present */
  tb t;
  spec_batch_bytes(&t, &b);
  t.b[25] = 255;
  expect_decode(dec_batch, &t, BFEED_EPROTO);
}

/* Element sizes per PROTOCOL.md: 1 bf16, 2 f32, 3 i32, 4 i64, 5 u8. */
static void test_batch_dtypes(void **state) {
  static const size_t size_of[] = {0, 2, 4, 4, 8, 1};
  spec_batch b = {.ntensors = 1, .raw_size = 64, .data_size = 64};
  for (int dt = 1; dt <= 5; dt++) {
    b.t[0] = (spec_tensor){.name = "x", .dtype = (uint8_t)dt, .ndim = 2, .shape = {2, 3},
                           .nbytes = 6 * size_of[dt]};
    assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
    b.t[0].nbytes += 1;
    assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
    b.t[0].nbytes -= 2;
    assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
    assert_int_equal(names_dtype_size(dt), size_of[dt]);
  }
  const uint8_t unknown[] = {0, 6, 7, 128, 255};
  for (size_t i = 0; i < sizeof unknown; i++) {
    b.t[0] = (spec_tensor){.name = "x", .dtype = unknown[i], .ndim = 1, .shape = {4}, .nbytes = 4};
    assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  }
}

/* Shapes whose product wraps to a small number in 64 bits must not pass
 * for that small number. Data is zstd so raw_size may be anything. */
static void test_batch_shape_overflow(void **state) {
  const struct {
    uint8_t dtype, ndim;
    uint64_t shape[3];
    uint64_t nbytes;
    int ok;
  } cases[] = {
      {BFEED_DTYPE_U8, 2, {1ull << 33, 1ull << 33}, 0, 0},           /* 2^66 wraps to 0 */
      {BFEED_DTYPE_U8, 2, {1ull << 32, 1ull << 32}, 0, 0},           /* 2^64 wraps to 0 */
      {BFEED_DTYPE_BF16, 1, {1ull << 63}, 0, 0},                     /* elements * 2 wraps */
      {BFEED_DTYPE_I64, 2, {1ull << 31, 1ull << 31}, 0, 0},          /* 2^62 * 8 wraps to 0 */
      {BFEED_DTYPE_U8, 2, {(1ull << 32) + 1, (1ull << 32) - 1}, UINT64_MAX, 1}, /* exactly 2^64-1 */
      {BFEED_DTYPE_F32, 3, {0, 1ull << 40, 1ull << 40}, 0, 1},       /* zero first: product 0 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    spec_batch b = {.codec = BFEED_CODEC_ZSTD, .ntensors = 1, .raw_size = UINT64_MAX, .data_size = 1};
    b.t[0] = (spec_tensor){.name = "big", .dtype = cases[i].dtype, .ndim = cases[i].ndim,
                           .nbytes = cases[i].nbytes};
    memcpy(b.t[0].shape, cases[i].shape, sizeof cases[i].shape);
    int rc = decode_spec(&b, UINT64_MAX);
    if (rc != (cases[i].ok ? 0 : BFEED_EPROTO)) fail_msg("case %zu: rc %d", i, rc);
  }
}

/* offset + nbytes must stay inside raw_size, also when the sum wraps. */
static void test_batch_extent(void **state) {
  spec_batch b = valid_batch();
  b.t[2].offset = 272 - 16 + 1;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[2].offset = UINT64_MAX - 7; /* + 16 wraps to 8 */
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[2].offset = 273;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[2].offset = 256;
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  /* Inside the data but not on a 64-byte boundary: refused. */
  b.t[2].offset = 200;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[2].offset = 256;
  /* A dimension past INT64_MAX cannot be a bfeed_tensor shape, even in an
   * empty tensor. */
  b.t[2].ndim = 2;
  b.t[2].shape[0] = 0;
  b.t[2].shape[1] = (uint64_t)INT64_MAX + 1;
  b.t[2].nbytes = 0;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[2].ndim = 1;
  /* An empty tensor may sit at the very end, not past it. */
  b.t[2].shape[0] = 0;
  b.t[2].nbytes = 0;
  b.t[2].offset = 272;
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  b.t[2].offset = 273;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
}

static void test_batch_sizes_and_codec(void **state) {
  spec_batch b = valid_batch();
  assert_int_equal(decode_spec(&b, 272), 0);
  assert_int_equal(decode_spec(&b, 271), BFEED_ETOOBIG);
  assert_int_equal(decode_spec(&b, 0), BFEED_ETOOBIG);
  b.data_size = 271;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.data_size = 273;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.data_size = 272;
  const uint8_t codecs[] = {2, 3, 128, 255};
  for (size_t i = 0; i < sizeof codecs; i++) {
    b.codec = codecs[i];
    assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  }
}

static void test_batch_names(void **state) {
  char *n31 = repeat('n', 31), *n32 = repeat('n', 32);
  spec_batch b = valid_batch();
  b.t[1].name = n31;
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  b.t[1].name = n32;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[1].name = "";
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.t[1].name = "la\0el";
  b.t[1].name_len = 5;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  free(n31);
  free(n32);
}

/* ------------------------------------------------------------------ */
/* Addresses                                                          */

static void expect_addr(const char *s, int kind, const char *where, int port) {
  addr_spec a;
  char why[512] = "";
  int rc = addr_parse(s, &a, why, sizeof why);
  if (!kind) {
    if (rc != BFEED_EINVAL) fail_msg("\"%s\" accepted", s);
    assert_true(strlen(why) > 0);
    return;
  }
  if (rc != 0) fail_msg("\"%s\" refused: %s", s, why);
  assert_int_equal(a.kind, kind);
  assert_string_equal(kind == ADDR_UNIX ? a.path : a.host, where);
  if (kind == ADDR_TCP) assert_int_equal(a.port, port);
}

static void test_addr_parse(void **state) {
  expect_addr("unix:/run/bfeed/bfeedd.sock", ADDR_UNIX, "/run/bfeed/bfeedd.sock", 0);
  expect_addr("unix:rel.sock", ADDR_UNIX, "rel.sock", 0);
  expect_addr("unix:", 0, NULL, 0);
  expect_addr("127.0.0.1:7070", ADDR_TCP, "127.0.0.1", 7070);
  expect_addr("feeder.example:0", ADDR_TCP, "feeder.example", 0);
  expect_addr("h:65535", ADDR_TCP, "h", 65535);
  expect_addr("[::1]:7070", ADDR_TCP, "::1", 7070);
  expect_addr("[fe80::1%eth0]:1", ADDR_TCP, "fe80::1%eth0", 1);
  /* bad ports */
  expect_addr("h:65536", 0, NULL, 0);
  expect_addr("h:-1", 0, NULL, 0);
  expect_addr("h:", 0, NULL, 0);
  expect_addr("h:80x", 0, NULL, 0);
  expect_addr("h:x80", 0, NULL, 0);
  expect_addr("h:99999999999999999999999", 0, NULL, 0);
  expect_addr("[::1]:", 0, NULL, 0);
  /* missing host, missing port, broken brackets */
  expect_addr(":7070", 0, NULL, 0);
  expect_addr("[]:7070", 0, NULL, 0);
  expect_addr("localhost", 0, NULL, 0);
  expect_addr("", 0, NULL, 0);
  expect_addr("[::1]", 0, NULL, 0);
  expect_addr("[::1:7070", 0, NULL, 0);
  expect_addr("[::1]x:7070", 0, NULL, 0);
}

/* sun_path holds 107 bytes and a NUL; host names up to 255 bytes. */
static void test_addr_lengths(void **state) {
  char s[600];
  char *p107 = repeat('p', 107), *p108 = repeat('p', 108);
  snprintf(s, sizeof s, "unix:%s", p107);
  expect_addr(s, ADDR_UNIX, p107, 0);
  snprintf(s, sizeof s, "unix:%s", p108);
  expect_addr(s, 0, NULL, 0);
  char *h255 = repeat('h', 255), *h256 = repeat('h', 256);
  snprintf(s, sizeof s, "%s:1", h255);
  expect_addr(s, ADDR_TCP, h255, 1);
  snprintf(s, sizeof s, "%s:1", h256);
  expect_addr(s, 0, NULL, 0);
  snprintf(s, sizeof s, "[%s]:1", h256);
  expect_addr(s, 0, NULL, 0);
  free(p107);
  free(p108);
  free(h255);
  free(h256);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tlv_layout),
      cmocka_unit_test(test_tlv_truncated),
      cmocka_unit_test(test_tlv_str_nul),
      cmocka_unit_test(test_rbuf_latches),
      cmocka_unit_test(test_wbuf),
      cmocka_unit_test(test_hello_layout),
      cmocka_unit_test(test_hello_round_trip),
      cmocka_unit_test(test_hello_malformed),
      cmocka_unit_test(test_hello_ok),
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
      cmocka_unit_test(test_opts_frame_limit),
      cmocka_unit_test(test_opts_reason_truncated),
      cmocka_unit_test(test_open_ok),
      cmocka_unit_test(test_ack),
      cmocka_unit_test(test_error_round_trip),
      cmocka_unit_test(test_error_malformed),
      cmocka_unit_test(test_stats_round_trip),
      cmocka_unit_test(test_stats_malformed),
      cmocka_unit_test(test_batch_layout_and_round_trip),
      cmocka_unit_test(test_batch_zstd_data),
      cmocka_unit_test(test_batch_ndim),
      cmocka_unit_test(test_batch_tensor_count),
      cmocka_unit_test(test_batch_dtypes),
      cmocka_unit_test(test_batch_shape_overflow),
      cmocka_unit_test(test_batch_extent),
      cmocka_unit_test(test_batch_sizes_and_codec),
      cmocka_unit_test(test_batch_names),
      cmocka_unit_test(test_addr_parse),
      cmocka_unit_test(test_addr_lengths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
