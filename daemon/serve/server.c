/* server.c -- see server.h */
#include "server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "addr.h"
#include "frame.h"
#include "msg.h"
#include "net.h"
#include "report.h"
#include "stream.h"

#define SERVER_NAME "bfeedd/0.1.0"
#define CONN_MAX_STREAMS 64
#define CONN_READ_BUF 65536

struct listener {
  net_stream h;
  server *s;
  listener *next;
  char name[300];
  char unix_path[108]; /* unlinked at shutdown */
};

struct conn {
  net_stream h;
  server *s;
  conn *prev, *next;
  uint32_t id;
  int hello_done, closing;
  /* frame being read */
  uint8_t hdr[FRAME_HEADER_SIZE];
  size_t hdr_got, payload_got;
  frame_header fh;
  uint8_t *payload;
  /* open streams */
  stream *streams[CONN_MAX_STREAMS];
  int nstreams;
  size_t write_queue;
  uv_shutdown_t shutdown_req;
  uint8_t rbuf[CONN_READ_BUF];
};

typedef struct write_req {
  uv_write_t req;
  conn *c;
  uint8_t *buf;
  size_t len;
  batch_job *job;
} write_req;

server *conn_server(conn *c) { return c->s; }
size_t conn_write_queue(const conn *c) { return c->write_queue; }

static void on_job_done(batch_job *job, void *arg) {
  (void)arg;
  stream_job_done(job);
}

ds_stats *server_ds_stats(server *s, const char *name) {
  ds_stats *d;
  for (d = s->stats; d; d = d->next)
    if (strcmp(d->name, name) == 0) return d;
  if (!(d = calloc(1, sizeof *d))) return NULL;
  snprintf(d->name, sizeof d->name, "%s", name);
  hist_init(&d->batch_latency, hist_bounds_batch);
  hist_init(&d->sample_time, hist_bounds_sample);
  d->next = s->stats;
  s->stats = d;
  return d;
}

int server_init(server *s, uv_loop_t *loop, const logger *log, int nworkers, dataset **datasets,
                size_t ndatasets, const server_limits *limits) {
  memset(s, 0, sizeof *s);
  s->started_ns = uv_hrtime();
  s->loop = loop;
  s->log = log;
  s->datasets = datasets;
  s->ndatasets = ndatasets;
  s->limits = *limits;
  /* Enough for every stream's window to cycle without allocating. */
  if (!(s->buffers = bufpool_new(32))) return UV_ENOMEM;
  return workers_start(&s->pool, nworkers, loop, on_job_done, s);
}

dataset *server_find_dataset(server *s, const char *name) {
  for (size_t i = 0; i < s->ndatasets; i++)
    if (strcmp(s->datasets[i]->name, name) == 0) return s->datasets[i];
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

static void conn_close(conn *c);

/* Memory was freed: streams that paused for the memory limit go on. */
static void memory_released(server *s) {
  if (!s->memory_blocked || server_memory_held(s) >= s->limits.max_memory) return;
  s->memory_blocked = 0;
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams && !c->closing; i++) stream_start(c->streams[i]);
}

static void on_write(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  w->c->write_queue -= w->len;
  if (w->job) memory_released(w->c->s);
  if (status < 0 && status != UV_ECANCELED) {
    log_debug(w->c->s->log, "client %u: write failed: %s", w->c->id, uv_strerror(status));
    conn_close(w->c);
  }
  if (w->job) batch_job_free(w->job);
  else free(w->buf);
  free(w);
}

void conn_send_frame(conn *c, wbuf *frame, batch_job *job) {
  write_req *w = calloc(1, sizeof *w);
  if (!w || frame->failed || c->closing) {
    free(w);
    if (job) batch_job_free(job);
    else wbuf_free(frame);
    if (!c->closing) conn_close(c);
    return;
  }
  w->c = c;
  w->job = job;
  w->buf = frame->data;
  w->len = frame->len;
  if (!job) wbuf_init(frame); /* the request owns the bytes now */
  uv_buf_t b = uv_buf_init((char *)w->buf, (unsigned)w->len);
  c->write_queue += w->len;
  int rc = uv_write(&w->req, &c->h.stream, &b, 1, on_write);
  if (rc < 0) {
    c->write_queue -= w->len;
    if (job) batch_job_free(job);
    else free(w->buf);
    free(w);
    conn_close(c);
  }
}

