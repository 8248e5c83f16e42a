/*
 * server.h -- listeners and client connections on the libuv loop.
 *
 * Everything here runs on the loop thread. A connection reads frames with a
 * small state machine (header, then payload, each length checked before any
 * allocation), answers the handshake, and routes stream messages to
 * stream.c. A client that breaks the protocol gets an ERROR frame and is
 * disconnected; nobody else notices.
 */
#ifndef BFEED_SERVER_H
#define BFEED_SERVER_H

#include <stdint.h>
#include <uv.h>

#include "dataset.h"
#include "log.h"
#include "stats.h"
#include "tlv.h"
#include "workers.h"

typedef struct server_limits {
  int max_clients;        /* connections at once */
  int max_streams;        /* streams per connection */
  uint32_t max_window;    /* largest window a stream may ask for */
  uint64_t max_memory;    /* finished batch bytes held at once; 0 = no limit */
} server_limits;

typedef struct listener listener;
typedef struct conn conn;
typedef struct stream stream;

typedef struct server {
  uv_loop_t *loop;
  const logger *log;
  workers *pool;
  bufpool *buffers;
  dataset **datasets; /* the server holds a reference to each */
  size_t ndatasets;
  server_limits limits;
  listener *listeners;
  conn *conns;
  int nconns;
  int stopping;
  uint32_t next_conn_id;
  /* statistics */
  ds_stats *stats;          /* one per dataset name ever served */
  uint64_t clients_total, rejected_total, protocol_errors;
  uint64_t started_ns;
  int memory_blocked; /* a stream waits for batch memory to be freed */
} server;

int server_init(server *s, uv_loop_t *loop, const logger *log, int nworkers, dataset **datasets,
                size_t ndatasets, const server_limits *limits);
/* Listen on an address (see addr.h). Logs the bound address. */
int server_listen(server *s, const char *addr, char *err, size_t errlen);
/* Stop accepting, close every connection (in-flight batches are dropped),
 * stop the workers. Handles finish closing when the loop runs again. */
void server_shutdown(server *s);
/* After a grace period: close connections whose last words are stuck
 * behind a client that does not read. */
void server_force_close(server *s);
/* After the loop has finished: free what the server holds. */
void server_free(server *s);

dataset *server_find_dataset(server *s, const char *name);
/* The statistics entry for a dataset name (created on first use). */
ds_stats *server_ds_stats(server *s, const char *name);
/* Write the daemon-wide report (see proto/report.h): a "daemon" group, one
 * "dataset" group per dataset, one "stream" group per open stream. */
void server_report(server *s, wbuf *w);
/* Open streams. */
int server_stream_count(const server *s);
/* Bytes of finished batches held now: waiting to be sent, in worker
 * queues (estimated) and in socket write queues. */
uint64_t server_memory_held(const server *s);
/* Replace the served datasets (reload): the server takes the references in
 * ds[] and drops its old ones; open streams keep theirs. */
void server_set_datasets(server *s, dataset **ds, size_t n);
/* Take over listening sockets passed by systemd (socket activation).
 * Returns how many, or a negative error with err set. */
int server_adopt_listen_fds(server *s, char *err, size_t errlen);

/* For stream.c: queue a complete frame on the connection. The frame buffer
 * is taken over (freed after writing); if job is non-NULL it is the job
 * owning the buffer and is freed instead. */
void conn_send_frame(conn *c, wbuf *frame, batch_job *job);
/* Send an ERROR frame for a stream (0: the connection). */
void conn_send_error(conn *c, uint32_t stream, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Called by stream.c when a stream is gone from the connection. */
void conn_forget_stream(conn *c, stream *st);
server *conn_server(conn *c);
/* Bytes queued for writing and not yet written, for statistics. */
size_t conn_write_queue(const conn *c);

#endif
