/*
 * api.h -- libbfeed's private interface between the public calls of
 * bfeed.h (the thin api_*.c files beside it) and the two implementations
 * behind them, each in a folder of its own with a private header:
 *
 *   single/  one daemon: the socket, the reader thread, reconnecting,
 *            shared memory, and that connection's streams (single.h)
 *   fanout/  several daemons: the endpoints, and streams spread over one
 *            single client per member (fanout.h)
 *
 * A bfeed_client and a bfeed_stream are each one of these: the struct
 * below comes first in the implementation's own (single_client,
 * fanout_client, single_stream, fanout_stream), which holds all the state
 * only it needs, and ops says which it is. The public calls dispatch
 * through ops; nothing outside fanout/ asks which kind it has.
 *
 *   api_client.c  bfeed_connect*, bfeed_close, bfeed_client_*: the options
 *                 checked once (api_settings), the implementation chosen;
 *                 public calls counted, so that bfeed_close waits them out
 *   api_stream.c  bfeed_stream_*: the request checked and its AUTO codec
 *                 and transport resolved, then dispatched; counter names
 *   api_daemon.c  bfeed_daemon_stats: the report asked of the
 *                 implementation, decoded into the public groups
 *   api_batch.c   the bfeed_batch_* accessors
 *   api_classes.c bfeed_stream_class_names: the dataset's class names
 *                 (ops->class_names), handed out as one array
 *   api_err.c     errors: messages into caller buffers, and the one place
 *                 they become a bfeed_error (api_err_public)
 *   api_fork.c    after fork(): which process a client and its batches
 *                 belong to, and BFEED_EFORKED for the others
 *   api_timing.c  what the caller of next waited (bfeed_stream_get_timing),
 *                 passed on to the daemon (TIMING)
 *   api_vocab.c   bfeed_strerror, dtypes, bfeed_stream_opts_init, bf16
 *   options.c     stream options set by name (bfeed_stream_opts_set)
 *
 * Errors: an internal function returns 0 (or a count) or a negative
 * BFEED_E* code, and on failure writes a NUL-terminated message into the
 * caller's buffer (char *err, size_t errlen); err may be NULL when the
 * caller has no use for it. A public call passes a buffer of API_ERRLEN
 * and hands it to api_err_public, which fills the caller's bfeed_error.
 *
 * Locking, for both implementations: c->mu guards c->streams, next_id,
 * closing, busy and reconnects, and what each implementation's header
 * adds; c->cv (on clock.h's clock) is broadcast whenever
 * something a waiter may wait for changes. A public call on a client or
 * its streams is counted in busy between api_client_enter and
 * api_client_leave; bfeed_close sets closing, stops what keeps calls
 * waiting (ops->stop), waits until busy is 0 and only then frees.
 * bfeed_client_version/server/reconnects/endpoint(s) are quick reads, not
 * counted (bfeed.h: no call may begin after bfeed_close has begun).
 *
 * After fork (bfeed.h "After fork"): a client is its connecting process's.
 * In a child, whose copy of it has none of the threads and maybe locks
 * those threads held at the fork, every public call checks c->forks
 * before any lock (api_fork_check) and fails with BFEED_EFORKED;
 * bfeed_close calls ops->forget instead of stop and free, and releasing
 * a batch made before the fork frees the child's copy only. Nothing in a
 * child ever writes to, or shuts down, a socket of the parent's.
 */
#ifndef BFEED_API_H
#define BFEED_API_H

#include <pthread.h>
#include <stdint.h>

#include "bfeed.h"
#include "bufcache.h"
#include "msg.h"

/* The size of every public call's error buffer: bfeed_error's message. */
#define API_ERRLEN sizeof(((bfeed_error *)0)->message)
/* Waiting to connect again (single/ after a lost connection, fanout/ for a
 * dropped member): the first wait and its cap (each wait doubles, with
 * jitter). */
#define API_BACKOFF_FIRST_MS 50
#define API_BACKOFF_CAP_MS 1000
/* Distinct counter names a stream keeps for bfeed_stream_stats. */
#define API_MAX_NAMES (4 * MSG_MAX_COUNTERS)

/* api_timing.c: histogram bins of the waits (up to 2^34 us), and how often
 * the totals go to the daemon. */