static void send_msg_error(conn *c, uint32_t stream, int code, const char *msg) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_error_encode(&w, code, msg);
  msg_finish(&w, at, FRAME_ERROR, stream);
  conn_send_frame(c, &w, NULL);
}

void conn_send_error(conn *c, uint32_t stream, int code, const char *fmt, ...) {
  char msg[MSG_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  send_msg_error(c, stream, code, msg);
}

/* ------------------------------------------------------------------ */
/* Closing                                                             */

static void on_conn_closed(uv_handle_t *h) {
  conn *c = h->data;
  server *s = c->s;
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  free(c->payload);
  free(c);
}

static void close_streams(conn *c) {
  while (c->nstreams > 0) stream_close(c->streams[--c->nstreams]);
}

static void conn_close(conn *c) {
  if (c->closing) return;
  c->closing = 1;
  close_streams(c);
  uv_close(&c->h.handle, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  conn *c = req->data;
  (void)status;
  if (!uv_is_closing(&c->h.handle)) uv_close(&c->h.handle, on_conn_closed);
}

/* Tell the client why, then hang up once the error frame is out. */
static void conn_fail(conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void conn_fail(conn *c, int code, const char *fmt, ...) {
  char msg[MSG_ERROR_MAX];
  va_list ap;
  if (c->closing) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log_info(c->s->log, "client %u: %s; disconnecting", c->id, msg);
  if (code == BFEED_EPROTO || code == BFEED_ECHECKSUM || code == BFEED_ETOOBIG || code == BFEED_EVERSION)
    c->s->protocol_errors++;
  else if (code == BFEED_ELIMIT)
    c->s->rejected_total++;
  uv_read_stop(&c->h.stream);
  close_streams(c);
  send_msg_error(c, 0, code, msg);
  c->closing = 1;
  c->shutdown_req.data = c;
  if (uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown) < 0) uv_close(&c->h.handle, on_conn_closed);
}

/* ------------------------------------------------------------------ */
/* Messages from the client                                            */

static int find_stream(conn *c, uint32_t id) {
  for (int i = 0; i < c->nstreams; i++)
    if (stream_id(c->streams[i]) == id) return i;
  return -1;
}

void conn_forget_stream(conn *c, stream *st) {
  for (int i = 0; i < c->nstreams; i++)
    if (c->streams[i] == st) {
      c->streams[i] = c->streams[--c->nstreams];
      return;
    }
}

static void send_reply(conn *c, int type, uint32_t stream, void (*encode)(wbuf *, const void *),
                       const void *msg) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  encode(&w, msg);
  msg_finish(&w, at, type, stream);
  conn_send_frame(c, &w, NULL);
}

static void enc_hello_ok(wbuf *w, const void *m) { msg_hello_ok_encode(w, m); }
static void enc_open_ok(wbuf *w, const void *m) { msg_open_ok_encode(w, m); }

static void handle_hello(conn *c, const uint8_t *p, size_t n) {
  msg_hello h;
  const char *why;
  if (msg_hello_decode(p, n, &h, &why) < 0) return conn_fail(c, BFEED_EPROTO, "%s", why);
  uint32_t v = h.max_version < FRAME_VERSION_MAX ? h.max_version : FRAME_VERSION_MAX;
  uint32_t lo = h.min_version > FRAME_VERSION_MIN ? h.min_version : FRAME_VERSION_MIN;
  if (v < lo)
    return conn_fail(c, BFEED_EVERSION, "client speaks protocol %u..%u, daemon %u..%u", h.min_version,
                     h.max_version, FRAME_VERSION_MIN, FRAME_VERSION_MAX);
  c->hello_done = 1;
  log_debug(c->s->log, "client %u: %s, protocol %u", c->id, h.agent, v);
  msg_hello_ok ok = {.version = v, .max_frame = FRAME_MAX_PAYLOAD};
  snprintf(ok.server, sizeof ok.server, "%s", SERVER_NAME);
  send_reply(c, FRAME_HELLO_OK, 0, enc_hello_ok, &ok);
}

static void handle_open(conn *c, uint32_t id, const uint8_t *p, size_t n) {
  msg_open m;
  const char *why;
  int rc = msg_open_decode(p, n, &m, &why);
  if (rc < 0) return conn_send_error(c, id, rc, "%s", why);
  if (id == 0 || find_stream(c, id) >= 0)
    return conn_send_error(c, id, BFEED_EINVAL, "stream id %u is 0 or already open", id);
  if (c->nstreams >= c->s->limits.max_streams || c->nstreams >= CONN_MAX_STREAMS)
    return conn_send_error(c, id, BFEED_ELIMIT, "at most %d streams per connection",
                           c->s->limits.max_streams);
  dataset *ds = server_find_dataset(c->s, m.dataset);
  if (!ds) {
    char names[160] = "";
    for (size_t i = 0; i < c->s->ndatasets; i++) {
      size_t l = strlen(names);
      snprintf(names + l, sizeof names - l, "%s%s", i ? ", " : "", c->s->datasets[i]->name);
    }
    return conn_send_error(c, id, BFEED_ENODATASET, "no dataset named '%s' (this daemon serves: %s)",
                           m.dataset, names[0] ? names : "none");
  }
  msg_open_ok ok;
  char err[MSG_ERROR_MAX];
  int code;
  if (m.opts.window > c->s->limits.max_window)
    return conn_send_error(c, id, BFEED_ELIMIT, "window %u exceeds this daemon's max_window %u", m.opts.window,
                           c->s->limits.max_window);
  ds_stats *stats = server_ds_stats(c->s, ds->name);
  if (!stats) return conn_send_error(c, id, BFEED_ENOMEM, "out of memory");
  stream *st = stream_open(c, id, ds, &m.opts, c->s->pool, c->s->buffers, stats, c->s->log, &ok, &code, err,
                           sizeof err);
  if (!st) return conn_send_error(c, id, code, "%s", err);
  c->streams[c->nstreams++] = st;
  log_info(c->s->log, "client %u: stream %u on %s: batch %u, size %u, %s, seed %llu, epoch %llu batch %llu",
           c->id, id, ds->name, m.opts.batch, m.opts.size, m.opts.mode == BFEED_MODE_EVAL ? "eval" : "train",
           (unsigned long long)m.opts.seed, (unsigned long long)m.opts.epoch,
           (unsigned long long)m.opts.batch_index);
  send_reply(c, FRAME_OPEN_OK, id, enc_open_ok, &ok);
  stream_start(st);
}

static void handle_frame(conn *c) {
  const frame_header *h = &c->fh;
  const uint8_t *p = c->payload;
  const char *why;
  if (!c->hello_done && h->type != FRAME_HELLO)
    return conn_fail(c, BFEED_EPROTO, "first frame must be HELLO, got %s", frame_type_name(h->type));
  int i = find_stream(c, h->stream);
  switch (h->type) {
    case FRAME_HELLO:
      if (c->hello_done) return conn_fail(c, BFEED_EPROTO, "HELLO sent twice");
      return handle_hello(c, p, h->length);
    case FRAME_OPEN: return handle_open(c, h->stream, p, h->length);
    case FRAME_ACK: {
      uint64_t consumed;
      if (msg_u64_decode(p, h->length, &consumed, &why) < 0) return conn_fail(c, BFEED_EPROTO, "%s", why);
      if (i < 0) return; /* the stream ended or failed: a late ack is harmless */
      if (stream_ack(c->streams[i], consumed) < 0)
        return conn_fail(c, BFEED_EPROTO, "stream %u: ACK of %llu batches, more than were sent", h->stream,
                         (unsigned long long)consumed);
      return;
    }
    case FRAME_CLOSE:
      if (i >= 0) {
        stream *st = c->streams[i];
        conn_forget_stream(c, st);
        stream_close(st);
      }
      return;
    case FRAME_STATS_REQ: {
      if (h->stream != 0 && i < 0) return conn_send_error(c, h->stream, BFEED_EINVAL, "no open stream %u", h->stream);
      wbuf w;
      wbuf_init(&w);
      size_t at = msg_begin(&w);
      if (h->stream == 0) {
        server_report(c->s, &w);
      } else {
        msg_counter ctr[MSG_MAX_COUNTERS];
        msg_stats_encode(&w, ctr, stream_stats(c->streams[i], ctr, MSG_MAX_COUNTERS));
      }
      msg_finish(&w, at, FRAME_STATS, h->stream);
      conn_send_frame(c, &w, NULL);
      return;
    }
    default:
      return conn_fail(c, BFEED_EPROTO, "unexpected %s frame from a client", frame_type_name(h->type));
  }
}

/* Feed received bytes through the frame state machine. */
static void conn_feed(conn *c, const uint8_t *p, size_t n) {
  while (n > 0 && !c->closing) {
    if (c->hdr_got < FRAME_HEADER_SIZE) {
      size_t k = FRAME_HEADER_SIZE - c->hdr_got;
      if (k > n) k = n;
      memcpy(c->hdr + c->hdr_got, p, k);
      c->hdr_got += k;
      p += k;
      n -= k;
      if (c->hdr_got < FRAME_HEADER_SIZE) return;
      const char *why;
      int rc = frame_header_decode(c->hdr, FRAME_MAX_CONTROL, &c->fh, &why);
      if (rc < 0) return conn_fail(c, rc, "bad frame header: %s", why);
      c->payload_got = 0;
      if (c->fh.length > 0 && !(c->payload = malloc(c->fh.length)))
        return conn_fail(c, BFEED_ENOMEM, "out of memory");
    }
    size_t k = c->fh.length - c->payload_got;
    if (k > n) k = n;
    if (k) memcpy(c->payload + c->payload_got, p, k);
    c->payload_got += k;
    p += k;
    n -= k;
    if (c->payload_got < c->fh.length) return;
    if (frame_verify(&c->fh, c->payload) < 0)
      return conn_fail(c, BFEED_ECHECKSUM, "%s frame failed its checksum", frame_type_name(c->fh.type));
    handle_frame(c);
    free(c->payload);
    c->payload = NULL;
    c->hdr_got = 0;
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  conn *c = h->data;
  (void)suggested;
  *buf = uv_buf_init((char *)c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *sh, ssize_t nread, const uv_buf_t *buf) {
  conn *c = sh->data;
  (void)buf;
  if (nread < 0) {
    if (nread != UV_EOF) log_debug(c->s->log, "client %u: read: %s", c->id, uv_strerror((int)nread));
    log_info(c->s->log, "client %u disconnected", c->id);
    conn_close(c);
    return;
  }
  conn_feed(c, c->rbuf, (size_t)nread);
}

/* ------------------------------------------------------------------ */
/* Listening                                                           */

static void on_connection(uv_stream_t *ls, int status) {
  listener *l = ls->data;
  server *s = l->s;
  if (status < 0) {
    log_warn(s->log, "%s: accept failed: %s", l->name, uv_strerror(status));
    return;
  }
  conn *c = calloc(1, sizeof *c);
  if (!c) return;
  c->s = s;
  c->id = ++s->next_conn_id;
  s->clients_total++;
  int rc = l->h.handle.type == UV_TCP ? uv_tcp_init(s->loop, &c->h.tcp) : uv_pipe_init(s->loop, &c->h.pipe, 0);
  if (rc < 0) {
    free(c);
    return;
  }
  c->h.handle.data = c;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  if ((rc = uv_accept(ls, &c->h.stream)) < 0) {
    log_warn(s->log, "%s: accept failed: %s", l->name, uv_strerror(rc));
    conn_close(c);
    return;
  }
  if (l->h.handle.type == UV_TCP) uv_tcp_nodelay(&c->h.tcp, 1);
  if (s->nconns > s->limits.max_clients)
    return conn_fail(c, BFEED_ELIMIT, "too many clients (limit %d)", s->limits.max_clients);
  log_info(s->log, "client %u connected on %s", c->id, l->name);
  uv_read_start(&c->h.stream, on_alloc, on_read);
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

static int listen_unix(listener *l, const addr_spec *a, char *err, size_t errlen) {
  int rc = uv_pipe_init(l->s->loop, &l->h.pipe, 0);
  if (rc < 0) return snprintf(err, errlen, "%s: %s", l->name, uv_strerror(rc)), rc;
  rc = uv_pipe_bind(&l->h.pipe, a->path);
  if (rc == UV_EADDRINUSE && stale_socket(a->path)) {
    unlink(a->path);
    rc = uv_pipe_bind(&l->h.pipe, a->path);
  }
  if (rc == 0) snprintf(l->unix_path, sizeof l->unix_path, "%s", a->path);
  if (rc < 0) snprintf(err, errlen, "cannot listen on %s: %s%s", l->name, uv_strerror(rc),
                       rc == UV_EADDRINUSE ? " (another bfeedd is running there?)" : "");
  return rc;
}

static int listen_tcp(listener *l, const addr_spec *a, char *err, size_t errlen) {
  int inited;
  char what[300];
  snprintf(what, sizeof what, "%s", l->name);
  return net_tcp_bind(l->s->loop, &l->h.tcp, a->host, a->port, what, l->name, sizeof l->name, &inited, err, errlen);
}

static void on_listener_closed(uv_handle_t *h) { free(h->data); }

int server_adopt_listen_fds(server *s, char *err, size_t errlen) {
  int n = sd_listen_fds(1);
  if (n < 0) return snprintf(err, errlen, "socket activation: %s", strerror(-n)), n;
  for (int i = 0; i < n; i++) {
    int fd = SD_LISTEN_FDS_START + i, rc;
    listener *l = calloc(1, sizeof *l);
    if (!l) return snprintf(err, errlen, "out of memory"), UV_ENOMEM;
    l->s = s;
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) > 0) {
      snprintf(l->name, sizeof l->name, "systemd socket %d (unix)", fd);
      rc = uv_pipe_init(s->loop, &l->h.pipe, 0);
      if (rc == 0) rc = uv_pipe_open(&l->h.pipe, fd);
    } else if (sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) > 0) {
      snprintf(l->name, sizeof l->name, "systemd socket %d (tcp)", fd);
      rc = uv_tcp_init(s->loop, &l->h.tcp);
      if (rc == 0) rc = uv_tcp_open(&l->h.tcp, fd);
    } else {
      free(l);
      return snprintf(err, errlen, "socket activation: fd %d is not a listening stream socket", fd), UV_EINVAL;
    }
    l->h.handle.data = l;
    if (rc == 0) rc = uv_listen(&l->h.stream, 128, on_connection);
    if (rc < 0) {
      snprintf(err, errlen, "socket activation: fd %d: %s", fd, uv_strerror(rc));
      uv_close(&l->h.handle, on_listener_closed);
      return rc;
    }
    l->next = s->listeners;
    s->listeners = l;
    log_info(s->log, "listening on %s", l->name);
  }
  return n;
}

int server_listen(server *s, const char *addr, char *err, size_t errlen) {
  addr_spec a;
  if (addr_parse(addr, &a, err, errlen) < 0) return UV_EINVAL;
  listener *l = calloc(1, sizeof *l);
  if (!l) return snprintf(err, errlen, "out of memory"), UV_ENOMEM;
  l->s = s;
  snprintf(l->name, sizeof l->name, "%s", addr);
  int rc = a.kind == ADDR_UNIX ? listen_unix(l, &a, err, errlen) : listen_tcp(l, &a, err, errlen);
  l->h.handle.data = l;
  if (rc == 0) {
    rc = uv_listen(&l->h.stream, 128, on_connection);
    if (rc < 0) snprintf(err, errlen, "cannot listen on %s: %s", l->name, uv_strerror(rc));
  }
  if (rc < 0) {
    if (l->h.handle.type != UV_UNKNOWN_HANDLE) uv_close(&l->h.handle, on_listener_closed);
    else free(l);
    return rc;
  }
  l->next = s->listeners;
  s->listeners = l;
  log_info(s->log, "listening on %s", a.kind == ADDR_UNIX ? addr : l->name);
  return 0;
}

void server_shutdown(server *s) {
  if (s->stopping) return;
  s->stopping = 1;
  for (listener *l = s->listeners; l; l = l->next) {
    if (l->unix_path[0]) unlink(l->unix_path);
    uv_close(&l->h.handle, on_listener_closed);
  }
  s->listeners = NULL;
  /* A last word to each client; the connection closes once it is out. */
  for (conn *c = s->conns; c; c = c->next) conn_fail(c, BFEED_ESHUTDOWN, "bfeedd is shutting down");
  if (s->pool) workers_stop(s->pool);
  s->pool = NULL;
}

void server_force_close(server *s) {
  for (conn *c = s->conns; c; c = c->next)
    if (!uv_is_closing(&c->h.handle)) uv_close(&c->h.handle, on_conn_closed);
}

int server_stream_count(const server *s) {
  int n = 0;
  for (const conn *c = s->conns; c; c = c->next) n += c->nstreams;
  return n;
}

uint64_t server_memory_held(const server *s) {
  uint64_t held = 0;
  for (const conn *c = s->conns; c; c = c->next) {
    held += c->write_queue;
    for (int i = 0; i < c->nstreams; i++) held += stream_held_bytes(c->streams[i]);
  }
  return held;
}

void server_set_datasets(server *s, dataset **ds, size_t n) {
  for (size_t i = 0; i < s->ndatasets; i++) dataset_unref(s->datasets[i]);
  free(s->datasets);
  s->datasets = ds;
  s->ndatasets = n;
}

void server_report(server *s, wbuf *w) {
  report_writer r;
  unsigned queued = 0, busy = 0;
  char id[REPORT_ID_MAX];
  if (s->pool) workers_load(s->pool, &queued, &busy);
  report_begin(&r, w);
  report_group_begin(&r, "daemon", "bfeedd");
  report_counter_put(&r, "uptime_s", (uv_hrtime() - s->started_ns) / 1000000000u);
  report_counter_put(&r, "clients", (uint64_t)s->nconns);
  report_counter_put(&r, "clients_total", s->clients_total);
  report_counter_put(&r, "clients_rejected", s->rejected_total);
  report_counter_put(&r, "protocol_errors", s->protocol_errors);
  report_counter_put(&r, "streams", (uint64_t)server_stream_count(s));
  report_counter_put(&r, "workers", s->pool ? (uint64_t)workers_count(s->pool) : 0);
  report_counter_put(&r, "workers_busy", busy);
  report_counter_put(&r, "queue_depth", queued);
  report_counter_put(&r, "datasets", s->ndatasets);
  report_counter_put(&r, "memory_held_bytes", server_memory_held(s));
  report_counter_put(&r, "max_memory_bytes", s->limits.max_memory);
  for (ds_stats *d = s->stats; d; d = d->next) {
    report_group_begin(&r, "dataset", d->name);
    report_counter_put(&r, "streams_total", d->streams);
    report_counter_put(&r, "samples", d->samples);
    report_counter_put(&r, "batches", d->batches);
    report_counter_put(&r, "raw_bytes", d->raw_bytes);
    report_counter_put(&r, "wire_bytes", d->wire_bytes);
    report_counter_put(&r, "skipped", d->skipped);
    report_counter_put(&r, "worker_busy_us", d->busy_ns / 1000);
  }
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams; i++) {
      msg_counter ctr[MSG_MAX_COUNTERS];
      size_t n = stream_stats(c->streams[i], ctr, MSG_MAX_COUNTERS);
      snprintf(id, sizeof id, "%u/%u:%s", c->id, stream_id(c->streams[i]), stream_dataset(c->streams[i])->name);
      report_group_begin(&r, "stream", id);
      report_counter_put(&r, "client", c->id);
      report_counter_put(&r, "write_queue_bytes", c->write_queue);
      for (size_t k = 0; k < n; k++) report_counter_put(&r, ctr[k].name, ctr[k].value);
    }
  report_end(&r);
}

void server_free(server *s) {
  server_set_datasets(s, NULL, 0);
  bufpool_unref(s->buffers);
  s->buffers = NULL;
  while (s->stats) {
    ds_stats *d = s->stats;
    s->stats = d->next;
    free(d);
  }
}
