/*
 * dispatch.h -- what a client's frames ask for: HELLO, OPEN, ACK, CLOSE, STATS_REQ, CLASSES_REQ.
 * Called by conn.c for every complete, checksummed frame it reads.
 *
 * A frame that breaks the protocol (before HELLO, twice HELLO, an unknown
 * type, a malformed message) costs the client its connection with an ERROR
 * frame saying why; a bad request on one stream (OPEN refused) costs only
 * that stream.
 */
#ifndef BFEED_DISPATCH_H
#define BFEED_DISPATCH_H

#include <stdint.h>

#include "conn_impl.h"

void dispatch_frame(conn *c, const frame_header *h, const uint8_t *payload);

#endif
