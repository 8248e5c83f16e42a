/*
 * workers.h -- the thread pool that builds batches.
 * Called by server.c (start, stop) and stream.c (submit, cancel).
 *
 * Why not libuv's pool: its size is a process-wide environment variable and
 * it is shared with libuv's own file-system work; batch building needs a
 * pool sized by --workers and per-thread scratch memory (decoder buffers,
 * a zstd context) that lives as long as the thread.
 *
 * Jobs are queued FIFO from the loop thread; finished jobs come back on the
 * loop thread through a uv_async_t, in completion order (the stream puts
 * them back in batch order).
 */
#ifndef BFEED_WORKERS_H
#define BFEED_WORKERS_H

#include <uv.h>

#include "batch.h"
#include "log.h"

typedef struct workers workers;
typedef void (*workers_done_cb)(batch_job *job, void *arg);

/* Start n threads. done is called on the loop thread for every job that
 * was run. 0, or BFEED_ENOMEM / BFEED_EINTERNAL with err set (then *out,
 * when set, holds the threads that did start, for workers_stop). */
int workers_start(workers **out, int n, uv_loop_t *loop, workers_done_cb done, void *arg, char *err,
                  size_t errlen);
/* Queue a job (loop thread only). */
void workers_submit(workers *w, batch_job *job);
/* Queue a job before every waiting one: a copy of a shared batch
 * (batch_copy.h), which takes a moment, not a batch's decoding. */
void workers_submit_first(workers *w, batch_job *job);
/* Remove the queued, not yet started jobs of owner and return them as a
 * list (linked by ->next) for the caller to free. Running jobs still
 * complete through the callback. */
batch_job *workers_cancel(workers *w, void *owner);
/* Jobs waiting and threads busy, for statistics. */
void workers_load(workers *w, unsigned *queued, unsigned *busy);
/* Time the threads have spent building batches since they started, the
 * builds under way included (nanoseconds, all threads together): over
 * workers_count x elapsed, how busy they were (bfeed stats' verdict). */
uint64_t workers_busy_ns(workers *w);
int workers_count(const workers *w);
/* Stop: waits up to timeout_ms for running jobs, joins the threads, hands
 * every job back through the callback (queued ones with rc BFEED_ESHUTDOWN)
 * and closes the async handle; the loop must run once more to finish
 * closing. A thread still busy at the deadline (a read that never returns:
 * a hung NFS server, a FUSE file) is logged, naming its dataset, stream,
 * batch and sample, and left: its job never comes back, and what it uses
 * (its stream, dataset, the workers' lock) must outlive it, so the caller
 * must not free them and should exit the process. Returns the number of
 * threads left so. */
int workers_stop(workers *w, uint64_t timeout_ms, const logger *log);

#endif
