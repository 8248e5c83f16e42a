/*
 * stream.h -- one client's stream of batches on one dataset: schedule, reorder, send.
 * Called by dispatch.c (open, ack, close), conn.c and budget.c (start again), server.c (finished jobs).
 *
 * Batch number seq (counted from the open) is, with select all, batch
 * (seq + start batch) of the epochs from the start epoch on; select.h says
 * which it is for the subsets. The stream keeps at most `window`
 * batches between what the client has acknowledged consuming and what it
 * has scheduled, so a slow client costs bounded memory; workers finish out
 * of order and the stream sends in order. Loop thread only.
 */
#ifndef BFEED_STREAM_H
#define BFEED_STREAM_H

#include <stdint.h>

#include "batch.h"
#include "conn.h"
#include "dataset.h"
#include "msg.h"
#include "stats.h"
#include "workers.h"

typedef struct stream stream;

/* Validate options and open *out, filling what OPEN_OK tells the client.
 * 0, or a negative BFEED_E* code with a message for the client in err. */
int stream_open(stream **out, conn *c, uint32_t id, dataset *ds, const bfeed_stream_opts *o, workers *pool,
                bufpool *buffers, ds_stats *stats, const logger *log, msg_open_ok *info, char *err, size_t errlen);
uint32_t stream_id(const stream *st);
/* The daemon's max_pixels for this stream's images (0: none), fixed at
 * open: set before stream_start; a reload changes later streams only. */
void stream_set_max_pixels(stream *st, uint64_t max_pixels);
/* Begin scheduling batches (after OPEN_OK is queued). */
void stream_start(stream *st);
/* The client has consumed `consumed` batches in all; 0 or BFEED_EPROTO if
 * that is more than were sent. */
int stream_ack(stream *st, uint64_t consumed);
/* A shared-memory stream's client released batch seq: its slot is free.
 * 0, or BFEED_EPROTO if seq holds no slot it was sent in. */
int stream_release(stream *st, uint64_t seq);
/* REQUEST on an on-demand stream: serve m's batches after those asked for
 * before. A REQUEST the stream cannot take (select.h) fails the stream
 * with an ERROR on it. */
void stream_request(stream *st, const msg_request *m);
/* Detach from the connection and free once no job is in flight. */
void stream_close(stream *st);
/* A job of this stream finished (from the workers' callback). */
void stream_job_done(batch_job *job);
/* Bytes this stream holds in batches scheduled but not yet sent (from the
 * largest batch it has made so far, or the largest it can make before its
 * first); its batches in the write queue are the connection's to count. */
uint64_t stream_held_bytes(const stream *st);
/* Unique over the daemon's life (ids are only unique per connection). */
uint64_t stream_serial(const stream *st);
/* `bytes` of this stream's batches left the write queue: send and
 * schedule more. */
void stream_written(stream *st, uint64_t bytes);
/* What the stream holds: batches scheduled, made and not sent, and its
 * batches in the write queue. */
uint64_t stream_holding_bytes(const stream *st);
/* Free finished batches not yet sent, from the last one scheduled back,
 * until the stream holds at most `keep` (they are made again when their
 * turn comes); returns the bytes freed. */
uint64_t stream_shed(stream *st, uint64_t keep);
/* The dataset the stream reads. */
const dataset *stream_dataset(const stream *st);
/* Fill counters; returns how many. */
size_t stream_stats(const stream *st, msg_counter *out, size_t max);

#endif
