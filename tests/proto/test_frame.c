/*
 * test_frame.c -- the 24-byte frame header: byte layout against bytes
 * written out by hand from PROTOCOL.md, round trips for every type, every
 * rejection rule in the order the protocol gives them, and the payload
 * checksum against published XXH3-64 vectors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bfeed_types.h"
#include "names.h"
#include "frame.h"

/* A header with every field distinct, and the bytes PROTOCOL.md prescribes
 * for it: magic 42 46 45 44, version, type, then little-endian flags,
 * stream, length and checksum. */
static const frame_header oracle_header = {
    .version = 1,
    .type = FRAME_STATS,
    .flags = 0xa55a,
    .stream = 0x11223344,
    .length = 0x00010203,
    .checksum = 0x0102030405060708ull,
};
static const uint8_t oracle_bytes[FRAME_HEADER_SIZE] = {
    0x42, 0x46, 0x45, 0x44,                         /* "BFED" */
    0x01,                                           /* version */
    0x0b,                                           /* type 11, STATS */
    0x5a, 0xa5,                                     /* flags */
    0x44, 0x33, 0x22, 0x11,                         /* stream */
    0x03, 0x02, 0x01, 0x00,                         /* length */
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* checksum */
};

/* Decode from a buffer of exactly FRAME_HEADER_SIZE bytes on the heap, so
 * that a sanitizer build catches a decoder that peeks at the payload. */
static int decode_exact(const uint8_t bytes[FRAME_HEADER_SIZE], uint32_t limit, frame_header *h,
                        char *why, size_t whylen) {
  uint8_t *copy = malloc(FRAME_HEADER_SIZE);
  assert_non_null(copy);
  memcpy(copy, bytes, FRAME_HEADER_SIZE);
  int rc = frame_header_decode(copy, limit, h, why, whylen);
  free(copy);
  return rc;
}

static void assert_header_equal(const frame_header *a, const frame_header *b) {
  assert_int_equal(a->version, b->version);
  assert_int_equal(a->type, b->type);
  assert_int_equal(a->flags, b->flags);
  assert_int_equal(a->stream, b->stream);
  assert_int_equal(a->length, b->length);
  assert_int_equal(a->checksum, b->checksum);
}

static void test_encode_matches_spec_bytes(void **state) {
  uint8_t out[FRAME_HEADER_SIZE];
  memset(out, 0xee, sizeof out);
  frame_header_encode(&oracle_header, out);
  assert_memory_equal(out, oracle_bytes, FRAME_HEADER_SIZE);
}

static void test_decode_spec_bytes(void **state) {
  frame_header h;
  char why[256] = "";
  assert_int_equal(decode_exact(oracle_bytes, FRAME_MAX_PAYLOAD, &h, why, sizeof why), 0);
  assert_header_equal(&h, &oracle_header);
  assert_non_null(why);
}

/* Every type survives encode/decode with its other fields intact. */
static void test_round_trip_every_type(void **state) {
  for (int type = 1; type <= 11; type++) {
    frame_header in = {
        .version = 1,
        .type = (uint8_t)type,
        .flags = (uint16_t)(0x0101 * type),
        .stream = 0xfffffff0u + (uint32_t)type,
        .length = (uint32_t)type * 4099u,
        .checksum = UINT64_MAX - (uint64_t)type,
    }, out;
    uint8_t bytes[FRAME_HEADER_SIZE];
    frame_header_encode(&in, bytes);
    assert_int_equal(bytes[5], type);
    assert_int_equal(decode_exact(bytes, FRAME_MAX_CONTROL, &out, NULL, 0), 0);
    assert_header_equal(&out, &in);
  }
}

/* Names come from the protocol's type table. */
static void test_type_names(void **state) {
  static const char *const want[] = {NULL,    "HELLO", "HELLO_OK", "OPEN",  "OPEN_OK",   "BATCH",
                                     "ACK",   "CLOSE", "END",      "ERROR", "STATS_REQ", "STATS",
                                     "REQUEST", "SHM_RING", "BATCH_SHM", "TIMING", "CLASSES_REQ", "CLASSES"};
  assert_int_equal(FRAME_TYPE_MAX_, 17);
  for (int type = 1; type <= 17; type++) assert_string_equal(frame_type_name(type), want[type]);
  const int unknown[] = {0, -1, 18, 255, 256, 1 << 30};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    assert_string_equal(frame_type_name(unknown[i]), "?");
}

