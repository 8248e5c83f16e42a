/*
 * reader.c -- libbfeed's background thread: reads every frame after the
 * handshake, turns BATCH frames into batches on their stream's queue and
 * control frames into stream or connection state, and wakes the waiters.
 *
 * The daemon bounds how far ahead it runs (the window), so the queues are
 * bounded too. A frame the thread cannot read or make sense of ends the
 * connection with the reason, which every later call reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "codec.h"
#include "frame.h"

/* A BATCH payload is read in two parts: its fixed prefix first, which says
 * where the data will start, so that the rest can be placed with the
 * uncompressed tensors 64-byte aligned in memory (no copy later). */
static int reader_batch(bfeed_client *c, bfeed_batch **out, char *why, size_t cap) {
  const frame_header h = c->in.h;
  uint8_t prefix[MSG_BATCH_PREFIX];
  if (h.length < MSG_BATCH_PREFIX) return snprintf(why, cap, "BATCH frame too short"), BFEED_EPROTO;
  int rc = freader_payload(&c->in, prefix, sizeof prefix);
  if (rc < 0) return snprintf(why, cap, "frame reader misused: %s", c->in.why), rc;
  if ((rc = conn_read_event(c, why, cap)) < 0) return rc;
  uint64_t raw_size;
  uint8_t codec;
  msg_batch_peek(prefix, &codec, &raw_size);
  size_t head = codec_is_plain(codec) && raw_size <= h.length ? h.length - raw_size : 0;
  size_t pad = (64 - head % 64) % 64, mem_cap;
  uint8_t *mem = bufpool_get(c->cache, pad + h.length, &mem_cap);
  if (!mem) return snprintf(why, cap, "out of memory for a %u-byte batch", h.length), BFEED_ENOMEM;
  memcpy(mem + pad, prefix, sizeof prefix);
  if (rc == FREADER_SEGMENT &&
      (rc = conn_read_payload(c, mem + pad + MSG_BATCH_PREFIX, h.length - MSG_BATCH_PREFIX, why, cap)) < 0) {
    bufpool_put(c->cache, mem, mem_cap);
    return rc;
  }
  return batch_from_payload(c, &h, mem, mem_cap, pad, out, why, cap);
}

/* OPEN_OK: the stream is open. On a reopen the dataset must be the one the
 * stream began on, or the batches would not continue the same sequence. */
static void reader_open_ok(bfeed_client *c, bfeed_stream *s, const msg_open_ok *ok) {
  bfeed_stream_info *i = &s->info;
  if (!s->have_info) {
    i->samples = ok->samples;
    i->batches_per_epoch = ok->batches_per_epoch;
    i->classes = ok->classes;
    s->have_info = 1;
    s->fingerprint = ok->fingerprint;
    /* Opened at the position after an epoch's last batch: the daemon
     * serves the next epoch's first, and so the stream expects it. */
    if (s->next.index >= i->batches_per_epoch && i->batches_per_epoch)
      s->next = s->queued = (stream_pos){s->next.epoch + 1, 0};
  } else if (i->samples != ok->samples || i->batches_per_epoch != ok->batches_per_epoch ||
             i->classes != ok->classes) {
    s->state = -1;
    s->err_code = BFEED_EDATASET;
    snprintf(s->err_msg, sizeof s->err_msg,
             "after reconnecting to %s, dataset %s has %llu samples, %llu batches per epoch and %u classes, "
             "not %llu, %llu and %u as before: the stream cannot resume exactly",
             c->addr, s->open.dataset, (unsigned long long)ok->samples, (unsigned long long)ok->batches_per_epoch,
             ok->classes, (unsigned long long)i->samples, (unsigned long long)i->batches_per_epoch, i->classes);
    return;
  }
  s->state = 1;
}

/* A control frame for a stream (or the connection) updates its state. An
 * ERROR on stream 0 ends the connection: its code and message are the
 * result, for reconnect_run to judge. */
static int reader_control(bfeed_client *c, const frame_header *h, const uint8_t *p, char *why, size_t cap) {
  const char *w = "";
  int rc = 0;
  pthread_mutex_lock(&c->mu);
  bfeed_stream *s = stream_find(c, h->stream);
  switch (h->type) {
    case FRAME_OPEN_OK: {
      msg_open_ok ok;
      if ((rc = msg_open_ok_decode(p, h->length, &ok, &w)) < 0) break;
      if (s && s->state == 0) reader_open_ok(c, s, &ok);
      break;
    }
    case FRAME_ERROR: {
      msg_error e;
      if ((rc = msg_error_decode(p, h->length, &e, &w)) < 0) break;
      /* A daemon just restarted may still be indexing the dataset a stream
       * is reopened on: that is the connection's transient trouble (all
       * streams resume again after a wait), not the stream's failure. */
      if (h->stream == 0 || (s && e.code == BFEED_EBUSY && s->have_info && s->state == 0)) {
        pthread_mutex_unlock(&c->mu);
        snprintf(why, cap, "bfeedd: %.240s", e.message);
        return e.code < 0 ? e.code : BFEED_EPROTO;
      }
      if (s) {
        s->state = -1;
        s->err_code = e.code;
        snprintf(s->err_msg, sizeof s->err_msg, "bfeedd: %.240s", e.message);
      }
      break;
    }
    case FRAME_END: {
      uint64_t total;
      if ((rc = msg_u64_decode(p, h->length, &total, &w)) < 0) break;
      if (s) s->ended = 1;
      break;
    }
    case FRAME_STATS:
      if (s) {
        rc = msg_stats_decode(p, h->length, s->stats, MSG_MAX_COUNTERS, &s->nstats, &w);
        s->stats_ready = 1;
      }
      break;
    default:
      rc = BFEED_EPROTO;
      w = "unexpected frame type from the daemon";
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) snprintf(why, cap, "%s (%s frame)", w, frame_type_name(h->type));
  return rc;
}

