/*
 * suite.h -- the fixture shared by the integration tests that serve
 * make_demo images (test_stream.c, test_hostile.c, test_flow.c,
 * test_daemon_life.c): two datasets made once per program, and
 * cmocka-asserting wrappers around itest_util.h.
 *
 * "demo" holds make_demo's stripes, 47 JPEGs in 8 classes (odd, so shards
 * and partial batches have something to drop or keep); "bad" holds 48
 * good JPEGs plus a garbage file and a truncated JPEG. Each test starts
 * its own bfeedd children serving both; suite_kill_daemons, the per-test
 * teardown, kills any that a failed test left running.
 */
#ifndef BFEED_ITEST_SUITE_H
#define BFEED_ITEST_SUITE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bfeed.h"
#include "itest_util.h"

#define SUITE_DAEMONS 2
#define SUITE_STOP_MS 5000 /* "promptly": the daemon's own grace period is 2 s */

typedef struct suite {
  char root[128];
  char demo_dir[192], bad_dir[192];
  char demo_arg[224], bad_arg[224]; /* "NAME=DIR" for --dataset */
  itest_folder demo, bad;
  long garbage_idx, trunc_idx; /* the bad files' sample indices in "bad" */
  itest_daemon d[SUITE_DAEMONS];
} suite;

/* Group setup and teardown: the datasets, checked against what they
 * should hold. */
int suite_setup(void **state);
int suite_teardown(void **state);
/* Per-test teardown: kill the daemons a failed test left behind. */
int suite_kill_daemons(void **state);
/* Before the group runs: SIGPIPE ignored (a client whose daemon vanished
 * must see an error, not die), and BFEED_ITEST_FILTER='test_bad*' to run
 * some of the tests. SUITE_RUN runs the group with the fixture above. */
void suite_prepare(void);
#define SUITE_RUN(name, tests) \
  (suite_prepare(), cmocka_run_group_tests_name(name, tests, suite_setup, suite_teardown))
/* A whole main(): the tests, each killing its daemons at the end, run as
 * SUITE_RUN does. */
#define SUITE_MAIN_KILLING(name, ...)                                   \
  int main(void) {                                                      \
    const struct CMUnitTest suite_tests[] = {__VA_ARGS__};              \
    return SUITE_RUN(name, suite_tests);                                \
  }
#define SUITE_KILLING(test) cmocka_unit_test_teardown(test, suite_kill_daemons)

/* Start a daemon in slot (0 or 1) serving "demo" and "bad", with a TCP
 * listener too when tcp is set; stop it and expect a clean exit in time. */
itest_daemon *suite_start(suite *s, int slot, const char *name, int workers, int tcp);
/* The same with more flags and environment (itest_daemon_opts' args, env). */
itest_daemon *suite_start_with(suite *s, int slot, const char *name, int workers, int tcp, const char *const *args,
                               const char *const *env);
void suite_stop(itest_daemon *d);

/* Fail the test unless call succeeds, quoting err's message. */
#define SUITE_OK(call, err)                                                                             \
  do {                                                                                                  \
    int rc_ = (call);                                                                                   \
    if (rc_ < 0) fail_msg("%s returned %d (%s): %s", #call, rc_, bfeed_strerror(rc_), (err).message); \
  } while (0)

bfeed_client *suite_connect(const char *addr);
bfeed_stream *suite_open(bfeed_client *c, const char *ds, const bfeed_stream_opts *o);
bfeed_batch *suite_next(bfeed_stream *st);
/* A whole run; fails the test unless it ends as expected (EEOF for a run
 * with epochs set, or max batches). */
void suite_fetch(const char *addr, const char *ds, const bfeed_stream_opts *o, size_t max, itest_run *run);
void suite_assert_runs_equal(const itest_run *a, const itest_run *b);
/* itest_opts in train mode with this seed and epoch count. */
void suite_train_opts(bfeed_stream_opts *o, uint64_t seed, uint64_t epochs);
/* itest_opts in eval mode (in order, no augmentation) for epochs. */
void suite_eval_opts(bfeed_stream_opts *o, uint64_t epochs);
/* A daemon in slot 0 (2 workers, Unix socket only), a client, and a
 * stream on "demo" with o: what the flow and shutdown tests start from. */
bfeed_stream *suite_start_stream(suite *s, const char *name, const bfeed_stream_opts *o, itest_daemon **d,
                                 bfeed_client **c);
/* The stream's batches in flight (v[0]) and sent but not acknowledged
 * (v[1]), from one snapshot. */
void suite_window_counters(bfeed_stream *st, uint64_t v[2]);
/* itest_poll's condition that the daemon has sent all it sends ahead of
 * a caller that takes no batch: the whole window scheduled, and sent but
 * not acknowledged all of it over the socket, two of it through a
 * shared-memory ring (whose other batches wait in their slots: PROTOCOL.md
 * "Flow control"). v gets in_flight, unacked and shm_batches. */
typedef struct suite_window {
  bfeed_stream *st;
  uint32_t window;
  uint64_t v[3];
} suite_window;
int suite_window_sent(void *arg);

/* A raw client (itest_raw.c) that has said HELLO and opened stream 1 on
 * "demo" with o, options unchecked. */
int suite_raw_open(const char *addr, const bfeed_stream_opts *o);
/* The end of a test that compared a run with its reference: the stream
 * and its client close, and both runs are freed. */
void suite_close_runs(bfeed_stream *st, bfeed_client *c, itest_run *ref, itest_run *got);
/* The raw connection fd still answers (STATS_REQ on stream, 0 for the
 * daemon's report, is answered with STATS there); then it is closed. */
void suite_raw_answers_then_close(int fd, uint32_t stream);
/* ACK on a raw connection: the client has consumed `consumed` batches of stream. */
void suite_raw_ack(int fd, uint32_t stream, uint64_t consumed);
/* A raw connection to addr, handshake done (the test fails otherwise). */
int suite_raw_hello(const char *addr);
/* A raw client with a deep window of big batches open that never reads:
 * the daemon can neither finish its writes nor just wait for them. */
int suite_idle_client(const char *addr);

#endif
