/*
 * client.h -- libbfeed's private interface between its files: the client,
 * stream and batch objects, and what each file offers the others.
 *
 *   conn.c    the socket: connect, handshake, write frames, read frame events
 *   reader.c  the background thread: frames in, batches queued, state updated
 *   stream.c  streams: open, next, stats, close (the public bfeed_stream_*)
 *   batch.c   batches: decoding a BATCH payload, the public bfeed_batch_*
 *   reconnect.c  after a lost connection: backoff, a new connection, and
 *             every stream reopened at the first batch not yet handed out
 *   stats.c   the daemon-wide report (bfeed_daemon_stats)
 *   common.c  errors and the public vocabulary calls (bfeed_strerror, ...)
 *   options.c stream options set by name (bfeed_stream_opts_set), for bindings
 *   pool.c    several endpoints behind one address: splitting, resolving
 *             names, the pool client bfeed_connect2 makes of them
 *   fanout.c  a pool client's streams: on-demand sub-streams on every member,
 *             positions assigned by speed, reordered, failed or stalled
 *             members dropped and rejoined, every batch handed out once
 *   shm.c     shared-memory streams: the ring mapped, batches in its slots, ACK on release
 *
 * Locking: c->mu guards the stream list, every stream's state and queue,
 * the connection's death, closing, busy and gen; c->wmu serialises writers
 * and guards ready; c->fd changes only under wmu and fdmu (bfeed_close
 * shuts it down under fdmu alone, so a writer blocked in send() cannot
 * hold it up). Order: wmu, then mu or fdmu; nobody writes to the socket
 * holding mu. Only the reader thread reads from the socket once the first
 * handshake is done, and only it replaces the socket (reconnect.c).
 *
 * Generations: c->gen counts connections. A writer that decided what to
 * send under mu passes the generation it saw; conn_send drops the frame if
 * the connection has been replaced since (an ACK counted against the old
 * connection's stream would be a protocol error on the new one).
 */
#ifndef BFEED_CLIENT_H
#define BFEED_CLIENT_H

#include <pthread.h>
#include <stdint.h>

#include "addr.h"
#include "bfeed.h"
#include "bufpool.h"
#include "freader.h"
#include "msg.h"

#define CLIENT_AGENT "libbfeed/" BFEED_VERSION_STRING
/* A daemon-wide report can be larger than a control frame. */
#define CLIENT_MAX_REPORT (16u << 20)
/* Reconnecting: the first wait, its cap (each wait doubles, with jitter),
 * and how long one attempt's connect or handshake may take at most. */
#define CLIENT_BACKOFF_FIRST_MS 50
#define CLIENT_BACKOFF_CAP_MS 1000
#define CLIENT_ATTEMPT_MAX_MS 10000
/* Distinct counter names a stream keeps for bfeed_stream_stats. */
#define CLIENT_MAX_NAMES (4 * MSG_MAX_COUNTERS)

typedef struct shm_track shm_track;

struct bfeed_batch {
  uint64_t epoch, index, seq;
  int ntensors;
  msg_tensor t[MSG_MAX_TENSORS];
  bufpool *cache;     /* where mem goes back */
  uint8_t *mem;       /* what to give back */
  size_t mem_cap;
  const uint8_t *raw; /* tensors, 64-byte aligned */
  size_t raw_size, wire_bytes;
  shm_track *shm;     /* a shared-memory batch: raw is in its ring (mem NULL) */
  bfeed_batch *next;
};

/* Where a stream stands in its sequence of batches. */
typedef struct stream_pos {
  uint64_t epoch, index;
} stream_pos;

typedef struct fan fan;

/* pool.c: the endpoints of a pool client (c->pool; NULL for one endpoint). */
#define POOL_MAX 32 /* members of one pool (fanout.c keeps them in a bit mask) */
#define POOL_ADDR_MAX 256
typedef struct pool {
  char addr[1024];            /* as given: re-resolved when a member fails */
  char (*ep)[POOL_ADDR_MAX];  /* the endpoints it stands for now */
  size_t n;
  int reconnect;
  double deadline_s, stall_s;
  char token[MSG_TOKEN_MAX];
} pool;

