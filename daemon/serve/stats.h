/*
 * stats.h -- counters and histograms the daemon keeps per dataset.
 *
 * Updated on the loop thread only (when a batch is sent), read by the STATS
 * request and the Prometheus endpoint on the same thread: no locking. One
 * entry per dataset name, kept for the daemon's life (also across reloads,
 * so counters never go backwards).
 */
#ifndef BFEED_STATS_H
#define BFEED_STATS_H

#include <stdint.h>

#define HIST_BUCKETS 12

/* Cumulative-bucket histogram in Prometheus' sense; bounds in seconds. */
typedef struct hist {
  const double *bounds; /* HIST_BUCKETS upper bounds, ascending */
  uint64_t counts[HIST_BUCKETS]; /* observations <= bounds[i] and > bounds[i-1] */
  uint64_t count;
  double sum;
} hist;

extern const double hist_bounds_batch[HIST_BUCKETS];  /* 1 ms .. 5 s */
extern const double hist_bounds_sample[HIST_BUCKETS]; /* 50 us .. 250 ms */

void hist_init(hist *h, const double *bounds);
void hist_observe(hist *h, double seconds);

typedef struct ds_stats {
  char name[128];
  uint64_t streams;    /* opened, in all */
  uint64_t samples, batches, raw_bytes, wire_bytes, skipped, busy_ns;
  hist batch_latency;  /* from scheduling a batch to queueing it on the socket */
  hist sample_time;    /* worker time per sample, averaged over each batch built */
  struct ds_stats *next;
} ds_stats;

#endif
