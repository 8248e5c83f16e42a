/*
 * load.h -- the load test's shared state: the daemon under load and its
 * restarts (load_main.c), the reference hashes, and the actors that run
 * against it, well-behaved clients (load_client.c) and hostile ones
 * (load_hostile.c).
 */
#ifndef BFEED_LOAD_H
#define BFEED_LOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "itest_util.h"

/* The streams the clients read: LOAD_CONFIGS option sets, LOAD_EPOCHS
 * epochs each, LOAD_BATCHES batches an epoch (LOAD_PER_CLASS images in each
 * of make_demo's 8 classes, batch 8). */
enum { LOAD_CONFIGS = 4, LOAD_EPOCHS = 3, LOAD_PER_CLASS = 8, LOAD_BATCHES = 8 };

typedef struct load {
  /* set up before any thread starts */
  int clients, seconds;
  const char *max_memory;
  itest_daemon_opts dopts;
  uint64_t ref[LOAD_CONFIGS][LOAD_EPOCHS][LOAD_BATCHES]; /* XXH3 of each batch's blob */
  double t0, deadline;                                    /* load_now() seconds */

  /* the daemon: replaced on a restart, under mu */
  pthread_mutex_t mu;
  itest_daemon d;
  _Atomic int generation; /* restarts so far: an error across one is expected */

  /* figures */
  _Atomic long batches, mismatches, errors, reconnects, opens;
  _Atomic long hostile_conns, stats_sent, nonreaders;
  _Atomic long rss_peak_kb;
} load;

double load_now(void);
/* The daemon's addresses now: unix (tcp == 0) or TCP. */
void load_addr(load *l, int tcp, char *out, size_t cap);
/* An unexpected failure, printed (at most 20 of them). */
void load_error(load *l, const char *who, const char *what);
/* The stream options of config c (0..LOAD_CONFIGS-1). */
void load_config_opts(int c, bfeed_stream_opts *o);
/* The hash of a batch, as the reference and the clients compute it. */
int load_hash(const bfeed_batch *b, uint64_t *out);

/* Threads: arg is a load_actor. */
typedef struct load_actor {
  load *l;
  int id;
  pthread_t t;
} load_actor;
void *load_client_main(void *arg);
void *load_nonreader_main(void *arg);
void *load_flooder_main(void *arg);
void *load_silent_main(void *arg);

#endif
