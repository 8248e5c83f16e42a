/*
 * budget.h -- the memory budget: bytes the daemon holds for its clients at once (max_memory).
 * Called by conn.c (a write finished, a stream asks to schedule), stats.c/metrics.c (how much is held), server.c.
 *
 * Counted: batches scheduled and not yet sent (estimated per stream), every
 * byte queued on a socket (a batch's whole buffer), the workers' buffers
 * and the decodes in progress, and the free buffers the pool keeps (given
 * back to the system when memory is short). Each
 * stream may hold at most its share, max_memory / open streams, so the
 * streams whose clients do not read are the ones that wait while the
 * others keep their window. One exception keeps every stream moving: a
 * stream holding nothing may always schedule one batch, so the limit can
 * be passed by at most one batch per such stream.
 */
#ifndef BFEED_BUDGET_H
#define BFEED_BUDGET_H

#include <stdint.h>

struct server;

/* Bytes held now (see above). */
uint64_t budget_held(const struct server *s);
/* 1 if `bytes` more fit for a stream holding `holding` (always, when there
 * is no limit); 0 marks the server as having a waiting stream. */
int budget_allows(struct server *s, uint64_t bytes, uint64_t holding);
/* 1 if `bytes` more fit max_memory beside what is held now, with no
 * exception (a shared-memory ring, held for a stream's life). */
int budget_admits(const struct server *s, uint64_t bytes);
/* Bytes were freed (a write finished): restart waiting streams. */
void budget_released(struct server *s);

#endif
