/*
 * fanout_endpoints.c -- several daemons behind one address: splitting a
 * comma-separated address into endpoints and resolving names into every
 * address they stand for (a Kubernetes headless Service), for
 * fanout_client.c when connecting and for a stream's members
 * (fanout_member.c) when one fails and names may stand for others now.
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

#include "addr.h"
#include "fanout.h"

static int fanout_endpoints_add(char (*out)[FANOUT_ADDR_MAX], size_t max, size_t *n, const char *ep) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(out[i], ep) == 0) return 0; /* the same endpoint twice is one member */
  if (*n == max) return -1;
  snprintf(out[(*n)++], FANOUT_ADDR_MAX, "%s", ep);
  return 0;
}

/* The addresses a TCP host name stands for, as "a.b.c.d:port" or
 * "[v6]:port"; the item itself when it is a literal or does not resolve
 * (connecting reports why). */
static int fanout_endpoints_resolve_tcp(const addr_spec *a, const char *item, char (*out)[FANOUT_ADDR_MAX], size_t max,
                                        size_t *n) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
  struct in6_addr a6;
  struct in_addr a4;
  if (inet_pton(AF_INET, a->host, &a4) == 1 || inet_pton(AF_INET6, a->host, &a6) == 1 ||
      getaddrinfo(a->host, NULL, &hints, &res) != 0)
    return fanout_endpoints_add(out, max, n, item);
  int have4 = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) have4 |= ai->ai_family == AF_INET;
  int rc = 0;
  for (struct addrinfo *ai = res; ai && rc == 0; ai = ai->ai_next) {
    char host[INET6_ADDRSTRLEN], ep[FANOUT_ADDR_MAX];
    if (ai->ai_family == AF_INET && have4) {
      inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, host, sizeof host);
      snprintf(ep, sizeof ep, "%s:%u", host, a->port);
    } else if (ai->ai_family == AF_INET6 && !have4) {
      inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, host, sizeof host);
      snprintf(ep, sizeof ep, "[%s]:%u", host, a->port);
    } else {
      continue;
    }
    rc = fanout_endpoints_add(out, max, n, ep);
  }
  freeaddrinfo(res);
  return rc;
}

int fanout_endpoints_resolve(const char *addr, char (*out)[FANOUT_ADDR_MAX], size_t max, size_t *n, char *err,
                             size_t errlen) {
  *n = 0;
  const char *p = addr;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[FANOUT_ADDR_MAX], why[256];
    addr_spec a;
    if (len == 0 || len >= sizeof item)
      return api_err(err, errlen, BFEED_EINVAL, "address list \"%.200s\": %s", addr,
                     len ? "an endpoint is too long" : "an empty endpoint (two commas, or one at an end)");
    memcpy(item, p, len);
    item[len] = 0;
    if (addr_parse(item, &a, why, sizeof why) < 0) return api_err(err, errlen, BFEED_EINVAL, "%s", why);
    int rc = a.kind == ADDR_UNIX ? fanout_endpoints_add(out, max, n, item)
                                 : fanout_endpoints_resolve_tcp(&a, item, out, max, n);
    if (rc < 0)
      return api_err(err, errlen, BFEED_ELIMIT, "address \"%.200s\": more than %zu endpoints", addr, max);
    if (!comma) return 0;
    p = comma + 1;
  }
}

int fanout_endpoints_refresh(fanout_endpoints *e, pthread_mutex_t *mu) {
  char (*eps)[FANOUT_ADDR_MAX] = calloc(FANOUT_MEMBERS_MAX, sizeof *eps);
  size_t n = 0;
  if (!eps) return -1;
  pthread_mutex_unlock(mu); /* a name server may take its time: the stream goes on meanwhile */
  int rc = fanout_endpoints_resolve(e->addr, eps, FANOUT_MEMBERS_MAX, &n, NULL, 0);
  pthread_mutex_lock(mu);
  if (rc < 0 || n == 0) {
    free(eps);
    return -1;
  }
  free(e->ep);
  e->ep = eps;
  e->n = n;
  return 0;
}

int fanout_endpoints_has(const fanout_endpoints *e, const char *ep) {
  for (size_t i = 0; i < e->n; i++)
    if (strcmp(e->ep[i], ep) == 0) return 1;
  return 0;
}

int fanout_endpoints_any_tcp(const fanout_endpoints *e) {
  for (size_t i = 0; i < e->n; i++)
    if (strncmp(e->ep[i], "unix:", 5) != 0) return 1;
  return 0;
}
