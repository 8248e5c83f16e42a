/*
 * test_msg_classes.c -- CLASSES_REQ and CLASSES (proto/msg_classes.c):
 * byte layouts per PROTOCOL.md "Class names", pages that stop at the
 * 64 KiB control-frame limit and join up to every name, a name too long
 * for a page alone, and malformed payloads (each in a buffer of exactly
 * its size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "msg.h"
#include "tb.h"

static int dec_req(const void *p, size_t n, char *why, size_t whylen) {
  msg_classes_req m;
  return msg_classes_req_decode(p, n, &m, why, whylen);
}

static int dec_classes(const void *p, size_t n, char *why, size_t whylen) {
  msg_classes m;
  return msg_classes_decode(p, n, &m, why, whylen);
}

/* CLASSES_REQ: u32 first; a later client's fields after it are skipped. */
static void test_request(void **state) {
  wbuf w;
  size_t at = tb_begin(&w), n;
  msg_classes_req_encode(&w, &(msg_classes_req){.first = 0x01020304});
  uint8_t *p = tb_take_payload(&w, at, FRAME_CLASSES_REQ, 2, &n);
  static const uint8_t want[] = {4, 3, 2, 1};
  assert_int_equal(n, sizeof want);
  assert_memory_equal(p, want, n);
  tb_expect_prefixes_fail(dec_req, p, n);
  tb t = {.n = 0};
  tb_u32(&t, 7);
  tb_u64(&t, 99); /* a later client's field */
  msg_classes_req m;
  char why[256];
  assert_int_equal(msg_classes_req_decode(t.b, t.n, &m, why, sizeof why), 0);
  assert_int_equal(m.first, 7);
  free(p);
  (void)state;
}

/* CLASSES payload of names[0..avail) from first, at most max bytes; the
 * caller frees it. */
static uint8_t *encode_page(uint32_t total, uint32_t first, const char *const *names, uint32_t avail, size_t max,
                            uint32_t *count, size_t *n) {
  wbuf w;
  size_t at = tb_begin(&w);
  *count = msg_classes_encode(&w, total, first, names, avail, max);
  return tb_take_payload(&w, at, FRAME_CLASSES, 2, n);
}

/* total, first, count, then each name as u16 length + bytes, UTF-8 as it is. */
static void test_layout(void **state) {
  const char *names[] = {"b", "cc", "\xe6\x97\xa5\xe6\x9c\xac"};
  uint32_t count;
  size_t n;
  uint8_t *p = encode_page(5, 1, names, 3, MSG_CLASSES_MAX, &count, &n);
  tb t = {.n = 0};
  tb_u32(&t, 5);
  tb_u32(&t, 1);
  tb_u32(&t, 3);
  for (int i = 0; i < 3; i++) tb_str16(&t, names[i], strlen(names[i]));
  assert_int_equal(count, 3);
  assert_int_equal(n, t.n);
  assert_memory_equal(p, t.b, n);
  tb_expect_prefixes_fail(dec_classes, p, n);
  msg_classes m;
  char why[256];
  assert_int_equal(msg_classes_decode(p, n, &m, why, sizeof why), 0);
  assert_int_equal(m.total, 5);
  assert_int_equal(m.first, 1);
  assert_int_equal(m.count, 3);
  size_t off = 0, len;
  for (int i = 0; i < 3; i++) {
    const char *s = msg_classes_name(&m, &off, &len);
    assert_int_equal(len, strlen(names[i]));
    assert_memory_equal(s, names[i], len);
  }
  assert_int_equal(off, m.names_len);
  free(p);
  /* No names at all (npy), and the empty page after the last name. */
  p = encode_page(0, 0, NULL, 0, MSG_CLASSES_MAX, &count, &n);
  assert_int_equal(count, 0);
  assert_int_equal(n, MSG_CLASSES_HEAD);
  assert_int_equal(tb_decode_copy(dec_classes, p, n), 0);
  free(p);
  p = encode_page(5, 5, NULL, 0, MSG_CLASSES_MAX, &count, &n);
  assert_int_equal(tb_decode_copy(dec_classes, p, n), 0);
  free(p);
  (void)state;
}

/* 3000 names of 60 bytes: pages of 1056 (the most whole names that fit
 * 64 KiB), 1056 and 888, which join up to the list. */
