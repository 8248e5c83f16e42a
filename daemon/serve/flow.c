/*
 * flow.c -- see flow.h. Every rule of what a stream may schedule and send is
 * here, in four parts: which streams are idle, the daemon's memory (held,
 * share, reclaim, wake), one stream's window and slots, and conn.c's byte
 * reports.
 *
 * A rule that looks at how streams use memory over time (which read, which
 * do not) belongs in flow_reclaim and flow_share: every stream's positions,
 * bytes and acknowledgements pass through here, and drop frees any batch
 * made and not sent, from the stream's last one back.
 */
#include "flow.h"

#include <stdio.h>
#include <stdlib.h>

#include "bfeed_types.h"
#include "batch.h"
#include "clock.h"
#include "decode_mem.h"
#include "msg.h"
#include "shm_ring.h"

struct flow_stream {
  flow *f;
  flow_stream *prev, *next; /* every stream flow still tracks */
  const flow_ops *ops;
  void *owner;          /* NULL once closed: then it lives only until its queued frames are reported */
  uint32_t window;
  uint64_t scheduled;   /* batches scheduled in all: the next one's seq */
  uint64_t sent;        /* batches handed to the connection: the next to send */
  uint64_t acked;       /* batches the client has consumed */
  uint64_t frame_bytes; /* a batch's buffer: estimated at open, then the largest so far */
  uint64_t queued;      /* bytes of its batches in the socket's write queue: their own buffers */
  uint64_t queued_all;  /* the same with the shared batches' bytes they send (counted once, in flow_cache) */
  uint64_t batch_bytes; /* a whole batch on the wire, its shared bytes too: the largest so far */
  uint64_t frames;      /* those batches: conn.c holds fs for each until it reports it written */
  uint32_t slots;       /* of its shared-memory ring; 0: none */
  uint64_t slot_busy;   /* bit i: slot i holds a batch scheduled, sent or held by the caller */
  uint64_t slot_cold;   /* bit i: slot i is free and its memory given back (flow_cool) */
  uint64_t slot_bytes;  /* a slot's size, learnt from the first cooled (0: none cooled yet) */
  uint64_t slot_seq[MSG_SHM_MAX_SLOTS]; /* the batch in each busy slot */
  uint64_t since_ns;    /* open, the last ACK that consumed, or the send that gave the client a batch to take */
  uint64_t acked_ns;    /* when the last ACK that consumed came (0: none yet) */
  uint64_t pace_ns;     /* time per batch consumed, averaged over its recent ACKs (0: not known yet) */
  uint64_t dropped_idle; /* finished batches freed while it was idle, made again when it read */
  uint64_t memory_since_ns; /* since when its window has room and max_memory says no (0: it does not wait) */
  uint64_t memory_wait_ns;  /* such waits ended, in all */
};

struct flow {
  const uint64_t *max_memory; /* the server's limit, changed in place by a reload */
  bufcache *buffers;
  flow_stream *streams;       /* open ones, and closed ones with frames still queued */
  int open;                   /* of those, the open ones */
  uint64_t queued;            /* bytes in every socket's write queue */
  int blocked;                /* a stream was refused memory and waits for bytes to be freed */
  uint64_t (*now)(void);      /* the monotonic clock, in ns (a test's own) */
  uint64_t dropped_idle;      /* batches freed from idle streams, in all */
  flow_cache cache;           /* shared batches (all NULL: none) */
};

static uint64_t flow_clock(void) { return clock_now_ns(); }

flow *flow_new(const uint64_t *max_memory, bufcache *buffers) {
  flow *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->max_memory = max_memory;
  f->buffers = buffers;
  f->now = flow_clock;
  return f;
}

void flow_set_clock(flow *f, uint64_t (*now_ns)(void)) { f->now = now_ns ? now_ns : flow_clock; }

void flow_set_cache(flow *f, const flow_cache *c) { f->cache = *c; }

static void flow_discard(flow_stream *fs) {
  if (fs->prev) fs->prev->next = fs->next;
  else fs->f->streams = fs->next;
  if (fs->next) fs->next->prev = fs->prev;
  free(fs);
}

void flow_free(flow *f) {
  if (!f) return;
  while (f->streams) flow_discard(f->streams);
  free(f);
}

/* ------------------------------------------------------------------ */
/* Idle streams                                                        */

/* A stream is idle when its client has had a batch to take for
 * FLOW_IDLE_NS, or for FLOW_IDLE_PACES of its own times per batch if that
 * is longer, without taking one (PROTOCOL.md "Flow control"). A client
 * waiting for its next batch is never idle, however slow the batch; a
 * trainer whose step takes seconds is idle only after several steps
 * without consuming. */