#define API_TIMING_BINS 256
#define API_TIMING_REPORT_NS 250000000ull

typedef struct api_timing {
  uint64_t entered_ns, last_ns; /* the call under way began; the last one returned (0: none yet) */
  int started;                  /* the first batch came (its wait is first_wait_ns) */
  int asking;                   /* entered_ns is set: a wait or next is asking for the next batch */
  uint64_t batches, wait_ns, step_ns, first_wait_ns;
  uint32_t hist[API_TIMING_BINS];
  uint64_t reported_ns;         /* the last TIMING went (api_timing_due) */
} api_timing;

/* A growing list of names (api_classes.c): v[0..n) and a NULL after them,
 * the array bfeed_stream_class_names hands out. */
typedef struct api_names {
  char **v;
  size_t n, cap;
} api_names;

typedef struct api_client_ops api_client_ops;
typedef struct api_stream_ops api_stream_ops;
typedef struct single_shm single_shm;

/* bfeed_connect_opts checked, the environment applied and the token read
 * (api_client.c): what either implementation is made from. */
typedef struct api_settings {
  int reconnect;        /* bfeed_connect_opts.reconnect */
  uint64_t deadline_ns; /* bfeed_connect_opts.reconnect_deadline */
  double stall_s;       /* bfeed_connect_opts.stall_timeout (several daemons) */
  int shm;              /* bfeed_connect_opts.shm, unless BFEED_SHM=0 */
  char token[MSG_TOKEN_MAX]; /* sent in every HELLO; "" for none */
} api_settings;

struct bfeed_client {
  const api_client_ops *ops;
  pthread_mutex_t mu; /* see the head of this file, and the implementation's header */
  pthread_cond_t cv;
  int closing;        /* bfeed_close has begun */
  unsigned busy;      /* public calls in progress, which bfeed_close waits out */
  bfeed_stream *streams;
  uint32_t next_id;
  uint64_t reconnects; /* bfeed_client_reconnects */
  uint32_t version;    /* the first daemon's (bfeed_client_version), set before bfeed_connect2 returns */
  char server[MSG_NAME_MAX];
  unsigned forks;      /* api_fork_count() when made: another means a forked child (api_fork.c); set once */
  int pid;             /* the process that made it, for the message */
};

struct bfeed_stream {
  const api_stream_ops *ops;
  bfeed_client *c;
  uint32_t id;
  msg_open open;             /* what the caller asked for, codec and transport resolved */
  bfeed_stream_info info;    /* set before bfeed_stream_open returns */
  uint64_t fingerprint;      /* OPEN_OK's, 0 when the daemon sent none */
  char *names[API_MAX_NAMES]; /* counter names handed out, kept until close (c->mu) */
  size_t nnames;
  bfeed_stream *next_stream; /* c->streams (c->mu) */
  api_timing timing;         /* around ops->wait and ops->next (c->mu) */
  msg_timing loop;           /* bfeed_stream_report_timing's, sent instead of timing's (c->mu) */
  int has_loop;              /* loop is set */
};

/* Made by single/ (its reader thread) from a frame; a fan-out stream hands
 * out its members' batches. Owns its buffer, outlives stream and client. */
struct bfeed_batch {
  uint64_t epoch, index, seq;
  int ntensors;
  msg_tensor t[MSG_MAX_TENSORS];
  bufcache *cache;     /* where mem goes back */
  uint8_t *mem;       /* what to give back */
  size_t mem_cap;
  const uint8_t *raw; /* tensors, 64-byte aligned */
  size_t raw_size, wire_bytes;
  uint64_t expand_ns;  /* the reader's time checking and decompressing it */
  single_shm *shm;    /* a shared-memory batch: raw is in its ring (mem NULL) */
  unsigned forks;     /* its client's: released in a forked child, only the child's copy is freed */
  bfeed_batch *next;
};

