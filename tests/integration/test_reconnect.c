/*
 * test_reconnect.c -- libbfeed across faults (suite.h): the daemon killed
 * (-9) or stopped (SIGTERM) mid-stream and started again on the same
 * address; the stream goes on with exactly the batches of an uninterrupted
 * run, none missing, none twice. Deadlines, refusals that must not be
 * retried, and the client API's lifetime rules (issue 12, defect 11): a
 * thread blocked in a call while another closes the client, and counter
 * names that stay valid until the stream is closed. A fake daemon (raw
 * frames, below) answers where the real one cannot be made to misbehave.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "msg.h"
#include "suite.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start (or start again) a daemon in slot 0 under name; serving datasets
 * (NULL: "demo" and "bad"); on TCP too when tcp_addr is given, at that
 * address ("": a free port); args: more flags (NULL: none). */
static itest_daemon *restart_with(suite *s, const char *name, const char *const *datasets, const char *tcp_addr,
                                  const char *const *args) {
  char tcp[32] = "", err[1024];
  if (tcp_addr) snprintf(tcp, sizeof tcp, "%s", tcp_addr); /* the start clears the slot it may come from */
  itest_daemon_opts o = {.dir = s->root, .name = name, .workers = 2, .tcp = tcp_addr != NULL,
                         .tcp_addr = tcp[0] ? tcp : NULL, .datasets = {s->demo_arg, s->bad_arg, NULL},
                         .args = args};
  for (int i = 0; datasets && i < 4; i++)
    if (!(o.datasets[i] = datasets[i])) break;
  if (itest_daemon_start(&s->d[0], &o, err, sizeof err) < 0) fail_msg("%s", err);
  return &s->d[0];
}

static itest_daemon *restart(suite *s, const char *name, const char *const *datasets, const char *tcp_addr) {
  return restart_with(s, name, datasets, tcp_addr, NULL);
}

static void collect(bfeed_stream *st, size_t max, itest_run *run, int want) {
  bfeed_error err = {0};
  int rc = itest_collect(st, max, run, &err);
  if (rc != want) fail_msg("collecting to %zu batches gave %d (%s): %s", max, rc, bfeed_strerror(rc), err.message);
}

/* ------------------------------------------------------------------ */
/* Exactly once across kill -9 and SIGTERM                             */

/* The end of a resume test: the stream, its client and the daemon go, and
 * both runs are freed. */
static void finish(bfeed_stream *st, bfeed_client *c, itest_daemon *d, itest_run *ref, itest_run *got) {
  suite_close_runs(st, c, ref, got);
  suite_stop(d);
}

static void test_kill9_resume_exact(void **state) {
  suite *s = *state;
  bfeed_stream_opts o;
  suite_train_opts(&o, 11, 3); /* 47 samples, batch 8: 5 batches an epoch, 15 in all */
  itest_daemon *d = restart(s, "kill9", NULL, NULL);
  itest_run ref = {0}, got = {0};
  suite_fetch(d->unix_addr, "demo", &o, 0, &ref);
  assert_int_equal(ref.n, 15);

  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *st = suite_open(c, "demo", &o);
  collect(st, 7, &got, 0); /* into epoch 1 */
  suite_window w = {st, o.window, {0}};
  assert_int_equal(itest_poll(suite_window_sent, &w, 5000, 2), 1);
  itest_daemon_kill(d);
  itest_sleep_ms(300); /* the client finds nobody there for a while */
  d = restart(s, "kill9", NULL, NULL);
  collect(st, 10, &got, 0); /* to the end of epoch 1 exactly */
  assert_int_equal(got.b[9].epoch, 1);
  assert_int_equal(got.b[9].index, 4);
  /* Stopped at the epoch boundary: the next batch is epoch 2's first. */
  assert_int_equal(itest_poll(suite_window_sent, &w, 5000, 2), 1);
  suite_stop(d);
  d = restart(s, "kill9", NULL, NULL);
  collect(st, 0, &got, BFEED_EEOF);
  long diff = itest_run_diff(&ref, &got);
  if (diff >= 0)
    fail_msg("resumed run differs from the uninterrupted one at batch %ld (%zu batches, %zu expected)", diff, got.n,
             ref.n);
  assert_int_equal(bfeed_client_reconnects(c), 2);
  finish(st, c, d, &ref, &got);
}

