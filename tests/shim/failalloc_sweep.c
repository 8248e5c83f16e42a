/*
 * failalloc_sweep.c -- the daemon under allocation failure: for each N,
 * start bfeedd with libfailalloc preloaded so that its N-th allocation
 * fails, stream a few batches from it, and stop it. Whatever N is, the
 * daemon must either refuse to start with an error (a non-zero exit and no
 * sanitizer report) or keep serving and exit 0 on SIGTERM; a crash (a
 * signal, or a sanitizer report in its log) or a hang fails the sweep.
 *
 *   failalloc_sweep [--runs R | --all] [--step S] [--keep DIR] [--strict]
 *
 * A first run with nothing failing counts the daemon's allocations (C) and
 * records the reference batches. Then --runs R tries N = 1..R/2 and R/2
 * values spread evenly over the rest of 1..C; --all tries every S-th N of
 * 1..C. Batches that differ from the reference (a sample silently replaced
 * after ENOMEM) are counted and printed, and fail the sweep only with
 * --strict: the daemon does not guarantee that yet. --keep copies the log
 * of each failing run, and of each with wrong batches, to DIR.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "itest_util.h"

#ifndef SWEEP_SHIM
#error "SWEEP_SHIM must name libfailalloc.so (set by tests/shim/CMakeLists.txt)"
#endif

enum { SWEEP_BATCHES = 6, SWEEP_STALL_MS = 20000, SWEEP_STOP_MS = 10000 };

/* What one run came to. */
enum sweep_outcome { SWEEP_SERVED, SWEEP_REFUSED, SWEEP_CLIENT_ERROR, SWEEP_WRONG, SWEEP_LEAK,
                     SWEEP_RUNTIME, SWEEP_CRASH, SWEEP_HANG, SWEEP_OUTCOMES_ };
static const char *const sweep_names[] = {"served", "refused to start", "client saw an error",
                                          "wrong batches", "leak only", "sanitizer runtime failed",
                                          "CRASH", "HANG"};

typedef struct sweep {
  char dir[256], dataset[300], count_path[300];
  const char *keep;
  itest_run ref;
  long tally[SWEEP_OUTCOMES_];
  int failed, strict;
} sweep;

/* The watchdog: a stream that stalls SWEEP_STALL_MS gets its daemon
 * killed, so that the client returns and the run is called a hang. */
typedef struct sweep_watch {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, fired;
  pid_t pid;
} sweep_watch;

static void *sweep_watch_main(void *arg) {
  sweep_watch *w = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += SWEEP_STALL_MS / 1000;
  pthread_mutex_lock(&w->mu);
  while (!w->done)
    if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0) break;
  if (!w->done) {
    w->fired = 1;
    kill(w->pid, SIGKILL);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* 1 when the log holds a sanitizer's error report (2: a leak report
 * only; 3: the sanitizer's runtime itself failed an internal check, when
 * the failed allocation was its own, e.g. in a new thread's
 * pthread_getattr_np: not the daemon's doing). */
static int sweep_sanitizer_report(const char *log) {
  if (!log) return 0;
  if (strstr(log, "Sanitizer: CHECK failed")) return 3;
  if (strstr(log, "ERROR: AddressSanitizer") || strstr(log, "runtime error:") || strstr(log, "ThreadSanitizer"))
    return 1;
  return strstr(log, "ERROR: LeakSanitizer") ? 2 : 0;
}

/* The stream every run takes: SWEEP_BATCHES batches, then a second stream
 * closed with its window in flight. */
static int sweep_stream(const itest_daemon *d, const char *dataset, itest_run *run, bfeed_error *err) {
  bfeed_stream_opts o;
  itest_opts(&o);
  int rc = itest_fetch(d->unix_addr, dataset, &o, SWEEP_BATCHES, run, err);
  if (rc < 0) return rc;
  itest_run early = {0};
  o.seed = 7;
  rc = itest_fetch(d->unix_addr, dataset, &o, 1, &early, err);
  itest_run_free(&early);
  return rc;
}

/* Print the log's tail (when loud) and copy it to --keep's folder. */
static void sweep_keep_log(const sweep *s, long n, const char *log, int loud) {
  if (loud)
    fprintf(stderr, "---- N=%ld: daemon log (last 3000 bytes) ----\n%s\n----\n", n,
          log ? (strlen(log) > 3000 ? log + strlen(log) - 3000 : log) : "(none)");
  if (!s->keep || !log) return;
  char path[512];
  snprintf(path, sizeof path, "%s/failalloc-%ld.log", s->keep, n);
  itest_write_file(path, log, strlen(log));
}

/* One daemon life with allocation n failing (0: none). */
static enum sweep_outcome sweep_one(sweep *s, long n, itest_run *run) {
  itest_daemon d;
  /* The shim goes into the daemon's environment only, not the sweep's. */
  char nv[48], report_env[320];
  snprintf(nv, sizeof nv, "FAILALLOC_N=%ld", n);
  snprintf(report_env, sizeof report_env, "FAILALLOC_REPORT=%s", n == 0 ? s->count_path : "");
  /* libuv aborts when its own allocations fail (uv__io_start, by design):
   * failing them would test libuv, so the failure moves to the next of
   * the daemon's own (the count of calls, and so N, varies with the
   * threads' timing, and landed there now and then). */
  const char *env[] = {"LD_PRELOAD=" SWEEP_SHIM, nv, report_env, "FAILALLOC_SPARE=libuv", NULL};
  itest_daemon_opts o = {.dir = s->dir, .name = "fa", .datasets = {s->dataset}, .workers = 2, .env = env};
  char err[1024];
  int started = itest_daemon_start(&d, &o, err, sizeof err) == 0;
  int client_rc = 0, stalled = 0;
  if (started) {
    sweep_watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, d.pid};
    pthread_t t;
    pthread_create(&t, NULL, sweep_watch_main, &w);
    bfeed_error berr;
    client_rc = sweep_stream(&d, "demo", run, &berr);
    pthread_mutex_lock(&w.mu);
    w.done = 1;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(t, NULL);
    stalled = w.fired;
    if (itest_daemon_alive(&d)) itest_daemon_stop(&d, SWEEP_STOP_MS, err, sizeof err);
  }
  char *log = itest_read_file(d.log_path, NULL);
  int report = sweep_sanitizer_report(log);
  enum sweep_outcome out;
  if (report == 3)
    out = SWEEP_RUNTIME;
  else if (stalled || d.status == -1 || (WIFSIGNALED(d.status) && WTERMSIG(d.status) == SIGKILL))
    out = SWEEP_HANG; /* no status: it did not listen, or did not stop, in time */
  else if (report == 1 || WIFSIGNALED(d.status))
    out = SWEEP_CRASH;
  else if (!WIFEXITED(d.status) || (started && WEXITSTATUS(d.status) != 0 && report != 2))
    out = SWEEP_CRASH; /* it served, then failed to exit cleanly on SIGTERM */
  else if (report == 2)
    out = SWEEP_LEAK;
  else if (!started)
    out = SWEEP_REFUSED;
  else if (client_rc < 0)
    out = SWEEP_CLIENT_ERROR;
  else if (n > 0 && itest_run_diff(run, &s->ref) >= 0)
    out = SWEEP_WRONG;
  else
    out = SWEEP_SERVED;
  if (out == SWEEP_CRASH || out == SWEEP_HANG || out == SWEEP_WRONG) sweep_keep_log(s, n, log, out != SWEEP_WRONG);
  free(log);
  return out;
}