struct api_client_ops {
  /* bfeed_stream_open, no lock held: a stream for m (checked; codec and
   * transport resolved), linked into c->streams once open. Counts itself
   * as a call between api_client_enter and api_client_leave (the daemon's
   * answer, or the members joining, are waited for without c->mu). */
  int (*open)(bfeed_client *c, const msg_open *m, bfeed_stream **out, char *err, size_t errlen);
  /* For the AUTO codec, no lock held: whether a daemon behind c is
   * reached over TCP. */
  int (*any_tcp)(bfeed_client *c);
  /* Whether c's streams ask for shared memory. */
  int (*shm)(const bfeed_client *c);
  /* bfeed_daemon_stats, in a counted call with c->mu held (held again on
   * return): the daemon's STATS payload for stream 0, malloc'd, in *p. */
  int (*report)(bfeed_client *c, uint8_t **p, size_t *len, char *err, size_t errlen);
  size_t (*endpoints)(bfeed_client *c);
  int (*endpoint)(bfeed_client *c, size_t i, char *buf, size_t cap);
  /* bfeed_close, closing set, before it waits out the calls in progress:
   * wake what they might wait on (NULL: nothing to do). No lock held. */
  void (*stop)(bfeed_client *c);
  /* bfeed_close, no call left: free the streams still open, then c. */
  void (*free)(bfeed_client *c);
  /* bfeed_close in a forked child: free the child's copy of c and its
   * streams without the locks another thread may have held at the fork
   * (what one guards is freed only if trylock takes it, else left),
   * joining nothing, sending nothing, shutting nothing down: closing the
   * child's duplicate of a socket is all it does to one. */
  void (*forget)(bfeed_client *c);
};

/* Each in a counted call, c->mu held, and held again on return (released
 * meanwhile where they wait or write). */
struct api_stream_ops {
  int (*next)(bfeed_stream *s, bfeed_batch **out, char *err, size_t errlen);
  /* 1 when next would not block, 0 after timeout_ms (< 0: never). */
  int (*wait)(bfeed_stream *s, int timeout_ms);
  int (*stats)(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, char *err, size_t errlen);
  /* c->mu held (may be let go meanwhile): pass t (NULL: nothing) on to
   * the daemon, where it takes TIMING; return the ns the client's reader
   * spent checking and decompressing the stream's batches. */
  uint64_t (*report)(bfeed_stream *s, const msg_timing *t);
  /* bfeed_stream_class_names: the dataset's class names, added to out
   * (empty: none), asked of the daemon (c->mu may be let go meanwhile). */
  int (*class_names)(bfeed_stream *s, api_names *out, char *err, size_t errlen);
  /* bfeed_stream_close, s already out of c->streams: tell the daemon (or
   * the members) and free s. */
  void (*close)(bfeed_stream *s);
};

