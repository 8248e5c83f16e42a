/*
 * single_stream.c -- a single client's streams, behind api_stream.c's
 * calls: open one (and wait for the daemon's answer), take its batches in
 * order (or wait for one with a timeout), ask the daemon about it (its
 * counters here, its class names in single_classes.c), close it;
 * where a stream stands, so that single_reconnect.c can reopen it there;
 * and the REQUEST frames fanout/ sends on its members' on-demand streams.
 * Locking: single.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "single.h"

static const api_stream_ops single_stream_ops;

single_stream *single_stream_find(single_client *c, uint32_t id) {
  for (bfeed_stream *s = c->base.streams; s; s = s->next_stream)
    if (s->id == id) return single_stream_of(s);
  return NULL;
}

static void single_stream_drop_queue(single_stream *s, void (*drop)(bfeed_batch *)) {
  while (s->head) {
    bfeed_batch *b = s->head;
    s->head = b->next;
    drop(b);
  }
  s->tail = NULL;
}

void single_stream_free(single_stream *s) {
  single_stream_drop_queue(s, single_batch_drop);
  single_shm_forget(s->shm); /* no locks held here: single_shm.c's order */
  single_shm_unref(s->shm);
  api_stream_free(&s->base);
}

void single_stream_forget(single_stream *s) {
  single_stream_drop_queue(s, single_batch_forget);
  single_shm_unref(s->shm); /* not single_shm_forget: its lock may have been held at the fork */
  api_stream_free(&s->base);
}

single_pos single_stream_pos_after(const single_stream *s, single_pos p) {
  /* An epoch's last batch is followed by the next epoch's first. */
  return subset_after(&s->base.open.opts, s->base.info.batches_per_epoch, p);
}

/* Whether a stream asked for `epochs` epochs has handed all of them out. */
static int single_stream_all_delivered(const single_stream *s) {
  const bfeed_stream_opts *o = &s->base.open.opts;
  return o->epochs && s->next.epoch - o->epoch >= o->epochs;
}

int single_stream_reset(single_stream *s) {
  /* Batches that came but were not handed out are asked for again: the new
   * connection starts at s->next, and counts its ACKs from zero. */
  single_stream_drop_queue(s, single_batch_drop);
  s->queued = s->next;
  s->consumed = 0;
  s->stats_ready = 0;
  if (s->state < 0) return 0;
  if (single_stream_all_delivered(s)) { /* an OPEN cannot ask for nothing: end it here */
    s->ended = 1;
    s->state = 1;
    return 0;
  }
  s->ended = 0;
  s->state = 0;
  return 1;
}

static void single_stream_enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }

int single_stream_frame_open(single_stream *s, wbuf *w, char *err, size_t errlen) {
  msg_open m = s->base.open;
  m.opts.epoch = s->next.epoch;
  m.opts.batch_index = s->next.index;
  if (m.opts.epochs) m.opts.epochs -= s->next.epoch - s->base.open.opts.epoch; /* the same last batch */
  return single_conn_frame(w, FRAME_OPEN, s->base.id, single_stream_enc_open, &m, err, errlen);
}

/* Send the stream's OPEN unless single_reconnect.c already sent it on this
 * connection (or will, on the next: the connection is not ready). */
static int single_stream_send_open(single_stream *s, char *err, size_t errlen) {
  single_client *c = single_client_of(s->base.c);
  wbuf w;
  wbuf_init(&w);
  int rc = 0;
  pthread_mutex_lock(&c->wmu);
  pthread_mutex_lock(&c->base.mu);
  int send = c->ready && s->open_gen != c->gen && s->state == 0;
  if (send && (rc = single_stream_frame_open(s, &w, err, errlen)) == 0) s->open_gen = c->gen;
  pthread_mutex_unlock(&c->base.mu);
  if (send && rc == 0) rc = single_conn_write_locked(c, &w, "OPEN", err, errlen);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  return rc;
}

