/*
 * test_msg_control.c -- the small messages: HELLO, HELLO_OK, OPEN_OK, ACK,
 * ERROR, STATS: byte layouts per PROTOCOL.md, round trips, malformed and
 * truncated payloads (each in a buffer of exactly its size).
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
/* HELLO, HELLO_OK                                                    */

/* HELLO's and HELLO_OK's fixed fields as PROTOCOL.md lays them out: two
 * u32 (versions, or version and max_frame) and a string (agent, server). */
static void tb_two_u32_str(tb *t, uint32_t a, uint32_t b, const char *s) {
  tb_u32(t, a);
  tb_u32(t, b);
  tb_str16(t, s, strlen(s));
}

/* m's HELLO payload, checked against the bytes t holds; the caller frees. */
static uint8_t *hello_expect(const msg_hello *m, const tb *t, size_t *n) {
  wbuf w;
  size_t at = tb_begin(&w);
  msg_hello_encode(&w, m);
  uint8_t *p = tb_take_payload(&w, at, FRAME_HELLO, 0, n);
  assert_int_equal(*n, t->n);
  assert_memory_equal(p, t->b, *n);
  return p;
}

static void test_hello_layout(void **state) {
  msg_hello m = {.min_version = 1, .max_version = 7};
  strcpy(m.agent, "libbfeed/0.1.0");
  tb t = {.n = 0};
  size_t n;
  tb_two_u32_str(&t, 1, 7, "libbfeed/0.1.0");
  uint8_t *p = hello_expect(&m, &t, &n);
  static const uint8_t head[] = {1, 0, 0, 0, 7, 0, 0, 0, 14, 0, 'l'};
  assert_memory_equal(p, head, sizeof head);
  tb_expect_prefixes_fail(tb_dec_hello, p, n);
  free(p);
}

/* The longest agent that fits survives; a longer one is cut, not refused. */
static void test_hello_round_trip(void **state) {
  const size_t lens[] = {0, 1, MSG_NAME_MAX - 2, MSG_NAME_MAX - 1, MSG_NAME_MAX, 200};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    size_t len = lens[i];
    msg_hello in = {.min_version = 0xfffffffe, .max_version = UINT32_MAX}, out;
    char *agent = tb_repeat('a', len);
    /* From MSG_NAME_MAX bytes on the field is full and unterminated. */
    memcpy(in.agent, agent, len < MSG_NAME_MAX ? len + 1 : MSG_NAME_MAX);
    wbuf w;
    size_t at = tb_begin(&w), n;
    msg_hello_encode(&w, &in);
    uint8_t *p = tb_take_payload(&w, at, FRAME_HELLO, 0, &n);
    memset(&out, 0xa5, sizeof out);
    char why[256] = "";
    assert_int_equal(msg_hello_decode(p, n, &out, why, sizeof why), 0);
    assert_int_equal(out.min_version, 0xfffffffe);
    assert_int_equal(out.max_version, UINT32_MAX);
    size_t want = len < MSG_NAME_MAX - 1 ? len : MSG_NAME_MAX - 1;
    assert_int_equal(strlen(out.agent), want);
    assert_memory_equal(out.agent, agent, want);
    free(p);
    free(agent);
  }
}

/* The token is TLV item 1 after the agent, sent only when set; the longest
 * that fits survives, a longer one (or one holding a NUL) is refused. */
static void test_hello_token(void **state) {
  msg_hello m = {.min_version = 1, .max_version = 1}, out;
  strcpy(m.agent, "a");
  strcpy(m.token, "s3cret");
  tb t = {.n = 0};
  size_t n;
  tb_two_u32_str(&t, 1, 1, "a");
  tb_item_mem(&t, 1, "s3cret", 6);
  uint8_t *p = hello_expect(&m, &t, &n);
  tb_expect_prefixes_fail(tb_dec_hello, p, n - 6 - 6); /* without the item it is a token-less HELLO */
  char why[256] = "";
  assert_int_equal(msg_hello_decode(p, n, &out, why, sizeof why), 0);
  assert_string_equal(out.token, "s3cret");
  assert_int_equal(msg_hello_decode(p, n - 12, &out, why, sizeof why), 0);
  assert_string_equal(out.token, "");
  free(p);

  char *tok = tb_repeat('t', MSG_TOKEN_MAX);
  t.n = 8 + 2 + 1;
  tb_item_mem(&t, 1, tok, MSG_TOKEN_MAX - 1);
  tb_expect_decode(tb_dec_hello, &t, 0);
  t.n = 8 + 2 + 1;
  tb_item_mem(&t, 1, tok, MSG_TOKEN_MAX);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);
  t.n = 8 + 2 + 1;
  tb_item_mem(&t, 1, "ab\0c", 4);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);
  free(tok);
  (void)state;
}

