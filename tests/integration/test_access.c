/*
 * test_access.c -- who may use the real daemon (suite.h): the Unix socket's
 * mode and group (0660 unless socket_mode/socket_group say otherwise), and
 * the token TCP clients must show in HELLO when auth_token_file is set.
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suite.h"

static void access_stat(const itest_daemon *d, struct stat *st) {
  assert_int_equal(stat(d->unix_addr + 5, st), 0); /* past "unix:" */
  assert_true(S_ISSOCK(st->st_mode));
}

static void test_socket_mode(void **state) {
  suite *s = *state;
  struct stat st;
  itest_daemon *d = suite_start(s, 0, "mode-default", 1, 0);
  access_stat(d, &st);
  assert_int_equal(st.st_mode & 07777, 0660);
  suite_stop(d);

  /* A group other than ours, by name, and a mode of our choosing. */
  struct group *g = getgrgid(getegid() == 1 ? 2 : 1);
  assert_non_null(g);
  char name[64];
  gid_t gid = g->gr_gid;
  snprintf(name, sizeof name, "%s", g->gr_name);
  const char *const args[] = {"--socket-mode", "0600", "--socket-group", name, NULL};
  d = suite_start_with(s, 0, "mode-set", 1, 0, args, NULL);
  access_stat(d, &st);
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(st.st_gid, gid);
  suite_stop(d);
}

/* HELLO with a token on a fresh connection: 0, or the ERROR's code. */
static int access_hello(const char *addr, const char *token, char *msg, size_t cap) {
  int fd = itest_raw_connect(addr);
  assert_true(fd >= 0);
  int rc = itest_raw_hello_as(fd, "bfeed-itest-access", token, msg, cap);
  if (rc != 0) assert_int_equal(itest_raw_drain_to_eof(fd), 0); /* refused: hung up */
  close(fd);
  return rc;
}

static void test_auth_token(void **state) {
  suite *s = *state;
  char path[256], msg[256];
  snprintf(path, sizeof path, "%s/token", s->root);
  static const char token[] = "correct horse battery staple";
  assert_int_equal(itest_write_file(path, "correct horse battery staple\n", sizeof token), 0);
  const char *const args[] = {"--auth-token-file", path, NULL};
  itest_daemon *d = suite_start_with(s, 0, "auth", 1, 1, args, NULL);

  assert_int_equal(access_hello(d->tcp_addr, NULL, msg, sizeof msg), BFEED_EAUTH);
  assert_non_null(strstr(msg, "no token"));
  assert_int_equal(access_hello(d->tcp_addr, "correct horse battery stapler", msg, sizeof msg), BFEED_EAUTH);
  assert_non_null(strstr(msg, "wrong token"));
  assert_int_equal(access_hello(d->tcp_addr, "correct horse battery stapl", msg, sizeof msg), BFEED_EAUTH);
  assert_int_equal(access_hello(d->tcp_addr, token, msg, sizeof msg), 0);
  /* The Unix socket is guarded by its mode, not the token. */
  assert_int_equal(access_hello(d->unix_addr, NULL, msg, sizeof msg), 0);

  /* The library without a token is refused with the daemon's reason. */
  bfeed_client *c;
  bfeed_error err;
  int rc = bfeed_connect(d->tcp_addr, &c, &err);
  assert_int_equal(rc, BFEED_EAUTH);
  assert_non_null(strstr(err.message, "token"));
  suite_stop(d);

  /* A token file that holds no token stops the start, naming the file. */
  assert_int_equal(itest_write_file(path, "\n", 1), 0);
  itest_daemon_opts o = {.dir = s->root, .name = "auth-empty", .datasets = {s->demo_arg, NULL}, .args = args};
  itest_daemon bad;
  char why[2048];
  assert_true(itest_daemon_start(&bad, &o, why, sizeof why) < 0);
  assert_non_null(strstr(why, "auth_token_file"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_socket_mode, suite_kill_daemons),
      cmocka_unit_test_teardown(test_auth_token, suite_kill_daemons),
  };
  return SUITE_RUN("access", tests);
}