/* A bad frame's reason is a real sentence, and why may be NULL. */
static void expect_reject(const uint8_t bytes[FRAME_HEADER_SIZE], uint32_t limit, int want) {
  frame_header h;
  char why[256] = "";
  assert_int_equal(decode_exact(bytes, limit, &h, why, sizeof why), want);
  assert_non_null(why);
  assert_true(strlen(why) > 0);
  assert_int_equal(decode_exact(bytes, limit, &h, NULL, 0), want);
}

/* The spec header with byte at replaced by each of values[0..n) is refused. */
static void expect_reject_byte(size_t at, const uint8_t *values, size_t n, int want) {
  for (size_t i = 0; i < n; i++) {
    uint8_t b[FRAME_HEADER_SIZE];
    memcpy(b, oracle_bytes, sizeof b);
    b[at] = values[i];
    expect_reject(b, FRAME_MAX_PAYLOAD, want);
  }
}

static void test_bad_magic(void **state) {
  for (int i = 0; i < 4; i++) {
    uint8_t flips[8];
    for (int bit = 0; bit < 8; bit++) flips[bit] = oracle_bytes[i] ^ (uint8_t)(1u << bit);
    expect_reject_byte((size_t)i, flips, sizeof flips, BFEED_EPROTO);
  }
  /* The magic read big-endian, as a peer with the wrong byte order sends it. */
  uint8_t b[FRAME_HEADER_SIZE];
  memcpy(b, oracle_bytes, sizeof b);
  memcpy(b, "DEFB", 4);
  expect_reject(b, FRAME_MAX_PAYLOAD, BFEED_EPROTO);
}

static void test_bad_version(void **state) {
  const uint8_t versions[] = {0, 2, 3, 0x81, 255};
  expect_reject_byte(4, versions, sizeof versions, BFEED_EVERSION);
}

static void test_bad_type(void **state) {
  const uint8_t types[] = {0, 18, 19, 0x80, 255};
  expect_reject_byte(5, types, sizeof types, BFEED_EPROTO);
}

static void put_length(uint8_t b[FRAME_HEADER_SIZE], uint32_t len) {
  for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(len >> (8 * i));
}

/* The caller's limit and the hard ceiling both bound the length; nothing
 * but the 24 header bytes is needed to decide (decode_exact). */
static void test_length_limits(void **state) {
  uint8_t b[FRAME_HEADER_SIZE];
  frame_header h;
  memcpy(b, oracle_bytes, sizeof b);

  put_length(b, 1000);
  assert_int_equal(decode_exact(b, 1000, &h, NULL, 0), 0);
  assert_int_equal(h.length, 1000);
  put_length(b, 1001);
  expect_reject(b, 1000, BFEED_ETOOBIG);
  put_length(b, 1);
  expect_reject(b, 0, BFEED_ETOOBIG);
  put_length(b, 0);
  assert_int_equal(decode_exact(b, 0, &h, NULL, 0), 0);

  put_length(b, FRAME_MAX_CONTROL);
  assert_int_equal(decode_exact(b, FRAME_MAX_CONTROL, &h, NULL, 0), 0);
  put_length(b, FRAME_MAX_CONTROL + 1);
  expect_reject(b, FRAME_MAX_CONTROL, BFEED_ETOOBIG);

  /* PROTOCOL.md: never more than 2^30, whatever limit the caller passes. */
  assert_int_equal(FRAME_MAX_PAYLOAD, 1u << 30);
  put_length(b, 1u << 30);
  assert_int_equal(decode_exact(b, UINT32_MAX, &h, NULL, 0), 0);
  assert_int_equal(h.length, 1u << 30);
  put_length(b, (1u << 30) + 1);
  expect_reject(b, UINT32_MAX, BFEED_ETOOBIG);
  put_length(b, UINT32_MAX);
  expect_reject(b, UINT32_MAX, BFEED_ETOOBIG);
  expect_reject(b, FRAME_MAX_CONTROL, BFEED_ETOOBIG);
}

