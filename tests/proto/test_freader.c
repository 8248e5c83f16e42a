/*
 * test_freader.c -- the incremental frame reader (proto/freader.h).
 *
 * Frames are written with the tests' own builder (tb.h) from PROTOCOL.md,
 * checksums by libxxhash directly. Each valid stream of frames is read in
 * every way a caller may bring bytes (one at a time, in pseudo-random
 * chunks, all at once, pulled); each malformed one must fail with the
 * code PROTOCOL.md gives, at the byte where it becomes knowable, and before
 * any payload memory is asked for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "freader.h"
#include "splitmix.h"
#include "tb.h"

static void frame_bytes(tb *t, int version, int type, uint32_t stream, const uint8_t *p, uint32_t n,
                        uint32_t claimed_len, uint64_t checksum_xor) {
  tb_mem(t, "BFED", 4);
  tb_u8(t, (uint64_t)version);
  tb_u8(t, (uint64_t)type);
  tb_u16(t, 0);
  tb_u32(t, stream);
  tb_u32(t, claimed_len);
  tb_u64(t, XXH3_64bits(p, n) ^ checksum_xor);
  tb_mem(t, p, n);
}
static void good_frame(tb *t, int type, uint32_t stream, const uint8_t *p, uint32_t n) {
  frame_bytes(t, 1, type, stream, p, n, n, 0);
}

/* What a reader saw: the frames it completed, and the first error. */
typedef struct seen {
  int nframes, nheaders;
  uint32_t type[8], stream[8], len[8];
  uint8_t payload[8][600];
  int error;
  const char *why;
} seen;

/* Push src[n] into r in chunks from next_chunk, giving each payload a
 * destination in one piece, or in two (split at `split`) when split > 0. */
static void push(const uint8_t *src, size_t n, size_t (*next_chunk)(uint64_t *), uint64_t seed, size_t split,
                 uint32_t limit, seen *s) {
  freader r;
  assert_int_equal(freader_init(&r, limit), 0);
  memset(s, 0, sizeof *s);
  size_t at = 0;
  while (at < n && !s->error) {
    size_t len = next_chunk(&seed);
    if (len > n - at) len = n - at;
    while (len > 0 && !s->error) {
      size_t used;
      int ev = freader_feed(&r, src + at, len, &used);
      assert_true(used <= len);
      at += used, len -= used;
      if (ev < 0) {
        s->error = ev, s->why = r.why;
      } else if (ev == FREADER_HEADER) {
        s->nheaders++;
        size_t first = split && split < r.h.length ? split : r.h.length;
        assert_int_equal(freader_payload_left(&r), r.h.length);
        assert_int_equal(freader_payload(&r, s->payload[s->nframes], first), 0);
      } else if (ev == FREADER_SEGMENT) {
        size_t done = r.h.length - freader_payload_left(&r);
        assert_int_equal(done, split);
        assert_int_equal(freader_payload(&r, s->payload[s->nframes] + done, freader_payload_left(&r)), 0);
      } else if (ev == FREADER_FRAME) {
        int k = s->nframes++;
        s->type[k] = r.h.type, s->stream[k] = r.h.stream, s->len[k] = r.h.length;
        assert_false(freader_in_frame(&r));
      } else {
        assert_int_equal(ev, FREADER_MORE);
        assert_int_equal(len, 0);
      }
    }
  }
  freader_free(&r);
}

static size_t chunk_one(uint64_t *s) { (void)s; return 1; }
static size_t chunk_all(uint64_t *s) { (void)s; return SIZE_MAX; }
static size_t chunk_random(uint64_t *s) { return 1 + splitmix64_next(s) % 61; }

/* Three frames back to back: a control frame, an empty one, a big one. */
static size_t three_frames(tb *t, uint8_t big[500]) {
  static const uint8_t small[] = {1, 2, 3, 4, 5};
  for (int i = 0; i < 500; i++) big[i] = (uint8_t)(i * 13 + 1);
  t->n = 0;
  good_frame(t, FRAME_OPEN_OK, 3, small, sizeof small);
  good_frame(t, FRAME_CLOSE, 4, NULL, 0);
  good_frame(t, FRAME_BATCH, 5, big, 500);
  return t->n;
}

