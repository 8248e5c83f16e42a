/*
 * freader.h -- reads frames incrementally: header checked against a limit
 * before any payload memory exists, payload placed where the caller says,
 * checksum verified. Called by libbfeed's reader thread (blocking socket),
 * and meant for the daemon's libuv read path and the tests' raw-frame helper.
 *
 * The reader never allocates payload memory and never blocks: bytes come in
 * either way, and it reports events as the frame completes.
 *
 *   pull (zero-copy, e.g. a blocking socket):
 *       size_t n; uint8_t *p = freader_want(&r, &n);  // where, how many at most
 *       ssize_t k = recv(fd, p, n, 0);                 // any 1..n bytes
 *       int ev = freader_got(&r, (size_t)k);
 *   push (bytes arrive in chunks of any size, e.g. a libuv read_cb):
 *       while (len) { int ev = freader_feed(&r, buf, len, &used); buf += used; len -= used; ... }
 *
 * Events (return values of freader_got / freader_feed):
 *   FREADER_MORE     nothing complete yet: bring more bytes.
 *   FREADER_HEADER   r.h holds a valid header (magic, version, type, and
 *                    length <= r.limit) of a frame with a payload: say where
 *                    the payload goes, all of it or a first part, with
 *                    freader_payload(); bytes are refused until then.
 *   FREADER_SEGMENT  the part given to freader_payload() is full, the
 *                    payload is not: give the next part (e.g. after peeking
 *                    at the first bytes to decide where the rest goes).
 *   FREADER_FRAME    the payload is complete and its checksum verified (an
 *                    empty payload comes straight from the header, no
 *                    HEADER event). The next bytes start the next frame.
 *   < 0              BFEED_EPROTO / EVERSION / ETOOBIG (bad header),
 *                    BFEED_ECHECKSUM (bad payload), BFEED_EINVAL (misuse):
 *                    r.why says what; the stream is unusable after it.
 */
#ifndef BFEED_FREADER_H
#define BFEED_FREADER_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

enum { FREADER_MORE = 0, FREADER_HEADER = 1, FREADER_SEGMENT = 2, FREADER_FRAME = 3 };

struct XXH3_state_s;

typedef struct freader {
  uint32_t limit;   /* largest payload accepted; the owner may change it between frames */
  frame_header h;   /* the current frame's header, from FREADER_HEADER (or FRAME) on */
  const char *why;  /* static reason for the last error */
  /* private */
  int state;
  uint8_t hdr[FRAME_HEADER_SIZE];
  size_t hdr_have;
  uint8_t *dst;      /* the current payload part, and what it still lacks */
  size_t dst_left;
  uint32_t pay_have; /* payload bytes received */
  struct XXH3_state_s *xxh;
} freader;

/* 0, or BFEED_ENOMEM (the checksum state is allocated once, here). */
int freader_init(freader *r, uint32_t limit);
void freader_free(freader *r);

/* After FREADER_HEADER or FREADER_SEGMENT: the next n bytes of the payload
 * go to dst (n >= 1, at most what remains of it). 0, or BFEED_EINVAL. */
int freader_payload(freader *r, void *dst, size_t n);
/* Bytes still to come of the current payload (0 outside a payload). */
size_t freader_payload_left(const freader *r);
/* 1 when some but not all of a frame has been received (a peer that
 * closes now cut a frame short), 0 between frames. */
int freader_in_frame(const freader *r);

/* Pull: where the next bytes go and at most how many (never past the
 * current header or payload part). NULL with *n = 0 while a payload
 * destination is awaited or after an error. */
uint8_t *freader_want(freader *r, size_t *n);
/* Pull: n bytes (1 <= n <= what freader_want allowed) were written there. */
int freader_got(freader *r, size_t n);
/* Push: take bytes from p[len], copying them to the header or the payload
 * part, up to the first event; *used says how many were taken. */
int freader_feed(freader *r, const void *p, size_t len, size_t *used);

#endif
