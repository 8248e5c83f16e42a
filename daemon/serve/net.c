/* net.c -- see net.h */
#include "net.h"

#include <netdb.h>
#include <stdio.h>

int net_tcp_bind(uv_loop_t *loop, uv_tcp_t *tcp, const char *host, uint16_t port, const char *what,
                 char *name, size_t namelen, int *inited, char *err, size_t errlen) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
  char service[8];
  *inited = 0;
  snprintf(service, sizeof service, "%u", port);
  int grc = getaddrinfo(host, service, &hints, &res);
  if (grc != 0) return snprintf(err, errlen, "%s: %s", what, gai_strerror(grc)), UV_EINVAL;
  int rc = uv_tcp_init(loop, tcp);
  *inited = rc == 0;
  if (rc == 0) rc = uv_tcp_bind(tcp, res->ai_addr, 0);
  freeaddrinfo(res);
  if (rc < 0) return snprintf(err, errlen, "cannot listen on %s: %s", what, uv_strerror(rc)), rc;
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char addr[64] = "?";
  uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &len);
  if (ss.ss_family == AF_INET6) {
    uv_ip6_name((struct sockaddr_in6 *)&ss, addr, sizeof addr);
    snprintf(name, namelen, "[%s]:%u", addr, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
  } else {
    uv_ip4_name((struct sockaddr_in *)&ss, addr, sizeof addr);
    snprintf(name, namelen, "%s:%u", addr, ntohs(((struct sockaddr_in *)&ss)->sin_port));
  }
  return 0;
}
