/*
 * conn.h -- what a stream may ask of the connection it serves: send, fail, budget.
 * Called by stream.c only; the connection's insides are conn_impl.h's, never the stream's.
 *
 * All calls run on the loop thread. A connection that is closing accepts
 * frames and drops them, so a stream never has to ask first.
 */
#ifndef BFEED_CONN_H
#define BFEED_CONN_H

#include <stdint.h>

#include "batch.h"
#include "tlv.h"

typedef struct conn conn;

/* Queue a complete frame. The frame buffer is taken over (freed after
 * writing); if job is non-NULL it is the job owning the buffer and is
 * freed instead. A failed write closes the connection. */
void conn_send_frame(conn *c, wbuf *frame, batch_job *job);
/* Send an ERROR frame for a stream (0: the connection). */
void conn_send_error(conn *c, uint32_t stream, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 1 if `bytes` more for a stream already holding `holding` fit the
 * daemon's memory budget (budget.h); 0 means wait: the stream is started
 * again when memory is freed. */
int conn_budget_allows(conn *c, uint64_t bytes, uint64_t holding);
/* 1 if `bytes` held for as long as a stream lives (a shared-memory ring)
 * fit max_memory beside what is held now (always, with no limit). */
int conn_budget_admits(conn *c, uint64_t bytes);
/* 1 over TCP, 0 over a Unix socket (where file descriptors can travel). */
int conn_is_tcp(const conn *c);
/* Queue a control frame with fd attached (SCM_RIGHTS, on the frame's first
 * byte); fd stays the caller's (a duplicate travels). Unix sockets only. */
void conn_send_frame_fd(conn *c, wbuf *frame, int fd);

#endif
