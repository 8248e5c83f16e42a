/* stream_ring.c -- a stream's shared-memory ring (PROTOCOL.md "Shared
 * memory"): its own, or the one its class shares (share.h). See
 * stream_impl.h. */
#include <stdio.h>
#include <uv.h>

#include "stream_impl.h"

/* A client on a Unix socket that asks for shared memory gets a ring of
 * window + 2 slots, each the stream's largest batch, page-aligned; its
 * batches travel raw (codec none) whatever codec it asked for. Over TCP
 * the option is ignored, and so it is when the ring does not fit
 * max_memory now (a stream beside clients that do not read must still be
 * served), or when the ring cannot be made: the socket is the fallback,
 * and the client takes what comes. */
void stream_ring_open(stream *st, uint64_t *frame_bytes) {
  /* window + 2: the batch a caller holds while it asks for the next (a
   * for-loop's variable), and one more, so that a steady reader never
   * finds every slot held and sees its batches fall back to the socket. */
  uint32_t slots = st->spec.opts.window + 2 < MSG_SHM_MAX_SLOTS ? st->spec.opts.window + 2 : MSG_SHM_MAX_SLOTS;
  uint64_t slot_size = shm_ring_slot_bytes(batch_raw_estimate(&st->spec));
  st->ring_tried_ns = uv_hrtime();
  if (!flow_make_room(st->fl, slots * slot_size)) {
    /* Streams that have just stopped reading may still have batches being
     * made: the ring is tried again later (stream_ring_late). */
    if (!st->ring_wanted)
      log_info(st->log, "stream %u: a shared-memory ring of %u x %llu bytes does not fit max_memory now: "
               "served over the socket until it does", st->id, slots, (unsigned long long)slot_size);
    st->ring_wanted = 1;
    return;
  }
  st->ring_wanted = 0;
  char err[256];
  if (!(st->ring = shm_ring_new(slots, slot_size, err, sizeof err))) { /* no memfd here (a sandbox?): the socket */
    log_warn(st->log, "stream %u: %s; served over the socket", st->id, err);
    return;
  }
  /* A batch's pooled buffer holds only its BATCH_SHM frame now. */
  *frame_bytes = STREAM_HEAD_BYTES;
}

/* SHM_RING goes out once, before the first batch made in the ring. */
void stream_ring_send(stream *st) {
  if (!st->ring || st->ring_sent || !st->conn) return;
  msg_shm_ring r = {.slots = shm_ring_slots(st->ring), .slot_size = shm_ring_slot_size(st->ring)};
  r.size = r.slots * r.slot_size;
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_shm_ring_encode(&w, &r);
  msg_finish(&w, at, FRAME_SHM_RING, st->id);
  st->ring_sent = 1;
  conn_send_frame_fd(st->conn, &w, shm_ring_fd(st->ring));
}

/* A ring that did not fit at OPEN, made now if it fits: the batches so
 * far came over the socket, the next ones are made in the ring. Tried at
 * most every STREAM_RING_RETRY_NS, not before every batch: making room
 * empties the buffer cache, whose buffers this stream's socket batches
 * would otherwise reuse. The frame estimate stays: flow keeps the largest
 * batch it has seen. */
#define STREAM_RING_RETRY_NS 100000000ull
void stream_ring_late(stream *st) {
  if (uv_hrtime() - st->ring_tried_ns < STREAM_RING_RETRY_NS) return;
  uint64_t frame_bytes = 0;
  stream_ring_open(st, &frame_bytes);
  if (!st->ring) return;
  log_info(st->log, "stream %u: its shared-memory ring fits now, from batch %llu on", st->id,
           (unsigned long long)flow_scheduled(st->flow));
  flow_add_slots(st->flow, shm_ring_slots(st->ring));
  stream_ring_send(st);
}


/* ------------------------------------------------------------------ */
/* The class's ring                                                    */

void stream_ring_join(stream *st) {
  if (st->shm && st->member) share_shm_join(st->member, shm_ring_slot_bytes(batch_raw_estimate(&st->spec)));
}

