/*
 * client.h -- libbfeed's private interface between its files: the client,
 * stream and batch objects, and what each file offers the others.
 *
 *   conn.c    the socket: connect, handshake, write frames, read frame events
 *   reader.c  the background thread: frames in, batches queued, state updated
 *   stream.c  streams: open, next, stats, close (the public bfeed_stream_*)
 *   batch.c   batches: decoding a BATCH payload, the public bfeed_batch_*
 *   stats.c   the daemon-wide report (bfeed_daemon_stats)
 *   common.c  errors and the public vocabulary calls (bfeed_strerror, ...)
 *   options.c stream options set by name (bfeed_stream_opts_set), for bindings
 *
 * Locking: c->mu guards the stream list, every stream's state and queue,
 * and the connection's death; c->wmu serialises writers; only the reader
 * thread reads from the socket once the handshake is done.
 */
#ifndef BFEED_CLIENT_H
#define BFEED_CLIENT_H

#include <pthread.h>
#include <stdint.h>

#include "bfeed.h"
#include "bufpool.h"
#include "freader.h"
#include "msg.h"

#define CLIENT_AGENT "libbfeed/0.1.0"
/* A daemon-wide report can be larger than a control frame. */
#define CLIENT_MAX_REPORT (16u << 20)

struct bfeed_batch {
  uint64_t epoch, index, seq;
  int ntensors;
  msg_tensor t[MSG_MAX_TENSORS];
  bufpool *cache;     /* where mem goes back */
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
  int state; /* 0 opening, 1 open, -1 failed */
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
  freader in; /* the handshake's, then the reader thread's */
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
  uint8_t *report; /* the STATS payload for stream 0, once it came */
  size_t report_len;
  int report_ready;
};

/* common.c: fill err (may be NULL) and return code. */
int common_err(bfeed_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* conn.c */
/* Send a frame whose payload enc writes (enc may be NULL: empty payload). */
int conn_send(bfeed_client *c, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *msg,
              bfeed_error *err);
void conn_enc_u64(wbuf *w, const void *v);
/* Read from the socket until c->in reports an event (FREADER_*), or fail
 * with BFEED_EIO/ECLOSED/the frame's error and a reason in why[cap]. */
int conn_read_event(bfeed_client *c, char *why, size_t cap);
/* The payload of the frame whose header c->in just reported, into dst. */
int conn_read_payload(bfeed_client *c, void *dst, size_t n, char *why, size_t cap);
/* Record why the connection ended (the first reason wins) and wake waiters. */
void conn_mark_dead(bfeed_client *c, int code, const char *msg);

/* reader.c: the thread that owns the socket's read side after the handshake. */
void *reader_main(void *arg);

/* stream.c */
bfeed_stream *stream_find(bfeed_client *c, uint32_t id); /* c->mu held */
void stream_free(bfeed_stream *s);

/* batch.c: a batch from a verified BATCH payload at mem + pad (mem from
 * c->cache, taken over by the batch, also on failure). */
int batch_from_payload(bfeed_client *c, const frame_header *h, uint8_t *mem, size_t mem_cap, size_t pad,
                       bfeed_batch **out, char *why, size_t cap);
void batch_free(bfeed_batch *b);

#endif
