/*
 * test_verdict.c -- the verdict on a stream (client/cli/verdict.c) from
 * counters made here, one case per limit it can name, with the figures it
 * must quote worked out by hand; and over an interval (two reports of one
 * stream), where the earlier totals must not count. A job (PROTOCOL.md
 * "Jobs") is judged as a stream, its memory waits a share of its streams'
 * time together; its streams are folded into it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "verdict.h"

typedef struct group {
  bfeed_counter c[32];
  bfeed_stat_group g;
} group;

/* A group of kind with counters given as name, value, ..., NULL. */
static bfeed_stat_group *make(group *g, const char *kind, ...) {
  va_list ap;
  va_start(ap, kind);
  size_t n = 0;
  for (const char *name; n < 32 && (name = va_arg(ap, const char *));) {
    g->c[n].name = name;
    g->c[n++].value = va_arg(ap, uint64_t);
  }
  va_end(ap);
  g->g = (bfeed_stat_group){.kind = kind, .id = "1/1:demo", .ncounters = n, .counters = g->c};
  return &g->g;
}

#define U(x) ((uint64_t)(x))

static group daemon_g;
static bfeed_stat_group *daemon2(void) {
  return make(&daemon_g, "daemon", "workers", U(2), "max_memory_bytes", U(64) << 20, "memory_held_bytes",
              U(60) << 20, NULL);
}

static void expect(const bfeed_stat_group *now, const bfeed_stat_group *before, const char *limit, const char *want) {
  verdict v;
  char line[512];
  verdict_judge(now, before, daemon2(), &v, line, sizeof line);
  if (strcmp(v.limit, limit) != 0 || !strstr(line, want))
    fail_msg("verdict \"%s\" (limit %s): want limit %s and \"%s\"", line, v.limit, limit, want);
}

/* 10 s of a stream whose client waited `wait` of its 10 s. */
#define TIMED(wait_s) "age_us", U(10000000), "client_batches", U(100), "client_wait_us", U((wait_s) * 1000000), \
                      "client_step_us", U(10000000 - (wait_s) * 1000000)

static void test_no_timing(void **state) {
  group g;
  expect(make(&g, "stream", "age_us", U(5000000), NULL), NULL, "unknown", "no timing from the client");
}

static void test_trainer(void **state) {
  group g;
  /* waits 0.5 s of 10: 5%; the step: 9.5 s over 100 batches = 95 ms; workers 4 s of 2 x 10 s = 20% */
  expect(make(&g, "stream", TIMED(0.5), "workers_busy_us", U(4000000), NULL), NULL, "trainer",
         "trainer-bound: input waits 5% of the time; the step takes 95.0 ms per batch, the workers are busy 20%");
}

static void test_stages(void **state) {
  static const struct {
    const char *counter, *limit, *want;
  } cases[] = {
      {"decode_us", "decode", "input-bound 38%: decode-limited, 2 workers busy 97% (decode 70% of their time); add workers"},
      {"resize_us", "resize", "input-bound 38%: resize-limited, 2 workers busy 97% (resize 70%"},
      {"read_us", "read", "input-bound 38%: read-limited (storage), 2 workers busy 97% (read 70%"},
      {"augment_us", "augment", "input-bound 38%: augment-limited (the recipe's pixel ops, erasing, mixing), 2 workers "
                                "busy 97% (augment 70%"},
      {"batch_us", "batch", "input-bound 38%: batch-limited (cast, assemble, compress), 2 workers busy 97% (batch 70%"},
  };
  static const char *const stages[] = {"decode_us", "resize_us", "read_us", "augment_us", "batch_us"};
  for (size_t k = 0; k < 5; k++) {
    group g;
    bfeed_stat_group *s = make(&g, "stream", TIMED(3.8), "workers_busy_us", U(19400000), "memory_wait_us",
                               U(9000000), NULL);
    /* the stage of the case 7 s, the other four 0.75 s each: 70% */
    for (size_t j = 0; j < 5; j++) {
      g.c[g.g.ncounters].name = stages[j];
      g.c[g.g.ncounters++].value = strcmp(stages[j], cases[k].counter) == 0 ? 7000000 : 750000;
    }
    expect(s, NULL, cases[k].limit, cases[k].want);
  }
}

