/*
 * test_faults.c -- the real daemon (suite.h) under faults and hostile
 * clients: a send that cannot allocate (failshim.c injects it) must not
 * free a stream under its own feet nor close a handle twice; silent and
 * slow clients are timed out; a client that floods requests without
 * reading the replies holds a bounded amount of the daemon's memory. I/O
 * that hangs (a FIFO in a sample's place; failshim.c's opens that wait
 * and reads that never return, as a hung NFS mount's) holds neither the
 * loop, nor another dataset, nor the shutdown past its deadline.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "clock.h"
#include "frame.h"
#include "msg.h"
#include "suite.h"

#ifndef FAULTS_SHIM
#error "FAULTS_SHIM must name failshim.so (set by tests/integration/CMakeLists.txt)"
#endif

/* The daemon still serves: a fresh client gets the first batch of "demo". */
static void faults_check_serves(const itest_daemon *d) {
  bfeed_stream_opts o;
  itest_run run = {0};
  suite_eval_opts(&o, 1);
  suite_fetch(d->unix_addr, "demo", &o, 1, &run);
  assert_int_equal(run.n, 1);
  itest_run_free(&run);
}

/* 1 once a client gets through the handshake (a slot is free). A hung-up
 * client's slot is free only once the daemon has closed its side, a moment
 * after the client sees the end of the stream. */
static int faults_hello_ok(void *arg) {
  int fd = itest_raw_connect(((const itest_daemon *)arg)->unix_addr);
  int ok = fd >= 0 && itest_raw_hello(fd) == 0;
  if (fd >= 0) close(fd);
  return ok;
}

/* ------------------------------------------------------------------ */
/* A send that fails inside the sender (defects 1 and 2)               */

/* conn.c's write_req: a uv_write_t and eight pointer-sized fields. The shim
 * fails one calloc of exactly this size; the log line proves it did. */
#define FAULTS_WRITE_REQ_SIZE (sizeof(uv_write_t) + 8 * sizeof(void *))

enum { FAULT_OPEN_OK, FAULT_BATCH, FAULT_CONN_ERROR };

