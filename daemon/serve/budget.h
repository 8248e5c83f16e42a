/*
 * budget.h -- the memory budget: bytes of finished batches held at once (max_memory).
 * Called by conn.c (a write finished, a stream asks to schedule) and stats.c/metrics.c (how much is held).
 *
 * The limit is soft and per daemon: a stream that would go over it waits
 * (the server remembers that one did) and every waiting stream is started
 * again once a batch's bytes leave the socket's write queue.
 */
#ifndef BFEED_BUDGET_H
#define BFEED_BUDGET_H

#include <stdint.h>

struct server;

/* Bytes held now: waiting to be sent, in worker queues (estimated from
 * each stream's largest frame) and in socket write queues. */
uint64_t budget_held(const struct server *s);
/* 1 if `bytes` more fit under max_memory (always, when there is no limit);
 * 0 marks the server as having a waiting stream. */
int budget_allows(struct server *s, uint64_t bytes);
/* A batch's bytes were written: restart waiting streams if they now fit. */
void budget_released(struct server *s);

#endif
