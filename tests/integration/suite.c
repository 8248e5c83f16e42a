/* suite.c -- see suite.h */
#include "suite.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  char err[512];
  if (!s || itest_tmpdir(s->root, sizeof s->root) < 0) return -1;
  snprintf(s->demo_dir, sizeof s->demo_dir, "%s/demo", s->root);
  snprintf(s->bad_dir, sizeof s->bad_dir, "%s/bad", s->root);
  snprintf(s->demo_arg, sizeof s->demo_arg, "demo=%s", s->demo_dir);
  snprintf(s->bad_arg, sizeof s->bad_arg, "bad=%s", s->bad_dir);
  if (itest_make_dataset(s->demo_dir, 6, err, sizeof err) < 0 ||
      itest_make_dataset(s->bad_dir, 6, err, sizeof err) < 0) {
    fprintf(stderr, "cannot make the datasets: %s\n", err);
    return -1;
  }
  char path[320], path2[320];
  snprintf(path, sizeof path, "%s/red_vertical/0005.jpg", s->demo_dir);
  if (unlink(path) < 0) return -1;

  /* Garbage in the middle of a class, and a real JPEG cut in half as the
   * very last sample, so that its replacement wraps to the epoch's start. */
  uint8_t junk[3000];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
  snprintf(path, sizeof path, "%s/blue_horizontal/0002_garbage.jpg", s->bad_dir);
  if (itest_write_file(path, junk, sizeof junk) < 0) return -1;
  size_t len;
  snprintf(path2, sizeof path2, "%s/green_vertical/0003.jpg", s->bad_dir);
  char *jpeg = itest_read_file(path2, &len);
  snprintf(path, sizeof path, "%s/red_vertical/zz_trunc.jpg", s->bad_dir);
  if (!jpeg || itest_write_file(path, jpeg, len / 2) < 0) return -1;
  free(jpeg);

  if (itest_folder_scan(s->demo_dir, &s->demo) < 0 || itest_folder_scan(s->bad_dir, &s->bad) < 0) return -1;
  s->garbage_idx = itest_folder_find(&s->bad, "blue_horizontal/0002_garbage.jpg");
  s->trunc_idx = itest_folder_find(&s->bad, "red_vertical/zz_trunc.jpg");
  if (s->demo.n != 47 || s->demo.nclasses != 8 || s->bad.n != 50 || s->garbage_idx < 0 ||
      s->trunc_idx != 49)
    return -1;
  *state = s;
  return 0;
}

int suite_teardown(void **state) {
  suite *s = *state;
  itest_folder_free(&s->demo);
  itest_folder_free(&s->bad);
  itest_rmtree(s->root);
  free(s);
  return 0;
}

int suite_kill_daemons(void **state) {
  suite *s = *state;
  for (int i = 0; i < SUITE_DAEMONS; i++) itest_daemon_kill(&s->d[i]);
  return 0;
}

itest_daemon *suite_start(suite *s, int slot, const char *name, int workers, int tcp) {
  return suite_start_with(s, slot, name, workers, tcp, NULL, NULL);
}

itest_daemon *suite_start_with(suite *s, int slot, const char *name, int workers, int tcp, const char *const *args,
                               const char *const *env) {
  itest_daemon_opts o = {.dir = s->root, .name = name, .workers = workers, .tcp = tcp,
                         .datasets = {s->demo_arg, s->bad_arg, NULL}, .args = args, .env = env};
  char err[1024];
  if (itest_daemon_start(&s->d[slot], &o, err, sizeof err) < 0) fail_msg("%s", err);
  return &s->d[slot];
}

void suite_stop(itest_daemon *d) {
  char err[1024];
  if (itest_daemon_stop(d, SUITE_STOP_MS, err, sizeof err) < 0) fail_msg("%s", err);
}

bfeed_client *suite_connect(const char *addr) {
  bfeed_client *c;
  bfeed_error err;
  SUITE_OK(bfeed_connect(addr, &c, &err), err);
  return c;
}

bfeed_stream *suite_open(bfeed_client *c, const char *ds, const bfeed_stream_opts *o) {
  bfeed_stream *st;
  bfeed_error err;
  SUITE_OK(bfeed_stream_open(c, ds, o, &st, &err), err);
  return st;
}

