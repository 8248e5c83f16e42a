/*
 * batch.h -- building one batch: the pure function at the heart of bfeed.
 *
 * A batch is fully determined by its spec (dataset, stream options), its
 * epoch order and its index. batch_build() runs on a worker thread: it
 * reads, decodes and transforms each sample, normalises and casts to bf16
 * through a lookup table, lays out the tensors, compresses, and leaves a
 * complete BATCH frame in job->frame for the event loop to write.
 *
 * A sample whose file cannot be read or decoded is replaced by the next
 * valid sample in the epoch's order (wrapping), so batches keep their fixed
 * size and stay reproducible; each replacement is counted in job->skipped.
 */
#ifndef BFEED_BATCH_H
#define BFEED_BATCH_H

#include <pthread.h>
#include <stdint.h>
#include <zstd.h>

#include "bfeed.h"
#include "dataset.h"
#include "log.h"
#include "sample.h"
#include "tlv.h"

/* The order in which one epoch visits this shard's samples. Shared by the
 * jobs of that epoch (reference counted, immutable once made). */
typedef struct epoch_order {
  int refs;        /* atomic */
  uint64_t epoch;
  uint32_t n;      /* samples of this shard in the epoch */
  uint32_t idx[];  /* dataset index at each position */
} epoch_order;

/* Samples per epoch in shard (index, count): floor(n / count), so that all
 * shards are equally long, as synchronous data-parallel training needs. */
uint64_t epoch_shard_size(uint64_t nsamples, uint32_t shard_count);
/* Position p of the shard is position p * count + index of the epoch's
 * (shuffled or dataset) order. NULL when out of memory. */
epoch_order *epoch_order_make(uint64_t nsamples, const bfeed_stream_opts *o, int shuffle, uint64_t epoch);
epoch_order *epoch_order_ref(epoch_order *e);
void epoch_order_unref(epoch_order *e);

/* Frame buffers for reuse. A batch frame is tens of megabytes; allocating
 * it fresh for every batch costs more in page faults (the kernel zeroing new
 * pages) than building the batch. Buffers come back here after the frame is
 * written and go to the next batch. Thread-safe. */
#define BATCH_POOL_MAX 16
typedef struct batch_pool {
  pthread_mutex_t mu;
  int n;
  struct {
    uint8_t *p;
    size_t cap;
  } v[BATCH_POOL_MAX];
} batch_pool;
void batch_pool_init(batch_pool *p);
void batch_pool_destroy(batch_pool *p);
/* A buffer of at least need bytes (malloc'd if none fits); *cap its size. */
uint8_t *batch_pool_get(batch_pool *p, size_t need, size_t *cap);
/* Give a buffer back (freed when the pool is full or p is NULL). */
void batch_pool_put(batch_pool *p, uint8_t *buf, size_t cap);

/* What every batch of a stream shares; immutable while jobs run. */
typedef struct batch_spec {
  dataset *ds;
  bfeed_stream_opts opts;
  sample_params sample;
  uint16_t lut[3][256]; /* bf16 of (v/255 - mean[c]) / std[c], float32 math as torchvision */
  uint32_t stream_id;
  const logger *log;
  batch_pool *pool;
} batch_spec;

void batch_spec_init(batch_spec *s, dataset *ds, const bfeed_stream_opts *o, uint32_t stream_id,
                     const logger *log, batch_pool *pool);

typedef struct batch_job {
  /* input */
  const batch_spec *spec;
  epoch_order *order;    /* a reference owned by the job */
  uint64_t epoch, index, seq;
  uint32_t first, count; /* positions [first, first+count) of the order */
  /* output */
  wbuf frame;            /* the complete BATCH frame */
  int rc;                /* 0, or BFEED_E* with err */
  char err[256];
  uint32_t skipped;
  uint64_t raw_bytes, busy_ns;
  batch_pool *pool;      /* where frame's buffer goes back; outlives streams */
  /* owned by whoever queues the job */
  void *owner;
  struct batch_job *next;
} batch_job;

/* Per-thread working memory, reused across batches. Zero-initialise. */
typedef struct batch_worker {
  sample_scratch scratch;
  uint8_t *file, *rgb, *raw;
  size_t file_cap, rgb_cap, raw_cap;
  ZSTD_CCtx *zc;
} batch_worker;
void batch_worker_free(batch_worker *w);

void batch_build(batch_job *job, batch_worker *w);
void batch_job_free(batch_job *job);

#endif
