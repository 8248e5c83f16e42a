/* freader.c -- see freader.h */
#include "freader.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bfeed_types.h"

enum { ST_HEADER, ST_AWAIT, ST_PAYLOAD, ST_DONE, ST_FAILED };

int freader_init(freader *r, uint32_t limit) {
  memset(r, 0, sizeof *r);
  r->limit = limit;
  r->why = "";
  r->xxh = XXH3_createState();
  return r->xxh ? 0 : BFEED_ENOMEM;
}

void freader_free(freader *r) {
  XXH3_freeState(r->xxh);
  memset(r, 0, sizeof *r);
}

static int fail(freader *r, int code, const char *why) {
  r->state = ST_FAILED;
  r->why = why;
  return code;
}

int freader_payload(freader *r, void *dst, size_t n) {
  if (r->state != ST_AWAIT || n == 0 || n > r->h.length - r->pay_have || !dst)
    return fail(r, BFEED_EINVAL, "payload destination given out of turn or longer than the payload");
  r->dst = dst;
  r->dst_left = n;
  r->state = ST_PAYLOAD;
  return 0;
}

size_t freader_payload_left(const freader *r) {
  return r->state == ST_AWAIT || r->state == ST_PAYLOAD ? r->h.length - r->pay_have : 0;
}

int freader_in_frame(const freader *r) {
  return (r->state == ST_HEADER && r->hdr_have > 0) || r->state == ST_AWAIT || r->state == ST_PAYLOAD;
}

uint8_t *freader_want(freader *r, size_t *n) {
  if (r->state == ST_DONE) { /* the last frame was handed over: start the next */
    r->state = ST_HEADER;
    r->hdr_have = 0;
  }
  switch (r->state) {
    case ST_HEADER: *n = FRAME_HEADER_SIZE - r->hdr_have; return r->hdr + r->hdr_have;
    case ST_PAYLOAD: *n = r->dst_left; return r->dst;
    default: *n = 0; return NULL;
  }
}

/* The payload is complete: check it. */
static int finish(freader *r) {
  if (XXH3_64bits_digest(r->xxh) != r->h.checksum)
    return fail(r, BFEED_ECHECKSUM, "frame payload failed its checksum (corrupted in transit?)");
  r->state = ST_DONE;
  return FREADER_FRAME;
}

int freader_got(freader *r, size_t n) {
  size_t room;
  uint8_t *at = freader_want(r, &room);
  if (!at || n == 0 || n > room) return fail(r, BFEED_EINVAL, "bytes reported beyond what the reader asked for");
  if (r->state == ST_HEADER) {
    if ((r->hdr_have += n) < FRAME_HEADER_SIZE) return FREADER_MORE;
    int rc;
    const char *why = frame_header_problem(r->hdr, r->limit, &r->h, &rc);
    if (why) return fail(r, rc, why);
    r->pay_have = 0;
    XXH3_64bits_reset(r->xxh);
    if (r->h.length == 0) return finish(r);
    r->state = ST_AWAIT;
    return FREADER_HEADER;
  }
  XXH3_64bits_update(r->xxh, at, n);
  r->pay_have += (uint32_t)n;
  r->dst += n;
  if ((r->dst_left -= n) > 0) return FREADER_MORE;
  if (r->pay_have == r->h.length) return finish(r);
  r->state = ST_AWAIT;
  return FREADER_SEGMENT;
}

int freader_feed(freader *r, const void *p, size_t len, size_t *used) {
  const uint8_t *src = p;
  *used = 0;
  while (*used < len) {
    size_t room;
    uint8_t *at = freader_want(r, &room);
    if (!at) {
      if (r->state == ST_FAILED) return fail(r, BFEED_EINVAL, "bytes fed after an error");
      return fail(r, BFEED_EINVAL, "bytes fed before the payload destination was given");
    }
    size_t k = len - *used < room ? len - *used : room;
    memcpy(at, src + *used, k);
    *used += k;
    int ev = freader_got(r, k);
    if (ev != FREADER_MORE) return ev;
  }
  return FREADER_MORE;
}