/* Over TCP, the daemon back on the same port; the caller is waiting in
 * bfeed_stream_next when it comes back. */
static void test_tcp_resume_exact(void **state) {
  suite *s = *state;
  bfeed_stream_opts o;
  suite_eval_opts(&o, 2);
  o.window = 2;
  itest_daemon *d = restart(s, "tcp", NULL, "");
  itest_run ref = {0}, got = {0};
  suite_fetch(d->unix_addr, "demo", &o, 0, &ref);
  char addr[32];
  snprintf(addr, sizeof addr, "%s", d->tcp_addr);
  bfeed_client *c = suite_connect(addr);
  bfeed_stream *st = suite_open(c, "demo", &o);
  collect(st, 3, &got, 0);
  itest_daemon_kill(d);
  itest_sleep_ms(200);
  d = restart(s, "tcp", NULL, addr);
  collect(st, 0, &got, BFEED_EEOF);
  assert_int_equal(itest_run_diff(&ref, &got), -1);
  assert_true(bfeed_client_reconnects(c) >= 1);
  finish(st, c, d, &ref, &got);
}

/* The daemon asks TCP clients for a token: the client's goes with every
 * HELLO, so the stream resumes across a kill -9; a daemon back with
 * another token refuses it, and that is not tried again. */
static void test_token_across_restart(void **state) {
  suite *s = *state;
  char tok[256], other[256];
  snprintf(tok, sizeof tok, "%s/auth-token", s->root);
  snprintf(other, sizeof other, "%s/auth-other", s->root);
  assert_int_equal(itest_write_file(tok, "right-token\n", 12), 0);
  assert_int_equal(itest_write_file(other, "other-token\n", 12), 0);
  const char *with_tok[] = {"--auth-token-file", tok, NULL}, *with_other[] = {"--auth-token-file", other, NULL};
  bfeed_stream_opts o;
  bfeed_connect_opts co;
  bfeed_error err;
  bfeed_client *c;
  suite_eval_opts(&o, 2);
  itest_daemon *d = restart_with(s, "auth", NULL, "", with_tok);
  char addr[32];
  snprintf(addr, sizeof addr, "%s", d->tcp_addr);
  itest_run ref = {0}, got = {0};
  suite_fetch(d->unix_addr, "demo", &o, 0, &ref); /* Unix socket clients need none */
  assert_int_equal(bfeed_connect(addr, &c, &err), BFEED_EAUTH);
  bfeed_connect_opts_init(&co);
  co.token_file = tok;
  SUITE_OK(bfeed_connect2(addr, &co, &c, &err), err);
  bfeed_stream *st = suite_open(c, "demo", &o);
  collect(st, 3, &got, 0);
  itest_daemon_kill(d);
  d = restart_with(s, "auth", NULL, addr, with_tok);
  collect(st, 6, &got, 0);
  assert_int_equal(bfeed_client_reconnects(c), 1);
  itest_daemon_kill(d);
  d = restart_with(s, "auth", NULL, addr, with_other);
  double t0 = now_s();
  int rc = itest_collect(st, 0, &got, &err);
  if (rc != BFEED_EAUTH || !strstr(err.message, "wrong token"))
    fail_msg("after the token changed: %d (%s): %s", rc, bfeed_strerror(rc), err.message);
  assert_true(now_s() - t0 < 30); /* not the deadline */
  assert_int_equal(bfeed_client_reconnects(c), 2);
  assert_int_equal(itest_run_diff(&ref, &got), (long)got.n); /* what came was the uninterrupted run's start */
  finish(st, c, d, &ref, &got);
}

/* ------------------------------------------------------------------ */
/* Giving up: the deadline, and errors that another try would not cure  */

