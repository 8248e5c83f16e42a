/*
 * stream.c -- libbfeed's streams: open one (and wait for the daemon's
 * answer), take its batches in order (or wait for one with a timeout), ask
 * for its counters, close it; and where a stream stands, so that
 * reconnect.c can reopen it there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "clock.h"

bfeed_stream *stream_find(bfeed_client *c, uint32_t id) {
  for (bfeed_stream *s = c->streams; s; s = s->next_stream)
    if (s->id == id) return s;
  return NULL;
}

static void stream_drop_queue(bfeed_stream *s) {
  while (s->head) {
    bfeed_batch *b = s->head;
    s->head = b->next;
    batch_drop(b);
  }
  s->tail = NULL;
}

void stream_free(bfeed_stream *s) {
  if (s->fan) fanout_free(s);
  stream_drop_queue(s);
  shm_forget(s->shm); /* no locks held here: shm.c's order */
  shm_unref(s->shm);
  for (size_t i = 0; i < s->nnames; i++) free(s->names[i]);
  free(s);
}

stream_pos stream_pos_after(stream_pos p, uint64_t bpe) {
  if (++p.index < bpe) return p;
  return (stream_pos){p.epoch + 1, 0}; /* an epoch's last batch is followed by the next epoch's first */
}

/* Whether a stream asked for `epochs` epochs has handed all of them out. */
static int stream_all_delivered(const bfeed_stream *s) {
  const bfeed_stream_opts *o = &s->open.opts;
  return o->epochs && s->next.epoch - o->epoch >= o->epochs;
}

int stream_reset(bfeed_stream *s) {
  /* Batches that came but were not handed out are asked for again: the new
   * connection starts at s->next, and counts its ACKs from zero. */
  stream_drop_queue(s);
  s->queued = s->next;
  s->consumed = 0;
  s->stats_ready = 0;
  if (s->state < 0) return 0;
  if (stream_all_delivered(s)) { /* an OPEN cannot ask for nothing: end it here */
    s->ended = 1;
    s->state = 1;
    return 0;
  }
  s->ended = 0;
  s->state = 0;
  return 1;
}

static void stream_enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }

int stream_frame_open(bfeed_stream *s, wbuf *w, bfeed_error *err) {
  msg_open m = s->open;
  m.opts.epoch = s->next.epoch;
  m.opts.batch_index = s->next.index;
  if (m.opts.epochs) m.opts.epochs -= s->next.epoch - s->open.opts.epoch; /* the same last batch */
  return conn_frame(w, FRAME_OPEN, s->id, stream_enc_open, &m, err);
}

/* Send the stream's OPEN unless reconnect.c already sent it on this
 * connection (or will, on the next: the connection is not ready). */
static int stream_send_open(bfeed_stream *s, bfeed_error *err) {
  bfeed_client *c = s->c;
  wbuf w;
  wbuf_init(&w);
  int rc = 0;
  pthread_mutex_lock(&c->wmu);
  pthread_mutex_lock(&c->mu);
  int send = c->ready && s->open_gen != c->gen && s->state == 0;
  if (send && (rc = stream_frame_open(s, &w, err)) == 0) s->open_gen = c->gen;
  pthread_mutex_unlock(&c->mu);
  if (send && rc == 0) rc = conn_write_locked(c, &w, "OPEN", err);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  return rc;
}

