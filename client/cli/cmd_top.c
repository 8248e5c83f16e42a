/*
 * cmd_top.c -- `bfeed top`: a live view of daemons, datasets and streams.
 *
 * Every --interval seconds (1) it asks each daemon behind the address for
 * its report and draws, over the last frame, what changed since the one
 * before: per daemon its workers' busy share, queue, memory held against
 * max_memory, clients and streams; per dataset samples/s and how its
 * worker time split into read, decode, resize and batch; per stream
 * samples/s, the client's stall (its wait fraction), its p99 wait, and the
 * verdict (verdict.h) judged over the interval; per job (the streams
 * opened with the same `job` option, folded into one line) the same, its
 * stall its loop's. The first frame judges since each stream or job began. A daemon that does not answer is shown so and
 * asked again next time. Ctrl-C ends it; --count N after N frames. Not on
 * a terminal (a pipe, a log), the frames follow one another, each after a
 * blank line.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "bfeed.h"
#include "cli.h"
#include "cli_opts.h"
#include "cli_util.h"
#include "verdict.h"

#define TOP_MAX_ENDPOINTS 64

typedef struct top_endpoint {
  char addr[256];
  bfeed_client *c;          /* NULL until it answers (again) */
  bfeed_stat_group *g, *pg; /* this report and the one before (NULL: none) */
  size_t n, pn;
  char err[256];            /* why it did not answer */
} top_endpoint;

static volatile sig_atomic_t top_stop;
static void cmd_top_on_signal(int sig) { (void)sig, top_stop = 1; }

static const bfeed_stat_group *cmd_top_find(const bfeed_stat_group *g, size_t n, const char *kind, const char *id) {
  for (size_t i = 0; g && i < n; i++)
    if (strcmp(g[i].kind, kind) == 0 && (!id || strcmp(g[i].id, id) == 0)) return &g[i];
  return NULL;
}

/* One line, cut to the terminal's width (cols 0: as it is). */
static void cmd_top_line(int cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cmd_top_line(int cols, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (cols > 0 && strlen(line) > (size_t)cols) line[cols] = 0;
  printf("%s\n", line);
}

/* Ask e for its report, keeping the last one. */
static void cmd_top_poll(top_endpoint *e) {
  bfeed_error err;
  if (!e->c && bfeed_connect(e->addr, &e->c, &err) < 0) {
    snprintf(e->err, sizeof e->err, "%s", err.message);
    e->c = NULL;
    return;
  }
  bfeed_stat_group *g;
  size_t n;
  if (bfeed_daemon_stats(e->c, &g, &n, &err) < 0) {
    snprintf(e->err, sizeof e->err, "%s", err.message);
    bfeed_close(e->c);
    e->c = NULL;
    return;
  }
  if (e->pg) bfeed_daemon_stats_free(e->pg, e->pn);
  e->pg = e->g, e->pn = e->n;
  e->g = g, e->n = n;
  e->err[0] = 0;
}

static void cmd_top_daemon(const top_endpoint *e, int cols) {
  if (e->err[0] || !e->g) return cmd_top_line(cols, "daemon %s  not answering: %s", e->addr, e->err);
  const bfeed_stat_group *d = cmd_top_find(e->g, e->n, "daemon", NULL), *pd = cmd_top_find(e->pg, e->pn, "daemon", NULL);
  double up = verdict_delta(d, pd, "uptime_us"), workers = (double)verdict_counter(d, "workers");
  double busy = up > 0 && workers > 0 ? verdict_delta(d, pd, "worker_busy_us") / (up * workers) : 0;
  double cpu = up > 0 ? verdict_delta(d, pd, "cpu_us") / up : 0;
  cmd_top_line(cols, "daemon %s  workers %.0f busy %.0f%%  queue %llu  cpu %.0f%%  memory %.1f/%.1f MiB  clients %llu  "
               "streams %llu (idle %llu)", e->addr, workers, (busy > 1 ? 1 : busy) * 100,
               (unsigned long long)verdict_counter(d, "queue_depth"), cpu * 100,
               (double)verdict_counter(d, "memory_held_bytes") / 1048576.0,
               (double)verdict_counter(d, "max_memory_bytes") / 1048576.0,
               (unsigned long long)verdict_counter(d, "clients"), (unsigned long long)verdict_counter(d, "streams"),
               (unsigned long long)verdict_counter(d, "idle_streams"));
  for (size_t i = 0; i < e->n; i++) {
    const bfeed_stat_group *g = &e->g[i];
    if (strcmp(g->kind, "dataset") != 0) continue;
    const bfeed_stat_group *p = cmd_top_find(e->pg, e->pn, "dataset", g->id);
    double t[5] = {verdict_delta(g, p, "read_us"), verdict_delta(g, p, "decode_us"), verdict_delta(g, p, "resize_us"),
                   verdict_delta(g, p, "augment_us"), verdict_delta(g, p, "batch_us")};
    double all = t[0] + t[1] + t[2] + t[3] + t[4], k = all > 0 ? 100 / all : 0;
    cmd_top_line(cols, "  dataset %-20s %9.1f samples/s  read %2.0f%%  decode %2.0f%%  resize %2.0f%%  augment %2.0f%%  "
                 "batch %2.0f%%  skipped %llu", g->id, up > 0 ? verdict_delta(g, p, "samples") / (up * 1e-6) : 0,
                 t[0] * k, t[1] * k, t[2] * k, t[3] * k, t[4] * k, (unsigned long long)verdict_counter(g, "skipped"));
  }
  for (size_t i = 0; i < e->n; i++) {
    const bfeed_stat_group *g = &e->g[i];
    if (!verdict_judged(g)) continue;
    verdict v;
    char line[512];
    int job = strcmp(g->kind, "job") == 0;
    verdict_judge(g, cmd_top_find(e->pg, e->pn, g->kind, g->id), d, &v, line, sizeof line);
    cmd_top_line(cols, "  %-6s %-21s %9.1f samples/s  stall %3.0f%%  p99 wait %.1f ms  %s %llu  in flight %llu", g->kind,
                 g->id, v.samples_per_s, v.wait_fraction * 100, v.wait_p99_ms, job ? "streams" : "window",
                 (unsigned long long)verdict_counter(g, job ? "streams" : "window"),
                 (unsigned long long)verdict_counter(g, "in_flight"));
    cmd_top_line(cols, "    %s", line);
  }
}

static int cmd_top_takes_value(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "connect") == 0 || strcmp(name, "interval") == 0 || strcmp(name, "count") == 0 ||
         cli_connect_opt_takes_value(name);
}

