/*
 * listen.h -- the daemon's listening sockets: TCP, Unix, or those systemd passes.
 * Called by main.c (at start), server.c (closing them at shutdown); conn.c takes each new connection.
 */
#ifndef BFEED_LISTEN_H
#define BFEED_LISTEN_H

#include <stddef.h>

#include "server.h"

/* Listen on an address (see addr.h): unix:PATH (a stale socket file left by
 * a dead daemon is replaced) or HOST:PORT. Logs the bound address. 0, or
 * BFEED_EINVAL / BFEED_EIO / BFEED_ENOMEM with err naming the address as
 * it was given and the reason. */
int listen_add(server *s, const char *addr, char *err, size_t errlen);
/* Take over the listening sockets systemd passed (socket activation).
 * Returns how many (0 outside socket activation), or a negative BFEED_E*
 * code with err set. */
int listen_adopt_systemd(server *s, char *err, size_t errlen);
/* Stop listening: close every listener and unlink the Unix socket files
 * this daemon created. */
void listen_close_all(server *s);

#endif
