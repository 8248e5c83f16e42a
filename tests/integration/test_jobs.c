/*
 * test_jobs.c -- a job's streams are one in the daemon's eyes (PROTOCOL.md
 * "Jobs"), through libbfeed and raw clients (suite.h): the loop's timing a
 * fan-out stream reports (bfeed_stream_report_timing) reaches every
 * member's daemon; a TIMING whose flags are cut short is not a loop's and
 * ends nothing, a whole one is; a client opening streams under ever new
 * job ids fills the table to its bound, where the jobs that ended first go
 * and the jobs with a stream open stay, their loop's timing and their
 * streams undisturbed.
 *
 * The oracles: the figures the test reports itself, and the table's
 * documented bound. Nothing here asserts a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "suite.h"
#include "wire.h"

#define JOBS_BOUND 1024 /* PROTOCOL.md "Jobs": the jobs a daemon holds */

/* The loop the tests report: whole microseconds. */
static const bfeed_stream_timing jobs_loop = {.batches = 39,
                                              .wait_ns = 1500000000ull,
                                              .step_ns = 4500000000ull,
                                              .wait_p50_ns = 31250000ull,
                                              .wait_p99_ns = 250000000ull,
                                              .first_wait_ns = 500000000ull};

static uint64_t jobs_counter(const bfeed_stat_group *g, const char *name) {
  for (size_t i = 0; g && i < g->ncounters; i++)
    if (strcmp(g->counters[i].name, name) == 0) return g->counters[i].value;
  return 0;
}

/* A daemon's report, through a client of its own. */
static void jobs_report(const char *addr, bfeed_stat_group **g, size_t *n) {
  bfeed_client *c = suite_connect(addr);
  bfeed_error err;
  SUITE_OK(bfeed_daemon_stats(c, g, n, &err), err);
  bfeed_close(c);
}

/* Job id's group in a report, NULL when there is none; *njobs: how many job groups. */
static const bfeed_stat_group *jobs_find(const bfeed_stat_group *g, size_t n, uint64_t id, size_t *njobs) {
  const bfeed_stat_group *found = NULL;
  *njobs = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(g[i].kind, "job") != 0) continue;
    ++*njobs;
    if (jobs_counter(&g[i], "job") == id) found = &g[i];
  }
  return found;
}

/* The job's group has the loop's timing, as the test reported it. */
static void jobs_assert_loop(const bfeed_stat_group *j) {
  assert_non_null(j);
  assert_int_equal(jobs_counter(j, "loop"), 1);
  assert_int_equal(jobs_counter(j, "client_batches"), 39);
  assert_int_equal(jobs_counter(j, "client_wait_us"), 1500000);
  assert_int_equal(jobs_counter(j, "client_step_us"), 4500000);
  assert_int_equal(jobs_counter(j, "client_wait_p50_us"), 31250);
  assert_int_equal(jobs_counter(j, "client_wait_p99_us"), 250000);
  assert_int_equal(jobs_counter(j, "client_first_wait_us"), 500000);
  assert_int_equal(jobs_counter(j, "wait_fraction_ppm"), 250000);
}

/* A fan-out stream's report goes to every member: each daemon's job has
 * the loop, and its member stream. */
static void test_loop_through_fanout(void **state) {
  suite *s = *state;
  itest_daemon *a = suite_start(s, 0, "jobs-fan-a", 1, 0), *b = suite_start(s, 1, "jobs-fan-b", 1, 0);
  char addr[512];
  snprintf(addr, sizeof addr, "%s,%s", a->unix_addr, b->unix_addr);
  bfeed_client *c = suite_connect(addr);
  bfeed_stream_opts o;
  suite_train_opts(&o, 5, 0);
  o.job = 0x0123456789abcdefull;
  bfeed_stream *st = suite_open(c, "demo", &o);
  for (int i = 0; i < 4; i++) bfeed_batch_release(suite_next(st)); /* both members serve */
  bfeed_error err;
  SUITE_OK(bfeed_stream_report_timing(st, &jobs_loop, &err), err);
  bfeed_counter ctr[MSG_MAX_COUNTERS];
  size_t nc;
  SUITE_OK(bfeed_stream_stats(st, ctr, MSG_MAX_COUNTERS, &nc, &err), err); /* after the TIMING, on each member */
  for (size_t i = 0; i < nc; i++) /* the stream says what it sends: the loop's */
    if (strcmp(ctr[i].name, "client_wait_us") == 0) assert_int_equal(ctr[i].value, 1500000);
  const char *addrs[2] = {a->unix_addr, b->unix_addr};
  for (int k = 0; k < 2; k++) {
    bfeed_stat_group *g;
    size_t n, njobs;
    jobs_report(addrs[k], &g, &n);
    const bfeed_stat_group *j = jobs_find(g, n, o.job, &njobs);
    jobs_assert_loop(j);
    assert_int_equal(njobs, 1);
    assert_string_equal(j->id, "0123456789abcdef:demo");
    assert_int_equal(jobs_counter(j, "streams"), 1);
    bfeed_daemon_stats_free(g, n);
  }
  assert_int_equal(bfeed_stream_report_timing(st, NULL, &err), BFEED_EINVAL);
  assert_non_null(strstr(err.message, "NULL"));
  bfeed_stream_close(st);
  bfeed_close(c);
  suite_stop(a);
  suite_stop(b);
}

