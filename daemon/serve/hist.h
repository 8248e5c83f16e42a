/*
 * hist.h -- cumulative-bucket histograms in Prometheus' sense (bounds in seconds).
 * Called by stream.c (observations) and metrics.c (exposition); loop thread only.
 */
#ifndef BFEED_HIST_H
#define BFEED_HIST_H

#include <stdint.h>

#define HIST_BUCKETS 12

typedef struct hist {
  const double *bounds;          /* HIST_BUCKETS upper bounds, ascending */
  uint64_t counts[HIST_BUCKETS]; /* observations <= bounds[i] and > bounds[i-1] */
  uint64_t count;
  double sum;
} hist;

extern const double hist_bounds_batch[HIST_BUCKETS];  /* 1 ms .. 5 s */
extern const double hist_bounds_sample[HIST_BUCKETS]; /* 50 us .. 250 ms */

void hist_init(hist *h, const double *bounds);
/* Count one observation; one above the last bound only counts in count and
 * sum (Prometheus' +Inf bucket is count). */
void hist_observe(hist *h, double seconds);

#endif
