/*
 * test_decode_mem.c -- daemon/pipeline/decode_mem.c: decodes run at once
 * only while they fit max_memory together, counted from the moment each
 * enters, before its buffers exist (the CI failure of stop 36: four
 * workers arriving at once all saw an empty count, and two 100 MB decodes
 * ran under 160M).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "decode_mem.h"

#define MIB (1024u * 1024u)

static int entered; /* atomic: the second decode got in */

static void *second_decode(void *arg) {
  decode_mem_enter(*(uint64_t *)arg);
  __atomic_store_n(&entered, 1, __ATOMIC_SEQ_CST);
  decode_mem_settle(*(uint64_t *)arg);
  decode_mem_leave();
  return NULL;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* One decode of 100 MB has entered and not yet reserved anything: a second
 * of 100 MB under 160M waits until the first leaves. A wrong pass here
 * would need the second thread to be held off 300 ms by the scheduler; a
 * wrong failure cannot happen (a waiting thread never sets the flag). */
static void test_a_need_counts_from_the_enter(void **state) {
  (void)state;
  decode_mem_set_budget(160 * (uint64_t)MIB);
  uint64_t need = 100 * (uint64_t)MIB;
  entered = 0;
  decode_mem_enter(need);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, second_decode, &need), 0);
  nap_ms(300);
  int in_before_reserve = __atomic_load_n(&entered, __ATOMIC_SEQ_CST);
  /* Its buffers counted, its need settled: still no room for the second. */
  decode_mem_buf b = {0};
  void *p = decode_mem_reserve(&b, need);
  decode_mem_settle(need);
  nap_ms(100);
  int in_after_reserve = __atomic_load_n(&entered, __ATOMIC_SEQ_CST);
  decode_mem_trim(&b); /* given back, then out: the second runs */
  decode_mem_leave();
  assert_int_equal(pthread_join(t, NULL), 0);
  /* Asserted once both are out, so that a failure leaves no decode behind. */
  assert_non_null(p);
  assert_int_equal(in_before_reserve, 0);
  assert_int_equal(in_after_reserve, 0);
  assert_int_equal(entered, 1);
  assert_int_equal(decode_mem_held(), 0);
}

/* Needs that fit together run together: two of 50 MB under 160M. */
static void test_needs_that_fit_run_at_once(void **state) {
  (void)state;
  decode_mem_set_budget(160 * (uint64_t)MIB);
  uint64_t need = 50 * (uint64_t)MIB;
  entered = 0;
  decode_mem_enter(need);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, second_decode, &need), 0);
  assert_int_equal(pthread_join(t, NULL), 0); /* it never waited for this one to leave */
  assert_int_equal(entered, 1);
  decode_mem_settle(need);
  decode_mem_leave();
}

/* Alone, a decode always runs, whatever it needs (the limit of one decode
 * is decode_mem_check's, not a wait). */
static void test_alone_a_decode_runs(void **state) {
  (void)state;
  decode_mem_set_budget(16 * (uint64_t)MIB);
  decode_mem_enter(100 * (uint64_t)MIB);
  decode_mem_settle(100 * (uint64_t)MIB);
  decode_mem_leave();
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_a_need_counts_from_the_enter),
                                     cmocka_unit_test(test_needs_that_fit_run_at_once),
                                     cmocka_unit_test(test_alone_a_decode_runs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