/* PROTOCOL.md's order: magic, version, type, length. A header wrong in
 * several ways reports the first. */
static void test_rejection_order(void **state) {
  uint8_t b[FRAME_HEADER_SIZE];
  memcpy(b, oracle_bytes, sizeof b);
  b[0] = 'X';
  b[4] = 9;
  b[5] = 0;
  put_length(b, UINT32_MAX);
  expect_reject(b, 16, BFEED_EPROTO);
  b[0] = 0x42;
  expect_reject(b, 16, BFEED_EVERSION);
  b[4] = 1;
  expect_reject(b, 16, BFEED_EPROTO);
  b[5] = FRAME_ACK;
  expect_reject(b, 16, BFEED_ETOOBIG);
  put_length(b, 16);
  expect_reject(b, 15, BFEED_ETOOBIG);
  frame_header h;
  assert_int_equal(decode_exact(b, 16, &h, NULL, 0), 0);
}

/* "flags: 0; receivers ignore unknown bits". */
static void test_unknown_flags_accepted(void **state) {
  uint8_t b[FRAME_HEADER_SIZE];
  frame_header h;
  memcpy(b, oracle_bytes, sizeof b);
  b[6] = b[7] = 0xff;
  assert_int_equal(decode_exact(b, FRAME_MAX_PAYLOAD, &h, NULL, 0), 0);
  assert_int_equal(h.flags, 0xffff);
}

/* The xorshift buffer and XXH3-64 (seed 0) values of LLVM's
 * unittests/Support/xxhashTest.cpp: every length class of XXH3. */
static void test_checksum_known_answers(void **state) {
  static const struct {
    size_t len;
    uint64_t want;
  } kat[] = {
      {0, 0x2d06800538d394c2ull},    {1, 0xd0d496e05c553485ull},    {2, 0x84d625edb7055eacull},
      {3, 0x6ea2d59aca5c3778ull},    {4, 0xbf65290914e80242ull},    {5, 0xc01fd099ad4fc8e4ull},
      {6, 0x9e3ea8187399caa5ull},    {7, 0x9da8b60540644f5aull},    {8, 0xabc1413da6cd0209ull},
      {9, 0x8bc89400bfed51f6ull},    {16, 0x7e46916754d7c9b8ull},   {17, 0xed4be912ba5f836dull},
      {32, 0xf59b59b58c304fd1ull},   {33, 0x9013fb74ca603e0cull},   {64, 0xfa5271fcce0db1c3ull},
      {65, 0x79c42431727f1012ull},   {96, 0x591ee0ddf9c9ccd1ull},   {97, 0x8ffc6a3111fe19daull},
      {128, 0x06a146ee9a2da378ull},  {129, 0xbc7138129bf065daull},  {403, 0xcefeb3ffa532ad8cull},
      {512, 0xcdfa6b6268e3650full},  {513, 0x4bb5d42742f9765full},  {2048, 0x330ce110cbb79eaeull},
      {2049, 0x3ba6afa0249fef9aull}, {2240, 0xd61d4d2a94e926a8ull}, {2243, 0x0979f786a24edde7ull},
  };
  enum { N = 2243 };
  uint8_t *a = malloc(N);
  assert_non_null(a);
  uint64_t x = 1;
  for (size_t i = 0; i < N; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    a[i] = (uint8_t)x;
  }
  for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
    assert_int_equal(frame_checksum(a, kat[i].len), kat[i].want);
    /* In two pieces (a shared batch's own head, then its data), split anywhere: the same answers. */
    for (size_t cut = 0; cut <= kat[i].len; cut += 1 + kat[i].len / 7)
      assert_int_equal(frame_checksum2(a, cut, a + cut, kat[i].len - cut), kat[i].want);
    frame_header h;
    frame_header_init(&h, FRAME_BATCH, 5, a, (uint32_t)kat[i].len);
    assert_int_equal(h.checksum, kat[i].want);
    assert_int_equal(frame_verify(&h, a), 0);
  }
  free(a);
}