/* Take batches until a call fails; its code, with the message in err. */
static int next_until_error(bfeed_stream *st, bfeed_error *err) {
  for (int k = 0; k < 1000; k++) {
    bfeed_batch *b;
    int rc = bfeed_stream_next(st, &b, err);
    if (rc < 0) {
      if (b) fail_msg("a failed bfeed_stream_next handed out a batch");
      return rc;
    }
    bfeed_batch_release(b);
  }
  fail_msg("the stream never failed");
  return 0;
}

static void test_deadline_expiry(void **state) {
  suite *s = *state;
  bfeed_stream_opts o;
  bfeed_connect_opts co;
  bfeed_error err;
  bfeed_client *c;
  suite_eval_opts(&o, 0);
  itest_daemon *d = restart(s, "deadline", NULL, NULL);
  bfeed_connect_opts_init(&co);
  assert_int_equal(co.reconnect, 1); /* on by default */
  co.reconnect_deadline = 0.5;
  SUITE_OK(bfeed_connect2(d->unix_addr, &co, &c, &err), err);
  bfeed_stream *st = suite_open(c, "demo", &o);
  bfeed_batch_release(suite_next(st));
  double t0 = now_s();
  itest_daemon_kill(d);
  int rc = next_until_error(st, &err);
  double took = now_s() - t0;
  assert_int_equal(rc, BFEED_ECONNECT);
  if (!strstr(err.message, "could not reconnect within 0.5 s") || !strstr(err.message, "cannot connect to"))
    fail_msg("unclear deadline error: %s", err.message);
  assert_true(took >= 0.45); /* it did keep trying that long, */
  assert_true(took < 30);    /* and then stopped */
  assert_true(bfeed_client_reconnects(c) >= 1);
  /* The client stays dead, with the same reason. */
  bfeed_error again;
  bfeed_stream *st2;
  assert_int_equal(bfeed_stream_open(c, "demo", &o, &st2, &again), BFEED_ECONNECT);
  assert_string_equal(again.message, err.message);
  bfeed_stream_close(st);
  bfeed_close(c);

  /* Out of range: refused up front. */
  co.reconnect_deadline = 0;
  assert_int_equal(bfeed_connect2("unix:/nonexistent.sock", &co, &c, &err), BFEED_EINVAL);
  assert_non_null(strstr(err.message, "reconnect_deadline"));

  /* Reconnecting off: the loss is reported at once, as it happened. */
  d = restart(s, "deadline", NULL, NULL);
  co.reconnect = 0;
  co.reconnect_deadline = 60;
  SUITE_OK(bfeed_connect2(d->unix_addr, &co, &c, &err), err);
  st = suite_open(c, "demo", &o);
  bfeed_batch_release(suite_next(st));
  itest_daemon_kill(d);
  t0 = now_s();
  rc = next_until_error(st, &err);
  if (rc != BFEED_ECLOSED && rc != BFEED_EIO) /* a reset, when the daemon died with bytes unread */
    fail_msg("after kill -9 without reconnecting: %d (%s): %s", rc, bfeed_strerror(rc), err.message);
  assert_true(now_s() - t0 < 30); /* not the 60 s deadline */
  assert_int_equal(bfeed_client_reconnects(c), 0);
  bfeed_stream_close(st);
  bfeed_close(c);
}

/* A daemon that comes back without the stream's dataset refuses to reopen
 * it: that stream fails with the daemon's reason, at once; another stream
 * of the same client resumes exactly. A dataset that changed shape cannot
 * continue the sequence: refused by the client. */
