/*
 * single_reconnect.c -- a single client after a lost connection: forget
 * what the old connection brought but the caller did not take, connect
 * again with backoff until the deadline, and reopen every stream at the
 * first batch not yet handed to its caller. Runs on the reader thread
 * (single_reader.c); fanout/ asks single_reconnect_transient which errors
 * are worth another try for its members too.
 *
 * Exactly once: a batch is a pure function of (dataset, options, seed,
 * epoch, index), and each stream knows the (epoch, index) of the next batch
 * its caller will take (single_stream.c), so the reopened stream continues the
 * same sequence; prefetched batches not handed out are dropped and asked
 * for again, and single_reader.c checks every batch that comes is the one due.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "single.h"

int single_reconnect_transient(int code) {
  switch (code) {
    case BFEED_ECLOSED:    /* the daemon went away (crash, kill, restart) */
    case BFEED_EIO:        /* the socket failed, or a handshake took too long */
    case BFEED_ECONNECT:   /* nobody listens yet: the daemon is restarting */
    case BFEED_ESHUTDOWN:  /* the daemon said it is stopping */
    case BFEED_ELIMIT:     /* too many clients for now */
    case BFEED_ECHECKSUM:  /* bytes damaged in transit */
    case BFEED_ETIMEDOUT:  /* the daemon gave up on a silent connection */
    case BFEED_EBUSY:      /* a restarted daemon still indexes a stream's dataset */
      return 1;
    default: /* refusals (EAUTH, EVERSION) and protocol errors: another try would fail the same way */
      return 0;
  }
}

/* Sleep until the monotonic time `until` unless bfeed_close begins (c->base.cv
 * uses clock.h's clock); 1 if it did. c->base.mu held. */
static int single_reconnect_sleep(single_client *c, uint64_t until) {
  struct timespec ts = clock_timespec(until);
  while (!c->base.closing && clock_now_ns() < until) pthread_cond_timedwait(&c->base.cv, &c->base.mu, &ts);
  return c->base.closing;
}

/* The old connection is over: close it, and have every stream forget what
 * it brought. Writers see a new generation, not ready, until reopened. */
static void single_reconnect_forget(single_client *c) {
  pthread_mutex_lock(&c->wmu);
  pthread_mutex_lock(&c->base.mu);
  c->ready = 0;
  c->gen++;
  c->base.reconnects++;
  for (bfeed_stream *s = c->base.streams; s; s = s->next_stream) single_stream_reset(single_stream_of(s));
  pthread_cond_broadcast(&c->base.cv);
  pthread_mutex_unlock(&c->base.mu);
  single_conn_drop_locked(c);
  pthread_mutex_unlock(&c->wmu);
}

/* Connected again: OPEN every stream that needs it, where its caller
 * stands, before any other writer may send (so that an ACK or STATS_REQ
 * never precedes its stream's OPEN). */
static int single_reconnect_reopen(single_client *c, char *err, size_t errlen) {
  wbuf w;
  wbuf_init(&w);
  int rc = 0, n = 0;
  pthread_mutex_lock(&c->wmu);
  pthread_mutex_lock(&c->base.mu);
  for (bfeed_stream *b = c->base.streams; b && rc == 0; b = b->next_stream) {
    single_stream *s = single_stream_of(b);
    if (s->state == 0 && s->open_gen != c->gen && (rc = single_stream_frame_open(s, &w, err, errlen)) == 0) {
      s->open_gen = c->gen;
      n++;
    }
  }
  pthread_mutex_unlock(&c->base.mu);
  if (rc == 0 && n > 0) rc = single_conn_write_locked(c, &w, "OPEN", err, errlen);
  pthread_mutex_lock(&c->base.mu);
  c->ready = 1;
  pthread_cond_broadcast(&c->base.cv);
  pthread_mutex_unlock(&c->base.mu);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  if (n == 0) c->lost_ns = 0; /* nothing to wait for: connected is recovered */
  return rc;
}

int single_reconnect_run(single_client *c, int code, const char *reason) {
  pthread_mutex_lock(&c->base.mu);
  int closing = c->base.closing;
  pthread_mutex_unlock(&c->base.mu);
  if (closing || !c->reconnect || !single_reconnect_transient(code)) {
    single_conn_mark_dead(c, closing ? BFEED_ECLOSED : code, closing ? "the client was closed (bfeed_close)" : reason);
    return code;
  }
  uint64_t now = clock_now_ns();
  if (!c->lost_ns) c->lost_ns = now;
  uint64_t deadline = c->lost_ns + c->deadline_ns;
  single_reconnect_forget(c);
  unsigned seed = (unsigned)(now ^ (uintptr_t)c ^ (unsigned)getpid());
  uint64_t wait_ms = API_BACKOFF_FIRST_MS;
  int last_code = code;
  char msg[MSG_ERROR_MAX], last[MSG_ERROR_MAX] = "none";
  for (;;) {
    /* Jitter over the upper half of the wait: clients that lost one daemon
     * together do not all come back in the same millisecond. */
    uint64_t jittered = wait_ms / 2 + (uint64_t)rand_r(&seed) % (wait_ms / 2 + 1);
    uint64_t until = clock_now_ns() + jittered * 1000000u;
    pthread_mutex_lock(&c->base.mu);
    closing = single_reconnect_sleep(c, until < deadline ? until : deadline);
    pthread_mutex_unlock(&c->base.mu);
    if (closing) {
      single_conn_mark_dead(c, BFEED_ECLOSED, "the client was closed (bfeed_close) while reconnecting");
      return BFEED_ECLOSED;
    }
    now = clock_now_ns();
    if (now >= deadline) break;
    uint64_t left_ms = (deadline - now) / 1000000u + 1;
    char e[API_ERRLEN] = "";
    int rc = single_conn_establish(c, (int)(left_ms < SINGLE_ATTEMPT_MAX_MS ? left_ms : SINGLE_ATTEMPT_MAX_MS), e,
                                   sizeof e);
    if (rc == 0) {
      /* Should writing the OPENs fail, the socket is shut down and the
       * reader's next read starts another round. */
      single_reconnect_reopen(c, e, sizeof e);
      return 0;
    }
    pthread_mutex_lock(&c->wmu);
    single_conn_drop_locked(c);
    pthread_mutex_unlock(&c->wmu);
    if (!single_reconnect_transient(rc)) {
      snprintf(msg, sizeof msg, "lost the connection (%.100s), and reconnecting failed: %.140s", reason, e);
      single_conn_mark_dead(c, rc, msg);
      return rc;
    }
    last_code = rc;
    snprintf(last, sizeof last, "%s", e);
    wait_ms = wait_ms * 2 < API_BACKOFF_CAP_MS ? wait_ms * 2 : API_BACKOFF_CAP_MS;
  }
  snprintf(msg, sizeof msg, "lost the connection (%.100s) and could not reconnect within %g s; last try: %.100s",
           reason, (double)c->deadline_ns / 1e9, last);
  single_conn_mark_dead(c, last_code, msg);
  return last_code;
}
