/*
 * addr.h -- the address syntax shared by bfeedd --listen and bfeed --connect.
 * Called by the daemon's listeners (daemon/serve) and libbfeed's conn.c.
 *
 *   unix:/run/bfeed/bfeedd.sock   a Unix-domain stream socket
 *   127.0.0.1:7070  host:7070     TCP; the host is a name or IPv4 literal
 *   [::1]:7070                    TCP over IPv6
 */
#ifndef BFEED_ADDR_H
#define BFEED_ADDR_H

#include <stdint.h>

enum addr_kind { ADDR_UNIX = 1, ADDR_TCP = 2 };

typedef struct addr_spec {
  enum addr_kind kind;
  char path[108]; /* ADDR_UNIX: sun_path's size on Linux */
  char host[256]; /* ADDR_TCP, without brackets */
  uint16_t port;
} addr_spec;

/* 0, or BFEED_EINVAL with a reason in err. */
int addr_parse(const char *s, addr_spec *out, char *err, size_t errlen);

#endif
