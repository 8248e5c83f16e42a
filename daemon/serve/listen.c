/* listen.c -- see listen.h */
#include "listen.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "addr.h"
#include "conn_impl.h"
#include "net.h"

#define LISTEN_BACKLOG 128
#define LISTEN_RETRY_MS 100

struct listener {
  net_stream h;
  uv_timer_t retry; /* takes a queued connection again after running out of memory */
  int handles;      /* open handles (retry, then h): freed when both are closed */
  server *s;
  listener *next;
  char name[300];      /* as asked for, or the bound TCP address */
  char unix_path[108]; /* unlinked at shutdown */
};

static void listen_on_retry(uv_timer_t *t);

static void on_connection(uv_stream_t *ls, int status) {
  listener *l = ls->data;
  if (status < 0) {
    log_warn(l->s->log, "%s: accept failed: %s", l->name, uv_strerror(status));
    return;
  }
  if (conn_accept(l->s, ls, l->h.handle.type == UV_TCP, l->name) == BFEED_ENOMEM &&
      !uv_is_active((uv_handle_t *)&l->retry))
    uv_timer_start(&l->retry, listen_on_retry, LISTEN_RETRY_MS, 0);
}

static void listen_on_retry(uv_timer_t *t) {
  listener *l = t->data;
  on_connection(&l->h.stream, 0);
}

static void on_listener_closed(uv_handle_t *h) {
  listener *l = h->data;
  if (--l->handles == 0) free(l);
}

/* A new listener, with its retry timer (which cannot fail to start). */
static listener *listen_new(server *s) {
  listener *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->s = s;
  uv_timer_init(s->loop, &l->retry);
  l->retry.data = l;
  l->handles = 1;
  return l;
}

/* Close what a listener has open; it is freed once all of it is closed. */
static void listen_discard(listener *l) {
  if (l->h.handle.type != UV_UNKNOWN_HANDLE) {
    l->handles++;
    uv_close(&l->h.handle, on_listener_closed);
  }
  uv_close((uv_handle_t *)&l->retry, on_listener_closed);
}

/* A Unix socket path left behind by a daemon that died: safe to remove only
 * if it is a socket nobody answers on. */
static int stale_socket(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int alive = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
  close(fd);
  return !alive;
}

/* The group socket_group names (a name or a number), in *gid. 0, or
 * BFEED_EINVAL with err set. */
static int listen_group(const char *name, gid_t *gid, char *err, size_t errlen) {
  char buf[4096], *end;
  struct group g, *gp = NULL;
  unsigned long n = strtoul(name, &end, 10);
  if (*name && !*end) return *gid = (gid_t)n, 0;
  if (getgrnam_r(name, &g, buf, sizeof buf, &gp) != 0 || !gp)
    return snprintf(err, errlen, "socket_group '%s': no such group", name), BFEED_EINVAL;
  *gid = gp->gr_gid;
  return 0;
}

/* A Unix listener's bind or listen failed with libuv's rc: BFEED_EIO, why in err. */
static int listen_unix_failed(const listener *l, const char *path, int rc, char *err, size_t errlen) {
  char reason[4200];
  net_unix_strerror(rc, path, reason, sizeof reason);
  return snprintf(err, errlen, "cannot listen on %s: %s%s", l->name, reason,
                  rc == UV_EADDRINUSE ? " (another bfeedd is running there?)" : ""),
         BFEED_EIO;
}

/* Bind with only the owner able to connect (umask), then open the socket
 * to socket_mode and socket_group: nobody else gets in before that. 0, or
 * BFEED_EIO with err set; a socket file bound here is removed again (one
 * that could not be bound may be another daemon's, and stays). */