static void test_hello_malformed(void **state) {
  tb t = {.n = 0};
  /* Extensions after the agent: unknown ones are skipped unless critical;
   * bytes that are no TLV item are malformed. */
  tb_two_u32_str(&t, 1, 1, "x");
  tb_item_mem(&t, 0x0042, "future", 6);
  tb_expect_decode(tb_dec_hello, &t, 0);
  t.n -= 6 + 6;
  tb_item_mem(&t, 0x8042, "future", 6);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);
  t.n -= 6 + 6;
  tb_mem(&t, "future", 6);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);

  char *long_name = tb_repeat('n', MSG_NAME_MAX);
  t.n = 8;
  tb_str16(&t, long_name, MSG_NAME_MAX - 1);
  tb_expect_decode(tb_dec_hello, &t, 0);
  t.n = 8;
  tb_str16(&t, long_name, MSG_NAME_MAX);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);
  t.n = 8;
  tb_str16(&t, "ab\0c", 4);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);
  t.n = 8;
  tb_u16(&t, 0xffff);
  tb_mem(&t, "short", 5);
  tb_expect_decode(tb_dec_hello, &t, BFEED_EPROTO);
  free(long_name);
}

static void test_hello_ok(void **state) {
  msg_hello_ok in = {.version = 1, .max_frame = FRAME_MAX_PAYLOAD}, out;
  strcpy(in.server, "bfeedd/0.1.0 on host-7");
  wbuf w;
  size_t at = tb_begin(&w), n;
  msg_hello_ok_encode(&w, &in);
  uint8_t *p = tb_take_payload(&w, at, FRAME_HELLO_OK, 0, &n);

  tb t = {.n = 0};
  tb_two_u32_str(&t, 1, 1u << 30, in.server);
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);

  memset(&out, 0xa5, sizeof out);
  char why[256] = "";
  assert_int_equal(msg_hello_ok_decode(p, n, &out, why, sizeof why), 0);
  assert_int_equal(out.version, 1);
  assert_int_equal(out.max_frame, 1u << 30);
  assert_string_equal(out.server, in.server);
  tb_expect_prefixes_fail(tb_dec_hello_ok, p, n);
  free(p);

  t.n = 8;
  tb_str16(&t, "a\0", 2);
  tb_expect_decode(tb_dec_hello_ok, &t, BFEED_EPROTO);
}

/* ------------------------------------------------------------------ */
/* OPEN_OK, ACK, ERROR                                                */

