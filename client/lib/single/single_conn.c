/*
 * single_conn.c -- a single client's socket: connecting, the version
 * handshake, writing frames (any thread, one at a time) and reading frame
 * events through the connection's freader (the handshake, then the reader
 * thread, single_reader.c). Locking: single.h.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "frame.h"
#include "single.h"

static int single_conn_write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int single_conn_frame(wbuf *w, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *msg, char *err,
                      size_t errlen) {
  size_t at = msg_begin(w);
  if (enc) enc(w, msg);
  int rc = msg_finish(w, at, type, stream);
  return rc < 0 ? api_err(err, errlen, rc, "cannot build a %s frame", frame_type_name(type)) : 0;
}

int single_conn_write_locked(single_client *c, const wbuf *w, const char *what, char *err, size_t errlen) {
  if (c->fd >= 0 && single_conn_write_all(c->fd, w->data, w->len) == 0) return 0;
  int e = c->fd >= 0 ? errno : ENOTCONN;
  /* A socket that failed one write is done with: shut it down so that the
   * reader thread sees it too, reconnects or reports it. */
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&c->fdmu);
  return api_err(err, errlen, BFEED_EIO, "sending %s to the daemon: %s", what, strerror(e));
}

int single_conn_send(single_client *c, uint64_t gen, int type, uint32_t stream, void (*enc)(wbuf *, const void *),
                     const void *msg, char *err, size_t errlen) {
  wbuf w;
  wbuf_init(&w);
  int rc = single_conn_frame(&w, type, stream, enc, msg, err, errlen);
  pthread_mutex_lock(&c->wmu);
  if (rc == 0 && (!c->ready || (gen && gen != c->gen)))
    rc = api_err(err, errlen, BFEED_ECLOSED, "not sent: the connection to the daemon is being replaced");
  else if (rc == 0)
    rc = single_conn_write_locked(c, &w, frame_type_name(type), err, errlen);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  return rc;
}

void single_conn_enc_u64(wbuf *w, const void *v) { msg_u64_encode(w, *(const uint64_t *)v); }
static void single_conn_enc_hello(wbuf *w, const void *m) { msg_hello_encode(w, m); }

/* recv(), keeping a descriptor the daemon attached (SHM_RING's memfd) in
 * c->passed_fd for the frame that carries it; any before it is closed, so
 * a daemon cannot pile descriptors up in the client. */
static ssize_t single_conn_recv(single_client *c, void *p, size_t n) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } ctl;
  struct iovec iov = {p, n};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  ssize_t r = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
  for (struct cmsghdr *cm = r >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      if (c->passed_fd >= 0) close(c->passed_fd);
      c->passed_fd = fd;
    }
  }
  return r;
}

int single_conn_read_event(single_client *c, char *err, size_t errlen) {
  freader *in = &c->in;
  for (;;) {
    size_t n;
    uint8_t *p = freader_want(in, &n);
    if (!p) return api_err(err, errlen, BFEED_EINTERNAL, "frame reader misused: %s", in->why);
    ssize_t r = single_conn_recv(c, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 && freader_in_frame(in))
      return api_err(err, errlen, BFEED_ECLOSED, "the daemon closed the connection mid-frame");
    if (r == 0) return api_err(err, errlen, BFEED_ECLOSED, "the daemon closed the connection");
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) /* the handshake's time limit */
      return api_err(err, errlen, BFEED_EIO, "the daemon did not answer in time");
    if (r < 0) return api_err(err, errlen, BFEED_EIO, "reading from the daemon: %s", strerror(errno));
    int ev = freader_got(in, (size_t)r);
    if (ev == BFEED_ECHECKSUM)
      return api_err(err, errlen, ev, "%s frame failed its checksum (corrupted in transit?)",
                     frame_type_name(in->h.type));
    if (ev < 0) return api_err(err, errlen, ev, "bad frame from the daemon: %s", in->why);
    if (ev != FREADER_MORE) return ev;
  }
}

int single_conn_read_payload(single_client *c, void *dst, size_t n, char *err, size_t errlen) {
  if (n == 0) return 0; /* an empty payload came whole with its header */
  int rc = freader_payload(&c->in, dst, n);
  if (rc == 0) rc = single_conn_read_event(c, err, errlen);
  else api_err(err, errlen, rc, "frame reader misused: %s", c->in.why);
  return rc < 0 ? rc : 0;
}

void single_conn_mark_dead(single_client *c, int code, const char *msg) {
  pthread_mutex_lock(&c->base.mu);
  if (!c->dead) {
    c->dead = 1;
    c->dead_code = code;
    snprintf(c->dead_msg, sizeof c->dead_msg, "%s", msg);
  }
  pthread_cond_broadcast(&c->base.cv);
  pthread_mutex_unlock(&c->base.mu);
}