bfeed_batch *suite_next(bfeed_stream *st) {
  bfeed_batch *b;
  bfeed_error err;
  SUITE_OK(bfeed_stream_next(st, &b, &err), err);
  return b;
}

void suite_fetch(const char *addr, const char *ds, const bfeed_stream_opts *o, size_t max, itest_run *run) {
  bfeed_error err;
  int rc = itest_fetch(addr, ds, o, max, run, &err);
  int want = max ? 0 : BFEED_EEOF;
  if (rc != want) fail_msg("run on %s ended with %d (%s): %s", ds, rc, bfeed_strerror(rc), err.message);
}

void suite_assert_runs_equal(const itest_run *a, const itest_run *b) {
  long at = itest_run_diff(a, b);
  if (at >= 0)
    fail_msg("runs differ at batch %ld (lengths %zu and %zu)%s", at, a->n, b->n,
             (size_t)at < a->n && (size_t)at < b->n ? "" : ": one run is shorter");
}

void suite_train_opts(bfeed_stream_opts *o, uint64_t seed, uint64_t epochs) {
  itest_opts(o);
  o->seed = seed;
  o->epochs = epochs;
}

void suite_eval_opts(bfeed_stream_opts *o, uint64_t epochs) {
  itest_opts(o);
  o->mode = BFEED_MODE_EVAL;
  o->epochs = epochs;
}

void suite_prepare(void) {
  signal(SIGPIPE, SIG_IGN);
  const char *filter = getenv("BFEED_ITEST_FILTER");
  if (filter && *filter) cmocka_set_test_filter(filter);
}

bfeed_stream *suite_start_stream(suite *s, const char *name, const bfeed_stream_opts *o, itest_daemon **d,
                                 bfeed_client **c) {
  *d = suite_start(s, 0, name, 2, 0);
  *c = suite_connect((*d)->unix_addr);
  return suite_open(*c, "demo", o);
}

void suite_window_counters(bfeed_stream *st, uint64_t v[2]) {
  static const char *const names[] = {"in_flight", "unacked"};
  bfeed_error err;
  SUITE_OK(itest_counters(st, names, v, 2, &err), err);
}

int suite_window_sent(void *arg) {
  static const char *const names[] = {"in_flight", "unacked", "shm_batches"};
  suite_window *w = arg;
  bfeed_error err;
  SUITE_OK(itest_counters(w->st, names, w->v, 3, &err), err);
  uint64_t ahead = w->v[2] && w->window > 2 ? 2 : w->window;
  return w->v[1] == ahead && w->v[0] + w->v[1] == w->window;
}

void suite_raw_ack(int fd, uint32_t stream, uint64_t consumed) {
  uint8_t p[8];
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(consumed >> (8 * i));
  assert_int_equal(itest_raw_send(fd, FRAME_ACK, stream, p, sizeof p), 0);
}

int suite_raw_hello(const char *addr) {
  int fd = itest_raw_connect(addr);
  assert_true(fd >= 0);
  assert_int_equal(itest_raw_hello(fd), 0);
  return fd;
}

void suite_close_runs(bfeed_stream *st, bfeed_client *c, itest_run *ref, itest_run *got) {
  bfeed_stream_close(st);
  bfeed_close(c);
  itest_run_free(ref);
  itest_run_free(got);
}

void suite_raw_answers_then_close(int fd, uint32_t stream) {
  frame_header h;
  uint8_t *p;
  assert_int_equal(itest_raw_send(fd, FRAME_STATS_REQ, stream, NULL, 0), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_STATS, &h, &p), 0);
  assert_int_equal(h.stream, stream);
  free(p);
  close(fd);
}

int suite_raw_open(const char *addr, const bfeed_stream_opts *o) {
  int fd = suite_raw_hello(addr);
  assert_int_equal(itest_raw_open(fd, 1, "demo", o), 0);
  return fd;
}

int suite_idle_client(const char *addr) {
  bfeed_stream_opts big;
  suite_train_opts(&big, 2, 0);
  big.batch = 16;
  big.size = 64;
  big.window = 16;
  return suite_raw_open(addr, &big);
}