static void test_open_ok(void **state) {
  msg_open_ok in = {.samples = UINT64_MAX - 3, .batches_per_epoch = 0x100000001ull,
                    .classes = 0xfffffff0u, .fingerprint = 0x0123456789abcdefull, .features = 0x80000001u},
              out;
  wbuf w;
  size_t at = tb_begin(&w), n;
  msg_open_ok_encode(&w, &in);
  uint8_t *p = tb_take_payload(&w, at, FRAME_OPEN_OK, 9, &n);
  tb t = {.n = 0};
  tb_u64(&t, UINT64_MAX - 3);
  tb_u64(&t, 0x100000001ull);
  tb_u32(&t, 0xfffffff0u);
  tb_u64(&t, 0x0123456789abcdefull);
  tb_u32(&t, 0x80000001u);
  assert_int_equal(n, 32);
  assert_memory_equal(p, t.b, n);
  memset(&out, 0xa5, sizeof out);
  char why[256] = "";
  assert_int_equal(msg_open_ok_decode(p, n, &out, why, sizeof why), 0);
  assert_int_equal(out.samples, in.samples);
  assert_int_equal(out.batches_per_epoch, in.batches_per_epoch);
  assert_int_equal(out.classes, in.classes);
  assert_int_equal(out.fingerprint, in.fingerprint);
  assert_int_equal(out.features, in.features);
  /* A daemon that predates the fingerprint sends the first 20 bytes: no
   * fingerprint (0); one that predates the features 28: none (0);
   * shorter is malformed. Bytes after the features are a later daemon's. */
  memset(&out, 0xa5, sizeof out);
  assert_int_equal(msg_open_ok_decode(p, 20, &out, why, sizeof why), 0);
  assert_int_equal(out.classes, in.classes);
  assert_int_equal(out.fingerprint, 0);
  assert_int_equal(out.features, 0);
  memset(&out, 0xa5, sizeof out);
  assert_int_equal(msg_open_ok_decode(p, 24, &out, why, sizeof why), 0); /* no fingerprint: no features either */
  assert_int_equal(out.fingerprint, 0);
  assert_int_equal(out.features, 0);
  memset(&out, 0xa5, sizeof out);
  assert_int_equal(msg_open_ok_decode(p, 28, &out, why, sizeof why), 0);
  assert_int_equal(out.fingerprint, in.fingerprint);
  assert_int_equal(out.features, 0);
  uint8_t longer[40] = {0};
  memcpy(longer, p, 32);
  assert_int_equal(msg_open_ok_decode(longer, sizeof longer, &out, why, sizeof why), 0);
  assert_int_equal(out.features, in.features);
  tb_expect_prefixes_fail(tb_dec_open_ok, p, 20);
  free(p);
}

static void test_ack(void **state) {
  const uint64_t values[] = {0, 1, 0x0102030405060708ull, UINT64_MAX};
  for (size_t i = 0; i < 4; i++) {
    wbuf w;
    size_t at = tb_begin(&w), n;
    msg_u64_encode(&w, values[i]);
    uint8_t *p = tb_take_payload(&w, at, FRAME_ACK, 1, &n);
    tb t = {.n = 0};
    tb_u64(&t, values[i]);
    assert_int_equal(n, 8);
    assert_memory_equal(p, t.b, 8);
    uint64_t v = 12345;
    char why[256] = "";
    assert_int_equal(msg_u64_decode(p, n, &v, why, sizeof why), 0);
    assert_int_equal(v, values[i]);
    tb_expect_prefixes_fail(tb_dec_u64, p, n);
    free(p);
  }
}

/* TIMING: seven u64 and the flags, in order; a later client's fields
 * after them are skipped; without the flags (56 bytes, a client that
 * predates them, or a field cut short) they read as 0; fewer bytes are
 * malformed. */
static msg_timing timing_out;
static int dec_timing(const void *p, size_t n, char *why, size_t whylen) { return msg_timing_decode(p, n, &timing_out, why, whylen); }

static void test_timing(void **state) {
  msg_timing in = {.batches = 1, .wait_us = UINT64_MAX, .step_us = 0x0102030405060708ull, .wait_p50_us = 4,
                   .wait_p99_us = 5, .first_wait_us = 6, .expand_us = 7, .flags = MSG_TIMING_LOOP | 0x8000000000000000ull};
  wbuf w;
  size_t at = tb_begin(&w), n;
  msg_timing_encode(&w, &in);
  uint8_t *p = tb_take_payload(&w, at, FRAME_TIMING, 3, &n);
  tb t = {.n = 0};
  const uint64_t want[] = {1, UINT64_MAX, 0x0102030405060708ull, 4, 5, 6, 7, 0x8000000000000001ull};
  for (int i = 0; i < 8; i++) tb_u64(&t, want[i]);
  assert_int_equal(n, MSG_TIMING_FLAGS_SIZE);
  assert_memory_equal(p, t.b, n);
  char why[256] = "";
  memset(&timing_out, 0xa5, sizeof timing_out);
  assert_int_equal(msg_timing_decode(p, n, &timing_out, why, sizeof why), 0);
  assert_memory_equal(&timing_out, &in, sizeof in);
  uint8_t longer[MSG_TIMING_FLAGS_SIZE + 9] = {0};
  memcpy(longer, p, n);
  assert_int_equal(msg_timing_decode(longer, sizeof longer, &timing_out, why, sizeof why), 0);
  assert_memory_equal(&timing_out, &in, sizeof in);
  msg_timing old = in;
  old.flags = 0;
  for (size_t k = MSG_TIMING_SIZE; k < MSG_TIMING_FLAGS_SIZE; k++) { /* no whole flags: none */
    memset(&timing_out, 0xa5, sizeof timing_out);
    assert_int_equal(msg_timing_decode(p, k, &timing_out, why, sizeof why), 0);
    assert_memory_equal(&timing_out, &old, sizeof old);
  }
  tb_expect_prefixes_fail(dec_timing, p, MSG_TIMING_SIZE);
  free(p);
}