static int listen_bind_private(listener *l, const char *path, char *err, size_t errlen) {
  const server_limits *lim = &l->s->limits;
  mode_t old = umask(0177);
  int rc = uv_pipe_bind(&l->h.pipe, path);
  if (rc == UV_EADDRINUSE && stale_socket(path)) {
    unlink(path);
    rc = uv_pipe_bind(&l->h.pipe, path);
  }
  umask(old);
  if (rc < 0) return listen_unix_failed(l, path, rc, err, errlen);
  gid_t gid = (gid_t)-1;
  if (lim->socket_group && listen_group(lim->socket_group, &gid, err, errlen) < 0) {
    rc = BFEED_EIO;
  } else if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) != 0) {
    snprintf(err, errlen, "cannot give %s to group %s: %s", path, lim->socket_group, strerror(errno));
    rc = BFEED_EIO;
  } else if (chmod(path, (mode_t)lim->socket_mode) != 0) {
    snprintf(err, errlen, "cannot set the mode of %s: %s", path, strerror(errno));
    rc = BFEED_EIO;
  }
  if (rc < 0) unlink(path);
  return rc;
}

static int listen_unix(listener *l, const addr_spec *a, char *err, size_t errlen) {
  int rc = uv_pipe_init(l->s->loop, &l->h.pipe, 0);
  if (rc < 0) return snprintf(err, errlen, "%s: %s", l->name, uv_strerror(rc)), BFEED_EIO;
  if ((rc = listen_bind_private(l, a->path, err, errlen)) < 0) return rc;
  if ((rc = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection)) < 0)
    return listen_unix_failed(l, a->path, rc, err, errlen);
  snprintf(l->unix_path, sizeof l->unix_path, "%s", a->path);
  return 0;
}

static int listen_tcp(listener *l, const addr_spec *a, char *err, size_t errlen) {
  char asked[sizeof l->name];
  int inited;
  snprintf(asked, sizeof asked, "%s", l->name);
  return net_tcp_listen(l->s->loop, &l->h.tcp, a->host, a->port, LISTEN_BACKLOG, on_connection, asked, l->name,
                        sizeof l->name, &inited, err, errlen);
}

static void add(server *s, listener *l) {
  l->next = s->listeners;
  s->listeners = l;
  log_info(s->log, "listening on %s", l->name);
}

int listen_add(server *s, const char *addr, char *err, size_t errlen) {
  addr_spec a;
  if (addr_parse(addr, &a, err, errlen) < 0) return BFEED_EINVAL;
  listener *l = listen_new(s);
  if (!l) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
  snprintf(l->name, sizeof l->name, "%s", addr);
  int rc = a.kind == ADDR_UNIX ? listen_unix(l, &a, err, errlen) : listen_tcp(l, &a, err, errlen);
  l->h.handle.data = l;
  if (rc < 0) {
    listen_discard(l);
    return rc;
  }
  add(s, l);
  return 0;
}

int listen_adopt_systemd(server *s, char *err, size_t errlen) {
  int n = sd_listen_fds(1);
  if (n < 0) return snprintf(err, errlen, "socket activation: %s", strerror(-n)), BFEED_EIO;
  for (int i = 0; i < n; i++) {
    int fd = SD_LISTEN_FDS_START + i, rc;
    listener *l = listen_new(s);
    if (!l) return snprintf(err, errlen, "out of memory"), BFEED_ENOMEM;
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) > 0) {
      snprintf(l->name, sizeof l->name, "systemd socket %d (unix)", fd);
      rc = uv_pipe_init(s->loop, &l->h.pipe, 0);
      if (rc == 0) rc = uv_pipe_open(&l->h.pipe, fd);
    } else if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) > 0) {
      snprintf(l->name, sizeof l->name, "systemd socket %d (tcp)", fd);
      rc = uv_tcp_init(s->loop, &l->h.tcp);
      if (rc == 0) rc = uv_tcp_open(&l->h.tcp, fd);
    } else {
      listen_discard(l);
      return snprintf(err, errlen, "socket activation: fd %d is not a listening stream socket", fd), BFEED_EINVAL;
    }
    l->h.handle.data = l;
    if (rc == 0) rc = uv_listen(&l->h.stream, LISTEN_BACKLOG, on_connection);
    if (rc < 0) {
      snprintf(err, errlen, "socket activation: fd %d: %s", fd, uv_strerror(rc));
      listen_discard(l);
      return BFEED_EIO;
    }
    add(s, l);
  }
  return n;
}

void listen_close_all(server *s) {
  for (listener *l = s->listeners; l; l = l->next) {
    if (l->unix_path[0]) unlink(l->unix_path);
    listen_discard(l);
  }
  s->listeners = NULL;
}
