/*
 * test_fork.c -- a client after fork() (suite.h; bfeed.h "After fork"):
 * the child, which has the parent's client without its threads, gets
 * BFEED_EFORKED from every call on it at once -- next, wait, stats, open,
 * the daemon's stats, an endpoint -- never a hang; it may still read and
 * release a batch taken before the fork, close the stream and the client
 * (its copies of the sockets go, nothing is sent), and connect again
 * itself. Meanwhile and after, the parent's stream goes on undisturbed:
 * byte for byte the reference run, no reconnect. Over the socket, through
 * shared memory, and fanned out over two daemons.
 *
 * The child reports by its exit status (cmocka is the parent's): 0, or
 * the number of the check that failed, its words on stderr; an alarm
 * kills a child that hangs.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

#define FORK_BEFORE 5  /* batches the parent takes before it forks */
#define FORK_DURING 3  /* and while the child runs */
#define FORK_CHILD_S 10 /* the child's alarm: no call of its may block */

static int fork_fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* opendir's own */
}

/* In the child: report the failed check k and its words, and end. */
static void fork_fail(int k, const char *what, int rc, const bfeed_error *err) {
  fprintf(stderr, "child check %d (%s): returned %d (%s): %s\n", k, what, rc, bfeed_strerror(rc),
          err ? err->message : "");
  _exit(k);
}

/* A call on the parent's client in the child: BFEED_EFORKED, saying so. */
static void fork_expect_forked(int k, const char *what, int rc, const bfeed_error *err) {
  if (rc != BFEED_EFORKED || (err && (err->code != BFEED_EFORKED || !strstr(err->message, "fork"))))
    fork_fail(k, what, rc, err);
}

/* The child's whole life: calls on the parent's client fail at once; the
 * batch taken before the fork is still the one recorded; closing frees the
 * child's copy (its descriptors); a new connection serves the stream. */
static void fork_child(const char *addr, int shm, const bfeed_stream_opts *o, bfeed_client *c, bfeed_stream *st,
                       bfeed_batch *held, const itest_rec *held_rec, const itest_run *ref) {
  alarm(FORK_CHILD_S);
  bfeed_error err = {0};
  bfeed_batch *b = NULL;
  fork_expect_forked(1, "bfeed_stream_next", bfeed_stream_next(st, &b, &err), &err);
  if (bfeed_stream_wait(st, 60000) != 1) fork_fail(2, "bfeed_stream_wait", 0, NULL);
  bfeed_counter ctr[8];
  size_t n;
  fork_expect_forked(3, "bfeed_stream_stats", bfeed_stream_stats(st, ctr, 8, &n, &err), &err);
  bfeed_stream *st2 = NULL;
  fork_expect_forked(4, "bfeed_stream_open", bfeed_stream_open(c, "demo", o, &st2, &err), &err);
  bfeed_stat_group *g = NULL;
  size_t ng;
  fork_expect_forked(5, "bfeed_daemon_stats", bfeed_daemon_stats(c, &g, &ng, &err), &err);
  char ep[256];
  fork_expect_forked(6, "bfeed_client_endpoint", bfeed_client_endpoint(c, 0, ep, sizeof ep), NULL);
  itest_rec now;
  if (itest_rec_from_batch(held, &now) < 0 || !itest_rec_equal(&now, held_rec))
    fork_fail(7, "the batch taken before the fork", 0, NULL);
  itest_rec_free(&now);
  bfeed_batch_release(held); /* the child's copy: no ACK for the parent's slot */
  bfeed_stream_close(st);    /* nothing sent: the parent's stream stays open */
  int fds = fork_fd_count();
  bfeed_close(c);
  if (fork_fd_count() >= fds) fork_fail(8, "bfeed_close frees the child's descriptors", fork_fd_count(), NULL);
#ifndef __SANITIZE_THREAD__ /* ThreadSanitizer ends a child of a threaded process that starts threads */
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  co.shm = shm;
  itest_run mine = {0};
  int rc = bfeed_connect2(addr, &co, &c, &err);
  if (rc == 0 && (rc = bfeed_stream_open(c, "demo", o, &st, &err)) == 0) rc = itest_collect(st, 4, &mine, &err);
  if (rc < 0) fork_fail(9, "a new connection in the child", rc, &err);
  for (size_t i = 0; i < mine.n; i++)
    if (!itest_rec_equal(&mine.b[i], &ref->b[i])) fork_fail(10, "the new connection's batches", 0, NULL);
  bfeed_close(c);
  itest_run_free(&mine);
#else
  (void)addr, (void)shm, (void)ref;
#endif
  _exit(0);
}

