/*
 * client.c -- libbfeed: connection, handshake, streams, prefetch.
 *
 * One background thread per connection reads frames, checks them, and
 * decompresses batches into per-stream queues; the caller's threads only
 * wait on a condition variable and write small control frames. The daemon
 * bounds how far ahead it runs (the window), so the queues are bounded too.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <zstd.h>

#include "addr.h"
#include "bf16.h"
#include "bufpool.h"
#include "bfeed.h"
#include "frame.h"
#include "msg.h"
#include "report.h"

#define AGENT "libbfeed/0.1.0"

struct bfeed_batch {
  uint64_t epoch, index, seq;
  int ntensors;
  msg_tensor t[MSG_MAX_TENSORS];
  bufpool *cache;    /* where mem goes back */
  uint8_t *mem;       /* what to give back */
  size_t mem_cap;
  const uint8_t *raw; /* tensors, 64-byte aligned */
  size_t raw_size, wire_bytes;
  bfeed_batch *next;
};

struct bfeed_stream {
  bfeed_client *c;
  uint32_t id;
  bfeed_stream_info info;
  /* under c->mu */
  int state;          /* 0 opening, 1 open, -1 failed */
  int err_code;
  char err_msg[MSG_ERROR_MAX];
  bfeed_batch *head, *tail;
  int ended;
  uint64_t consumed;
  int stats_ready;
  msg_counter stats[MSG_MAX_COUNTERS];
  size_t nstats;
  bfeed_stream *next;
};

struct bfeed_client {
  int fd;
  pthread_t reader;
  int reader_running;
  pthread_mutex_t mu; /* streams, their queues, dead */
  pthread_cond_t cv;
  pthread_mutex_t wmu; /* one writer at a time */
  uint32_t version, max_frame;
  char server[MSG_NAME_MAX];
  uint32_t next_id;
  bfeed_stream *streams;
  bufpool *cache;
  int dead, dead_code;
  char dead_msg[MSG_ERROR_MAX];
  /* daemon-wide statistics: one request at a time */
  pthread_mutex_t stats_mu;
  uint8_t *report;  /* the STATS payload for stream 0, once it came */
  size_t report_len;
  int report_ready;
};

/* A daemon-wide report can be larger than a control frame. */
#define CLIENT_MAX_REPORT (16u << 20)

