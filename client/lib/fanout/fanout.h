/*
 * fanout.h -- fanout/'s private interface: a client over several daemons
 * (an address naming several endpoints) and its streams, the
 * implementation behind api.h's ops for such an address. It has no socket
 * of its own: each stream opens an on-demand sub-stream on every member
 * through a single client (single/, via api.h) and spreads the stream's
 * positions over them.
 *
 *   fanout_endpoints.c  splitting an address list, resolving names into
 *                       every address they stand for, again on failures
 *   fanout_client.c     connecting (bfeed_connect2's several-endpoint case),
 *                       the client's side of the ops table, closing
 *   fanout_stream.c     a stream's positions: assigned by speed, reordered,
 *                       stalled members dropped, a slow head hedged, every
 *                       batch handed out once; open, next, wait, stats, close
 *   fanout_member.c     one member of a stream: its thread (join, take
 *                       batches, reconnect with backoff, rejoin)
 *
 * Positions: k = 0, 1, ... counts the stream's batches from where it was
 * opened; (epoch, index) = (e0 + (i0 + k s) / bpe, (i0 + k s) % bpe), s the
 * step of its select (subset.h: 1 for all, M for residue and stride). The
 * positions [next, assigned) are in flight or waiting for the caller, at
 * most `window` of them, each in slot k % window. A slot records which
 * members have it outstanding (a bit each): a position whose last holder
 * is dropped is requested again from another (f->retry).
 *
 * Locking: everything here that changes is under the fan-out client's
 * c->base.mu (api.h), the endpoint list included (a stream's members
 * re-resolve names); c->base.cv wakes the caller and the members. REQUEST
 * frames are sent under c->base.mu (small, and a member's writer lock is
 * never held waiting for c->base.mu); only a member's own thread closes its
 * connection, after it has taken it out of the member under c->base.mu.
 */
#ifndef BFEED_FANOUT_H
#define BFEED_FANOUT_H

#include <pthread.h>
#include <stdint.h>

#include "api.h"
#include "subset.h"

#define FANOUT_MEMBERS_MAX 32 /* members of one stream (a slot keeps them in a bit mask) */
#define FANOUT_ADDR_MAX 256   /* one endpoint */
#define FANOUT_LIST_MAX 1024  /* the address as given */
#define FANOUT_QUEUE_MAX 1024 /* requests outstanding at one member (the daemon's limit is 1024 + window) */

/* The endpoints an address stands for now. */
typedef struct fanout_endpoints {
  char addr[FANOUT_LIST_MAX];     /* as given: re-resolved when a member fails */
  char (*ep)[FANOUT_ADDR_MAX];
  size_t n;
} fanout_endpoints;

typedef struct fanout_client {
  bfeed_client base;
  fanout_endpoints ends;
  int reconnect;     /* members that fail are tried again (api_settings.reconnect) */
  double deadline_s; /* every member gone this long fails the stream */
  double stall_s;    /* a member silent this long with requests outstanding is dropped */
  api_settings member; /* how each member connects: one connection, not reconnecting, on the socket */
} fanout_client;

typedef struct fanout_stream fanout_stream;

typedef struct fanout_member {
  fanout_stream *f;
  int i;
  char addr[FANOUT_ADDR_MAX];
  pthread_t th;
  int th_running, gone;
  bfeed_client *mc; /* the member's connection; set and cleared by its thread */
  bfeed_stream *ms;
  int live;         /* requests go to it */
  unsigned users;   /* bfeed_stream_stats calls on mc in progress */
  uint64_t *q;      /* positions requested, in order; ring of FANOUT_QUEUE_MAX */
  size_t qhead, qlen, unsent;
  uint64_t last_ns; /* its last progress: a batch, or its first request while idle */
  double avg_ns;    /* moving average of the time one batch takes it */
  uint64_t served;
  char why[MSG_ERROR_MAX]; /* why it is not live */
} fanout_member;

typedef struct fanout_slot {
  bfeed_batch *b;
  uint32_t at;       /* members it is outstanding at */
  int hedged;
  uint64_t since_ns; /* first requested */
} fanout_slot;

struct fanout_stream {
  bfeed_stream base;
  fanout_client *fc;
  uint64_t e0, i0, bpe, total; /* total: UINT64_MAX for endless */
  uint64_t next, assigned;
  uint32_t window;
  fanout_slot *slot;
  uint64_t *retry;
  size_t nretry;
  fanout_member m[FANOUT_MEMBERS_MAX];
  size_t nm;
  int closing;
  uint64_t down_ns; /* when the last live member went; 0 while one is live */
  msg_request *req;
};

static inline fanout_client *fanout_client_of(bfeed_client *c) { return (fanout_client *)c; }

/* fanout_endpoints.c */
/* Split addr at commas and resolve names: the endpoints into out[max]. */
int fanout_endpoints_resolve(const char *addr, char (*out)[FANOUT_ADDR_MAX], size_t max, size_t *n, char *err,
                             size_t errlen);
/* Resolve e->addr again (mu, the fan-out client's base.mu, held; released
 * while resolving): 0, or -1 keeping the old list. */
int fanout_endpoints_refresh(fanout_endpoints *e, pthread_mutex_t *mu);
int fanout_endpoints_has(const fanout_endpoints *e, const char *ep);
/* Whether any endpoint is TCP (base.mu held, or no stream yet). */
int fanout_endpoints_any_tcp(const fanout_endpoints *e);

/* fanout_client.c: a single client to one member, as fc->member says. */
int fanout_client_member(const fanout_client *fc, const char *ep, bfeed_client **out, char *err, size_t errlen);

/* fanout_stream.c (c->base.mu held for all three) */
/* Request what is to be requested: positions whose holders were dropped
 * first, then new ones up to the window. */
void fanout_stream_pump(fanout_stream *f);
/* Take m out of service: what it had outstanding goes to the others, and
 * its connection is shut down for its thread to close. */
void fanout_stream_drop(fanout_stream *f, fanout_member *m, const char *why);
/* A batch from m: kept for the caller unless the position was handed out
 * or is there already; returns what the caller of this frees. */
bfeed_batch *fanout_stream_arrive(fanout_stream *f, fanout_member *m, bfeed_batch *b);
/* bfeed_stream_open (the client's ops->open). */
int fanout_stream_open(bfeed_client *c, const msg_open *m, bfeed_stream **out, char *err, size_t errlen);
/* No lock held: stop the members and free f. */
void fanout_stream_free(fanout_stream *f);
/* In a forked child, c->base.mu taken by trylock: the child's copy of f
 * and of its members' clients freed, no thread joined, nothing sent. */
void fanout_stream_forget(fanout_stream *f);

/* fanout_member.c */
/* A new member at addr, its thread not started: 0 or -1 (out of memory). */
int fanout_member_init(fanout_stream *f, const char *addr);
/* Connect to m and open its on-demand sub-stream (c->base.mu not held);
 * with want_addr, the shape must be want's (the first member's, there). */
int fanout_member_join(fanout_stream *f, fanout_member *m, const bfeed_stream_info *want, uint64_t want_fp,
                       const char *want_addr, bfeed_client **mc, bfeed_stream **ms, char *err, size_t errlen);
/* The member's thread (arg: the fanout_member). */
void *fanout_member_main(void *arg);

#endif
