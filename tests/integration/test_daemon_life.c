/*
 * test_daemon_life.c -- the daemon's end (suite.h): SIGTERM while a client
 * holds batches and another never reads; it exits promptly with status 0,
 * the client (not reconnecting) reports the shutdown, and the socket goes
 * with it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* SIGTERM                                                             */

static void test_sigterm_while_streaming(void **state) {
  suite *s = *state;
  itest_daemon *d;
  bfeed_client *c;
  bfeed_stream_opts o;
  bfeed_error err;
  bfeed_connect_opts co;
  suite_train_opts(&o, 6, 0);
  /* Without reconnecting: the shutdown itself is what the caller sees
   * (test_reconnect.c covers what a reconnecting client makes of it). */
  bfeed_connect_opts_init(&co);
  co.reconnect = 0;
  d = suite_start(s, 0, "sigterm", 2, 0);
  SUITE_OK(bfeed_connect2(d->unix_addr, &co, &c, &err), err);
  bfeed_stream *st = suite_open(c, "demo", &o);
  for (int k = 0; k < 3; k++) bfeed_batch_release(suite_next(st));
  /* Wait until the daemon has sent what it sends ahead, so that the
   * client holds batches it has not taken when the daemon goes away. */
  suite_window w = {st, o.window, {0}};
  assert_int_equal(itest_poll(suite_window_sent, &w, 2000, 2), 1);
  assert_true(w.v[1] >= 2);

  /* And one that will not take its frames, so shutdown cannot just wait
   * for every write to drain. */
  int idle = suite_idle_client(d->unix_addr);

  char why[1024];
  assert_int_equal(kill(d->pid, SIGTERM), 0);
  if (itest_daemon_wait(d, SUITE_STOP_MS, why, sizeof why) < 0) fail_msg("%s", why);

  /* The client may hand out what had arrived; then it reports the
   * daemon's reason, and a failed call hands out no batch. */
  int rc = 0, taken = 0;
  while (rc == 0 && taken <= (int)o.window) {
    bfeed_batch *b;
    rc = bfeed_stream_next(st, &b, &err);
    if (rc == 0) bfeed_batch_release(b), taken++;
    else if (b) fail_msg("bfeed_stream_next failed with %d (%s) but handed out a batch", rc, err.message);
  }
  assert_true(taken <= (int)o.window);
  if (rc != BFEED_ESHUTDOWN)
    fail_msg("after SIGTERM the stream gave %d (%s): %s", rc, bfeed_strerror(rc), err.message);
  bfeed_stream_close(st);
  bfeed_close(c);
  assert_int_equal(itest_raw_drain_to_eof(idle), 0);
  close(idle);
  /* It took its socket with it. */
  assert_int_equal(bfeed_connect(d->unix_addr, &c, &err), BFEED_ECONNECT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_sigterm_while_streaming, suite_kill_daemons),
  };
  return SUITE_RUN("daemon_life", tests);
}
