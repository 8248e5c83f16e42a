/*
 * test_hostile.c -- the real daemon (suite.h) against what it must refuse
 * or survive: bad options and unknown datasets (from the library and from
 * raw clients), bytes that are no frame, frames that break the protocol,
 * clients that vanish or never read, and corrupt JPEGs, whose
 * replacements must still be a pure function of the stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "suite.h"
#include "wire.h"

/* ------------------------------------------------------------------ */
/* Sockets, handshake, refusals                                        */

static void check_serves(const char *addr, size_t nsamples) {
  bfeed_client *c = suite_connect(addr);
  assert_int_equal(bfeed_client_version(c), 1);
  assert_true(strncmp(bfeed_client_server(c), "bfeedd/", 7) == 0);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 0);
  bfeed_stream *st = suite_open(c, "demo", &o);
  bfeed_stream_info info;
  bfeed_stream_get_info(st, &info);
  assert_int_equal(info.samples, nsamples);
  assert_int_equal(info.batches_per_epoch, nsamples / 8);
  assert_int_equal(info.classes, 8);
  bfeed_batch *b = suite_next(st);
  itest_rec r;
  assert_int_equal(itest_rec_from_batch(b, &r), 0);
  for (int i = 0; i < 8; i++) assert_int_equal(r.idx[i], i);
  itest_rec_free(&r);
  bfeed_batch_release(b);
  bfeed_stream_close(st);
  bfeed_close(c);
}

static void test_sockets_and_refusals(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "sockets", 1, 1);
  check_serves(d->unix_addr, s->demo.n);
  check_serves(d->tcp_addr, s->demo.n);

  bfeed_client *c = suite_connect(d->tcp_addr);
  bfeed_stream_opts o;
  bfeed_stream *st;
  bfeed_error err;
  itest_opts(&o);
  assert_int_equal(bfeed_stream_open(c, "no_such_set", &o, &st, &err), BFEED_ENODATASET);
  assert_int_equal(err.code, BFEED_ENODATASET);
  assert_non_null(strstr(err.message, "no_such_set"));

  /* The library refuses bad options before sending them... */
  bfeed_stream_opts bad[3];
  for (int i = 0; i < 3; i++) itest_opts(&bad[i]);
  bad[0].batch = 0;
  bad[1].window = 0;
  bad[2].shard_index = 2, bad[2].shard_count = 2;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(bfeed_stream_open(c, "demo", &bad[i], &st, &err), BFEED_EINVAL);
    assert_int_equal(err.code, BFEED_EINVAL);
  }
  /* ...and a refused open leaves the connection usable. */
  st = suite_open(c, "demo", &o);
  bfeed_batch_release(suite_next(st));
  bfeed_stream_close(st);
  bfeed_close(c);

  /* The daemon refuses them too, per stream, when a client sends them. */
  int fd = suite_raw_hello(d->unix_addr);
  uint32_t stream;
  int code;
  char msg[256];
  for (uint32_t i = 0; i < 3; i++) {
    assert_int_equal(itest_raw_open(fd, 10 + i, "demo", &bad[i]), 0);
    assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
    assert_int_equal(stream, 10 + i);
    assert_int_equal(code, BFEED_EINVAL);
  }
  assert_int_equal(itest_raw_open(fd, 20, "nope", &o), 0);
  assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(stream, 20);
  assert_int_equal(code, BFEED_ENODATASET);
  assert_non_null(strstr(msg, "nope"));
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_open(fd, 21, "demo", &o), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  assert_int_equal(h.stream, 21);
  free(p);
  close(fd);
  suite_stop(d);
}


/* ------------------------------------------------------------------ */
/* Misbehaving clients                                                 */

/* A frame header with its fields set by hand. */
static void put_header(uint8_t out[FRAME_HEADER_SIZE], uint32_t magic, int type, uint32_t stream,
                       uint32_t length, uint64_t checksum) {
  wire_put32(out, magic);
  out[4] = 1;
  out[5] = (uint8_t)type;
  wire_put16(out + 6, 0);
  wire_put32(out + 8, stream);
  wire_put32(out + 12, length);
  wire_put64(out + 16, checksum);
}

/* Expect the daemon to answer with a connection error (stream 0) of
 * code, then hang up. */
