/*
 * pool.c -- several daemons behind one address: splitting a comma-separated
 * address into endpoints and resolving names into every address they stand
 * for (a Kubernetes headless Service), and the pool client that
 * bfeed_connect2 makes of them. Its streams fan out (fanout.c).
 *
 * A name is resolved to the addresses of one family (IPv4 when it has any,
 * else IPv6): "localhost" is 127.0.0.1 and ::1, one daemon, not two.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client.h"

static int pool_add(char (*out)[POOL_ADDR_MAX], size_t max, size_t *n, const char *ep) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(out[i], ep) == 0) return 0; /* the same endpoint twice is one member */
  if (*n == max) return -1;
  snprintf(out[(*n)++], POOL_ADDR_MAX, "%s", ep);
  return 0;
}

/* The addresses a TCP host name stands for, as "a.b.c.d:port" or
 * "[v6]:port"; the item itself when it is a literal or does not resolve
 * (connecting reports why). */
static int pool_resolve_tcp(const addr_spec *a, const char *item, char (*out)[POOL_ADDR_MAX], size_t max,
                            size_t *n) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
  struct in6_addr a6;
  struct in_addr a4;
  if (inet_pton(AF_INET, a->host, &a4) == 1 || inet_pton(AF_INET6, a->host, &a6) == 1 ||
      getaddrinfo(a->host, NULL, &hints, &res) != 0)
    return pool_add(out, max, n, item);
  int have4 = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) have4 |= ai->ai_family == AF_INET;
  int rc = 0;
  for (struct addrinfo *ai = res; ai && rc == 0; ai = ai->ai_next) {
    char host[INET6_ADDRSTRLEN], ep[POOL_ADDR_MAX];
    if (ai->ai_family == AF_INET && have4) {
      inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, host, sizeof host);
      snprintf(ep, sizeof ep, "%s:%u", host, a->port);
    } else if (ai->ai_family == AF_INET6 && !have4) {
      inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, host, sizeof host);
      snprintf(ep, sizeof ep, "[%s]:%u", host, a->port);
    } else {
      continue;
    }
    rc = pool_add(out, max, n, ep);
  }
  freeaddrinfo(res);
  return rc;
}

int pool_resolve(const char *addr, char (*out)[POOL_ADDR_MAX], size_t max, size_t *n, bfeed_error *err) {
  *n = 0;
  const char *p = addr;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[POOL_ADDR_MAX], why[256];
    addr_spec a;
    if (len == 0 || len >= sizeof item)
      return common_err(err, BFEED_EINVAL, "address list \"%.200s\": %s", addr,
                        len ? "an endpoint is too long" : "an empty endpoint (two commas, or one at an end)");
    memcpy(item, p, len);
    item[len] = 0;
    if (addr_parse(item, &a, why, sizeof why) < 0) return common_err(err, BFEED_EINVAL, "%s", why);
    int rc = a.kind == ADDR_UNIX ? pool_add(out, max, n, item) : pool_resolve_tcp(&a, item, out, max, n);
    if (rc < 0)
      return common_err(err, BFEED_ELIMIT, "address \"%.200s\": more than %zu endpoints", addr, max);
    if (!comma) return 0;
    p = comma + 1;
  }
}

int pool_connect(bfeed_client *c, const char *addr, const bfeed_connect_opts *o, bfeed_error *err) {
  char (*eps)[POOL_ADDR_MAX] = calloc(POOL_MAX, sizeof *eps);
  size_t n;
  if (!eps) return common_err(err, BFEED_ENOMEM, "out of memory");
  int rc = pool_resolve(addr, eps, POOL_MAX, &n, err);
  if (rc < 0 || (n == 1 && !strchr(addr, ','))) { /* one endpoint: the single connection, as always */
    free(eps);
    return rc < 0 ? rc : 0;
  }
  pool *p = calloc(1, sizeof *p);
  if (!p) {
    free(eps);
    return common_err(err, BFEED_ENOMEM, "out of memory");
  }
  p->ep = eps;
  p->n = n;
  snprintf(p->addr, sizeof p->addr, "%s", addr);
  p->reconnect = c->reconnect;
  p->deadline_s = (double)c->deadline_ns / 1e9;
  p->stall_s = o && o->stall_timeout > 0 ? o->stall_timeout : 10;
  snprintf(p->token, sizeof p->token, "%s", c->token);
  c->pool = p;
  /* A pool where no endpoint answers is a wrong address: fail at once, as
   * one endpoint would. The first that answers names the server. */
  bfeed_error e = {0};
  rc = BFEED_ECONNECT;
  for (size_t i = 0; i < n && rc < 0; i++) {
    bfeed_client *m;
    if ((rc = pool_member_connect(p, eps[i], &m, &e)) < 0) continue;
    c->version = bfeed_client_version(m);
    snprintf(c->server, sizeof c->server, "%s", bfeed_client_server(m));
    bfeed_close(m);
  }
  if (rc < 0) return common_err(err, rc, "no endpoint of %.200s answers; the last: %.200s", addr, e.message);
  return 1;
}

int pool_member_connect(const pool *p, const char *ep, bfeed_client **out, bfeed_error *err) {
  bfeed_connect_opts o;
  bfeed_connect_opts_init(&o);
  o.reconnect = 0; /* a member that fails is dropped; fanout.c brings it back */
  o.shm = 0;       /* fanout.c holds members' batches to reorder them: the socket, not a ring of slots */
  if (p->token[0]) o.token = p->token; /* resolved once, for the pool */
  return bfeed_connect2(ep, &o, out, err);
}

int pool_refresh(pool *p, pthread_mutex_t *mu) {
  char (*eps)[POOL_ADDR_MAX] = calloc(POOL_MAX, sizeof *eps);
  size_t n = 0;
  if (!eps) return -1;
  pthread_mutex_unlock(mu); /* a name server may take its time: the stream goes on meanwhile */
  int rc = pool_resolve(p->addr, eps, POOL_MAX, &n, NULL);
  pthread_mutex_lock(mu);
  if (rc < 0 || n == 0) {
    free(eps);
    return -1;
  }
  free(p->ep);
  p->ep = eps;
  p->n = n;
  return 0;
}

int pool_has(const pool *p, const char *ep) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->ep[i], ep) == 0) return 1;
  return 0;
}

int pool_any_tcp(const pool *p) {
  for (size_t i = 0; i < p->n; i++)
    if (strncmp(p->ep[i], "unix:", 5) != 0) return 1;
  return 0;
}

void pool_free(pool *p) {
  if (!p) return;
  free(p->ep);
  free(p);
}

BFEED_API size_t bfeed_client_endpoints(bfeed_client *c) {
  if (!c->pool) return 1;
  pthread_mutex_lock(&c->mu);
  size_t n = c->pool->n;
  pthread_mutex_unlock(&c->mu);
  return n;
}

BFEED_API int bfeed_client_endpoint(bfeed_client *c, size_t i, char *buf, size_t cap) {
  if (!c->pool) {
    if (i > 0) return BFEED_EINVAL;
    snprintf(buf, cap, "%s", c->addr);
    return 0;
  }
  pthread_mutex_lock(&c->mu);
  int rc = i < c->pool->n ? 0 : BFEED_EINVAL;
  if (rc == 0) snprintf(buf, cap, "%s", c->pool->ep[i]);
  pthread_mutex_unlock(&c->mu);
  return rc;
}