struct bfeed_stream {
  bfeed_client *c;
  fan *fan; /* a pool client's stream (fanout.c): none of the rest is used but info and names */
  uint64_t fingerprint; /* OPEN_OK's, 0 when the daemon sent none */
  uint32_t id;
  msg_open open; /* what the caller asked for: reopened from it */
  /* under c->mu */
  bfeed_stream_info info;
  int have_info; /* the first OPEN_OK came: info is the dataset's shape */
  int state;     /* 0 opening (or reopening), 1 open, -1 failed */
  int err_code;
  char err_msg[MSG_ERROR_MAX];
  uint64_t open_gen; /* the connection OPEN went out on; 0: none yet */
  bfeed_batch *head, *tail;
  stream_pos next;   /* the first batch not yet handed to the caller */
  stream_pos queued; /* the batch expected next from the daemon */
  int ended;
  uint64_t consumed; /* batches handed out on this connection (ACK) */
  shm_track *shm;    /* the ring of a shared-memory stream on this connection, else NULL */
  int stats_ready;
  msg_counter stats[MSG_MAX_COUNTERS];
  size_t nstats;
  char *names[CLIENT_MAX_NAMES]; /* counter names handed out, kept until close */
  size_t nnames;
  bfeed_stream *next_stream;
};

struct bfeed_client {
  pool *pool; /* several endpoints: streams fan out (fanout.c); no socket, no reader */
  int fd;
  freader in; /* the handshake's, then the reader thread's */
  char addr[256];
  addr_spec where;
  int reconnect;            /* bfeed_connect_opts.reconnect */
  uint64_t deadline_ns;     /* bfeed_connect_opts.reconnect_deadline */
  int shm;                  /* ask for shared memory on Unix sockets (bfeed_connect_opts.shm, BFEED_SHM) */
  int passed_fd;            /* reader: the last descriptor the daemon sent (SCM_RIGHTS), -1 none */
  char token[MSG_TOKEN_MAX]; /* sent in every HELLO; "" for none */
  pthread_t reader;
  int reader_running;
  pthread_mutex_t mu; /* streams, their queues, dead, closing, busy, gen */
  pthread_cond_t cv;
  pthread_mutex_t wmu;  /* one writer at a time; ready */
  pthread_mutex_t fdmu; /* fd, for bfeed_close's shutdown */
  int ready;            /* the handshake on fd is done: others may write */
  uint64_t gen;         /* connections made: 1 after bfeed_connect */
  uint64_t reconnects;
  uint64_t lost_ns;     /* reader thread: when the connection was lost, 0 while batches flow */
  int closing;          /* bfeed_close has begun */
  unsigned busy;        /* public calls in progress, which bfeed_close waits out */
  uint32_t version; /* the first daemon's (bfeed_client_version) */
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
/* Send a frame whose payload enc writes (enc may be NULL: empty payload),
 * on connection generation gen (0: whichever is up). BFEED_ECLOSED without
 * sending when that connection is gone or not ready; BFEED_EIO when the
 * write fails (the socket is then shut down, so the reader notices). */
int conn_send(bfeed_client *c, uint64_t gen, int type, uint32_t stream, void (*enc)(wbuf *, const void *),
              const void *msg, bfeed_error *err);
/* Append a whole frame to w; 0 or the error, with a reason in err. */
int conn_frame(wbuf *w, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *msg,
               bfeed_error *err);
/* Write bytes to the socket, c->wmu held: 0 or BFEED_EIO with the reason. */
int conn_write_locked(bfeed_client *c, const wbuf *w, const char *what, bfeed_error *err);
void conn_enc_u64(wbuf *w, const void *v);
/* A new socket to c->addr, handshake done, installed as c->fd (not yet
 * ready for other writers). attempt_ms > 0 bounds the connect and the
 * handshake's wait. 0, or the error with the reason in err. */
int conn_establish(bfeed_client *c, int attempt_ms, bfeed_error *err);
/* Shut down and close c->fd (c->wmu held): the connection is over. */
void conn_drop_locked(bfeed_client *c);
/* Read from the socket until c->in reports an event (FREADER_*), or fail
 * with BFEED_EIO/ECLOSED/the frame's error and a reason in why[cap]. */
int conn_read_event(bfeed_client *c, char *why, size_t cap);
/* The payload of the frame whose header c->in just reported, into dst. */
int conn_read_payload(bfeed_client *c, void *dst, size_t n, char *why, size_t cap);
/* Record why the connection ended (the first reason wins) and wake waiters. */
void conn_mark_dead(bfeed_client *c, int code, const char *msg);
/* A public call begins: lock c->mu and return 0 with it held, or return
 * BFEED_ECLOSED with it released (bfeed_close has begun). conn_leave ends
 * the call (c->mu held). bfeed_close frees nothing while calls are in
 * progress. */
int conn_lock_enter(bfeed_client *c, bfeed_error *err);
void conn_leave(bfeed_client *c);

/* reconnect.c */
/* The connection failed with code (reason why): unless reconnecting is off,
 * the error is not transient or bfeed_close has begun, connect again with
 * backoff until the deadline and reopen every stream where its caller
 * stands. 0 once connected again; otherwise the error that ends the
 * client, recorded for every later call. Called by the reader thread. */
int reconnect_run(bfeed_client *c, int code, const char *why);
/* Whether a connection that ended with code may be tried again. */
int reconnect_transient(int code);

/* shm.c (see its head for the locking) */
/* Map the ring SHM_RING announced (fd taken over, closed): *out holds the
 * stream's reference. 0, or EPROTO (unsealed or short memfd) / ENOMEM. */
int shm_map(bfeed_client *c, uint32_t stream, int fd, const msg_shm_ring *r, shm_track **out, char *why, size_t cap);
/* Decode a BATCH_SHM payload against t's ring (msg_batch_shm_decode). */
int shm_batch_decode(const shm_track *t, const uint8_t *p, size_t n, msg_batch *m, uint32_t *slot, const char **why);
void shm_ref(shm_track *t);
/* A decoded BATCH_SHM into b: its tensors in the slot, a reference held. */
int shm_batch(shm_track *t, const msg_batch *m, uint32_t slot, bfeed_batch *b, char *why, size_t cap);
/* Batch seq was released: its reference dropped; with ack, the daemon is
 * told its slot is free (no c->mu or c->wmu held then); without, only the
 * reference goes (any lock may be held). */
void shm_release(shm_track *t, uint64_t seq, int ack);
/* No more ACKs (the stream or client is closing); no c->mu or c->wmu held. */
void shm_forget(shm_track *t);
/* The stream's count of batches taken, which every release's ACK repeats. */
void shm_consumed(shm_track *t, uint64_t consumed);
void shm_unref(shm_track *t);

/* reader.c: the thread that owns the socket's read side after the handshake. */
void *reader_main(void *arg);

/* stream.c */
bfeed_stream *stream_find(bfeed_client *c, uint32_t id); /* c->mu held */
void stream_free(bfeed_stream *s);
/* The batch after p in a stream whose epochs have bpe batches. */
stream_pos stream_pos_after(stream_pos p, uint64_t bpe);
/* c->mu held: forget what came on the lost connection and say whether the
 * stream must be reopened (1), or has nothing left to serve or failed (0). */
int stream_reset(bfeed_stream *s);
/* c->mu held: the OPEN that resumes s where its caller stands, appended to w. */
int stream_frame_open(bfeed_stream *s, wbuf *w, bfeed_error *err);

/* The stream's copy of a counter name, kept until it is closed (c->mu
 * held); NULL when out of memory or names. */
const char *stream_name(bfeed_stream *s, const char *name);

/* conn.c: shut the socket down, so that the reader ends the connection. */
void conn_abort(bfeed_client *c);

/* pool.c */
/* Split addr at commas and resolve names: the endpoints into out[max]. */
int pool_resolve(const char *addr, char (*out)[POOL_ADDR_MAX], size_t max, size_t *n, bfeed_error *err);
/* For bfeed_connect2 (options applied to c): 1 when addr names several
 * endpoints (c->pool made, one of them answered), 0 for one endpoint (the
 * single connection), or the error. */
int pool_connect(bfeed_client *c, const char *addr, const bfeed_connect_opts *o, bfeed_error *err);
/* A single-connection client to one member, not reconnecting by itself. */
int pool_member_connect(const pool *p, const char *ep, bfeed_client **out, bfeed_error *err);
/* Resolve p->addr again (mu, the pool client's c->mu, held; released
 * while resolving): 0, or -1 keeping the old list. */
int pool_refresh(pool *p, pthread_mutex_t *mu);
int pool_has(const pool *p, const char *ep);
/* Whether any endpoint is TCP (c->mu held or no stream yet). */
int pool_any_tcp(const pool *p);
void pool_free(pool *p);

/* fanout.c: the public stream calls on a pool client's stream. */
int fanout_open(bfeed_client *c, bfeed_stream *s, bfeed_error *err); /* s->open filled, s not linked */
int fanout_next(bfeed_stream *s, bfeed_batch **out, bfeed_error *err);
int fanout_wait(bfeed_stream *s, int timeout_ms);
int fanout_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, bfeed_error *err);
void fanout_free(bfeed_stream *s); /* c->mu not held; stops the members and frees s */

/* batch.c: a batch from a verified BATCH payload at mem + pad (mem from
 * c->cache, taken over by the batch, also on failure). */
int batch_from_payload(bfeed_client *c, const frame_header *h, uint8_t *mem, size_t mem_cap, size_t pad,
                       bfeed_batch **out, char *why, size_t cap);
void batch_free(bfeed_batch *b);
/* A batch never handed out (dropped from a queue, maybe under c->mu): a
 * shared-memory one is not acked. */
void batch_drop(bfeed_batch *b);
/* A verified BATCH_SHM payload p[n] into a batch in s's ring. */
int batch_from_shm(bfeed_client *c, shm_track *t, const frame_header *h, const uint8_t *p, bfeed_batch **out,
                   char *why, size_t cap);

#endif
