/*
 * jobs.h -- training jobs: the streams opened with the same non-zero `job`
 * option (PROTOCOL.md "Jobs"), on any connection and over time (a
 * DataLoader's workers, epoch after epoch), counted as one. Not a
 * batch_job: a job here is a user's training run.
 * Called by dispatch.c (a stream joins at OPEN; a loop TIMING), stream.c
 * (a stream leaves at close), stats.c and metrics.c (each job's counters).
 *
 * A job's counters are its streams' summed, those closed (folded in at
 * their close) and those open now (read when asked), with its age from
 * its first stream; its client_* counters are the latest TIMING with
 * MSG_TIMING_LOOP any of its streams sent (the loop, timed where the
 * training step runs), or without one the sum of its streams' own. A job
 * is forgotten *forget_ms after its last stream closed, and the table holds
 * JOBS_MAX at most: a new job then evicts the job that ended first, and
 * when every job has a stream open the new stream serves outside any job.
 * Loop thread only.
 */
#ifndef BFEED_JOBS_H
#define BFEED_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "msg.h"

/* Jobs held at once: with the default limits (64 clients x 16 streams)
 * every stream open may have a job of its own. */
#define JOBS_MAX 1024
/* Counters of a job (jobs_view): under the report's 64 per group. */
#define JOBS_COUNTERS 48

struct server;
struct stream;
typedef struct jobs jobs;
typedef struct jobs_entry jobs_entry;

/* *forget_ms: how long a job outlives its last stream (0: until evicted;
 * the daemon's idle_timeout, read each time: a reload may change it). NULL
 * out of memory. */
jobs *jobs_new(const uint64_t *forget_ms, const logger *log);
void jobs_free(jobs *t);
/* A stream opens with job id: its entry, made if need be (its first
 * stream: now is its start, and the workers' busy time then), with one
 * stream more. NULL for id 0, or when the table is full of jobs with
 * streams open (logged): the stream serves on its own. */
jobs_entry *jobs_join(jobs *t, uint64_t id, const char *dataset, uint64_t workers_busy_ns);
/* Stream st of e (NULL: none) closes: its counters are folded into e's. */
void jobs_leave(jobs_entry *e, const struct stream *st);
/* A TIMING with MSG_TIMING_LOOP on a stream of e (NULL: none). */
void jobs_loop(jobs_entry *e, const msg_timing *t);
uint64_t jobs_id(const jobs_entry *e);

/* A job's counters now (PROTOCOL.md "Jobs"): v[k] is the counter named
 * jobs_counter_name(k), for k < n. rid is its report id,
 * "%016llx:DATASET" (its first stream's dataset, which dataset points to,
 * valid until the table next changes). */
typedef struct jobs_view {
  uint64_t id;
  char rid[160];
  const char *dataset;
  size_t n;
  uint64_t v[JOBS_COUNTERS];
} jobs_view;
const char *jobs_counter_name(size_t k);
/* Every job of s (oldest first; those forgotten by now dropped): a
 * malloc'd array of *n, NULL when none or out of memory. */
jobs_view *jobs_collect(struct server *s, size_t *n);

#endif
