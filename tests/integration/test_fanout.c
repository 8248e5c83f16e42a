/*
 * test_fanout.c -- one stream over three daemons (suite.h; issue 14): the
 * fan-out hands out exactly the batches of one daemon's stream, in order
 * and byte for byte, while a daemon is killed (-9) mid-epoch and started
 * again (it rejoins and serves again); a daemon serving another dataset
 * under the same name is refused naming its endpoint; a daemon stopped
 * most of the time (SIGSTOP/SIGCONT) serves clearly less than its third;
 * one stopped for good is dropped after stall_timeout and rejoins when
 * continued; bfeed_close while another thread opens a fan-out stream waits
 * for that call, as it does for a single daemon's; streams opened while a
 * member's thread resolves the endpoints again read the list under the
 * client's lock (the ThreadSanitizer build judges that one).
 *
 * The oracle is one daemon's stream with the same options, itself checked
 * against the files by test_stream.c. Nothing here asserts a time.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suite.h"

#define FAN_N 3

static itest_daemon fan_d[FAN_N];

/* Daemon i (1 worker, Unix socket) serving dataset "demo" from dir. */
static void fan_start(suite *s, int i, const char *demo_arg) {
  char name[32], err[1024];
  snprintf(name, sizeof name, "fan%d", i);
  itest_daemon_opts o = {.dir = s->root, .name = name, .workers = 1, .datasets = {demo_arg, NULL}};
  if (itest_daemon_start(&fan_d[i], &o, err, sizeof err) < 0) fail_msg("%s", err);
}

static int fan_teardown(void **state) {
  for (int i = 0; i < FAN_N; i++)
    if (fan_d[i].pid > 0) itest_daemon_kill(&fan_d[i]);
  return suite_kill_daemons(state);
}

static void fan_addr(char *buf, size_t cap) {
  snprintf(buf, cap, "%s,%s,%s", fan_d[0].unix_addr, fan_d[1].unix_addr, fan_d[2].unix_addr);
}

/* Many small batches: 23 an epoch (47 samples, batch 2). */
static void fan_opts(bfeed_stream_opts *o, uint64_t epochs) {
  suite_train_opts(o, 11, epochs);
  o->batch = 2;
  o->window = 6;
}

/* member<i>_batches and member<i>_live of a fan-out stream. */
static void fan_members(bfeed_stream *st, uint64_t batches[FAN_N], uint64_t live[FAN_N]) {
  const char *names[2 * FAN_N] = {"member0_batches", "member1_batches", "member2_batches",
                                  "member0_live",    "member1_live",    "member2_live"};
  uint64_t v[2 * FAN_N];
  bfeed_error err = {0};
  SUITE_OK(itest_counters(st, names, v, 2 * FAN_N, &err), err);
  for (int i = 0; i < FAN_N; i++) batches[i] = v[i], live[i] = v[FAN_N + i];
}

static int fan_member1_live(void *arg) {
  uint64_t b[FAN_N], l[FAN_N];
  fan_members(arg, b, l);
  return l[1] == 1;
}

static void rec_push(itest_run *run, bfeed_batch *b) {
  if (run->n == run->cap) {
    run->cap = run->cap ? 2 * run->cap : 64;
    run->b = realloc(run->b, run->cap * sizeof *run->b);
    assert_non_null(run->b);
  }
  assert_int_equal(itest_rec_from_batch(b, &run->b[run->n++]), 0);
}

/* The stream's next batch, appended to run: 0 or next's error. */
static int fan_take(bfeed_stream *st, itest_run *run, bfeed_error *err) {
  bfeed_batch *b;
  int rc = bfeed_stream_next(st, &b, err);
  if (rc == 0) rec_push(run, b), bfeed_batch_release(b);
  return rc;
}

/* Three daemons serving "demo", the reference (daemon 0 alone) in ref, and
 * a fan-out stream over the three with co (NULL: the defaults). */
static bfeed_stream *fan_begin(suite *s, uint64_t epochs, const bfeed_connect_opts *co, itest_run *ref,
                               bfeed_client **c) {
  for (int i = 0; i < FAN_N; i++) fan_start(s, i, s->demo_arg);
  bfeed_stream_opts o;
  fan_opts(&o, epochs);
  suite_fetch(fan_d[0].unix_addr, "demo", &o, 0, ref);
  char addr[512];
  fan_addr(addr, sizeof addr);
  bfeed_error err = {0};
  SUITE_OK(bfeed_connect2(addr, co, c, &err), err);
  assert_int_equal(bfeed_client_endpoints(*c), FAN_N);
  return suite_open(*c, "demo", &o);
}

