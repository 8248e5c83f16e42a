/*
 * stats.h -- the counters kept per dataset, and the daemon's STATS report.
 * Called by dispatch.c (STATS request, a stream's entry at open), stream.c (updates) and metrics.c (reads).
 *
 * Updated on the loop thread only (when a batch is sent), read by the STATS
 * request and the Prometheus endpoint on the same thread: no locking. One
 * entry per dataset name, kept for the daemon's life (also across reloads,
 * so counters never go backwards).
 */
#ifndef BFEED_STATS_H
#define BFEED_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "tlv.h"

struct server;

typedef struct ds_stats {
  char name[128];
  uint64_t streams;    /* opened, in all */
  uint64_t samples, batches, raw_bytes, wire_bytes, skipped, busy_ns;
  uint64_t stage_ns[5]; /* busy_ns by stage: read, decode, resize, augment, batch (batch.h's BATCH_STAGES) */
  uint64_t shared, bytes_saved; /* batches taken from a build asked for by another stream, their raw bytes */
  hist batch_latency;  /* from scheduling a batch to queueing it on the socket */
  hist sample_time;    /* worker time per sample, averaged over each batch built */
  struct ds_stats *next;
} ds_stats;

/* The entry for a dataset name (created on first use); NULL out of memory. */
ds_stats *stats_for(struct server *s, const char *name);
/* An entry for every dataset served, streamed from yet or not: the report
 * and /metrics list them all (bfeed top shows them). */
void stats_served(struct server *s);
/* Drop every entry (at exit). */
void stats_free(struct server *s);
/* Write the daemon-wide report (see proto/report.h): a "daemon" group, one
 * "dataset" group per dataset, one "stream" group per open stream (with a
 * counter "job" where it counts in one), one "job" group per job (jobs.h). */
void stats_report(struct server *s, wbuf *w);

/* The remote storage's counters (storage.h's storage_remote_counts), each
 * as `bfeed stats` (group "remote") and /metrics name it. */
typedef struct stats_remote_row {
  size_t off; /* in storage_remote_counts */
  const char *name, *metric, *type, *help;
} stats_remote_row;
extern const stats_remote_row stats_remote_rows[];
extern const size_t stats_remote_nrows;

#endif
