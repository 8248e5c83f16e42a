/*
 * conn.h -- what a stream may ask of the connection it serves: send frames and errors.
 * Called by stream.c only; the connection's insides are conn_impl.h's, never the stream's.
 *
 * All calls run on the loop thread. A connection that is closing accepts
 * frames and drops them, so a stream never has to ask first.
 */
#ifndef BFEED_CONN_H
#define BFEED_CONN_H

#include <stdint.h>

#include "batch.h"
#include "flow.h"
#include "tlv.h"

typedef struct conn conn;

/* Queue a complete frame; the frame buffer is taken over (freed after
 * writing). A failed write closes the connection. */
void conn_send_frame(conn *c, wbuf *frame);
/* Queue a finished batch's frame (job->frame); the job is taken over and
 * freed once written. Its bytes are reported to flow.c as fs's while they
 * wait in the queue. */
void conn_send_batch(conn *c, batch_job *job, flow_stream *fs);
/* Send an ERROR frame for a stream (0: the connection). */
void conn_send_error(conn *c, uint32_t stream, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 1 over TCP, 0 over a Unix socket (where file descriptors can travel). */
int conn_is_tcp(const conn *c);
/* Queue a control frame with fd attached (SCM_RIGHTS, on the frame's first
 * byte); fd stays the caller's (a duplicate travels). Unix sockets only. */
void conn_send_frame_fd(conn *c, wbuf *frame, int fd);

#endif