static void test_reopen_refused(void **state) {
  suite *s = *state;
  bfeed_stream_opts o;
  bfeed_error err;
  suite_eval_opts(&o, 2);
  itest_daemon *d = restart(s, "refused", NULL, NULL);
  itest_run ref = {0}, got = {0}, lost = {0};
  suite_fetch(d->unix_addr, "bad", &o, 0, &ref);
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *a = suite_open(c, "demo", &o), *b = suite_open(c, "bad", &o);
  collect(a, 2, &lost, 0);
  collect(b, 3, &got, 0);
  suite_stop(d);
  const char *only_bad[] = {s->bad_arg, NULL};
  d = restart(s, "refused", only_bad, NULL);
  assert_int_equal(next_until_error(a, &err), BFEED_ENODATASET);
  assert_non_null(strstr(err.message, "demo"));
  collect(b, 0, &got, BFEED_EEOF);
  assert_int_equal(itest_run_diff(&ref, &got), -1);
  bfeed_stream_close(a);
  bfeed_stream_close(b);
  bfeed_close(c);
  suite_stop(d);

  /* "demo" again, but now the 50 files of "bad": not the same sequence. */
  d = restart(s, "refused", NULL, NULL);
  c = suite_connect(d->unix_addr);
  a = suite_open(c, "demo", &o);
  bfeed_batch_release(suite_next(a));
  suite_stop(d);
  char changed[256];
  snprintf(changed, sizeof changed, "demo=%s", s->bad_dir);
  const char *other[] = {changed, NULL};
  d = restart(s, "refused", other, NULL);
  assert_int_equal(next_until_error(a, &err), BFEED_EDATASET);
  assert_non_null(strstr(err.message, "cannot resume exactly"));
  bfeed_stream_close(a);
  bfeed_close(c);
  suite_stop(d);
  itest_run_free(&ref);
  itest_run_free(&got);
  itest_run_free(&lost);
}

/* ------------------------------------------------------------------ */
/* Defect 11: bfeed_close while another thread is inside a call        */

typedef struct blocked_caller {
  bfeed_client *c;
  bfeed_stream *st; /* NULL: bfeed_daemon_stats */
  atomic_int calls, inside, rc;
  char message[256];
} blocked_caller;

static void *blocked_main(void *arg) {
  blocked_caller *t = arg;
  bfeed_error err = {0};
  int rc = 0;
  while (rc == 0) {
    atomic_fetch_add(&t->calls, 1);
    atomic_store(&t->inside, 1);
    if (t->st) {
      bfeed_batch *b;
      rc = bfeed_stream_next(t->st, &b, &err);
      if (rc == 0) bfeed_batch_release(b);
    } else {
      bfeed_stat_group *g;
      size_t n;
      rc = bfeed_daemon_stats(t->c, &g, &n, &err);
      if (rc == 0) bfeed_daemon_stats_free(g, n);
    }
    atomic_store(&t->inside, 0);
  }
  snprintf(t->message, sizeof t->message, "%s", err.message);
  atomic_store(&t->rc, rc);
  return NULL;
}

/* Inside a call that has not returned for 500 ms: it is waiting. */
static int stuck_inside(void *arg) {
  blocked_caller *t = arg;
  int calls = atomic_load(&t->calls);
  if (!atomic_load(&t->inside)) return 0;
  itest_sleep_ms(500);
  return atomic_load(&t->inside) && atomic_load(&t->calls) == calls;
}

/* Threads blocked in the client's calls, the daemon stopped (SIGSTOP:
 * nothing comes) or dead (the client reconnecting): bfeed_close returns,
 * their calls return BFEED_ECLOSED, and nothing is used after it is freed
 * (the sanitizer build runs this). */
static void close_under_blocked_calls(suite *s, int dead) {
  bfeed_stream_opts o;
  suite_eval_opts(&o, 0);
  o.window = 2;
  itest_daemon *d = restart(s, "blocked", NULL, NULL);
  bfeed_client *c = suite_connect(d->unix_addr);
  blocked_caller next = {.c = c, .st = suite_open(c, "demo", &o)}, stats = {.c = c};
  if (dead) itest_daemon_kill(d);
  else assert_int_equal(kill(d->pid, SIGSTOP), 0);
  pthread_t t1, t2;
  assert_int_equal(pthread_create(&t1, NULL, blocked_main, &next), 0);
  assert_int_equal(pthread_create(&t2, NULL, blocked_main, &stats), 0);
  assert_int_equal(itest_poll(stuck_inside, &next, 10000, 1), 1);
  assert_int_equal(itest_poll(stuck_inside, &stats, 10000, 1), 1);
  double t0 = now_s();
  bfeed_close(c); /* frees the stream as well */
  assert_true(now_s() - t0 < 30); /* not the reconnect deadline */
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  if (next.rc != BFEED_ECLOSED || stats.rc != BFEED_ECLOSED)
    fail_msg("calls blocked during bfeed_close gave %d (%s) and %d (%s)", next.rc, next.message, stats.rc,
             stats.message);
  assert_non_null(strstr(next.message, "bfeed_close"));
  if (!dead) kill(d->pid, SIGCONT);
  itest_daemon_kill(d);
}

