/*
 * single_client.c -- a client on one daemon: bfeed_connect2's single case
 * (api_client.c; fanout/ makes one per member and stream), the client's
 * side of the ops table, closing (also a forked child's copy), and the
 * daemon-wide report for bfeed_daemon_stats (api_daemon.c decodes it).
 * Locking: single.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "single.h"

static const api_client_ops single_client_ops;

static int single_client_parse(const char *addr, addr_spec *where, char *err, size_t errlen) {
  char why[256];
  if (!addr || strlen(addr) >= SINGLE_ADDR_MAX || addr_parse(addr, where, why, sizeof why) < 0)
    return api_err(err, errlen, BFEED_EINVAL, "%s",
                   !addr ? "no address given" : strlen(addr) >= SINGLE_ADDR_MAX ? "address too long" : why);
  return 0;
}

int single_client_check(const char *addr, char *err, size_t errlen) {
  addr_spec where;
  return single_client_parse(addr, &where, err, errlen);
}

int single_client_connect(const char *addr, const api_settings *set, bfeed_client **out, char *err, size_t errlen) {
  *out = NULL;
  single_client *c = calloc(1, sizeof *c);
  if (!c || freader_init(&c->in, FRAME_MAX_CONTROL) < 0 || !(c->cache = bufcache_new(8))) {
    if (c) freader_free(&c->in);
    free(c);
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  }
  c->fd = -1;
  c->passed_fd = -1;
  api_client_init(&c->base, &single_client_ops);
  pthread_mutex_init(&c->wmu, NULL);
  pthread_mutex_init(&c->fdmu, NULL);
  pthread_mutex_init(&c->stats_mu, NULL);
  int rc = single_client_parse(addr, &c->where, err, errlen);
  c->reconnect = set->reconnect;
  c->deadline_ns = set->deadline_ns;
  c->shm = set->shm;
  snprintf(c->token, sizeof c->token, "%s", set->token);
  if (rc == 0) {
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    rc = single_conn_establish(c, SINGLE_ATTEMPT_MAX_MS, err, errlen);
  }
  c->gen = 1;
  c->ready = 1;
  if (rc == 0 && (rc = -pthread_create(&c->reader, NULL, single_reader_main, c)) < 0)
    rc = api_err(err, errlen, BFEED_ENOMEM, "cannot start the reader thread: %s", strerror(-rc));
  if (rc < 0) {
    bfeed_close(&c->base);
    return rc;
  }
  c->reader_running = 1;
  *out = &c->base;
  return 0;
}

void single_client_abort(bfeed_client *c) { single_conn_abort(single_client_of(c)); }

static int single_client_any_tcp(bfeed_client *c) { return single_client_of(c)->where.kind == ADDR_TCP; }

static int single_client_shm(const bfeed_client *bc) {
  const single_client *c = (const single_client *)bc;
  return c->shm && c->where.kind == ADDR_UNIX;
}

/* The report's payload, asked for on the connection that is up (again on
 * the next one if it is replaced meanwhile). c->base.mu held. */
static int single_client_fetch(single_client *c, uint8_t **p, size_t *len, char *err, size_t errlen) {
  for (;;) {
    while (!c->ready && !c->dead && !c->base.closing) pthread_cond_wait(&c->base.cv, &c->base.mu);
    if (c->base.closing) return api_err(err, errlen, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
    if (c->dead) return api_err(err, errlen, c->dead_code, "%s", c->dead_msg);
    uint64_t gen = c->gen;
    c->report_ready = 0;
    pthread_mutex_unlock(&c->base.mu);
    int rc = single_conn_send(c, gen, FRAME_STATS_REQ, 0, NULL, NULL, err, errlen);
    pthread_mutex_lock(&c->base.mu);
    if (rc < 0 && !c->reconnect) return rc;
    while (!c->report_ready && c->gen == gen && !c->dead && !c->base.closing)
      pthread_cond_wait(&c->base.cv, &c->base.mu);
    if (c->report_ready && c->gen == gen) {
      *p = c->report;
      *len = c->report_len;
      c->report = NULL;
      c->report_ready = 0;
      return 0;
    }
  }
}

static int single_client_report(bfeed_client *bc, uint8_t **p, size_t *len, char *err, size_t errlen) {
  single_client *c = single_client_of(bc);
  pthread_mutex_unlock(&c->base.mu);
  pthread_mutex_lock(&c->stats_mu); /* one request at a time */
  pthread_mutex_lock(&c->base.mu);
  int rc = single_client_fetch(c, p, len, err, errlen);
  pthread_mutex_unlock(&c->base.mu);
  pthread_mutex_unlock(&c->stats_mu);
  pthread_mutex_lock(&c->base.mu);
  return rc;
}

static size_t single_client_endpoints(bfeed_client *c) {
  (void)c;
  return 1;
}

static int single_client_endpoint(bfeed_client *c, size_t i, char *buf, size_t cap) {
  if (i > 0) return BFEED_EINVAL;
  snprintf(buf, cap, "%s", single_client_of(c)->addr);
  return 0;
}

static void single_client_stop(bfeed_client *bc) {
  single_client *c = single_client_of(bc);
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR); /* wakes the reader and blocked writers */
  pthread_mutex_unlock(&c->fdmu);
  if (c->reader_running) pthread_join(c->reader, NULL);
}

static void single_client_free(bfeed_client *bc) {
  single_client *c = single_client_of(bc);
  /* A batch released on another thread may be sending its ACK: wait it
   * out, and no more (single_shm.c). */
  for (bfeed_stream *s = bc->streams; s; s = s->next_stream) single_shm_forget(single_stream_of(s)->shm);
  single_conn_drop_locked(c); /* nobody else is left to hold wmu */
  if (c->passed_fd >= 0) close(c->passed_fd);
  for (bfeed_stream *s; (s = api_client_pop_stream(bc));) single_stream_free(single_stream_of(s));
  pthread_mutex_destroy(&c->wmu);
  pthread_mutex_destroy(&c->fdmu);
  pthread_mutex_destroy(&c->stats_mu);
  free(c->report);
  freader_free(&c->in);
  bufcache_unref(c->cache);
  api_client_free(bc);
}

/* ops->forget (api.h): in a forked child, with the one thread it has.
 * The descriptor is closed under fdmu, if trylock takes it (else c->fd may
 * be half replaced: left open); the streams and the report are freed under
 * base.mu alike (else a thread was changing them at the fork: left). The
 * reader's frame state, the buffer cache and the mutexes are left as they
 * are: only that thread or a lock holder could say they are whole. */
static void single_client_forget(bfeed_client *bc) {
  single_client *c = single_client_of(bc);
  if (pthread_mutex_trylock(&c->fdmu) == 0 && c->fd >= 0) close(c->fd); /* the child's duplicate; no shutdown */
  if (pthread_mutex_trylock(&c->base.mu) != 0) return;
  for (bfeed_stream *s; (s = api_client_pop_stream(bc));) single_stream_forget(single_stream_of(s));
  free(c->report);
  free(c);
}

/* By the public call each serves. */
static const api_client_ops single_client_ops = {
    .open = single_stream_open, .any_tcp = single_client_any_tcp, .shm = single_client_shm, /* bfeed_stream_open */
    .report = single_client_report,                                                         /* bfeed_daemon_stats */
    .endpoints = single_client_endpoints, .endpoint = single_client_endpoint,               /* bfeed_client_endpoint* */
    .stop = single_client_stop, .free = single_client_free, .forget = single_client_forget, /* bfeed_close */
};