static void expect_conn_error(int fd, int code) {
  uint32_t stream;
  int got;
  char msg[256];
  assert_int_equal(itest_raw_expect_error(fd, &stream, &got, msg, sizeof msg), 0);
  assert_int_equal(stream, 0);
  if (got != code) fail_msg("expected %s, got %s: %s", bfeed_strerror(code), bfeed_strerror(got), msg);
  assert_int_equal(itest_raw_drain_to_eof(fd), 0);
  close(fd);
}

/* Send bytes on a fresh connection (after a handshake if asked) and
 * expect a connection error of code. */
static void expect_rejected(const char *addr, int hello, const void *bytes, size_t n, int code) {
  int fd = itest_raw_connect(addr);
  assert_true(fd >= 0);
  if (hello) assert_int_equal(itest_raw_hello(fd), 0);
  assert_int_equal(itest_raw_write(fd, bytes, n), 0);
  expect_conn_error(fd, code);
}

/* HELLO, OPEN with a deep window, take one batch, hang up without CLOSE. */
static void vanish_mid_stream(const char *addr) {
  bfeed_stream_opts o;
  suite_train_opts(&o, 1, 0);
  o.window = 16;
  o.size = 64;
  int fd = suite_raw_open(addr, &o);
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_expect(fd, FRAME_BATCH, &h, &p), 0);
  free(p);
  close(fd);
}

