/* itest_raw.c -- see itest_util.h: raw protocol sockets, for clients that
 * misbehave on purpose. */
#include "itest_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "freader.h"
#include "msg.h"

#define ITEST_READ_TIMEOUT_S 10

int itest_raw_connect(const char *addr) {
  addr_spec a;
  char why[128];
  if (addr_parse(addr, &a, why, sizeof why) < 0) return -1;
  int fd;
  if (a.kind == ADDR_UNIX) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a.path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      close(fd);
      fd = -1;
    }
  } else {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(a.port)};
    /* The suite only listens on the IPv4 loopback. */
    if (strcmp(a.host, "127.0.0.1") != 0) return -1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      close(fd);
      fd = -1;
    }
  }
  if (fd >= 0) {
    struct timeval tv = {ITEST_READ_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  return fd;
}

int itest_raw_write(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n > 0) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return BFEED_EIO;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* One recv: the bytes read, 0 at end of file or a reset, BFEED_EIO on a
 * timeout or another error. */
static ssize_t raw_recv_some(int fd, void *p, size_t n) {
  for (;;) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno == ECONNRESET ? 0 : BFEED_EIO;
    return r;
  }
}

/* Bytes from fd into where r wants them, until they make an event:
 * FREADER_HEADER or FREADER_FRAME, or an error (BFEED_ECLOSED at end of
 * file, BFEED_EIO on a timeout, or r's verdict on the bytes). */
static int raw_pull(int fd, freader *r) {
  for (;;) {
    size_t n;
    uint8_t *at = freader_want(r, &n);
    if (!at) return BFEED_EINVAL;
    ssize_t k = raw_recv_some(fd, at, n);
    if (k <= 0) return k == 0 ? BFEED_ECLOSED : (int)k;
    int ev = freader_got(r, (size_t)k);
    if (ev != FREADER_MORE) return ev;
  }
}

int itest_raw_send(int fd, int type, uint32_t stream, const void *payload, uint32_t len) {
  uint8_t hdr[FRAME_HEADER_SIZE];
  frame_header h;
  frame_header_init(&h, type, stream, payload, len);
  frame_header_encode(&h, hdr);
  int rc = itest_raw_write(fd, hdr, sizeof hdr);
  return rc == 0 && len ? itest_raw_write(fd, payload, len) : rc;
}

int itest_raw_recv(int fd, frame_header *h, uint8_t **payload) {
  freader r;
  *payload = NULL;
  int rc = freader_init(&r, FRAME_MAX_PAYLOAD);
  if (rc == 0) rc = raw_pull(fd, &r);
  if (rc == FREADER_HEADER) { /* a payload follows: all of it in one place */
    *payload = malloc(r.h.length);
    rc = *payload ? freader_payload(&r, *payload, r.h.length) : BFEED_ENOMEM;
    if (rc == 0) rc = raw_pull(fd, &r);
  }
  if (rc == FREADER_FRAME) *h = r.h;
  freader_free(&r);
  if (rc == FREADER_FRAME) return 0;
  free(*payload);
  *payload = NULL;
  return rc < 0 ? rc : BFEED_EPROTO;
}

int itest_raw_send_msg(int fd, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *m) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  enc(&w, m);
  int rc = msg_finish(&w, at, type, stream);
  if (rc == 0) rc = itest_raw_write(fd, w.data, w.len);
  wbuf_free(&w);
  return rc;
}

static void enc_hello(wbuf *w, const void *m) { msg_hello_encode(w, m); }
static void enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }

int itest_raw_hello_as(int fd, const char *agent, const char *token, char *msg, size_t cap) {
  msg_hello m = {.min_version = FRAME_VERSION_MIN, .max_version = FRAME_VERSION_MAX};
  snprintf(m.agent, sizeof m.agent, "%s", agent);
  snprintf(m.token, sizeof m.token, "%s", token ? token : "");
  int rc = itest_raw_send_msg(fd, FRAME_HELLO, 0, enc_hello, &m);
  frame_header h;
  uint8_t *p;
  if (rc == 0) rc = itest_raw_recv(fd, &h, &p);
  if (rc < 0) return rc;
  msg_hello_ok ok;
  msg_error e;
  char why[256] = "";
  if (h.type == FRAME_ERROR && msg_error_decode(p, h.length, &e, why, sizeof why) == 0) {
    snprintf(msg, cap, "%s", e.message);
    rc = e.code < 0 ? e.code : BFEED_EPROTO;
  } else if (h.type != FRAME_HELLO_OK || msg_hello_ok_decode(p, h.length, &ok, why, sizeof why) < 0) {
    rc = BFEED_EPROTO;
  }
  free(p);
  return rc;
}

int itest_raw_hello(int fd) {
  char msg[MSG_ERROR_MAX];
  return itest_raw_hello_as(fd, "bfeed-itest-raw", NULL, msg, sizeof msg);
}

int itest_raw_open(int fd, uint32_t id, const char *dataset, const bfeed_stream_opts *o) {
  msg_open m;
  memset(&m, 0, sizeof m);
  snprintf(m.dataset, sizeof m.dataset, "%s", dataset);
  m.opts = *o;
  /* AUTO is libbfeed's to resolve (bfeed_types.h); on the wire, as over a
   * Unix socket, it is none. */
  if (m.opts.codec == BFEED_CODEC_AUTO) m.opts.codec = BFEED_CODEC_NONE;
  return itest_raw_send_msg(fd, FRAME_OPEN, id, enc_open, &m);
}

int itest_raw_expect(int fd, int type, frame_header *h, uint8_t **payload) {
  for (;;) {
    int rc = itest_raw_recv(fd, h, payload);
    if (rc < 0 || h->type == type) return rc;
    free(*payload);
    *payload = NULL;
  }
}

int itest_raw_expect_error(int fd, uint32_t *stream, int *code, char *msg, size_t cap) {
  frame_header h;
  uint8_t *p;
  int rc = itest_raw_expect(fd, FRAME_ERROR, &h, &p);
  if (rc < 0) return rc;
  msg_error e;
  char why[256] = "";
  rc = msg_error_decode(p, h.length, &e, why, sizeof why);
  free(p);
  if (rc < 0) return rc;
  *stream = h.stream;
  *code = e.code;
  snprintf(msg, cap, "%s", e.message);
  return 0;
}

int itest_raw_drain_to_eof(int fd) {
  uint8_t buf[65536];
  ssize_t r;
  while ((r = raw_recv_some(fd, buf, sizeof buf)) > 0) {
  }
  return (int)r;
}