/* REQUEST: u32 count (1..1024), then count x (u64 epoch, u64 index). */
static msg_request request_out;
static int dec_request(const void *p, size_t n, char *why, size_t whylen) { return msg_request_decode(p, n, &request_out, why, whylen); }

static void test_request(void **state) {
  static msg_request in, out;
  const uint32_t counts[] = {1, 2, MSG_MAX_REQUEST - 1}; /* the last: what tb holds */
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    in.count = counts[k];
    tb t = {.n = 0};
    tb_u32(&t, in.count);
    for (uint32_t i = 0; i < in.count; i++) {
      in.b[i].epoch = i * 0x100000001ull, in.b[i].index = UINT64_MAX - i;
      tb_u64(&t, in.b[i].epoch);
      tb_u64(&t, in.b[i].index);
    }
    wbuf w;
    size_t at = tb_begin(&w), n;
    msg_request_encode(&w, &in);
    uint8_t *p = tb_take_payload(&w, at, FRAME_REQUEST, 5, &n);
    assert_int_equal(n, 4 + 16 * (size_t)in.count);
    assert_memory_equal(p, t.b, n);
    char why[256] = "";
    assert_int_equal(msg_request_decode(p, n, &out, why, sizeof why), 0);
    assert_int_equal(out.count, in.count);
    assert_memory_equal(out.b, in.b, in.count * sizeof in.b[0]);
    tb_expect_prefixes_fail(dec_request, p, n);
    free(p);
  }
  /* No batch, too many, a byte too many: malformed. */
  const uint32_t bad[] = {0, MSG_MAX_REQUEST + 1, UINT32_MAX};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    tb t = {.n = 0};
    tb_u32(&t, bad[k]);
    tb_u64(&t, 1);
    tb_u64(&t, 2);
    tb_expect_decode(dec_request, &t, BFEED_EPROTO);
  }
  tb t = {.n = 0};
  tb_u32(&t, 1);
  tb_u64(&t, 1);
  tb_u64(&t, 2);
  tb_expect_decode(dec_request, &t, 0);
  t.b[t.n++] = 0;
  tb_expect_decode(dec_request, &t, BFEED_EPROTO);
  (void)state;
}