/* Queue a batch on its stream; drop it if the stream was closed meanwhile.
 * Each batch must be the one after the last: what makes a resumed stream
 * exactly the uninterrupted one is checked here, batch by batch. */
static void reader_queue(bfeed_client *c, uint32_t stream, bfeed_batch *b) {
  pthread_mutex_lock(&c->mu);
  bfeed_stream *s = stream_find(c, stream);
  /* An on-demand stream serves what it was asked for (fanout.c checks). */
  int due = s && (s->open.opts.select == BFEED_SELECT_ON_DEMAND ||
                  (b->epoch == s->queued.epoch && b->index == s->queued.index));
  if (s && s->state == 1 && due) {
    if (s->tail) s->tail->next = b;
    else s->head = b;
    s->tail = b;
    s->queued = stream_pos_after(s->queued, s->info.batches_per_epoch);
    b = NULL;
  } else if (s && s->state >= 0) {
    snprintf(s->err_msg, sizeof s->err_msg,
             "the daemon sent batch %llu of epoch %llu where batch %llu of epoch %llu was due%s",
             (unsigned long long)b->index, (unsigned long long)b->epoch, (unsigned long long)s->queued.index,
             (unsigned long long)s->queued.epoch, s->state == 0 ? " (before the stream opened)" : "");
    s->state = -1;
    s->err_code = BFEED_EPROTO;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  batch_drop(b);
}

/* SHM_RING: map the stream's ring (its memfd came with the frame). The
 * ring it replaces (a lost connection's) is let go outside c->mu (shm.c). */
static int reader_shm_ring(bfeed_client *c, const frame_header *h, const uint8_t *p, char *why, size_t cap) {
  msg_shm_ring r;
  const char *w;
  int fd = c->passed_fd, rc = msg_shm_ring_decode(p, h->length, &r, &w);
  c->passed_fd = -1;
  if (rc < 0 || fd < 0) {
    if (fd >= 0) close(fd);
    return snprintf(why, cap, "%s", rc < 0 ? w : "SHM_RING came without its memfd"), BFEED_EPROTO;
  }
  shm_track *t;
  if ((rc = shm_map(c, h->stream, fd, &r, &t, why, cap)) < 0) return rc;
  pthread_mutex_lock(&c->mu);
  bfeed_stream *s = stream_find(c, h->stream);
  if (s) {
    shm_track *old = s->shm;
    s->shm = t;
    t = old;
  }
  pthread_mutex_unlock(&c->mu);
  shm_forget(t);
  shm_unref(t);
  return 0;
}

/* BATCH_SHM: the batch's tensors are in its stream's ring. */
static int reader_batch_shm(bfeed_client *c, const frame_header *h, const uint8_t *p, char *why, size_t cap) {
  pthread_mutex_lock(&c->mu);
  bfeed_stream *s = stream_find(c, h->stream);
  shm_track *t = s ? s->shm : NULL;
  if (t) shm_ref(t);
  pthread_mutex_unlock(&c->mu);
  if (!s) return 0; /* closed meanwhile */
  bfeed_batch *b;
  int rc = batch_from_shm(c, t, h, p, &b, why, cap);
  if (t) shm_unref(t);
  if (rc < 0) return rc;
  reader_queue(c, h->stream, b);
  c->lost_ns = 0;
  return 0;
}

/* One frame, from its header on: 0, or an error that ends the connection. */
static int reader_frame(bfeed_client *c, char *why, size_t cap) {
  int rc = conn_read_event(c, why, cap);
  if (rc < 0) return rc;
  const frame_header h = c->in.h;
  if (h.type == FRAME_BATCH) {
    bfeed_batch *b;
    if (rc == FREADER_FRAME) return snprintf(why, cap, "BATCH frame too short"), BFEED_EPROTO;
    if ((rc = reader_batch(c, &b, why, cap)) < 0) return rc;
    reader_queue(c, h.stream, b);
    c->lost_ns = 0; /* batches flow again: a later loss gets a deadline of its own */
    return 0;
  }
  int report = h.type == FRAME_STATS && h.stream == 0;
  if (h.length > (report ? CLIENT_MAX_REPORT : FRAME_MAX_CONTROL))
    return snprintf(why, cap, "%s frame of %u bytes exceeds the control-frame limit", frame_type_name(h.type),
                    h.length), BFEED_ETOOBIG;
  uint8_t *p = malloc(h.length ? h.length : 1);
  if (!p) return snprintf(why, cap, "out of memory"), BFEED_ENOMEM;
  if ((rc = conn_read_payload(c, p, h.length, why, cap)) == 0 && report) {
    pthread_mutex_lock(&c->mu);
    free(c->report);
    c->report = p;
    c->report_len = h.length;
    c->report_ready = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  if (rc == 0)
    rc = h.type == FRAME_SHM_RING    ? reader_shm_ring(c, &h, p, why, cap)
         : h.type == FRAME_BATCH_SHM ? reader_batch_shm(c, &h, p, why, cap)
                                     : reader_control(c, &h, p, why, cap);
  free(p);
  return rc;
}

void *reader_main(void *arg) {
  bfeed_client *c = arg;
  char why[MSG_ERROR_MAX];
  int rc;
  do {
    while ((rc = reader_frame(c, why, sizeof why)) == 0) continue;
  } while (reconnect_run(c, rc, why) == 0);
  return NULL;
}