static void test_close_while_blocked(void **state) {
  close_under_blocked_calls(*state, 0);
  close_under_blocked_calls(*state, 1);
}

/* ------------------------------------------------------------------ */
/* A fake daemon: raw frames on a Unix socket, one connection at a time */

typedef enum fake_mode {
  FAKE_STATS_NAMES, /* answers STATS_REQ with other names each time */
  FAKE_REFUSE_AGAIN, /* the first connection closes at STATS_REQ; the next HELLO is refused */
  FAKE_SKIP_BATCH,   /* after a STATS_REQ, serves batch 1 of epoch 0 first: not the one due */
  FAKE_BUSY_REOPEN   /* connection 1 serves batch 0 and closes at STATS_REQ; 2 answers the
                        reopen with EBUSY; 3 serves the batch the OPEN asks for */
} fake_mode;

typedef struct fake {
  fake_mode mode;
  int lfd;
  char addr[160];
  pthread_t thread;
  atomic_int connections, stats_asked;
  msg_hello hello; /* the last HELLO */
  msg_open open;   /* the last OPEN */
} fake;

static void fake_reply(int fd, int type, uint32_t stream, wbuf *w) {
  itest_raw_send(fd, type, stream, w->data, (uint32_t)w->len);
  wbuf_free(w);
  wbuf_init(w);
}

/* A one-sample BATCH of its `index` tensor. */
static void fake_batch(int fd, uint32_t stream, uint64_t epoch, uint64_t index, wbuf *w) {
  msg_batch m = {.epoch = epoch, .index = index, .codec = BFEED_CODEC_NONE, .ntensors = 1, .raw_size = 8};
  m.t[0] = (msg_tensor){.name = "index", .dtype = BFEED_DTYPE_I64, .ndim = 1, .shape = {1}, .nbytes = 8};
  int64_t sample = (int64_t)index;
  msg_batch_encode_head(w, &m);
  wbuf_bytes(w, &sample, sizeof sample);
  fake_reply(fd, FRAME_BATCH, stream, w);
}

