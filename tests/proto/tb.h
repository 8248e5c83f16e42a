/*
 * tb.h -- the proto tests' own little-endian byte builder (tb_*, written from
 * PROTOCOL.md, not from proto's wbuf or wire.h) and decoder drivers.
 * Called by tests/proto/test_*.c.
 */
#ifndef BFEED_TESTS_TB_H
#define BFEED_TESTS_TB_H

#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "tlv.h"

typedef struct tb {
  uint8_t b[16384];
  size_t n;
} tb;

typedef int (*tb_decode_fn)(const void *p, size_t n, char *why, size_t whylen);

/* A test file's main(): its cmocka tests as one group (cmocka.h first). */
#define TB_MAIN(...)                                      \
  int main(void) {                                        \
    const struct CMUnitTest tb_tests[] = {__VA_ARGS__};   \
    return cmocka_run_group_tests(tb_tests, NULL, NULL);  \
  }

/* Append v as `bytes` little-endian bytes (asserts on overflow of b). */
void tb_le(tb *t, uint64_t v, int bytes);
void tb_u8(tb *t, uint64_t v);
void tb_u16(tb *t, uint64_t v);
void tb_u32(tb *t, uint64_t v);
void tb_u64(tb *t, uint64_t v);
void tb_mem(tb *t, const void *p, size_t n);
void tb_str16(tb *t, const char *s, size_t n);
uint32_t tb_get_le32(const uint8_t *p);
uint32_t tb_f32_bits(float f);
/* TLV items as PROTOCOL.md spells them: u16 tag, u32 length, value. */
void tb_item(tb *t, uint16_t tag, uint64_t v, int bytes);
void tb_item_mem(tb *t, uint16_t tag, const void *p, uint32_t len);
void tb_item_f32s(tb *t, uint16_t tag, const float v[3]);
/* A heap string of n copies of c (the caller frees it). */
char *tb_repeat(char c, size_t n);
/* A heap copy of exactly n bytes: an overread is a sanitizer error. */
uint8_t *tb_exact_copy(const void *p, size_t n);
/* wbuf_init + msg_begin: start a frame in a fresh buffer, return its offset. */
size_t tb_begin(wbuf *w);
/* Finish the frame begun at `at`, check it as a receiver would, return a
 * copy of its payload (n bytes); w is freed. */
uint8_t *tb_take_payload(wbuf *w, size_t at, int type, uint32_t stream, size_t *n);
/* Each decoder behind one signature, its output discarded. */
int tb_dec_hello(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_hello_ok(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_open(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_open_ok(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_u64(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_error(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_stats(const void *p, size_t n, char *why, size_t whylen);
int tb_dec_batch(const void *p, size_t n, char *why, size_t whylen);
/* Decode exactly n bytes of p: rc, with a reason asserted whenever rc < 0. */
int tb_decode_copy(tb_decode_fn fn, const void *p, size_t n);
void tb_expect_decode(tb_decode_fn fn, const tb *t, int want);
/* p decodes, and every strict prefix of it is refused. */
void tb_expect_prefixes_fail(tb_decode_fn fn, const uint8_t *p, size_t n);

#endif
