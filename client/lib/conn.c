/*
 * conn.c -- libbfeed's socket: connecting, the version handshake, writing
 * frames (any thread, one at a time) and reading frame events through the
 * connection's freader (the handshake, then the reader thread).
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
#include "client.h"
#include "frame.h"
#include "token.h"

static int conn_write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int conn_frame(wbuf *w, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *msg,
               bfeed_error *err) {
  size_t at = msg_begin(w);
  if (enc) enc(w, msg);
  int rc = msg_finish(w, at, type, stream);
  return rc < 0 ? common_err(err, rc, "cannot build a %s frame", frame_type_name(type)) : 0;
}

int conn_write_locked(bfeed_client *c, const wbuf *w, const char *what, bfeed_error *err) {
  if (c->fd >= 0 && conn_write_all(c->fd, w->data, w->len) == 0) return 0;
  int e = c->fd >= 0 ? errno : ENOTCONN;
  /* A socket that failed one write is done with: shut it down so that the
   * reader thread sees it too, reconnects or reports it. */
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&c->fdmu);
  return common_err(err, BFEED_EIO, "sending %s to the daemon: %s", what, strerror(e));
}

int conn_send(bfeed_client *c, uint64_t gen, int type, uint32_t stream, void (*enc)(wbuf *, const void *),
              const void *msg, bfeed_error *err) {
  wbuf w;
  wbuf_init(&w);
  int rc = conn_frame(&w, type, stream, enc, msg, err);
  pthread_mutex_lock(&c->wmu);
  if (rc == 0 && (!c->ready || (gen && gen != c->gen)))
    rc = common_err(err, BFEED_ECLOSED, "not sent: the connection to the daemon is being replaced");
  else if (rc == 0)
    rc = conn_write_locked(c, &w, frame_type_name(type), err);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  return rc;
}

void conn_enc_u64(wbuf *w, const void *v) { msg_u64_encode(w, *(const uint64_t *)v); }
static void conn_enc_hello(wbuf *w, const void *m) { msg_hello_encode(w, m); }

/* recv(), keeping a descriptor the daemon attached (SHM_RING's memfd) in
 * c->passed_fd for the frame that carries it; any before it is closed, so
 * a daemon cannot pile descriptors up in the client. */
static ssize_t conn_recv(bfeed_client *c, void *p, size_t n) {
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

int conn_read_event(bfeed_client *c, char *why, size_t cap) {
  freader *in = &c->in;
  for (;;) {
    size_t n;
    uint8_t *p = freader_want(in, &n);
    if (!p) return snprintf(why, cap, "frame reader misused: %s", in->why), BFEED_EINTERNAL;
    ssize_t r = conn_recv(c, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 && freader_in_frame(in))
      return snprintf(why, cap, "the daemon closed the connection mid-frame"), BFEED_ECLOSED;
    if (r == 0) return snprintf(why, cap, "the daemon closed the connection"), BFEED_ECLOSED;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) /* the handshake's time limit */
      return snprintf(why, cap, "the daemon did not answer in time"), BFEED_EIO;
    if (r < 0) return snprintf(why, cap, "reading from the daemon: %s", strerror(errno)), BFEED_EIO;
    int ev = freader_got(in, (size_t)r);
    if (ev == BFEED_ECHECKSUM)
      return snprintf(why, cap, "%s frame failed its checksum (corrupted in transit?)", frame_type_name(in->h.type)), ev;
    if (ev < 0) return snprintf(why, cap, "bad frame from the daemon: %s", in->why), ev;
    if (ev != FREADER_MORE) return ev;
  }
}

int conn_read_payload(bfeed_client *c, void *dst, size_t n, char *why, size_t cap) {
  if (n == 0) return 0; /* an empty payload came whole with its header */
  int rc = freader_payload(&c->in, dst, n);
  if (rc == 0) rc = conn_read_event(c, why, cap);
  else snprintf(why, cap, "frame reader misused: %s", c->in.why);
  return rc < 0 ? rc : 0;
}

