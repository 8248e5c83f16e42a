/*
 * stream.c -- libbfeed's streams: open one (and wait for the daemon's
 * answer), take its batches in order (or wait for one with a timeout), ask
 * for its counters, close it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"

bfeed_stream *stream_find(bfeed_client *c, uint32_t id) {
  for (bfeed_stream *s = c->streams; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

void stream_free(bfeed_stream *s) {
  while (s->head) {
    bfeed_batch *b = s->head;
    s->head = b->next;
    batch_free(b);
  }
  free(s);
}

static void stream_enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }

/* Wait (c->mu held) until pred(s) or the stream or connection failed. */
static int stream_wait(bfeed_stream *s, int (*pred)(const bfeed_stream *), bfeed_error *err) {
  bfeed_client *c = s->c;
  while (!pred(s) && s->state >= 0 && !c->dead) pthread_cond_wait(&c->cv, &c->mu);
  if (pred(s)) return 0;
  if (s->state < 0) return common_err(err, s->err_code, "%s", s->err_msg);
  return common_err(err, c->dead_code, "%s", c->dead_msg);
}

static int stream_is_open(const bfeed_stream *s) { return s->state == 1; }
static int stream_has_batch_or_end(const bfeed_stream *s) { return s->head != NULL || s->ended; }
static int stream_has_stats(const bfeed_stream *s) { return s->stats_ready; }

static void stream_unlink(bfeed_client *c, bfeed_stream *s) {
  for (bfeed_stream **pp = &c->streams; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      return;
    }
}

BFEED_API int bfeed_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o,
                                bfeed_stream **out, bfeed_error *err) {
  msg_open m;
  char why[256];
  *out = NULL;
  if (!dataset || strlen(dataset) >= sizeof m.dataset || !*dataset)
    return common_err(err, BFEED_EINVAL, "dataset name must be 1..%zu bytes", sizeof m.dataset - 1);
  if (msg_opts_check(o, why, sizeof why) < 0) return common_err(err, BFEED_EINVAL, "%s", why);
  snprintf(m.dataset, sizeof m.dataset, "%s", dataset);
  m.opts = *o;
  bfeed_stream *s = calloc(1, sizeof *s);
  if (!s) return common_err(err, BFEED_ENOMEM, "out of memory");
  s->c = c;
  pthread_mutex_lock(&c->mu);
  s->id = ++c->next_id;
  s->next = c->streams;
  c->streams = s;
  pthread_mutex_unlock(&c->mu);
  int rc = conn_send(c, FRAME_OPEN, s->id, stream_enc_open, &m, err);
  pthread_mutex_lock(&c->mu);
  if (rc == 0) rc = stream_wait(s, stream_is_open, err);
  if (rc < 0) stream_unlink(c, s);
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) {
    stream_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

BFEED_API int bfeed_stream_get_info(const bfeed_stream *s, bfeed_stream_info *info) {
  *info = s->info;
  return 0;
}

BFEED_API int bfeed_stream_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err) {
  bfeed_client *c = s->c;
  *out = NULL;
  pthread_mutex_lock(&c->mu);
  int rc = stream_wait(s, stream_has_batch_or_end, err);
  bfeed_batch *b = s->head;
  if (rc == 0 && b) {
    s->head = b->next;
    if (!s->head) s->tail = NULL;
    b->next = NULL;
    s->consumed++;
  }
  uint64_t consumed = s->consumed;
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) return rc;
  if (!b) return common_err(err, BFEED_EEOF, "end of stream: all requested epochs were delivered");
  *out = b;
  /* Tell the daemon, so it may run one batch further ahead. If that fails
   * the connection is gone: the batch in hand is still good, and the next
   * call reports why the connection ended (the daemon's own error when it
   * sent one, such as ESHUTDOWN). */
  if (conn_send(c, FRAME_ACK, s->id, conn_enc_u64, &consumed, NULL) < 0)
    conn_mark_dead(c, BFEED_ECLOSED, "the connection to the daemon is closed");
  return 0;
}

BFEED_API int bfeed_stream_wait(bfeed_stream *s, int timeout_ms) {
  bfeed_client *c = s->c;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&c->mu);
  int rc = 0;
  while (!stream_has_batch_or_end(s) && s->state >= 0 && !c->dead && rc == 0)
    rc = timeout_ms < 0 ? pthread_cond_wait(&c->cv, &c->mu) : pthread_cond_timedwait(&c->cv, &c->mu, &until);
  int ready = stream_has_batch_or_end(s) || s->state < 0 || c->dead;
  pthread_mutex_unlock(&c->mu);
  return ready;
}

BFEED_API int bfeed_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, bfeed_error *err) {
  bfeed_client *c = s->c;
  *count = 0;
  pthread_mutex_lock(&c->mu);
  s->stats_ready = 0;
  pthread_mutex_unlock(&c->mu);
  int rc = conn_send(c, FRAME_STATS_REQ, s->id, NULL, NULL, err);
  if (rc < 0) return rc;
  pthread_mutex_lock(&c->mu);
  rc = stream_wait(s, stream_has_stats, err);
  for (size_t i = 0; rc == 0 && i < s->nstats && i < max; i++) {
    out[i].name = s->stats[i].name;
    out[i].value = s->stats[i].value;
    *count = i + 1;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

BFEED_API void bfeed_stream_close(bfeed_stream *s) {
  if (!s) return;
  bfeed_client *c = s->c;
  pthread_mutex_lock(&c->mu);
  int dead = c->dead;
  stream_unlink(c, s);
  pthread_mutex_unlock(&c->mu);
  if (!dead) conn_send(c, FRAME_CLOSE, s->id, NULL, NULL, NULL);
  stream_free(s);
}
