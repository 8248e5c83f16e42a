/*
 * single.h -- single/'s private interface: a client on one daemon (one
 * connection) and its streams, the implementation behind api.h's ops for
 * an address that names one endpoint. A fan-out client's members are such
 * clients too (fanout/ uses what api.h declares of single/).
 *
 *   single_client.c     connecting (bfeed_connect2's single case), the ops
 *                       tables' client side, closing, the daemon-wide report
 *   single_conn.c       the socket: connect, handshake, write frames, read
 *                       frame events
 *   single_reader.c     the background thread: frames in, batches queued,
 *                       state updated
 *   single_reconnect.c  after a lost connection: backoff, a new connection,
 *                       every stream reopened at the first batch not yet
 *                       handed out
 *   single_stream.c     streams: open, next, wait, stats, close
 *   single_batch.c      batches: decoding a BATCH payload (zstd, u8 expanded)
 *                       or a BATCH_SHM's slot
 *   single_shm.c        shared-memory streams: the ring mapped, batches in
 *                       its slots, ACK on release
 *   single_classes.c    a stream's class names, page by page (CLASSES_REQ)
 *
 * Locking: c->base.mu (api.h) also guards every stream's state and queue,
 * the connection's death (dead), gen and the report; c->wmu serialises
 * writers and guards ready; c->fd changes only under wmu and fdmu
 * (bfeed_close shuts it down under fdmu alone, so a writer blocked in
 * send() cannot hold it up). Order: wmu, then base.mu or fdmu; nobody
 * writes to the socket holding base.mu (fanout/ sends a member's REQUESTs
 * holding its own client's lock, never the member's). Only the reader
 * thread reads from the socket once the first handshake is done, and only
 * it replaces the socket (single_reconnect.c).
 *
 * Generations: c->gen counts connections. A writer that decided what to
 * send under base.mu passes the generation it saw; single_conn_send drops
 * the frame if the connection has been replaced since (an ACK counted
 * against the old connection's stream would be a protocol error on the new
 * one).
 */
#ifndef BFEED_SINGLE_H
#define BFEED_SINGLE_H

#include <pthread.h>
#include <stdint.h>

#include "addr.h"
#include "api.h"
#include "freader.h"
#include "subset.h"

#define SINGLE_AGENT "libbfeed/" BFEED_VERSION_STRING
/* A daemon-wide report can be larger than a control frame. */
#define SINGLE_MAX_REPORT (16u << 20)
/* How long one attempt's connect or handshake may take at most. */
#define SINGLE_ATTEMPT_MAX_MS 10000
#define SINGLE_ADDR_MAX 256

/* Where a stream stands in its sequence of batches. */
typedef subset_pos single_pos;

typedef struct single_stream {
  bfeed_stream base;
  /* under c->base.mu */
  int have_info; /* the first OPEN_OK came: base.info is the dataset's shape */
  int state;     /* 0 opening (or reopening), 1 open, -1 failed */
  int err_code;
  char err_msg[MSG_ERROR_MAX];
  uint64_t open_gen; /* the connection OPEN went out on; 0: none yet */
  bfeed_batch *head, *tail;
  single_pos next;   /* the first batch not yet handed to the caller */
  single_pos queued; /* the batch expected next from the daemon */
  int ended;
  uint64_t consumed; /* batches handed out on this connection (ACK) */
  single_shm *shm;   /* the ring of a shared-memory stream on this connection, else NULL */
  int stats_ready;
  msg_counter stats[MSG_MAX_COUNTERS];
  size_t nstats;
  uint32_t features;  /* the last OPEN_OK's (MSG_FEATURE_TIMING: the daemon takes TIMING) */
  int classes_wanted, classes_ready; /* a class_names call waits for CLASSES; it came (single_classes.c) */
  uint8_t *classes;   /* that CLASSES payload, malloc'd (the call frees it) */
  size_t classes_len;
  uint64_t expand_ns; /* the reader's time checking and decompressing its batches */
} single_stream;