/* Serve one connection until the client goes (or the mode ends it). */
static void fake_serve(fake *f, int fd, int nth) {
  frame_header h;
  uint8_t *p;
  wbuf w;
  wbuf_init(&w);
  char why[256] = "";
  while (itest_raw_recv(fd, &h, &p) == 0) {
    if (h.type == FRAME_HELLO) {
      msg_hello_decode(p, h.length, &f->hello, why, sizeof why);
      if (f->mode == FAKE_REFUSE_AGAIN && nth > 1) {
        msg_error_encode(&w, BFEED_EVERSION, "fake: no common version (on purpose)");
        fake_reply(fd, FRAME_ERROR, 0, &w);
        free(p);
        break;
      }
      msg_hello_ok ok = {.version = 1, .max_frame = FRAME_MAX_CONTROL};
      snprintf(ok.server, sizeof ok.server, "fake");
      msg_hello_ok_encode(&w, &ok);
      fake_reply(fd, FRAME_HELLO_OK, 0, &w);
    } else if (h.type == FRAME_OPEN) {
      msg_open_decode(p, h.length, &f->open, why, sizeof why);
      if (f->mode == FAKE_BUSY_REOPEN && nth == 2) {
        msg_error_encode(&w, BFEED_EBUSY, "fake: dataset demo is being indexed (on purpose)");
        fake_reply(fd, FRAME_ERROR, h.stream, &w);
        free(p);
        continue;
      }
      msg_open_ok ok = {.samples = 8, .batches_per_epoch = 2, .classes = 1};
      msg_open_ok_encode(&w, &ok);
      fake_reply(fd, FRAME_OPEN_OK, h.stream, &w);
      if (f->mode == FAKE_BUSY_REOPEN) fake_batch(fd, h.stream, f->open.opts.epoch, f->open.opts.batch_index, &w);
    } else if (h.type == FRAME_STATS_REQ &&
               (f->mode == FAKE_REFUSE_AGAIN || (f->mode == FAKE_BUSY_REOPEN && nth == 1))) {
      free(p);
      break; /* gone without an answer */
    } else if (h.type == FRAME_STATS_REQ) {
      /* Each answer names other counters: names handed out before must
       * not turn into these. */
      int k = atomic_fetch_add(&f->stats_asked, 1);
      msg_counter ctr[2] = {{"", 1}, {"", 2}};
      snprintf(ctr[0].name, sizeof ctr[0].name, "first_%d", k);
      snprintf(ctr[1].name, sizeof ctr[1].name, "second_%d", k);
      msg_stats_encode(&w, ctr, 2);
      fake_reply(fd, FRAME_STATS, h.stream, &w);
      if (f->mode == FAKE_SKIP_BATCH) fake_batch(fd, h.stream, 0, 1, &w); /* once the stream is open */
    }
    free(p);
  }
  wbuf_free(&w);
}

static void *fake_main(void *arg) {
  fake *f = arg;
  int fd;
  while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
    int nth = atomic_fetch_add(&f->connections, 1) + 1;
    fake_serve(f, fd, nth);
    close(fd);
  }
  return NULL; /* the listening socket was shut down */
}

static void fake_start(suite *s, fake *f, fake_mode mode) {
  memset(f, 0, sizeof *f);
  f->mode = mode;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s/fake.sock", s->root);
  snprintf(f->addr, sizeof f->addr, "unix:%s", sa.sun_path);
  unlink(sa.sun_path);
  f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(f->lfd >= 0);
  assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(f->lfd, 8), 0);
  assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_stop(fake *f) {
  shutdown(f->lfd, SHUT_RDWR);
  pthread_join(f->thread, NULL);
  close(f->lfd);
}

/* A fake in mode, a client of it (connect options co, NULL: defaults) and
 * a stream it opened; fake_end closes all three. */
static bfeed_stream *fake_open(void **state, fake *f, fake_mode mode, const bfeed_connect_opts *co, bfeed_client **c) {
  bfeed_stream_opts o;
  bfeed_error err;
  fake_start(*state, f, mode);
  suite_eval_opts(&o, 0);
  SUITE_OK(bfeed_connect2(f->addr, co, c, &err), err);
  return suite_open(*c, "demo", &o);
}

static void fake_end(fake *f, bfeed_client *c, bfeed_stream *st) {
  bfeed_stream_close(st);
  bfeed_close(c);
  fake_stop(f);
}

/* Defect 11: names from bfeed_stream_stats live until the stream closes,
 * as bfeed.h says; the next answer (with other names) does not overwrite
 * them. */
static void test_stats_names_stay(void **state) {
  fake f;
  bfeed_client *c;
  bfeed_error err;
  bfeed_stream *st = fake_open(state, &f, FAKE_STATS_NAMES, NULL, &c);
  bfeed_counter a[4], b[4], again[4];
  size_t na, nb, nagain;
  SUITE_OK(bfeed_stream_stats(st, a, 4, &na, &err), err);
  SUITE_OK(bfeed_stream_stats(st, b, 4, &nb, &err), err);
  /* the daemon's two, then the client's own as far as they fit (bfeed.h) */
  assert_int_equal(na, 4);
  assert_int_equal(nb, 4);
  assert_string_equal(a[2].name, "client_batches");
  assert_string_equal(a[3].name, "client_wait_us");
  assert_string_equal(a[0].name, "first_0");
  assert_string_equal(a[1].name, "second_0");
  assert_string_equal(b[0].name, "first_1");
  assert_string_equal(b[1].name, "second_1");
  assert_int_equal(a[1].value, 2);
  /* Only 1 of 2 fits: the count says so. */
  SUITE_OK(bfeed_stream_stats(st, again, 1, &nagain, &err), err);
  assert_int_equal(nagain, 1);
  assert_string_equal(again[0].name, "first_2");
  assert_string_equal(a[0].name, "first_0");
  fake_end(&f, c, st);
}

