/*
 * epoch.h -- the order in which one epoch visits a shard's samples.
 * Called by stream.c (one order per epoch in flight) and batch.c (a job's positions to dataset indices).
 */
#ifndef BFEED_EPOCH_H
#define BFEED_EPOCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "bfeed_types.h"

struct batch_spec;

/* The order in which one epoch visits this shard's samples. Shared by the
 * jobs of that epoch (reference counted, immutable once made). */
typedef struct epoch_order {
  int refs;        /* atomic */
  uint64_t epoch;
  uint32_t n;      /* positions of this shard in the epoch */
  uint32_t real;   /* those that are samples (n, but for eval_pad mask's padding at the end) */
  uint32_t idx[];  /* dataset index at each position */
} epoch_order;

/* Positions per epoch in shard (index, count) of the order's positions
 * from start_sample on (R of them): floor(R / count), so that all shards
 * are equally long, as synchronous data-parallel training needs; with
 * eval_pad mask, ceil(R / count) rounded up to whole batches, the
 * positions past a shard's own samples being padding. */
uint64_t epoch_shard_size(const bfeed_stream_opts *o, uint64_t nsamples);
/* Whether start_sample and eval_pad make sense for a dataset of nsamples
 * (text: a text dataset, where bucket applies): 0, or BFEED_EINVAL with
 * the reason in err. */
int epoch_check(const bfeed_stream_opts *o, const char *name, uint64_t nsamples, int text, char *err,
                size_t errlen);
/* Position p of the shard is position start_sample + p * count + index of
 * the epoch's (shuffled or dataset) order (modulo the dataset's size for
 * padding). With length bucketing (text, opts.bucket =
 * K) each run of K batches' positions is then sorted by sample length and,
 * when shuffling, its whole batches are permuted (batch_text_bucket). NULL when
 * out of memory. */
epoch_order *epoch_order_make(const struct batch_spec *s, int shuffle, uint64_t epoch);
epoch_order *epoch_order_ref(epoch_order *e);
void epoch_order_unref(epoch_order *e);

/* A stream's orders, made on the worker threads by the first job of an
 * epoch that needs one: a shuffle of a million samples takes milliseconds,
 * which the event loop must not spend. The two most recent epochs are kept
 * (a stream has at most two in flight); the others wait for the first
 * while it is being made, since they need it too. */
typedef struct epoch_cache {
  pthread_mutex_t mu;
  const struct batch_spec *spec;
  int shuffle;
  epoch_order *orders[2];
} epoch_cache;
void epoch_cache_init(epoch_cache *c, const struct batch_spec *s, int shuffle);
/* The order of epoch: a new reference (epoch_order_unref it), or NULL when
 * out of memory. Safe from any thread. */
epoch_order *epoch_cache_get(epoch_cache *c, uint64_t epoch);
void epoch_cache_free(epoch_cache *c);

#endif
