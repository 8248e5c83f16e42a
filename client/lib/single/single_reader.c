/*
 * single_reader.c -- a single client's background thread (started by
 * single_client.c): reads every frame after the handshake, turns BATCH
 * frames into batches on their stream's queue and control frames into
 * stream or connection state, and wakes the waiters; after a lost
 * connection it runs single_reconnect.c.
 *
 * The daemon bounds how far ahead it runs (the window), so the queues are
 * bounded too. A frame the thread cannot read or make sense of ends the
 * connection with the reason, which every later call reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "frame.h"
#include "single.h"

/* A BATCH payload is read in two parts: its fixed prefix first, which says
 * where the data will start, so that the rest can be placed with the
 * uncompressed tensors 64-byte aligned in memory (no copy later). */
static int single_reader_batch(single_client *c, bfeed_batch **out, char *err, size_t errlen) {
  const frame_header h = c->in.h;
  uint8_t prefix[MSG_BATCH_PREFIX];
  if (h.length < MSG_BATCH_PREFIX) return api_err(err, errlen, BFEED_EPROTO, "BATCH frame too short");
  int rc = freader_payload(&c->in, prefix, sizeof prefix);
  if (rc < 0) return api_err(err, errlen, rc, "frame reader misused: %s", c->in.why);
  if ((rc = single_conn_read_event(c, err, errlen)) < 0) return rc;
  uint64_t raw_size;
  uint8_t codec;
  msg_batch_peek(prefix, &codec, &raw_size);
  size_t head = codec_is_plain(codec) && raw_size <= h.length ? h.length - raw_size : 0;
  size_t pad = (64 - head % 64) % 64, mem_cap;
  uint8_t *mem = bufcache_get(c->cache, pad + h.length, &mem_cap);
  if (!mem) return api_err(err, errlen, BFEED_ENOMEM, "out of memory for a %u-byte batch", h.length);
  memcpy(mem + pad, prefix, sizeof prefix);
  if (rc == FREADER_SEGMENT &&
      (rc = single_conn_read_payload(c, mem + pad + MSG_BATCH_PREFIX, h.length - MSG_BATCH_PREFIX, err, errlen)) < 0) {
    bufcache_put(c->cache, mem, mem_cap);
    return rc;
  }
  uint64_t t0 = clock_now_ns();
  rc = single_batch_from_payload(c, &h, mem, mem_cap, pad, out, err, errlen);
  if (rc == 0) (*out)->expand_ns = clock_now_ns() - t0;
  return rc;
}

/* OPEN_OK: the stream is open. On a reopen the dataset must be the one the
 * stream began on, or the batches would not continue the same sequence. */
static void single_reader_open_ok(single_client *c, single_stream *s, const msg_open_ok *ok) {
  bfeed_stream_info *i = &s->base.info;
  s->features = ok->features; /* this connection's daemon's */
  if (!s->have_info) {
    i->samples = ok->samples;
    i->batches_per_epoch = ok->batches_per_epoch;
    i->classes = ok->classes;
    s->have_info = 1;
    s->base.fingerprint = ok->fingerprint;
    /* Opened at the position after an epoch's last batch: the daemon
     * serves the next epoch's first, and so the stream expects it; with
     * select residue, the first batch of the residue from there. */
    if (i->batches_per_epoch) s->next = s->queued = subset_first(&s->base.open.opts, i->batches_per_epoch, s->next);
  } else if (i->samples != ok->samples || i->batches_per_epoch != ok->batches_per_epoch ||
             i->classes != ok->classes) {
    s->state = -1;
    s->err_code = BFEED_EDATASET;
    snprintf(s->err_msg, sizeof s->err_msg,
             "after reconnecting to %s, dataset %s has %llu samples, %llu batches per epoch and %u classes, "
             "not %llu, %llu and %u as before: the stream cannot resume exactly",
             c->addr, s->base.open.dataset, (unsigned long long)ok->samples, (unsigned long long)ok->batches_per_epoch,
             ok->classes, (unsigned long long)i->samples, (unsigned long long)i->batches_per_epoch, i->classes);
    return;
  }
  s->state = 1;
}

