/*
 * net.h -- small socket helpers for the loop's handles (as Redis' anet.c).
 * Called by listen.c (client listeners) and metrics.c (the HTTP endpoint).
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

/* Initialise tcp, bind it to host:port (a name or literal; port 0 picks a
 * free one) and listen. name gets the bound address as "HOST:PORT" or
 * "[V6]:PORT". Both steps are here because libuv reports a busy port only
 * at listen. 0, or BFEED_EINVAL (host does not resolve) or BFEED_EIO with
 * err naming `what` -- the address as it was asked for -- and the reason;
 * the handle, if initialised, is left for the caller to close (*inited). */
int net_tcp_listen(uv_loop_t *loop, uv_tcp_t *tcp, const char *host, uint16_t port, int backlog,
                   uv_connection_cb cb, const char *what, char *name, size_t namelen, int *inited, char *err,
                   size_t errlen);
/* Write into err the message for a libuv error on a Unix socket path:
 * libuv reports a missing folder as "permission denied", so tell the two
 * apart here. */
void net_unix_strerror(int uv_err, const char *path, char *err, size_t errlen);

#endif
