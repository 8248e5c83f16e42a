/* tb.c -- see tb.h */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "tb.h"

/* ------------------------------------------------------------------ */
/* A byte builder for expected payloads                               */


void tb_le(tb *t, uint64_t v, int bytes) {
  assert_true(t->n + (size_t)bytes <= sizeof t->b);
  for (int i = 0; i < bytes; i++) t->b[t->n++] = (uint8_t)(v >> (8 * i));
}
void tb_u8(tb *t, uint64_t v) { tb_le(t, v, 1); }
void tb_u16(tb *t, uint64_t v) { tb_le(t, v, 2); }
void tb_u32(tb *t, uint64_t v) { tb_le(t, v, 4); }
void tb_u64(tb *t, uint64_t v) { tb_le(t, v, 8); }
void tb_mem(tb *t, const void *p, size_t n) {
  assert_true(t->n + n <= sizeof t->b);
  if (n) memcpy(t->b + t->n, p, n);
  t->n += n;
}
void tb_str16(tb *t, const char *s, size_t n) {
  tb_u16(t, n);
  tb_mem(t, s, n);
}
uint32_t tb_get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
uint32_t tb_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
/* A TLV item whose value is the little-endian bytes of v. */
void tb_item(tb *t, uint16_t tag, uint64_t v, int bytes) {
  tb_u16(t, tag);
  tb_u32(t, (uint32_t)bytes);
  tb_le(t, v, bytes);
}
void tb_item_mem(tb *t, uint16_t tag, const void *p, uint32_t len) {
  tb_u16(t, tag);
  tb_u32(t, len);
  tb_mem(t, p, len);
}
void tb_item_f32s(tb *t, uint16_t tag, const float v[3]) {
  tb_u16(t, tag);
  tb_u32(t, 12);
  for (int i = 0; i < 3; i++) tb_u32(t, tb_f32_bits(v[i]));
}

char *tb_repeat(char c, size_t n) {
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
uint8_t *tb_exact_copy(const void *p, size_t n) {
  uint8_t *c = malloc(n ? n : 1);
  assert_non_null(c);
  if (n) memcpy(c, p, n);
  return c;
}

/* Start a frame in a fresh growable buffer: its offset (0). */
size_t tb_begin(wbuf *w) {
  wbuf_init(w);
  return msg_begin(w);
}

/* Finish the frame begun at `at` in w and check it as a receiver would:
 * header valid, of this type and stream, length and checksum matching.
 * Returns a copy of the payload; w is freed. */
uint8_t *tb_take_payload(wbuf *w, size_t at, int type, uint32_t stream, size_t *n) {
  assert_int_equal(msg_finish(w, at, type, stream), 0);
  frame_header h;
  assert_int_equal(frame_header_decode(w->data + at, FRAME_MAX_PAYLOAD, &h, NULL, 0), 0);
  assert_int_equal(h.type, type);
  assert_int_equal(h.stream, stream);
  assert_int_equal(h.length, w->len - at - FRAME_HEADER_SIZE);
  assert_int_equal(frame_verify(&h, w->data + at + FRAME_HEADER_SIZE), 0);
  *n = h.length;
  uint8_t *p = tb_exact_copy(w->data + at + FRAME_HEADER_SIZE, h.length);
  wbuf_free(w);
  return p;
}

/* The decoders that take (p, n, &out, why, whylen) differ only in out's type. */
#define TB_DEFINE_DEC(msg, T)                                           \
  int tb_dec_##msg(const void *p, size_t n, char *why, size_t whylen) { \
    T out;                                                              \
    return msg_##msg##_decode(p, n, &out, why, whylen);                 \
  }
TB_DEFINE_DEC(hello, msg_hello)
TB_DEFINE_DEC(hello_ok, msg_hello_ok)
TB_DEFINE_DEC(open, msg_open)
TB_DEFINE_DEC(open_ok, msg_open_ok)
TB_DEFINE_DEC(u64, uint64_t)
TB_DEFINE_DEC(error, msg_error)

int tb_dec_stats(const void *p, size_t n, char *why, size_t whylen) {
  msg_counter c[MSG_MAX_COUNTERS];
  size_t count;
  return msg_stats_decode(p, n, c, MSG_MAX_COUNTERS, &count, why, whylen);
}
int tb_dec_batch(const void *p, size_t n, char *why, size_t whylen) {
  msg_batch m;
  return msg_batch_decode(p, n, UINT64_MAX, &m, why, whylen);
}

/* Decode exactly n bytes of p; rc, and a reason whenever rc < 0. */
int tb_decode_copy(tb_decode_fn fn, const void *p, size_t n) {
  uint8_t *c = tb_exact_copy(p, n);
  char why[256] = "";
  int rc = fn(c, n, why, sizeof why);
  free(c);
  if (rc < 0) {
    assert_non_null(why);
    assert_true(strlen(why) > 0);
  }
  return rc;
}

void tb_expect_decode(tb_decode_fn fn, const tb *t, int want) {
  assert_int_equal(tb_decode_copy(fn, t->b, t->n), want);
}

/* Every strict prefix of a message whose length is fully determined by its
 * contents is malformed. */
void tb_expect_prefixes_fail(tb_decode_fn fn, const uint8_t *p, size_t n) {
  assert_int_equal(tb_decode_copy(fn, p, n), 0);
  for (size_t k = 0; k < n; k++) {
    int rc = tb_decode_copy(fn, p, k);
    if (rc >= 0) fail_msg("a %zu-byte prefix of a %zu-byte message decoded", k, n);
  }
}