void conn_mark_dead(bfeed_client *c, int code, const char *msg) {
  pthread_mutex_lock(&c->mu);
  if (!c->dead) {
    c->dead = 1;
    c->dead_code = code;
    snprintf(c->dead_msg, sizeof c->dead_msg, "%s", msg);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

int conn_lock_enter(bfeed_client *c, bfeed_error *err) {
  pthread_mutex_lock(&c->mu);
  if (c->closing) {
    pthread_mutex_unlock(&c->mu);
    return common_err(err, BFEED_ECLOSED, "the client is being closed (bfeed_close)");
  }
  c->busy++;
  return 0;
}

void conn_leave(bfeed_client *c) {
  if (--c->busy == 0 && c->closing) pthread_cond_broadcast(&c->cv);
}

/* Bound how long connect() and reads may block (0: no bound). */
static void conn_set_timeouts(int fd, int ms) {
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static int conn_open_socket(const addr_spec *a, const char *addr, int attempt_ms, bfeed_error *err) {
  if (a->kind == ADDR_UNIX) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a->path);
    if (fd >= 0) conn_set_timeouts(fd, attempt_ms);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      int e = errno;
      if (fd >= 0) close(fd);
      return common_err(err, BFEED_ECONNECT, "cannot connect to %s: %s%s", addr, strerror(e),
                        e == ENOENT || e == ECONNREFUSED ? " (is bfeedd running and listening there?)" : "");
    }
    return fd;
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
  char port[8];
  snprintf(port, sizeof port, "%u", a->port);
  int grc = getaddrinfo(a->host, port, &hints, &res);
  if (grc != 0) return common_err(err, BFEED_ECONNECT, "cannot resolve %s: %s", addr, gai_strerror(grc));
  int fd = -1, e = 0;
  for (ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd >= 0) conn_set_timeouts(fd, attempt_ms);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
      e = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0)
    return common_err(err, BFEED_ECONNECT, "cannot connect to %s: %s%s", addr, strerror(e),
                      e == ECONNREFUSED ? " (is bfeedd running and listening there?)" : "");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int conn_handshake(bfeed_client *c, bfeed_error *err) {
  const char *addr = c->addr;
  msg_hello hello = {.min_version = FRAME_VERSION_MIN, .max_version = FRAME_VERSION_MAX};
  snprintf(hello.agent, sizeof hello.agent, "%s", CLIENT_AGENT);
  snprintf(hello.token, sizeof hello.token, "%s", c->token);
  wbuf w;
  wbuf_init(&w);
  int rc = conn_frame(&w, FRAME_HELLO, 0, conn_enc_hello, &hello, err);
  pthread_mutex_lock(&c->wmu);
  if (rc == 0) rc = conn_write_locked(c, &w, "HELLO", err);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  if (rc < 0) return rc;
  char why[MSG_ERROR_MAX];
  uint8_t p[FRAME_MAX_CONTROL]; /* c->in.limit: a reply cannot be longer */
  const frame_header *h = &c->in.h;
  if ((rc = conn_read_event(c, why, sizeof why)) < 0 ||
      (rc == FREADER_HEADER && (rc = conn_read_payload(c, p, h->length, why, sizeof why)) < 0))
    return common_err(err, rc, "%s: handshake failed: %s", addr, why);
  const char *wy;
  if (h->type == FRAME_ERROR) {
    msg_error e;
    if (msg_error_decode(p, h->length, &e, &wy) < 0) return common_err(err, BFEED_EPROTO, "%s: %s", addr, wy);
    return common_err(err, e.code, "%s refused the connection: %s", addr, e.message);
  }
  msg_hello_ok ok;
  if (h->type != FRAME_HELLO_OK || msg_hello_ok_decode(p, h->length, &ok, &wy) < 0)
    return common_err(err, BFEED_EPROTO, "%s: expected HELLO_OK, got a malformed or %s frame", addr,
                      frame_type_name(h->type));
  if (ok.version < FRAME_VERSION_MIN || ok.version > FRAME_VERSION_MAX)
    return common_err(err, BFEED_EVERSION, "%s chose protocol %u, this client speaks %u..%u", addr, ok.version,
                      FRAME_VERSION_MIN, FRAME_VERSION_MAX);
  c->in.limit = ok.max_frame < FRAME_MAX_PAYLOAD ? ok.max_frame : FRAME_MAX_PAYLOAD;
  if (c->gen == 0) { /* what bfeed_client_version/server say: the first daemon's, never rewritten */
    c->version = ok.version;
    snprintf(c->server, sizeof c->server, "%s", ok.server);
  }
  return 0;
}

void conn_abort(bfeed_client *c) {
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&c->fdmu);
}

