/*
 * fanout_client.c -- a client over several daemons: bfeed_connect2's case
 * for an address that names several endpoints (api_client.c asks here
 * first), the client's side of the ops table, closing. It holds no socket,
 * reader, writer lock or buffer cache: its streams (fanout_stream.c) make a
 * single client per member. Locking: fanout.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"

static const api_client_ops fanout_client_ops;

int fanout_client_is_list(const char *addr) {
  return addr && strlen(addr) < FANOUT_LIST_MAX && strchr(addr, ',') != NULL;
}

int fanout_client_member(const fanout_client *fc, const char *ep, bfeed_client **out, char *err, size_t errlen) {
  return single_client_connect(ep, &fc->member, out, err, errlen);
}

static void fanout_client_free(bfeed_client *bc) {
  fanout_client *c = fanout_client_of(bc);
  for (bfeed_stream *s; (s = api_client_pop_stream(bc));) fanout_stream_free((fanout_stream *)s);
  free(c->ends.ep);
  api_client_free(bc);
}

/* ops->forget (api.h): in a forked child. Everything of the fan-out
 * client's is under c->base.mu: if trylock takes it, no member thread was
 * changing anything at the fork and the copy is freed, else it is left. */
static void fanout_client_forget(bfeed_client *bc) {
  fanout_client *c = fanout_client_of(bc);
  if (pthread_mutex_trylock(&bc->mu) != 0) return;
  for (bfeed_stream *s; (s = api_client_pop_stream(bc));) fanout_stream_forget((fanout_stream *)s);
  free(c->ends.ep);
  free(c);
}

int fanout_client_connect(const char *addr, const api_settings *set, bfeed_client **out, char *err,
                          size_t errlen) {
  char (*eps)[FANOUT_ADDR_MAX] = calloc(FANOUT_MEMBERS_MAX, sizeof *eps);
  size_t n;
  *out = NULL;
  if (!eps) return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  int rc = fanout_endpoints_resolve(addr, eps, FANOUT_MEMBERS_MAX, &n, err, errlen);
  if (rc < 0 || (n == 1 && !strchr(addr, ','))) { /* one endpoint: the single connection, as always */
    free(eps);
    return rc < 0 ? rc : 0;
  }
  fanout_client *c = calloc(1, sizeof *c);
  if (!c) {
    free(eps);
    return api_err(err, errlen, BFEED_ENOMEM, "out of memory");
  }
  api_client_init(&c->base, &fanout_client_ops);
  c->ends.ep = eps;
  c->ends.n = n;
  snprintf(c->ends.addr, sizeof c->ends.addr, "%s", addr);
  c->reconnect = set->reconnect;
  c->deadline_s = (double)set->deadline_ns / 1e9;
  c->stall_s = set->stall_s;
  c->member = *set; /* the token, resolved once for all */
  c->member.reconnect = 0; /* a member that fails is dropped; fanout_member.c brings it back */
  c->member.shm = 0;       /* fanout_stream.c holds members' batches to reorder them: the socket, not a ring of slots */
  /* Where no endpoint answers the address is wrong: fail at once, as one
   * endpoint would. The first that answers names the server. */
  char e[API_ERRLEN] = "";
  rc = BFEED_ECONNECT;
  for (size_t i = 0; i < n && rc < 0; i++) {
    bfeed_client *m;
    if ((rc = fanout_client_member(c, eps[i], &m, e, sizeof e)) < 0) continue;
    c->base.version = bfeed_client_version(m);
    snprintf(c->base.server, sizeof c->base.server, "%s", bfeed_client_server(m));
    bfeed_close(m);
  }
  if (rc < 0) {
    fanout_client_free(&c->base);
    return api_err(err, errlen, rc, "no endpoint of %.200s answers; the last: %.200s", addr, e);
  }
  *out = &c->base;
  return 0;
}

/* Under c->mu: another stream's member may be resolving the list again. */
static int fanout_client_any_tcp(bfeed_client *c) {
  pthread_mutex_lock(&c->mu);
  int tcp = fanout_endpoints_any_tcp(&fanout_client_of(c)->ends);
  pthread_mutex_unlock(&c->mu);
  return tcp;
}

static int fanout_client_shm(const bfeed_client *c) {
  (void)c;
  return 0; /* members are clients of their own, on the socket */
}

static int fanout_client_report(bfeed_client *c, uint8_t **p, size_t *len, char *err, size_t errlen) {
  (void)p, (void)len;
  return api_err(err, errlen, BFEED_EINVAL,
                 "%.200s names several daemons: ask each (bfeed_client_endpoint, then bfeed_connect)",
                 fanout_client_of(c)->ends.addr);
}

static size_t fanout_client_endpoints(bfeed_client *bc) {
  fanout_client *c = fanout_client_of(bc);
  pthread_mutex_lock(&bc->mu);
  size_t n = c->ends.n;
  pthread_mutex_unlock(&bc->mu);
  return n;
}

static int fanout_client_endpoint(bfeed_client *bc, size_t i, char *buf, size_t cap) {
  fanout_client *c = fanout_client_of(bc);
  pthread_mutex_lock(&bc->mu);
  int rc = i < c->ends.n ? 0 : BFEED_EINVAL;
  if (rc == 0) snprintf(buf, cap, "%s", c->ends.ep[i]);
  pthread_mutex_unlock(&bc->mu);
  return rc;
}

/* By the public call each serves. No .stop: nothing of the client's own
 * runs; the streams' member threads stop when .free frees the streams. */
static const api_client_ops fanout_client_ops = {
    .open = fanout_stream_open, .any_tcp = fanout_client_any_tcp, .shm = fanout_client_shm, /* bfeed_stream_open */
    .report = fanout_client_report,                                                         /* bfeed_daemon_stats */
    .endpoints = fanout_client_endpoints, .endpoint = fanout_client_endpoint,               /* bfeed_client_endpoint* */
    .free = fanout_client_free, .forget = fanout_client_forget,                             /* bfeed_close */
};