/* A refusal while reconnecting ends the client at once: one try, not a
 * minute of them. The token goes with every HELLO. */
static void test_refusal_not_retried(void **state) {
  fake f;
  bfeed_connect_opts co;
  bfeed_error err;
  bfeed_client *c;
  bfeed_connect_opts_init(&co);
  co.token = "again-and-again";
  bfeed_stream *st = fake_open(state, &f, FAKE_REFUSE_AGAIN, &co, &c);
  bfeed_counter ctr[4];
  size_t n;
  assert_int_equal(bfeed_stream_stats(st, ctr, 4, &n, &err), BFEED_EVERSION);
  if (!strstr(err.message, "lost the connection") || !strstr(err.message, "no common version"))
    fail_msg("unclear refusal: %s", err.message);
  bfeed_batch *b;
  assert_int_equal(bfeed_stream_next(st, &b, &err), BFEED_EVERSION);
  itest_sleep_ms(300);
  assert_int_equal(atomic_load(&f.connections), 2);
  assert_int_equal(bfeed_client_reconnects(c), 1);
  assert_string_equal(f.hello.agent, "libbfeed/0.1.0");
  assert_string_equal(f.hello.token, "again-and-again"); /* the second HELLO's */
  fake_end(&f, c, st);
}

/* A batch other than the one due (here: one skipped) fails the stream,
 * naming both: the check that keeps a resumed stream exact. */
static void test_batch_out_of_order(void **state) {
  fake f;
  bfeed_client *c;
  bfeed_error err;
  bfeed_stream *st = fake_open(state, &f, FAKE_SKIP_BATCH, NULL, &c);
  bfeed_counter ctr[2];
  size_t n;
  SUITE_OK(bfeed_stream_stats(st, ctr, 2, &n, &err), err);
  bfeed_batch *b;
  assert_int_equal(bfeed_stream_next(st, &b, &err), BFEED_EPROTO);
  assert_null(b);
  assert_non_null(strstr(err.message, "sent batch 1 of epoch 0 where batch 0 of epoch 0 was due"));
  fake_end(&f, c, st);
}

/* A daemon back up but still indexing the dataset (EBUSY on the reopen):
 * tried again after a wait, and the stream resumes at the batch due. */
static void test_busy_reopen_retried(void **state) {
  fake f;
  bfeed_client *c;
  bfeed_stream *st = fake_open(state, &f, FAKE_BUSY_REOPEN, NULL, &c);
  bfeed_error err;
  bfeed_batch *b = suite_next(st);
  assert_int_equal(bfeed_batch_index(b), 0);
  bfeed_batch_release(b);
  bfeed_counter ctr[2];
  size_t n;
  SUITE_OK(bfeed_stream_stats(st, ctr, 2, &n, &err), err); /* asked again on connection 3 */
  b = suite_next(st);
  assert_int_equal(bfeed_batch_epoch(b), 0);
  assert_int_equal(bfeed_batch_index(b), 1);
  bfeed_batch_release(b);
  assert_int_equal(atomic_load(&f.connections), 3);
  assert_int_equal(bfeed_client_reconnects(c), 2);
  assert_int_equal(f.open.opts.epoch, 0);
  assert_int_equal(f.open.opts.batch_index, 1);
  fake_end(&f, c, st);
}

/* Connect to the fake with co; the token its HELLO carried, or the
 * connect's error code (message in err). */