/* The stream has ended as one daemon's would: exactly ref. */
static void fan_finish(bfeed_stream *st, bfeed_client *c, int rc, const bfeed_error *err, itest_run *ref,
                       itest_run *got) {
  if (rc != BFEED_EEOF) fail_msg("the fan-out stream failed after %zu batches: %s", got->n, err->message);
  suite_assert_runs_equal(ref, got); /* every (epoch, index, bytes), in order, once */
  suite_close_runs(st, c, ref, got);
}

static void test_fanout_failover(void **state) {
  suite *s = *state;
  itest_run ref = {0}, got = {0};
  bfeed_client *c;
  bfeed_stream *st = fan_begin(s, 3, NULL, &ref, &c);
  uint64_t b[FAN_N], l[FAN_N], at_restart = 0;
  size_t kill_at = ref.n / 4, restart_at = ref.n / 3;
  bfeed_error err = {0};
  int rc;
  while ((rc = fan_take(st, &got, &err)) == 0) {
    if (got.n == kill_at) {
      fan_members(st, b, l);
      printf("fanout: batch %zu (epoch %llu index %llu): SIGKILL %s; served so far %llu/%llu/%llu\n", got.n,
             (unsigned long long)got.b[got.n - 1].epoch, (unsigned long long)got.b[got.n - 1].index,
             fan_d[1].unix_addr, (unsigned long long)b[0], (unsigned long long)b[1], (unsigned long long)b[2]);
      itest_daemon_kill(&fan_d[1]);
    }
    if (got.n == restart_at) {
      fan_start(s, 1, s->demo_arg);
      assert_int_equal(itest_poll(fan_member1_live, st, 30000, 20), 1);
      fan_members(st, b, l);
      at_restart = b[1];
      printf("fanout: batch %zu: %s restarted and rejoined; served so far %llu/%llu/%llu\n", got.n,
             fan_d[1].unix_addr, (unsigned long long)b[0], (unsigned long long)b[1], (unsigned long long)b[2]);
    }
  }
  fan_members(st, b, l);
  printf("fanout: %zu batches (reference %zu); per member %llu/%llu/%llu\n", got.n, ref.n, (unsigned long long)b[0],
         (unsigned long long)b[1], (unsigned long long)b[2]);
  assert_true(b[1] > at_restart); /* the restarted daemon served again */
  assert_true(bfeed_client_reconnects(c) >= 1);
  fan_finish(st, c, rc, &err, &ref, &got);
}

static void test_fanout_mismatch(void **state) {
  suite *s = *state;
  char other[256];
  snprintf(other, sizeof other, "demo=%s", s->bad_dir); /* another dataset under the same name */
  fan_start(s, 0, s->demo_arg);
  fan_start(s, 1, s->demo_arg);
  fan_start(s, 2, other);
  char addr[512];
  fan_addr(addr, sizeof addr);
  bfeed_client *c = suite_connect(addr);
  bfeed_stream_opts o;
  fan_opts(&o, 1);
  bfeed_stream *st = NULL;
  bfeed_error err = {0};
  assert_int_equal(bfeed_stream_open(c, "demo", &o, &st, &err), BFEED_EDATASET);
  assert_null(st);
  printf("fanout: mismatch refused: %s\n", err.message);
  assert_non_null(strstr(err.message, fan_d[2].unix_addr));
  assert_non_null(strstr(err.message, fan_d[0].unix_addr));
  bfeed_close(c);
}

typedef struct throttle {
  pid_t pid;
  atomic_int stop;
} throttle;

/* Keep the daemon stopped most of the time: 200 ms stopped, 20 ms running. */
static void *throttle_main(void *arg) {
  throttle *t = arg;
  while (!atomic_load(&t->stop)) {
    kill(t->pid, SIGSTOP);
    usleep(200000);
    kill(t->pid, SIGCONT);
    usleep(20000);
  }
  kill(t->pid, SIGCONT);
  return NULL;
}

static void test_fanout_throttled(void **state) {
  suite *s = *state;
  itest_run ref = {0}, got = {0};
  bfeed_client *c;
  bfeed_stream *st = fan_begin(s, 4, NULL, &ref, &c);
  throttle t = {.pid = fan_d[2].pid};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, throttle_main, &t), 0);
  bfeed_error err = {0};
  int rc;
  while ((rc = fan_take(st, &got, &err)) == 0) {
  }
  atomic_store(&t.stop, 1);
  pthread_join(th, NULL);
  uint64_t b[FAN_N], l[FAN_N];
  fan_members(st, b, l);
  printf("fanout: throttled member 2 served %llu of %zu (others %llu, %llu)\n", (unsigned long long)b[2], got.n,
         (unsigned long long)b[0], (unsigned long long)b[1]);
  assert_true(b[2] * 4 < got.n); /* clearly less than its third */
  fan_finish(st, c, rc, &err, &ref, &got);
}

static int fan_member2_live(void *arg) {
  uint64_t b[FAN_N], l[FAN_N];
  fan_members(arg, b, l);
  return l[2] == 1;
}

