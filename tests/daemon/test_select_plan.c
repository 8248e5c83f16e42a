/*
 * test_select_plan.c -- daemon/serve/select.c against a brute-force oracle:
 * walking every global batch number of the range in order and keeping
 * those of the residue class gives the same (epoch, index) for each seq,
 * and the same count, as select_init/select_at's closed form; near 2^64
 * the 128-bit arithmetic does not wrap; REQUEST's bounds are those of
 * PROTOCOL.md, all or none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "msg.h"
#include "select.h"

static bfeed_stream_opts opts(int select, uint64_t mod, uint64_t rem, uint64_t epoch, uint64_t batch, uint64_t epochs) {
  bfeed_stream_opts o;
  msg_opts_defaults(&o);
  o.select = (uint8_t)select, o.select_mod = mod, o.select_rem = rem;
  o.epoch = epoch, o.batch_index = batch, o.epochs = epochs;
  return o;
}

/* stream.c's rule: a start at an epoch's end is the next epoch's batch 0. */
static void plan(select_plan *p, const bfeed_stream_opts *o, uint64_t bpe, uint64_t *end) {
  uint64_t e = o->epoch, b = o->batch_index;
  if (b == bpe) e++, b = 0;
  assert_int_equal(select_init(p, o, bpe, e, b, end), 0);
}

static void test_residue_matches_enumeration(void **state) {
  (void)state;
  for (uint64_t bpe = 1; bpe <= 7; bpe++)
    for (uint64_t mod = 1; mod <= 5; mod++)
      for (uint64_t rem = 0; rem < mod; rem++)
        for (uint64_t e0 = 0; e0 <= 2; e0++)
          for (uint64_t b0 = 0; b0 <= bpe; b0++)
            for (uint64_t epochs = 1; epochs <= 3; epochs++) {
              bfeed_stream_opts o = opts(mod == 1 && rem == 0 ? BFEED_SELECT_ALL : BFEED_SELECT_RESIDUE, mod, rem,
                                         e0, b0, epochs);
              select_plan p;
              uint64_t end, seq = 0;
              plan(&p, &o, bpe, &end);
              /* The range: from (e0, b0) to the end of epoch e0 + epochs - 1. */
              for (uint64_t e = e0; e < e0 + epochs; e++)
                for (uint64_t i = (e == e0 ? b0 : 0); i < bpe; i++) {
                  if ((e * bpe + i) % mod != rem) continue;
                  uint64_t ge, gi;
                  assert_true(seq < end);
                  select_at(&p, seq++, &ge, &gi);
                  assert_int_equal(ge, e);
                  assert_int_equal(gi, i);
                }
              assert_int_equal(end, seq);
              select_free(&p);
            }
}

static void test_forever_and_huge_epochs(void **state) {
  (void)state;
  select_plan p;
  uint64_t end, e, i;
  /* Forever, from an epoch whose first batch number passes 2^64. */
  bfeed_stream_opts o = opts(BFEED_SELECT_RESIDUE, 3, 2, UINT64_MAX / 2, 1, 0);
  plan(&p, &o, 10, &end);
  assert_int_equal(end, UINT64_MAX);
  select_at(&p, 0, &e, &i);
  /* The start g = (2^63 - 1) x 10 + 1: 2^63 mod 3 = 2, so (2^63 - 1) mod 3 = 1
   * and g mod 3 = (1 x 10 + 1) mod 3 = 2: the start itself is in the class. */
  assert_int_equal(e, UINT64_MAX / 2);
  assert_int_equal(i, 1);
  select_at(&p, 1000, &e, &i);
  assert_int_equal(e, UINT64_MAX / 2 + 300);
  assert_int_equal(i, 1);
  select_free(&p);
  /* Forever from the last epoch there is, 2^64 - 1: its batches, then the
   * end, never epoch 0 (issue 31); from the one before it, two epochs. */
  o = opts(BFEED_SELECT_ALL, 1, 0, UINT64_MAX, 0, 0);
  plan(&p, &o, 10, &end);
  assert_int_equal(end, 10);
  select_at(&p, 9, &e, &i);
  assert_true(e == UINT64_MAX && i == 9);
  select_free(&p);
  o = opts(BFEED_SELECT_ALL, 1, 0, UINT64_MAX - 1, 0, 0);
  plan(&p, &o, 10, &end);
  assert_int_equal(end, 20);
  select_free(&p);
  /* A count of epochs x bpe past 2^64 serves forever rather than wrapping. */
  o = opts(BFEED_SELECT_ALL, 1, 0, 0, 0, UINT64_MAX);
  plan(&p, &o, 1000, &end);
  assert_int_equal(end, UINT64_MAX);
  select_free(&p);
}

static void test_request_bounds(void **state) {
  (void)state;
  select_plan p;
  uint64_t end, e, i;
  char err[256];
  msg_request *m = calloc(1, sizeof *m);
  bfeed_stream_opts o = opts(BFEED_SELECT_ON_DEMAND, 1, 0, 4, 0, 2);
  plan(&p, &o, 5, &end);
  assert_int_equal(end, 0);
  m->count = 2;
  m->b[0].epoch = 5, m->b[0].index = 4;
  m->b[1].epoch = 4, m->b[1].index = 0;
  assert_int_equal(select_request(&p, m, 0, 4, err, sizeof err), 0);
  assert_int_equal(p.requested, 2);
  select_at(&p, 0, &e, &i);
  assert_true(e == 5 && i == 4);
  select_at(&p, 1, &e, &i);
  assert_true(e == 4 && i == 0);
  /* Out of range, anywhere in the list: nothing is taken. */
  const uint64_t bad[][2] = {{4, 5}, {3, 0}, {6, 0}, {UINT64_MAX, 0}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    m->b[1].epoch = bad[k][0], m->b[1].index = bad[k][1];
    assert_int_equal(select_request(&p, m, 0, 4, err, sizeof err), BFEED_EINVAL);
    assert_non_null(strstr(err, "entry 1"));
    assert_int_equal(p.requested, 2);
  }
  /* 1024 + window unconsumed at most; consuming makes room. */
  m->count = MSG_MAX_REQUEST;
  for (uint32_t k = 0; k < m->count; k++) m->b[k].epoch = 4, m->b[k].index = k % 5;
  assert_int_equal(select_request(&p, m, 0, 4, err, sizeof err), 0);
  m->count = 3;
  assert_int_equal(select_request(&p, m, 0, 4, err, sizeof err), BFEED_ELIMIT);
  assert_int_equal(p.requested, MSG_MAX_REQUEST + 2);
  assert_int_equal(select_request(&p, m, 1, 4, err, sizeof err), 0);
  /* The ring still holds every entry not consumed. */
  select_at(&p, MSG_MAX_REQUEST + 2, &e, &i);
  assert_true(e == 4 && i == 0);
  select_at(&p, 1, &e, &i);
  assert_true(e == 4 && i == 0);
  select_free(&p);
  /* Not on demand: refused. */
  o = opts(BFEED_SELECT_ALL, 1, 0, 0, 0, 0);
  plan(&p, &o, 5, &end);
  assert_int_equal(select_request(&p, m, 0, 4, err, sizeof err), BFEED_EINVAL);
  select_free(&p);
  free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_residue_matches_enumeration),
      cmocka_unit_test(test_forever_and_huge_epochs),
      cmocka_unit_test(test_request_bounds),
  };
  return cmocka_run_group_tests_name("select_plan", tests, NULL, NULL);
}
