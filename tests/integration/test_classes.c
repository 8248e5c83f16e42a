/*
 * test_classes.c -- a stream's class names (CLASSES_REQ / CLASSES,
 * bfeed_stream_class_names) from the real daemon (suite.h's "demo"),
 * against the class folders the suite finds itself: the raw frames and
 * what the daemon refuses (a page past the names, a short request, stream
 * 0, a stream not open), the library on one daemon and over two, and a
 * daemon that predates class names, which the library must not send the
 * frame to (it would end the connection). Python's test_classes.py holds
 * the torchvision oracle and the names that take several pages.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "msg.h"
#include "suite.h"

/* The suite's class names by label, from the "class/file" paths it found. */
static char **classes_oracle(const itest_folder *f) {
  char **v = calloc(f->nclasses, sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < f->n; i++) {
    size_t k = (size_t)f->labels[i], len = strcspn(f->names[i], "/");
    if (!v[k]) assert_non_null(v[k] = strndup(f->names[i], len));
  }
  for (size_t k = 0; k < f->nclasses; k++) assert_non_null(v[k]);
  return v;
}

static void classes_expect(int fd, uint32_t first, const char *const *want, uint32_t total) {
  uint8_t req[4] = {(uint8_t)first, (uint8_t)(first >> 8), (uint8_t)(first >> 16), (uint8_t)(first >> 24)};
  frame_header h;
  uint8_t *p;
  msg_classes m;
  char why[256];
  assert_int_equal(itest_raw_send(fd, FRAME_CLASSES_REQ, 1, req, sizeof req), 0);
  assert_int_equal(itest_raw_expect(fd, FRAME_CLASSES, &h, &p), 0);
  assert_int_equal(h.stream, 1);
  assert_int_equal(msg_classes_decode(p, h.length, &m, why, sizeof why), 0);
  assert_int_equal(m.total, total);
  assert_int_equal(m.first, first);
  assert_int_equal(m.count, total - first); /* a few short names fit one page */
  size_t off = 0, len;
  for (uint32_t i = 0; i < m.count; i++) {
    const char *name = msg_classes_name(&m, &off, &len);
    assert_int_equal(len, strlen(want[first + i]));
    assert_memory_equal(name, want[first + i], len);
  }
  free(p);
}

static void expect_error_on(int fd, uint32_t want_stream, int want_code, const char *needle) {
  uint32_t stream;
  int code;
  char msg[256];
  assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(stream, want_stream);
  if (code != want_code) fail_msg("expected %s, got %s: %s", bfeed_strerror(want_code), bfeed_strerror(code), msg);
  if (!strstr(msg, needle)) fail_msg("'%s' does not say '%s'", msg, needle);
}

/* The frames as PROTOCOL.md has them, and what breaks them: a page past
 * the names fails the stream (EINVAL), the connection lives; a stream not
 * open gets EINVAL on its id; a short request or one on stream 0 ends the
 * connection (EPROTO). */
static void test_raw_frames(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "classes-raw", 1, 0);
  char **want = classes_oracle(&s->demo);
  uint32_t n = (uint32_t)s->demo.nclasses;
  bfeed_stream_opts o;
  suite_eval_opts(&o, 0);
  o.select = BFEED_SELECT_ON_DEMAND; /* builds nothing: the names alone */
  int fd = suite_raw_open(d->unix_addr, &o);
  frame_header h;
  uint8_t *p;
  msg_open_ok ok;
  char why[256];
  assert_int_equal(itest_raw_expect(fd, FRAME_OPEN_OK, &h, &p), 0);
  assert_int_equal(msg_open_ok_decode(p, h.length, &ok, why, sizeof why), 0);
  free(p);
  assert_true(ok.features & MSG_FEATURE_CLASSES);
  assert_int_equal(ok.classes, n);
  classes_expect(fd, 0, (const char *const *)want, n);
  classes_expect(fd, 3, (const char *const *)want, n);
  classes_expect(fd, n, (const char *const *)want, n); /* none left: an empty page */
  uint8_t req[4] = {0};
  assert_int_equal(itest_raw_send(fd, FRAME_CLASSES_REQ, 9, req, sizeof req), 0);
  expect_error_on(fd, 9, BFEED_EINVAL, "no open stream 9");
  req[0] = (uint8_t)(n + 1);
  assert_int_equal(itest_raw_send(fd, FRAME_CLASSES_REQ, 1, req, sizeof req), 0);
  expect_error_on(fd, 1, BFEED_EINVAL, "past dataset demo's");
  suite_raw_answers_then_close(fd, 0);

  fd = suite_raw_open(d->unix_addr, &o);
  assert_int_equal(itest_raw_send(fd, FRAME_CLASSES_REQ, 1, req, 3), 0);
  expect_error_on(fd, 0, BFEED_EPROTO, "CLASSES_REQ truncated");
  close(fd);
  fd = suite_raw_hello(d->unix_addr);
  assert_int_equal(itest_raw_send(fd, FRAME_CLASSES_REQ, 0, req, sizeof req), 0);
  expect_error_on(fd, 0, BFEED_EPROTO, "stream 0");
  close(fd);
  for (uint32_t k = 0; k < n; k++) free(want[k]);
  free(want);
  assert_true(itest_daemon_alive(d));
  suite_stop(d);
}

/* bfeed_stream_class_names equals the oracle: on a stream that never asked
 * for a batch, on one that took batches, and over two daemons. */