/* Wait (c->mu held) until pred(s) or the stream or connection failed. */
static int stream_wait(bfeed_stream *s, int (*pred)(const bfeed_stream *), bfeed_error *err) {
  bfeed_client *c = s->c;
  while (!pred(s) && s->state >= 0 && !c->dead && !c->closing) pthread_cond_wait(&c->cv, &c->mu);
  if (pred(s)) return 0;
  if (s->state < 0) return common_err(err, s->err_code, "%s", s->err_msg);
  if (c->closing) return common_err(err, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  return common_err(err, c->dead_code, "%s", c->dead_msg);
}

static int stream_is_open(const bfeed_stream *s) { return s->state == 1; }
static int stream_has_batch_or_end(const bfeed_stream *s) { return s->head != NULL || s->ended; }

static void stream_unlink(bfeed_client *c, bfeed_stream *s) {
  for (bfeed_stream **pp = &c->streams; *pp; pp = &(*pp)->next_stream)
    if (*pp == s) {
      *pp = s->next_stream;
      return;
    }
}

BFEED_API int bfeed_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o,
                                bfeed_stream **out, bfeed_error *err) {
  char why[256];
  *out = NULL;
  bfeed_stream *s = calloc(1, sizeof *s);
  if (!s) return common_err(err, BFEED_ENOMEM, "out of memory");
  if (!dataset || strlen(dataset) >= sizeof s->open.dataset || !*dataset) {
    free(s);
    return common_err(err, BFEED_EINVAL, "dataset name must be 1..%zu bytes", sizeof s->open.dataset - 1);
  }
  s->open.opts = *o;
  if (o->codec == BFEED_CODEC_AUTO) /* one codec for all of a pool's members: the same bytes from each */
    s->open.opts.codec = (c->pool ? pool_any_tcp(c->pool) : c->where.kind == ADDR_TCP) ? BFEED_CODEC_U8 : BFEED_CODEC_NONE;
  /* Shared memory only where descriptors can travel; TCP never asks, nor a
   * pool (its members are clients of their own, on the socket: pool.c). */
  s->open.opts.transport =
      c->shm && !c->pool && c->where.kind == ADDR_UNIX ? BFEED_TRANSPORT_SHM : BFEED_TRANSPORT_SOCKET;
  if (msg_opts_check(&s->open.opts, why, sizeof why) < 0) {
    free(s);
    return common_err(err, BFEED_EINVAL, "%s", why);
  }
  snprintf(s->open.dataset, sizeof s->open.dataset, "%s", dataset);
  s->c = c;
  if (c->pool) { /* several daemons: the stream fans out */
    /* A call in progress like any other, so that bfeed_close waits for it
     * (the members take a while to join) rather than free c under it. */
    int rc = conn_lock_enter(c, err);
    if (rc < 0) {
      free(s);
      return rc;
    }
    pthread_mutex_unlock(&c->mu);
    rc = fanout_open(c, s, err);
    pthread_mutex_lock(&c->mu);
    if (rc == 0 && c->closing) rc = common_err(err, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
    if (rc == 0) {
      s->id = ++c->next_id;
      s->next_stream = c->streams;
      c->streams = s;
      *out = s;
    }
    pthread_mutex_unlock(&c->mu);
    if (rc < 0) stream_free(s); /* before the call ends: fanout_free takes c->mu */
    pthread_mutex_lock(&c->mu);
    conn_leave(c);
    pthread_mutex_unlock(&c->mu);
    return rc;
  }
  s->next = s->queued = (stream_pos){o->epoch, o->batch_index};
  int rc = conn_lock_enter(c, err);
  if (rc < 0) {
    free(s);
    return rc;
  }
  s->id = ++c->next_id;
  s->next_stream = c->streams;
  c->streams = s;
  pthread_mutex_unlock(&c->mu);
  rc = stream_send_open(s, err);
  pthread_mutex_lock(&c->mu);
  if (rc < 0 && c->reconnect) rc = 0; /* the reader sees the broken socket too; it reopens s */
  if (rc == 0) rc = stream_wait(s, stream_is_open, err);
  if (rc < 0) stream_unlink(c, s);
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) {
    stream_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

BFEED_API int bfeed_stream_get_info(const bfeed_stream *s, bfeed_stream_info *info) {
  *info = s->info; /* set once, before bfeed_stream_open returned; a reopen only compares */
  return 0;
}

BFEED_API int bfeed_stream_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err) {
  if (s->fan) return fanout_next(s, out, err);
  bfeed_client *c = s->c;
  *out = NULL;
  int rc = conn_lock_enter(c, err);
  if (rc < 0) return rc;
  rc = stream_wait(s, stream_has_batch_or_end, err);
  bfeed_batch *b = rc == 0 ? s->head : NULL;
  if (b) {
    s->head = b->next;
    if (!s->head) s->tail = NULL;
    b->next = NULL;
    s->consumed++;
    shm_consumed(s->shm, s->consumed); /* repeated by releases (shm.c) */
    s->next = stream_pos_after((stream_pos){b->epoch, b->index}, s->info.batches_per_epoch);
  }
  uint64_t consumed = s->consumed, gen = c->gen;
  pthread_mutex_unlock(&c->mu);
  if (rc == 0 && !b) rc = common_err(err, BFEED_EEOF, "end of stream: all requested epochs were delivered");
  /* Tell the daemon, so it may run one batch further ahead; on the
   * connection the batch came by only (a newer one counts afresh). If that
   * fails the connection is gone: the batch in hand is still good, and the
   * reader thread reconnects, or the next call reports why the connection
   * ended (the daemon's own error when it sent one, such as ESHUTDOWN). */
  if (b && conn_send(c, gen, FRAME_ACK, s->id, conn_enc_u64, &consumed, NULL) == BFEED_EIO && !c->reconnect)
    conn_mark_dead(c, BFEED_ECLOSED, "the connection to the daemon is closed");
  pthread_mutex_lock(&c->mu);
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  *out = b;
  return rc;
}

BFEED_API int bfeed_stream_wait(bfeed_stream *s, int timeout_ms) {
  if (s->fan) return fanout_wait(s, timeout_ms);
  bfeed_client *c = s->c;
  /* c->cv waits on CLOCK_MONOTONIC (conn.c) */
  struct timespec until = clock_timespec(clock_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u);
  int rc = conn_lock_enter(c, NULL);
  if (rc < 0) return 1; /* bfeed_stream_next would not block: it fails */
  while (!stream_has_batch_or_end(s) && s->state >= 0 && !c->dead && !c->closing && rc == 0)
    rc = timeout_ms < 0 ? pthread_cond_wait(&c->cv, &c->mu) : pthread_cond_timedwait(&c->cv, &c->mu, &until);
  int ready = stream_has_batch_or_end(s) || s->state < 0 || c->dead || c->closing;
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  return ready;
}

const char *stream_name(bfeed_stream *s, const char *name) {
  for (size_t i = 0; i < s->nnames; i++)
    if (strcmp(s->names[i], name) == 0) return s->names[i];
  if (s->nnames == CLIENT_MAX_NAMES || !(s->names[s->nnames] = strdup(name))) return NULL;
  return s->names[s->nnames++];
}

/* One STATS_REQ on the current connection: 1 with the answer in s->stats,
 * 0 when the connection was replaced meanwhile (ask again), or the error. */
static int stream_stats_once(bfeed_stream *s, bfeed_error *err) {
  bfeed_client *c = s->c;
  int rc = stream_wait(s, stream_is_open, err);
  if (rc < 0) return rc;
  if (s->open_gen != c->gen) /* it had handed out everything when the connection was lost */
    return common_err(err, BFEED_ECLOSED,
                      "stream %u had served all its batches when the connection was lost: its counters are gone",
                      s->id);
  uint64_t gen = c->gen;
  s->stats_ready = 0;
  pthread_mutex_unlock(&c->mu);
  rc = conn_send(c, gen, FRAME_STATS_REQ, s->id, NULL, NULL, err);
  pthread_mutex_lock(&c->mu);
  /* Without reconnecting a failed send is the answer; with it, the reader
   * replaces the connection and the request is made again on the new one. */
  if (rc < 0 && !c->reconnect) return rc;
  while (!s->stats_ready && c->gen == gen && s->state >= 0 && !c->dead && !c->closing)
    pthread_cond_wait(&c->cv, &c->mu);
  if (s->stats_ready && c->gen == gen) return 1;
  if (c->gen != gen) return 0;
  return stream_wait(s, stream_is_open, err); /* the reason it failed */
}

BFEED_API int bfeed_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, bfeed_error *err) {
  if (s->fan) return fanout_stats(s, out, max, count, err);
  bfeed_client *c = s->c;
  *count = 0;
  int rc = conn_lock_enter(c, err);
  if (rc < 0) return rc;
  while ((rc = stream_stats_once(s, err)) == 0) continue;
  if (rc > 0) rc = 0;
  for (size_t i = 0; rc == 0 && i < s->nstats && i < max; i++) {
    out[i].name = stream_name(s, s->stats[i].name);
    out[i].value = s->stats[i].value;
    if (!out[i].name) rc = common_err(err, BFEED_ENOMEM, "out of memory for counter names");
    else *count = i + 1;
  }
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

BFEED_API void bfeed_stream_close(bfeed_stream *s) {
  if (!s) return;
  bfeed_client *c = s->c;
  if (conn_lock_enter(c, NULL) < 0) return; /* bfeed_close has begun: it frees s */
  int send = !s->fan && !c->dead && s->open_gen == c->gen;
  uint64_t gen = c->gen;
  stream_unlink(c, s);
  pthread_mutex_unlock(&c->mu);
  if (send) conn_send(c, gen, FRAME_CLOSE, s->id, NULL, NULL, NULL);
  stream_free(s);
  pthread_mutex_lock(&c->mu);
  conn_leave(c);
  pthread_mutex_unlock(&c->mu);
}