/* api_err.c */
/* Write the message into err[errlen] (err may be NULL) and return code. */
int api_err(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* At the public boundary: when code < 0, fill pub (may be NULL) with code
 * and the message; return code either way. */
int api_err_public(bfeed_error *pub, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* api_client.c */
/* The common part of a new client (mutexes, c->cv on clock.h's clock). */
void api_client_init(bfeed_client *c, const api_client_ops *ops);
/* Destroy what api_client_init made and free the implementation's struct,
 * which begins with c. */
void api_client_free(bfeed_client *c);
/* A public call begins: lock c->mu and return 0 with it held, or return
 * BFEED_ECLOSED with it released (bfeed_close has begun). api_client_leave
 * ends the call (c->mu held, and still held after). */
int api_client_enter(bfeed_client *c, char *err, size_t errlen);
void api_client_leave(bfeed_client *c);
/* ops->free: take the next stream still open out of c (NULL: none left). */
bfeed_stream *api_client_pop_stream(bfeed_client *c);

/* api_classes.c */
/* Add s[0..len) to a (a NUL-terminated copy): 0 or BFEED_ENOMEM. */
int api_names_add(api_names *a, const char *s, size_t len, char *err, size_t errlen);
/* Free what a holds and empty it. */
void api_names_clear(api_names *a);
/* The public call in the internal error style (fanout/ asks a member's stream). */
int api_stream_class_names(bfeed_stream *s, api_names *out, char *err, size_t errlen);

/* api_fork.c */
/* Forks this process is away from the one that loaded libbfeed (each
 * child counts one more), watched from the first client on. */
unsigned api_fork_count(void);
/* For api_client_init: start watching, and c belongs to this process. */
void api_fork_own(bfeed_client *c);
/* 0 in c's own process; in a forked child BFEED_EFORKED, saying why. */
int api_fork_check(const bfeed_client *c, char *err, size_t errlen);

/* api_timing.c (c->mu held) */
/* A wait or next call asking for a batch begins at now (the first since
 * the last next counts); next returns at now, with a batch or not. */
void api_timing_enter(api_timing *t, uint64_t now);
void api_timing_leave(api_timing *t, uint64_t now, int got);
/* The totals so far, for bfeed_stream_get_timing. */
void api_timing_get(const api_timing *t, uint64_t expand_ns, bfeed_stream_timing *out);
/* What s sends as TIMING (expand 0): the loop's totals once
 * bfeed_stream_report_timing gave them, else its own. */
void api_timing_msg(const bfeed_stream *s, msg_timing *m);
/* 1 when the totals are due to the daemon (and from now on counted sent). */
int api_timing_due(api_timing *t, uint64_t now);
/* The client's counters (client_*, wait_fraction_ppm) set in out[*count],
 * over the daemon's copies, added where absent (up to max). */
int api_timing_counters(bfeed_stream *s, uint64_t expand_ns, bfeed_counter *out, size_t max, size_t *count);
/* bfeed_stream_report_timing: t is the job's loop from now on, sent at once. */
int api_timing_report(bfeed_stream *s, const bfeed_stream_timing *t, char *err, size_t errlen);
/* fanout/ passes its totals on to each member stream (api_client_enter'd). */
uint64_t api_stream_report(bfeed_stream *s, const msg_timing *t);

/* api_stream.c */
/* The common part of a new stream, for request m. */
void api_stream_init(bfeed_stream *s, const api_stream_ops *ops, bfeed_client *c, const msg_open *m);
/* Free the common part's names and the implementation's struct. */
void api_stream_free(bfeed_stream *s);
/* c->mu held: give s the next id and put it in c->streams; take it out. */
void api_stream_link(bfeed_stream *s);
void api_stream_unlink(bfeed_stream *s);
/* The stream's copy of a counter name, kept until it is closed (c->mu
 * held); NULL when out of memory or names. */
const char *api_stream_name(bfeed_stream *s, const char *name);
/* The public stream calls in the internal error style (fanout/ drives its
 * members' streams with them). */
int api_stream_open(bfeed_client *c, const char *dataset, const bfeed_stream_opts *o, bfeed_stream **out,
                    char *err, size_t errlen);
int api_stream_next(bfeed_stream *s, bfeed_batch **out, char *err, size_t errlen);
int api_stream_stats(bfeed_stream *s, bfeed_counter *out, size_t max, size_t *count, char *err, size_t errlen);

/* single/, for api_client.c and fanout/ (a fan-out member is a single client) */
/* Whether addr is one daemon's address: 0, or BFEED_EINVAL saying why. */
int single_client_check(const char *addr, char *err, size_t errlen);
/* Connect to the daemon at addr and shake hands; the reader thread runs. */
int single_client_connect(const char *addr, const api_settings *set, bfeed_client **out, char *err, size_t errlen);
/* Shut the socket down, so that the reader ends the connection. */
void single_client_abort(bfeed_client *c);
/* Send a REQUEST on s, an on-demand stream of a single client (any
 * thread; not holding that client's mu); 0 or the error (the socket is
 * then shut down). */
int single_stream_request(bfeed_stream *s, const msg_request *r);
/* Whether a connection that ended with code may be tried again. */
int single_reconnect_transient(int code);
/* bfeed_batch_release: the batch's memory back, a shared-memory slot
 * given back to the daemon. */
void single_batch_free(bfeed_batch *b);
/* bfeed_batch_release in a forked child: the child's copy freed, no lock
 * taken, nothing told to the daemon (the slot is the parent's). */
void single_batch_forget(bfeed_batch *b);

/* fanout/, for api_client.c */
/* When addr names several endpoints (a list, or a name resolving to
 * several), the fan-out client over them in *out (one of them answered);
 * for one endpoint *out stays NULL. 0, or the error. */
int fanout_client_connect(const char *addr, const api_settings *set, bfeed_client **out, char *err,
                          size_t errlen);
/* Whether addr is a comma-separated list (checked as a list, not as one address). */
int fanout_client_is_list(const char *addr);

#endif
