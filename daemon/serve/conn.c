/*
 * conn.c -- one client connection: accept, read frames, write frames, close.
 *
 * Frames are read with proto's freader (header checked against the control
 * frame limit before any payload memory exists) and handed to dispatch.c.
 * Writes are queued on the socket; conn.c reports each frame's bytes to
 * flow.c when it is queued and when libuv reports it written, and flow
 * decides what that means for the memory budget and the streams. Control
 * replies count against the connection's own limit too: over it, the
 * daemon stops reading the connection's requests until the replies are
 * out.
 *
 * A connection is never freed from inside a send: a stream that sends is
 * still on the stack when the send fails, so a failed send only marks the
 * connection doomed and closes it from the loop (its timer, at 0 ms).
 */
#include "conn_impl.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "msg.h"
#include "stream.h"

typedef struct write_req {
  uv_write_t req;
  conn *c;
  uint8_t *buf;
  size_t len;
  batch_job *job;
  size_t cost;    /* what it holds: a batch's whole pooled buffer, else len */
  size_t shared;  /* a shared batch's bytes sent after it (batch_copy.h), counted once by share.c */
  flow_stream *fs; /* a batch's stream's flow, for the report; NULL for other frames */
  uv_pipe_t *fd_handle; /* the descriptor sent with the frame (conn_send_frame_fd), closed once written */
} write_req;

static void conn_close(conn *c);
static void conn_read_resume(conn *c);

/* ------------------------------------------------------------------ */
/* Writing                                                             */

static void conn_on_doomed(uv_timer_t *t) { conn_close(t->data); }

/* Close from the loop, soon: the caller may be a stream in mid-send. */
static void conn_doom(conn *c) {
  if (c->closing || c->doomed) return;
  c->doomed = 1;
  if (c->reading) uv_read_stop(&c->h.stream);
  c->reading = 0;
  uv_timer_start(&c->timer, conn_on_doomed, 0, 0);
}

static void conn_on_write(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  conn *c = w->c;
  flow_stream *fs = w->fs;
  uint64_t cost = w->cost, shared = w->shared;
  c->write_queue -= w->cost;
  if (!w->job) c->control_queue -= w->cost;
  if (w->job) batch_job_free(w->job);
  else free(w->buf);
  if (w->fd_handle) uv_close((uv_handle_t *)w->fd_handle, (uv_close_cb)free);
  free(w);
  flow_written(c->s->flow, fs, cost, shared); /* the stream may send and schedule more; waiting streams wake */
  if (status < 0 && status != UV_ECANCELED) {
    log_debug(c->s->log, "client %u: write failed: %s", c->id, uv_strerror(status));
    conn_doom(c);
  }
  if (!c->closing && !c->doomed && !c->reading && c->control_queue <= CONN_CONTROL_QUEUE_MAX / 2)
    conn_read_resume(c);
}

/* job, fs: a batch's (else NULL); fd_handle (may be NULL): a descriptor
 * to send with the frame. */
static void conn_queue(conn *c, wbuf *frame, batch_job *job, flow_stream *fs, uv_pipe_t *fd_handle) {
  write_req *w = NULL;
  if (frame->failed || c->closing || c->doomed || !(w = calloc(1, sizeof *w))) {
    if (job) batch_job_free(job);
    else wbuf_free(frame);
    if (fd_handle) uv_close((uv_handle_t *)fd_handle, (uv_close_cb)free);
    conn_doom(c);
    return;
  }
  w->fd_handle = fd_handle;
  w->c = c;
  w->job = job;
  w->buf = frame->data;
  w->len = frame->len;
  w->cost = job ? job->buf_cap : frame->len;
  w->shared = job && job->tail ? job->tail_len : 0;
  w->fs = job ? fs : NULL;
  if (!job) wbuf_init(frame); /* the request owns the bytes now */
  /* A shared batch's frame is the stream's header (and head) before the
   * shared bytes (batch_copy.h), which the job holds until it is written. */
  uv_buf_t b[2] = {uv_buf_init((char *)w->buf, (unsigned)w->len),
                   uv_buf_init(job && job->tail ? (char *)job->tail : NULL, job && job->tail ? (unsigned)job->tail_len : 0)};
  int rc = uv_write2(&w->req, &c->h.stream, b, job && job->tail ? 2 : 1, (uv_stream_t *)fd_handle, conn_on_write);
  if (rc < 0) {
    if (job) batch_job_free(job);
    else free(w->buf);
    if (fd_handle) uv_close((uv_handle_t *)fd_handle, (uv_close_cb)free);
    free(w);
    conn_doom(c);
    return;
  }
  c->write_queue += w->cost;
  if (!job) c->control_queue += w->cost;
  flow_queued(c->s->flow, w->fs, w->cost, w->shared);
}