static void test_pages(void **state) {
  enum { N = 3000, LEN = 60 };
  static char buf[N][LEN + 1];
  const char *names[N];
  for (int i = 0; i < N; i++) {
    snprintf(buf[i], sizeof buf[i], "%04d-%055d", i, i * 7919);
    names[i] = buf[i];
  }
  const uint32_t want[] = {1056, 1056, 888};
  uint32_t first = 0;
  for (int page = 0; first < N; page++) {
    uint32_t count;
    size_t n;
    uint8_t *p = encode_page(N, first, names + first, N - first, MSG_CLASSES_MAX, &count, &n);
    assert_int_equal(count, want[page]);
    assert_true(n <= MSG_CLASSES_MAX);
    assert_int_equal(n, MSG_CLASSES_HEAD + (size_t)count * (2 + LEN));
    msg_classes m;
    char why[256];
    assert_int_equal(msg_classes_decode(p, n, &m, why, sizeof why), 0);
    assert_int_equal(m.first, first);
    size_t off = 0, len;
    for (uint32_t i = 0; i < m.count; i++) {
      const char *s = msg_classes_name(&m, &off, &len);
      assert_int_equal(len, LEN);
      assert_memory_equal(s, names[first + i], LEN);
    }
    first += count;
    free(p);
  }
  assert_int_equal(first, N);
  (void)state;
}

/* A name longer than a page holds is cut to fill one page (a client must
 * get on); one that just fits goes whole, and the next waits its page. */
static void test_long_name(void **state) {
  const size_t fit = MSG_CLASSES_MAX - MSG_CLASSES_HEAD - 2;
  char *huge = tb_repeat('h', 70000), *exact = tb_repeat('e', fit);
  const char *names[] = {huge, "next"};
  uint32_t count;
  size_t n;
  uint8_t *p = encode_page(2, 0, names, 2, MSG_CLASSES_MAX, &count, &n);
  assert_int_equal(count, 1);
  assert_int_equal(n, MSG_CLASSES_MAX);
  msg_classes m;
  char why[256];
  assert_int_equal(msg_classes_decode(p, n, &m, why, sizeof why), 0);
  size_t off = 0, len;
  msg_classes_name(&m, &off, &len);
  assert_int_equal(len, fit);
  free(p);
  names[0] = exact;
  p = encode_page(2, 0, names, 2, MSG_CLASSES_MAX, &count, &n);
  assert_int_equal(count, 1);
  assert_int_equal(n, MSG_CLASSES_MAX);
  free(p);
  free(huge);
  free(exact);
  (void)state;
}

/* A page of total, first, count with names given as (length, bytes). */
static tb page(uint32_t total, uint32_t first, uint32_t count, const char *const *names, size_t nnames) {
  tb t = {.n = 0};
  tb_u32(&t, total);
  tb_u32(&t, first);
  tb_u32(&t, count);
  for (size_t i = 0; i < nnames; i++) tb_str16(&t, names[i], strlen(names[i]));
  return t;
}

static void test_malformed(void **state) {
  const char *ab[] = {"a", "b"};
  tb t = page(2, 0, 2, ab, 2);
  tb_expect_decode(dec_classes, &t, 0);
  t = page(2, 3, 0, NULL, 0); /* first past total */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(2, 1, 2, ab, 2); /* more names than remain */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(UINT32_MAX, UINT32_MAX, 1, ab, 1); /* first + count wraps */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(2, 0, 0, NULL, 0); /* no progress: a client would ask again forever */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(2, 0, 2, ab, 1); /* count says more than follows */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(2, 0, 1, ab, 2); /* bytes after the names */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(1, 0, 1, NULL, 0);
  tb_str16(&t, "a\0b", 3); /* a NUL inside a name */
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  t = page(1, 0, 1, NULL, 0);
  tb_u16(&t, 5); /* a length past the end */
  tb_mem(&t, "abc", 3);
  tb_expect_decode(dec_classes, &t, BFEED_EPROTO);
  (void)state;
}

TB_MAIN(cmocka_unit_test(test_request), cmocka_unit_test(test_layout), cmocka_unit_test(test_pages),
        cmocka_unit_test(test_long_name), cmocka_unit_test(test_malformed))
