/* hist.c -- see hist.h */
#include "hist.h"

#include <string.h>

const double hist_bounds_batch[HIST_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                0.1,   0.25,   0.5,   1.0,  2.5,   5.0};
const double hist_bounds_sample[HIST_BUCKETS] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                 0.005,   0.01,   0.025,   0.05,   0.1,   0.25};

void hist_init(hist *h, const double *bounds) {
  memset(h, 0, sizeof *h);
  h->bounds = bounds;
}

void hist_observe(hist *h, double v) {
  int i = 0;
  while (i < HIST_BUCKETS && v > h->bounds[i]) i++;
  if (i < HIST_BUCKETS) h->counts[i]++;
  h->count++;
  h->sum += v;
}