static void expect_three(const seen *s, const uint8_t *big) {
  assert_int_equal(s->error, 0);
  assert_int_equal(s->nframes, 3);
  assert_int_equal(s->nheaders, 2); /* the empty frame comes whole */
  assert_int_equal(s->type[0], FRAME_OPEN_OK);
  assert_int_equal(s->stream[0], 3);
  assert_int_equal(s->len[0], 5);
  assert_memory_equal(s->payload[0], "\1\2\3\4\5", 5);
  assert_int_equal(s->type[1], FRAME_CLOSE);
  assert_int_equal(s->len[1], 0);
  assert_int_equal(s->type[2], FRAME_BATCH);
  assert_int_equal(s->stream[2], 5);
  assert_memory_equal(s->payload[2], big, 500);
}

static void test_push_every_chunking(void **state) {
  tb t;
  uint8_t big[500];
  size_t n = three_frames(&t, big);
  seen *s = malloc(sizeof *s);
  assert_non_null(s);
  size_t (*chunkers[])(uint64_t *) = {chunk_one, chunk_all, chunk_random};
  for (int c = 0; c < 3; c++)
    for (uint64_t seed = 0; seed < (c == 2 ? 50u : 1u); seed++)
      for (size_t split = 0; split <= 36; split += 36) {
        push(t.b, n, chunkers[c], seed, split, FRAME_MAX_CONTROL, s);
        expect_three(s, big);
      }
  free(s);
}

/* Pull: the reader says where and how much; the caller brings less. */
static void test_pull(void **state) {
  tb t;
  uint8_t big[500], got[500];
  size_t n = three_frames(&t, big), at = 0;
  freader r;
  assert_int_equal(freader_init(&r, 1000), 0);
  int frames = 0;
  uint64_t seed = 7;
  while (at < n) {
    size_t want;
    uint8_t *p = freader_want(&r, &want);
    assert_non_null(p);
    assert_true(want >= 1);
    size_t k = 1 + splitmix64_next(&seed) % want;
    if (k > n - at) k = n - at;
    memcpy(p, t.b + at, k);
    at += k;
    int ev = freader_got(&r, k);
    assert_true(ev >= 0);
    if (ev == FREADER_HEADER) {
      size_t none;
      assert_null(freader_want(&r, &none)); /* no destination yet */
      assert_int_equal(none, 0);
      assert_int_equal(freader_payload(&r, got, r.h.length), 0);
    }
    if (ev == FREADER_FRAME && ++frames == 3) assert_memory_equal(got, big, 500);
  }
  assert_int_equal(frames, 3);
  freader_free(&r);
}

/* Malformed headers fail at byte 24, before any HEADER event. */
static void expect_header_error(int version, int type, uint32_t claimed, uint32_t limit, int want_rc) {
  tb t = {.n = 0};
  uint8_t p[4] = {9, 9, 9, 9};
  frame_bytes(&t, version, type, 1, p, 4, claimed, 0);
  seen s;
  push(t.b, t.n, chunk_one, 0, 0, limit, &s);
  assert_int_equal(s.error, want_rc);
  assert_int_equal(s.nheaders, 0);
  assert_true(s.why && strlen(s.why) > 0);
}

static void test_bad_headers(void **state) {
  expect_header_error(0, FRAME_HELLO, 4, 100, BFEED_EVERSION);
  expect_header_error(2, FRAME_HELLO, 4, 100, BFEED_EVERSION);
  expect_header_error(1, 0, 4, 100, BFEED_EPROTO);
  expect_header_error(1, FRAME_TYPE_MAX_ + 1, 4, 100, BFEED_EPROTO);
  expect_header_error(1, FRAME_BATCH, 101, 100, BFEED_ETOOBIG);        /* over the reader's limit */
  expect_header_error(1, FRAME_BATCH, FRAME_MAX_PAYLOAD + 1, UINT32_MAX, BFEED_ETOOBIG); /* over the protocol's */
  /* Bad magic: any of its four bytes. */
  for (int i = 0; i < 4; i++) {
    tb t = {.n = 0};
    good_frame(&t, FRAME_HELLO, 0, NULL, 0);
    t.b[i] ^= 0x20;
    seen s;
    push(t.b, t.n, chunk_all, 0, 0, 100, &s);
    assert_int_equal(s.error, BFEED_EPROTO);
  }
}