typedef struct single_client {
  bfeed_client base;
  int fd;
  freader in; /* the handshake's, then the reader thread's */
  char addr[SINGLE_ADDR_MAX];
  addr_spec where;
  int reconnect;        /* api_settings.reconnect */
  uint64_t deadline_ns; /* api_settings.deadline_ns */
  int shm;              /* ask for shared memory on Unix sockets (api_settings.shm) */
  int passed_fd;        /* reader: the last descriptor the daemon sent (SCM_RIGHTS), -1 none */
  char token[MSG_TOKEN_MAX]; /* sent in every HELLO; "" for none */
  pthread_t reader;
  int reader_running;
  pthread_mutex_t wmu;  /* one writer at a time; ready */
  pthread_mutex_t fdmu; /* fd, for bfeed_close's shutdown */
  int ready;            /* the handshake on fd is done: others may write */
  uint64_t gen;         /* connections made: 1 after bfeed_connect */
  uint64_t lost_ns;     /* reader thread: when the connection was lost, 0 while batches flow */
  bufcache *cache;
  int dead, dead_code;
  char dead_msg[MSG_ERROR_MAX];
  /* daemon-wide statistics: one request at a time */
  pthread_mutex_t stats_mu;
  uint8_t *report; /* the STATS payload for stream 0, once it came */
  size_t report_len;
  int report_ready;
} single_client;

/* Every bfeed_client and bfeed_stream single/ sees is one of its own. */
static inline single_client *single_client_of(bfeed_client *c) { return (single_client *)c; }
static inline single_stream *single_stream_of(bfeed_stream *s) { return (single_stream *)s; }

/* single_conn.c */
/* Send a frame whose payload enc writes (enc may be NULL: empty payload),
 * on connection generation gen (0: whichever is up). BFEED_ECLOSED without
 * sending when that connection is gone or not ready; BFEED_EIO when the
 * write fails (the socket is then shut down, so the reader notices). */
int single_conn_send(single_client *c, uint64_t gen, int type, uint32_t stream, void (*enc)(wbuf *, const void *),
                     const void *msg, char *err, size_t errlen);
/* Append a whole frame to w; 0 or the error. */
int single_conn_frame(wbuf *w, int type, uint32_t stream, void (*enc)(wbuf *, const void *), const void *msg,
                      char *err, size_t errlen);
/* Write bytes to the socket, c->wmu held: 0 or BFEED_EIO with the reason. */
int single_conn_write_locked(single_client *c, const wbuf *w, const char *what, char *err, size_t errlen);
void single_conn_enc_u64(wbuf *w, const void *v);
/* A new socket to c->addr, handshake done, installed as c->fd (not yet
 * ready for other writers). attempt_ms > 0 bounds the connect and the
 * handshake's wait. 0, or the error. */
int single_conn_establish(single_client *c, int attempt_ms, char *err, size_t errlen);
/* Shut down and close c->fd (c->wmu held): the connection is over. */
void single_conn_drop_locked(single_client *c);
/* Shut the socket down (any thread), so that the reader ends the connection. */
void single_conn_abort(single_client *c);
/* Read from the socket until c->in reports an event (FREADER_*), or fail
 * with BFEED_EIO/ECLOSED/the frame's error. */
int single_conn_read_event(single_client *c, char *err, size_t errlen);
/* The payload of the frame whose header c->in just reported, into dst. */
int single_conn_read_payload(single_client *c, void *dst, size_t n, char *err, size_t errlen);
/* Record why the connection ended (the first reason wins) and wake waiters. */
void single_conn_mark_dead(single_client *c, int code, const char *msg);

/* single_reconnect.c */
/* The connection failed with code (message msg): unless reconnecting is
 * off, the error is not transient or bfeed_close has begun, connect again
 * with backoff until the deadline and reopen every stream where its caller
 * stands. 0 once connected again; otherwise the error that ends the
 * client, recorded for every later call. Called by the reader thread. */
int single_reconnect_run(single_client *c, int code, const char *msg);

/* single_reader.c: the thread that owns the socket's read side after the handshake. */
void *single_reader_main(void *arg);

/* single_stream.c */
/* bfeed_stream_open (the client's ops->open). */
int single_stream_open(bfeed_client *c, const msg_open *m, bfeed_stream **out, char *err, size_t errlen);
single_stream *single_stream_find(single_client *c, uint32_t id); /* c->base.mu held */
/* No lock held: drop what is queued, let go of the ring, free s. */
void single_stream_free(single_stream *s);
/* In a forked child, c->base.mu taken by trylock: the child's copy of s
 * freed, its ring unmapped, no other lock taken (single_client_forget). */