static const char top_usage[] =
    "usage: bfeed top --connect ADDR[,ADDR...] [--interval S] [--count N]\n"
    "A live view of the daemons, their datasets and streams, redrawn every S seconds (1):\n"
    "workers busy, memory, samples/s, where the worker time goes (read, decode, resize,\n"
    "batch), each stream's stall (the share of its client's time spent waiting for\n"
    "batches) and the verdict: is the job input-bound, and by what. The streams of a job\n"
    "(opened with the same --job: a DataLoader's workers) show as one line, its loop's.\n"
    "Ctrl-C quits.\n"
    "  --interval S            seconds between frames, 0.1..3600\n"
    "  --count N               stop after N frames (0: never)\n";

int cmd_top(int argc, char **argv) {
  cli_args a = {.argc = argc, .argv = argv};
  const char *connect = NULL;
  bfeed_connect_opts co;
  double interval = 1;
  uint64_t count = 0;
  int r, k;
  bfeed_connect_opts_init(&co);
  while ((r = cli_next(&a, cmd_top_takes_value, NULL)) == 1) {
    if (cli_help_or_version(a.name, top_usage, NULL)) return 0;
    if ((k = cli_connect_opt(a.name, a.value, &co)) != 0) {
      if (k < 0) return 2;
    } else if (strcmp(a.name, "connect") == 0) connect = a.value;
    else if (strcmp(a.name, "count") == 0) {
      if (cli_u64(a.name, a.value, 0, UINT64_MAX, &count) < 0) return 2;
    } else if (strcmp(a.name, "interval") == 0) {
      char *end;
      interval = strtod(a.value, &end);
      if (*end || !(interval >= 0.1 && interval <= 3600))
        return fprintf(stderr, "bfeed top: --interval %s: expected seconds, 0.1..3600\n", a.value), 2;
    } else return fprintf(stderr, "bfeed top: unknown option --%s\n%s", a.name, top_usage), 2;
  }
  if (r < 0) return 2;
  if (!connect) return fprintf(stderr, "bfeed top: --connect ADDR is required\n"), 2;
  bfeed_client *c;
  bfeed_error err;
  if (bfeed_connect2(connect, &co, &c, &err) < 0) return fprintf(stderr, "bfeed top: %s\n", err.message), 1;
  static top_endpoint ep[TOP_MAX_ENDPOINTS];
  size_t n = bfeed_client_endpoints(c);
  if (n > TOP_MAX_ENDPOINTS) n = TOP_MAX_ENDPOINTS;
  for (size_t i = 0; i < n; i++)
    if (n == 1 || bfeed_client_endpoint(c, i, ep[i].addr, sizeof ep[i].addr) < 0)
      snprintf(ep[i].addr, sizeof ep[i].addr, "%s", connect);
  bfeed_close(c);
  signal(SIGINT, cmd_top_on_signal);
  signal(SIGTERM, cmd_top_on_signal);
  int tty = isatty(STDOUT_FILENO);
  for (uint64_t frame = 0; !top_stop && (count == 0 || frame < count); frame++) {
    if (frame) {
      struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
      while (nanosleep(&ts, &ts) < 0 && !top_stop) continue;
      if (top_stop) break;
    }
    for (size_t i = 0; i < n; i++) cmd_top_poll(&ep[i]);
    struct winsize ws;
    int cols = tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
    printf(tty ? "\033[H\033[J" : frame ? "\n" : "");
    cmd_top_line(cols, "bfeed top  %s  %zu daemon%s, every %.1f s%s", when, n, n == 1 ? "" : "s", interval,
                 tty ? "  (Ctrl-C quits)" : "");
    for (size_t i = 0; i < n; i++) cmd_top_daemon(&ep[i], cols);
    fflush(stdout);
  }
  for (size_t i = 0; i < n; i++) {
    if (ep[i].c) bfeed_close(ep[i].c);
    if (ep[i].g) bfeed_daemon_stats_free(ep[i].g, ep[i].n);
    if (ep[i].pg) bfeed_daemon_stats_free(ep[i].pg, ep[i].pn);
  }
  return 0;
}