/* A control frame for a stream (or the connection) updates its state. An
 * ERROR on stream 0 ends the connection: its code and message are the
 * result, for single_reconnect_run to judge. */
static int single_reader_control(single_client *c, const frame_header *h, const uint8_t *p, char *err, size_t errlen) {
  char w[MSG_ERROR_MAX] = "";
  int rc = 0;
  pthread_mutex_lock(&c->base.mu);
  single_stream *s = single_stream_find(c, h->stream);
  switch (h->type) {
    case FRAME_OPEN_OK: {
      msg_open_ok ok;
      if ((rc = msg_open_ok_decode(p, h->length, &ok, w, sizeof w)) < 0) break;
      if (s && s->state == 0) single_reader_open_ok(c, s, &ok);
      break;
    }
    case FRAME_ERROR: {
      msg_error e;
      if ((rc = msg_error_decode(p, h->length, &e, w, sizeof w)) < 0) break;
      /* A daemon just restarted may still be indexing the dataset a stream
       * is reopened on: that is the connection's transient trouble (all
       * streams resume again after a wait), not the stream's failure. */
      if (h->stream == 0 || (s && e.code == BFEED_EBUSY && s->have_info && s->state == 0)) {
        pthread_mutex_unlock(&c->base.mu);
        return api_err(err, errlen, e.code < 0 ? e.code : BFEED_EPROTO, "bfeedd: %.240s", e.message);
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
      if ((rc = msg_u64_decode(p, h->length, &total, w, sizeof w)) < 0) break;
      if (s) s->ended = 1;
      break;
    }
    case FRAME_CLASSES: {
      msg_classes m;
      if ((rc = msg_classes_decode(p, h->length, &m, w, sizeof w)) < 0) break;
      if (s) single_classes_arrived(s, p, h->length);
      break;
    }
    case FRAME_STATS:
      if (s) {
        rc = msg_stats_decode(p, h->length, s->stats, MSG_MAX_COUNTERS, &s->nstats, w, sizeof w);
        s->stats_ready = 1;
      }
      break;
    default:
      rc = BFEED_EPROTO;
      snprintf(w, sizeof w, "unexpected frame type from the daemon");
  }
  pthread_cond_broadcast(&c->base.cv);
  pthread_mutex_unlock(&c->base.mu);
  if (rc < 0) api_err(err, errlen, rc, "%s (%s frame)", w, frame_type_name(h->type));
  return rc;
}

/* Queue a batch on its stream; drop it if the stream was closed meanwhile.
 * Each batch must be the one after the last: what makes a resumed stream
 * exactly the uninterrupted one is checked here, batch by batch. */
static void single_reader_queue(single_client *c, uint32_t stream, bfeed_batch *b) {
  pthread_mutex_lock(&c->base.mu);
  single_stream *s = single_stream_find(c, stream);
  /* An on-demand stream serves what it was asked for (fanout/ checks). */
  int due = s && (s->base.open.opts.select == BFEED_SELECT_ON_DEMAND ||
                  (b->epoch == s->queued.epoch && b->index == s->queued.index));
  if (s && s->state == 1 && due) {
    if (s->tail) s->tail->next = b;
    else s->head = b;
    s->tail = b;
    s->queued = single_stream_pos_after(s, s->queued);
    s->expand_ns += b->expand_ns;
    b = NULL;
  } else if (s && s->state >= 0) {
    snprintf(s->err_msg, sizeof s->err_msg,
             "the daemon sent batch %llu of epoch %llu where batch %llu of epoch %llu was due%s",
             (unsigned long long)b->index, (unsigned long long)b->epoch, (unsigned long long)s->queued.index,
             (unsigned long long)s->queued.epoch, s->state == 0 ? " (before the stream opened)" : "");
    s->state = -1;
    s->err_code = BFEED_EPROTO;
  }
  pthread_cond_broadcast(&c->base.cv);
  pthread_mutex_unlock(&c->base.mu);
  single_batch_drop(b);
}

/* SHM_RING: map the stream's ring (its memfd came with the frame). The
 * ring it replaces (a lost connection's) is let go outside c->base.mu (single_shm.c). */
static int single_reader_shm_ring(single_client *c, const frame_header *h, const uint8_t *p, char *err, size_t errlen) {
  msg_shm_ring r;
  char w[MSG_ERROR_MAX];
  int fd = c->passed_fd, rc = msg_shm_ring_decode(p, h->length, &r, w, sizeof w);
  c->passed_fd = -1;
  if (rc < 0 || fd < 0) {
    if (fd >= 0) close(fd);
    return api_err(err, errlen, BFEED_EPROTO, "%s", rc < 0 ? w : "SHM_RING came without its memfd");
  }
  single_shm *t;
  if ((rc = single_shm_map(c, h->stream, fd, &r, &t, err, errlen)) < 0) return rc;
  pthread_mutex_lock(&c->base.mu);
  single_stream *s = single_stream_find(c, h->stream);
  if (s) {
    single_shm *old = s->shm;
    s->shm = t;
    t = old;
  }
  pthread_mutex_unlock(&c->base.mu);
  single_shm_forget(t);
  single_shm_unref(t);
  return 0;
}

/* BATCH_SHM: the batch's tensors are in its stream's ring. */
static int single_reader_batch_shm(single_client *c, const frame_header *h, const uint8_t *p, char *err,
                                   size_t errlen) {
  pthread_mutex_lock(&c->base.mu);
  single_stream *s = single_stream_find(c, h->stream);
  single_shm *t = s ? s->shm : NULL;
  if (t) single_shm_ref(t);
  pthread_mutex_unlock(&c->base.mu);
  if (!s) return 0; /* closed meanwhile */
  bfeed_batch *b;
  int rc = single_batch_from_shm(c, t, h, p, &b, err, errlen);
  if (t) single_shm_unref(t);
  if (rc < 0) return rc;
  single_reader_queue(c, h->stream, b);
  c->lost_ns = 0;
  return 0;
}

/* One frame, from its header on: 0, or an error that ends the connection. */
static int single_reader_frame(single_client *c, char *err, size_t errlen) {
  int rc = single_conn_read_event(c, err, errlen);
  if (rc < 0) return rc;
  const frame_header h = c->in.h;
  if (h.type == FRAME_BATCH) {
    bfeed_batch *b;
    if (rc == FREADER_FRAME) return api_err(err, errlen, BFEED_EPROTO, "BATCH frame too short");
    if ((rc = single_reader_batch(c, &b, err, errlen)) < 0) return rc;
    single_reader_queue(c, h.stream, b);
    c->lost_ns = 0; /* batches flow again: a later loss gets a deadline of its own */
    return 0;
  }
  int report = h.type == FRAME_STATS && h.stream == 0;
  if (h.length > (report ? SINGLE_MAX_REPORT : FRAME_MAX_CONTROL))
    return api_err(err, errlen, BFEED_ETOOBIG, "%s frame of %u bytes exceeds the control-frame limit",
                   frame_type_name(h.type), h.length);
  uint8_t *p = malloc(h.length ? h.length : 1);
  if (!p) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  if ((rc = single_conn_read_payload(c, p, h.length, err, errlen)) == 0 && report) {
    pthread_mutex_lock(&c->base.mu);
    free(c->report);
    c->report = p;
    c->report_len = h.length;
    c->report_ready = 1;
    pthread_cond_broadcast(&c->base.cv);
    pthread_mutex_unlock(&c->base.mu);
    return 0;
  }
  if (rc == 0)
    rc = h.type == FRAME_SHM_RING    ? single_reader_shm_ring(c, &h, p, err, errlen)
         : h.type == FRAME_BATCH_SHM ? single_reader_batch_shm(c, &h, p, err, errlen)
                                     : single_reader_control(c, &h, p, err, errlen);
  free(p);
  return rc;
}

void *single_reader_main(void *arg) {
  single_client *c = arg;
  char err[MSG_ERROR_MAX];
  int rc;
  do {
    while ((rc = single_reader_frame(c, err, sizeof err)) == 0) continue;
  } while (single_reconnect_run(c, rc, err) == 0);
  return NULL;
}
