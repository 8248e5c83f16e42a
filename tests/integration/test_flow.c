/*
 * test_flow.c -- flow control on the real daemon (suite.h): a slow
 * consumer never has more than its window in flight and unacknowledged,
 * and the daemon does prefetch up to the window.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Flow control                                                        */

static void test_flow_control(void **state) {
  suite *s = *state;
  itest_daemon *d;
  bfeed_client *c;
  bfeed_stream_opts o;
  suite_train_opts(&o, 4, 0);
  o.window = 3;
  bfeed_stream *st = suite_start_stream(s, "flow", &o, &d, &c);
  uint64_t most = 0;
  for (int k = 0; k < 12; k++) {
    bfeed_batch_release(suite_next(st));
    for (int look = 0; look < 2; look++) {
      uint64_t v[2];
      suite_window_counters(st, v);
      uint64_t in_flight = v[0], unacked = v[1];
      if (in_flight + unacked > o.window)
        fail_msg("batch %d: %llu in flight + %llu unacked exceeds the window of %u", k,
                 (unsigned long long)in_flight, (unsigned long long)unacked, o.window);
      most = in_flight + unacked > most ? in_flight + unacked : most;
      /* A slow consumer: give the daemon every chance to run ahead. */
      itest_sleep_ms(20);
    }
  }
  /* It does prefetch: once an ACK is in, the window refills. */
  assert_int_equal(most, o.window);
  bfeed_stream_close(st);
  bfeed_close(c);
  suite_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_flow_control, suite_kill_daemons),
  };
  return SUITE_RUN("flow", tests);
}
