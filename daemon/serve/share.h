/*
 * share.h -- each batch built once for every stream that wants the same bytes (sweeps, ensembles, repeated eval).
 * Called by stream.c (join, cost, submit, leave), stream_ring.c (the class's ring), server.c (make, stop, free,
 * fits), stats.c and metrics.c (counts), and flow.c through the hooks server.c gives it (bytes held, trim).
 *
 * A batch is a pure function of (dataset, the options that change bytes,
 * seed, epoch, index): streams on the same loaded dataset with the same
 * fingerprint (fingerprint.h: every bytes-changing option, the daemon's
 * max_pixels) and the same codec are one class, and batch (epoch, index)
 * of a class is built once, by a job of the class's own (its spec and
 * epoch orders, so that no stream's close cancels it). Each stream asking
 * for it gets a copy job (batch_copy.h: its own frame over the socket, a
 * BATCH_SHM naming the slot of the class's ring it was built in, or a copy
 * into its own ring's slot), queued before the builds, so every stream
 * still gets its own complete stream, in order, byte for byte.
 *
 * What is kept: a batch is held while a job uses it (being built, copied,
 * queued on a socket, waiting to be sent), and after that while a stream
 * of its class will want it soon: its next batch is at most `horizon` of
 * its own batches before it (share_new's horizon; 0: twice the stream's
 * window). A stream further behind finds nothing and has its own built; a
 * fast one never waits for a slow one. Bytes of batches held count once
 * (share_held, in flow.c's held); what is kept only for later goes first
 * when memory is short (share_trim).
 *
 * Loop thread only.
 */
#ifndef BFEED_SHARE_H
#define BFEED_SHARE_H

#include <stdint.h>

#include "batch.h"
#include "log.h"
#include "shm_ring.h"
#include "workers.h"

typedef struct share share;
typedef struct share_member share_member;

/* The daemon's table; *horizon is read at every decision (a reload changes
 * it in place). NULL out of memory. */
share *share_new(workers *wk, const uint32_t *horizon);
/* The workers are stopping: nothing more is submitted (a job asked for
 * fails with BFEED_ESHUTDOWN). */
void share_stop(share *sh);
/* After the workers have stopped and every stream has closed (NULL: nothing). */
void share_free(share *sh);
/* Bytes of the shared batches alive now, each once. */
uint64_t share_held(const share *sh);
/* Free the batches kept only for streams that may want them later; 1 if any went. */
int share_trim(share *sh);
/* Batches built for classes in all, and those alive now. */
uint64_t share_builds(const share *sh);
uint64_t share_batches_held(const share *sh);

/* A stream starts: its class (spec's dataset, fingerprint, codec) found or
 * made. bpe: batches per epoch; window, stride: how many batches it keeps
 * in flight, and how far apart its batches are (select residue: the
 * modulus; else 1), which make its horizon. owner: the stream, its jobs'.
 * NULL out of memory (the stream then builds its own). */
share_member *share_join(share *sh, const batch_spec *spec, uint64_t fingerprint, uint64_t bpe, uint32_t window,
                         uint64_t stride, void *owner);
/* The stream closes: its jobs waiting for a build are returned (linked by
 * ->next) for the caller to free; the member is gone. */
batch_job *share_leave(share_member *m);
/* Bytes scheduling batch (epoch, index) would add to the daemon's: 0 when
 * it is built or being built, else what its build may take. */
uint64_t share_cost(const share_member *m, uint64_t epoch, uint64_t index);
/* Serve job (the stream's: epoch, index, seq, count and slot set; its
 * `done` is called on the loop when its frame is made, as for a build):
 * from the batch if it exists, else from a build started now, in the
 * job's slot when ring (the class ring that slot is in) is given.
 * job->shared says which. */
void share_submit(share_member *m, batch_job *job, shm_ring *ring);
/* The stream's part of its class's shared bytes (held / streams of the
 * class), what flow counts against its share of max_memory. */
uint64_t share_charged(const share_member *m);

/* Shared memory. Streams of a class that take their batches in shared
 * memory share one ring once there are two of them: a batch is built in
 * one of its slots, which every client maps, instead of being copied
 * into each stream's own ring (PROTOCOL.md "Shared memory").
 * share_shm_join: m's stream takes its batches in shared memory, at most
 * slot_size bytes each. share_ring: the ring m's stream moves to (a
 * reference for it), NULL while it has none (fewer than two such streams,
 * or no memfd). share_slot: a slot of ring for batch (epoch, index), held
 * for m's stream: the one the batch is kept in (unless its bit is set in
 * avoid: the stream holds it already), else a free one (share_set_fits says
 * whether a cold one's bytes fit: share_set_fits). -1: none free. */
void share_shm_join(share_member *m, uint64_t slot_size);
shm_ring *share_ring(share_member *m, const logger *log);
int share_ring_ready(const share_member *m); /* share_ring would give one (but for a memfd failure) */
int share_slot(share_member *m, shm_ring *ring, uint64_t epoch, uint64_t index, uint64_t avoid);
/* What says whether a cold ring slot's bytes fit max_memory (server.c: flow_admits). */
void share_set_fits(share *sh, int (*fits)(void *arg, uint64_t bytes), void *arg);

#endif