#define FLOW_IDLE_NS 1000000000ull
#define FLOW_IDLE_PACES 4
/* Ring batches announced beyond those consumed (flow_may_send). */
#define FLOW_RING_AHEAD 2

static int flow_idle(const flow_stream *fs, uint64_t now) {
  if (!fs->owner || fs->sent <= fs->acked) return 0;
  uint64_t wait = fs->pace_ns * FLOW_IDLE_PACES > FLOW_IDLE_NS ? fs->pace_ns * FLOW_IDLE_PACES : FLOW_IDLE_NS;
  return now - fs->since_ns >= wait;
}

int flow_is_idle(const flow_stream *fs) { return flow_idle(fs, fs->f->now()); }

uint64_t flow_dropped_idle(const flow_stream *fs) { return fs->dropped_idle; }

uint64_t flow_memory_wait(const flow_stream *fs) {
  if (!fs) return 0;
  return fs->memory_wait_ns + (fs->memory_since_ns ? fs->f->now() - fs->memory_since_ns : 0);
}

/* A wait for memory begins when the window has room and max_memory says
 * no, and ends at the next decision that is not that (bfeed stats' verdict
 * "memory-limited"). */
static int flow_memory_waits(flow_stream *fs, int waits) {
  if (waits && !fs->memory_since_ns) fs->memory_since_ns = fs->f->now();
  if (!waits && fs->memory_since_ns) {
    fs->memory_wait_ns += fs->f->now() - fs->memory_since_ns;
    fs->memory_since_ns = 0;
  }
  return !waits;
}

int flow_idle_streams(const flow *f) {
  int n = 0;
  uint64_t now = f->now();
  for (const flow_stream *fs = f->streams; fs; fs = fs->next) n += flow_idle(fs, now);
  return n;
}

uint64_t flow_dropped_idle_total(const flow *f) { return f->dropped_idle; }

/* The client consumed up to `consumed` (more than before): the clock
 * restarts, and its pace takes in the time per batch since the last ACK
 * (a moving average over about eight ACKs). */
static void flow_consumed(flow_stream *fs, uint64_t consumed) {
  uint64_t now = fs->f->now(), n = consumed - fs->acked;
  if (fs->acked_ns && n) {
    uint64_t per = (now - fs->acked_ns) / n;
    fs->pace_ns = fs->pace_ns ? fs->pace_ns - fs->pace_ns / 8 + per / 8 : per;
  }
  fs->acked_ns = fs->since_ns = now;
}

/* ------------------------------------------------------------------ */
/* The daemon's memory                                                 */

/* What a stream holds itself: batches scheduled and not yet sent, and its
 * batches the socket has not taken. A client that does not read keeps its
 * bytes and is the one that waits. */
static uint64_t flow_own(const flow_stream *fs) { return (fs->scheduled - fs->sent) * fs->frame_bytes + fs->queued; }

/* What it counts against its share: its own, and its part of the batches
 * built once for it and the streams that want the same. */
static uint64_t flow_holding(const flow_stream *fs) {
  return flow_own(fs) + (fs->owner && fs->ops->charged ? fs->ops->charged(fs->owner) : 0);
}

uint64_t flow_held(const flow *f) {
  uint64_t held = (f->buffers ? bufcache_idle_bytes(f->buffers) : 0) + decode_mem_held() + batch_scratch_bytes() +
                  shm_ring_bytes() + f->queued + (f->cache.held ? f->cache.held(f->cache.arg) : 0);
  for (const flow_stream *fs = f->streams; fs; fs = fs->next)
    if (fs->owner) held += (fs->scheduled - fs->sent) * fs->frame_bytes;
  return held;
}

int flow_admits(const flow *f, uint64_t bytes) {
  return *f->max_memory == 0 || flow_held(f) + bytes <= *f->max_memory;
}

uint64_t flow_open_share(const flow *f, char *how, size_t howlen) {
  uint64_t max = *f->max_memory, share = max ? max / ((uint64_t)f->open + 1) : UINT64_MAX;
  snprintf(how, howlen, "its share of max_memory (%llu / %d streams = %llu)",
           (unsigned long long)max, f->open + 1, (unsigned long long)share);
  return share;
}

/* What each open stream that reads may hold: max_memory over the open
 * streams that are not idle (an idle one may hold one batch, no share). */
