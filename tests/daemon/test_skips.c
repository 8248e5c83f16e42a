/*
 * test_skips.c -- daemon/sources/skips.c: the list of a dataset's skipped
 * samples is in index order whatever order they were added in, keeps the
 * SKIPS_KEPT of lowest index when more are skipped, and counts them all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "skips.h"

static void test_index_order_and_the_lowest_kept(void **state) {
  (void)state;
  skips *s = skips_new();
  assert_non_null(s);
  /* 3 * SKIPS_KEPT samples, added in a scrambled order (a multiplier prime
   * to the count): the listing is 0 .. SKIPS_KEPT - 1, in order. */
  uint32_t n = 3 * SKIPS_KEPT;
  for (uint32_t k = 0; k < n; k++) skips_add(s, NULL, (uint32_t)((uint64_t)k * 7919 % n), SKIPS_CORRUPT, "f", "why");
  assert_int_equal(skips_count(s, SKIPS_CORRUPT), n);
  skips_entry *e = calloc(SKIPS_KEPT + 1, sizeof *e);
  assert_non_null(e);
  size_t got = skips_list(s, 0, e, SKIPS_KEPT + 1);
  assert_int_equal(got, SKIPS_KEPT);
  for (size_t i = 0; i < got; i++) assert_int_equal(e[i].sample, i);
  /* From the middle: the rest of the same order. */
  got = skips_list(s, 1000, e, 10);
  assert_int_equal(got, SKIPS_KEPT - 1000 < 10 ? SKIPS_KEPT - 1000 : 10);
  assert_int_equal(e[0].sample, 1000);
  free(e);
  skips_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_index_order_and_the_lowest_kept)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
