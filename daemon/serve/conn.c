/*
 * conn.c -- one client connection: accept, read frames, write frames, close.
 *
 * Frames are read with a small state machine (header, then payload, each
 * length checked before any allocation) and handed to dispatch.c. Writes
 * are queued on the socket; their bytes count against the memory budget
 * until libuv reports them written.
 */
#include "conn_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "dispatch.h"
#include "msg.h"
#include "stream.h"

typedef struct write_req {
  uv_write_t req;
  conn *c;
  uint8_t *buf;
  size_t len;
  batch_job *job;
} write_req;

static void conn_close(conn *c);

/* ------------------------------------------------------------------ */
/* Writing                                                             */

static void on_write(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  w->c->write_queue -= w->len;
  if (w->job) budget_released(w->c->s);
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

int conn_budget_allows(conn *c, uint64_t bytes) { return budget_allows(c->s, bytes); }

/* ------------------------------------------------------------------ */
/* Streams                                                             */

int conn_find_stream(const conn *c, uint32_t id) {
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

static void close_streams(conn *c) {
  while (c->nstreams > 0) stream_close(c->streams[--c->nstreams]);
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

static void conn_close(conn *c) {
  if (c->closing) return;
  c->closing = 1;
  close_streams(c);
  uv_close(&c->h.handle, on_conn_closed);
}

void conn_force_close(conn *c) {
  if (!uv_is_closing(&c->h.handle)) uv_close(&c->h.handle, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)status;
  conn_force_close(req->data);
}

void conn_fail(conn *c, int code, const char *fmt, ...) {
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
/* Reading                                                             */

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
    dispatch_frame(c, &c->fh, c->payload);
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
/* Accepting                                                           */

void conn_accept(server *s, uv_stream_t *ls, int tcp, const char *where) {
  conn *c = calloc(1, sizeof *c);
  if (!c) return;
  c->s = s;
  c->id = ++s->next_conn_id;
  s->clients_total++;
  int rc = tcp ? uv_tcp_init(s->loop, &c->h.tcp) : uv_pipe_init(s->loop, &c->h.pipe, 0);
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
    log_warn(s->log, "%s: accept failed: %s", where, uv_strerror(rc));
    conn_close(c);
    return;
  }
  if (tcp) uv_tcp_nodelay(&c->h.tcp, 1);
  if (s->nconns > s->limits.max_clients)
    return conn_fail(c, BFEED_ELIMIT, "too many clients (limit %d)", s->limits.max_clients);
  log_info(s->log, "client %u connected on %s", c->id, where);
  uv_read_start(&c->h.stream, on_alloc, on_read);
}