static uint64_t flow_share(const flow *f) {
  uint64_t now = f->now(), active = 0;
  for (const flow_stream *fs = f->streams; fs; fs = fs->next) active += fs->owner && !flow_idle(fs, now);
  return *f->max_memory / (active > 0 ? active : 1);
}

/* What each open stream's client may hold, sent and not taken: max_memory
 * over every open stream, idle ones included. That memory is in the
 * client's process, not the daemon's, and a client that stops reading
 * keeps what it was sent: were it measured by flow_share, a stream would
 * be sent more the longer it stayed idle. */
static uint64_t flow_client_share(const flow *f) {
  uint64_t open = 0;
  for (const flow_stream *fs = f->streams; fs; fs = fs->next) open += fs->owner != NULL;
  return *f->max_memory / (open > 0 ? open : 1);
}

static int flow_fits(const flow *f, uint64_t bytes, uint64_t holding) {
  return holding + bytes <= flow_share(f) && flow_held(f) + bytes <= *f->max_memory;
}

/* Free fs's finished, unsent batches from its last scheduled back, until
 * it holds at most `keep` or the last is still being made; its slots go
 * back. How many were freed. */
static int flow_shed(flow_stream *fs, uint64_t keep);
static int flow_cool(flow_stream *fs);

/* Give the buffer cache's free buffers back to the system, and the shared
 * batches kept only for streams that may want them later: 1 if there were
 * any. */
static int flow_trim(flow *f) {
  int any = f->cache.trim && f->cache.trim(f->cache.arg);
  if (!f->buffers || bufcache_idle_bytes(f->buffers) == 0) return any;
  bufcache_trim(f->buffers, 1);
  return 1;
}

/* Free every finished, unsent batch of the idle streams (their frames on
 * the socket stay: they cannot be called back) and the memory of their
 * free ring slots, emptying the buffer cache after each stream shed. 1 if
 * fits(f, bytes, holding) then. */
static int flow_shed_idle(flow *f, uint64_t bytes, uint64_t holding,
                          int (*fits)(const flow *, uint64_t, uint64_t)) {
  uint64_t now = f->now();
  for (flow_stream *fs = f->streams; fs; fs = fs->next) {
    if (!flow_idle(fs, now)) continue;
    int n = flow_shed(fs, fs->queued);
    fs->dropped_idle += (uint64_t)n;
    f->dropped_idle += (uint64_t)n;
    if (!flow_cool(fs) && !n) continue;
    flow_trim(f);
    if (fits(f, bytes, holding)) return 1;
  }
  return 0;
}

/* Take memory back for a stream within its share: free buffers kept for
 * reuse first, then the idle streams' finished, unsent batches (their
 * clients have stopped taking batches; each is made again, byte for byte,
 * when its client reads again), then those of streams over their share
 * (clients that do not read). A shed batch's buffer goes back to the buffer cache,
 * where it still counts as held, so the cache is emptied again after each
 * stream shed. 1 if the request fits then. */
static int flow_reclaim(flow *f, uint64_t bytes, uint64_t holding) {
  if (flow_trim(f) && flow_fits(f, bytes, holding)) return 1;
  if (flow_shed_idle(f, bytes, holding, flow_fits)) return 1;
  uint64_t share = flow_share(f);
  for (flow_stream *fs = f->streams; fs; fs = fs->next) {
    if (!fs->owner || flow_holding(fs) <= share || !flow_shed(fs, share)) continue;
    flow_trim(f);
    if (flow_fits(f, bytes, holding)) return 1;
  }
  return 0;
}

static int flow_room(const flow *f, uint64_t bytes, uint64_t holding) {
  (void)holding;
  return flow_admits(f, bytes);
}

int flow_make_room(flow *f, uint64_t bytes) {
  if (flow_admits(f, bytes)) return 1;
  if (flow_trim(f) && flow_admits(f, bytes)) return 1;
  return flow_shed_idle(f, bytes, 0, flow_room);
}

/* 1 if `bytes` more fit for a stream holding `holding` (always, with no
 * limit, and for a stream holding nothing); 0 marks a stream waiting. */
static int flow_memory_allows(flow *f, uint64_t bytes, uint64_t own, uint64_t holding) {
  uint64_t max = *f->max_memory;
  if (max == 0 || own == 0 || flow_fits(f, bytes, holding)) return 1;
  if (holding + bytes <= flow_share(f) && flow_reclaim(f, bytes, holding)) return 1;
  f->blocked = 1;
  return 0;
}

