/* budget.c -- see budget.h */
#include "budget.h"

#include "conn_impl.h"
#include "server.h"
#include "stream.h"

uint64_t budget_held(const server *s) {
  uint64_t held = 0;
  for (const conn *c = s->conns; c; c = c->next) {
    held += c->write_queue;
    for (int i = 0; i < c->nstreams; i++) held += stream_held_bytes(c->streams[i]);
  }
  return held;
}

int budget_allows(server *s, uint64_t bytes) {
  if (s->limits.max_memory == 0 || budget_held(s) + bytes <= s->limits.max_memory) return 1;
  s->memory_blocked = 1;
  return 0;
}

void budget_released(server *s) {
  if (!s->memory_blocked || budget_held(s) >= s->limits.max_memory) return;
  s->memory_blocked = 0;
  for (conn *c = s->conns; c; c = c->next)
    for (int i = 0; i < c->nstreams && !c->closing; i++) stream_start(c->streams[i]);
}
