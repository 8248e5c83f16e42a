/*
 * flow.h -- flow control in one place: each stream's window and acknowledgements,
 * its shared-memory slots, the memory budget (max_memory) and shedding.
 * Called by stream.c (may it schedule or send; what it scheduled, built and sent; what the client
 * acknowledged), conn.c (bytes queued on and written to a socket), server.c (make, free) and stats.c
 * (bytes held).
 *
 * flow.c decides and counts; it builds, sends and frees nothing itself.
 * What it needs done it asks of the stream through the two calls of
 * flow_ops: send and schedule what may go now (resume), and free a
 * finished, unsent batch so that it can be made again later (drop). It
 * knows neither connections nor servers: conn.c reports byte counts, and
 * the streams it tracks are those that called flow_open.
 *
 * The rules (PROTOCOL.md "Flow control", ARCHITECTURE.md "How flow
 * control works"):
 *  - window: batch seq is scheduled only while seq < consumed + window;
 *  - a stream whose batches fill its socket's queue (two of them) is not
 *    reading: what it has made waits in the daemon, where it may be shed;
 *  - idle: a stream whose client has had a batch to take for a second
 *    (or four of its own times per batch, if longer) without taking one is
 *    idle until its next ACK that consumes; it schedules one batch at a
 *    time, only while it holds nothing and (on a ring) could send it, and
 *    has no share;
 *  - max_memory: bytes held (below) stay under it; each open stream that
 *    is not idle may hold at most its share, max_memory / open streams not
 *    idle; a stream holding nothing may always schedule one batch, so the
 *    limit is passed by at most one batch per such stream (OPEN bounds
 *    that batch: flow_open_share); when memory is short, idle cached
 *    buffers go back first, then the idle streams' finished, unsent
 *    batches, then those of streams over their share are shed (a batch is
 *    a pure function of its position, so it is made again byte for byte
 *    when its turn comes);
 *  - a stream refused memory waits until bytes are freed (a write
 *    finishes) and held is under max_memory again;
 *  - shared memory: each batch scheduled takes a free slot of the ring,
 *    busy until the client releases that batch; with none free the batch
 *    travels over the socket. Releases never stall nor start scheduling.
 *    A batch in a slot is announced only two past what the client has
 *    consumed (the rest of the window waits made in its slots, where it
 *    can still be shed); when memory is short an idle stream's free slots
 *    give their memory back (cold), and a cold slot is used again only
 *    when it fits max_memory, else the batch takes the socket.
 *
 * Held bytes: batches scheduled and not yet sent (estimated per stream:
 * its largest batch so far, or the largest it can make before its first),
 * the batches built once for several streams (flow_cache: each once; a
 * stream sharing them counts its part against its share, flow_ops.charged),
 * every byte queued on a socket (a batch's whole cached buffer, replies
 * too), the workers' buffers and the decodes in progress, the rings less
 * their cold slots, and the free buffers the buffer cache keeps.
 *
 * Loop thread only. A flow_stream belongs to its stream until
 * flow_close; it lives on, without an owner, while conn.c holds frames
 * of it (each is reported written later), and flow.c frees it.
 */
#ifndef BFEED_FLOW_H
#define BFEED_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "bufcache.h"

typedef struct flow flow;
typedef struct flow_stream flow_stream;

/* What flow asks of a stream (owner is flow_open's). */
typedef struct flow_ops {
  /* Memory was freed, or the socket took some of the stream's bytes:
   * send what may be sent, schedule what may be scheduled. */
  void (*resume)(void *owner);
  /* Free batch seq -- the stream's last scheduled, not yet sent -- if it is
   * finished: 1, and flow counts it unscheduled; 0 if it is still being
   * made (it stays). */
  int (*drop)(void *owner, uint64_t seq);
  /* Shared-memory streams (NULL: their slots are never cooled): give the
   * memory of free slot i back, the bytes given back (0: not done); and
   * take it again before slot i is written. */
  uint64_t (*slot_cool)(void *owner, uint32_t slot);
  void (*slot_warm)(void *owner, uint32_t slot);
  /* Bytes of batches built for several streams that the stream is charged
   * for beside its own (share.h: its part of its class's); NULL: none. */
  uint64_t (*charged)(void *owner);
} flow_ops;

/* Batches held once for several streams (share.h): their bytes, counted in
 * held, and how to free those only kept for later (1 if any went). */
typedef struct flow_cache {
  uint64_t (*held)(void *arg);
  int (*trim)(void *arg);
  void *arg;
} flow_cache;

/* The daemon's flow control. *max_memory (0: no limit) is read at every
 * decision, so a reload that changes it takes effect at once; buffers is
 * the buffer cache whose free buffers count as held and are given back first.
 * NULL out of memory. */
flow *flow_new(const uint64_t *max_memory, bufcache *buffers);
/* After the loop has finished (NULL: nothing). */
void flow_free(flow *f);
/* The shared batches' table (copied; held and trimmed with the buffer
 * cache's free buffers, before any stream's batch is shed). */
void flow_set_cache(flow *f, const flow_cache *c);
/* Bytes held now (see above): the daemon's memory_held_bytes. */
uint64_t flow_held(const flow *f);
/* 1 if `bytes` more, held for as long as a stream lives (a shared-memory
 * ring), fit max_memory beside what is held now, with no exception
 * (always, with no limit). */
