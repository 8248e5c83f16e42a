/*
 * metrics.h -- the Prometheus endpoint (metrics_listen = HOST:PORT).
 * Called by main.c (start, stop); renders the counters of server.h and stats.h.
 *
 * A minimal HTTP/1.1 responder on the loop: GET /metrics returns the
 * daemon's counters and histograms in Prometheus' text exposition format
 * (version 0.0.4), anything else 404, one request per connection. Requests
 * are bounded (8 KiB of headers, 5 s) so a stuck scraper costs nothing.
 */
#ifndef BFEED_METRICS_H
#define BFEED_METRICS_H

#include "server.h"

typedef struct metrics metrics;

/* Listen on addr (HOST:PORT). Logs the bound address. 0, or a negative
 * BFEED_E* code with err naming the address and the reason. */
int metrics_start(metrics **out, server *s, const char *addr, char *err, size_t errlen);
void metrics_stop(metrics *m);
/* The exposition text, appended to w (also used by tests). */
void metrics_render(server *s, wbuf *w);

#endif