static void expect_names(const char *addr, const itest_folder *f, int take) {
  char **want = classes_oracle(f), **names;
  size_t count;
  bfeed_error err;
  bfeed_client *c = suite_connect(addr);
  bfeed_stream_opts o;
  suite_train_opts(&o, 5, 0);
  if (!take) o.select = BFEED_SELECT_ON_DEMAND;
  bfeed_stream *st = suite_open(c, "demo", &o);
  for (int i = 0; i < take; i++) bfeed_batch_release(suite_next(st));
  SUITE_OK(bfeed_stream_class_names(st, &names, &count, &err), err);
  assert_int_equal(count, f->nclasses);
  for (size_t k = 0; k < count; k++) assert_string_equal(names[k], want[k]);
  assert_null(names[count]);
  bfeed_class_names_free(names, count);
  for (size_t k = 0; k < f->nclasses; k++) free(want[k]);
  free(want);
  bfeed_stream_close(st);
  bfeed_close(c);
}

static void test_library(void **state) {
  suite *s = *state;
  itest_daemon *a = suite_start(s, 0, "classes-a", 1, 0), *b = suite_start(s, 1, "classes-b", 1, 0);
  expect_names(a->unix_addr, &s->demo, 0);
  expect_names(a->unix_addr, &s->demo, 3);
  char both[512];
  snprintf(both, sizeof both, "%s,%s", a->unix_addr, b->unix_addr);
  expect_names(both, &s->demo, 0);
  bfeed_class_names_free(NULL, 0);
  suite_stop(a);
  suite_stop(b);
}

/* A daemon before class names: its OPEN_OK offers no features (28 bytes),
 * and it would end the connection at the unknown frame type. */
typedef struct old_daemon {
  int lfd;
  char addr[160];
  pthread_t thread;
  atomic_int unknown; /* frames it would not have known */
} old_daemon;

static void old_reply(int fd, int type, uint32_t stream, wbuf *w, size_t len) {
  itest_raw_send(fd, type, stream, w->data, (uint32_t)len);
  wbuf_free(w);
  wbuf_init(w);
}

static void *old_main(void *arg) {
  old_daemon *o = arg;
  int fd = accept(o->lfd, NULL, NULL);
  frame_header h;
  uint8_t *p;
  wbuf w;
  wbuf_init(&w);
  while (fd >= 0 && itest_raw_recv(fd, &h, &p) == 0) {
    free(p);
    if (h.type == FRAME_HELLO) {
      msg_hello_ok ok = {.version = 1, .max_frame = FRAME_MAX_CONTROL, .server = "bfeedd/old"};
      msg_hello_ok_encode(&w, &ok);
      old_reply(fd, FRAME_HELLO_OK, 0, &w, w.len);
    } else if (h.type == FRAME_OPEN) {
      msg_open_ok ok = {.samples = 8, .batches_per_epoch = 2, .classes = 3, .fingerprint = 1};
      msg_open_ok_encode(&w, &ok);
      old_reply(fd, FRAME_OPEN_OK, h.stream, &w, 28); /* before features */
    } else if (h.type == FRAME_STATS_REQ) {
      msg_counter ctr = {"batches", 0};
      msg_stats_encode(&w, &ctr, 1);
      old_reply(fd, FRAME_STATS, h.stream, &w, w.len);
    } else if (h.type != FRAME_CLOSE) {
      atomic_fetch_add(&o->unknown, 1);
      break;
    }
  }
  wbuf_free(&w);
  if (fd >= 0) close(fd);
  return NULL;
}

static void test_old_daemon(void **state) {
  suite *s = *state;
  old_daemon o = {.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s/old.sock", s->root);
  snprintf(o.addr, sizeof o.addr, "unix:%s", sa.sun_path);
  unlink(sa.sun_path);
  assert_true(o.lfd >= 0);
  assert_int_equal(bind(o.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(o.lfd, 1), 0);
  assert_int_equal(pthread_create(&o.thread, NULL, old_main, &o), 0);

  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  co.shm = 0;
  bfeed_client *c;
  bfeed_error err;
  SUITE_OK(bfeed_connect2(o.addr, &co, &c, &err), err);
  bfeed_stream_opts so;
  suite_eval_opts(&so, 0);
  bfeed_stream *st = suite_open(c, "demo", &so);
  char **names = (char **)&o; /* anything but NULL: the call clears it */
  size_t count = 7;
  assert_int_equal(bfeed_stream_class_names(st, &names, &count, &err), BFEED_EUNSUPPORTED);
  assert_int_equal(err.code, BFEED_EUNSUPPORTED);
  if (!strstr(err.message, "does not serve class names") || !strstr(err.message, "bfeedd/old"))
    fail_msg("the message does not say why: %s", err.message);
  assert_null(names);
  assert_int_equal(count, 0);
  bfeed_counter ctr[16];
  SUITE_OK(bfeed_stream_stats(st, ctr, 16, &count, &err), err); /* the connection lives */
  assert_int_equal(atomic_load(&o.unknown), 0);
  bfeed_stream_close(st);
  bfeed_close(c);
  pthread_join(o.thread, NULL);
  close(o.lfd);
  assert_int_equal(atomic_load(&o.unknown), 0);
}

SUITE_MAIN_KILLING("classes", SUITE_KILLING(test_raw_frames), SUITE_KILLING(test_library),
                   SUITE_KILLING(test_old_daemon))
