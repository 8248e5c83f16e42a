/*
 * stream_impl.h -- a stream's insides, for the files that serve it:
 * stream.c (scheduling, order, counters) and stream_ring.c (its
 * shared-memory ring). The rest of the daemon sees only stream.h.
 */
#ifndef BFEED_STREAM_IMPL_H
#define BFEED_STREAM_IMPL_H

#include <stdint.h>

#include "select.h"
#include "shm_ring.h"
#include "stream.h"

#define READY_SLOTS 64 /* >= the largest window (msg_opts_check) */

/* Its positions (scheduled, sent, acknowledged), bytes and ring slots are
 * flow.c's: the stream asks it before scheduling or sending. */
struct stream {
  conn *conn;      /* NULL once closed */
  flow_stream *flow; /* NULL once closed */
  uint32_t id;
  batch_spec spec;
  workers *workers;
  const logger *log;
  int shuffle;
  uint64_t shard_samples, bpe;
  select_plan sel;   /* which batch each seq is (select.h) */
  uint64_t end_seq;  /* batches to serve in all; UINT64_MAX: forever */
  batch_job *ready[READY_SLOTS]; /* made, not sent: seq at seq % READY_SLOTS */
  epoch_cache orders;
  uint64_t submitted_ns[READY_SLOTS]; /* when each batch in flight was scheduled */
  ds_stats *stats;
  unsigned inflight;
  int failed, end_sent;
  flow *fl;          /* the daemon's flow control, for a ring made late */
  int shm;          /* asked for shared memory, on a Unix socket */
  shm_ring *ring;    /* a shared-memory stream's ring (PROTOCOL.md "Shared memory"), else NULL */
  int ring_sent;     /* SHM_RING is queued */
  /* On its class's ring (share.h) instead of its own: flow's slot v is
   * ring slot seat[v], holding batch seat_seq[v]; `held` has a bit for each
   * ring slot it holds, `orphans` for those a closed client may still read,
   * held for ever. Releases of batches before ring_from are of the ring it
   * left, which its client no longer tells. */
  int ring_class, ring_stay; /* ring_stay: moving failed (no memfd): it keeps its own */
  uint64_t ring_from, held, orphans;
  uint8_t seat[MSG_SHM_MAX_SLOTS];
  uint64_t seat_seq[MSG_SHM_MAX_SLOTS];
  int ring_wanted;   /* shared memory asked for, the ring not made yet: tried again (stream_late_ring) */
  uint64_t ring_tried_ns; /* when it was last tried */
  share *sh;         /* the daemon's shared batches, NULL with share=off */
  share_member *member; /* its place among the streams that want the same bytes (from stream_start) */
  /* counters */
  uint64_t samples, batches, raw_bytes, wire_bytes, skipped, busy_ns;
  uint64_t kernel_copy_bytes, shm_batches; /* batch bytes through the socket; batches through the ring */
  uint64_t shm_copy_bytes;                 /* shared batches' bytes copied into its ring (0 on its class's ring) */
  uint64_t built, shared, bytes_saved;     /* its batches built for it, taken from another's, their raw bytes */
  uint64_t stage_ns[BATCH_STAGES];         /* its busy_ns by stage (batch.h) */
  uint64_t opened_ns, workers_busy_open;   /* when it opened, and the workers' busy time then */
  msg_timing timing;                       /* what its client last said it waited (TIMING) */
  jobs_entry *job;                         /* the job it counts in (jobs.h), NULL: none */
};

/* The buffer of a frame whose tensors are elsewhere (a ring slot, a shared
 * batch): header, head and tensor table at most. */
#define STREAM_HEAD_BYTES \
  (FRAME_HEADER_SIZE + 64 + MSG_MAX_TENSORS * (MSG_TENSOR_NAME_MAX + 2 + 8 * (BFEED_MAX_DIMS + 2)) + 4)

/* stream_ring.c. open: at OPEN, a ring of its own if it fits max_memory
 * now (else tried again later: late); send: SHM_RING, once, before the
 * first batch in the ring; join: at start, its class hears it is on
 * shared memory; move: before scheduling, 1 while it must wait (batches
 * of the ring it leaves are still to be sent), after moving to its
 * class's ring once two streams of the class are on shared memory; seat:
 * the ring slot for batch seq in flow's slot v (-1: the socket); release
 * and shed: the ring slot of seq is the daemon's again; close and free:
 * at stream_close and after the last job. cool, warm: flow_ops'. */
void stream_ring_open(stream *st, uint64_t *frame_bytes);
void stream_ring_send(stream *st);
void stream_ring_late(stream *st);
void stream_ring_join(stream *st);
int stream_ring_move(stream *st);
int stream_ring_seat(stream *st, int v, uint64_t seq, uint64_t epoch, uint64_t index);
int stream_ring_release(stream *st, uint64_t seq, char *err, size_t errlen);
void stream_ring_shed(stream *st, uint64_t seq);
void stream_ring_close(stream *st);
void stream_ring_free(stream *st);
uint64_t stream_ring_cool(void *owner, uint32_t slot);
void stream_ring_warm(void *owner, uint32_t slot);

#endif
