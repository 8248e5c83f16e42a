/*
 * test_msg_shm.c -- the shared-memory messages (PROTOCOL.md "Shared
 * memory"): SHM_RING, BATCH_SHM, ACK with releases, OPEN's transport.
 *
 * Payloads are written byte by byte here from the spec (tb.h), not by the
 * encoders, which are checked against them; every malformed form is
 * refused, and a BATCH_SHM cannot point outside its ring.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "frame.h"
#include "msg.h"
#include "tb.h"

/* A frame of `type` whose payload enc writes from m, into w (the caller
 * frees it); *p, *n: the payload, which must be want's bytes (want NULL:
 * any). */
static void encode(wbuf *w, int type, void (*enc)(wbuf *, const void *), const void *m, const tb *want,
                   const uint8_t **p, size_t *n) {
  wbuf_init(w);
  size_t at = msg_begin(w);
  enc(w, m);
  assert_int_equal(msg_finish(w, at, type, 1), 0);
  *p = w->data + FRAME_HEADER_SIZE;
  *n = w->len - FRAME_HEADER_SIZE;
  if (!want) return;
  assert_int_equal(*n, want->n);
  assert_memory_equal(*p, want->b, *n);
}

static void enc_ring(wbuf *w, const void *m) { msg_shm_ring_encode(w, m); }
static void enc_ack(wbuf *w, const void *m) { msg_ack_encode(w, m); }
static void enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }
static void enc_batch_slot2(wbuf *w, const void *m) { msg_batch_shm_encode(w, m, 2); }

static void test_shm_ring(void **state) {
  (void)state;
  tb want = {0};
  tb_u32(&want, 6);
  tb_u64(&want, 4096);
  tb_u64(&want, 6 * 4096);
  msg_shm_ring r = {.slots = 6, .slot_size = 4096, .size = 6 * 4096}, got;
  wbuf w;
  const uint8_t *p;
  size_t n;
  encode(&w, FRAME_SHM_RING, enc_ring, &r, &want, &p, &n);
  char why[256] = "";
  assert_int_equal(msg_shm_ring_decode(p, n, &got, why, sizeof why), 0);
  assert_int_equal(got.slots, 6);
  assert_int_equal(got.slot_size, 4096);
  assert_int_equal(msg_shm_ring_decode(p, n - 1, &got, why, sizeof why), BFEED_EPROTO);
  const struct {
    uint32_t slots;
    uint64_t slot_size, size;
  } bad[] = {{0, 64, 0}, {65, 64, 65 * 64}, {2, 100, 200}, {2, 0, 0}, {2, 64, 192}, {1, 1ull << 40, 1ull << 40}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tb b = {0};
    tb_u32(&b, bad[i].slots);
    tb_u64(&b, bad[i].slot_size);
    tb_u64(&b, bad[i].size);
    assert_int_equal(msg_shm_ring_decode(b.b, b.n, &got, why, sizeof why), BFEED_EPROTO);
  }
  wbuf_free(&w);
}

/* A BATCH_SHM of one u8 tensor [n] at offset 0 in `slot`. */
static void shm_batch_bytes(tb *b, uint8_t codec, uint64_t raw_size, uint64_t n, uint32_t slot) {
  b->n = 0;
  tb_u64(b, 2);
  tb_u64(b, 3);
  tb_u64(b, 4);
  tb_u8(b, codec);
  tb_u8(b, 1);
  tb_u16(b, 0);
  tb_u64(b, raw_size);
  tb_u8(b, 1);
  tb_u8(b, 'x');
  tb_u8(b, BFEED_DTYPE_U8);
  tb_u8(b, 1);
  tb_u64(b, n);
  tb_u64(b, 0);
  tb_u64(b, n);
  tb_u32(b, slot);
}