/* frame_header_init: version 1, flags 0; CLOSE and STATS_REQ have empty
 * payloads whose checksum is XXH3 of nothing. */
static void test_init_empty_payload(void **state) {
  frame_header h;
  memset(&h, 0xcc, sizeof h);
  frame_header_init(&h, FRAME_CLOSE, 42, "", 0);
  assert_int_equal(h.version, 1);
  assert_int_equal(h.type, FRAME_CLOSE);
  assert_int_equal(h.flags, 0);
  assert_int_equal(h.stream, 42);
  assert_int_equal(h.length, 0);
  assert_int_equal(h.checksum, 0x2d06800538d394c2ull);
  assert_int_equal(frame_verify(&h, ""), 0);
  assert_int_equal(frame_verify(&h, NULL), 0);
  h.checksum ^= 1;
  assert_int_equal(frame_verify(&h, ""), BFEED_ECHECKSUM);
}

/* Any single changed byte of the payload, or of the checksum field, or a
 * length that does not cover the payload, is caught. */
static void test_checksum_mismatch(void **state) {
  enum { N = 37 };
  uint8_t *p = malloc(N);
  assert_non_null(p);
  for (int i = 0; i < N; i++) p[i] = (uint8_t)(i * 7 + 3);
  frame_header h;
  frame_header_init(&h, FRAME_OPEN, 1, p, N);
  assert_int_equal(frame_verify(&h, p), 0);
  for (int i = 0; i < N; i++) {
    for (int bit = 0; bit < 8; bit++) {
      p[i] ^= (uint8_t)(1u << bit);
      assert_int_equal(frame_verify(&h, p), BFEED_ECHECKSUM);
      p[i] ^= (uint8_t)(1u << bit);
    }
    uint8_t keep = p[i];
    p[i] = (uint8_t)~keep;
    assert_int_equal(frame_verify(&h, p), BFEED_ECHECKSUM);
    p[i] = keep;
  }
  assert_int_equal(frame_verify(&h, p), 0);
  for (int bit = 0; bit < 64; bit++) {
    frame_header bad = h;
    bad.checksum ^= 1ull << bit;
    assert_int_equal(frame_verify(&bad, p), BFEED_ECHECKSUM);
  }
  frame_header shorter = h;
  shorter.length = N - 1;
  assert_int_equal(frame_verify(&shorter, p), BFEED_ECHECKSUM);
  free(p);
}

/* What goes through encode, decode and verify together, as a receiver
 * does it: header first, then the payload. */
static void test_full_frame_path(void **state) {
  const char payload[] = "a payload of some bytes";
  frame_header h, got;
  uint8_t bytes[FRAME_HEADER_SIZE];
  frame_header_init(&h, FRAME_ERROR, 0, payload, sizeof payload);
  frame_header_encode(&h, bytes);
  assert_memory_equal(bytes, oracle_bytes, 4);
  assert_int_equal(bytes[4], 1);
  assert_int_equal(bytes[5], 9);
  assert_int_equal(bytes[12], sizeof payload);
  assert_int_equal(decode_exact(bytes, FRAME_MAX_CONTROL, &got, NULL, 0), 0);
  assert_header_equal(&got, &h);
  assert_int_equal(frame_verify(&got, payload), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_matches_spec_bytes),
      cmocka_unit_test(test_decode_spec_bytes),
      cmocka_unit_test(test_round_trip_every_type),
      cmocka_unit_test(test_type_names),
      cmocka_unit_test(test_bad_magic),
      cmocka_unit_test(test_bad_version),
      cmocka_unit_test(test_bad_type),
      cmocka_unit_test(test_length_limits),
      cmocka_unit_test(test_rejection_order),
      cmocka_unit_test(test_unknown_flags_accepted),
      cmocka_unit_test(test_checksum_known_answers),
      cmocka_unit_test(test_init_empty_payload),
      cmocka_unit_test(test_checksum_mismatch),
      cmocka_unit_test(test_full_frame_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
