/*
 * server.h -- the serving side's root: datasets served, limits, workers, listeners, connections.
 * Called by main.c (start, reload, stop) and read by metrics.c; the other files of serve/ each do one part.
 *
 * Everything here runs on the loop thread. listen.c accepts, conn.c reads
 * and writes a connection's frames, dispatch.c answers them, stream.c runs
 * the streams, flow.c decides what they may schedule and send (the window,
 * the memory limit) and stats.c keeps the counters. A
 * client that breaks the protocol gets an ERROR frame and is disconnected;
 * nobody else notices.
 */
#ifndef BFEED_SERVER_H
#define BFEED_SERVER_H

#include <stdint.h>
#include <uv.h>

#include "dataset.h"
#include "flow.h"
#include "jobs.h"
#include "log.h"
#include "msg.h"
#include "stats.h"
#include "tlv.h"
#include "share.h"
#include "workers.h"

typedef struct server_limits {
  int max_clients;        /* connections at once */
  int max_streams;        /* streams per connection */
  uint32_t max_window;    /* largest window a stream may ask for */
  uint64_t max_memory;    /* batch and reply bytes held at once; 0 = no limit */
  uint64_t max_pixels;    /* larger images are skipped, from their header; 0 = no limit */
  uint64_t handshake_timeout_ms; /* from accept to HELLO; 0 = none */
  uint64_t idle_timeout_ms;      /* silence allowed without a stream; 0 = none */
  uint64_t shutdown_timeout_ms;  /* how long a shutdown waits for a worker's batch (server_shutdown) */
  uint32_t share_horizon;        /* batches a shared one is kept ahead of a stream that will want it; 0 = 2 x window */
  char auth_token[MSG_TOKEN_MAX]; /* what TCP clients must show in HELLO; "" = nothing */
  int socket_mode;                /* of the Unix sockets listen.c creates */
  const char *socket_group;       /* their group, or NULL (the config's string) */
} server_limits;

typedef struct listener listener;
typedef struct conn conn;
typedef struct stream stream;

typedef struct server {
  uv_loop_t *loop;
  const logger *log;
  workers *workers;
  bufcache *buffers;
  flow *flow;         /* flow control for every stream: window, max_memory (flow.h) */
  share *share;       /* batches built once for the streams that want the same bytes (share.h) */
  jobs *jobs;         /* streams counted as one training job (jobs.h) */
  dataset **datasets; /* the server holds a reference to each */
  size_t ndatasets;
  server_limits limits;
  listener *listeners;
  conn *conns;
  int nconns;
  int stopping;
  int workers_stuck;  /* workers a shutdown gave up waiting for: what they use must not be freed */
  uint32_t next_conn_id;
  /* statistics */
  ds_stats *stats;          /* one per dataset name ever served */
  uint64_t clients_total, rejected_total, protocol_errors;
  uint64_t started_ns;
  int http_conns;     /* /metrics connections open (metrics.c caps them) */
} server;

/* Start the workers; the server takes the references in datasets[]. 0, or
 * a negative BFEED_E* code with err set. */
int server_init(server *s, uv_loop_t *loop, const logger *log, int nworkers, dataset **datasets,
                size_t ndatasets, const server_limits *limits, char *err, size_t errlen);
/* Stop accepting, close every connection (in-flight batches are dropped),
 * stop the workers, waiting for a batch being built up to
 * limits.shutdown_timeout_ms (workers_stop: a worker still stuck then is
 * logged and left, counted in workers_stuck). Handles finish closing when
 * the loop runs again. */
void server_shutdown(server *s);
/* After a grace period: close connections whose last words are stuck
 * behind a client that does not read. */
void server_force_close(server *s);
/* After the loop has finished: free what the server holds. */
void server_free(server *s);

dataset *server_find_dataset(server *s, const char *name);
/* Every few seconds (main.c's status timer): give back pooled buffers
 * nobody has used since the last call. */
void server_tick(server *s);
/* Open streams. */
int server_stream_count(const server *s);
/* Replace the served datasets (reload): the server takes the references in
 * ds[] and drops its old ones; open streams keep theirs. */
void server_set_datasets(server *s, dataset **ds, size_t n);

#endif
