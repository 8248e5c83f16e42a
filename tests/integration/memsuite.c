/* memsuite.c -- see memsuite.h */
#include "memsuite.h"

#include <stdio.h>
#include <string.h>

memsuite memsuite_the;

int memsuite_make_root(void) { return itest_tmpdir(memsuite_the.root, sizeof memsuite_the.root); }

int memsuite_teardown(void **state) {
  (void)state;
  itest_rmtree(memsuite_the.root);
  return 0;
}

int memsuite_kill(void **state) {
  (void)state;
  itest_daemon_kill(&memsuite_the.d);
  return 0;
}

void memsuite_start(const char *dataset, const char *const *args) {
  itest_daemon_opts o = {.dir = memsuite_the.root, .name = "mem", .datasets = {dataset}, .workers = 2, .args = args};
  char err[1024];
  if (itest_daemon_start(&memsuite_the.d, &o, err, sizeof err) < 0) fail_msg("%s", err);
}

void memsuite_stop(void) {
  char err[1024];
  if (itest_daemon_stop(&memsuite_the.d, 10000, err, sizeof err) < 0) fail_msg("%s", err);
}

void memsuite_peak_within(const char *what, uint64_t bound) {
  long peak = itest_daemon_peak_kib(&memsuite_the.d);
  print_message("%s: peak RSS (VmHWM) %ld KiB (bound %llu KiB)\n", what, peak, (unsigned long long)bound >> 10);
  if (MEMSUITE_CHECK_RSS && (uint64_t)peak * 1024 > bound) fail_msg("%s: the daemon's RSS peaked at %ld KiB", what, peak);
}

/* Reports in a row that showed the workers idle (one settle at a time). */
static int memsuite_quiet_reports;

static int memsuite_quiet(void *client) {
  bfeed_stat_group *g;
  size_t n;
  bfeed_error err;
  if (bfeed_daemon_stats(client, &g, &n, &err) < 0) fail_msg("stats: %s", err.message);
  int idle = itest_report_counter(g, n, "daemon", "", "queue_depth") == 0 &&
             itest_report_counter(g, n, "daemon", "", "workers_busy") == 0;
  bfeed_daemon_stats_free(g, n);
  memsuite_quiet_reports = idle ? memsuite_quiet_reports + 1 : 0;
  return memsuite_quiet_reports >= 5;
}

void memsuite_settle(bfeed_client *c) {
  memsuite_quiet_reports = 0;
  if (itest_poll(memsuite_quiet, c, 60000, 20) <= 0) fail_msg("the daemon's workers never went idle");
}

bfeed_client *memsuite_connect(void) {
  bfeed_client *c;
  bfeed_error err;
  if (bfeed_connect(memsuite_the.d.unix_addr, &c, &err) < 0) fail_msg("connect: %s", err.message);
  return c;
}