/* Bytes were freed: restart the waiting streams once held is under the
 * limit. Every stream is resumed, not only the one refused: all that were
 * refused since the last wake share the one flag. */
static void flow_wake(flow *f) {
  if (!f->blocked || flow_held(f) >= *f->max_memory) return;
  f->blocked = 0;
  for (flow_stream *fs = f->streams, *next; fs; fs = next) {
    next = fs->next; /* resume queues frames, never closes a stream: the list holds still */
    if (fs->owner) fs->ops->resume(fs->owner);
  }
}

/* ------------------------------------------------------------------ */
/* One stream                                                          */

flow_stream *flow_open(flow *f, uint32_t window, uint64_t frame_bytes, uint32_t slots, const flow_ops *ops,
                       void *owner) {
  flow_stream *fs = calloc(1, sizeof *fs);
  if (!fs) return NULL;
  fs->f = f;
  fs->ops = ops;
  fs->owner = owner;
  fs->window = window;
  fs->frame_bytes = fs->batch_bytes = frame_bytes;
  fs->slots = slots < MSG_SHM_MAX_SLOTS ? slots : MSG_SHM_MAX_SLOTS;
  fs->since_ns = f->now();
  fs->next = f->streams;
  if (f->streams) f->streams->prev = fs;
  f->streams = fs;
  f->open++;
  return fs;
}

void flow_add_slots(flow_stream *fs, uint32_t slots) {
  if (!fs->slots) fs->slots = slots < MSG_SHM_MAX_SLOTS ? slots : MSG_SHM_MAX_SLOTS;
}

void flow_reset_slots(flow_stream *fs, uint32_t slots) {
  fs->slots = slots < MSG_SHM_MAX_SLOTS ? slots : MSG_SHM_MAX_SLOTS;
  fs->slot_busy = fs->slot_cold = 0;
  fs->slot_bytes = 0;
}

void flow_unslot(flow_stream *fs, uint64_t seq) {
  int slot = flow_slot_of(fs, seq);
  if (slot >= 0) fs->slot_busy &= ~(1ull << slot);
}

void flow_close(flow_stream *fs) {
  if (!fs || !fs->owner) return;
  fs->owner = NULL;
  fs->f->open--;
  if (fs->frames == 0) flow_discard(fs);
}

uint64_t flow_scheduled(const flow_stream *fs) { return fs->scheduled; }
uint64_t flow_sent(const flow_stream *fs) { return fs->sent; }
uint64_t flow_acked(const flow_stream *fs) { return fs->acked; }

/* An idle stream makes one batch at a time, and only while it holds
 * nothing and could send it: when its client reads again, one is there or
 * on the way. (Making nothing at all would stall a client that holds
 * batches it cannot consume yet and asks for others: a fan-out client
 * reordering members' batches.) */
int flow_may_schedule(flow_stream *fs, uint64_t end, uint64_t extra) {
  uint64_t own = flow_own(fs);
  if (fs->scheduled >= end || fs->scheduled >= fs->acked + fs->window) return flow_memory_waits(fs, 0), 0;
  if (flow_idle(fs, fs->f->now()) && (own || (fs->slots && fs->scheduled >= fs->acked + FLOW_RING_AHEAD)))
    return flow_memory_waits(fs, 0), 0;
  return flow_memory_waits(fs, !flow_memory_allows(fs->f, fs->frame_bytes + extra, own, flow_holding(fs)));
}

int flow_slot_of(const flow_stream *fs, uint64_t seq) {
  for (uint32_t i = 0; i < fs->slots; i++)
    if ((fs->slot_busy >> i & 1) && fs->slot_seq[i] == seq) return (int)i;
  return -1;
}

/* A free slot for the next batch: a warm one, else a cold one whose
 * memory fits again (warmed), else -1. */
static int flow_free_slot(flow_stream *fs) {
  uint64_t free = ~fs->slot_busy & (fs->slots < 64 ? (1ull << fs->slots) - 1 : ~0ull);
  if (free & ~fs->slot_cold) return __builtin_ctzll(free & ~fs->slot_cold);
  if (!free || !flow_admits(fs->f, fs->slot_bytes)) return -1;
  int i = __builtin_ctzll(free);
  fs->ops->slot_warm(fs->owner, (uint32_t)i);
  fs->slot_cold &= ~(1ull << i);
  return i;
}

uint64_t flow_schedule(flow_stream *fs, int *slot) {
  uint64_t seq = fs->scheduled++;
  int i = flow_free_slot(fs);
  if (i >= 0) {
    fs->slot_busy |= 1ull << i;
    fs->slot_seq[i] = seq;
  }
  *slot = i;
  return seq;
}

