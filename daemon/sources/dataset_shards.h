/*
 * dataset_shards.h -- the tfrecord and tar dataset kinds: shard files named
 * by a glob, indexed in background threads, samples read at recorded offsets.
 * Called by dataset.c (load, readiness, reads, names, free).
 *
 * Loading only lists the shards and starts the indexing threads: the
 * daemon serves its other datasets meanwhile, and a stream opened on this
 * one is answered BFEED_EBUSY ("indexing, 3 of 10 shards done") until the
 * index is complete. Each shard's index is reused from its cache
 * (shard_index.h) when the shard has not changed. Sample order: shards
 * sorted by name, samples in file order.
 */
#ifndef BFEED_DATASET_SHARDS_H
#define BFEED_DATASET_SHARDS_H

#include "dataset_impl.h"

typedef struct dataset_shards dataset_shards;

/* Check the kind's settings, list the shards and start indexing them. 0,
 * or BFEED_EDATASET (a setting, no shard matches) or BFEED_ENOMEM with the
 * reason. */
int dataset_shards_load(dataset *d, const dataset_keys *k, const logger *log, char *err, size_t errlen);
/* 0 when the index is complete; BFEED_EBUSY while indexing; BFEED_EDATASET
 * when indexing failed (a compressed shard, no samples); err says which. */
int dataset_shards_ready(const dataset *d, char *err, size_t errlen);
/* Wait for the indexing to end; then as dataset_shards_ready. */
int dataset_shards_wait(dataset *d, char *err, size_t errlen);
/* Sample i's image bytes (the record's image feature, or the tar member).
 * 0, or BFEED_EIO, BFEED_ENOMEM, and for TFRecords BFEED_ECHECKSUM (a CRC
 * gone bad since indexing), BFEED_EDATASET (a record changed). */
int dataset_shards_read(const dataset *d, size_t i, uint8_t **buf, size_t *cap, size_t *len, char *err,
                        size_t errlen);
/* "FILE: record at byte offset N" (or "member"), for log lines. */
void dataset_shards_name(const dataset *d, size_t i, char *out, size_t n);
/* Records or members left out when the shards were indexed. */
uint64_t dataset_shards_skipped(const dataset *d);
/* The shard files, in sample order (listed at load, before indexing). */
const char *const *dataset_shards_files(const dataset *d, size_t *n);
/* Stops the indexing threads and frees; d's arrays are freed by dataset.c. */
void dataset_shards_free(dataset_shards *s);

#endif