/* A raw client's TIMING on stream id of fd, seven totals of wait_us and
 * step_us, then len - 56 bytes of flags. */
static void jobs_raw_timing(int fd, uint32_t id, uint64_t wait_us, uint64_t step_us, uint64_t flags, uint32_t len) {
  uint8_t t[MSG_TIMING_FLAGS_SIZE] = {0};
  const uint64_t v[8] = {3, wait_us, step_us, 1, 2, 3, 0, flags};
  for (int i = 0; i < 8; i++) wire_put64(t + 8 * i, v[i]);
  assert_int_equal(itest_raw_send(fd, FRAME_TIMING, id, t, len), 0);
}

/* The stream's STATS answered: the daemon has taken what came before. */
static void jobs_raw_sync(int fd, uint32_t id) {
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_send(fd, FRAME_STATS_REQ, id, NULL, 0), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_STATS, &h, &p), 0);
  free(p);
}

static void jobs_raw_open(int fd, uint32_t id, const bfeed_stream_opts *o) {
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_open(fd, id, "demo", o), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  free(p);
}

static void test_hostile_jobs(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "jobs-hostile", 1, 0);
  const uint64_t victim = 0xfeedfacecafebeefull, hostile = 7;
  bfeed_error err;
  /* The victim: a stream that reads, and an anchor that reports its loop. */
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream_opts o, anchor_o;
  suite_train_opts(&o, 9, 0);
  o.job = victim;
  anchor_o = o;
  anchor_o.select = BFEED_SELECT_ON_DEMAND;
  bfeed_stream *reader = suite_open(c, "demo", &o), *anchor = suite_open(c, "demo", &anchor_o);
  bfeed_batch_release(suite_next(reader));
  SUITE_OK(bfeed_stream_report_timing(anchor, &jobs_loop, &err), err);

  /* Flags cut short are no loop's; the connection lives on. A whole one is. */
  int fd = suite_raw_hello(d->unix_addr);
  bfeed_stream_opts h = anchor_o;
  h.job = hostile;
  jobs_raw_open(fd, 1, &h);
  jobs_raw_timing(fd, 1, 1000, 3000, ~0ull, MSG_TIMING_SIZE + 4);
  jobs_raw_sync(fd, 1);
  bfeed_stat_group *g;
  size_t n, njobs;
  jobs_report(d->unix_addr, &g, &n);
  const bfeed_stat_group *j = jobs_find(g, n, hostile, &njobs);
  assert_non_null(j);
  assert_int_equal(jobs_counter(j, "loop"), 0);
  assert_int_equal(jobs_counter(j, "client_wait_us"), 1000); /* its one stream's own */
  bfeed_daemon_stats_free(g, n);
  jobs_raw_timing(fd, 1, 2000, 2000, MSG_TIMING_LOOP, MSG_TIMING_FLAGS_SIZE);
  jobs_raw_sync(fd, 1);
  jobs_report(d->unix_addr, &g, &n);
  j = jobs_find(g, n, hostile, &njobs);
  assert_int_equal(jobs_counter(j, "loop"), 1);
  assert_int_equal(jobs_counter(j, "wait_fraction_ppm"), 500000);
  bfeed_daemon_stats_free(g, n);

  /* Ever new job ids, each stream opened and closed: the table stays at
   * its bound, the jobs that ended first gone, the open ones kept. */
  const uint64_t first = 1000, count = JOBS_BOUND + 100;
  for (uint64_t i = 0; i < count; i++) {
    h.job = first + i;
    jobs_raw_open(fd, 2, &h);
    assert_int_equal(itest_raw_send(fd, FRAME_CLOSE, 2, NULL, 0), 0);
  }
  jobs_raw_sync(fd, 1);
  jobs_report(d->unix_addr, &g, &n);
  assert_null(jobs_find(g, n, first, &njobs));
  assert_int_equal(njobs, JOBS_BOUND);
  assert_non_null(jobs_find(g, n, first + count - 1, &njobs));
  assert_non_null(jobs_find(g, n, hostile, &njobs));
  j = jobs_find(g, n, victim, &njobs);
  jobs_assert_loop(j);
  assert_int_equal(jobs_counter(j, "streams"), 2);
  bfeed_daemon_stats_free(g, n);
  for (int i = 0; i < 3; i++) bfeed_batch_release(suite_next(reader)); /* undisturbed */

  close(fd);
  bfeed_stream_close(reader);
  bfeed_stream_close(anchor);
  bfeed_close(c);
  assert_true(itest_daemon_alive(d));
  suite_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      SUITE_KILLING(test_loop_through_fanout),
      SUITE_KILLING(test_hostile_jobs),
  };
  return SUITE_RUN("jobs", tests);
}