int flow_admits(const flow *f, uint64_t bytes);
/* The same, after making room if need be: the buffer cache's free buffers
 * go back, then the idle streams' finished, unsent batches are shed, as
 * for a stream that reads (a ring for a new stream is not refused because
 * streams that stopped reading hold the memory). */
int flow_make_room(flow *f, uint64_t bytes);
/* Idle streams now, and batches freed from idle streams in all (the
 * daemon's idle_streams and batches_dropped_idle). */
int flow_idle_streams(const flow *f);
uint64_t flow_dropped_idle_total(const flow *f);
/* The clock flow reads (nanoseconds, monotonic), for tests; NULL: clock_now_ns. */
void flow_set_clock(flow *f, uint64_t (*now_ns)(void));

/* What a stream opening now may count on for its largest batch: its share
 * of max_memory beside every stream open, reading or not, max_memory /
 * (open streams + 1); UINT64_MAX with no limit. The one batch a stream
 * holding nothing may always schedule is bounded so: stream.c refuses at
 * OPEN a stream whose largest batch is over it, so the streams open at any
 * time pass max_memory by at most max_memory x (1 + 1/2 + ... + 1/n).
 * how gets the sum, for a message. */
uint64_t flow_open_share(const flow *f, char *how, size_t howlen);

/* A stream opens with this window, an estimate of a batch's buffer (what
 * it counts per batch scheduled before it has made one) and `slots`
 * shared-memory slots (0: none). NULL out of memory. */
flow_stream *flow_open(flow *f, uint32_t window, uint64_t frame_bytes, uint32_t slots, const flow_ops *ops,
                       void *owner);
/* A stream opened without a ring has one of `slots` slots from now on
 * (its ring did not fit at OPEN; nothing if it has one). */
void flow_add_slots(flow_stream *fs, uint32_t slots);
/* The stream moves to another ring (its class's), with `slots` slots of
 * its own there: the old ring's slots are forgotten (its client no longer
 * releases them). Only when every batch scheduled has been sent. */
void flow_reset_slots(flow_stream *fs, uint32_t slots);
/* Batch seq, just scheduled, goes over the socket after all: its slot is free. */
void flow_unslot(flow_stream *fs, uint64_t seq);
/* The slot holding batch seq (scheduled or sent, not released), or -1. */
int flow_slot_of(const flow_stream *fs, uint64_t seq);
/* Time the stream's window had room while max_memory kept it from
 * scheduling (ns, the wait under way included; 0 for NULL). */
uint64_t flow_memory_wait(const flow_stream *fs);
/* The stream is closed: it no longer counts nor is asked anything. */
void flow_close(flow_stream *fs);

/* The stream's positions: batches scheduled (the next one's seq), sent
 * (the next to send) and consumed by the client, in all. */
uint64_t flow_scheduled(const flow_stream *fs);
uint64_t flow_sent(const flow_stream *fs);
uint64_t flow_acked(const flow_stream *fs);
/* 1 while the stream is idle (above); its batches freed while idle. */
int flow_is_idle(const flow_stream *fs);
uint64_t flow_dropped_idle(const flow_stream *fs);

/* 1 if the next batch may be scheduled now: it is before `end` (the
 * stream's batches in all), inside the window, and memory allows its
 * buffer and `extra` bytes more (a shared batch it would start building).
 * A 0 for memory means wait: flow_ops.resume comes once bytes are freed. */
int flow_may_schedule(flow_stream *fs, uint64_t end, uint64_t extra);
/* The next batch is scheduled: its seq. *slot gets the ring slot it is
 * made in, or -1 (no ring, or every slot held): then it goes over the
 * socket. */
uint64_t flow_schedule(flow_stream *fs, int *slot);
/* A batch of the stream was made in a cached buffer of `bytes`, and sends
 * `shared` bytes of a batch built for several streams beside it. */
void flow_built(flow_stream *fs, uint64_t bytes, uint64_t shared);
/* 1 if the client keeps up: a finished batch may go to the socket now. */
int flow_may_send(const flow_stream *fs);
/* Batch flow_sent(fs) goes to the connection now. */
void flow_send(flow_stream *fs);
/* ACK: the client has consumed `consumed` batches in all. 0, or
 * BFEED_EPROTO (more than were sent) with err set. */
int flow_ack(flow_stream *fs, uint64_t consumed, char *err, size_t errlen);
/* ACK's release of batch seq on a shared-memory stream: its slot is free.
 * 0, or BFEED_EPROTO (seq holds no slot, or was not sent) with err set. */
int flow_release(flow_stream *fs, uint64_t seq, char *err, size_t errlen);

/* conn.c's reports: a frame holding `bytes` was queued on a socket, and
 * later written (or dropped with its connection); `shared`: the bytes of a
 * shared batch sent after it, counted once elsewhere (flow_cache) but
 * against the two batches a stream may have queued. fs: the stream whose
 * batch it is, NULL for replies and control frames. */
void flow_queued(flow *f, flow_stream *fs, uint64_t bytes, uint64_t shared);
void flow_written(flow *f, flow_stream *fs, uint64_t bytes, uint64_t shared);

#endif
