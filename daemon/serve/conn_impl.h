/*
 * conn_impl.h -- a client connection's insides, for the files that serve it.
 * Included by conn.c, dispatch.c, listen.c and stats.c; stream.c sees only conn.h, flow.c none of it.
 */
#ifndef BFEED_CONN_IMPL_H
#define BFEED_CONN_IMPL_H

#include <stdint.h>
#include <uv.h>

#include "conn.h"
#include "frame.h"
#include "freader.h"
#include "net.h"
#include "server.h"

#define CONN_MAX_STREAMS 64
#define CONN_READ_BUF 65536
/* Control replies (STATS, ERROR, OPEN_OK...) a connection may have queued
 * before the daemon stops reading its requests: a client that asks without
 * reading the answers holds this much, not what it can send. Batches are
 * bounded by the window and max_memory instead. */
#define CONN_CONTROL_QUEUE_MAX (1u << 20)

struct conn {
  net_stream h;
  uv_timer_t timer; /* handshake and idle timeouts; a close put off to the loop */
  server *s;
  conn *prev, *next;
  uint32_t id;
  int tcp;          /* over TCP: must show the token when the server asks for one */
  int hello_done;
  int closing;      /* its handles are closing or about to: frames are dropped */
  int doomed;       /* a send failed: it closes from the loop, not inside the sender */
  int reading;      /* uv_read_start is in force */
  int handles_open; /* handle and timer not yet closed: freed at 0 */
  uint64_t heard_ms; /* the loop's clock when it connected or last sent a whole frame */
  freader rd;       /* the frame being read */
  uint8_t *payload;
  /* bytes of rbuf received but not yet fed, while reading is paused */
  size_t pending_off, pending_len;
  /* open streams */
  stream *streams[CONN_MAX_STREAMS];
  int nstreams;
  size_t write_queue;   /* bytes queued for writing and not yet written */
  size_t control_queue; /* the part of write_queue that is not batches */
  uv_shutdown_t shutdown_req;
  uint8_t rbuf[CONN_READ_BUF];
};

/* A listener has a connection waiting: accept it (listen.c). tcp says
 * which transport; `where` names the listener for the log. BFEED_ENOMEM
 * when it could not even be taken: it stays queued, and libuv watches the
 * listener again only once it is accepted, so the caller must try again. */
int conn_accept(server *s, uv_stream_t *listener, int tcp, const char *where);
/* Tell the client why (an ERROR frame on stream 0), then hang up once it
 * is out; counts protocol errors and refusals. */
void conn_fail(conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Close at once, without waiting for queued frames (after the grace period). */
void conn_force_close(conn *c);
/* The index of stream id in c->streams, or -1. */
int conn_find_stream(const conn *c, uint32_t id);
/* Take the stream out of c->streams (it is closed by the caller). */
void conn_forget_stream(conn *c, stream *st);
/* The handshake is done (dispatch.c): from now on the idle timeout runs
 * while the connection has no stream. */
void conn_hello_done(conn *c);
/* A stream was opened or closed: the idle timeout runs only without one. */
void conn_streams_changed(conn *c);

#endif
