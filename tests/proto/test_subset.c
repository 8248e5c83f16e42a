/*
 * test_subset.c -- proto/subset.c against the definition it implements,
 * enumerated: for every select (all, residue R/M, stride M), batches per
 * epoch, start and count in small ranges, the positions a stream serves are
 * the global numbers g = epoch * bpe + index from the start on, in order,
 * that the select keeps (residue: g mod M == R; stride: every M-th from the
 * start), up to the end of the stream's epochs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "opts.h"
#include "subset.h"

/* The served global numbers of [start, end), by the definition. */
static size_t test_subset_served(const bfeed_stream_opts *o, uint64_t start, uint64_t end, uint64_t *g) {
  size_t n = 0;
  for (uint64_t x = start; x < end; x++) {
    int keep = o->select == BFEED_SELECT_RESIDUE  ? x % o->select_mod == o->select_rem
               : o->select == BFEED_SELECT_STRIDE ? (x - start) % o->select_mod == 0
                                                  : 1;
    if (keep) g[n++] = x;
  }
  return n;
}

static void test_subset_check(const bfeed_stream_opts *o, uint64_t bpe, uint64_t e, uint64_t i, uint64_t epochs) {
  uint64_t g[256], start = e * bpe + i, end = (o->epoch + epochs) * bpe;
  size_t n = test_subset_served(o, start, end, g);
  subset_pos first = subset_first(o, bpe, (subset_pos){e, i});
  assert_int_equal(subset_count(o, bpe, first, o->epoch + epochs), n);
  subset_pos p = first;
  for (size_t k = 0; k < n; k++) {
    assert_int_equal(p.epoch * bpe + p.index, g[k]);
    assert_true(p.index < bpe);
    subset_pos q = subset_nth(o, bpe, first, k);
    assert_true(q.epoch == p.epoch && q.index == p.index);
    assert_int_equal(subset_index_of(o, bpe, first, p), k);
    p = subset_after(o, bpe, p);
  }
  /* Positions the stream does not serve have no k. */
  for (uint64_t x = start; x < end; x++) {
    size_t k = 0;
    while (k < n && g[k] != x) k++;
    if (k == n) assert_int_equal(subset_index_of(o, bpe, first, (subset_pos){x / bpe, x % bpe}), UINT64_MAX);
  }
  if (start > 0) assert_int_equal(subset_index_of(o, bpe, first, (subset_pos){(start - 1) / bpe, (start - 1) % bpe}),
                                  UINT64_MAX);
}

static void test_subset_sweep(void **state) {
  (void)state;
  bfeed_stream_opts o;
  opts_defaults(&o);
  for (int kind = 0; kind < 3; kind++)
    for (uint64_t mod = 1; mod <= 5; mod++)
      for (uint64_t rem = 0; rem < (kind == 1 ? mod : 1); rem++)
        for (uint64_t bpe = 1; bpe <= 7; bpe++)
          for (uint64_t e = 0; e < 3; e++)
            for (uint64_t i = 0; i <= bpe; i++) /* i == bpe: the next epoch's first */
              for (uint64_t epochs = 1; epochs <= 3; epochs++) {
                o.select = kind == 0 ? BFEED_SELECT_ALL : kind == 1 ? BFEED_SELECT_RESIDUE : BFEED_SELECT_STRIDE;
                o.select_mod = kind == 0 ? 1 : mod;
                o.select_rem = rem;
                o.epoch = e;
                test_subset_check(&o, bpe, e, i, epochs);
              }
}

static void test_subset_far_epochs(void **state) {
  (void)state;
  bfeed_stream_opts o;
  opts_defaults(&o);
  o.select = BFEED_SELECT_RESIDUE, o.select_mod = 7, o.select_rem = 3;
  /* epoch * bpe overflows 64 bits: the arithmetic must not. */
  uint64_t bpe = 1000003, e = UINT64_MAX / 1000;
  subset_pos f = subset_first(&o, bpe, (subset_pos){e, 5});
  unsigned __int128 g = (unsigned __int128)f.epoch * bpe + f.index;
  assert_int_equal((uint64_t)(g % 7), 3);
  assert_true(f.epoch == e && f.index >= 5 && f.index < 5 + 7);
  subset_pos n = subset_after(&o, bpe, subset_nth(&o, bpe, f, 3));
  assert_int_equal(subset_index_of(&o, bpe, f, n), 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_subset_sweep), cmocka_unit_test(test_subset_far_epochs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