static void test_memory(void **state) {
  group g;
  /* workers 8 s of 20 (40%): not theirs; held back 6 s of 10 */
  expect(make(&g, "stream", TIMED(9), "workers_busy_us", U(8000000), "decode_us", U(8000000), "memory_wait_us",
              U(6000000), "window", U(8), NULL),
         NULL, "memory",
         "input-bound 90%: memory-limited: max_memory held the window back 60% of the time (max_memory 64 MiB, "
         "60 MiB held; window 8)");
}

static void test_client_and_socket(void **state) {
  group g;
  expect(make(&g, "stream", TIMED(5), "workers_busy_us", U(2000000), "client_expand_us", U(8000000), NULL), NULL,
         "client", "input-bound 50%: client-limited: the client's reader spends 80% of its time decompressing");
  /* 2000 MB in 10 s */
  expect(make(&g, "stream", TIMED(5), "workers_busy_us", U(2000000), "wire_bytes", U(2000000000), "window", U(4),
              NULL),
         NULL, "socket", "input-bound 50%: socket-limited: 200.0 MB/s on the wire, workers busy 10%, window 4");
}

/* Over an interval: the stream was trainer-bound for its first 100 s and
 * then waited 8 of the last 10 s with its worker busy. */
static void test_interval(void **state) {
  group a, b;
  bfeed_stat_group *before = make(&a, "stream", "age_us", U(100000000), "client_batches", U(1000), "client_wait_us",
                                  U(1000000), "client_step_us", U(99000000), "workers_busy_us", U(20000000),
                                  "decode_us", U(20000000), NULL);
  bfeed_stat_group *now = make(&b, "stream", "age_us", U(110000000), "client_batches", U(1100), "client_wait_us",
                               U(9000000), "client_step_us", U(101000000), "workers_busy_us", U(39800000),
                               "decode_us", U(39800000), NULL);
  expect(now, NULL, "trainer", "trainer-bound: input waits 8%");
  expect(now, before, "decode", "input-bound 80%: decode-limited, 2 workers busy 99% (decode 100% of their time)");
  /* nothing taken since: idle */
  expect(before, before, "idle", "idle: the client took no batch in the interval");
}

/* Two streams side by side for the job's 10 s (20 s of stream time), each
 * held back 3 s: memory kept them back 30% of their time, not 60% of the
 * job's age. Its streams are folded into it; a stream without a job is not. */
static void test_job(void **state) {
  group g, s;
  expect(make(&g, "job", TIMED(9), "workers_busy_us", U(8000000), "memory_wait_us", U(6000000), "stream_time_us",
              U(20000000), "window", U(4), NULL),
         NULL, "memory", "input-bound 90%: memory-limited: max_memory held the window back 30% of the time");
  expect(make(&g, "job", TIMED(9), "workers_busy_us", U(8000000), "memory_wait_us", U(3000000), "stream_time_us",
              U(20000000), NULL),
         NULL, "socket", "input-bound 90%: socket-limited");
  assert_true(verdict_judged(&g.g) && !verdict_folded(&g.g));
  make(&s, "stream", "job", U(0x1234), NULL);
  assert_true(verdict_folded(&s.g) && !verdict_judged(&s.g));
  make(&s, "stream", TIMED(1), NULL);
  assert_true(!verdict_folded(&s.g) && verdict_judged(&s.g));
  make(&s, "dataset", "job", U(0x1234), NULL);
  assert_true(!verdict_folded(&s.g) && !verdict_judged(&s.g));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_timing),  cmocka_unit_test(test_trainer),
      cmocka_unit_test(test_stages),     cmocka_unit_test(test_memory),
      cmocka_unit_test(test_client_and_socket), cmocka_unit_test(test_interval),
      cmocka_unit_test(test_job),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
