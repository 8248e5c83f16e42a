/*
 * net.h -- small socket helpers for the loop's handles (as Redis' anet.c).
 */
#ifndef BFEED_NET_H
#define BFEED_NET_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* A stream handle of either transport, owned by a listener or connection. */
typedef union net_stream {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_tcp_t tcp;
  uv_pipe_t pipe;
} net_stream;

/* Initialise tcp and bind it to host:port (a name or literal; port 0 picks
 * a free one). name gets the bound address as "HOST:PORT" or "[V6]:PORT".
 * On failure err names `what` and the reason; the handle, if initialised,
 * is left for the caller to close (*inited says). */
int net_tcp_bind(uv_loop_t *loop, uv_tcp_t *tcp, const char *host, uint16_t port, const char *what,
                 char *name, size_t namelen, int *inited, char *err, size_t errlen);

#endif
