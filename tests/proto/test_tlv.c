/*
 * test_tlv.c -- the TLV items and the write/read buffers of proto/tlv.h.
 *
 * The oracle for byte layouts is PROTOCOL.md, through the tests' own byte
 * builder (tb.h); reads past the end must latch, never overrun.
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
  assert_int_equal(tb_f32_bits(1.0f), 0x3f800000u);

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
    uint8_t *c = tb_exact_copy(t.b, k);
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

  size_t at = tb_begin(&w);
  msg_u64_encode(&w, 1);
  assert_null(wbuf_reserve(&w, SIZE_MAX - 8));
  assert_true(w.failed);
  assert_int_equal(msg_finish(&w, at, FRAME_ACK, 1), BFEED_ENOMEM);
  wbuf_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tlv_layout),
      cmocka_unit_test(test_tlv_truncated),
      cmocka_unit_test(test_tlv_str_nul),
      cmocka_unit_test(test_rbuf_latches),
      cmocka_unit_test(test_wbuf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