void conn_drop_locked(bfeed_client *c) {
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) {
    shutdown(c->fd, SHUT_RDWR);
    close(c->fd);
  }
  c->fd = -1;
  pthread_mutex_unlock(&c->fdmu);
}

int conn_establish(bfeed_client *c, int attempt_ms, bfeed_error *err) {
  int fd = conn_open_socket(&c->where, c->addr, attempt_ms, err);
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
  int rc = freader_init(&c->in, FRAME_MAX_CONTROL) < 0 ? common_err(err, BFEED_ENOMEM, "out of memory")
                                                        : conn_handshake(c, err);
  if (rc == 0) conn_set_timeouts(fd, 0); /* from now on the reader waits as long as batches take */
  return rc;
}

BFEED_API void bfeed_connect_opts_init(bfeed_connect_opts *o) {
  memset(o, 0, sizeof *o);
  o->reconnect = 1;
  o->reconnect_deadline = 60;
  o->stall_timeout = 10;
  o->shm = 1;
}

/* The token in a file (proto/token.c: the rule bfeedd reads its
 * auth_token_file by). what says where the path came from. */
static int conn_token_file(bfeed_client *c, const char *path, const char *what, bfeed_error *err) {
  char why[160];
  if (token_read_file(path, c->token, sizeof c->token, why, sizeof why) < 0)
    return common_err(err, BFEED_EINVAL, "%s %s: %s", what, path, why);
  return 0;
}

static int conn_opts_apply(bfeed_client *c, const bfeed_connect_opts *o, bfeed_error *err) {
  bfeed_connect_opts def;
  if (!o) bfeed_connect_opts_init(&def), o = &def;
  if (!(o->reconnect_deadline > 0 && o->reconnect_deadline <= 1e7))
    return common_err(err, BFEED_EINVAL, "reconnect_deadline %g: expected seconds, more than 0 and at most 1e7",
                      o->reconnect_deadline);
  if (!(o->stall_timeout > 0 && o->stall_timeout <= 1e7))
    return common_err(err, BFEED_EINVAL, "stall_timeout %g: expected seconds, more than 0 and at most 1e7",
                      o->stall_timeout);
  c->reconnect = o->reconnect != 0;
  c->deadline_ns = (uint64_t)(o->reconnect_deadline * 1e9);
  const char *shm_env = getenv("BFEED_SHM");
  c->shm = o->shm != 0 && !(shm_env && strcmp(shm_env, "0") == 0);
  const char *env = getenv("BFEED_TOKEN_FILE");
  if (o->token && (!*o->token || strlen(o->token) >= sizeof c->token))
    return common_err(err, BFEED_EINVAL, "token: expected 1 to %zu bytes, got %zu", sizeof c->token - 1,
                      strlen(o->token));
  if (o->token) snprintf(c->token, sizeof c->token, "%s", o->token);
  else if (o->token_file) return conn_token_file(c, o->token_file, "token file", err);
  else if (env && *env) return conn_token_file(c, env, "BFEED_TOKEN_FILE", err);
  return 0;
}

BFEED_API int bfeed_connect(const char *addr, bfeed_client **out, bfeed_error *err) {
  return bfeed_connect2(addr, NULL, out, err);
}