/* Give back the memory of every free slot of an idle stream: its client
 * holds none of their batches, and when it reads again they are warmed one
 * by one as memory allows. How many were cooled. */
static int flow_cool(flow_stream *fs) {
  int n = 0;
  for (uint32_t i = 0; fs->ops->slot_cool && i < fs->slots; i++) {
    if ((fs->slot_busy | fs->slot_cold) >> i & 1) continue;
    uint64_t bytes = fs->ops->slot_cool(fs->owner, i);
    if (!bytes) continue;
    fs->slot_cold |= 1ull << i;
    fs->slot_bytes = bytes;
    n++;
  }
  return n;
}

static int flow_shed(flow_stream *fs, uint64_t keep) {
  int n = 0;
  while (flow_own(fs) > keep && fs->scheduled > fs->sent && fs->ops->drop(fs->owner, fs->scheduled - 1)) {
    int slot = flow_slot_of(fs, --fs->scheduled); /* made again, byte for byte, when its turn comes */
    if (slot >= 0) fs->slot_busy &= ~(1ull << slot);
    n++;
  }
  return n;
}

void flow_built(flow_stream *fs, uint64_t bytes, uint64_t shared) {
  if (bytes > fs->frame_bytes) fs->frame_bytes = bytes;
  if (bytes + shared > fs->batch_bytes) fs->batch_bytes = bytes + shared;
}

/* Two batches waiting in the write queue: the client is not reading, and
 * further batches wait in the daemon, where flow_shed can reach them. A
 * batch in a ring slot goes out only FLOW_RING_AHEAD past what the client
 * has consumed: the rest of the window waits made in its slots, where the
 * daemon can still free it, since a slot announced to a client that stops
 * reading is held until it reads (flow_cool reaches only the others). */
int flow_may_send(const flow_stream *fs) {
  if (fs->sent >= fs->acked + FLOW_RING_AHEAD && flow_slot_of(fs, fs->sent) >= 0) return 0;
  /* What a client has been sent and not consumed is memory too, in its
   * process: beyond two batches, no more than its share of max_memory
   * (issue 31: eight clients that did not read held a 64-batch window,
   * 1.2 GB, each). */
  uint64_t ahead = fs->sent - fs->acked;
  if (ahead >= FLOW_RING_AHEAD && *fs->f->max_memory && (ahead + 1) * fs->batch_bytes > flow_client_share(fs->f))
    return 0;
  return fs->queued_all < 2 * fs->batch_bytes;
}

/* The client has a batch to take from now on, if it had none. */
void flow_send(flow_stream *fs) {
  if (fs->sent++ == fs->acked) fs->since_ns = fs->f->now();
}

int flow_ack(flow_stream *fs, uint64_t consumed, char *err, size_t errlen) {
  if (consumed > fs->sent)
    return snprintf(err, errlen, "ACK of %llu batches, more than were sent", (unsigned long long)consumed),
           BFEED_EPROTO;
  if (consumed > fs->acked) {
    flow_consumed(fs, consumed);
    fs->acked = consumed;
  }
  return 0;
}

int flow_release(flow_stream *fs, uint64_t seq, char *err, size_t errlen) {
  int slot = seq < fs->sent ? flow_slot_of(fs, seq) : -1;
  if (slot < 0)
    return snprintf(err, errlen, "ACK releases batch %llu, which holds no shared-memory slot", (unsigned long long)seq),
           BFEED_EPROTO;
  fs->slot_busy &= ~(1ull << slot);
  return 0;
}

/* ------------------------------------------------------------------ */
/* conn.c's reports                                                    */

void flow_queued(flow *f, flow_stream *fs, uint64_t bytes, uint64_t shared) {
  f->queued += bytes;
  if (fs) {
    fs->queued += bytes;
    fs->queued_all += bytes + shared;
    fs->frames++;
  }
}

void flow_written(flow *f, flow_stream *fs, uint64_t bytes, uint64_t shared) {
  f->queued -= bytes < f->queued ? bytes : f->queued;
  if (fs) {
    fs->queued -= bytes < fs->queued ? bytes : fs->queued;
    fs->queued_all -= bytes + shared < fs->queued_all ? bytes + shared : fs->queued_all;
    fs->frames--;
    if (fs->owner) fs->ops->resume(fs->owner);
    else if (fs->frames == 0) flow_discard(fs);
  }
  flow_wake(f);
}
