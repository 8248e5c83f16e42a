/*
 * test_msg_batch.c -- BATCH: the layout per PROTOCOL.md, round trips, and
 * every descriptor a decoder must refuse (ndim, counts, dtypes, overflowing
 * shapes, extents outside the data, names), each decoded from a buffer of
 * exactly its size with a guard after the output.
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
  uint8_t *c = tb_exact_copy(t.b, t.n);
  struct {
    msg_batch m;
    uint8_t guard[512];
  } *out = malloc(sizeof *out);
  assert_non_null(out);
  memset(out->guard, 0x5c, sizeof out->guard);
  char why[256] = "";
  int rc = msg_batch_decode(c, t.n, raw_limit, &out->m, why, sizeof why);
  if (rc < 0) assert_true(strlen(why) > 0);
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
  size_t at = tb_begin(&w);
  msg_batch_encode_head(&w, &m);
  for (size_t i = 0; i < b->data_size; i++) wbuf_u8(&w, data_byte(i));
  return tb_take_payload(&w, at, FRAME_BATCH, 2, n);
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
  char why[256] = "";
  assert_int_equal(msg_batch_decode(p, n, 272, &m, why, sizeof why), 0);
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
  tb_expect_prefixes_fail(tb_dec_batch, p, n);
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
    uint8_t *c = tb_exact_copy(t.b, k);
    msg_batch m;
    char why[256] = "";
    int rc = msg_batch_decode(c, k, UINT64_MAX, &m, why, sizeof why);
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
  tb_expect_decode(tb_dec_batch, &t, BFEED_EPROTO);
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
  const uint8_t codecs[] = {6, 128, 255}; /* 0..5: none, zstd, u8, u8+zstd, u8+lz4, lz4 */
  for (size_t i = 0; i < sizeof codecs; i++) {
    b.codec = codecs[i];
    assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  }
}

/* Codec u8: head and table, a byte per image value, the other 80 raw
 * bytes: 4 + 1536 + 96 + 80; only with a bf16 image first, at offset 0. */
static void test_batch_codec_u8(void **state) {
  spec_batch b = valid_batch();
  b.codec = BFEED_CODEC_U8;
  b.data_size = 1716;
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  b.data_size = 1715;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.data_size = 1717;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b.codec = BFEED_CODEC_U8_ZSTD; /* a zstd frame: its size is checked on decompression */
  b.data_size = 100;
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  b.codec = BFEED_CODEC_U8_LZ4; /* an LZ4 block: likewise */
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  b.codec = BFEED_CODEC_U8;
  b.data_size = 1716;
  memcpy(b.t[0].shape, (uint64_t[]){2, 4, 4, 3}, 4 * sizeof(uint64_t)); /* NHWC */
  assert_int_equal(decode_spec(&b, UINT64_MAX), 0);
  memcpy(b.t[0].shape, (uint64_t[]){2, 4, 3, 4}, 4 * sizeof(uint64_t)); /* no channel axis */
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b = valid_batch();
  b.codec = BFEED_CODEC_U8_ZSTD;
  b.t[0].name = "picture";
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
  b = valid_batch();
  b.codec = BFEED_CODEC_U8;
  b.t[0].dtype = 5; /* u8 [2,3,4,4x2]: the right bytes, not bf16 */
  b.t[0].shape[3] = 8;
  b.data_size = 1716;
  assert_int_equal(decode_spec(&b, UINT64_MAX), BFEED_EPROTO);
}

static void test_batch_names(void **state) {
  char *n31 = tb_repeat('n', 31), *n32 = tb_repeat('n', 32);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_layout_and_round_trip),
      cmocka_unit_test(test_batch_zstd_data),
      cmocka_unit_test(test_batch_ndim),
      cmocka_unit_test(test_batch_tensor_count),
      cmocka_unit_test(test_batch_dtypes),
      cmocka_unit_test(test_batch_shape_overflow),
      cmocka_unit_test(test_batch_extent),
      cmocka_unit_test(test_batch_sizes_and_codec),
      cmocka_unit_test(test_batch_codec_u8),
      cmocka_unit_test(test_batch_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
