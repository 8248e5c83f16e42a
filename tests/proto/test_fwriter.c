/*
 * test_fwriter.c -- the fixed-capacity frame writer (proto/fwriter.h).
 *
 * Oracles: frame bytes written with the tests' own builder (tb.h) from
 * PROTOCOL.md, the checksum from libxxhash directly, and the growable-buffer
 * path (msg_begin/msg_finish) that fwriter must match byte for byte. Memory
 * past the capacity is guarded: a writer that overruns it fails the test
 * even without a sanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#include "bfeed_types.h"
#include "frame.h"
#include "fwriter.h"
#include "msg.h"
#include "tb.h"

#define GUARD 0xa7
#define GUARD_BYTES 256

/* Memory of cap bytes followed by guard bytes. */
static uint8_t *guarded(size_t cap) {
  uint8_t *m = malloc(cap + GUARD_BYTES);
  assert_non_null(m);
  memset(m, 0x11, cap);
  memset(m + cap, GUARD, GUARD_BYTES);
  return m;
}
static void assert_guard(const uint8_t *m, size_t cap) {
  for (size_t i = 0; i < GUARD_BYTES; i++)
    if (m[cap + i] != GUARD) fail_msg("byte %zu past the capacity was written", i);
}

/* The frame PROTOCOL.md prescribes for a payload. */
static void spec_frame(tb *t, int type, uint32_t stream, const uint8_t *payload, size_t n) {
  t->n = 0;
  tb_mem(t, "BFED", 4);
  tb_u8(t, 1);
  tb_u8(t, (uint64_t)type);
  tb_u16(t, 0);
  tb_u32(t, stream);
  tb_u32(t, n);
  tb_u64(t, XXH3_64bits(payload, n));
  tb_mem(t, payload, n);
}

static void test_layout(void **state) {
  uint8_t payload[100];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 7 + 3);
  size_t cap = FRAME_HEADER_SIZE + sizeof payload;
  uint8_t *m = guarded(cap);
  fwriter f;
  fwriter_init(&f, m, cap);
  assert_int_equal(fwriter_payload_len(&f), 0);
  uint8_t *p = fwriter_append(&f, 40);
  assert_ptr_equal(p, m + FRAME_HEADER_SIZE);
  memcpy(p, payload, 40);
  wbuf_bytes(&f.w, payload + 40, 60); /* encoders write through f.w */
  assert_int_equal(fwriter_payload_len(&f), 100);
  char why[256] = "";
  assert_int_equal(fwriter_finish(&f, FRAME_STATS, 0x01020304, why, sizeof why), 0);
  tb want;
  spec_frame(&want, FRAME_STATS, 0x01020304, payload, sizeof payload);
  assert_int_equal(f.w.len, want.n);
  assert_ptr_equal(f.w.data, m);
  assert_memory_equal(m, want.b, want.n);
  assert_guard(m, cap);
  free(m);
}

static void test_empty_payload(void **state) {
  uint8_t m[FRAME_HEADER_SIZE];
  fwriter f;
  fwriter_init(&f, m, sizeof m);
  assert_int_equal(fwriter_finish(&f, FRAME_CLOSE, 9, NULL, 0), 0);
  tb want;
  spec_frame(&want, FRAME_CLOSE, 9, NULL, 0);
  assert_int_equal(f.w.len, FRAME_HEADER_SIZE);
  assert_memory_equal(m, want.b, want.n);
}

/* One byte over the capacity fails, whichever call brings it. */
static void test_capacity_overflow(void **state) {
  for (int how = 0; how < 3; how++) {
    size_t cap = FRAME_HEADER_SIZE + 50;
    uint8_t *m = guarded(cap);
    fwriter f;
    fwriter_init(&f, m, cap);
    assert_non_null(fwriter_append(&f, 20));
    if (how == 0) assert_null(fwriter_append(&f, 31));
    if (how == 1) wbuf_u64(&f.w, 1), wbuf_u64(&f.w, 2), wbuf_u64(&f.w, 3), wbuf_u64(&f.w, 4);
    if (how == 2) {
      size_t room;
      assert_non_null(fwriter_room(&f, &room));
      assert_int_equal(room, 30);
      fwriter_commit(&f, 31);
    }
    /* Latched: what would fit now fails too. */
    assert_null(fwriter_append(&f, 1));
    size_t room = 99;
    assert_null(fwriter_room(&f, &room));
    assert_int_equal(room, 0);
    char why[256] = "";
    assert_int_equal(fwriter_finish(&f, FRAME_BATCH, 1, why, sizeof why), BFEED_ETOOBIG);
    assert_non_null(strstr(why, "capacity"));
    assert_guard(m, cap);
    free(m);
  }
}

/* Filling the capacity exactly is fine, with room and commit as a
 * compressor uses them. */
static void test_exact_fill_room_commit(void **state) {
  size_t cap = FRAME_HEADER_SIZE + 64;
  uint8_t *m = guarded(cap);
  fwriter f;
  fwriter_init(&f, m, cap);
  memset(fwriter_append(&f, 14), 0x42, 14);
  size_t room;
  uint8_t *dst = fwriter_room(&f, &room);
  assert_ptr_equal(dst, m + FRAME_HEADER_SIZE + 14);
  assert_int_equal(room, 50);
  memset(dst, 0x43, 50);
  fwriter_commit(&f, 50);
  fwriter_room(&f, &room);
  assert_int_equal(room, 0);
  assert_int_equal(fwriter_finish(&f, FRAME_BATCH, 5, NULL, 0), 0);
  frame_header h;
  assert_int_equal(frame_header_decode(m, FRAME_MAX_PAYLOAD, &h, NULL, 0), 0);
  assert_int_equal(h.length, 64);
  assert_int_equal(frame_verify(&h, m + FRAME_HEADER_SIZE), 0);
  assert_guard(m, cap);
  free(m);
}

