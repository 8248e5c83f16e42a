/*
 * conn_impl.h -- a client connection's insides, for the files that serve it.
 * Included by conn.c, dispatch.c, listen.c, budget.c and stats.c; stream.c sees only conn.h.
 */
#ifndef BFEED_CONN_IMPL_H
#define BFEED_CONN_IMPL_H

#include <stdint.h>
#include <uv.h>

#include "conn.h"
#include "frame.h"
#include "net.h"
#include "server.h"

#define CONN_MAX_STREAMS 64
#define CONN_READ_BUF 65536

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
  size_t write_queue; /* bytes queued for writing and not yet written */
  uv_shutdown_t shutdown_req;
  uint8_t rbuf[CONN_READ_BUF];
};

/* A listener has a connection waiting: accept it (listen.c). tcp says
 * which transport; `where` names the listener for the log. */
void conn_accept(server *s, uv_stream_t *listener, int tcp, const char *where);
/* Tell the client why (an ERROR frame on stream 0), then hang up once it
 * is out; counts protocol errors and refusals. */
void conn_fail(conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Close at once, without waiting for queued frames (after the grace period). */
void conn_force_close(conn *c);
/* The index of stream id in c->streams, or -1. */
int conn_find_stream(const conn *c, uint32_t id);
/* Take the stream out of c->streams (it is closed by the caller). */
void conn_forget_stream(conn *c, stream *st);

#endif
