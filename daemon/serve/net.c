/* net.c -- see net.h */
#include "net.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "bfeed_types.h"

int net_tcp_listen(uv_loop_t *loop, uv_tcp_t *tcp, const char *host, uint16_t port, int backlog,
                   uv_connection_cb cb, const char *what, char *name, size_t namelen, int *inited, char *err,
                   size_t errlen) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
  char service[8];
  *inited = 0;
  snprintf(service, sizeof service, "%u", port);
  int grc = getaddrinfo(host, service, &hints, &res);
  if (grc != 0) return snprintf(err, errlen, "%s: %s", what, gai_strerror(grc)), BFEED_EINVAL;
  int rc = uv_tcp_init(loop, tcp);
  *inited = rc == 0;
  if (rc == 0) rc = uv_tcp_bind(tcp, res->ai_addr, 0);
  freeaddrinfo(res);
  if (rc == 0) rc = uv_listen((uv_stream_t *)tcp, backlog, cb);
  if (rc < 0) return snprintf(err, errlen, "cannot listen on %s: %s", what, uv_strerror(rc)), BFEED_EIO;
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

void net_unix_strerror(int uv_err, const char *path, char *err, size_t errlen) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  struct stat st;
  snprintf(err, errlen, "%s", uv_strerror(uv_err));
  if (uv_err != UV_EACCES && uv_err != UV_ENOENT) return;
  snprintf(dir, sizeof dir, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
  if (stat(dir, &st) != 0 && errno == ENOENT) snprintf(err, errlen, "folder %s does not exist", dir);
  else if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) snprintf(err, errlen, "%s is not a folder", dir);
}
