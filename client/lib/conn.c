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

int conn_send(bfeed_client *c, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *msg,
              bfeed_error *err) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  if (enc) enc(&w, msg);
  int rc = msg_finish(&w, at, type, stream);
  if (rc < 0) {
    wbuf_free(&w);
    return common_err(err, rc, "cannot build a %s frame", frame_type_name(type));
  }
  pthread_mutex_lock(&c->wmu);
  rc = conn_write_all(c->fd, w.data, w.len);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  if (rc < 0)
    return common_err(err, BFEED_EIO, "sending %s to the daemon: %s", frame_type_name(type), strerror(errno));
  return 0;
}

void conn_enc_u64(wbuf *w, const void *v) { msg_u64_encode(w, *(const uint64_t *)v); }
static void conn_enc_hello(wbuf *w, const void *m) { msg_hello_encode(w, m); }

int conn_read_event(bfeed_client *c, char *why, size_t cap) {
  freader *in = &c->in;
  for (;;) {
    size_t n;
    uint8_t *p = freader_want(in, &n);
    if (!p) return snprintf(why, cap, "frame reader misused: %s", in->why), BFEED_EINTERNAL;
    ssize_t r = recv(c->fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 && freader_in_frame(in))
      return snprintf(why, cap, "the daemon closed the connection mid-frame"), BFEED_ECLOSED;
    if (r == 0) return snprintf(why, cap, "the daemon closed the connection"), BFEED_ECLOSED;
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

static int conn_open_socket(const addr_spec *a, const char *addr, bfeed_error *err) {
  if (a->kind == ADDR_UNIX) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a->path);
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

static int conn_handshake(bfeed_client *c, const char *addr, bfeed_error *err) {
  msg_hello hello = {.min_version = FRAME_VERSION_MIN, .max_version = FRAME_VERSION_MAX};
  snprintf(hello.agent, sizeof hello.agent, "%s", CLIENT_AGENT);
  int rc = conn_send(c, FRAME_HELLO, 0, conn_enc_hello, &hello, err);
  if (rc < 0) return rc;
  char why[MSG_ERROR_MAX];
  uint8_t p[FRAME_MAX_CONTROL]; /* c->in.limit: a reply cannot be longer */
  const frame_header *h = &c->in.h;
  if ((rc = conn_read_event(c, why, sizeof why)) < 0 ||
      (rc == FREADER_HEADER && (rc = conn_read_payload(c, p, h->length, why, sizeof why)) < 0))
    return common_err(err, rc, "%s: handshake failed: %s", addr, why);
  const char *w;
  if (h->type == FRAME_ERROR) {
    msg_error e;
    if (msg_error_decode(p, h->length, &e, &w) < 0) return common_err(err, BFEED_EPROTO, "%s: %s", addr, w);
    return common_err(err, e.code, "%s refused the connection: %s", addr, e.message);
  }
  msg_hello_ok ok;
  if (h->type != FRAME_HELLO_OK || msg_hello_ok_decode(p, h->length, &ok, &w) < 0)
    return common_err(err, BFEED_EPROTO, "%s: expected HELLO_OK, got a malformed or %s frame", addr,
                      frame_type_name(h->type));
  if (ok.version < FRAME_VERSION_MIN || ok.version > FRAME_VERSION_MAX)
    return common_err(err, BFEED_EVERSION, "%s chose protocol %u, this client speaks %u..%u", addr, ok.version,
                      FRAME_VERSION_MIN, FRAME_VERSION_MAX);
  c->version = ok.version;
  c->max_frame = ok.max_frame < FRAME_MAX_PAYLOAD ? ok.max_frame : FRAME_MAX_PAYLOAD;
  c->in.limit = c->max_frame;
  snprintf(c->server, sizeof c->server, "%s", ok.server);
  return 0;
}

BFEED_API int bfeed_connect(const char *addr, bfeed_client **out, bfeed_error *err) {
  addr_spec a;
  char why[256];
  *out = NULL;
  if (!addr || addr_parse(addr, &a, why, sizeof why) < 0)
    return common_err(err, BFEED_EINVAL, "%s", addr ? why : "no address given");
  int fd = conn_open_socket(&a, addr, err);
  if (fd < 0) return fd;
  bfeed_client *c = calloc(1, sizeof *c);
  if (!c || freader_init(&c->in, FRAME_MAX_CONTROL) < 0 || !(c->cache = bufpool_new(8))) {
    close(fd);
    if (c) freader_free(&c->in);
    free(c);
    return common_err(err, BFEED_ENOMEM, "out of memory");
  }
  c->fd = fd;
  c->max_frame = FRAME_MAX_CONTROL;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_mutex_init(&c->wmu, NULL);
  pthread_mutex_init(&c->stats_mu, NULL);
  int rc = conn_handshake(c, addr, err);
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
  shutdown(c->fd, SHUT_RDWR); /* wakes the reader */
  if (c->reader_running) pthread_join(c->reader, NULL);
  close(c->fd);
  while (c->streams) {
    bfeed_stream *s = c->streams;
    c->streams = s->next;
    stream_free(s);
  }
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->wmu);
  pthread_mutex_destroy(&c->stats_mu);
  free(c->report);
  freader_free(&c->in);
  bufpool_unref(c->cache);
  free(c);
}

BFEED_API uint32_t bfeed_client_version(const bfeed_client *c) { return c->version; }
BFEED_API const char *bfeed_client_server(const bfeed_client *c) { return c->server; }