static void test_bad_clients(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "bad-clients", 2, 1);
  bfeed_stream_opts o, big;
  itest_run ref = {0}, got = {0}, later = {0};
  bfeed_error err;
  suite_train_opts(&o, 9, 3);
  suite_fetch(d->unix_addr, "demo", &o, 0, &ref);

  bfeed_client *c = suite_connect(d->tcp_addr);
  bfeed_stream *w = suite_open(c, "demo", &o);
  SUITE_OK(itest_collect(w, 2, &got, &err), err);

  /* Clients that vanish with batches in flight. */
  for (int i = 0; i < 3; i++) vanish_mid_stream(i == 1 ? d->tcp_addr : d->unix_addr);
  bfeed_client *gone = suite_connect(d->unix_addr);
  bfeed_stream *gs = suite_open(gone, "demo", &o);
  bfeed_batch_release(suite_next(gs));
  bfeed_close(gone); /* no CLOSE for gs: the socket just goes */
  SUITE_OK(itest_collect(w, 4, &got, &err), err);

  /* Bytes that are no bfeed frame at all. */
  static const char http[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  expect_rejected(d->unix_addr, 0, http, sizeof http - 1, BFEED_EPROTO);
  uint8_t hdr[FRAME_HEADER_SIZE];
  put_header(hdr, 0x46454542u, FRAME_HELLO, 0, 0, frame_checksum("", 0));
  expect_rejected(d->tcp_addr, 0, hdr, sizeof hdr, BFEED_EPROTO); /* bad magic */
  put_header(hdr, FRAME_MAGIC, FRAME_OPEN, 1, 0, frame_checksum("", 0));
  expect_rejected(d->unix_addr, 0, hdr, sizeof hdr, BFEED_EPROTO); /* OPEN before HELLO */
  put_header(hdr, FRAME_MAGIC, FRAME_HELLO, 0, UINT32_MAX, 0);
  expect_rejected(d->unix_addr, 0, hdr, sizeof hdr, BFEED_ETOOBIG);
  put_header(hdr, FRAME_MAGIC, FRAME_ACK, 1, FRAME_MAX_CONTROL + 1, 0);
  expect_rejected(d->unix_addr, 1, hdr, sizeof hdr, BFEED_ETOOBIG);
  uint8_t frame[FRAME_HEADER_SIZE + 8];
  wire_put64(frame + FRAME_HEADER_SIZE, 1);
  put_header(frame, FRAME_MAGIC, FRAME_ACK, 1, 8, frame_checksum(frame + FRAME_HEADER_SIZE, 8) ^ 1);
  expect_rejected(d->unix_addr, 1, frame, sizeof frame, BFEED_ECHECKSUM);
  SUITE_OK(itest_collect(w, 7, &got, &err), err);

  /* Half a header, then gone. */
  int fd = itest_raw_connect(d->unix_addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_write(fd, frame, 10), 0);
  close(fd);

  /* An ACK for batches that were never sent. */
  suite_train_opts(&big, 1, 0);
  big.window = 1;
  fd = suite_raw_open(d->unix_addr, &big);
  uint8_t many[8];
  wire_put64(many, 1000);
  assert_int_equal(itest_raw_send(fd, FRAME_ACK, 1, many, sizeof many), 0);
  expect_conn_error(fd, BFEED_EPROTO);

  /* A client that opens a deep stream of big batches and never reads. */
  int idle = suite_idle_client(d->unix_addr);

  int rc = itest_collect(w, 0, &got, &err);
  if (rc != BFEED_EEOF) fail_msg("the well-behaved stream ended with %d: %s", rc, err.message);
  suite_assert_runs_equal(&got, &ref);
  bfeed_stream_close(w);
  bfeed_close(c);

  /* New clients are still served, while the idle one still hangs on. */
  suite_eval_opts(&o, 0);
  suite_fetch(d->tcp_addr, "demo", &o, 2, &later);
  assert_int_equal(later.b[1].idx[0], 8);
  assert_true(itest_daemon_alive(d));
  close(idle);
  itest_run_free(&ref);
  itest_run_free(&got);
  itest_run_free(&later);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* TIMING (PROTOCOL.md "Is the job input-bound?")                      */

/* The stream's counter called name in a STATS frame's payload. */
static uint64_t stats_value(const uint8_t *p, uint32_t n, const char *name) {
  msg_counter c[MSG_MAX_COUNTERS];
  size_t count;
  char why[256];
  assert_int_equal(msg_stats_decode(p, n, c, MSG_MAX_COUNTERS, &count, why, sizeof why), 0);
  for (size_t i = 0; i < count; i++)
    if (strcmp(c[i].name, name) == 0) return c[i].value;
  fail_msg("no counter %s in STATS", name);
  return 0;
}

/* OPEN_OK offers TIMING; a client's TIMING lands in its stream's counters
 * (flags for later ignored, fields past the flags skipped), one for a
 * stream that is not open is ignored, and a truncated one ends the
 * connection (EPROTO) and nothing else. */
static void test_timing_frames(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "timing", 2, 1);
  bfeed_stream_opts o;
  suite_train_opts(&o, 4, 0);
  o.window = 1;
  int fd = suite_raw_open(d->unix_addr, &o);
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  msg_open_ok ok;
  char why[256];
  assert_int_equal(msg_open_ok_decode(p, h.length, &ok, why, sizeof why), 0);
  free(p);
  assert_true(ok.features & MSG_FEATURE_TIMING);

  uint8_t t[MSG_TIMING_FLAGS_SIZE + 8] = {0};
  const uint64_t v[7] = {41, 2500000, 7500000, 3000, 90000, 120000, 777};
  for (int i = 0; i < 7; i++) wire_put64(t + 8 * i, v[i]);
  wire_put64(t + MSG_TIMING_SIZE, 0xdeadbee0);       /* flags: only bits for later (no job here either) */
  wire_put64(t + MSG_TIMING_FLAGS_SIZE, 0xdeadbeef); /* a later client's field */
  assert_int_equal(itest_raw_send(fd, FRAME_TIMING, 9, t, MSG_TIMING_SIZE), 0); /* no stream 9: ignored */
  assert_int_equal(itest_raw_send(fd, FRAME_TIMING, 1, t, sizeof t), 0);
  assert_int_equal(itest_raw_send(fd, FRAME_STATS_REQ, 1, NULL, 0), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_STATS, &h, &p), 0);
  static const char *const names[7] = {"client_batches",     "client_wait_us",       "client_step_us",
                                       "client_wait_p50_us", "client_wait_p99_us",   "client_first_wait_us",
                                       "client_expand_us"};
  for (int i = 0; i < 7; i++) assert_int_equal(stats_value(p, h.length, names[i]), v[i]);
  assert_int_equal(stats_value(p, h.length, "wait_fraction_ppm"), 250000); /* 2.5 / (2.5 + 7.5) */
  free(p);

  bfeed_client *c = suite_connect(d->unix_addr); /* a bystander, streaming throughout */
  bfeed_stream *w = suite_open(c, "demo", &o);
  bfeed_batch_release(suite_next(w));
  assert_int_equal(itest_raw_send(fd, FRAME_TIMING, 1, t, MSG_TIMING_SIZE - 1), 0);
  expect_conn_error(fd, BFEED_EPROTO);
  for (int i = 0; i < 3; i++) bfeed_batch_release(suite_next(w));
  bfeed_stream_close(w);
  bfeed_close(c);
  assert_true(itest_daemon_alive(d));
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Corrupt files                                                       */