static int set_err(bfeed_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_err(bfeed_error *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

BFEED_API uint16_t bfeed_bf16_from_f32(float f) { return bf16_from_f32(f); }
BFEED_API float bfeed_bf16_to_f32(uint16_t h) { return bf16_to_f32(h); }

/* ------------------------------------------------------------------ */
/* Socket I/O                                                          */

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* 0, or -1 with errno (0 for end of file). */
static int read_all(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) errno = 0;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Send a frame whose payload is written by enc (may be NULL). */
static int send_frame(bfeed_client *c, int type, uint32_t stream, void (*enc)(wbuf *, const void *),
                      const void *msg, bfeed_error *err) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  if (enc) enc(&w, msg);
  int rc = msg_finish(&w, at, type, stream);
  if (rc < 0) {
    wbuf_free(&w);
    return set_err(err, rc, "cannot build a %s frame", frame_type_name(type));
  }
  pthread_mutex_lock(&c->wmu);
  rc = write_all(c->fd, w.data, w.len);
  pthread_mutex_unlock(&c->wmu);
  wbuf_free(&w);
  if (rc < 0) return set_err(err, BFEED_EIO, "sending %s to the daemon: %s", frame_type_name(type), strerror(errno));
  return 0;
}

static void enc_u64(wbuf *w, const void *v) { msg_u64_encode(w, *(const uint64_t *)v); }
static void enc_hello(wbuf *w, const void *m) { msg_hello_encode(w, m); }
static void enc_open(wbuf *w, const void *m) { msg_open_encode(w, m); }

/* Read one frame header and check it. */
static int read_header(bfeed_client *c, frame_header *h, char *why, size_t cap) {
  uint8_t hdr[FRAME_HEADER_SIZE];
  if (read_all(c->fd, hdr, sizeof hdr) < 0) {
    if (errno == 0) return snprintf(why, cap, "the daemon closed the connection"), BFEED_ECLOSED;
    return snprintf(why, cap, "reading from the daemon: %s", strerror(errno)), BFEED_EIO;
  }
  const char *w;
  int rc = frame_header_decode(hdr, c->max_frame, h, &w);
  if (rc < 0) return snprintf(why, cap, "bad frame from the daemon: %s", w), rc;
  return 0;
}

static int read_payload(bfeed_client *c, const frame_header *h, uint8_t *dst, char *why, size_t cap) {
  if (read_all(c->fd, dst, h->length) < 0)
    return snprintf(why, cap, "reading a %s frame: %s", frame_type_name(h->type),
                    errno ? strerror(errno) : "connection closed mid-frame"),
           errno ? BFEED_EIO : BFEED_ECLOSED;
  if (frame_verify(h, dst) < 0)
    return snprintf(why, cap, "%s frame failed its checksum (corrupted in transit?)", frame_type_name(h->type)),
           BFEED_ECHECKSUM;
  return 0;
}

/* ------------------------------------------------------------------ */
/* The reader thread                                                   */

static bfeed_stream *find_stream(bfeed_client *c, uint32_t id) {
  for (bfeed_stream *s = c->streams; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

static void batch_free(bfeed_batch *b) {
  if (!b) return;
  bufpool_put(b->cache, b->mem, b->mem_cap);
  bufpool_unref(b->cache);
  free(b);
}

/* Read a BATCH payload so that uncompressed tensors land 64-byte aligned
 * (no copy for codec none), check, decode, decompress. */
static int read_batch(bfeed_client *c, const frame_header *h, bfeed_batch **out, char *why, size_t cap) {
  uint8_t prefix[MSG_BATCH_PREFIX];
  if (h->length < MSG_BATCH_PREFIX) return snprintf(why, cap, "BATCH frame too short"), BFEED_EPROTO;
  if (read_all(c->fd, prefix, sizeof prefix) < 0)
    return snprintf(why, cap, "reading a BATCH frame: %s", errno ? strerror(errno) : "connection closed"), BFEED_EIO;
  uint64_t raw_size;
  uint8_t codec;
  msg_batch_peek(prefix, &codec, &raw_size);
  size_t head = codec == BFEED_CODEC_NONE && raw_size <= h->length ? h->length - raw_size : 0;
  size_t pad = (64 - head % 64) % 64;
  bfeed_batch *b = calloc(1, sizeof *b);
  if (!b) return snprintf(why, cap, "out of memory"), BFEED_ENOMEM;
  b->cache = bufpool_ref(c->cache);
  uint8_t *mem = bufpool_get(c->cache, pad + h->length, &b->mem_cap);
  if (!mem) {
    batch_free(b);
    return snprintf(why, cap, "out of memory for a %u-byte batch", h->length), BFEED_ENOMEM;
  }
  b->mem = mem;
  uint8_t *payload = mem + pad;
  memcpy(payload, prefix, sizeof prefix);
  frame_header rest = *h;
  rest.length = h->length - MSG_BATCH_PREFIX;
  int rc;
  if (read_all(c->fd, payload + MSG_BATCH_PREFIX, rest.length) < 0) {
    rc = errno ? BFEED_EIO : BFEED_ECLOSED;
    snprintf(why, cap, "reading a BATCH frame: %s", errno ? strerror(errno) : "connection closed mid-frame");
    goto fail;
  }
  if (frame_verify(h, payload) < 0) {
    rc = BFEED_ECHECKSUM;
    snprintf(why, cap, "BATCH frame failed its checksum (corrupted in transit?)");
    goto fail;
  }
  msg_batch m;
  const char *w;
  if ((rc = msg_batch_decode(payload, h->length, FRAME_MAX_PAYLOAD, &m, &w)) < 0) {
    snprintf(why, cap, "%s", w);
    goto fail;
  }
  b->epoch = m.epoch;
  b->index = m.index;
  b->seq = m.seq;
  b->ntensors = (int)m.ntensors;
  memcpy(b->t, m.t, sizeof m.t);
  b->raw_size = m.raw_size;
  b->wire_bytes = FRAME_HEADER_SIZE + (size_t)h->length;
  if (m.codec == BFEED_CODEC_NONE) {
    b->raw = m.data;
  } else {
    unsigned long long declared = ZSTD_getFrameContentSize(m.data, m.data_size);
    size_t raw_cap = 0;
    uint8_t *raw = declared == m.raw_size ? bufpool_get(c->cache, m.raw_size, &raw_cap) : NULL;
    size_t got = raw && declared == m.raw_size ? ZSTD_decompress(raw, m.raw_size, m.data, m.data_size) : 0;
    if (!raw || declared != m.raw_size || ZSTD_isError(got) || got != m.raw_size) {
      bufpool_put(c->cache, raw, raw_cap);
      rc = raw || declared != m.raw_size ? BFEED_ECODEC : BFEED_ENOMEM;
      snprintf(why, cap, "BATCH %llu: zstd data does not decompress to its declared %llu bytes%s%s",
               (unsigned long long)m.seq, (unsigned long long)m.raw_size, ZSTD_isError(got) ? ": " : "",
               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "");
      goto fail;
    }
    bufpool_put(c->cache, mem, b->mem_cap); /* the compressed bytes are done with */
    b->mem = raw;
    b->mem_cap = raw_cap;
    b->raw = raw;
  }
  *out = b;
  return 0;
fail:
  batch_free(b);
  return rc;
}

static void mark_dead(bfeed_client *c, int code, const char *msg) {
  pthread_mutex_lock(&c->mu);
  if (!c->dead) {
    c->dead = 1;
    c->dead_code = code;
    snprintf(c->dead_msg, sizeof c->dead_msg, "%s", msg);
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static int handle_small(bfeed_client *c, const frame_header *h, const uint8_t *p, char *why, size_t cap) {
  const char *w = "";
  int rc = 0;
  pthread_mutex_lock(&c->mu);
  bfeed_stream *s = find_stream(c, h->stream);
  switch (h->type) {
    case FRAME_OPEN_OK: {
      msg_open_ok ok;
      if ((rc = msg_open_ok_decode(p, h->length, &ok, &w)) < 0) break;
      if (s) {
        s->info.samples = ok.samples;
        s->info.batches_per_epoch = ok.batches_per_epoch;
        s->info.classes = ok.classes;
        s->state = 1;
      }
      break;
    }
    case FRAME_ERROR: {
      msg_error e;
      if ((rc = msg_error_decode(p, h->length, &e, &w)) < 0) break;
      if (h->stream == 0) {
        c->dead = 1;
        c->dead_code = e.code;
        snprintf(c->dead_msg, sizeof c->dead_msg, "bfeedd: %.240s", e.message);
      } else if (s) {
        s->state = -1;
        s->err_code = e.code;
        snprintf(s->err_msg, sizeof s->err_msg, "bfeedd: %.240s", e.message);
      }
      break;
    }
    case FRAME_END: {
      uint64_t total;
      if ((rc = msg_u64_decode(p, h->length, &total, &w)) < 0) break;
      if (s) s->ended = 1;
      break;
    }
    case FRAME_STATS:
      if (s) {
        rc = msg_stats_decode(p, h->length, s->stats, MSG_MAX_COUNTERS, &s->nstats, &w);
        s->stats_ready = 1;
      }
      break;
    default:
      rc = BFEED_EPROTO;
      w = "unexpected frame type from the daemon";
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) snprintf(why, cap, "%s (%s frame)", w, frame_type_name(h->type));
  return rc;
}

static void *reader_main(void *arg) {
  bfeed_client *c = arg;
  char why[MSG_ERROR_MAX];
  for (;;) {
    frame_header h;
    int rc = read_header(c, &h, why, sizeof why);
    if (rc < 0) return mark_dead(c, rc, why), NULL;
    if (h.type == FRAME_BATCH) {
      bfeed_batch *b;
      if ((rc = read_batch(c, &h, &b, why, sizeof why)) < 0) return mark_dead(c, rc, why), NULL;
      pthread_mutex_lock(&c->mu);
      bfeed_stream *s = find_stream(c, h.stream);
      if (s) {
        if (s->tail) s->tail->next = b;
        else s->head = b;
        s->tail = b;
        pthread_cond_broadcast(&c->cv);
      }
      pthread_mutex_unlock(&c->mu);
      if (!s) batch_free(b); /* closed meanwhile */
      continue;
    }
    if (h.length > (h.type == FRAME_STATS && h.stream == 0 ? CLIENT_MAX_REPORT : FRAME_MAX_CONTROL)) {
      snprintf(why, sizeof why, "%s frame of %u bytes exceeds the control-frame limit", frame_type_name(h.type), h.length);
      return mark_dead(c, BFEED_ETOOBIG, why), NULL;
    }
    uint8_t *p = malloc(h.length ? h.length : 1);
    if (!p) return mark_dead(c, BFEED_ENOMEM, "out of memory"), NULL;
    rc = read_payload(c, &h, p, why, sizeof why);
    if (rc == 0 && h.type == FRAME_STATS && h.stream == 0) {
      pthread_mutex_lock(&c->mu);
      free(c->report);
      c->report = p;
      c->report_len = h.length;
      c->report_ready = 1;
      pthread_cond_broadcast(&c->cv);
      pthread_mutex_unlock(&c->mu);
      continue;
    }
    if (rc == 0) rc = handle_small(c, &h, p, why, sizeof why);
    free(p);
    if (rc < 0) return mark_dead(c, rc, why), NULL;
  }
}

/* ------------------------------------------------------------------ */
/* Connecting                                                          */

static int open_socket(const addr_spec *a, const char *addr, bfeed_error *err) {
  if (a->kind == ADDR_UNIX) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", a->path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      int e = errno;
      if (fd >= 0) close(fd);
      return set_err(err, BFEED_ECONNECT, "cannot connect to %s: %s%s", addr, strerror(e),
                     e == ENOENT || e == ECONNREFUSED ? " (is bfeedd running and listening there?)" : "");
    }
    return fd;
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
  char port[8];
  snprintf(port, sizeof port, "%u", a->port);
  int grc = getaddrinfo(a->host, port, &hints, &res);
  if (grc != 0) return set_err(err, BFEED_ECONNECT, "cannot resolve %s: %s", addr, gai_strerror(grc));
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
    return set_err(err, BFEED_ECONNECT, "cannot connect to %s: %s%s", addr, strerror(e),
                   e == ECONNREFUSED ? " (is bfeedd running and listening there?)" : "");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int handshake(bfeed_client *c, const char *addr, bfeed_error *err) {
  msg_hello hello = {.min_version = FRAME_VERSION_MIN, .max_version = FRAME_VERSION_MAX};
  snprintf(hello.agent, sizeof hello.agent, "%s", AGENT);
  int rc = send_frame(c, FRAME_HELLO, 0, enc_hello, &hello, err);
  if (rc < 0) return rc;
  frame_header h;
  char why[MSG_ERROR_MAX];
  uint8_t p[FRAME_MAX_CONTROL];
  if ((rc = read_header(c, &h, why, sizeof why)) < 0 ||
      (h.length > sizeof p && (rc = BFEED_EPROTO) && snprintf(why, sizeof why, "handshake reply too long")) ||
      (rc = read_payload(c, &h, p, why, sizeof why)) < 0)
    return set_err(err, rc, "%s: handshake failed: %s", addr, why);
  const char *w;
  if (h.type == FRAME_ERROR) {
    msg_error e;
    if (msg_error_decode(p, h.length, &e, &w) < 0) return set_err(err, BFEED_EPROTO, "%s: %s", addr, w);
    return set_err(err, e.code, "%s refused the connection: %s", addr, e.message);
  }
  msg_hello_ok ok;
  if (h.type != FRAME_HELLO_OK || msg_hello_ok_decode(p, h.length, &ok, &w) < 0)
    return set_err(err, BFEED_EPROTO, "%s: expected HELLO_OK, got a malformed or %s frame", addr, frame_type_name(h.type));
  if (ok.version < FRAME_VERSION_MIN || ok.version > FRAME_VERSION_MAX)
    return set_err(err, BFEED_EVERSION, "%s chose protocol %u, this client speaks %u..%u", addr, ok.version,
                   FRAME_VERSION_MIN, FRAME_VERSION_MAX);
  c->version = ok.version;
  c->max_frame = ok.max_frame < FRAME_MAX_PAYLOAD ? ok.max_frame : FRAME_MAX_PAYLOAD;
  snprintf(c->server, sizeof c->server, "%s", ok.server);
  return 0;
}

BFEED_API int bfeed_connect(const char *addr, bfeed_client **out, bfeed_error *err) {
  addr_spec a;
  char why[256];
  *out = NULL;
  if (!addr || addr_parse(addr, &a, why, sizeof why) < 0)
    return set_err(err, BFEED_EINVAL, "%s", addr ? why : "no address given");
  int fd = open_socket(&a, addr, err);
  if (fd < 0) return fd;
  bfeed_client *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return set_err(err, BFEED_ENOMEM, "out of memory");
  }
  c->fd = fd;
  c->max_frame = FRAME_MAX_CONTROL;
  if (!(c->cache = bufpool_new(8))) {
    close(fd);
    free(c);
    return set_err(err, BFEED_ENOMEM, "out of memory");
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_mutex_init(&c->wmu, NULL);
  pthread_mutex_init(&c->stats_mu, NULL);
  int rc = handshake(c, addr, err);
  if (rc == 0 && (rc = -pthread_create(&c->reader, NULL, reader_main, c)) < 0)
    rc = set_err(err, BFEED_ENOMEM, "cannot start the reader thread: %s", strerror(-rc));
  if (rc < 0) {
    bfeed_close(c);
    return rc;
  }
  c->reader_running = 1;
  *out = c;
  return 0;
}

static void stream_free(bfeed_stream *s) {
  while (s->head) {
    bfeed_batch *b = s->head;
    s->head = b->next;
    batch_free(b);
  }
  free(s);
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
  bufpool_unref(c->cache);
  free(c);
}

BFEED_API uint32_t bfeed_client_version(const bfeed_client *c) { return c->version; }
BFEED_API const char *bfeed_client_server(const bfeed_client *c) { return c->server; }

/* ------------------------------------------------------------------ */
/* Streams                                                             */

/* Wait (c->mu held) until pred(s) or the stream or connection failed. */
static int wait_for(bfeed_stream *s, int (*pred)(const bfeed_stream *), bfeed_error *err) {
  bfeed_client *c = s->c;
  while (!pred(s) && s->state >= 0 && !c->dead) pthread_cond_wait(&c->cv, &c->mu);
  if (pred(s)) return 0;
  if (s->state < 0) return set_err(err, s->err_code, "%s", s->err_msg);
  return set_err(err, c->dead_code, "%s", c->dead_msg);
}

static int is_open(const bfeed_stream *s) { return s->state == 1; }
static int has_batch_or_end(const bfeed_stream *s) { return s->head != NULL || s->ended; }
static int has_stats(const bfeed_stream *s) { return s->stats_ready; }

static void unlink_stream(bfeed_client *c, bfeed_stream *s) {
  for (bfeed_stream **pp = &c->streams; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      return;
    }
}

BFEED_API int bfeed_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o,
                                bfeed_stream **out, bfeed_error *err) {
  msg_open m;
  char why[256];
  *out = NULL;
  if (!dataset || strlen(dataset) >= sizeof m.dataset || !*dataset)
    return set_err(err, BFEED_EINVAL, "dataset name must be 1..%zu bytes", sizeof m.dataset - 1);
  if (msg_opts_check(o, why, sizeof why) < 0) return set_err(err, BFEED_EINVAL, "%s", why);
  snprintf(m.dataset, sizeof m.dataset, "%s", dataset);
  m.opts = *o;
  bfeed_stream *s = calloc(1, sizeof *s);
  if (!s) return set_err(err, BFEED_ENOMEM, "out of memory");
  s->c = c;
  pthread_mutex_lock(&c->mu);
  s->id = ++c->next_id;
  s->next = c->streams;
  c->streams = s;
  pthread_mutex_unlock(&c->mu);
  int rc = send_frame(c, FRAME_OPEN, s->id, enc_open, &m, err);
  pthread_mutex_lock(&c->mu);
  if (rc == 0) rc = wait_for(s, is_open, err);
  if (rc < 0) unlink_stream(c, s);
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) {
    stream_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

BFEED_API int bfeed_stream_get_info(const bfeed_stream *s, bfeed_stream_info *info) {
  *info = s->info;
  return 0;
}

BFEED_API int bfeed_stream_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err) {
  bfeed_client *c = s->c;
  *out = NULL;
  pthread_mutex_lock(&c->mu);
  int rc = wait_for(s, has_batch_or_end, err);
  bfeed_batch *b = s->head;
  if (rc == 0 && b) {
    s->head = b->next;
    if (!s->head) s->tail = NULL;
    b->next = NULL;
    s->consumed++;
  }
  uint64_t consumed = s->consumed;
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) return rc;
  if (!b) return set_err(err, BFEED_EEOF, "end of stream: all requested epochs were delivered");
  *out = b;
  /* Tell the daemon, so it may run one batch further ahead. If that fails
   * the connection is gone: the batch in hand is still good, and the next
   * call reports why the connection ended (the daemon's own error when it
   * sent one, such as ESHUTDOWN). */
  if (send_frame(c, FRAME_ACK, s->id, enc_u64, &consumed, NULL) < 0)
    mark_dead(c, BFEED_ECLOSED, "the connection to the daemon is closed");
  return 0;
}

BFEED_API int bfeed_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, bfeed_error *err) {
  bfeed_client *c = s->c;
  *count = 0;
  pthread_mutex_lock(&c->mu);
  s->stats_ready = 0;
  pthread_mutex_unlock(&c->mu);
  int rc = send_frame(c, FRAME_STATS_REQ, s->id, NULL, NULL, err);
  if (rc < 0) return rc;
  pthread_mutex_lock(&c->mu);
  rc = wait_for(s, has_stats, err);
  for (size_t i = 0; rc == 0 && i < s->nstats && i < max; i++) {
    out[i].name = s->stats[i].name;
    out[i].value = s->stats[i].value;
    *count = i + 1;
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

BFEED_API void bfeed_stream_close(bfeed_stream *s) {
  if (!s) return;
  bfeed_client *c = s->c;
  pthread_mutex_lock(&c->mu);
  int dead = c->dead;
  unlink_stream(c, s);
  pthread_mutex_unlock(&c->mu);
  if (!dead) send_frame(c, FRAME_CLOSE, s->id, NULL, NULL, NULL);
  stream_free(s);
}

/* ------------------------------------------------------------------ */
/* Batches                                                             */

BFEED_API uint64_t bfeed_batch_epoch(const bfeed_batch *b) { return b->epoch; }
BFEED_API uint64_t bfeed_batch_index(const bfeed_batch *b) { return b->index; }
BFEED_API int bfeed_batch_ntensors(const bfeed_batch *b) { return b->ntensors; }
BFEED_API size_t bfeed_batch_wire_bytes(const bfeed_batch *b) { return b->wire_bytes; }
BFEED_API size_t bfeed_batch_raw_bytes(const bfeed_batch *b) { return b->raw_size; }

BFEED_API int bfeed_batch_tensor(const bfeed_batch *b, int i, bfeed_tensor *out) {
  if (i < 0 || i >= b->ntensors) return BFEED_EINVAL;
  const msg_tensor *t = &b->t[i];
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->dtype = (bfeed_dtype)t->dtype;
  out->ndim = t->ndim;
  for (int d = 0; d < t->ndim; d++) out->shape[d] = (int64_t)t->shape[d];
  out->data = b->raw + t->offset;
  out->nbytes = t->nbytes;
  return 0;
}

BFEED_API int bfeed_batch_find(const bfeed_batch *b, const char *name, bfeed_tensor *out) {
  for (int i = 0; i < b->ntensors; i++)
    if (strcmp(b->t[i].name, name) == 0) return bfeed_batch_tensor(b, i, out);
  return BFEED_EINVAL;
}

BFEED_API void bfeed_batch_release(bfeed_batch *b) { batch_free(b); }

/* ------------------------------------------------------------------ */
/* Daemon statistics                                                   */

/* Groups and their counters in one allocation: the group array, then the
 * counters, then the decoded report they point into. */
typedef struct stats_block {
  report_group *groups;
  size_t n;
} stats_block;

BFEED_API int bfeed_daemon_stats(bfeed_client *c, bfeed_stat_group **out, size_t *nout, bfeed_error *err) {
  *out = NULL;
  *nout = 0;
  pthread_mutex_lock(&c->stats_mu);
  pthread_mutex_lock(&c->mu);
  c->report_ready = 0;
  pthread_mutex_unlock(&c->mu);
  int rc = send_frame(c, FRAME_STATS_REQ, 0, NULL, NULL, err);
  uint8_t *p = NULL;
  size_t len = 0;
  pthread_mutex_lock(&c->mu);
  while (rc == 0 && !c->report_ready && !c->dead) pthread_cond_wait(&c->cv, &c->mu);
  if (rc == 0 && c->report_ready) {
    p = c->report;
    len = c->report_len;
    c->report = NULL;
    c->report_ready = 0;
  } else if (rc == 0) {
    rc = set_err(err, c->dead_code, "%s", c->dead_msg);
  }
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_unlock(&c->stats_mu);
  if (rc < 0) return rc;
  report_group *g;
  size_t n;
  const char *why;
  rc = report_decode(p, len, &g, &n, &why);
  free(p);
  if (rc < 0) return set_err(err, rc, "statistics from the daemon: %s", why);
  /* The public view: groups first, then all counters, in one block so one
   * free releases it; names point into the decoded groups kept after it. */
  size_t ncounters = 0;
  for (size_t i = 0; i < n; i++) ncounters += g[i].ncounters;
  bfeed_stat_group *v = malloc(n * sizeof *v + ncounters * sizeof(bfeed_counter) + sizeof(stats_block));
  if (!v) {
    free(g);
    return set_err(err, BFEED_ENOMEM, "out of memory");
  }
  bfeed_counter *ctr = (bfeed_counter *)(v + n);
  stats_block *blk = (stats_block *)(ctr + ncounters);
  blk->groups = g;
  blk->n = n;
  for (size_t i = 0; i < n; i++) {
    v[i].kind = g[i].kind;
    v[i].id = g[i].id;
    v[i].ncounters = g[i].ncounters;
    v[i].counters = ctr;
    for (size_t k = 0; k < g[i].ncounters; k++, ctr++) {
      ctr->name = g[i].counters[k].name;
      ctr->value = g[i].counters[k].value;
    }
  }
  *out = v;
  *nout = n;
  return 0;
}

BFEED_API void bfeed_daemon_stats_free(bfeed_stat_group *groups, size_t ngroups) {
  if (!groups) return;
  size_t ncounters = 0;
  for (size_t i = 0; i < ngroups; i++) ncounters += groups[i].ncounters;
  stats_block *blk = (stats_block *)((bfeed_counter *)(groups + ngroups) + ncounters);
  free(blk->groups);
  free(groups);
}