static pid_t fork_child_pid;
static int fork_child_status;

static int fork_child_done(void *arg) {
  (void)arg;
  return waitpid(fork_child_pid, &fork_child_status, WNOHANG) == fork_child_pid;
}

/* The reference run, then the same stream on a client of its own that
 * forks after FORK_BEFORE batches: the child as above, the parent goes on. */
static void fork_run(const char *addr, int shm) {
  bfeed_stream_opts o;
  suite_train_opts(&o, 21, 2);
  o.batch = 2; /* 23 batches an epoch */
  o.window = 3;
  itest_run ref = {0}, got = {0};
  bfeed_error err = {0};
  suite_fetch(addr, "demo", &o, 0, &ref);
  bfeed_connect_opts co;
  bfeed_connect_opts_init(&co);
  co.shm = shm;
  bfeed_client *c;
  SUITE_OK(bfeed_connect2(addr, &co, &c, &err), err);
  bfeed_stream *st = suite_open(c, "demo", &o);
  SUITE_OK(itest_collect(st, FORK_BEFORE, &got, &err), err);
  bfeed_batch *held = suite_next(st); /* released in the child, and only then in the parent */
  itest_rec held_rec;
  assert_int_equal(itest_rec_from_batch(held, &held_rec), 0);
  fflush(NULL);
  fork_child_pid = fork();
  assert_true(fork_child_pid >= 0);
  if (fork_child_pid == 0) fork_child(addr, shm, &o, c, st, held, &held_rec, &ref);
  SUITE_OK(itest_collect(st, FORK_DURING, &got, &err), err);
  if (itest_poll(fork_child_done, NULL, (FORK_CHILD_S + 5) * 1000, 20) <= 0) {
    kill(fork_child_pid, SIGKILL);
    waitpid(fork_child_pid, NULL, 0);
    fail_msg("the child did not end");
  }
  if (!WIFEXITED(fork_child_status) || WEXITSTATUS(fork_child_status) != 0)
    fail_msg("the child failed: %s %d (its check is on stderr; SIGALRM %d: it hung)",
             WIFEXITED(fork_child_status) ? "exit status" : "signal",
             WIFEXITED(fork_child_status) ? WEXITSTATUS(fork_child_status) : WTERMSIG(fork_child_status), SIGALRM);
  /* The parent, undisturbed: its stream the reference run, its connection the first. */
  itest_rec got_held;
  assert_int_equal(itest_rec_from_batch(held, &got_held), 0);
  assert_true(itest_rec_equal(&got_held, &held_rec));
  bfeed_batch_release(held);
  assert_int_equal(itest_collect(st, 0, &got, &err), BFEED_EEOF);
  bfeed_counter ctr[8];
  size_t n;
  SUITE_OK(bfeed_stream_stats(st, ctr, 8, &n, &err), err);
  assert_int_equal(bfeed_client_reconnects(c), 0);
  /* got lacks the held batch, compared on its own. */
  assert_true(ref.n > FORK_BEFORE && itest_rec_equal(&held_rec, &ref.b[FORK_BEFORE]));
  itest_rec_free(&ref.b[FORK_BEFORE]);
  memmove(&ref.b[FORK_BEFORE], &ref.b[FORK_BEFORE + 1], (ref.n - FORK_BEFORE - 1) * sizeof *ref.b);
  ref.n--;
  suite_assert_runs_equal(&got, &ref);
  itest_rec_free(&held_rec);
  itest_rec_free(&got_held);
  suite_close_runs(st, c, &ref, &got);
}

static void test_fork_socket(void **state) {
  assert_string_equal(bfeed_strerror(BFEED_EFORKED), "BFEED_EFORKED: client used after fork");
  fork_run(suite_start(*state, 0, "fork", 2, 0)->unix_addr, 0);
}

static void test_fork_shm(void **state) { fork_run(suite_start(*state, 0, "fork", 2, 0)->unix_addr, 1); }

static void test_fork_fanout(void **state) {
  char addr[512];
  snprintf(addr, sizeof addr, "%s,%s", suite_start(*state, 0, "forka", 1, 0)->unix_addr,
           suite_start(*state, 1, "forkb", 1, 0)->unix_addr);
  fork_run(addr, 1);
}

SUITE_MAIN_KILLING("fork", SUITE_KILLING(test_fork_socket), SUITE_KILLING(test_fork_shm),
                   SUITE_KILLING(test_fork_fanout))