/* Wait (c->base.mu held) until pred(s) or the stream or connection failed. */
static int single_stream_wait_for(single_stream *s, int (*pred)(const single_stream *), char *err, size_t errlen) {
  single_client *c = single_client_of(s->base.c);
  while (!pred(s) && s->state >= 0 && !c->dead && !c->base.closing) pthread_cond_wait(&c->base.cv, &c->base.mu);
  if (pred(s)) return 0;
  if (s->state < 0) return api_err(err, errlen, s->err_code, "%s", s->err_msg);
  if (c->base.closing) return api_err(err, errlen, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  return api_err(err, errlen, c->dead_code, "%s", c->dead_msg);
}

static int single_stream_is_open(const single_stream *s) { return s->state == 1; }
static int single_stream_has_batch_or_end(const single_stream *s) { return s->head != NULL || s->ended; }

int single_stream_open(bfeed_client *bc, const msg_open *m, bfeed_stream **out, char *err, size_t errlen) {
  single_client *c = single_client_of(bc);
  single_stream *s = calloc(1, sizeof *s);
  if (!s) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  api_stream_init(&s->base, &single_stream_ops, bc, m);
  s->next = s->queued = (single_pos){m->opts.epoch, m->opts.batch_index};
  int rc = api_client_enter(bc, err, errlen);
  if (rc < 0) {
    single_stream_free(s);
    return rc;
  }
  api_stream_link(&s->base);
  pthread_mutex_unlock(&c->base.mu);
  rc = single_stream_send_open(s, err, errlen);
  pthread_mutex_lock(&c->base.mu);
  if (rc < 0 && c->reconnect) rc = 0; /* the reader sees the broken socket too; it reopens s */
  if (rc == 0) rc = single_stream_wait_for(s, single_stream_is_open, err, errlen);
  if (rc < 0) api_stream_unlink(&s->base);
  api_client_leave(bc);
  pthread_mutex_unlock(&c->base.mu);
  if (rc < 0) {
    single_stream_free(s);
    return rc;
  }
  *out = &s->base;
  return 0;
}

static int single_stream_next(bfeed_stream *bs, bfeed_batch **out, char *err, size_t errlen) {
  single_stream *s = single_stream_of(bs);
  single_client *c = single_client_of(bs->c);
  int rc = single_stream_wait_for(s, single_stream_has_batch_or_end, err, errlen);
  bfeed_batch *b = rc == 0 ? s->head : NULL;
  if (b) {
    s->head = b->next;
    if (!s->head) s->tail = NULL;
    b->next = NULL;
    s->consumed++;
    single_shm_consumed(s->shm, s->consumed); /* repeated by releases (single_shm.c) */
    s->next = single_stream_pos_after(s, (single_pos){b->epoch, b->index});
  }
  uint64_t consumed = s->consumed, gen = c->gen;
  pthread_mutex_unlock(&c->base.mu);
  if (rc == 0 && !b) rc = api_err(err, errlen, BFEED_EEOF, "end of stream: all requested epochs were delivered");
  /* Tell the daemon, so it may run one batch further ahead; on the
   * connection the batch came by only (a newer one counts afresh). If that
   * fails the connection is gone: the batch in hand is still good, and the
   * reader thread reconnects, or the next call reports why the connection
   * ended (the daemon's own error when it sent one, such as ESHUTDOWN). */
  char why[200] = "";
  if (b && single_conn_send(c, gen, FRAME_ACK, bs->id, single_conn_enc_u64, &consumed, why, sizeof why) == BFEED_EIO &&
      !c->reconnect) {
    /* The reader thread may not have seen the end yet: say what the write met. */
    char msg[256];
    snprintf(msg, sizeof msg, "the connection to the daemon ended (%s)", why);
    single_conn_mark_dead(c, BFEED_ECLOSED, msg);
  }
  pthread_mutex_lock(&c->base.mu);
  *out = b;
  return rc;
}

static int single_stream_wait(bfeed_stream *bs, int timeout_ms) {
  single_stream *s = single_stream_of(bs);
  single_client *c = single_client_of(bs->c);
  /* c->base.cv waits on clock.h's clock (api_client.c) */
  struct timespec until = clock_timespec(clock_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u);
  int rc = 0;
  while (!single_stream_has_batch_or_end(s) && s->state >= 0 && !c->dead && !c->base.closing && rc == 0)
    rc = timeout_ms < 0 ? pthread_cond_wait(&c->base.cv, &c->base.mu)
                        : pthread_cond_timedwait(&c->base.cv, &c->base.mu, &until);
  return single_stream_has_batch_or_end(s) || s->state < 0 || c->dead || c->base.closing;
}

int single_stream_ask(single_stream *s, int type, void (*enc)(wbuf *, const void *), const void *msg, int *ready,
                      uint32_t need, const char *what, uint64_t *gen, char *err, size_t errlen) {
  single_client *c = single_client_of(s->base.c);
  int rc = single_stream_wait_for(s, single_stream_is_open, err, errlen);
  if (rc < 0) return rc;
  if (s->open_gen != c->gen) /* it had handed out everything when the connection was lost */
    return api_err(err, errlen, BFEED_ECLOSED,
                   "stream %u had served all its batches when the connection was lost: its %s are gone",
                   s->base.id, what);
  /* An older daemon would end the connection at a frame it does not know. */
  if (need && !(s->features & need))
    return api_err(err, errlen, BFEED_EUNSUPPORTED, "the daemon at %s (%s) does not serve %s: upgrade bfeedd",
                   c->addr, c->base.server, what);
  *gen = c->gen;
  *ready = 0;
  pthread_mutex_unlock(&c->base.mu);
  rc = single_conn_send(c, *gen, type, s->base.id, enc, msg, err, errlen);
  pthread_mutex_lock(&c->base.mu);
  /* Without reconnecting a failed send is the answer; with it, the reader
   * replaces the connection and the request is made again on the new one. */
  if (rc < 0 && !c->reconnect) return rc;
  while (!*ready && c->gen == *gen && s->state >= 0 && !c->dead && !c->base.closing)
    pthread_cond_wait(&c->base.cv, &c->base.mu);
  if (*ready && c->gen == *gen) return 1;
  if (c->gen != *gen) return 0;
  return single_stream_wait_for(s, single_stream_is_open, err, errlen); /* the reason it failed */
}

static int single_stream_stats(bfeed_stream *bs, bfeed_counter *out, size_t max, size_t *count, char *err,
                               size_t errlen) {
  single_stream *s = single_stream_of(bs);
  int rc;
  uint64_t gen;
  while ((rc = single_stream_ask(s, FRAME_STATS_REQ, NULL, NULL, &s->stats_ready, 0, "counters", &gen, err,
                                 errlen)) == 0)
    continue;
  if (rc > 0) rc = 0;
  for (size_t i = 0; rc == 0 && i < s->nstats && i < max; i++) {
    out[i].name = api_stream_name(bs, s->stats[i].name);
    out[i].value = s->stats[i].value;
    if (!out[i].name) rc = api_err(err, errlen, BFEED_ENOMEM, "out of memory for counter names");
    else *count = i + 1;
  }
  return rc;
}

static void single_stream_close(bfeed_stream *bs) {
  single_stream *s = single_stream_of(bs);
  single_client *c = single_client_of(bs->c);
  int send = !c->dead && s->open_gen == c->gen;
  uint64_t gen = c->gen;
  pthread_mutex_unlock(&c->base.mu);
  if (send) single_conn_send(c, gen, FRAME_CLOSE, bs->id, NULL, NULL, NULL, 0);
  single_stream_free(s);
  pthread_mutex_lock(&c->base.mu);
}

static void single_stream_enc_request(wbuf *w, const void *m) { msg_request_encode(w, m); }

int single_stream_request(bfeed_stream *s, const msg_request *r) {
  return single_conn_send(single_client_of(s->c), 0, FRAME_REQUEST, s->id, single_stream_enc_request, r, NULL, 0);
}

static void single_stream_enc_timing(wbuf *w, const void *m) { msg_timing_encode(w, m); }

/* TIMING on the current connection, where its daemon takes it; a failed
 * send is the reader's to notice (the connection is gone). */
static uint64_t single_stream_report(bfeed_stream *bs, const msg_timing *t) {
  single_stream *s = single_stream_of(bs);
  single_client *c = single_client_of(bs->c);
  uint64_t expand = s->expand_ns;
  if (t && (s->features & MSG_FEATURE_TIMING) && s->state == 1 && !c->dead) {
    msg_timing m = *t;
    m.expand_us = expand / 1000;
    uint64_t gen = c->gen;
    pthread_mutex_unlock(&c->base.mu);
    single_conn_send(c, gen, FRAME_TIMING, bs->id, single_stream_enc_timing, &m, NULL, 0);
    pthread_mutex_lock(&c->base.mu);
  }
  return expand;
}

static const api_stream_ops single_stream_ops = {
    .next = single_stream_next,
    .wait = single_stream_wait,
    .stats = single_stream_stats,
    .report = single_stream_report,
    .class_names = single_classes_get,
    .close = single_stream_close,
};
