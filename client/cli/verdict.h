/*
 * verdict.h -- is this stream's job input-bound, and by what? One line
 * from a stream's counters in the daemon's report (bfeed stats, bfeed top,
 * bfeed bench), the way Grain's statistics name the bottleneck stage.
 *
 * It weighs, over an interval (between two reports of the same stream, or
 * since the stream opened): the client's wait fraction (client_wait_us /
 * (client_wait_us + client_step_us)), the daemon's workers' busy share
 * (workers_busy_us / (workers x age_us)) and the stage that took most of
 * the stream's worker time (read_us, decode_us, resize_us, batch_us), the
 * time its window had room while max_memory held it back
 * (memory_wait_us), and the client's reader thread's time expanding
 * batches (client_expand_us). In that order: a trainer that waits under
 * VERDICT_INPUT_BOUND of its time is the limit itself; else busy workers
 * name their stage, then memory, then the client's expansion, and what is
 * left is the socket (or the window).
 *
 * A job's group (kind "job": the streams opened with the same `job`
 * option, PROTOCOL.md "Jobs") is judged the same way from its sums, its
 * client_* counters the loop's; its memory waits and expansion are shares
 * of its streams' time together (stream_time_us), not of its age. Its
 * streams' own groups are folded into it: not judged, not shown.
 */
#ifndef BFEED_VERDICT_H
#define BFEED_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "bfeed.h"

#define VERDICT_INPUT_BOUND 0.10 /* wait fraction from which a job is input-bound */
#define VERDICT_WORKERS_BUSY 0.80
#define VERDICT_MEMORY_WAIT 0.20
#define VERDICT_EXPAND_BUSY 0.70

/* What the verdict found, for a caller that prints it otherwise (bfeed top). */
typedef struct verdict {
  int have;             /* the client reported timing in the interval */
  double wait_fraction; /* of the client's time, waiting for batches */
  double workers_busy;  /* the daemon's workers' busy share */
  double memory_wait;   /* share of the interval the stream waited for max_memory */
  double expand_busy;   /* share of the interval the client's reader spent expanding */
  double samples_per_s, mb_per_s;
  double wait_p99_ms;   /* the client's, since the stream opened */
  const char *limit;    /* "trainer", "decode", "resize", "read", "batch", "memory", "client", "socket", "idle" or "unknown" */
} verdict;

/* The counter called name in g, 0 when absent (g may be NULL). */
uint64_t verdict_counter(const bfeed_stat_group *g, const char *name);
/* 1 for a stream of a job (a counter "job"): its job's group speaks for it. */
int verdict_folded(const bfeed_stat_group *g);
/* 1 for a group that has a verdict: a job, or a stream not folded into one. */
int verdict_judged(const bfeed_stat_group *g);
/* name's growth from before (NULL: from 0) to now; 0 if it shrank (a
 * daemon restarted, a stream reopened). */
double verdict_delta(const bfeed_stat_group *now, const bfeed_stat_group *before, const char *name);
/* Judge stream or job group now against before (the same stream's earlier group,
 * or NULL: since it opened), with its daemon's group; the line into
 * buf[cap] ("input-bound 38%: decode-limited, 2 workers busy 97%; add
 * workers or hosts, or use a pack"), and what it found into *v (may be
 * NULL). */
void verdict_judge(const bfeed_stat_group *now, const bfeed_stat_group *before, const bfeed_stat_group *daemon,
                   verdict *v, char *buf, size_t cap);

#endif