void conn_send_frame(conn *c, wbuf *frame) { conn_queue(c, frame, NULL, NULL, NULL); }

void conn_send_batch(conn *c, batch_job *job, flow_stream *fs) { conn_queue(c, &job->frame, job, fs, NULL); }

/* libuv sends descriptors only as handles: a duplicate of fd wrapped in a
 * pipe handle that is never read, closed once the frame is written. */
void conn_send_frame_fd(conn *c, wbuf *frame, int fd) {
  uv_pipe_t *p = c->tcp ? NULL : malloc(sizeof *p);
  int dup_fd = p ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
  if (dup_fd < 0 || uv_pipe_init(c->s->loop, p, 0) < 0) {
    if (dup_fd >= 0) close(dup_fd);
    free(p);
    wbuf_free(frame);
    conn_doom(c);
    return;
  }
  if (uv_pipe_open(p, dup_fd) < 0) {
    close(dup_fd);
    uv_close((uv_handle_t *)p, (uv_close_cb)free);
    wbuf_free(frame);
    conn_doom(c);
    return;
  }
  conn_queue(c, frame, NULL, NULL, p);
}

int conn_is_tcp(const conn *c) { return c->tcp; }

static void conn_send_msg_error(conn *c, uint32_t stream, int code, const char *msg) {
  wbuf w;
  wbuf_init(&w);
  size_t at = msg_begin(&w);
  msg_error_encode(&w, code, msg);
  msg_finish(&w, at, FRAME_ERROR, stream);
  conn_send_frame(c, &w);
}

void conn_send_error(conn *c, uint32_t stream, int code, const char *fmt, ...) {
  char msg[MSG_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  conn_send_msg_error(c, stream, code, msg);
}

/* ------------------------------------------------------------------ */
/* Streams and timeouts                                                */

int conn_find_stream(const conn *c, uint32_t id) {
  for (int i = 0; i < c->nstreams; i++)
    if (stream_id(c->streams[i]) == id) return i;
  return -1;
}

void conn_forget_stream(conn *c, stream *st) {
  for (int i = 0; i < c->nstreams; i++)
    if (c->streams[i] == st) {
      c->streams[i] = c->streams[--c->nstreams];
      break;
    }
  conn_streams_changed(c);
}

static void conn_close_streams(conn *c) {
  while (c->nstreams > 0) stream_close(c->streams[--c->nstreams]);
}

static void conn_on_timeout(uv_timer_t *t) {
  conn *c = t->data;
  if (!c->hello_done)
    conn_fail(c, BFEED_ETIMEDOUT, "no HELLO within handshake_timeout (%llu s)",
              (unsigned long long)c->s->limits.handshake_timeout_ms / 1000);
  else
    conn_fail(c, BFEED_ETIMEDOUT, "no stream open and nothing received for idle_timeout (%llu s)",
              (unsigned long long)c->s->limits.idle_timeout_ms / 1000);
}

/* The idle clock restarts on every frame received while no stream is open. */
static void conn_idle_restart(conn *c) {
  if (c->closing || c->doomed || !c->hello_done) return;
  if (c->nstreams == 0 && c->s->limits.idle_timeout_ms)
    uv_timer_start(&c->timer, conn_on_timeout, c->s->limits.idle_timeout_ms, 0);
  else
    uv_timer_stop(&c->timer);
}

void conn_hello_done(conn *c) {
  c->hello_done = 1;
  conn_idle_restart(c);
}

void conn_streams_changed(conn *c) { conn_idle_restart(c); }

/* ------------------------------------------------------------------ */
/* Closing                                                             */

static void conn_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  conn *c = h->data;
  (void)suggested;
  *buf = uv_buf_init((char *)c->rbuf, sizeof c->rbuf);
}

static void conn_on_handle_closed(uv_handle_t *h) {
  conn *c = h->data;
  server *s = c->s;
  if (--c->handles_open > 0) return;
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  freader_free(&c->rd);
  free(c->payload);
  free(c);
}