static void stream_ring_unseat(stream *st, int v) {
  uint32_t rs = st->seat[v];
  st->held &= ~(1ull << rs);
  shm_ring_drop(st->ring, rs);
}

/* Once its class has a ring (two streams of it on shared memory), a
 * stream moves there: its next batches are made in that ring's slots,
 * which every client of the class maps, and a batch the class builds once
 * is read by all of them from the slot it was built in, copied into none.
 * It moves between batches: when every batch it scheduled is sent, so
 * that no BATCH_SHM of its old ring comes after the new SHM_RING (the
 * client reads each BATCH_SHM in the last ring it was sent). Its old ring
 * goes (no worker writes it; the batches its client holds stay mapped
 * there, and their releases are no longer told). */
int stream_ring_move(stream *st) {
  if (!st->shm || !st->member || st->ring_class || st->ring_stay || !st->conn) return 0;
  if (st->inflight || flow_scheduled(st->flow) != flow_sent(st->flow)) return share_ring_ready(st->member);
  shm_ring *r = share_ring(st->member, st->log);
  if (!r) {
    st->ring_stay = share_ring_ready(st->member); /* ready, yet no ring: no memfd */
    return 0;
  }
  shm_ring_free(st->ring); /* its own, if it had one */
  st->ring = r;
  st->ring_class = 1;
  st->ring_wanted = 0;
  st->ring_sent = 0;
  st->ring_from = flow_scheduled(st->flow);
  flow_reset_slots(st->flow, st->spec.opts.window + 2); /* capped at MSG_SHM_MAX_SLOTS there */
  stream_ring_send(st);
  log_debug(st->log, "stream %u: on the ring of the streams that share its batches, from batch %llu on", st->id,
            (unsigned long long)st->ring_from);
  return 0;
}

int stream_ring_seat(stream *st, int v, uint64_t seq, uint64_t epoch, uint64_t index) {
  if (v < 0 || !st->ring_class) return v;
  int rs = share_slot(st->member, st->ring, epoch, index, st->held);
  if (rs < 0) { /* every slot held: over the socket, as when its own are */
    flow_unslot(st->flow, seq);
    return -1;
  }
  st->seat[v] = (uint8_t)rs;
  st->seat_seq[v] = seq;
  st->held |= 1ull << rs;
  return rs;
}

int stream_ring_release(stream *st, uint64_t seq, char *err, size_t errlen) {
  if (st->ring_class && seq < st->ring_from) return 0; /* its old ring's: gone */
  int v = st->ring_class ? flow_slot_of(st->flow, seq) : -1;
  int rc = flow_release(st->flow, seq, err, errlen);
  if (rc == 0 && v >= 0) stream_ring_unseat(st, v);
  return rc;
}

void stream_ring_shed(stream *st, uint64_t seq) {
  int v = st->ring_class ? flow_slot_of(st->flow, seq) : -1;
  if (v >= 0) stream_ring_unseat(st, v);
}

/* Slots whose batches were sent and not released: the client may still
 * read them (batches outlive their stream), and will never say when it
 * stops; they are held until the ring goes. */
void stream_ring_close(stream *st) {
  if (!st->ring_class) return;
  for (uint32_t v = 0; v < MSG_SHM_MAX_SLOTS; v++)
    if (flow_slot_of(st->flow, st->seat_seq[v]) == (int)v && st->seat_seq[v] < flow_sent(st->flow))
      st->orphans |= 1ull << st->seat[v];
}

void stream_ring_free(stream *st) {
  for (uint32_t rs = 0; st->ring_class && rs < MSG_SHM_MAX_SLOTS; rs++)
    if ((st->held & ~st->orphans) >> rs & 1) shm_ring_drop(st->ring, rs);
  shm_ring_free(st->ring);
  st->ring = NULL;
}

uint64_t stream_ring_cool(void *owner, uint32_t slot) {
  stream *st = owner;
  return st->ring_class ? shm_ring_cool_free(st->ring) : shm_ring_cool(st->ring, slot);
}

void stream_ring_warm(void *owner, uint32_t slot) {
  stream *st = owner;
  if (!st->ring_class) shm_ring_warm(st->ring, slot); /* a class ring warms the slot it gives */
}