static void test_error_round_trip(void **state) {
  const int32_t codes[] = {BFEED_EINVAL, BFEED_ENODATASET, BFEED_EINTERNAL, -1000, INT32_MIN};
  char *long_msg = tb_repeat('m', 300);
  const char *messages[] = {"", "no such dataset \"x\"; served: a, b", long_msg};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    for (size_t j = 0; j < 3; j++) {
      wbuf w;
      size_t at = tb_begin(&w), n;
      msg_error_encode(&w, codes[i], messages[j]);
      uint8_t *p = tb_take_payload(&w, at, FRAME_ERROR, 0, &n);
      size_t want_len = strlen(messages[j]) < 255 ? strlen(messages[j]) : 255;
      tb t = {.n = 0};
      tb_u32(&t, (uint32_t)codes[i]);
      tb_str16(&t, messages[j], want_len);
      assert_int_equal(n, t.n);
      assert_memory_equal(p, t.b, n);
      msg_error m;
      memset(&m, 0xa5, sizeof m);
      char why[256] = "";
      assert_int_equal(msg_error_decode(p, n, &m, why, sizeof why), 0);
      assert_int_equal(m.code, codes[i]);
      assert_int_equal(strlen(m.message), want_len);
      assert_memory_equal(m.message, messages[j], want_len);
      tb_expect_prefixes_fail(tb_dec_error, p, n);
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
    tb_expect_decode(tb_dec_error, &t, BFEED_EPROTO);
  }
  char *m = tb_repeat('e', MSG_ERROR_MAX);
  tb t = {.n = 0};
  tb_u32(&t, (uint32_t)BFEED_EIO);
  tb_str16(&t, m, MSG_ERROR_MAX);
  tb_expect_decode(tb_dec_error, &t, BFEED_EPROTO);
  t.n = 4;
  tb_str16(&t, m, MSG_ERROR_MAX - 1);
  tb_expect_decode(tb_dec_error, &t, 0);
  t.n = 4;
  tb_str16(&t, "bad\0byte", 8);
  tb_expect_decode(tb_dec_error, &t, BFEED_EPROTO);
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
  size_t at = tb_begin(&w), n, count = 0;
  msg_stats_encode(&w, in, MSG_MAX_COUNTERS);
  uint8_t *p = tb_take_payload(&w, at, FRAME_STATS, 4, &n);

  tb t = {.n = 0};
  tb_u32(&t, MSG_MAX_COUNTERS);
  for (int i = 0; i < MSG_MAX_COUNTERS; i++) {
    tb_u8(&t, strlen(in[i].name));
    tb_mem(&t, in[i].name, strlen(in[i].name));
    tb_u64(&t, in[i].value);
  }
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);

  char why[256] = "";
  memset(out, 0xa5, sizeof out);
  assert_int_equal(msg_stats_decode(p, n, out, MSG_MAX_COUNTERS, &count, why, sizeof why), 0);
  assert_int_equal(count, MSG_MAX_COUNTERS);
  for (int i = 0; i < MSG_MAX_COUNTERS; i++) {
    assert_string_equal(out[i].name, in[i].name);
    assert_int_equal(out[i].value, in[i].value);
  }
  /* Fewer slots than counters: the first ones, the rest still validated. */
  assert_int_equal(msg_stats_decode(p, n, out, 3, &count, why, sizeof why), 0);
  assert_int_equal(count, 3);
  assert_int_equal(out[2].value, in[2].value);
  tb_expect_prefixes_fail(tb_dec_stats, p, n);
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
    tb_expect_decode(tb_dec_stats, &t, BFEED_ETOOBIG);
  }
  tb t = {.n = 0};
  tb_u32(&t, 3);
  tb_counter(&t, "a", 1, 1);
  tb_counter(&t, "b", 1, 2);
  tb_expect_decode(tb_dec_stats, &t, BFEED_EPROTO); /* count says 3, 2 present */
  tb_counter(&t, "c", 1, 3);
  tb_expect_decode(tb_dec_stats, &t, 0);
  tb_u8(&t, 0);
  tb_expect_decode(tb_dec_stats, &t, BFEED_EPROTO); /* a byte left over */

  char *n32 = tb_repeat('n', 32);
  const struct {
    const char *name;
    size_t len;
  } bad[] = {{"", 0}, {n32, 32}, {"a\0b", 3}};
  for (size_t i = 0; i < 3; i++) {
    t.n = 0;
    tb_u32(&t, 1);
    tb_counter(&t, bad[i].name, bad[i].len, 7);
    tb_expect_decode(tb_dec_stats, &t, BFEED_EPROTO);
  }
  free(n32);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hello_layout),
      cmocka_unit_test(test_hello_round_trip),
      cmocka_unit_test(test_hello_malformed),
      cmocka_unit_test(test_hello_token),
      cmocka_unit_test(test_hello_ok),
      cmocka_unit_test(test_open_ok),
      cmocka_unit_test(test_ack),
      cmocka_unit_test(test_timing),
      cmocka_unit_test(test_request),
      cmocka_unit_test(test_error_round_trip),
      cmocka_unit_test(test_error_malformed),
      cmocka_unit_test(test_stats_round_trip),
      cmocka_unit_test(test_stats_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