static void sweep_try(sweep *s, long n) {
  itest_run run = {0};
  enum sweep_outcome out = sweep_one(s, n, &run);
  itest_run_free(&run);
  s->tally[out]++;
  if (out == SWEEP_CRASH || out == SWEEP_HANG || out == SWEEP_WRONG)
    printf("N=%ld: %s\n", n, sweep_names[out]);
  if (out == SWEEP_CRASH || out == SWEEP_HANG || (s->strict && out == SWEEP_WRONG)) s->failed = 1;
}

int main(int argc, char **argv) {
  long runs = 40, step = 1;
  int all = 0;
  sweep s;
  memset(&s, 0, sizeof s);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atol(argv[++i]);
    else if (strcmp(argv[i], "--step") == 0 && i + 1 < argc) step = atol(argv[++i]);
    else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) s.keep = argv[++i];
    else if (strcmp(argv[i], "--all") == 0) all = 1;
    else if (strcmp(argv[i], "--strict") == 0) s.strict = 1;
    else return fprintf(stderr, "usage: %s [--runs R | --all] [--step S] [--keep DIR] [--strict]\n", argv[0]), 2;
  }
  char err[1024];
  if (itest_tmpdir(s.dir, sizeof s.dir) < 0) return fprintf(stderr, "no temporary folder\n"), 1;
  char data[300];
  snprintf(data, sizeof data, "%s/data", s.dir);
  if (itest_make_dataset(data, 4, err, sizeof err) < 0) return fprintf(stderr, "dataset: %s\n", err), 1;
  snprintf(s.dataset, sizeof s.dataset, "demo=%s", data);
  snprintf(s.count_path, sizeof s.count_path, "%s/count", s.dir);

  /* The reference: nothing fails, and the allocations are counted. */
  enum sweep_outcome ref = sweep_one(&s, 0, &s.ref);
  if (ref != SWEEP_SERVED || s.ref.n != SWEEP_BATCHES) {
    fprintf(stderr, "with the shim preloaded and nothing failing: %s, %zu batches\n", sweep_names[ref], s.ref.n);
    return 1;
  }
  char *count = itest_read_file(s.count_path, NULL);
  long total = count ? atol(count) : 0;
  free(count);
  if (total <= 0) return fprintf(stderr, "the shim counted no allocation in the daemon\n"), 1;
  printf("the daemon made %ld allocations (start, %d batches, a second stream, stop)\n", total, SWEEP_BATCHES);

  long tried = 0;
  if (all) {
    for (long n = 1; n <= total; n += step > 0 ? step : 1, tried++) sweep_try(&s, n);
  } else {
    long dense = runs / 2 < total ? runs / 2 : total, spread = runs - dense;
    for (long n = 1; n <= dense; n++, tried++) sweep_try(&s, n);
    for (long k = 1; k <= spread && total > dense; k++, tried++)
      sweep_try(&s, dense + (total - dense) * k / spread);
  }
  printf("%ld runs:", tried);
  for (int i = 0; i < SWEEP_OUTCOMES_; i++) printf(" %s %ld%s", sweep_names[i], s.tally[i], i + 1 < SWEEP_OUTCOMES_ ? "," : "\n");
  itest_run_free(&s.ref);
  itest_rmtree(s.dir);
  return s.failed;
}