static void test_batch_shm(void **state) {
  (void)state;
  msg_shm_ring ring = {.slots = 3, .slot_size = 128, .size = 384};
  msg_batch m, got;
  memset(&m, 0, sizeof m);
  m.epoch = 2, m.index = 3, m.seq = 4, m.ntensors = 1, m.raw_size = 100;
  strcpy(m.t[0].name, "x");
  m.t[0].dtype = BFEED_DTYPE_U8, m.t[0].ndim = 1, m.t[0].shape[0] = 100, m.t[0].nbytes = 100;
  wbuf w;
  const uint8_t *p;
  size_t n;
  tb want = {0};
  shm_batch_bytes(&want, 0, 100, 100, 2);
  encode(&w, FRAME_BATCH_SHM, enc_batch_slot2, &m, &want, &p, &n);
  assert_int_equal(n, msg_batch_shm_size(&m));
  uint32_t slot;
  char why[256] = "";
  assert_int_equal(msg_batch_shm_decode(p, n, &ring, &got, &slot, why, sizeof why), 0);
  assert_int_equal(slot, 2);
  assert_int_equal(got.seq, 4);
  assert_int_equal(got.raw_size, 100);
  /* Outside the ring, past the slot, a codec, bytes after the table: refused. */
  shm_batch_bytes(&want, 0, 100, 100, 3);
  assert_int_equal(msg_batch_shm_decode(want.b, want.n, &ring, &got, &slot, why, sizeof why), BFEED_EPROTO);
  shm_batch_bytes(&want, 0, 129, 129, 0);
  assert_int_equal(msg_batch_shm_decode(want.b, want.n, &ring, &got, &slot, why, sizeof why), BFEED_EPROTO);
  shm_batch_bytes(&want, 0, 100, 101, 0);
  assert_int_equal(msg_batch_shm_decode(want.b, want.n, &ring, &got, &slot, why, sizeof why), BFEED_EPROTO);
  shm_batch_bytes(&want, BFEED_CODEC_ZSTD, 100, 100, 0);
  assert_int_equal(msg_batch_shm_decode(want.b, want.n, &ring, &got, &slot, why, sizeof why), BFEED_EPROTO);
  shm_batch_bytes(&want, 0, 100, 100, 0);
  tb_u8(&want, 0);
  assert_int_equal(msg_batch_shm_decode(want.b, want.n, &ring, &got, &slot, why, sizeof why), BFEED_EPROTO);
  for (size_t k = 0; k < 40; k++)
    assert_int_equal(msg_batch_shm_decode(p, k, &ring, &got, &slot, why, sizeof why), BFEED_EPROTO);
  wbuf_free(&w);
}

static void test_ack_releases(void **state) {
  (void)state;
  msg_ack a = {.consumed = 9, .nreleased = 2, .released = {5, 7}}, got;
  wbuf w;
  const uint8_t *p;
  size_t n;
  tb want = {0};
  tb_u64(&want, 9);
  tb_u32(&want, 2);
  tb_u64(&want, 5);
  tb_u64(&want, 7);
  encode(&w, FRAME_ACK, enc_ack, &a, &want, &p, &n);
  char why[256] = "";
  assert_int_equal(msg_ack_decode(p, n, &got, why, sizeof why), 0);
  assert_int_equal(got.consumed, 9);
  assert_int_equal(got.nreleased, 2);
  assert_int_equal(got.released[1], 7);
  assert_int_equal(msg_ack_decode(p, 8, &got, why, sizeof why), 0); /* the plain ACK */
  assert_int_equal(got.nreleased, 0);
  for (size_t k = 0; k < n; k++)
    if (k != 8) assert_int_equal(msg_ack_decode(p, k, &got, why, sizeof why), BFEED_EPROTO);
  tb z = {0};
  tb_u64(&z, 1);
  tb_u32(&z, 0); /* a count of 0 is the plain form's to say */
  assert_int_equal(msg_ack_decode(z.b, z.n, &got, why, sizeof why), BFEED_EPROTO);
  wbuf_free(&w);
}

/* transport is tag 23 WITHOUT the critical bit, sent only when not socket. */
static void test_open_transport(void **state) {
  (void)state;
  msg_open m, got;
  memset(&m, 0, sizeof m);
  strcpy(m.dataset, "d");
  msg_opts_defaults(&m.opts);
  const uint8_t *p;
  size_t n[2];
  for (int shm = 0; shm < 2; shm++) {
    m.opts.transport = shm ? BFEED_TRANSPORT_SHM : BFEED_TRANSPORT_SOCKET;
    wbuf w;
    encode(&w, FRAME_OPEN, enc_open, &m, NULL, &p, &n[shm]);
    char why[256] = "";
    assert_int_equal(msg_open_decode(p, n[shm], &got, why, sizeof why), 0);
    assert_int_equal(got.opts.transport, m.opts.transport);
    if (shm) { /* the last item: tag 23, length 1, value 1 */
      const uint8_t tail[] = {23, 0, 1, 0, 0, 0, 1};
      assert_memory_equal(p + n[shm] - sizeof tail, tail, sizeof tail);
    }
    wbuf_free(&w);
  }
  assert_int_equal(n[1], n[0] + 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shm_ring),
      cmocka_unit_test(test_batch_shm),
      cmocka_unit_test(test_ack_releases),
      cmocka_unit_test(test_open_transport),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
