/*
 * flow.c -- see flow.h. Every rule of what a stream may schedule and send is
 * here, in three parts: the daemon's memory (held, share, reclaim, wake),
 * one stream's window and slots, and conn.c's byte reports.
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
  uint64_t queued;      /* bytes of its batches in the socket's write queue */
  uint64_t frames;      /* those batches: conn.c holds fs for each until it reports it written */
  uint32_t slots;       /* of its shared-memory ring; 0: none */
  uint64_t slot_busy;   /* bit i: slot i holds a batch scheduled, sent or held by the caller */
  uint64_t slot_seq[MSG_SHM_MAX_SLOTS]; /* the batch in each busy slot */
};

struct flow {
  const uint64_t *max_memory; /* the server's limit, changed in place by a reload */
  bufcache *buffers;
  flow_stream *streams;       /* open ones, and closed ones with frames still queued */
  int open;                   /* of those, the open ones */
  uint64_t queued;            /* bytes in every socket's write queue */
  int blocked;                /* a stream was refused memory and waits for bytes to be freed */
};

flow *flow_new(const uint64_t *max_memory, bufcache *buffers) {
  flow *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->max_memory = max_memory;
  f->buffers = buffers;
  return f;
}

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
/* The daemon's memory                                                 */

/* What a stream counts against its share: batches scheduled and not yet
 * sent, and its batches the socket has not taken. A client that does not
 * read keeps its bytes and is the one that waits. */
static uint64_t flow_holding(const flow_stream *fs) {
  return (fs->scheduled - fs->sent) * fs->frame_bytes + fs->queued;
}

uint64_t flow_held(const flow *f) {
  uint64_t held = (f->buffers ? bufcache_idle_bytes(f->buffers) : 0) + decode_mem_held() + batch_scratch_bytes() +
                  shm_ring_bytes() + f->queued;
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

/* What each open stream may hold. */
static uint64_t flow_share(const flow *f) { return *f->max_memory / (uint64_t)(f->open > 0 ? f->open : 1); }

static int flow_fits(const flow *f, uint64_t bytes, uint64_t holding) {
  return holding + bytes <= flow_share(f) && flow_held(f) + bytes <= *f->max_memory;
}

/* Free fs's finished, unsent batches from its last scheduled back, until
 * it holds at most `keep` or the last is still being made; its slots go
 * back. How many were freed. */
static int flow_shed(flow_stream *fs, uint64_t keep);

/* Give the buffer cache's free buffers back to the system: 1 if there were any. */
static int flow_trim(flow *f) {
  if (!f->buffers || bufcache_idle_bytes(f->buffers) == 0) return 0;
  bufcache_trim(f->buffers, 1);
  return 1;
}

/* Take memory back for a stream within its share: free buffers kept for
 * reuse first, then finished, unsent batches of streams over their share
 * (clients that do not read). A shed batch's buffer goes back to the buffer cache,
 * where it still counts as held, so the cache is emptied again after each
 * stream shed. 1 if the request fits then. */
static int flow_reclaim(flow *f, uint64_t bytes, uint64_t holding) {
  if (flow_trim(f) && flow_fits(f, bytes, holding)) return 1;
  uint64_t share = flow_share(f);
  for (flow_stream *fs = f->streams; fs; fs = fs->next) {
    if (!fs->owner || flow_holding(fs) <= share || !flow_shed(fs, share)) continue;
    flow_trim(f);
    if (flow_fits(f, bytes, holding)) return 1;
  }
  return 0;
}

/* 1 if `bytes` more fit for a stream holding `holding` (always, with no
 * limit, and for a stream holding nothing); 0 marks a stream waiting. */
static int flow_memory_allows(flow *f, uint64_t bytes, uint64_t holding) {
  uint64_t max = *f->max_memory;
  if (max == 0 || holding == 0 || flow_fits(f, bytes, holding)) return 1;
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
  fs->frame_bytes = frame_bytes;
  fs->slots = slots < MSG_SHM_MAX_SLOTS ? slots : MSG_SHM_MAX_SLOTS;
  fs->next = f->streams;
  if (f->streams) f->streams->prev = fs;
  f->streams = fs;
  f->open++;
  return fs;
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

int flow_may_schedule(flow_stream *fs, uint64_t end) {
  return fs->scheduled < end && fs->scheduled < fs->acked + fs->window &&
         flow_memory_allows(fs->f, fs->frame_bytes, flow_holding(fs));
}

/* The busy slot holding batch seq, or -1. */
static int flow_slot_of(const flow_stream *fs, uint64_t seq) {
  for (uint32_t i = 0; i < fs->slots; i++)
    if ((fs->slot_busy >> i & 1) && fs->slot_seq[i] == seq) return (int)i;
  return -1;
}

uint64_t flow_schedule(flow_stream *fs, int *slot) {
  uint64_t seq = fs->scheduled++;
  *slot = -1;
  for (uint32_t i = 0; i < fs->slots; i++) {
    if (fs->slot_busy >> i & 1) continue;
    fs->slot_busy |= 1ull << i;
    fs->slot_seq[i] = seq;
    *slot = (int)i;
    break;
  }
  return seq;
}

static int flow_shed(flow_stream *fs, uint64_t keep) {
  int n = 0;
  while (flow_holding(fs) > keep && fs->scheduled > fs->sent && fs->ops->drop(fs->owner, fs->scheduled - 1)) {
    int slot = flow_slot_of(fs, --fs->scheduled); /* made again, byte for byte, when its turn comes */
    if (slot >= 0) fs->slot_busy &= ~(1ull << slot);
    n++;
  }
  return n;
}

void flow_built(flow_stream *fs, uint64_t bytes) {
  if (bytes > fs->frame_bytes) fs->frame_bytes = bytes;
}

/* Two batches waiting in the write queue: the client is not reading, and
 * further batches wait in the daemon, where flow_shed can reach them. */
int flow_may_send(const flow_stream *fs) { return fs->queued < 2 * fs->frame_bytes; }

void flow_send(flow_stream *fs) { fs->sent++; }

int flow_ack(flow_stream *fs, uint64_t consumed, char *err, size_t errlen) {
  if (consumed > fs->sent)
    return snprintf(err, errlen, "ACK of %llu batches, more than were sent", (unsigned long long)consumed),
           BFEED_EPROTO;
  if (consumed > fs->acked) fs->acked = consumed;
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

void flow_queued(flow *f, flow_stream *fs, uint64_t bytes) {
  f->queued += bytes;
  if (fs) {
    fs->queued += bytes;
    fs->frames++;
  }
}

void flow_written(flow *f, flow_stream *fs, uint64_t bytes) {
  f->queued -= bytes < f->queued ? bytes : f->queued;
  if (fs) {
    fs->queued -= bytes < fs->queued ? bytes : fs->queued;
    fs->frames--;
    if (fs->owner) fs->ops->resume(fs->owner);
    else if (fs->frames == 0) flow_discard(fs);
  }
  flow_wake(f);
}