BFEED_API int bfeed_connect2(const char *addr, const bfeed_connect_opts *o, bfeed_client **out, bfeed_error *err) {
  char why[256];
  *out = NULL;
  bfeed_client *c = calloc(1, sizeof *c);
  if (!c || freader_init(&c->in, FRAME_MAX_CONTROL) < 0 || !(c->cache = bufpool_new(8))) {
    if (c) freader_free(&c->in);
    free(c);
    return common_err(err, BFEED_ENOMEM, "out of memory");
  }
  c->fd = -1;
  c->passed_fd = -1;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* reconnect.c's waits */
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&c->wmu, NULL);
  pthread_mutex_init(&c->fdmu, NULL);
  pthread_mutex_init(&c->stats_mu, NULL);
  int rc = 0;
  if (addr && strlen(addr) < sizeof c->pool->addr && strchr(addr, ',') && (rc = conn_opts_apply(c, o, err)) == 0 &&
      (rc = pool_connect(c, addr, o, err)) == 1) { /* several endpoints: no socket of its own */
    snprintf(c->addr, sizeof c->addr, "%.*s", (int)sizeof c->addr - 1, addr);
    *out = c;
    return 0;
  }
  if (rc < 0) {
    bfeed_close(c);
    return rc;
  }
  if (!addr || strlen(addr) >= sizeof c->addr || addr_parse(addr, &c->where, why, sizeof why) < 0)
    rc = common_err(err, BFEED_EINVAL, "%s",
                    !addr ? "no address given" : strlen(addr) >= sizeof c->addr ? "address too long" : why);
  else
    rc = conn_opts_apply(c, o, err);
  if (rc == 0 && (rc = pool_connect(c, addr, o, err)) == 1) { /* a name standing for several daemons */
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    *out = c;
    return 0;
  }
  if (rc == 0) {
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    rc = conn_establish(c, CLIENT_ATTEMPT_MAX_MS, err);
  }
  c->gen = 1;
  c->ready = 1;
  if (rc == 0 && (rc = -pthread_create(&c->reader, NULL, reader_main, c)) < 0)
    rc = common_err(err, BFEED_ENOMEM, "cannot start the reader thread: %s", strerror(-rc));
  if (rc < 0) {
    bfeed_close(c);
    return rc;
  }
  c->reader_running = 1;
  *out = c;
  return 0;
}

BFEED_API void bfeed_close(bfeed_client *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  c->closing = 1;
  pthread_cond_broadcast(&c->cv); /* waiters give up, a reconnect stops */
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_lock(&c->fdmu);
  if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR); /* wakes the reader and blocked writers */
  pthread_mutex_unlock(&c->fdmu);
  if (c->reader_running) pthread_join(c->reader, NULL);
  pthread_mutex_lock(&c->mu);
  while (c->busy > 0) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  /* A batch released on another thread may be sending its ACK: wait it
   * out, and no more (shm.c). */
  for (bfeed_stream *s = c->streams; s; s = s->next_stream) shm_forget(s->shm);
  conn_drop_locked(c); /* nobody else is left to hold wmu */
  if (c->passed_fd >= 0) close(c->passed_fd);
  while (c->streams) {
    bfeed_stream *s = c->streams;
    c->streams = s->next_stream;
    stream_free(s);
  }
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->wmu);
  pthread_mutex_destroy(&c->fdmu);
  pthread_mutex_destroy(&c->stats_mu);
  free(c->report);
  pool_free(c->pool);
  freader_free(&c->in);
  bufpool_unref(c->cache);
  free(c);
}

BFEED_API uint32_t bfeed_client_version(const bfeed_client *c) { return c->version; }
BFEED_API const char *bfeed_client_server(const bfeed_client *c) { return c->server; }
BFEED_API uint64_t bfeed_client_reconnects(bfeed_client *c) {
  pthread_mutex_lock(&c->mu);
  uint64_t n = c->reconnects;
  pthread_mutex_unlock(&c->mu);
  return n;
}