/* A daemon stopped (SIGSTOP) with batches asked of it: after stall_timeout
 * it is dropped and the others serve its positions; continued, it rejoins. */
static void test_fanout_stall(void **state) {
  suite *s = *state;
  itest_run ref = {0}, got = {0};
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  co.stall_timeout = 0.5;
  bfeed_client *c;
  bfeed_stream *st = fan_begin(s, 2, &co, &ref, &c);
  uint64_t b[FAN_N], l[FAN_N];
  bfeed_error err = {0};
  int rc;
  while ((rc = fan_take(st, &got, &err)) == 0) {
    if (got.n == 5) kill(fan_d[2].pid, SIGSTOP);
    if (got.n == 20) {
      fan_members(st, b, l);
      assert_int_equal(l[2], 0); /* dropped: it sent nothing for longer than the deadline */
      kill(fan_d[2].pid, SIGCONT);
      assert_int_equal(itest_poll(fan_member2_live, st, 30000, 20), 1);
      printf("fanout: batch 20: the stopped daemon was dropped, continued, and rejoined\n");
    }
  }
  fan_finish(st, c, rc, &err, &ref, &got);
}

/* bfeed_stream_open on a fan-out client runs while bfeed_close is called
 * (a member's handshake held up: its daemon is stopped). bfeed.h: calls in
 * progress return BFEED_ECLOSED and bfeed_close returns after them, so the
 * opening thread never touches a freed client. */
typedef struct opener {
  bfeed_client *c;
  bfeed_stream *st;
  atomic_int inside, rc, closed;
} opener;

static void *opener_main(void *arg) {
  opener *t = arg;
  bfeed_stream_opts o;
  fan_opts(&o, 1);
  bfeed_error err = {0};
  atomic_store(&t->inside, 1);
  atomic_store(&t->rc, bfeed_stream_open(t->c, "demo", &o, &t->st, &err));
  atomic_store(&t->inside, 0);
  return NULL;
}

static void *closer_main(void *arg) {
  opener *t = arg;
  bfeed_close(t->c);
  atomic_store(&t->closed, 1);
  return NULL;
}

static void test_fanout_close_during_open(void **state) {
  suite *s = *state;
  fan_start(s, 0, s->demo_arg);
  fan_start(s, 1, s->demo_arg);
  char addr[512];
  snprintf(addr, sizeof addr, "%s,%s", fan_d[0].unix_addr, fan_d[1].unix_addr);
  opener t = {.c = suite_connect(addr)};
  assert_int_equal(kill(fan_d[1].pid, SIGSTOP), 0); /* its handshake waits (up to 10 s) */
  pthread_t to, tc;
  assert_int_equal(pthread_create(&to, NULL, opener_main, &t), 0);
  itest_sleep_ms(500);
  assert_int_equal(atomic_load(&t.inside), 1);
  assert_int_equal(pthread_create(&tc, NULL, closer_main, &t), 0);
  itest_sleep_ms(500);
  int closed_early = atomic_load(&t.closed);
  kill(fan_d[1].pid, SIGCONT);
  if (closed_early) fail_msg("bfeed_close returned while bfeed_stream_open was still running on the client");
  pthread_join(to, NULL);
  pthread_join(tc, NULL);
  assert_int_equal(atomic_load(&t.rc), BFEED_ECLOSED);
  assert_null(t.st);
}

/* One endpoint has no daemon: its member thread keeps trying, resolving
 * the endpoint list afresh each time (fanout_member.c), while this thread
 * opens more streams, each of which reads the list for the AUTO codec. */
static void test_fanout_open_while_refreshing(void **state) {
  suite *s = *state;
  fan_start(s, 0, s->demo_arg);
  fan_start(s, 1, s->demo_arg);
  char addr[512];
  snprintf(addr, sizeof addr, "%s,%s,unix:%s/nobody.sock", fan_d[0].unix_addr, fan_d[1].unix_addr, s->root);
  bfeed_client *c = suite_connect(addr);
  bfeed_stream_opts o;
  fan_opts(&o, 1);
  bfeed_stream *first = suite_open(c, "demo", &o);
  for (int i = 0; i < 8; i++) {
    itest_sleep_ms(300); /* the member's thread re-resolves meanwhile */
    bfeed_stream_close(suite_open(c, "demo", &o));
  }
  bfeed_stream_close(first);
  bfeed_close(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_fanout_failover, fan_teardown),
      cmocka_unit_test_teardown(test_fanout_mismatch, fan_teardown),
      cmocka_unit_test_teardown(test_fanout_throttled, fan_teardown),
      cmocka_unit_test_teardown(test_fanout_stall, fan_teardown),
      cmocka_unit_test_teardown(test_fanout_close_during_open, fan_teardown),
      cmocka_unit_test_teardown(test_fanout_open_while_refreshing, fan_teardown),
  };
  return SUITE_RUN("fanout", tests);
}
