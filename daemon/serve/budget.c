/* budget.c -- see budget.h */
#include "budget.h"

#include "conn_impl.h"
#include "jpeg_decode.h"
#include "server.h"
#include "shm_ring.h"
#include "stream.h"

uint64_t budget_held(const server *s) {
  uint64_t held = (s->buffers ? bufpool_idle_bytes(s->buffers) : 0) + jpeg_decode_held() + batch_scratch_bytes() +
                  shm_ring_bytes();
  for (const conn *c = s->conns; c; c = c->next) {
    held += c->write_queue;
    for (int i = 0; i < c->nstreams; i++) held += stream_held_bytes(c->streams[i]);
  }
  return held;
}

/* What each open stream may hold. */
static uint64_t budget_share(const server *s) {
  int n = server_stream_count(s);
  return s->limits.max_memory / (uint64_t)(n > 0 ? n : 1);
}

static int budget_fits(const server *s, uint64_t bytes, uint64_t holding) {
  return holding + bytes <= budget_share(s) && budget_held(s) + bytes <= s->limits.max_memory;
}

/* Take memory back for a stream within its share: free buffers kept for
 * reuse first, then finished, unsent batches of streams over their share
 * (clients that do not read). 1 if the request fits then. */
static int budget_reclaim(server *s, uint64_t bytes, uint64_t holding) {
  if (s->buffers && bufpool_idle_bytes(s->buffers) > 0) {
    bufpool_trim(s->buffers, 1);
    if (budget_fits(s, bytes, holding)) return 1;
  }
  uint64_t share = budget_share(s);
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams; i++)
      if (stream_holding_bytes(c->streams[i]) > share && stream_shed(c->streams[i], share) &&
          budget_fits(s, bytes, holding))
        return 1;
  return 0;
}

int budget_allows(server *s, uint64_t bytes, uint64_t holding) {
  if (s->limits.max_memory == 0 || holding == 0 || budget_fits(s, bytes, holding)) return 1;
  if (holding + bytes <= budget_share(s) && budget_reclaim(s, bytes, holding)) return 1;
  s->memory_blocked = 1;
  return 0;
}

int budget_admits(const server *s, uint64_t bytes) {
  return s->limits.max_memory == 0 || budget_held(s) + bytes <= s->limits.max_memory;
}

void budget_released(server *s) {
  if (!s->memory_blocked || budget_held(s) >= s->limits.max_memory) return;
  s->memory_blocked = 0;
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams && !c->closing; i++) stream_start(c->streams[i]);
}