static int is_bad(const suite *s, int64_t idx) { return idx == s->garbage_idx || idx == s->trunc_idx; }

static void test_corrupt_jpeg(void **state) {
  suite *s = *state;
  itest_daemon *d1 = suite_start(s, 0, "corrupt-w1", 1, 0), *d2 = suite_start(s, 1, "corrupt-w2", 2, 0);
  const size_t n = s->bad.n;
  bfeed_client *c = suite_connect(d1->unix_addr);
  bfeed_stream_opts o;
  bfeed_error err;
  suite_eval_opts(&o, 1);
  o.normalize = BFEED_NORM_NONE;
  o.keep_partial = 1;
  bfeed_stream *st = suite_open(c, "bad", &o);
  itest_run run = {0};
  assert_int_equal(itest_collect(st, 0, &run, &err), BFEED_EEOF);
  assert_int_equal(run.n, (n + 7) / 8);

  /* Full batches; each bad file replaced by the next good sample in the
   * epoch's order (wrapping at the end), whose pixels it then repeats. */
  int64_t served[64];
  const uint8_t *image[64];
  size_t got = 0, img_bytes = 3 * 32 * 32 * 2, nbytes;
  for (size_t k = 0; k < run.n; k++) {
    assert_int_equal(run.b[k].count, k + 1 < run.n ? 8 : n % 8);
    const uint8_t *data = itest_rec_data(&run.b[k], "image", &nbytes);
    assert_non_null(data);
    assert_int_equal(nbytes, run.b[k].count * img_bytes);
    for (uint32_t i = 0; i < run.b[k].count; i++, got++) {
      served[got] = run.b[k].idx[i];
      image[got] = data + i * img_bytes;
    }
  }
  assert_int_equal(got, n);
  for (size_t p = 0; p < n; p++) {
    int64_t want = (int64_t)p;
    while (is_bad(s, want)) want = (want + 1) % (int64_t)n;
    assert_int_equal(served[p], want);
    assert_memory_equal(image[p], image[want], img_bytes);
    assert_int_equal(run.b[p / 8].labels[p % 8], s->bad.labels[want]);
  }
  static const char *const skipped_name[] = {"skipped"};
  uint64_t skipped;
  SUITE_OK(itest_counters(st, skipped_name, &skipped, 1, &err), err);
  assert_int_equal(skipped, 2);
  bfeed_stream_close(st);
  bfeed_close(c);
  itest_run_free(&run);

  char *log = itest_read_file(d1->log_path, NULL);
  assert_non_null(log);
  assert_non_null(strstr(log, "blue_horizontal/0002_garbage.jpg"));
  assert_non_null(strstr(log, "red_vertical/zz_trunc.jpg"));
  free(log);

  /* Replacements are part of the pure function: 1 and 2 workers agree. */
  itest_run a = {0}, b = {0};
  suite_train_opts(&o, 8, 2);
  suite_fetch(d1->unix_addr, "bad", &o, 0, &a);
  suite_fetch(d2->unix_addr, "bad", &o, 0, &b);
  suite_assert_runs_equal(&a, &b);
  for (size_t k = 0; k < a.n; k++)
    for (uint32_t i = 0; i < a.b[k].count; i++) assert_false(is_bad(s, a.b[k].idx[i]));
  itest_run_free(&a);
  itest_run_free(&b);
  suite_stop(d1);
  suite_stop(d2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_sockets_and_refusals, suite_kill_daemons),
      cmocka_unit_test_teardown(test_bad_clients, suite_kill_daemons),
      cmocka_unit_test_teardown(test_timing_frames, suite_kill_daemons),
      cmocka_unit_test_teardown(test_corrupt_jpeg, suite_kill_daemons),
  };
  return SUITE_RUN("hostile", tests);
}
