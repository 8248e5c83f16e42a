/*
 * batch_copy.h -- one stream's frame of a batch the daemon built once for several (serve/share.c).
 * Called by batch.c (batch_build, for a job whose src is set), on a worker thread.
 *
 * A batch is a pure function of (dataset, bytes-affecting options, seed,
 * epoch, index); streams that agree on all of it get the same bytes, so
 * the daemon builds them once (job->src, a socket BATCH frame in codec
 * src->head.codec) and each stream gets its own frame of them:
 *  - over the socket, the data is not copied: the frame is the stream's
 *    own 24-byte header before src's payload (job->tail), or, when the
 *    stream counts the batch at another seq, its own header and head
 *    (seq re-encoded, the checksum taken again over head and data);
 *  - in a shared-memory slot, the raw tensors are copied into the
 *    stream's slot (codec none: a stream with a ring shares only with
 *    streams in codec none) and the BATCH_SHM frame is its own.
 * Either way job->raw_bytes and job->skipped are src's.
 */
#ifndef BFEED_BATCH_COPY_H
#define BFEED_BATCH_COPY_H

#include "batch.h"

/* Fill job's frame from job->src (finished, rc 0). job->rc < 0 with
 * job->err on failure: out of memory, or a slot too small for src. */
void batch_copy_build(batch_job *job);

#endif
