/*
 * stream.h -- one client's stream of batches on one dataset: schedule, reorder, send.
 * Called by dispatch.c (open, start, ack, request, close, stats), conn.c (close with its connection),
 * server.c (finished jobs), jobs.c (its counters, into its training job's); flow.c reaches it through
 * the flow_ops it gave at open.
 *
 * Batch number seq (counted from the open) is, with select all, batch
 * (seq + start batch) of the epochs from the start epoch on; select.h says
 * which it is for the subsets. Whether a batch may be scheduled or sent
 * now is flow.c's to say (the window, max_memory, a client that does not
 * read); the stream makes the jobs, puts the finished ones back in order
 * (workers finish out of order) and hands them to its connection. Loop
 * thread only.
 */
#ifndef BFEED_STREAM_H
#define BFEED_STREAM_H

#include <stdint.h>

#include "batch.h"
#include "conn.h"
#include "dataset.h"
#include "flow.h"
#include "jobs.h"
#include "msg.h"
#include "stats.h"
#include "share.h"
#include "workers.h"

typedef struct stream stream;

/* Validate options and open *out on connection c under the daemon's flow
 * control f, filling what OPEN_OK tells the client. sh: the daemon's
 * shared batches (share.h), taken unless the stream says share=off. 0, or a negative
 * BFEED_E* code with a message for the client in err. */
int stream_open(stream **out, conn *c, flow *f, uint32_t id, dataset *ds, const bfeed_stream_opts *o,
                workers *wk, bufcache *buffers, share *sh, ds_stats *stats, const logger *log, msg_open_ok *info,
                char *err, size_t errlen);
uint32_t stream_id(const stream *st);
/* The daemon's max_pixels for this stream's images (0: none), fixed at
 * open: set before stream_start; a reload changes later streams only. */
void stream_set_max_pixels(stream *st, uint64_t max_pixels);
/* Begin scheduling batches (after OPEN_OK is queued). */
void stream_start(stream *st);
/* ACK: the client has consumed a->consumed batches in all (schedule
 * more), and released a->released on a shared-memory stream (their slots
 * are free). 0, or BFEED_EPROTO with err set: more consumed than were
 * sent, or a release of a batch that holds no slot it was sent in. */
int stream_ack(stream *st, const msg_ack *a, char *err, size_t errlen);
/* REQUEST on an on-demand stream: serve m's batches after those asked for
 * before. A REQUEST the stream cannot take (select.h) fails the stream
 * with an ERROR on it. */
void stream_request(stream *st, const msg_request *m);
/* The client's TIMING: what its caller waited, shown in the stream's counters. */
void stream_timing(stream *st, const msg_timing *t);
/* The job the stream counts in (dispatch.c, at open; NULL: none), left
 * at stream_close. */
void stream_set_job(stream *st, jobs_entry *job);
jobs_entry *stream_job(const stream *st);
/* Fail the stream: ERROR code, msg on it, nothing more served (a request
 * about it the daemon cannot take: CLASSES_REQ past the names). */
void stream_fail(stream *st, int code, const char *msg);
/* Detach from the connection and free once no job is in flight. */
void stream_close(stream *st);
/* A job of this stream finished (from the workers' callback). */
void stream_job_done(batch_job *job);
/* The dataset the stream reads. */
const dataset *stream_dataset(const stream *st);
/* Fill counters; returns how many. */
size_t stream_stats(const stream *st, msg_counter *out, size_t max);

#endif