/* Bound how long connect() and reads may block (0: no bound). */
static void single_conn_set_timeouts(int fd, int ms) {
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static int single_conn_open_socket(const addr_spec *a, const char *addr, int attempt_ms, char *err, size_t errlen) {
  if (a->kind == ADDR_UNIX) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a->path);
    if (fd >= 0) single_conn_set_timeouts(fd, attempt_ms);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      int e = errno;
      if (fd >= 0) close(fd);
      return api_err(err, errlen, BFEED_ECONNECT, "cannot connect to %s: %s%s", addr, strerror(e),
                     e == ENOENT || e == ECONNREFUSED ? " (is bfeedd running and listening there?)" : "");
    }
    return fd;
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
  char port[8];
  snprintf(port, sizeof port, "%u", a->port);
  int grc = getaddrinfo(a->host, port, &hints, &res);
  if (grc != 0) return api_err(err, errlen, BFEED_ECONNECT, "cannot resolve %s: %s", addr, gai_strerror(grc));
  int fd = -1, e = 0;
  for (ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd >= 0) single_conn_set_timeouts(fd, attempt_ms);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
      e = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    return api_err(err, errlen, BFEED_ECONNECT, "cannot connect to %s: %s%s", addr, strerror(e),
                   e == ECONNREFUSED ? " (is bfeedd running and listening there?)" : "");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int single_conn_handshake(single_client *c, char *err, size_t errlen) {
  const char *addr = c->addr;
  msg_hello hello = {.min_version = FRAME_VERSION_MIN, .max_version = FRAME_VERSION_MAX};
  snprintf(hello.agent, sizeof hello.agent, "%s", SINGLE_AGENT);
  snprintf(hello.token, sizeof hello.token, "%s", c->token);
  wbuf w;
  wbuf_init(&w);
  int rc = single_conn_frame(&w, FRAME_HELLO, 0, single_conn_enc_hello, &hello, err, errlen);
  if (rc < 0) return wbuf_free(&w), rc;
  /* A daemon that refuses at once (over max_clients) sends its ERROR and
   * hangs up, maybe before our HELLO is out: the write then fails (EPIPE),
   * and the answer already waiting is still read, and reported, first. */
  pthread_mutex_lock(&c->wmu);
  int wrote = single_conn_write_all(c->fd, w.data, w.len), werr = errno;
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  char reason[MSG_ERROR_MAX];
  uint8_t p[FRAME_MAX_CONTROL]; /* c->in.limit: a reply cannot be longer */
  const frame_header *h = &c->in.h;
  if ((rc = single_conn_read_event(c, reason, sizeof reason)) < 0 ||
      (rc == FREADER_HEADER && (rc = single_conn_read_payload(c, p, h->length, reason, sizeof reason)) < 0)) {
    if (wrote < 0) return api_err(err, errlen, BFEED_EIO, "%s: sending HELLO: %s", addr, strerror(werr));
    return api_err(err, errlen, rc, "%s: handshake failed: %s", addr, reason);
  }
  char wy[MSG_ERROR_MAX];
  if (h->type == FRAME_ERROR) {
    msg_error e;
    if (msg_error_decode(p, h->length, &e, wy, sizeof wy) < 0)
      return api_err(err, errlen, BFEED_EPROTO, "%s: %s", addr, wy);
    return api_err(err, errlen, e.code, "%s refused the connection: %s", addr, e.message);
  }
  msg_hello_ok ok;
  if (h->type != FRAME_HELLO_OK || msg_hello_ok_decode(p, h->length, &ok, wy, sizeof wy) < 0)
    return api_err(err, errlen, BFEED_EPROTO, "%s: expected HELLO_OK, got a malformed or %s frame", addr,
                   frame_type_name(h->type));
  if (ok.version < FRAME_VERSION_MIN || ok.version > FRAME_VERSION_MAX)
    return api_err(err, errlen, BFEED_EVERSION, "%s chose protocol %u, this client speaks %u..%u", addr, ok.version,
                   FRAME_VERSION_MIN, FRAME_VERSION_MAX);
  c->in.limit = ok.max_frame < FRAME_MAX_PAYLOAD ? ok.max_frame : FRAME_MAX_PAYLOAD;
  if (c->gen == 0) { /* what bfeed_client_version/server say: the first daemon's, never rewritten */
    c->base.version = ok.version;
    snprintf(c->base.server, sizeof c->base.server, "%s", ok.server);
  }
  return 0;
}

void single_conn_abort(single_client *c) {
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&c->fdmu);
}

void single_conn_drop_locked(single_client *c) {
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) {
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
  }
  c->fd = -1;
  pthread_mutex_unlock(&c->fdmu);
}

int single_conn_establish(single_client *c, int attempt_ms, char *err, size_t errlen) {
  int fd = single_conn_open_socket(&c->where, c->addr, attempt_ms, err, errlen);
  if (fd < 0) return fd;
  pthread_mutex_lock(&c->wmu);
  pthread_mutex_lock(&c->fdmu);
  c->fd = fd;
  pthread_mutex_unlock(&c->fdmu);
  pthread_mutex_unlock(&c->wmu);
  /* A fresh frame reader: the last connection may have ended mid-frame. */
  freader_free(&c->in);
  if (c->passed_fd >= 0) close(c->passed_fd); /* the lost connection's */
  c->passed_fd = -1;
  int rc = freader_init(&c->in, FRAME_MAX_CONTROL) < 0 ? api_err(err, errlen, BFEED_ENOMEM, "out of memory")
                                                       : single_conn_handshake(c, err, errlen);
  if (rc == 0) single_conn_set_timeouts(fd, 0); /* from now on the reader waits as long as batches take */
  return rc;
}