void single_stream_forget(single_stream *s);
/* The batch after p in a stream whose epochs have bpe batches. */
/* The batch the stream serves after p (its select's step). */
single_pos single_stream_pos_after(const single_stream *s, single_pos p);
/* c->base.mu held: forget what came on the lost connection and say
 * whether the stream must be reopened (1), or has nothing left to serve or
 * failed (0). */
int single_stream_reset(single_stream *s);
/* c->base.mu held: the OPEN that resumes s where its caller stands, appended to w. */
int single_stream_frame_open(single_stream *s, wbuf *w, char *err, size_t errlen);

/* c->base.mu held: ask the daemon on the stream's current connection,
 * once it is open there: a frame of type (payload by enc from msg, NULL:
 * empty), then wait until *ready, which the reader sets with the answer.
 * need: the OPEN_OK feature the daemon must offer (0: none; without it
 * BFEED_EUNSUPPORTED, naming what, before anything is sent). 1 with *gen
 * the connection that answered; 0 when the connection was replaced
 * meanwhile (ask again); or the error. */
int single_stream_ask(single_stream *s, int type, void (*enc)(wbuf *, const void *), const void *msg, int *ready,
                      uint32_t need, const char *what, uint64_t *gen, char *err, size_t errlen);

/* single_classes.c */
/* ops->class_names (c->base.mu held). */
int single_classes_get(bfeed_stream *bs, api_names *out, char *err, size_t errlen);
/* Reader, c->base.mu held: a checked CLASSES payload p[n] for s, kept
 * while a call waits for it. */
void single_classes_arrived(single_stream *s, const uint8_t *p, size_t n);

/* single_shm.c (see its head for the locking) */
/* Map the ring SHM_RING announced (fd taken over, closed): *out holds the
 * stream's reference. 0, or EPROTO (unsealed or short memfd) / ENOMEM. */
int single_shm_map(single_client *c, uint32_t stream, int fd, const msg_shm_ring *r, single_shm **out, char *err,
                   size_t errlen);
/* Decode a BATCH_SHM payload against t's ring (msg_batch_shm_decode). */
int single_shm_batch_decode(const single_shm *t, const uint8_t *p, size_t n, msg_batch *m, uint32_t *slot,
                            char *err, size_t errlen);
void single_shm_ref(single_shm *t);
/* A decoded BATCH_SHM into b: its tensors in the slot, a reference held;
 * or, from a ring whose slots are not page-aligned, a copy in c's pooled
 * memory, the slot released at once (no c->base.mu or c->wmu held). */
int single_shm_batch(single_client *c, single_shm *t, const msg_batch *m, uint32_t slot, bfeed_batch *b, char *err,
                     size_t errlen);
/* Batch seq, whose tensors are at raw, was released: its reference
 * dropped; with ack, the slot's pages the caller wrote are dropped and the
 * daemon told the slot is free (no c->base.mu or c->wmu held then);
 * without, only the reference goes (any lock may be held). */
void single_shm_release(single_shm *t, uint64_t seq, const uint8_t *raw, int ack);
/* Drop the pages of [p, p + n) (page-aligned, in a copy-on-write mapping
 * of a file) that are private copies, the caller's writes: the next
 * access reads the file again. pagemap: this process's /proc/self/pagemap
 * open, or -1 (opened here). 0, or -1 when madvise failed (the copies may
 * remain). */
int single_shm_discard(int pagemap, uint8_t *p, size_t n);
/* No more ACKs (the stream or client is closing); no base.mu or wmu held. */
void single_shm_forget(single_shm *t);
/* The stream's count of batches taken, which every release's ACK repeats. */
void single_shm_consumed(single_shm *t, uint64_t consumed);
void single_shm_unref(single_shm *t);

/* single_batch.c: a batch from a verified BATCH payload at mem + pad (mem
 * from c->cache, taken over by the batch, also on failure). */
int single_batch_from_payload(single_client *c, const frame_header *h, uint8_t *mem, size_t mem_cap, size_t pad,
                              bfeed_batch **out, char *err, size_t errlen);
/* A batch never handed out (dropped from a queue, maybe under base.mu): a
 * shared-memory one is not acked. */
void single_batch_drop(bfeed_batch *b);
/* A verified BATCH_SHM payload p into a batch in t's ring. */
int single_batch_from_shm(single_client *c, single_shm *t, const frame_header *h, const uint8_t *p,
                          bfeed_batch **out, char *err, size_t errlen);

#endif