/* Close both handles (each once); the connection is freed after the last. */
static void conn_close_handles(conn *c) {
  c->closing = 1;
  if (!uv_is_closing((uv_handle_t *)&c->timer)) uv_close((uv_handle_t *)&c->timer, conn_on_handle_closed);
  if (!uv_is_closing(&c->h.handle)) uv_close(&c->h.handle, conn_on_handle_closed);
}

static void conn_close(conn *c) {
  if (c->closing) return;
  c->closing = 1;
  conn_close_streams(c);
  conn_close_handles(c);
}

void conn_force_close(conn *c) { conn_close_handles(c); }

/* After the ERROR and our FIN, what the client still sends is read and
 * dropped until it hangs up or CONN_LINGER_MS pass, as nginx's lingering
 * close does: closing a socket with unread bytes in it resets the
 * connection, and the reset can reach the client before it has read the
 * ERROR (a client over the limit then saw "Broken pipe", not why). */
#define CONN_LINGER_MS 1000
static void conn_on_linger_timeout(uv_timer_t *t) { conn_force_close(t->data); }
static void conn_on_linger_read(uv_stream_t *sh, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  if (nread < 0) conn_force_close(sh->data);
}

static void conn_on_shutdown(uv_shutdown_t *req, int status) {
  conn *c = req->data;
  if (status < 0 || c->s->stopping || uv_is_closing(&c->h.handle) ||
      uv_read_start(&c->h.stream, conn_on_alloc, conn_on_linger_read) < 0)
    return conn_force_close(c);
  uv_timer_start(&c->timer, conn_on_linger_timeout, CONN_LINGER_MS, 0);
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
  else if (code == BFEED_ELIMIT || code == BFEED_EAUTH)
    c->s->rejected_total++;
  if (c->reading) uv_read_stop(&c->h.stream);
  c->reading = 0;
  uv_timer_stop(&c->timer);
  conn_close_streams(c);
  conn_send_msg_error(c, 0, code, msg); /* dropped if a send already failed */
  /* From here on the handles close exactly once: after the shutdown, or now. */
  c->closing = 1;
  c->shutdown_req.data = c;
  if (c->doomed || uv_shutdown(&c->shutdown_req, &c->h.stream, conn_on_shutdown) < 0) conn_close_handles(c);
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

/* Feed received bytes through the frame reader. Stops early, keeping the
 * rest of rbuf for later, while the connection's control replies are over
 * their budget. */
static void conn_feed(conn *c, const uint8_t *p, size_t n) {
  while (n > 0 && !c->closing && !c->doomed) {
    if (c->control_queue > CONN_CONTROL_QUEUE_MAX) {
      c->pending_off = (size_t)(p - c->rbuf);
      c->pending_len = n;
      if (c->reading) uv_read_stop(&c->h.stream);
      c->reading = 0;
      return;
    }
    size_t used;
    int ev = freader_feed(&c->rd, p, n, &used);
    p += used;
    n -= used;
    if (ev == BFEED_ECHECKSUM) return conn_fail(c, ev, "%s frame failed its checksum", frame_type_name(c->rd.h.type));
    if (ev < 0) return conn_fail(c, ev, "bad frame header: %s", c->rd.why);
    if (ev == FREADER_HEADER) {
      if (!(c->payload = malloc(c->rd.h.length))) return conn_fail(c, BFEED_ENOMEM, "out of memory");
      freader_payload(&c->rd, c->payload, c->rd.h.length);
    } else if (ev == FREADER_FRAME) {
      frame_header h = c->rd.h;
      uint8_t *payload = c->payload;
      c->payload = NULL;
      c->heard_ms = uv_now(c->s->loop);
      conn_idle_restart(c);
      dispatch_frame(c, &h, payload);
      free(payload);
    }
  }
  c->pending_len = 0;
}

static void conn_on_read(uv_stream_t *sh, ssize_t nread, const uv_buf_t *buf) {
  conn *c = sh->data;
  (void)buf;
  if (nread < 0) {
    if (nread != UV_EOF) log_debug(c->s->log, "client %u: read: %s", c->id, uv_strerror((int)nread));
    log_info(c->s->log, "client %u disconnected", c->id);
    conn_close(c);
    return;
  }
  /* The pipe is in IPC mode so that SHM_RING can carry a descriptor;
   * clients send none, and one that does would pile them up here. */
  if (!c->tcp && uv_pipe_pending_count(&c->h.pipe) > 0)
    return conn_fail(c, BFEED_EPROTO, "the client sent a file descriptor; clients send none");
  conn_feed(c, c->rbuf, (size_t)nread);
}

/* Replies have drained: feed what was put aside, then read again. */
static void conn_read_resume(conn *c) {
  if (c->pending_len) conn_feed(c, c->rbuf + c->pending_off, c->pending_len);
  if (c->closing || c->doomed || c->pending_len) return;
  int rc = uv_read_start(&c->h.stream, conn_on_alloc, conn_on_read);
  if (rc < 0) return conn_fail(c, BFEED_EIO, "cannot read from the socket: %s", uv_strerror(rc));
  c->reading = 1;
}

/* ------------------------------------------------------------------ */
/* Accepting                                                           */

/* Connections that count against max_clients: those not closing (one
 * that lingers after its ERROR holds no place). */
static int conn_live(const server *s) {
  int n = 0;
  for (const conn *c = s->conns; c; c = c->next) n += !c->closing && !c->doomed;
  return n;
}

/* The daemon is full and a client knocks: make room by closing the
 * connection that has had no stream and has been silent the longest, if
 * for at least handshake_timeout. Connections that sent HELLO and then
 * nothing would otherwise keep everyone out for idle_timeout; a client
 * that is merely quiet between streams, with room to spare, is left
 * alone. 1 if one was closed. */
static int conn_evict_idle(server *s) {
  uint64_t now = uv_now(s->loop), grace = s->limits.handshake_timeout_ms;
  conn *victim = NULL;
  for (conn *c = s->conns; c && grace; c = c->next)
    if (!c->closing && !c->doomed && c->nstreams == 0 && now - c->heard_ms >= grace &&
        (!victim || c->heard_ms < victim->heard_ms || (c->heard_ms == victim->heard_ms && c->id < victim->id)))
      victim = c; /* the silent longest; of those heard in the same tick, the oldest */
  if (!victim) return 0;
  conn_fail(victim, BFEED_ELIMIT, "closed to make room for a new client: bfeedd is at max_clients (%d), and this "
            "connection had no stream and was silent for %llu s", s->limits.max_clients,
            (unsigned long long)(now - victim->heard_ms) / 1000);
  return 1;
}

int conn_accept(server *s, uv_stream_t *ls, int tcp, const char *where) {
  conn *c = calloc(1, sizeof *c);
  if (!c || freader_init(&c->rd, FRAME_MAX_CONTROL) < 0) {
    free(c);
    log_warn(s->log, "%s: out of memory accepting a client; trying again shortly", where);
    return BFEED_ENOMEM;
  }
  c->s = s;
  c->id = ++s->next_conn_id;
  c->tcp = tcp;
  s->clients_total++;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  uv_timer_init(s->loop, &c->timer); /* cannot fail */
  c->timer.data = c;
  c->handles_open = 1;
  int rc = tcp ? uv_tcp_init(s->loop, &c->h.tcp) : uv_pipe_init(s->loop, &c->h.pipe, 1); /* ipc: SHM_RING's fd */
  if (rc < 0) {
    log_warn(s->log, "%s: cannot take a client: %s", where, uv_strerror(rc));
    c->closing = 1;
    uv_close((uv_handle_t *)&c->timer, conn_on_handle_closed);
    return 0;
  }
  c->h.handle.data = c;
  c->handles_open = 2;
  if ((rc = uv_accept(ls, &c->h.stream)) < 0) {
    log_warn(s->log, "%s: accept failed: %s", where, uv_strerror(rc));
    conn_close(c);
    return 0;
  }
  if (tcp) uv_tcp_nodelay(&c->h.tcp, 1);
  c->heard_ms = uv_now(s->loop);
  if (conn_live(s) > s->limits.max_clients && !conn_evict_idle(s))
    return conn_fail(c, BFEED_ELIMIT, "too many clients (limit %d)", s->limits.max_clients), 0;
  log_info(s->log, "client %u connected on %s", c->id, where);
  if (s->limits.handshake_timeout_ms) uv_timer_start(&c->timer, conn_on_timeout, s->limits.handshake_timeout_ms, 0);
  conn_read_resume(c);
  return 0;
}