/* No memory, or less than a header: nothing is written, finish says why. */
static void test_no_memory(void **state) {
  fwriter f;
  fwriter_init(&f, NULL, 1000);
  assert_null(fwriter_append(&f, 1));
  assert_int_equal(fwriter_finish(&f, FRAME_BATCH, 1, NULL, 0), BFEED_ETOOBIG);
  uint8_t *m = guarded(FRAME_HEADER_SIZE - 1);
  fwriter_init(&f, m, FRAME_HEADER_SIZE - 1);
  assert_int_equal(fwriter_finish(&f, FRAME_BATCH, 1, NULL, 0), BFEED_ETOOBIG);
  for (size_t i = 0; i < FRAME_HEADER_SIZE - 1; i++) assert_int_equal(m[i], 0x11);
  assert_guard(m, FRAME_HEADER_SIZE - 1);
  free(m);
}

/* A payload over FRAME_MAX_PAYLOAD is refused even when the memory holds
 * it; the memory is reserved, never touched. */
static void test_over_protocol_limit(void **state) {
  size_t cap = FRAME_HEADER_SIZE + (size_t)FRAME_MAX_PAYLOAD + 1;
  uint8_t *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) skip();
  fwriter f;
  fwriter_init(&f, m, cap);
  fwriter_commit(&f, (size_t)FRAME_MAX_PAYLOAD + 1);
  char why[256] = "";
  assert_int_equal(fwriter_finish(&f, FRAME_BATCH, 1, why, sizeof why), BFEED_ETOOBIG);
  assert_non_null(strstr(why, "FRAME_MAX_PAYLOAD"));
  munmap(m, cap);
}

/* A BATCH built through fwriter at the size msg_batch_head_size gives is
 * the frame the growable path builds, for several tensor tables. */
static void test_batch_matches_growable_path(void **state) {
  static const char *names[] = {"image", "t", "a-name-of-thirty-one-characters"};
  for (int nt = 0; nt <= 3; nt++) {
    msg_batch m;
    memset(&m, 0, sizeof m);
    m.epoch = 3, m.index = 0x1234567890ull, m.seq = 9, m.codec = BFEED_CODEC_NONE;
    m.ntensors = (uint32_t)nt;
    uint64_t off = 0;
    for (int i = 0; i < nt; i++) {
      msg_tensor *t = &m.t[i];
      snprintf(t->name, sizeof t->name, "%s", names[i]);
      t->dtype = BFEED_DTYPE_U8;
      t->ndim = (uint8_t)(i * 3 + 1);
      for (int d = 0; d < t->ndim; d++) t->shape[d] = 1;
      t->shape[0] = 5;
      t->offset = off;
      t->nbytes = 5;
      off += 64;
    }
    m.raw_size = nt ? off - 59 : 0;
    wbuf g;
    wbuf_init(&g);
    size_t at = msg_begin(&g);
    msg_batch_encode_head(&g, &m);
    size_t head = g.len - FRAME_HEADER_SIZE;
    assert_int_equal(msg_batch_head_size(&m), head);
    for (uint64_t i = 0; i < m.raw_size; i++) wbuf_u8(&g, (uint8_t)i);
    assert_int_equal(msg_finish(&g, at, FRAME_BATCH, 7), 0);

    size_t cap = FRAME_HEADER_SIZE + msg_batch_head_size(&m) + m.raw_size;
    uint8_t *mem = guarded(cap);
    fwriter f;
    fwriter_init(&f, mem, cap);
    msg_batch_encode_head(&f.w, &m);
    uint8_t *raw = fwriter_append(&f, m.raw_size);
    assert_true(raw || m.raw_size == 0);
    for (uint64_t i = 0; i < m.raw_size; i++) raw[i] = (uint8_t)i;
    assert_int_equal(fwriter_finish(&f, FRAME_BATCH, 7, NULL, 0), 0);
    assert_int_equal(f.w.len, g.len);
    assert_memory_equal(mem, g.data, g.len);
    assert_guard(mem, cap);
    free(mem);
    wbuf_free(&g);
  }
}

/* A fixed wbuf never frees or reallocates the caller's memory (stack
 * memory here: freeing it would crash). */
static void test_fixed_wbuf_owns_nothing(void **state) {
  uint8_t m[8];
  wbuf w;
  wbuf_init_fixed(&w, m, sizeof m);
  wbuf_u64(&w, 0x0807060504030201ull);
  assert_int_equal(w.len, 8);
  assert_int_equal(m[0], 1);
  assert_null(wbuf_reserve(&w, 1));
  assert_true(w.failed);
  assert_ptr_equal(w.data, m);
  wbuf_free(&w);
  assert_null(w.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_empty_payload),
      cmocka_unit_test(test_capacity_overflow),
      cmocka_unit_test(test_exact_fill_room_commit),
      cmocka_unit_test(test_no_memory),
      cmocka_unit_test(test_over_protocol_limit),
      cmocka_unit_test(test_batch_matches_growable_path),
      cmocka_unit_test(test_fixed_wbuf_owns_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