static void faults_send_failure(suite *s, int where) {
  static const char *const names[] = {"fail-open-ok", "fail-batch", "fail-conn-error"};
  char size[64], skip[64];
  snprintf(size, sizeof size, "FAILSHIM_SIZE=%zu", FAULTS_WRITE_REQ_SIZE);
  /* Writes: HELLO_OK is the first, OPEN_OK or the ERROR the second, the
   * first batch the third. */
  snprintf(skip, sizeof skip, "FAILSHIM_SKIP=%d", where == FAULT_BATCH ? 2 : 1);
  const char *const env[] = {"LD_PRELOAD=" FAULTS_SHIM, size, skip, "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
  itest_daemon *d = suite_start_with(s, 0, names[where], 2, 0, NULL, env);
  int fd = suite_raw_hello(d->unix_addr);
  if (where == FAULT_CONN_ERROR) {
    /* A frame no client may send: the daemon answers ERROR and hangs up,
     * and that ERROR is the write that cannot allocate. */
    assert_int_equal(itest_raw_send(fd, FRAME_HELLO_OK, 0, NULL, 0), 0);
  } else {
    bfeed_stream_opts o;
    suite_train_opts(&o, 3, 0);
    assert_int_equal(itest_raw_open(fd, 1, "demo", &o), 0);
  }
  /* The connection the write failed on is closed... */
  assert_int_equal(itest_raw_drain_to_eof(fd), 0);
  close(fd);
  if (!itest_daemon_log_has(d, "failshim: failed")) fail_msg("%s: the shim injected no failure (write_req's size changed?)", names[where]);
  /* ...and the daemon goes on serving, then stops cleanly. */
  assert_true(itest_daemon_alive(d));
  faults_check_serves(d);
  suite_stop(d);
}

static void test_send_failure_on_open(void **state) { faults_send_failure(*state, FAULT_OPEN_OK); }
static void test_send_failure_on_batch(void **state) { faults_send_failure(*state, FAULT_BATCH); }
static void test_send_failure_on_conn_error(void **state) { faults_send_failure(*state, FAULT_CONN_ERROR); }

/* ------------------------------------------------------------------ */
/* Errors of the moment while reading samples (defect 10)              */

/* A file that cannot be opened for a while (EMFILE) is tried again: the
 * batches are those of an undisturbed daemon. If the error persists, the
 * stream fails naming the file; no other sample stands in for it. */
static void test_transient_errors(void **state) {
  suite *s = *state;
  bfeed_stream_opts o;
  itest_run ref = {0}, got = {0};
  bfeed_error err;
  suite_eval_opts(&o, 1);
  itest_daemon *d = suite_start(s, 0, "transient-ref", 1, 0);
  suite_fetch(d->unix_addr, "demo", &o, 0, &ref);
  suite_stop(d);
  assert_int_equal(ref.n, s->demo.n / 8);

  /* Sample 20, in the third batch. */
  char open[256];
  snprintf(open, sizeof open, "FAILSHIM_OPEN=/%s", s->demo.names[20]);
  const char *const twice[] = {"LD_PRELOAD=" FAULTS_SHIM, open, "FAILSHIM_OPEN_TIMES=2",
                               "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
  d = suite_start_with(s, 0, "transient-twice", 1, 0, NULL, twice);
  suite_fetch(d->unix_addr, "demo", &o, 0, &got);
  assert_true(itest_daemon_log_has(d, "failshim: failed open #2"));
  suite_assert_runs_equal(&got, &ref);
  itest_run_free(&got);
  suite_stop(d);

  const char *const always[] = {"LD_PRELOAD=" FAULTS_SHIM, open, "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
  d = suite_start_with(s, 0, "transient-always", 1, 0, NULL, always);
  int rc = itest_fetch(d->unix_addr, "demo", &o, 0, &got, &err);
  assert_int_equal(rc, BFEED_EIO);
  assert_non_null(strstr(err.message, s->demo.names[20]));
  assert_non_null(strstr(err.message, "Too many open files"));
  /* What came before the failed batch is what it should be. */
  assert_int_equal(got.n, 2);
  for (size_t i = 0; i < got.n; i++) assert_true(itest_rec_equal(&got.b[i], &ref.b[i]));
  itest_run_free(&got);
  itest_run_free(&ref);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Timeouts (defect 3)                                                 */

static void faults_expect_timeout(int fd, const char *what) {
  uint32_t stream;
  int code;
  char msg[256];
  int rc = itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg);
  if (rc < 0) fail_msg("%s: no ERROR came (%d)", what, rc);
  if (code != BFEED_ETIMEDOUT || stream != 0) fail_msg("%s: ERROR %d on stream %u: %s", what, code, stream, msg);
  assert_int_equal(itest_raw_drain_to_eof(fd), 0);
}

static void test_handshake_timeout(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start_with(s, 0, "handshake", 1, 0,
                                     (const char *const[]){"--handshake-timeout", "1", "--max-clients", "2", NULL},
                                     NULL);
  /* Silent sockets fill every client slot. (The start's probe connection
   * may still hold a slot: the daemon accepts every waiting connection
   * before it reads the probe's end. A silent socket answered at once was
   * refused, so try again.) */
  int silent[2];
  for (int tries = 0;; tries++) {
    for (int i = 0; i < 2; i++) assert_true((silent[i] = itest_raw_connect(d->unix_addr)) >= 0);
    struct pollfd pfd[2] = {{.fd = silent[0], .events = POLLIN}, {.fd = silent[1], .events = POLLIN}};
    if (poll(pfd, 2, 200) == 0) break;
    close(silent[0]);
    close(silent[1]);
    if (tries == 50) fail_msg("the daemon refuses clients that should fit under max_clients");
    itest_sleep_ms(100); /* for the daemon to see these closed before the next ones come */
  }
  /* ...and a HELLO dribbled out a byte at a time does not take long
   * enough to finish before the handshake time runs out. */
  int slow = itest_raw_connect(d->unix_addr);
  assert_true(slow >= 0);
  uint32_t stream;
  int code;
  char msg[256];
  assert_int_equal(itest_raw_expect_error(slow, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(code, BFEED_ELIMIT);
  close(slow);
  for (int i = 0; i < 2; i++) faults_expect_timeout(silent[i], "a silent client");
  close(silent[0]);
  close(silent[1]);
  /* The slots are free again. */
  assert_true(itest_poll(faults_hello_ok, d, 5000, 20) > 0);

  slow = itest_raw_connect(d->unix_addr);
  assert_true(slow >= 0);
  uint8_t hdr[FRAME_HEADER_SIZE];
  frame_header h;
  frame_header_init(&h, FRAME_HELLO, 0, "", 0);
  frame_header_encode(&h, hdr);
  for (size_t i = 0; i < sizeof hdr - 1; i++) {
    if (itest_raw_write(slow, hdr + i, 1) < 0) break; /* closed already */
    itest_sleep_ms(200);
  }
  faults_expect_timeout(slow, "a slow HELLO");
  close(slow);
  assert_true(itest_daemon_log_has(d, "handshake_timeout"));
  suite_stop(d);
}

static void test_idle_timeout(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start_with(s, 0, "idle", 1, 0, (const char *const[]){"--idle-timeout", "1", NULL}, NULL);
  int idle = suite_raw_hello(d->unix_addr);
  /* A connection with a stream is busy, even if it reads nothing for a
   * while: it is still there after twice the idle time. */
  bfeed_stream_opts o;
  suite_train_opts(&o, 1, 0);
  o.window = 2;
  int busy = suite_raw_open(d->unix_addr, &o);
  faults_expect_timeout(idle, "a connection without streams");
  close(idle);
  itest_sleep_ms(1000);
  suite_raw_answers_then_close(busy, 1);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Requests that nobody reads the answers to (defect 5)                */

static void test_control_flood(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start(s, 0, "flood", 1, 0);
  int fd = suite_raw_hello(d->unix_addr);
  long before = itest_daemon_rss_kib(d);
  /* STATS_REQ for the whole daemon: 24 bytes that ask for a report of
   * several hundred. Send 300k of them without reading, as far as the
   * daemon takes them: it must stop reading rather than queue the replies. */
  uint8_t req[FRAME_HEADER_SIZE];
  frame_header h;
  frame_header_init(&h, FRAME_STATS_REQ, 0, "", 0);
  frame_header_encode(&h, req);
  enum { N = 300000, CHUNK = 1024 };
  static uint8_t chunk[CHUNK * FRAME_HEADER_SIZE];
  for (int i = 0; i < CHUNK; i++) memcpy(chunk + i * FRAME_HEADER_SIZE, req, sizeof req);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  size_t sent = 0, total = (size_t)N * FRAME_HEADER_SIZE;
  while (sent < total) {
    size_t off = sent % sizeof chunk, n = sizeof chunk - off;
    if (n > total - sent) n = total - sent;
    ssize_t w = send(fd, chunk + off, n, MSG_NOSIGNAL);
    if (w > 0) {
      sent += (size_t)w;
      continue;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    if (poll(&pfd, 1, 2000) <= 0) break; /* the daemon has stopped taking them */
  }
  long after = itest_daemon_rss_kib(d);
  print_message("flood: %zu of %zu request bytes taken; daemon RSS %ld -> %ld KiB\n", sent, total, before, after);
  assert_true(before > 0 && after > 0);
  /* Unbounded, the replies to 300k requests are over 1 GB. */
  if (after - before > 64 * 1024) fail_msg("the daemon grew by %ld KiB under a STATS_REQ flood", after - before);
  /* Reading now, the client gets an answer to every whole request it sent. */
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  uint8_t *p;
  for (size_t answers = 0; answers < sent / FRAME_HEADER_SIZE; answers++) {
    int rc = itest_raw_recv(fd, &h, &p);
    if (rc < 0) fail_msg("answer %zu of %zu: %d", answers, sent / FRAME_HEADER_SIZE, rc);
    assert_int_equal(h.type, FRAME_STATS);
    free(p);
  }
  close(fd);
  faults_check_serves(d);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Protocol details (defect 12)                                        */

/* A second OPEN of a live stream id breaks the protocol: the connection
 * is refused on stream 0, the live stream is not the one told it failed.
 * The agent string is logged escaped. */
static void test_duplicate_id_and_agent(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start_with(s, 0, "dup", 1, 0, (const char *const[]){"--log-level", "debug", NULL}, NULL);
  int fd = itest_raw_connect(d->unix_addr);
  assert_true(fd >= 0);
  char msg[256];
  assert_int_equal(itest_raw_hello_as(fd, "evil\nFAKE bfeedd error: x", NULL, msg, sizeof msg), 0);
  bfeed_stream_opts o;
  suite_train_opts(&o, 1, 0);
  o.window = 1;
  assert_int_equal(itest_raw_open(fd, 1, "demo", &o), 0);
  assert_int_equal(itest_raw_open(fd, 1, "demo", &o), 0);
  uint32_t stream;
  int code;
  assert_int_equal(itest_raw_expect_error(fd, &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(stream, 0);
  assert_int_equal(code, BFEED_EPROTO);
  assert_non_null(strstr(msg, "already open"));
  close(fd);
  assert_true(itest_daemon_log_has(d, "evil\\x0aFAKE bfeedd error: x"));
  assert_false(itest_daemon_log_has(d, "\nFAKE bfeedd"));
  suite_stop(d);
}

/* A .npy file of float32 [n, d] (version 1.0: magic, header length, the
 * dict padded with spaces and a newline to a multiple of 64 bytes). With
 * rows = 0 only the header is written, the file then being shorter than it
 * says: a features file rewritten in place, caught half-way. */
static void faults_write_npy(const char *path, int n, int d, int rows) {
  char dict[128];
  int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", n, d);
  int total = (10 + len + 1 + 63) / 64 * 64;
  FILE *f = fopen(path, "r+b");
  if (!f) f = fopen(path, "wb");
  assert_non_null(f);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  uint8_t hl[2] = {(uint8_t)(total - 10), (uint8_t)((total - 10) >> 8)};
  fwrite(hl, 1, 2, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = 10 + len; i < total - 1; i++) fputc(' ', f);
  fputc('\n', f);
  for (int i = 0; i < rows * d; i++) {
    float v = (float)i;
    fwrite(&v, 4, 1, f);
  }
  assert_int_equal(fflush(f), 0);
  if (!rows) assert_int_equal(ftruncate(fileno(f), total), 0); /* in place: same inode */
  fclose(f);
}

/* A features file cut short while it is served fails the stream, naming
 * the file; the daemon (which used to read the rows through a mapping,
 * and died of SIGBUS) goes on. */
static void test_npy_rewritten(void **state) {
  suite *s = *state;
  char path[256], arg[300];
  snprintf(path, sizeof path, "%s/f.npy", s->root);
  faults_write_npy(path, 64, 1024, 64);
  snprintf(arg, sizeof arg, "feats=npy:%s", path);
  itest_daemon *d = suite_start_with(s, 0, "npy", 1, 0, (const char *const[]){"--dataset", arg, NULL}, NULL);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  o.window = 1;
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *st = suite_open(c, "feats", &o);
  bfeed_batch_release(suite_next(st));
  faults_write_npy(path, 64, 1024, 0);
  bfeed_batch *b;
  bfeed_error err;
  int rc;
  while ((rc = bfeed_stream_next(st, &b, &err)) == 0) bfeed_batch_release(b);
  assert_int_equal(rc, BFEED_EDATASET);
  assert_non_null(strstr(err.message, "f.npy"));
  /* Found by the check before each batch, now that a file changed under
   * a dataset is one rule for every kind (test_changed.c). */
  assert_non_null(strstr(err.message, "changed since the dataset was loaded"));
  bfeed_stream_close(st);
  bfeed_close(c);
  assert_true(itest_daemon_alive(d));
  faults_check_serves(d);
  suite_stop(d);
}

/* The daemon takes the open-file hard limit as its soft one: started with
 * a soft limit of 64 (inherited from here), it runs with the hard one. */
static void test_nofile_raised(void **state) {
  suite *s = *state;
  struct rlimit old, low;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  if (old.rlim_max <= 64) skip();
  low = old;
  low.rlim_cur = 64;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  itest_daemon *d = suite_start(s, 0, "nofile", 1, 0);
  setrlimit(RLIMIT_NOFILE, &old);
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/limits", (int)d->pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  unsigned long long soft = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Max open files %llu", &soft) == 1) break;
  fclose(f);
  assert_int_equal(soft, old.rlim_max);
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* Reload (defect 9)                                                   */

static int faults_log_reloading(void *arg) { return itest_daemon_log_has(arg, "SIGHUP received: reloading"); }
static int faults_log_refused(void *arg) { return itest_daemon_log_has(arg, "reload refused"); }
static int faults_log_held(void *arg) { return itest_daemon_log_has(arg, "failshim: holding open of"); }
static int faults_log_hangs(void *arg) { return itest_daemon_log_has(arg, "failshim: read of descriptor"); }

/* A reload whose dataset takes long to load (here: failshim holds the
 * open of its file until the test lets it go, as a slow NFS mount would)
 * does not stop the loop: streams go on and requests are answered
 * meanwhile. */
static void test_slow_reload(void **state) {
  suite *s = *state;
  char conf[256], slow[256], text[512], hold[300], until[300], release[256];
  snprintf(conf, sizeof conf, "%s/reload.conf", s->root);
  snprintf(slow, sizeof slow, "%s/slow.npy", s->root);
  snprintf(release, sizeof release, "%s/slow.release", s->root);
  snprintf(hold, sizeof hold, "FAILSHIM_HOLD=%s", slow);
  snprintf(until, sizeof until, "FAILSHIM_HOLD_UNTIL=%s", release);
  assert_int_equal(itest_write_file(slow, "no .npy file\n", 13), 0);
  assert_int_equal(itest_write_file(conf, "[bfeedd]\n", 9), 0);
  const char *const env[] = {"LD_PRELOAD=" FAULTS_SHIM, hold, until, "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
  itest_daemon *d = suite_start_with(s, 0, "reload", 1, 0, (const char *const[]){"--config", conf, NULL}, env);
  bfeed_stream_opts o;
  suite_train_opts(&o, 4, 0);
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *st = suite_open(c, "demo", &o);
  bfeed_batch_release(suite_next(st));

  int n = snprintf(text, sizeof text, "[bfeedd]\n[dataset slow]\nkind = npy\npath = %s\n", slow);
  assert_int_equal(itest_write_file(conf, text, (size_t)n), 0);
  kill(d->pid, SIGHUP);
  assert_true(itest_poll(faults_log_reloading, d, 5000, 10) > 0);
  assert_true(itest_poll(faults_log_held, d, 5000, 10) > 0); /* the load now waits in open() */
  /* The loop serves: a new connection, a request (a blocked loop would
   * leave them unanswered: the raw reads time out in 10 s), the stream. */
  int fd = suite_raw_hello(d->unix_addr);
  suite_raw_answers_then_close(fd, 0);
  for (int i = 0; i < 10; i++) bfeed_batch_release(suite_next(st));
  assert_false(itest_daemon_log_has(d, "reload refused"));

  /* The open is let go: the load ends (the file is no .npy file) and the
   * reload is refused, the old settings staying in force. */
  assert_int_equal(itest_write_file(release, "", 0), 0);
  assert_true(itest_poll(faults_log_refused, d, 10000, 10) > 0);
  assert_true(itest_daemon_log_has(d, "slow.npy"));
  bfeed_batch_release(suite_next(st));
  bfeed_stream_close(st);
  bfeed_close(c);
  suite_stop(d);
}

/* A sample replaced by a FIFO after the start (rm a/ok.jpg; mkfifo
 * a/ok.jpg) holds no worker: the epoch is served with the FIFO skipped and
 * named, again on the other worker, and another dataset serves meanwhile.
 * A FIFO named as a dataset's file (a reload's .npy) is refused at once,
 * naming it, where its open used to wait for a writer for ever. */
static void test_fifo_sample(void **state) {
  suite *s = *state;
  char dir[256], conf[256], fifo[320], text[900], err[512];
  snprintf(dir, sizeof dir, "%s/fifo", s->root);
  snprintf(conf, sizeof conf, "%s/fifo.conf", s->root);
  assert_int_equal(itest_make_dataset(dir, 2, err, sizeof err), 0);
  itest_folder f;
  assert_int_equal(itest_folder_scan(dir, &f), 0);
  snprintf(fifo, sizeof fifo, "%s/%s", dir, f.names[3]);
  int n = snprintf(text, sizeof text, "[bfeedd]\n[dataset fifo]\npath = %s\n", dir);
  assert_int_equal(itest_write_file(conf, text, (size_t)n), 0);
  itest_daemon *d = suite_start_with(s, 0, "fifo", 2, 0, (const char *const[]){"--config", conf, NULL}, NULL);
  assert_int_equal(unlink(fifo), 0);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  for (int run = 0; run < 2; run++) {
    itest_run got = {0};
    suite_fetch(d->unix_addr, "fifo", &o, 0, &got);
    assert_int_equal(got.n, f.n / 8);
    itest_run_free(&got);
    faults_check_serves(d);
  }
  snprintf(text, sizeof text, "skipping %s: a FIFO, not a regular file", fifo);
  if (!itest_daemon_log_has(d, text)) fail_msg("the log does not say '%s'", text);

  /* A reload naming a FIFO as a .npy file: refused, naming it. */
  snprintf(fifo, sizeof fifo, "%s/features.fifo", s->root);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  n = snprintf(text, sizeof text, "[bfeedd]\n[dataset fifo]\npath = %s\n[dataset feats]\nkind = npy\npath = %s\n",
               dir, fifo);
  assert_int_equal(itest_write_file(conf, text, (size_t)n), 0);
  kill(d->pid, SIGHUP);
  assert_true(itest_poll(faults_log_refused, d, 5000, 10) > 0);
  snprintf(text, sizeof text, "%s: a FIFO, not a regular file", fifo);
  assert_true(itest_daemon_log_has(d, text));
  faults_check_serves(d);
  itest_folder_free(&f);
  suite_stop(d);
}

/* A worker stuck in a read that never returns (failshim: a hung NFS
 * server) does not keep the daemon from stopping: SIGTERM waits for it
 * shutdown_timeout (5 s), logs what it is stuck on, and exits (status 1). */
static void test_stuck_worker_shutdown(void **state) {
  suite *s = *state;
  char hang[300], err[1024];
  snprintf(hang, sizeof hang, "FAILSHIM_HANG=/%s", s->demo.names[20]);
  const char *const env[] = {"LD_PRELOAD=" FAULTS_SHIM, hang, "ASAN_OPTIONS=verify_asan_link_order=0", NULL};
  itest_daemon *d = suite_start_with(s, 0, "stuck", 2, 0, NULL, env);
  bfeed_stream_opts o;
  suite_eval_opts(&o, 1);
  o.window = 2;
  bfeed_client *c = suite_connect(d->unix_addr);
  bfeed_stream *st = suite_open(c, "demo", &o);
  for (int i = 0; i < 2; i++) bfeed_batch_release(suite_next(st)); /* sample 20 is in the third */
  assert_true(itest_poll(faults_log_hangs, d, 10000, 10) > 0);
  uint64_t t0 = clock_now_ns();
  kill(d->pid, SIGTERM);
  int rc = itest_daemon_wait(d, 5000 + 4000, err, sizeof err);
  double took = (double)(clock_now_ns() - t0) * 1e-9;
  print_message("stuck worker: the daemon exited %.1f s after SIGTERM (%s)\n", took, rc == 0 ? "status 0" : err);
  if (!WIFEXITED(d->status) || WEXITSTATUS(d->status) != 1) fail_msg("not the exit expected: %s", err);
  assert_true(took < 5.0 + 4.0);
  assert_true(itest_daemon_log_has(d, "is stuck"));
  assert_true(itest_daemon_log_has(d, s->demo.names[20]));
  assert_true(itest_daemon_log_has(d, "exiting with status 1"));
  bfeed_stream_close(st);
  bfeed_close(c);
}

/* Entries of a folder that cannot be followed are left out, and said so. */
static void test_dangling_symlinks(void **state) {
  suite *s = *state;
  char dir[256], path[320], target[320], arg[300];
  snprintf(dir, sizeof dir, "%s/links/cls", s->root);
  snprintf(path, sizeof path, "%s/links", s->root);
  assert_int_equal(mkdir(path, 0755), 0);
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(target, sizeof target, "%s/%s", s->demo_dir, s->demo.names[0]);
  snprintf(path, sizeof path, "%s/real.jpg", dir);
  assert_int_equal(symlink(target, path), 0);
  snprintf(path, sizeof path, "%s/gone.jpg", dir);
  assert_int_equal(symlink("/nonexistent/nothing.jpg", path), 0);
  snprintf(path, sizeof path, "%s/loop.jpg", dir);
  assert_int_equal(symlink("loop.jpg", path), 0);
  snprintf(arg, sizeof arg, "links=%s/links", s->root);
  itest_daemon *d = suite_start_with(s, 0, "links", 1, 0, (const char *const[]){"--dataset", arg, NULL}, NULL);
  assert_true(itest_daemon_log_has(d, "dataset links: 1 samples"));
  assert_true(itest_daemon_log_has(d, "gone.jpg: No such file or directory (a symlink to nothing)"));
  assert_true(itest_daemon_log_has(d, "loop.jpg: Too many levels of symbolic links (a symlink loop)"));
  suite_stop(d);
}

/* ------------------------------------------------------------------ */
/* A full daemon (issue 31, item 6)                                    */

/* Over max_clients every refused client learns why from an ERROR: none
 * may see "Broken pipe" (the daemon hung up before the client's HELLO was
 * out, and the client stopped at its failed write without reading the
 * answer waiting for it). */
static void full_expect_refusals(const itest_daemon *d, int tries) {
  int broken = 0, refused = 0;
  char other[300] = "";
  for (int i = 0; i < tries; i++) {
    bfeed_client *c = NULL;
    bfeed_error err;
    if (bfeed_connect(d->unix_addr, &c, &err) == 0) {
      bfeed_close(c);
      fail_msg("try %d: a client over max_clients was let in", i);
    }
    if (err.code == BFEED_ELIMIT && strstr(err.message, "too many clients")) refused++;
    else if (strstr(err.message, "Broken pipe")) broken++;
    else snprintf(other, sizeof other, "%d: %s", err.code, err.message);
  }
  if (refused != tries) fail_msg("%d of %d refused with the reason, %d saw Broken pipe; other: %s", refused, tries, broken, other);
}

/* Connections that said HELLO and then nothing held every place for
 * idle_timeout (300 s). A newcomer now takes the place of the one silent
 * longest, once it has been silent handshake_timeout; younger ones stay. */
static void test_full_daemon_makes_room(void **state) {
  suite *s = *state;
  itest_daemon *d = suite_start_with(s, 0, "full", 1, 0,
                                     (const char *const[]){"--handshake-timeout", "3", "--max-clients", "2", NULL},
                                     NULL);
  int idle[2];
  for (int i = 0; i < 2; i++)
    for (int tries = 0;; tries++) { /* the start's probe may hold a place a moment longer */
      assert_true((idle[i] = itest_raw_connect(d->unix_addr)) >= 0);
      if (itest_raw_hello(idle[i]) == 0) break;
      close(idle[i]);
      if (tries == 100) fail_msg("the daemon refuses clients that should fit under max_clients");
      itest_sleep_ms(50);
    }
  full_expect_refusals(d, 100); /* within handshake_timeout: nobody is evicted */
  itest_sleep_ms(3300);
  faults_check_serves(d); /* took idle[0]'s place */
  uint32_t stream;
  int code;
  char msg[256];
  assert_int_equal(itest_raw_expect_error(idle[0], &stream, &code, msg, sizeof msg), 0);
  assert_int_equal(code, BFEED_ELIMIT);
  assert_non_null(strstr(msg, "to make room for a new client"));
  assert_int_equal(itest_raw_drain_to_eof(idle[0]), 0);
  close(idle[0]);
  close(idle[1]);
  suite_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_send_failure_on_open, suite_kill_daemons),
      cmocka_unit_test_teardown(test_send_failure_on_batch, suite_kill_daemons),
      cmocka_unit_test_teardown(test_send_failure_on_conn_error, suite_kill_daemons),
      cmocka_unit_test_teardown(test_transient_errors, suite_kill_daemons),
      cmocka_unit_test_teardown(test_handshake_timeout, suite_kill_daemons),
      cmocka_unit_test_teardown(test_full_daemon_makes_room, suite_kill_daemons),
      cmocka_unit_test_teardown(test_idle_timeout, suite_kill_daemons),
      cmocka_unit_test_teardown(test_control_flood, suite_kill_daemons),
      cmocka_unit_test_teardown(test_duplicate_id_and_agent, suite_kill_daemons),
      cmocka_unit_test_teardown(test_dangling_symlinks, suite_kill_daemons),
      cmocka_unit_test_teardown(test_npy_rewritten, suite_kill_daemons),
      cmocka_unit_test_teardown(test_slow_reload, suite_kill_daemons),
      cmocka_unit_test_teardown(test_fifo_sample, suite_kill_daemons),
      cmocka_unit_test_teardown(test_stuck_worker_shutdown, suite_kill_daemons),
      cmocka_unit_test_teardown(test_nofile_raised, suite_kill_daemons),
  };
  return SUITE_RUN("faults", tests);
}