/* The limit is read per frame: the owner may raise it between frames. */
static void test_limit_between_frames(void **state) {
  uint8_t p[64] = {0};
  tb t = {.n = 0};
  good_frame(&t, FRAME_STATS, 0, p, 64);
  freader r;
  assert_int_equal(freader_init(&r, 32), 0);
  size_t used;
  assert_int_equal(freader_feed(&r, t.b, t.n, &used), BFEED_ETOOBIG);
  freader_free(&r);
  assert_int_equal(freader_init(&r, 32), 0);
  r.limit = 64;
  assert_int_equal(freader_feed(&r, t.b, t.n, &used), FREADER_HEADER);
  freader_free(&r);
}

/* A corrupted payload or checksum byte: ECHECKSUM once the payload is in,
 * also when the payload came in two parts. */
static void test_checksum_mismatch(void **state) {
  uint8_t p[80];
  for (int i = 0; i < 80; i++) p[i] = (uint8_t)i;
  for (size_t flip = 0; flip < FRAME_HEADER_SIZE + sizeof p; flip++) {
    if (flip < 16) continue; /* magic..length: other errors, tested above */
    tb t = {.n = 0};
    good_frame(&t, FRAME_BATCH, 1, p, sizeof p);
    t.b[flip] ^= 0x01;
    seen s;
    push(t.b, t.n, chunk_random, flip, flip % 2 ? 36 : 0, 1000, &s);
    assert_int_equal(s.error, BFEED_ECHECKSUM);
    assert_int_equal(s.nframes, 0);
    assert_non_null(strstr(s.why, "checksum"));
  }
}

/* A stream cut anywhere: no frame, and in_frame says a frame was cut. */
static void test_truncated(void **state) {
  uint8_t p[40] = {1};
  tb t = {.n = 0};
  good_frame(&t, FRAME_STATS, 2, p, sizeof p);
  uint8_t dst[40];
  for (size_t cut = 0; cut < t.n; cut++) {
    freader r;
    assert_int_equal(freader_init(&r, 100), 0);
    size_t at = 0, used;
    int ev = FREADER_MORE;
    while (at < cut) {
      ev = freader_feed(&r, t.b + at, cut - at, &used);
      at += used;
      assert_true(ev == FREADER_MORE || ev == FREADER_HEADER);
      if (ev == FREADER_HEADER) assert_int_equal(freader_payload(&r, dst, sizeof dst), 0);
    }
    assert_int_equal(freader_in_frame(&r), cut > 0);
    freader_free(&r);
  }
}

/* Misuse is refused, never an overrun: bytes before a destination, a
 * destination longer than the payload, out of turn, or empty, more bytes
 * reported than asked for, and anything after an error. */
static void test_misuse(void **state) {
  uint8_t p[10] = {0}, dst[20];
  tb t = {.n = 0};
  good_frame(&t, FRAME_STATS, 2, p, sizeof p);
  freader r;
  size_t used, n;
  assert_int_equal(freader_init(&r, 100), 0);
  assert_int_equal(freader_payload(&r, dst, 1), BFEED_EINVAL); /* no header yet */
  freader_free(&r);

  assert_int_equal(freader_init(&r, 100), 0);
  assert_int_equal(freader_feed(&r, t.b, t.n, &used), FREADER_HEADER);
  assert_int_equal(used, FRAME_HEADER_SIZE);
  assert_int_equal(freader_feed(&r, t.b + used, 1, &used), BFEED_EINVAL);
  assert_int_equal(used, 0);
  freader_free(&r);

  int bad_sizes[] = {0, 11};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(freader_init(&r, 100), 0);
    assert_int_equal(freader_feed(&r, t.b, FRAME_HEADER_SIZE, &used), FREADER_HEADER);
    assert_int_equal(freader_payload(&r, dst, (size_t)bad_sizes[i]), BFEED_EINVAL);
    assert_null(freader_want(&r, &n)); /* failed: unusable */
    assert_int_equal(freader_feed(&r, t.b + FRAME_HEADER_SIZE, 10, &used), BFEED_EINVAL);
    freader_free(&r);
  }

  assert_int_equal(freader_init(&r, 100), 0);
  assert_non_null(freader_want(&r, &n));
  assert_int_equal(n, FRAME_HEADER_SIZE);
  assert_int_equal(freader_got(&r, FRAME_HEADER_SIZE + 1), BFEED_EINVAL);
  freader_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_push_every_chunking),
      cmocka_unit_test(test_pull),
      cmocka_unit_test(test_bad_headers),
      cmocka_unit_test(test_limit_between_frames),
      cmocka_unit_test(test_checksum_mismatch),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