static int hello_token(fake *f, const bfeed_connect_opts *co, char *token, size_t cap, bfeed_error *err) {
  bfeed_client *c;
  int rc = bfeed_connect2(f->addr, co, &c, err);
  if (rc < 0) return rc;
  snprintf(token, cap, "%s", f->hello.token); /* decoded before HELLO_OK went out */
  bfeed_close(c);
  return 0;
}

/* The token: given, from a file, from $BFEED_TOKEN_FILE, or none; a file
 * read by bfeedd's rule (first line, trailing blanks dropped); files that
 * cannot hold one are refused, named. */
static void test_token_sent(void **state) {
  suite *s = *state;
  fake f;
  fake_start(s, &f, FAKE_STATS_NAMES);
  bfeed_connect_opts co;
  bfeed_error err;
  char tok[MSG_TOKEN_MAX], path[256], env_path[256];
  unsetenv("BFEED_TOKEN_FILE");
  bfeed_connect_opts_init(&co);
  SUITE_OK(hello_token(&f, &co, tok, sizeof tok, &err), err);
  assert_string_equal(tok, ""); /* none by default */
  co.token = "tok 1";
  SUITE_OK(hello_token(&f, &co, tok, sizeof tok, &err), err);
  assert_string_equal(tok, "tok 1");
  snprintf(path, sizeof path, "%s/token", s->root);
  const char *text = " from-file \t\r\nsecond line\n";
  assert_int_equal(itest_write_file(path, text, strlen(text)), 0);
  co.token = NULL;
  co.token_file = path;
  SUITE_OK(hello_token(&f, &co, tok, sizeof tok, &err), err);
  assert_string_equal(tok, " from-file");
  snprintf(env_path, sizeof env_path, "%s/token-env", s->root);
  assert_int_equal(itest_write_file(env_path, "from-env\n", 9), 0);
  setenv("BFEED_TOKEN_FILE", env_path, 1);
  SUITE_OK(hello_token(&f, &co, tok, sizeof tok, &err), err); /* the option wins */
  assert_string_equal(tok, " from-file");
  co.token_file = NULL;
  SUITE_OK(hello_token(&f, &co, tok, sizeof tok, &err), err);
  assert_string_equal(tok, "from-env");
  /* Refused, naming what and which file. */
  assert_int_equal(itest_write_file(env_path, "\n", 1), 0);
  assert_int_equal(hello_token(&f, &co, tok, sizeof tok, &err), BFEED_EINVAL);
  assert_non_null(strstr(err.message, "BFEED_TOKEN_FILE"));
  assert_non_null(strstr(err.message, env_path));
  unsetenv("BFEED_TOKEN_FILE");
  char big[300];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  assert_int_equal(itest_write_file(path, big, strlen(big)), 0);
  co.token_file = path;
  assert_int_equal(hello_token(&f, &co, tok, sizeof tok, &err), BFEED_EINVAL);
  assert_non_null(strstr(err.message, "it has 299"));
  co.token_file = "/nonexistent/token";
  assert_int_equal(hello_token(&f, &co, tok, sizeof tok, &err), BFEED_EINVAL);
  assert_non_null(strstr(err.message, "/nonexistent/token: cannot read"));
  co.token_file = NULL;
  co.token = big;
  assert_int_equal(hello_token(&f, &co, tok, sizeof tok, &err), BFEED_EINVAL);
  fake_stop(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_kill9_resume_exact, suite_kill_daemons),
      cmocka_unit_test_teardown(test_tcp_resume_exact, suite_kill_daemons),
      cmocka_unit_test_teardown(test_token_across_restart, suite_kill_daemons),
      cmocka_unit_test_teardown(test_deadline_expiry, suite_kill_daemons),
      cmocka_unit_test_teardown(test_reopen_refused, suite_kill_daemons),
      cmocka_unit_test_teardown(test_close_while_blocked, suite_kill_daemons),
      cmocka_unit_test(test_stats_names_stay),
      cmocka_unit_test(test_refusal_not_retried),
      cmocka_unit_test(test_token_sent),
      cmocka_unit_test(test_batch_out_of_order),
      cmocka_unit_test(test_busy_reopen_retried),
  };
  return SUITE_RUN("reconnect", tests);
}
