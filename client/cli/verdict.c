/* verdict.c -- see verdict.h */
#include "verdict.h"

#include <stdio.h>
#include <string.h>

uint64_t verdict_counter(const bfeed_stat_group *g, const char *name) {
  for (size_t c = 0; g && c < g->ncounters; c++)
    if (strcmp(g->counters[c].name, name) == 0) return g->counters[c].value;
  return 0;
}

int verdict_folded(const bfeed_stat_group *g) {
  return strcmp(g->kind, "stream") == 0 && verdict_counter(g, "job") != 0;
}

int verdict_judged(const bfeed_stat_group *g) {
  return (strcmp(g->kind, "stream") == 0 && !verdict_folded(g)) || strcmp(g->kind, "job") == 0;
}

double verdict_delta(const bfeed_stat_group *now, const bfeed_stat_group *before, const char *name) {
  uint64_t a = verdict_counter(now, name), b = verdict_counter(before, name);
  return a > b ? (double)(a - b) : 0;
}

/* What each stage's limit asks of the user. */
static const struct {
  const char *stage, *counter, *what, *advice;
} verdict_stages[] = {
    {"decode", "decode_us", "decode-limited", "add workers or hosts, or use a pack (bfeed pack: decoded once)"},
    {"resize", "resize_us", "resize-limited", "add workers or hosts, or use a pack at a smaller side (--max-side)"},
    {"read", "read_us", "read-limited (storage)", "add workers (reads overlap), or a cache folder for remote data"},
    {"augment", "augment_us", "augment-limited (the recipe's pixel ops, erasing, mixing)",
     "add workers or hosts, or a lighter recipe (bfeed preview shows what it draws)"},
    {"batch", "batch_us", "batch-limited (cast, assemble, compress)", "add workers, or a cheaper codec (lz4 or none)"},
};

/* The stage that took most of the stream's worker time, -1 when none did. */
static int verdict_stage(const bfeed_stat_group *now, const bfeed_stat_group *before, double *share) {
  enum { N = sizeof verdict_stages / sizeof verdict_stages[0] };
  double t[N], all = 0;
  int best = -1;
  for (int k = 0; k < N; k++) {
    all += t[k] = verdict_delta(now, before, verdict_stages[k].counter);
    if (t[k] > 0 && (best < 0 || t[k] > t[best])) best = k;
  }
  *share = best >= 0 ? t[best] / all : 0;
  return best;
}

void verdict_judge(const bfeed_stat_group *now, const bfeed_stat_group *before, const bfeed_stat_group *daemon,
                   verdict *out, char *buf, size_t cap) {
  verdict v = {0};
  double age = verdict_delta(now, before, "age_us"), wait = verdict_delta(now, before, "client_wait_us"),
         step = verdict_delta(now, before, "client_step_us");
  uint64_t workers = verdict_counter(daemon, "workers");
  v.have = verdict_delta(now, before, "client_batches") > 0 && wait + step > 0;
  v.wait_fraction = wait + step > 0 ? wait / (wait + step) : 0;
  v.workers_busy = workers && age > 0 ? verdict_delta(now, before, "workers_busy_us") / ((double)workers * age) : 0;
  if (v.workers_busy > 1) v.workers_busy = 1; /* a build's time lands when it ends */
  /* A job's streams wait and expand side by side: shares of their time together. */
  double span = verdict_counter(now, "stream_time_us") ? verdict_delta(now, before, "stream_time_us") : age;
  v.memory_wait = span > 0 ? verdict_delta(now, before, "memory_wait_us") / span : 0;
  v.expand_busy = span > 0 ? verdict_delta(now, before, "client_expand_us") / span : 0;
  v.samples_per_s = age > 0 ? verdict_delta(now, before, "samples") / (age * 1e-6) : 0;
  v.mb_per_s = age > 0 ? verdict_delta(now, before, "wire_bytes") / age : 0; /* bytes/us = MB/s */
  v.wait_p99_ms = (double)verdict_counter(now, "client_wait_p99_us") / 1e3;
  int pct = (int)(v.wait_fraction * 100 + 0.5), busy = (int)(v.workers_busy * 100 + 0.5);
  double batches = verdict_delta(now, before, "client_batches");
  if (!verdict_counter(now, "client_batches")) {
    v.limit = "unknown";
    snprintf(buf, cap, "no timing from the client yet (an older libbfeed, or fewer than two batches taken)");
  } else if (!v.have) {
    v.limit = "idle";
    snprintf(buf, cap, "idle: the client took no batch in the interval");
  } else if (v.wait_fraction < VERDICT_INPUT_BOUND) {
    v.limit = "trainer";
    snprintf(buf, cap, "trainer-bound: input waits %d%% of the time; the step takes %.1f ms per batch, "
             "the workers are busy %d%%", pct, step / batches / 1e3, busy);
  } else {
    int n = snprintf(buf, cap, "input-bound %d%%: ", pct);
    char *p = buf + (n > 0 && (size_t)n < cap ? n : 0);
    size_t left = cap - (size_t)(p - buf);
    double share;
    int k = verdict_stage(now, before, &share);
    if (v.workers_busy >= VERDICT_WORKERS_BUSY && k >= 0) {
      v.limit = verdict_stages[k].stage;
      snprintf(p, left, "%s, %llu worker%s busy %d%% (%s %d%% of their time); %s", verdict_stages[k].what,
               (unsigned long long)workers, workers == 1 ? "" : "s", busy, verdict_stages[k].stage,
               (int)(share * 100 + 0.5), verdict_stages[k].advice);
    } else if (v.memory_wait >= VERDICT_MEMORY_WAIT) {
      v.limit = "memory";
      snprintf(p, left, "memory-limited: max_memory held the window back %d%% of the time (max_memory %.0f MiB, %.0f MiB held; "
               "window %llu); raise max_memory, or lower the window or the batch",
               (int)(v.memory_wait * 100 + 0.5), (double)verdict_counter(daemon, "max_memory_bytes") / 1048576.0,
               (double)verdict_counter(daemon, "memory_held_bytes") / 1048576.0,
               (unsigned long long)verdict_counter(now, "window"));
    } else if (v.expand_busy >= VERDICT_EXPAND_BUSY) {
      v.limit = "client";
      snprintf(p, left, "client-limited: the client's reader spends %d%% of its time decompressing; use a lighter "
               "codec (lz4, u8) or shared memory (a Unix socket on the same host)", (int)(v.expand_busy * 100 + 0.5));
    } else {
      v.limit = "socket";
      snprintf(p, left, "socket-limited: %.1f MB/s on the wire, workers busy %d%%, window %llu; use shared memory "
               "(a Unix socket on the same host), codec u8, or a larger window", v.mb_per_s, busy,
               (unsigned long long)verdict_counter(now, "window"));
    }
  }
  if (out) *out = v;
}
